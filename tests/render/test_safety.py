"""No value from a spec can change the meaning of a rendered file, for every engine.

Hostile strings ($(...), backticks, ';', '{{ }}', quotes) are rendered as inert literals:
argv stays a list, YAML and JSON go through serializers, env files and Modelfiles hold
them on one line, and the README's shell commands quote every word. Line breaks are
rejected by validation before anything is rendered.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import subprocess
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from servespec import engines
from servespec.render import render_fleet
from servespec.render.common import header, targets
from servespec.render.environment import RenderError, env_value, modelfile_value, shell_join, to_json, to_yaml
from servespec.rules.runner import check_fleet
from servespec.spec.fleet import Fleet, load_fleet
from servespec.text import UNSAFE
from tests.golden.regen import ENGINE_VERSIONS, GOLDEN

EVIL = ["$(touch /tmp/pwned)", "`id`", "a; rm -rf /", "{{ lookup('pipe', 'id') }}", 'it\'s "quoted"']
_yaml = YAML(typ="safe")


def _spec(engine: str, version: str) -> str:
    # Repo ids and Ollama names have a grammar now (validation refuses `;` and `$(`); a local path keeps them.
    source = {
        "llama.cpp": "/srv/models/$(id);`x`.gguf",
        "ollama": "evil:latest",
        "openllm": "Qwen/Qwen3-8B",  # OpenLLM serves only the models its bentos name
    }.get(engine, "org/model")
    quant = "  quantization: gguf\n" if engine in ("llama.cpp", "ollama") else ""
    option = {"ollama": "modelfile.stop", "tgi": "revision", "tensorrt-llm": "backend"}.get(engine, "chat_template")
    return f"""apiVersion: servespec/v1
kind: Deployment
metadata: {{name: evil}}
model:
  source: '{source}'
  revision: "{{{{ evil }}}}"
{quant}  max_model_len: 4096
  architecture: {{params_b: 0.5, layers: 2, hidden_size: 64, attention_heads: 4, kv_heads: 2,
                 max_position_embeddings: 8192}}
engine:
  name: {engine}
  version: {version}
  options: {{{option}: "{{{{ x }}}} $(id) `y`"}}
  extra_args: {json.dumps(EVIL)}
  env: {{EVIL_VAR: "$(id); `z` {{{{ w }}}}"}}
placement: {{hosts: [l4-a]}}
"""


@pytest.mark.parametrize("engine", engines.names())
def test_hostile_values_render_as_inert_literals(engine: str, tmp_path: Path) -> None:
    path = tmp_path / "evil.yaml"
    path.write_text(_spec(engine, ENGINE_VERSIONS[engine]))
    fleet = load_fleet([path], GOLDEN / "inventory.yaml")
    assert fleet.deployments, [f.to_text() for f in fleet.findings]
    rendered = render_fleet(fleet)
    container = _yaml.load(rendered.files["evil/l4-a/container.yaml"])
    native = container.get("native")
    if native:  # a host-native unit (LM Studio): the lms commands, and the unit's Exec lines as systemd splits them
        from tests.engines.test_lmstudio import _systemd_split

        command = max(native["commands"], key=len)
        unit = rendered.files[f"evil/l4-a/{native['unit_file']}"]
        execs = [_systemd_split(line.split("=", 1)[1]) for line in unit.splitlines() if line.startswith("Exec")]
        assert command in execs, (command, execs)
    else:
        command = [str(word) for word in (container["entrypoint"] or []) + container["command"]]
    for value in EVIL:
        assert value in command, f"{value!r} is not one argv element of {command}"
    assert container["environment"]["EVIL_VAR"] == "$(id); `z` {{ w }}"
    for name, text in rendered.files.items():
        if name.endswith((".yaml", ".yml")):
            _yaml.load(text)  # still one valid document
        if name.endswith(".json"):
            json.loads(text)
        if name.endswith((".env", "Modelfile")):
            for line in text.splitlines():
                assert (
                    line.startswith("#")
                    or line.split("=", 1)[0].isidentifier()
                    or line.split()[0] in ("FROM", "PARAMETER")
                )
    readme = rendered.files["evil/README.md"]
    if native:
        shown = [shlex.split(line) for line in readme.splitlines() if line.startswith(native["executable"])]
        assert shown == native["commands"]
        return
    docker = next(line for line in readme.splitlines() if line.startswith("docker run"))
    words = shlex.split(docker)
    assert words[words.index(container["image"]) + 1 :] == [str(w) for w in (container["entrypoint"] or [])[1:]] + [
        str(w) for w in container["command"]
    ]


def test_line_breaks_are_rejected_before_rendering(tmp_path: Path) -> None:
    path = tmp_path / "evil.yaml"
    path.write_text(_spec("vllm", '"0.11.0"').replace("a; rm -rf /", "line\\nbreak"))
    fleet = load_fleet([path], GOLDEN / "inventory.yaml")
    findings = check_fleet(fleet)
    assert not fleet.deployments
    assert any(f.rule == "SS003" and "line break" in f.message for f in findings)


def test_template_syntax_in_values_is_not_evaluated(tmp_path: Path) -> None:
    path = tmp_path / "evil.yaml"
    path.write_text(_spec("vllm", '"0.11.0"'))
    rendered = render_fleet(load_fleet([path], GOLDEN / "inventory.yaml"))
    config = rendered.files["evil/l4-a/config.yaml"]
    assert _yaml.load(config)["revision"] == "{{ evil }}"
    assert _yaml.load(config)["chat-template"] == "{{ x }} $(id) `y`"


@pytest.mark.parametrize("engine", engines.names())
def test_quantization_renders_the_profile_method(engine: str, tmp_path: Path) -> None:
    """Each quantization an engine takes by name renders as the method its profile (and its docs page) states."""
    from servespec.engines import get

    methods = {q: m for q, m in get(engine).profile.quantization.items() if isinstance(m, str)}
    for quantization, method in methods.items():
        path = tmp_path / f"{quantization}.yaml"
        path.write_text(
            f"""apiVersion: servespec/v1
kind: Deployment
metadata: {{name: q}}
model: {{source: org/model, quantization: {quantization}, max_model_len: 4096,
        architecture: {{params_b: 0.5, layers: 2, hidden_size: 64, attention_heads: 4, kv_heads: 2,
                       max_position_embeddings: 8192}}}}
engine: {{name: {engine}, version: {ENGINE_VERSIONS[engine]}}}
placement: {{hosts: [l4-a]}}
"""
        )
        rendered = render_fleet(load_fleet([path], GOLDEN / "inventory.yaml")).files
        text = "\n".join(rendered[name] for name in rendered if name.startswith("q/l4-a/"))
        assert method in text.split() or f"{method}\n" in text or f"={method}\n" in text, (engine, quantization)


HOSTILE_NAME = "x\nTRUST_REMOTE_CODE=true\n# \u202e\x1b[2J--> <b>.yaml"
"""A spec file name that, copied raw into a header, adds an env line, a bidi override and closes the README comment."""


def _with_file_name(fleet: Fleet, name: str) -> Fleet:
    """The fleet as if each deployment had been read from a file called ``name`` (the loader refuses such names)."""
    for deployment in fleet.deployments:
        deployment.document = dataclasses.replace(deployment.document, file=name)
    return fleet


def _hostile_fleet(tmp_path: Path, engine: str) -> Fleet:
    path = tmp_path / "spec.yaml"
    gguf = engine in ("llama.cpp", "ollama")
    source = {"llama.cpp": "/srv/models/tiny.gguf", "ollama": "qwen2.5:0.5b", "openllm": "Qwen/Qwen3-8B"}.get(
        engine, "org/model"
    )
    path.write_text(
        f"""apiVersion: servespec/v1
kind: Deployment
metadata: {{name: named}}
model:
  source: {source}
{"  quantization: gguf" if gguf else ""}
  max_model_len: 4096
  architecture: {{params_b: 0.5, layers: 2, hidden_size: 64, attention_heads: 4, kv_heads: 2,
                 max_position_embeddings: 8192}}
engine: {{name: {engine}, version: {ENGINE_VERSIONS[engine]}}}
placement: {{hosts: [l4-a]}}
"""
    )
    fleet = load_fleet([path], GOLDEN / "inventory.yaml")
    assert fleet.deployments, [f.to_text() for f in fleet.findings]
    return _with_file_name(fleet, HOSTILE_NAME)


@pytest.mark.parametrize("engine", engines.names())
def test_a_hostile_file_name_never_breaks_out_of_a_header(engine: str, tmp_path: Path) -> None:
    fleet = _hostile_fleet(tmp_path, engine)
    target = targets(fleet.deployments[0])[0]
    for per_host in (True, False):
        top = header(target, "0" * 64, per_host=per_host)
        assert not UNSAFE.search(top) and "-->" not in top and "<" not in top, top
    for name, text in render_fleet(fleet).files.items():
        assert not UNSAFE.search(text.replace("\n", "")), name
        assert "TRUST_REMOTE_CODE=true" not in text.splitlines(), name
        if name.endswith("README.md"):
            assert text.splitlines()[0].endswith("-->") and text.count("-->") == 1, name


HIDDEN = ["a\u202eb", "zero\u200bwidth", "line\u2028separator", "esc\x1b[31m", "c1\x9b", "bom\ufeff"]
"""Characters that make text read differently from what it is (bidi, zero-width, separators, escapes)."""


@pytest.mark.parametrize("value", HIDDEN)
def test_env_and_modelfile_values_refuse_hidden_characters(value: str) -> None:
    with pytest.raises(RenderError):
        env_value(value)
    with pytest.raises(RenderError):
        modelfile_value(value)


@pytest.mark.parametrize("value", HIDDEN)
def test_yaml_refuses_hidden_characters_in_keys_and_values(value: str) -> None:
    with pytest.raises(RenderError):
        to_yaml({"options": {"chat_template": value}})
    with pytest.raises(RenderError):
        to_yaml({value: 1})
    assert _yaml.load(to_yaml({"template": "line one\nline\ttwo"})) == {"template": "line one\nline\ttwo"}


@pytest.mark.parametrize("value", [*HIDDEN, "multi\nline\r\n", "\x00"])
def test_json_escapes_hidden_characters(value: str) -> None:
    text = to_json({value: [value]})
    assert not UNSAFE.search(text.replace("\n", "")), text
    assert json.loads(text) == {value: [value]}


@pytest.mark.parametrize("value", [*HIDDEN, "two\nlines", "tab\there", "plain", "it's $(x)"])
def test_shell_words_never_carry_hidden_characters_and_mean_the_same(value: str) -> None:
    line = shell_join(["printf", "%s\\0", value, "next"])
    assert not UNSAFE.search(line), line
    out = subprocess.run(["bash", "-c", line], capture_output=True, check=True).stdout
    assert out.decode("utf-8").split("\0")[:-1] == [value, "next"]


def _big_template_spec(tmp_path: Path, size: int, name: str = "big") -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(
        f"""apiVersion: servespec/v1
kind: Deployment
metadata: {{name: {name}}}
model:
  source: org/model
  max_model_len: 4096
  architecture: {{params_b: 0.5, layers: 2, hidden_size: 64, attention_heads: 4, kv_heads: 2,
                 max_position_embeddings: 8192}}
engine:
  name: vllm
  version: "0.11.0"
  options:
    chat_template: "{"x" * size}"
placement: {{hosts: [l4-a]}}
"""
    )
    return path


def test_a_rendered_file_over_the_limit_is_refused_at_the_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import servespec.render

    monkeypatch.setattr(servespec.render, "MAX_FILE_BYTES", 64 * 1024, raising=False)  # the real limit is megabytes
    fleet = load_fleet([_big_template_spec(tmp_path, 100_000)], GOLDEN / "inventory.yaml")
    assert fleet.deployments, [f.to_text() for f in fleet.findings]
    with pytest.raises(RenderError, match=r"big\.yaml:13:\d+: .*over the 64 KiB limit per rendered file"):
        render_fleet(fleet)


def test_a_render_over_the_run_limit_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import servespec.render

    monkeypatch.setattr(servespec.render, "MAX_RUN_BYTES", 96 * 1024, raising=False)
    first = _big_template_spec(tmp_path, 60_000)
    assert len(render_fleet(load_fleet([first], GOLDEN / "inventory.yaml")).files) > 1  # one: under the limit
    fleet = load_fleet([first, _big_template_spec(tmp_path, 60_000, "big2")], GOLDEN / "inventory.yaml")
    assert len(fleet.deployments) == 2, [f.to_text() for f in fleet.findings]
    with pytest.raises(RenderError, match=r"big2\.yaml:13:\d+: .*pass the 96 KiB limit for one render"):
        render_fleet(fleet)


def test_render_command_reports_an_oversized_render_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import servespec.render
    from tests.conftest import run_cli

    monkeypatch.setattr(servespec.render, "MAX_FILE_BYTES", 64 * 1024, raising=False)
    spec = _big_template_spec(tmp_path, 100_000)
    result = run_cli("render", str(spec), "-i", str(GOLDEN / "inventory.yaml"), "-o", str(tmp_path / "out"))
    assert result.exit_code == 1, result.output
    assert result.output.startswith("error: ") and "big.yaml:13:" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "out").exists()


def test_the_real_file_limit_stops_a_value_the_loader_would_have_refused(tmp_path: Path) -> None:
    """Defence in depth: a 9 MiB value (past the loader's budgets, set here directly) is not rendered."""
    fleet = load_fleet([_big_template_spec(tmp_path, 10)], GOLDEN / "inventory.yaml")
    fleet.deployments[0].spec.engine.options["chat_template"] = "x" * (9 * 1024 * 1024)
    with pytest.raises(RenderError, match="over the 8 MiB limit per rendered file"):
        render_fleet(fleet)


@pytest.mark.parametrize("engine", engines.names())
@pytest.mark.parametrize("value", ["bidi\u202eeurt=EDOC_ETOMER_TSURT", "zero\u200bwidth", "sep\u2028arator"])
def test_hidden_characters_in_values_never_reach_rendered_files(engine: str, value: str, tmp_path: Path) -> None:
    """Through render_fleet: a value the loader would refuse (set here directly) stops the render."""
    fleet = _hostile_fleet(tmp_path, engine)
    fleet.deployments[0].spec.engine.env["EVIL_VAR"] = value
    with pytest.raises(RenderError, match="U\\+"):
        render_fleet(fleet)
