"""One Resolved per deployment, read by rules, estimate and render; options read in every spelling."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from servespec import engines
from servespec.engines.images import image_policy
from servespec.estimate import estimates
from servespec.knowledge import resolve, sources
from servespec.render import render_fleet
from servespec.rules.runner import check_fleet
from servespec.spec.fleet import load_fleet
from tests.conftest import run_cli

EXAMPLES = Path(__file__).parents[2] / "specs" / "examples"


def test_model_facts_are_resolved_once_per_deployment(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = sources.answer

    def counting(deployment: resolve.DeploymentDoc) -> sources.ModelAnswer:
        calls.append(deployment.name)
        return real(deployment)

    monkeypatch.setattr(sources, "answer", counting)
    fleet = load_fleet([EXAMPLES])
    findings = check_fleet(fleet)
    estimates(fleet, findings)
    render_fleet(fleet)
    assert fleet.deployments
    assert sorted(calls) == sorted(d.name for d in fleet.deployments)  # was 52 for these examples


def _spec(tmp_path: Path, engine: str, version: str, options: str) -> Path:
    (tmp_path / "inventory.yaml").write_text(
        "apiVersion: servespec/v1\nkind: Inventory\nhosts:\n"
        "  h1: {address: 10.0.0.1, hardware: {gpus: {model: NVIDIA L4, count: 1}, driver_version: '550.54.14'}}\n"
    )
    path = tmp_path / "spec.yaml"
    path.write_text(
        "apiVersion: servespec/v1\nkind: Deployment\nmetadata: {name: d}\n"
        f"inventory: inventory.yaml\nmodel: {{source: Qwen/Qwen2.5-7B-Instruct, max_model_len: 8192}}\n"
        f"engine:\n  name: {engine}\n  version: '{version}'\n{options}"
        "placement: {hosts: [h1]}\n"
    )
    return path


@pytest.mark.parametrize(
    ("options", "path"),
    [
        ("  options: {block_size: 8}\n", "engine.options.block_size"),
        ("  options: {block-size: 8}\n", "engine.options.block-size"),
        ("  extra_args: [--block-size, '8']\n", "engine.extra_args[0]"),
        ("  extra_args: [--block-size=8]\n", "engine.extra_args[0]"),
    ],
)
def test_block_size_is_checked_in_every_spelling(tmp_path: Path, options: str, path: str) -> None:
    fleet = load_fleet([_spec(tmp_path, "vllm", "0.11.0", options)])
    found = [f for f in check_fleet(fleet) if f.rule == "ENG002"]
    assert len(found) == 1, found
    assert "multiple of 16" in found[0].message
    assert (found[0].line, found[0].path) == (9, path)  # at the user's own key or list item


def test_extra_args_values_are_checked_against_the_catalog(tmp_path: Path) -> None:
    options = "  extra_args: [--gpu-memory-utilization, '1.5', --max-num-seqs, many]\n"
    fleet = load_fleet([_spec(tmp_path, "vllm", "0.11.0", options)])
    messages = sorted(f.message for f in check_fleet(fleet) if f.rule == "ENG002")
    assert len(messages) == 2, messages
    assert "--gpu-memory-utilization: must be ≤ 1.0" in messages[0]
    assert "--max-num-seqs: expects an integer" in messages[1]


def test_a_negative_number_is_a_flags_value(tmp_path: Path) -> None:
    fleet = load_fleet([_spec(tmp_path, "vllm", "0.11.0", "  extra_args: [--seed, '-1']\n")])
    assert resolve.resolved(fleet.deployments[0]).options["seed"] == -1
    assert not [f for f in check_fleet(fleet) if f.rule == "ENG002"]


@pytest.mark.parametrize(
    "image",
    [
        None,
        "vllm/vllm-openai:v0.11.0",
        "docker.io/vllm/vllm-openai:v0.11.0",
        "index.docker.io/vllm/vllm-openai:v0.11.0",
    ],
)
def test_official_image_is_one_answer_for_validate_and_preflight(image: str | None) -> None:
    vllm = engines.get("vllm")
    policy = image_policy(vllm, "0.11.0", image, vllm.select("0.11.0").release)
    assert policy.official and policy.cuda == (12, 8) and policy.min_driver_text == "525.60.13"


def test_a_custom_image_has_no_driver_minimum() -> None:
    vllm = engines.get("vllm")
    policy = image_policy(vllm, "0.11.0", "registry.example/vllm:v0.11.0", vllm.select("0.11.0").release)
    assert not policy.official and policy.min_driver is None


def test_preflight_uses_the_validate_answer(tmp_path: Path) -> None:
    from servespec.rollout.orchestrate import _driver_min

    options = "  image: docker.io/vllm/vllm-openai:v0.11.0\n"
    fleet = load_fleet([_spec(tmp_path, "vllm", "0.11.0", options)])
    assert _driver_min(fleet.deployments[0]) == "525.60.13"  # was '' (custom) before


def test_estimate_text_and_json_list_the_same_findings(tmp_path: Path) -> None:
    # A batch the KV cache cannot hold (MEM003) and a layout the host cannot give (PAR002).
    options = "  options: {max_num_seqs: 4096}\nresources: {tensor_parallel: 2}\n"
    spec = _spec(tmp_path, "vllm", "0.11.0", options)
    as_json = run_cli("estimate", str(spec), "--format", "json")
    as_text = run_cli("estimate", str(spec))
    rules = {f["rule"] for f in json.loads(as_json.stdout)["findings"]}
    assert rules and {"PAR002"} <= rules
    for rule in rules:
        assert f"[{rule}]" in as_text.stderr or rule in as_text.stderr
    assert as_json.exit_code == as_text.exit_code == 1


@pytest.mark.parametrize("options", ["  extra_args: [-tp, '2']\n", "  options: {tensor-parallel-size: 2}\n"])
def test_a_spec_field_set_again_is_found_in_any_spelling(tmp_path: Path, options: str) -> None:
    fleet = load_fleet([_spec(tmp_path, "vllm", "0.11.0", options)])
    found = [f for f in check_fleet(fleet) if f.rule == "ENG003"]
    assert [f.line for f in found] == [9], found  # -tp is tensor_parallel_size's alias
    assert "resources.tensor_parallel" in found[0].message
