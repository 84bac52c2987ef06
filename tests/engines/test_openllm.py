"""OpenLLM: catalogs from the tags, the bento a spec maps to, what --arg can pass, ENG001-3, the switch to vLLM."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from servespec import engines
from servespec.engines.catalog import version_key
from servespec.findings import Finding, Severity
from servespec.knowledge import resolve
from servespec.render import render_fleet
from servespec.rules.runner import check_fleet
from servespec.spec.fleet import load_fleet
from tests.golden.regen import GOLDEN

UNIT = Path(__file__).parents[2] / "src" / "servespec" / "engines" / "openllm"

SPEC = """apiVersion: servespec/v1
kind: Deployment
metadata: {{name: switch}}
model: {{source: {source}, revision: {revision}{length}}}
engine: {{name: {engine}, version: "{version}"{image}{options}}}
placement: {{hosts: [l4-a]}}
rollout: {{health_timeout: 30m}}
"""
QWEN = ("Qwen/Qwen2.5-7B-Instruct", "a09a35458c702b33eeacc393d103063234e8bc28")


def _fleet(tmp_path: Path, *, engine: str = "openllm", version: str = "0.6.30", options: str = "", **kw: str):  # type: ignore[no-untyped-def]
    source, revision = kw.get("source", QWEN[0]), kw.get("revision", QWEN[1])
    image = kw.get("image", ", image: 'registry.example.com/openllm:0.6.30'" if engine == "openllm" else "")
    length = kw.get("length", ", max_model_len: 8192")
    text = SPEC.format(
        source=source, revision=revision, length=length, engine=engine, version=version, image=image,
        options=f", options: {options}" if options else "",
    )  # fmt: skip
    path = tmp_path / "switch.yaml"
    path.write_text(text)
    return load_fleet([path], GOLDEN / "inventory.yaml")


def _errors(tmp_path: Path, **kw: str) -> list[Finding]:
    return [f for f in check_fleet(_fleet(tmp_path, **kw)) if f.severity is Severity.ERROR]


def test_catalogs_read_serve_of_each_tag() -> None:
    engine = engines.get("openllm")
    versions = [r.version for r in engine.releases]
    upto = [v for v in versions if version_key(v) <= version_key("0.6.30")]  # later releases: scripts/catalog/refresh
    assert versions[0] == "0.6.15" and upto[-1] == "0.6.30" and len(upto) == 16
    last = engine.select("0.6.30").release
    assert last is not None
    port = last.option("port")
    assert port is not None and port.flag == "--port" and port.default == 3000
    arg = last.option("arg")
    assert arg is not None and arg.flag == "--arg" and arg.nargs == "append"
    assert last.option("max_model_len") is not None and last.option("max_model_len").flag is None  # type: ignore[union-attr]
    older = engine.select("0.6.24").release
    assert older is not None and older.option("arg") is None and older.option("max_model_len") is None
    data = json.loads((UNIT / "releases" / "0.6.30.json").read_text())
    assert data["provenance"]["sha256"] == "5efbbcb19e23c4e3016737216f10ae0e15320b7e8db6967b2ff5f0dac87e8e38"
    assert data["notes"]["pins"] == {"bentoml": "1.4.8", "openai": "1.73.0"}  # no vLLM pin in OpenLLM itself


def test_every_bento_pins_vllm_0_8_5_and_maps_its_model() -> None:
    from servespec.engines.openllm.bentos import bento_for, repository

    repo = repository()
    assert repo.commit.startswith("f0027d6") and len(repo.bentos) == 66
    assert {bento.vllm for bento in repo.bentos} == {"0.8.5"}
    found = bento_for("qwen/qwen2.5-7b-instruct")  # Hub ids compare case-insensitively
    assert found is not None and found.tag == "qwen2.5:7b-instruct-fefe" and found.default("max_model_len") == 8192


def test_renders_openllm_serve_with_bento_arguments(tmp_path: Path) -> None:
    fleet = _fleet(tmp_path, options="{max_num_seqs: 16}", source="Qwen/Qwen3-8B",
                   revision="2069b3fae1114555f3c020c81410e51fa0f656f2")  # fmt: skip
    assert [f.rule for f in check_fleet(fleet) if f.severity is Severity.ERROR] == []
    container = render_fleet(fleet).files["switch/l4-a/container.yaml"]
    assert "entrypoint:\n- openllm\ncommand:\n- serve\n- qwen3:8b-2033\n- --port\n- '8000'\n" in container
    assert "- --arg\n- max_model_len=8192\n- --arg\n- max_num_seqs=16\n" in container
    assert "path: /readyz" in container


def test_before_0_6_25_nothing_reaches_vllm(tmp_path: Path) -> None:
    errors = _errors(tmp_path, version="0.6.24", options="{max_num_seqs: 16}")
    assert {(f.rule, "added in 0.6.25" in f.message) for f in errors} == {("ENG001", True)}
    fleet = _fleet(tmp_path, version="0.6.24", length="")
    assert [f for f in check_fleet(fleet) if f.severity is Severity.ERROR] == []
    assert "--arg" not in render_fleet(fleet).files["switch/l4-a/container.yaml"]


def test_eng001_unknown_option(tmp_path: Path) -> None:
    errors = _errors(tmp_path, options="{max_num_seqz: 16}")
    assert [f.rule for f in errors] == ["ENG001"]
    assert "max_num_seqs" in errors[0].hint


@pytest.mark.parametrize(
    ("options", "needle"),
    [("{max_num_seqs: many}", "max_num_seqs"), ("{tool_call_parser: 'hermes,llama3_json'}", "splits each --arg")],
)
def test_eng002_values_arg_cannot_carry(tmp_path: Path, options: str, needle: str) -> None:
    errors = _errors(tmp_path, options=options)
    assert [f.rule for f in errors] == ["ENG002"] and needle in errors[0].message


def test_eng003_what_the_bento_drops(tmp_path: Path) -> None:
    errors = _errors(tmp_path, options="{enable_prefix_caching: true}")
    assert [f.rule for f in errors] == ["ENG003"]
    assert "qwen2.5:7b-instruct-fefe declares no argument enable_prefix_caching" in errors[0].message
    errors = _errors(tmp_path, image="")
    assert [f.rule for f in errors] == ["ENG003"] and "publishes no serving image" in errors[0].message
    errors = _errors(tmp_path, revision="0123456789abcdef0123456789abcdef01234567")
    assert [f.rule for f in errors] == ["ENG003"] and "pins revision a09a35458c70" in errors[0].message


@pytest.mark.parametrize(("engine", "version"), [("openllm", "0.6.30"), ("vllm", "0.8.5")])
def test_switching_between_openllm_and_vllm(tmp_path: Path, engine: str, version: str) -> None:
    fleet = _fleet(tmp_path, engine=engine, version=version)
    found = check_fleet(fleet)
    assert [f.rule for f in found if f.severity is Severity.ERROR] == [], [f.to_text() for f in found]
    assert "switch/l4-a/container.yaml" in render_fleet(fleet).files
    assert ("ENG007" in {f.rule for f in found}) is (engine == "openllm")


def test_switching_a_model_no_bento_serves_says_why(tmp_path: Path) -> None:
    source = "meta-llama/Llama-3.1-8B-Instruct"  # the bento serves meta-llama/Meta-Llama-3.1-8B-Instruct
    revision = "0123456789abcdef0123456789abcdef01234567"
    assert _errors(tmp_path, engine="vllm", version="0.8.5", source=source, revision=revision) == []
    errors = _errors(tmp_path, source=source, revision=revision)
    assert [f.rule for f in errors] == ["ENG003"]
    assert "no bento of bentoml/openllm-models@f0027d6 serves" in errors[0].message and errors[0].hint


def test_memory_is_vllm_0_8_5_with_the_bento_context(tmp_path: Path) -> None:
    fleet = _fleet(tmp_path, length="", source="Qwen/Qwen3-8B", revision="2069b3fae1114555f3c020c81410e51fa0f656f2")
    deployment = fleet.deployments[0]
    plan = resolve.resolved(deployment).estimate_on(resolve.resolved(deployment).hosts[0])
    assert plan is not None and plan.context_tokens == 4096  # qwen3:8b-2033's BentoArgs max_model_len
    vllm = _fleet(tmp_path, engine="vllm", version="0.8.5", length=", max_model_len: 4096", source="Qwen/Qwen3-8B",
                  revision="2069b3fae1114555f3c020c81410e51fa0f656f2")  # fmt: skip
    same = resolve.resolved(vllm.deployments[0]).estimate_on(resolve.resolved(vllm.deployments[0]).hosts[0])
    assert same is not None and round(plan.kv_cache_gib, 2) == round(same.kv_cache_gib, 2)


def test_what_the_bento_fixes_is_reported(tmp_path: Path) -> None:
    errors = _errors(tmp_path, options="{openllm_model_id: Qwen/Qwen2.5-14B-Instruct}")
    assert [(f.rule, "duplicates the spec field model.source" in f.message) for f in errors] == [("ENG003", True)]
    path = tmp_path / "named.yaml"
    text = (
        (tmp_path / "switch.yaml")
        .read_text()
        .replace("rollout:", "serving: {model_name: qwen, api_key: {from_env: K}}\nrollout:")
    )
    path.write_text(text)
    found = check_fleet(load_fleet([path], GOLDEN / "inventory.yaml"))
    assert {f.rule for f in found if f.severity is not Severity.INFO} >= {"ENG004", "NET002"}
