"""LM Studio (llmster, lms): the catalog read from lms, the host-native unit, ENG001-3/ENG008, memory, the switch."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from servespec import engines
from servespec.engines.lmstudio import gpu_ratio
from servespec.engines.lmstudio.render import command_line, environment_line, systemd_word
from servespec.findings import Finding, Severity
from servespec.knowledge import resolve
from servespec.render import render_fleet
from servespec.render.environment import RenderError
from servespec.rules.runner import check_fleet
from servespec.spec.fleet import load_fleet
from tests.golden.regen import GOLDEN

REPO = Path(__file__).parents[2]
COMMIT = "07b7252d6de26a3a58c1bb80ed7e75a2b17f5eb6"
ARCH = (
    "{params_b: 0.27, layers: 18, hidden_size: 640, attention_heads: 4, kv_heads: 1, head_dim: 256, "
    "vocab_size: 262144, max_position_embeddings: 32768}"
)


def _spec(tmp_path: Path, *, engine: str = "lmstudio", version: str = '"07b7252"', source: str = "google/gemma-3-270m",
          options: str = "{}", extra: str = "", host: str = "l4-a") -> Path:  # fmt: skip
    path = tmp_path / "spec.yaml"
    path.write_text(
        f"""apiVersion: servespec/v1
kind: Deployment
metadata: {{name: lms}}
model:
  source: {source}
  quantization: gguf
  gguf_type: Q4_K_M
  max_model_len: 8192
  architecture: {ARCH}
engine:
  name: {engine}
  version: {version}
  options: {options}{extra}
placement: {{hosts: [{host}]}}
serving: {{port: 1234, model_name: gemma-3-270m}}
"""
    )
    return path


def _findings(path: Path) -> list[Finding]:
    return check_fleet(load_fleet([path], GOLDEN / "inventory.yaml"))


def _rules(path: Path, severity: Severity = Severity.ERROR) -> list[tuple[str, str]]:
    return sorted((f.rule, f.path) for f in _findings(path) if f.severity is severity)


def test_catalog_holds_lms_load_and_server_start_at_the_commit() -> None:
    release = engines.get("lmstudio").select("07b7252").release
    assert release is not None and release.version == "07b7252"
    context = release.option("context_length")
    assert context is not None and context.flag == "--context-length" and context.aliases == ("-c",)
    assert context.type == "int" and context.min == 1
    parallel = release.option("parallel")
    assert parallel is not None and parallel.type == "int" and parallel.min == 1
    port = release.option("server.port")
    assert port is not None and (port.flag, port.default, port.min, port.max) == ("--port", 1234, 0, 65535)
    bind = release.option("server.bind")
    assert bind is not None and bind.default == "127.0.0.1" and bind.env == "LMS_SERVER_HOST"
    mtp = release.option("speculative_draft_mtp")
    assert mtp is not None and mtp.bool_form == "negatable"
    for key in ("gpu", "ttl", "identifier", "estimate_only", "server.cors"):
        assert release.option(key) is not None, key
    assert release.option("host") is None and release.option("log_level") is None  # client and log options
    data = json.loads((REPO / "src/servespec/engines/lmstudio/releases/07b7252.json").read_text())
    assert data["provenance"]["commit"] == COMMIT and data["provenance"]["tag"] is None
    assert "closed source" in data["notes"]["daemon"]["text"]


def test_catalog_rebuilds_the_same_from_the_lms_snapshot() -> None:
    """scripts/catalog/lmstudio.py over the lms snapshot gives the committed options (when the snapshot is here)."""
    sys.path.insert(0, str(REPO / "scripts" / "catalog"))
    import gitsrc  # type: ignore[import-not-found]

    if not (gitsrc.CACHE / "lmstudio-ai+lms.git").exists() and gitsrc.mirror("lmstudio-ai", "lms") is None:
        pytest.skip("no lms snapshot in the catalog cache or SERVESPEC_GIT_MIRRORS (scripts/catalog/gitsrc.py)")
    import lmstudio as builder  # type: ignore[import-not-found]

    built = builder.build("07b7252")
    release = engines.get("lmstudio").select("07b7252").release
    assert release is not None
    assert sorted(built["options"]) == sorted(release.options)
    for key, entry in built["options"].items():
        option = release.option(key)
        assert option is not None and (option.flag, option.type, option.min, option.max) == (
            entry["flag"],
            entry["type"],
            entry["min"],
            entry["max"],
        ), key


def test_unit_runs_the_lms_commands_in_order(tmp_path: Path) -> None:
    spec = _spec(tmp_path, options="{gpu: 0.5, parallel: 2, server.cors: true}")
    fleet = load_fleet([spec], GOLDEN / "inventory.yaml")
    rendered = render_fleet(fleet)
    files = rendered.host_files("lms", "l4-a")
    unit = files["servespec-lms.service"]
    lines = [line for line in unit.splitlines() if line.startswith("Exec")]
    assert lines == [
        "ExecStart=/home/lmstudio/.lmstudio/bin/lms daemon up",
        "ExecStartPost=/home/lmstudio/.lmstudio/bin/lms load google/gemma-3-270m --yes --identifier gemma-3-270m "
        "--context-length 8192 --gpu 0.5 --parallel 2",
        "ExecStartPost=/home/lmstudio/.lmstudio/bin/lms server start --port 1234 --bind 127.0.0.1 --cors",
        "ExecStop=/home/lmstudio/.lmstudio/bin/lms daemon down",
    ]
    assert "Type=oneshot" in unit and "RemainAfterExit=yes" in unit
    native = rendered.containers[("lms", "l4-a")].native
    lms = "/home/lmstudio/.lmstudio/bin/lms"
    assert native is not None and native.commands[1][:3] == (lms, "load", "google/gemma-3-270m")
    assert json.loads(files["lms-commands.json"])["commands"][2][-1] == "--cors"
    container = files["container.yaml"]
    assert "image: ''" in container and "volumes: []" in container and "native:" in container
    assert render_fleet(fleet).files == rendered.files  # deterministic


def _systemd_split(line: str) -> list[str]:
    """Words of an Exec*= value as systemd reads them (extract_first_word with quotes and C escapes, then %%, $$)."""
    words, word, quote, index, started = [], [], "", 0, False
    while index < len(line):
        char = line[index]
        if char == "\\":
            word.append(line[index + 1])
            index += 2
            started = True
            continue
        if quote:
            if char == quote:
                quote = ""
            else:
                word.append(char)
        elif char in "\"'":
            quote, started = char, True
        elif char == " ":
            if started:
                words.append("".join(word))
            word, started = [], False
        else:
            word.append(char)
            started = True
        index += 1
    if started:
        words.append("".join(word))
    assert not re.search(r"(?<!%)%[^%]", line.replace("%%", "")), line  # no specifier left
    return [w.replace("%%", "%").replace("$$", "$") for w in words]


HOSTILE = ["a b", 'say "hi"', "back\\slash", "%n%h", "$HOME ${PATH}", ";", "-", "'single'", "é ünïcode", ""]


@pytest.mark.parametrize("word", HOSTILE)
def test_unit_words_read_back_as_written(word: str) -> None:
    line = command_line(["/home/lmstudio/.lmstudio/bin/lms", "load", word, "--identifier", word])
    assert _systemd_split(line) == ["/home/lmstudio/.lmstudio/bin/lms", "load", word, "--identifier", word]


def test_unit_refuses_control_characters_and_a_relative_executable() -> None:
    with pytest.raises(RenderError):
        systemd_word("two\nlines")
    with pytest.raises(RenderError):
        command_line(["lms", "daemon", "up"])
    with pytest.raises(RenderError):
        environment_line("BAD NAME", "x")
    assert environment_line("A", '50% "x" $HOME') == '"A=50%% \\"x\\" $HOME"'  # $ is literal in Environment=


def test_hostile_option_value_is_one_escaped_word(tmp_path: Path) -> None:
    hostile = 'x --cors %n $HOME "q" \\'
    path = _spec(tmp_path, options="{speculative_draft_model: " + json.dumps(hostile) + "}")
    files = render_fleet(load_fleet([path], GOLDEN / "inventory.yaml")).host_files("lms", "l4-a")
    load = next(line for line in files["servespec-lms.service"].splitlines() if " load " in line)
    words = _systemd_split(load.removeprefix("ExecStartPost="))
    assert words[words.index("--speculative-draft-model") + 1] == hostile
    assert "--cors" not in words


def test_eng001_and_eng002_on_lms_options(tmp_path: Path) -> None:
    unknown = [f for f in _findings(_spec(tmp_path, options="{context_lenght: 4096}")) if f.rule == "ENG001"]
    assert len(unknown) == 1 and "context_length" in (unknown[0].hint + unknown[0].message)
    for options, rule in (
        ("{parallel: 0}", "ENG002"),
        ("{ttl: 1.5}", "ENG002"),
        ("{server.port: 70000}", "ENG002"),
        ("{gpu: half}", "ENG002"),
        ("{gpu: 1.5}", "ENG002"),
        ("{estimate_only: true}", "ENG003"),
        ("{exact: true}", "ENG003"),
    ):
        found = {f.rule for f in _findings(_spec(tmp_path, options=options)) if f.severity is Severity.ERROR}
        assert rule in found, options
    for good in ("{gpu: 'off'}", "{gpu: max}", "{gpu: 0.25}", "{parallel: 4, ttl: 600}"):
        assert _rules(_spec(tmp_path, options=good)) == [], good
    moved = _findings(_spec(tmp_path, extra="\n  extra_args: [--cors]"))
    assert any(f.rule == "ENG003" and "server start" in f.message for f in moved)
    assert gpu_ratio("OFF") == 0 and gpu_ratio("max") == 1 and gpu_ratio("0.3") == 0.3 and gpu_ratio(True) is None


def test_a_spec_field_rendered_by_servespec_is_eng003(tmp_path: Path) -> None:
    twice = _findings(_spec(tmp_path, options="{context_length: 4096}"))
    assert any(f.rule == "ENG003" for f in twice)


def test_memory_maps_gpu_to_layers_and_shares_one_kv_cache(tmp_path: Path) -> None:
    def plan(options: str):  # type: ignore[no-untyped-def]
        fleet = load_fleet([_spec(tmp_path, options=options)], GOLDEN / "inventory.yaml")
        deployment = fleet.deployments[0]
        return resolve.resolved(deployment).estimate_on(resolve.resolved(deployment).hosts[0])

    full, half, off = plan("{gpu: max, parallel: 4}"), plan("{gpu: 0.5}"), plan("{gpu: 'off'}")
    one = plan("{gpu: max, parallel: 1}")
    assert full is not None and half is not None and off is not None and one is not None
    assert full.kv_tokens == one.kv_tokens == 8192  # the parallel predictions share one cache (assumed)
    assert full.weights_gib > half.weights_gib > off.weights_gib
    assert half.offload is not None and off.offload is not None and full.offload is None


def test_switching_engine_name_with_llama_cpp(tmp_path: Path) -> None:
    # LM Studio -> llama.cpp: the key is read as a Hugging Face repo (--hf-repo): valid, no error.
    to_llama = _spec(tmp_path, engine="llama.cpp", version="b11312", options="{parallel: 2}")
    assert _rules(to_llama) == []
    # llama.cpp -> LM Studio: a host .gguf path and llama-server options say why not.
    llama = (GOLDEN / "llama.cpp" / "single-gpu" / "spec.yaml").read_text()
    back = llama.replace("name: llama.cpp, version: b11312", 'name: lmstudio, version: "07b7252"')
    (tmp_path / "back.yaml").write_text(back)
    found = _findings(tmp_path / "back.yaml")
    errors = {(f.rule, f.path) for f in found if f.severity is Severity.ERROR}
    assert ("ENG008", "model.source") in errors  # lms load takes a model key, not a host path
    assert {"ENG001"} <= {rule for rule, _ in errors}  # flash_attn, cache_type_k: llama-server's, not lms's
    assert ("NET002", "serving.api_key") in errors  # lms server start has no API key
    message = next(f.message for f in found if f.rule == "ENG008")
    assert "lms load KEY" in message


def test_container_fields_are_eng008(tmp_path: Path) -> None:
    extra = "\n  image: example.org/lms:1\n  image_archive: lms.tar\n  command: [x]"
    found = {f.path for f in _findings(_spec(tmp_path, extra=extra)) if f.rule == "ENG008"}
    assert {"engine.image", "engine.image_archive", "engine.command"} <= found


def test_unit_runs_as_the_dedicated_user_not_root(tmp_path: Path) -> None:
    unit = render_fleet(load_fleet([_spec(tmp_path)], GOLDEN / "inventory.yaml")).host_files("lms", "l4-a")[
        "servespec-lms.service"
    ]
    service = unit.split("[Service]", 1)[1].split("[Install]", 1)[0].splitlines()
    assert "User=lmstudio" in service and "Group=lmstudio" in service and "NoNewPrivileges=yes" in service
    assert all(line.split(" ", 1)[0].endswith("/home/lmstudio/.lmstudio/bin/lms") for line in service if "Exec" in line)


@pytest.mark.parametrize("entrypoint", ["/bin/sh", "/tmp/lms.sh", "/usr/bin/lmsx", "/opt/lms/"])
def test_only_an_lms_executable_is_accepted(tmp_path: Path, entrypoint: str) -> None:
    spec = _spec(tmp_path, extra=f"\n  entrypoint: [{entrypoint}]")
    found = [f for f in _findings(spec) if f.rule == "ENG008" and f.path == "engine.entrypoint"]
    assert len(found) == 1 and found[0].severity is Severity.ERROR and found[0].line == 14, found
    with pytest.raises(RenderError, match="only an executable named lms"):
        render_fleet(load_fleet([spec], GOLDEN / "inventory.yaml"))


@pytest.mark.parametrize(
    "name", ["LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "NODE_OPTIONS", "PATH", "PYTHONPATH", "HOME", "BASH_ENV"]
)
def test_code_loading_environment_is_refused(tmp_path: Path, name: str) -> None:
    spec = _spec(tmp_path, extra=f"\n  env: {{{name}: /tmp/x, CUDA_VISIBLE_DEVICES: '0'}}")
    found = [(f.path, f.line, f.severity) for f in _findings(spec) if f.rule == "ENG008"]
    assert found == [(f"engine.env.{name}", 14, Severity.ERROR)]
    with pytest.raises(RenderError, match=f"engine.env.{name}"):
        render_fleet(load_fleet([spec], GOLDEN / "inventory.yaml"))


def test_ordinary_environment_and_an_lms_path_pass(tmp_path: Path) -> None:
    extra = "\n  entrypoint: [/opt/lmstudio/bin/lms]\n  env: {CUDA_VISIBLE_DEVICES: '0', LMS_SERVER_HOST: 127.0.0.1}"
    spec = _spec(tmp_path, extra=extra)
    assert [f for f in _findings(spec) if f.rule == "ENG008"] == []
    files = render_fleet(load_fleet([spec], GOLDEN / "inventory.yaml")).host_files("lms", "l4-a")
    unit = files["servespec-lms.service"]
    assert "ExecStart=/opt/lmstudio/bin/lms daemon up" in unit and 'Environment="CUDA_VISIBLE_DEVICES=0"' in unit


def test_role_module_refuses_a_root_unit_or_another_executable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from tests.modules import role_module

    module = role_module(monkeypatch, "servespec_native", "servespec_native_under_test")
    spec = _spec(tmp_path)
    rendered = render_fleet(load_fleet([spec], GOLDEN / "inventory.yaml"))
    unit = rendered.host_files("lms", "l4-a")["servespec-lms.service"]
    native = rendered.containers[("lms", "l4-a")].native
    assert native is not None
    record = native.to_json()
    module._check_unit(unit, record)  # what servespec renders is installed
    for text, changed in (
        (unit.replace("User=lmstudio\n", ""), record),
        (unit.replace("User=lmstudio", "User=root"), record),
        (unit, {**record, "executable": "/bin/sh"}),
        (unit.replace("ExecStop=/home/lmstudio/.lmstudio/bin/lms", "ExecStop=/bin/sh -c"), record),
    ):
        with pytest.raises(ValueError, match="refusing"):
            module._check_unit(text, changed)
