"""No value from a spec can change the meaning of a rendered file, for every engine.

Hostile strings ($(...), backticks, ';', '{{ }}', quotes) are rendered as inert literals:
argv stays a list, YAML and JSON go through serializers, env files and Modelfiles hold
them on one line, and the README's shell commands quote every word. Line breaks are
rejected by validation before anything is rendered.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from servespec.render import render_fleet
from servespec.rules.runner import check_fleet
from servespec.spec.fleet import load_fleet
from tests.golden.regen import ENGINE_VERSIONS, GOLDEN

EVIL = ["$(touch /tmp/pwned)", "`id`", "a; rm -rf /", "{{ lookup('pipe', 'id') }}", 'it\'s "quoted"']
_yaml = YAML(typ="safe")


def _spec(engine: str, version: str) -> str:
    source = {
        "llama.cpp": "/srv/models/$(id);`x`.gguf",
        "ollama": "evil:$(id)",
    }.get(engine, "org/model;$(reboot)")
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


@pytest.mark.parametrize(("engine", "version"), ENGINE_VERSIONS.items())
def test_hostile_values_render_as_inert_literals(engine: str, version: str, tmp_path: Path) -> None:
    path = tmp_path / "evil.yaml"
    path.write_text(_spec(engine, version))
    fleet = load_fleet([path], GOLDEN / "inventory.yaml")
    assert fleet.deployments, [f.to_text() for f in fleet.findings]
    rendered = render_fleet(fleet)
    container = _yaml.load(rendered.files["evil/l4-a/container.yaml"])
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


@pytest.mark.parametrize("engine", ["vllm", "sglang", "tgi"])
def test_quantization_renders_the_profile_method(engine: str, tmp_path: Path) -> None:
    """Each quantization an engine takes by name renders as the method its profile (and its docs page) states."""
    from servespec.knowledge.engines import profile

    methods = {q: m for q, m in profile(engine).quantization.items() if isinstance(m, str)}
    assert methods
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
