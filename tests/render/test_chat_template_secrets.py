"""engine.secret_env, serving.chat_template and serving.system_prompt (issue 24, item 3).

Secrets travel as references only: the rendered files name the variable and the secrets env
file, never a value; the value appears only in the env file apply writes on the controller. The
chat template is read at load (inside the checkout, REF002 otherwise), shipped beside
container.yaml as written and named by each engine's own option; engines that take no Jinja
template file, or no default system prompt, get ENG004 instead. Ollama's SYSTEM is one
Modelfile triple-quoted string, checked against a port of Ollama's own Modelfile parser.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from servespec import engines
from servespec.engines import get
from servespec.engines.kit import CHAT_TEMPLATE_FIELD, CHAT_TEMPLATE_FILE, CHAT_TEMPLATE_PATH, RenderError
from servespec.findings import Finding, Severity
from servespec.render import Rendered, render_fleet
from servespec.rollout.staging import stage
from servespec.rules.runner import check_fleet
from servespec.spec.fleet import Fleet, load_fleet
from tests.golden.regen import ENGINE_VERSIONS, GOLDEN

TEMPLATE = """{%- for message in messages %}
<|im_start|>{{ message['role'] }}
{{ message['content'] }}<|im_end|>
{% endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}"""
SOURCES = {"hf": "Qwen/Qwen2.5-7B-Instruct", "gguf": "/srv/models/qwen.gguf", "tag": "qwen2.5:7b", "key": "qwen2.5"}
VERSIONS = {"tensorrt-llm": '"1.2.1"'}
"""A release whose catalog lists the chat-template option (the golden one otherwise)."""
SECRET = "exa-secret-value-0123456789"


def _fleet(tmp_path: Path, engine: str, serving: str = "", engine_extra: str = "", template: str = TEMPLATE) -> Fleet:
    profile = get(engine).profile
    gguf = "\n  quantization: gguf\n  gguf_type: Q4_K_M" if profile.loads_gguf else ""
    (tmp_path / "templates").mkdir(exist_ok=True)
    (tmp_path / "templates" / "chat.jinja").write_text(template)
    path = tmp_path / "chat.yaml"
    path.write_text(
        f"""apiVersion: servespec/v1
kind: Deployment
metadata: {{name: chat}}
model:
  source: {SOURCES[profile.model_format]}
  revision: 0123456789abcdef0123456789abcdef01234567
  max_model_len: 4096{gguf}
engine:
  name: {engine}
  version: {VERSIONS.get(engine) or ENGINE_VERSIONS[engine]}{engine_extra}
placement: {{hosts: [h100-a]}}
serving:
  port: 9000{serving}
"""
    )
    fleet = load_fleet([path], GOLDEN / "inventory.yaml")
    assert fleet.deployments, [f.to_text() for f in fleet.findings]
    return fleet


def _found(fleet: Fleet, rule: str) -> list[Finding]:
    return [f for f in check_fleet(fleet) if f.rule == rule]


def _line(tmp_path: Path, key: str) -> int:
    """The line of ``key:`` in the test spec (1-based)."""
    lines = (tmp_path / "chat.yaml").read_text().splitlines()
    return next(number for number, line in enumerate(lines, 1) if line.strip().startswith(f"{key}:"))


def _host_files(rendered: Rendered) -> dict[str, str]:
    return rendered.host_files("chat", "h100-a")


# engine.secret_env ---------------------------------------------------------------------------

SECRET_ENV = (
    "\n  secret_env:\n    EXA_API_KEY: {from_env: SERVESPEC_TEST_EXA}\n    TOOL_TOKEN: {from_file: KEYS/tool-token}"
)
CONTAINER_ENGINES = [name for name in engines.names() if get(name).profile.image is not None]


@pytest.mark.parametrize("engine", CONTAINER_ENGINES)
def test_secret_env_reaches_the_env_file_by_reference_only(
    tmp_path: Path, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SERVESPEC_TEST_EXA", SECRET)
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "tool-token").write_text("tool-token-value-42\n")
    fleet = _fleet(tmp_path, engine, engine_extra=SECRET_ENV.replace("KEYS", str(tmp_path / "keys")))
    rendered = render_fleet(fleet)
    container = rendered.containers[("chat", "h100-a")]
    assert container.secret_environment["EXA_API_KEY"] == {"from_env": "SERVESPEC_TEST_EXA"}
    assert container.secret_environment["TOOL_TOKEN"] == {"from_file": str(tmp_path / "keys" / "tool-token")}
    assert "/etc/servespec/chat/secrets.env" in container.env_files
    for name, text in rendered.files.items():
        assert SECRET not in text and "tool-token-value-42" not in text, name
    assert "EXA_API_KEY" in rendered.files["chat/README.md"]
    assert "EXA_API_KEY" not in container.environment and not any(SECRET in word for word in container.command)
    bundle, env_text = stage(rendered, fleet.deployments[0], "h100-a", tmp_path / "work", tmp_path / "keys")
    assert f"EXA_API_KEY={SECRET}\n" in env_text and "TOOL_TOKEN=tool-token-value-42\n" in env_text
    assert SECRET not in bundle.read_text()  # the uploaded bundle holds references, the env file the values


def test_secret_env_names_are_checked_where_written(tmp_path: Path) -> None:
    for name in ("CUDA_VISIBLE_DEVICES", "HF_TOKEN", "SERVESPEC_API_KEY"):
        path = tmp_path / f"{name.lower()}.yaml"
        path.write_text(
            "apiVersion: servespec/v1\nkind: Deployment\nmetadata: {name: chat}\nmodel: {source: Qwen/Qwen2.5-7B}\n"
            f'engine:\n  name: vllm\n  version: "0.11.0"\n  secret_env:\n    {name}: {{from_env: X}}\n'
        )
        fleet = load_fleet([path], GOLDEN / "inventory.yaml")
        assert not fleet.deployments
        [finding] = fleet.findings
        assert (finding.rule, finding.line) == ("SS003", 9), finding.to_text()
        assert "servespec sets" in finding.message
    path = tmp_path / "both.yaml"
    path.write_text(
        "apiVersion: servespec/v1\nkind: Deployment\nmetadata: {name: chat}\nmodel: {source: Qwen/Qwen2.5-7B}\n"
        'engine:\n  name: vllm\n  version: "0.11.0"\n  env: {EXA_API_KEY: x}\n'
        "  secret_env:\n    EXA_API_KEY: {from_env: X}\n"
    )
    [finding] = load_fleet([path], GOLDEN / "inventory.yaml").findings
    assert finding.path == "engine.secret_env" and "both engine.env and engine.secret_env" in finding.message


def test_render_refuses_a_secret_the_unit_sets_itself(tmp_path: Path) -> None:
    fleet = _fleet(
        tmp_path,
        "vllm",
        serving="\n  api_key: {from_env: KEY}",
        engine_extra="\n  secret_env:\n    VLLM_API_KEY: {from_env: OTHER}",
    )
    assert [f.line for f in _found(fleet, "ENG003")] == [_line(tmp_path, "VLLM_API_KEY")]
    with pytest.raises(RenderError, match=r"engine\.secret_env\.VLLM_API_KEY"):
        render_fleet(fleet)


# serving.chat_template -----------------------------------------------------------------------


@pytest.mark.parametrize("engine", engines.names())
def test_chat_template_is_shipped_where_the_engine_takes_a_file(tmp_path: Path, engine: str) -> None:
    fleet = _fleet(tmp_path, engine, serving="\n  chat_template: templates/chat.jinja")
    takes = CHAT_TEMPLATE_FIELD in get(engine).profile.spec_options
    warned = _found(fleet, "ENG004")
    files = _host_files(render_fleet(fleet))
    if takes:
        assert not warned
        assert files[CHAT_TEMPLATE_FILE] == TEMPLATE  # as written: no header, nothing escaped
        rendered = "\n".join(text for name, text in files.items() if name != CHAT_TEMPLATE_FILE)
        option = get(engine).profile.spec_options[CHAT_TEMPLATE_FIELD]
        flag = get(engine).select(fleet.deployments[0].spec.engine.version).release.flag(option)
        assert flag and CHAT_TEMPLATE_PATH in rendered, engine
        assert flag in rendered or flag.removeprefix("--") in rendered, (engine, flag)
        container = yaml.safe_load(files["container.yaml"])
        assert CHAT_TEMPLATE_FILE in container["files"]
        assert {"host": "/etc/servespec/chat", "container": "/etc/servespec", "mode": "ro"} in container["volumes"]
    else:
        assert [(f.line, f.severity) for f in warned] == [(_line(tmp_path, "chat_template"), Severity.WARNING)]
        assert CHAT_TEMPLATE_FILE not in files and CHAT_TEMPLATE_PATH not in "\n".join(files.values())


def test_a_partial_catalog_without_the_option_renders_nothing_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(VERSIONS, "tensorrt-llm", '"1.1.0"')  # its catalog is partial: no --chat_template listed
    fleet = _fleet(tmp_path, "tensorrt-llm", serving="\n  chat_template: templates/chat.jinja")
    [finding] = _found(fleet, "ENG004")
    assert "partial" in finding.message and finding.line == _line(tmp_path, "chat_template")
    files = _host_files(render_fleet(fleet))
    assert CHAT_TEMPLATE_FILE not in files and CHAT_TEMPLATE_PATH not in "\n".join(files.values())


def test_a_changed_template_is_a_new_revision(tmp_path: Path) -> None:
    first = render_fleet(_fleet(tmp_path, "vllm", serving="\n  chat_template: templates/chat.jinja"))
    second = render_fleet(
        _fleet(tmp_path, "vllm", serving="\n  chat_template: templates/chat.jinja", template=TEMPLATE + "\n")
    )
    assert first.containers[("chat", "h100-a")].revision != second.containers[("chat", "h100-a")].revision


@pytest.mark.parametrize(
    ("reference", "why"),
    [
        ("/etc/passwd", "absolute path"),
        ("../outside.jinja", "outside the root"),
        ("link.jinja", "outside the root"),
        ("templates", "not a regular file"),
        ("latin1.jinja", "not UTF-8"),
    ],
)
def test_chat_template_outside_the_checkout_or_unreadable_is_ref002(tmp_path: Path, reference: str, why: str) -> None:
    checkout = tmp_path / "checkout"
    (checkout / ".git").mkdir(parents=True)
    (checkout / "templates").mkdir()
    (tmp_path / "outside.jinja").write_text("{{ secret }}")
    (checkout / "link.jinja").symlink_to(tmp_path / "outside.jinja")
    (checkout / "latin1.jinja").write_bytes("caf\xe9".encode("latin-1"))
    spec = checkout / "chat.yaml"
    spec.write_text(
        "apiVersion: servespec/v1\nkind: Deployment\nmetadata: {name: chat}\nmodel: {source: Qwen/Qwen2.5-7B}\n"
        f'engine: {{name: vllm, version: "0.11.0"}}\nserving: {{chat_template: {reference}}}\n'
    )
    fleet = load_fleet([spec], GOLDEN / "inventory.yaml")
    [finding] = [f for f in fleet.findings if f.rule == "REF002"]
    assert finding.line == 6 and why in finding.message, finding.to_text()
    assert "secret" not in finding.message and str(tmp_path) not in finding.message
    assert fleet.deployments[0].chat_template is None


def test_a_jinja_syntax_error_is_located_at_the_field_with_the_template_line(tmp_path: Path) -> None:
    broken = "{% for message in messages %}\n{{ message['content'] }\n{% endfor %}\n"
    fleet = _fleet(tmp_path, "vllm", serving="\n  chat_template: templates/chat.jinja", template=broken)
    [finding] = _found(fleet, "ENG002")
    # a warning: the engines start with it, and each chat request fails
    assert finding.line == _line(tmp_path, "chat_template") and finding.severity == Severity.WARNING
    assert "line 2 of the file" in finding.message and "content" not in finding.message


# serving.system_prompt -----------------------------------------------------------------------


def _parse_modelfile_value(text: str) -> list[tuple[str, str]]:  # noqa: C901 - the Go state machine, state by state
    """A port of Ollama's ``ParseFile`` for command lines (parser/parser.go, v0.32.15): (command, value)."""
    commands: list[tuple[str, str]] = []
    state, buffer, name = "nil", "", ""

    def unquote(value: str) -> tuple[str, bool]:
        if value[:3] == '"""':
            return (value[3:-3], True) if len(value) >= 6 and value.endswith('"""') else ("", False)
        if value[:1] == '"':
            return (value[1:-1], True) if len(value) >= 2 and value.endswith('"') else ("", False)
        return value, True

    for char in text:
        if state == "nil":
            if char == "#":
                state = "comment"
            elif char not in " \t\r\n":
                state, buffer = "name", char
        elif state == "comment":
            if char in "\r\n":
                state = "nil"
        elif state == "name":
            if char.isalpha():
                buffer += char
            else:
                name, buffer, state = buffer.lower(), "", "value"
        elif state == "value":
            if char in " \t\r\n":
                value, ok = unquote(buffer.strip())
                if not ok or char in " \t":
                    buffer += char
                    continue
                commands.append((name, value))
                state, buffer = "nil", ""
            elif char.isprintable():
                buffer += char
    if state == "value":
        value, ok = unquote(buffer.strip())
        assert ok, "unterminated"
        commands.append((name, value))
    return commands


@pytest.mark.parametrize(
    "prompt",
    [
        "Be brief.",
        "You are a pirate.\nAnswer in rhymes.\n\nNever break character.",
        'Quote titles as "this" and code as """code""".',
        'Ends with quotes: ""',
        "  indented first line\tand a tab",
        '"""',
    ],
)
def test_system_prompt_renders_one_modelfile_string_ollama_reads_back(tmp_path: Path, prompt: str) -> None:
    fleet = _fleet(tmp_path, "ollama", serving=f"\n  system_prompt: {json.dumps(prompt)}")
    assert not _found(fleet, "ENG004")
    modelfile = _host_files(render_fleet(fleet))["Modelfile"]
    commands = _parse_modelfile_value(modelfile)
    assert ("system", prompt) in commands, modelfile
    assert [name for name, _ in commands].count("system") == 1


@pytest.mark.parametrize("prompt", ['Say """ and stop.', 'x"""\ninjected', "zero\u00a0width"])
def test_a_prompt_the_modelfile_cannot_hold_is_an_error_and_never_rendered(tmp_path: Path, prompt: str) -> None:
    fleet = _fleet(tmp_path, "ollama", serving=f"\n  system_prompt: {json.dumps(prompt)}")
    [finding] = _found(fleet, "ENG004")
    assert (finding.line, finding.severity) == (_line(tmp_path, "system_prompt"), Severity.ERROR)
    with pytest.raises(RenderError, match="Modelfile"):
        render_fleet(fleet)


@pytest.mark.parametrize("engine", [name for name in engines.names() if get(name).profile.system_prompt is None])
def test_engines_without_a_default_system_prompt_warn(tmp_path: Path, engine: str) -> None:
    fleet = _fleet(tmp_path, engine, serving='\n  system_prompt: "Be brief."')
    assert [(f.line, f.severity) for f in _found(fleet, "ENG004")] == [
        (_line(tmp_path, "system_prompt"), Severity.WARNING)
    ]
    assert "Be brief." not in "\n".join(render_fleet(fleet).files.values())


def test_system_prompt_keeps_line_breaks_but_no_other_control_character(tmp_path: Path) -> None:
    fleet = load_fleet([_spec_with_prompt(tmp_path, "a\\u001b[31mb")], GOLDEN / "inventory.yaml")
    assert [f.rule for f in fleet.findings] == ["SS003"] and fleet.findings[0].line == 6


def _spec_with_prompt(tmp_path: Path, escaped: str) -> Path:
    path = tmp_path / "prompt.yaml"
    path.write_text(
        "apiVersion: servespec/v1\nkind: Deployment\nmetadata: {name: chat}\nmodel: {source: qwen2.5:7b}\n"
        f'engine: {{name: ollama, version: "0.32.15"}}\nserving: {{system_prompt: "{escaped}"}}\n'
    )
    return path
