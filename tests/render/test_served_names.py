"""Served model names: the engine's own name unless the spec names one (serving.model_name, model_aliases).

Unset, no engine is given a name: it serves ``model.source`` as written (vLLM's model
argument, SGLang's model_path, TGI's model_id, llama.cpp's -hf repo or -m path, an Ollama
tag; trtllm-serve a local directory by its name). Set, each engine gets its own option, with
every alias where it serves several; ENG004 warns where a name cannot be served as written.
The smoke test names serving.model_name, else a name /v1/models lists.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import threading
import typing
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

import pytest
import yaml

from servespec import engines
from servespec.engines import get
from servespec.engines.base import Profile
from servespec.findings import Finding, Severity
from servespec.render import Rendered, render_fleet
from servespec.rollout.orchestrate import ApplyOptions, _common_vars
from servespec.rules.runner import check_fleet
from servespec.spec.fleet import Fleet, load_fleet
from tests.conftest import REPO
from tests.golden.regen import ENGINE_VERSIONS, GOLDEN

NAMING_RELEASES = {"tensorrt-llm": '"1.3.0rc24"'}
"""Engines whose golden release cannot name the served model: a later one that can (trtllm-serve 1.3)."""
SOURCES = {
    "hf": "Qwen/Qwen2.5-7B-Instruct",
    "gguf": "Qwen/Qwen2.5-7B-Instruct-GGUF",
    "tag": "qwen2.5:7b",
    "key": "qwen2.5-7b-instruct",
}
"""One model per kind of ``model.source`` a profile may declare (``Profile.model_format``)."""


def _version(engine: str) -> str:
    return NAMING_RELEASES.get(engine) or ENGINE_VERSIONS[engine]


def _source(engine: str) -> str:
    return SOURCES[get(engine).profile.model_format]


def test_every_model_format_has_a_source() -> None:
    assert set(SOURCES) == set(typing.get_args(Profile.model_fields["model_format"].annotation))


def _fleet(
    tmp_path: Path, engine: str, serving: str = "", extra: str = "", source: str = "", version: str = ""
) -> Fleet:
    gguf = "\n  quantization: gguf\n  gguf_type: Q4_K_M" if get(engine).profile.loads_gguf else ""
    path = tmp_path / "chat.yaml"
    path.write_text(
        f"""apiVersion: servespec/v1
kind: Deployment
metadata: {{name: chat}}
model:
  source: {source or _source(engine)}
  revision: 0123456789abcdef0123456789abcdef01234567
  max_model_len: 4096{gguf}
engine: {{name: {engine}, version: {version or _version(engine)}{extra}}}
placement: {{hosts: [h100-a]}}
serving: {{port: 9000{serving}}}
"""
    )
    fleet = load_fleet([path], GOLDEN / "inventory.yaml")
    assert fleet.deployments, [f.to_text() for f in fleet.findings]
    return fleet


def _render(fleet: Fleet) -> Rendered:
    return render_fleet(fleet)


def _argv(rendered: Rendered) -> list[str]:
    container = rendered.containers[("chat", "h100-a")]
    return [*(container.entrypoint or ()), *container.command]


def _config(rendered: Rendered) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(rendered.files["chat/h100-a/config.yaml"])
    return data


def _found(fleet: Fleet, rule: str) -> list[Finding]:
    return [f for f in check_fleet(fleet) if f.rule == rule]


# Unset: the engine's own name ------------------------------------------------------------------


@pytest.mark.parametrize("engine", engines.names())
def test_unset_renders_no_name_and_the_smoke_test_asks_the_engine(tmp_path: Path, engine: str) -> None:
    rendered = _render(_fleet(tmp_path, engine))
    text = "\n".join(rendered.files.values())
    assert "served-model-name" not in text and "served_model_name" not in text
    assert "--alias" not in _argv(rendered)
    assert rendered.containers[("chat", "h100-a")].model_name is None  # the probe asks /v1/models
    readme = rendered.files["chat/README.md"]
    # the name the engine serves, not "chat"; XInference's model UID is the registry name it launches
    # (supervisor.py launch_builtin_model: model_uid = model_name when the request names none)
    served = "qwen2.5-instruct" if engine == "xinference" else _source(engine)
    assert f'"model": "{served}"' in readme


def test_ollama_serves_the_pulled_tag_unless_named(tmp_path: Path) -> None:
    unnamed = _fleet(tmp_path, "ollama")
    assert _common_vars(unnamed.deployments[0], ApplyOptions()).served_names == ("qwen2.5:7b",)
    named = _fleet(tmp_path, "ollama", ", model_name: chat, model_aliases: [chat-2]")
    assert _common_vars(named.deployments[0], ApplyOptions()).served_names == ("chat", "chat-2")
    readme = _render(named).files["chat/README.md"]
    assert "ollama create chat -f /etc/servespec/Modelfile" in readme
    assert _found(named, "ENG004") == []  # one model is created per name


def test_trtllm_serves_a_local_directory_by_its_name(tmp_path: Path) -> None:
    fleet = _fleet(tmp_path, "tensorrt-llm", source="/srv/models/qwen2.5-7b")
    assert '"model": "qwen2.5-7b"' in _render(fleet).files["chat/README.md"]


# Set: each engine's own option -----------------------------------------------------------------


def test_vllm_takes_the_name_and_every_alias(tmp_path: Path) -> None:
    one = _render(_fleet(tmp_path, "vllm", ", model_name: chat"))
    assert _config(one)["served-model-name"] == "chat"
    several = _fleet(tmp_path, "vllm", ", model_aliases: [chat, gpt-4o]")
    argv = _argv(_render(several))
    # The aliases join the engine's own name (vLLM serves only the names given once any is).
    at = argv.index("--served-model-name")
    assert argv[at + 1 : at + 4] == ["Qwen/Qwen2.5-7B-Instruct", "chat", "gpt-4o"]
    assert _found(several, "ENG004") == []
    assert _render(several).containers[("chat", "h100-a")].model_name is None


def test_sglang_and_trtllm_take_one_name_and_warn_about_aliases(tmp_path: Path) -> None:
    for engine, file in (("sglang", "config"), ("tensorrt-llm", "argv")):
        fleet = _fleet(tmp_path, engine, ", model_name: chat, model_aliases: [chat-2]")
        rendered = _render(fleet)
        text = json.dumps(_config(rendered)) if file == "config" else " ".join(_argv(rendered))
        assert "chat" in text and "chat-2" not in text, engine
        (warning,) = _found(fleet, "ENG004")
        assert warning.severity is Severity.WARNING and warning.path == "serving.model_aliases"
        lines = Path(fleet.deployments[0].document.file).read_text().splitlines()
        assert lines[warning.line - 1].startswith("serving:")  # located where it is written


def test_llama_cpp_joins_names_with_commas(tmp_path: Path) -> None:
    fleet = _fleet(tmp_path, "llama.cpp", ", model_name: chat, model_aliases: [chat-2]")
    argv = _argv(_render(fleet))
    assert argv[argv.index("--alias") + 1] == "chat,chat-2"  # common/arg.cpp: --alias splits on ','
    assert _found(fleet, "ENG004") == []


def test_the_smoke_test_sends_the_name_clients_send(tmp_path: Path) -> None:
    rendered = _render(_fleet(tmp_path, "vllm", ", model_name: chat"))
    data = yaml.safe_load(rendered.files["chat/h100-a/container.yaml"])
    assert data["model_name"] == "chat" and data["deployment"] == "chat"
    assert '"model": "chat"' in rendered.files["chat/README.md"]


@pytest.mark.parametrize(
    ("engine", "version", "message"),
    [
        ("tgi", '"3.3.7"', "has no option naming the served model"),
        ("tensorrt-llm", '"1.2.1"', "1.2.1 has no served_model_name option"),
    ],
)
def test_a_name_the_engine_cannot_take_is_a_located_warning(
    tmp_path: Path, engine: str, version: str, message: str
) -> None:
    fleet = _fleet(tmp_path, engine, ", model_name: chat", version=version)
    (warning,) = _found(fleet, "ENG004")
    assert message in warning.message and warning.path == "serving.model_name"
    assert warning.severity is Severity.WARNING
    assert "Qwen/Qwen2.5-7B-Instruct" in warning.message  # what it serves instead
    assert "served_model_name" not in " ".join(_argv(_render(fleet)))


def test_naming_the_option_again_duplicates_the_spec_field(tmp_path: Path) -> None:
    options = _fleet(tmp_path, "vllm", extra=", options: {served_model_name: chat}")
    (finding,) = _found(options, "ENG003")
    assert "serving.model_name" in finding.message
    flag = _fleet(tmp_path, "llama.cpp", extra=", extra_args: [--alias, chat]")
    assert [f.rule for f in _found(flag, "ENG003")] == ["ENG003"]


@pytest.mark.parametrize(
    "serving",
    [
        ", model_name: --api-key",  # read as a flag
        ", model_name: 'a,b'",  # llama.cpp splits it
        ", model_name: 'two words'",
        ", model_name: chat, model_aliases: [chat]",
        ", model_aliases: [x, x]",
    ],
)
def test_names_that_cannot_be_served_are_refused_where_written(tmp_path: Path, serving: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        "apiVersion: servespec/v1\nkind: Deployment\nmetadata: {name: chat}\n"
        "model: {source: Qwen/Qwen2.5-7B-Instruct}\n"
        f'engine: {{name: vllm, version: "0.11.0"}}\nplacement: {{hosts: [h100-a]}}\nserving: {{port: 9000{serving}}}\n'
    )
    fleet = load_fleet([path], GOLDEN / "inventory.yaml")
    errors = [f for f in check_fleet(fleet) if f.severity is Severity.ERROR]
    assert errors and all(f.line == 7 and f.path.startswith("serving.model_") for f in errors), [
        f.to_text() for f in errors
    ]


# The probe's smoke test -------------------------------------------------------------------------


@pytest.fixture
def probe(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The role's servespec_probe module, imported by path."""
    pytest.importorskip("ansible.module_utils.basic", reason="the role's module needs ansible-core (the rollout extra)")
    role = REPO / "playbooks" / "roles" / "servespec"
    loaded = []
    for name, path in (
        ("ansible.module_utils.servespec_common", role / "module_utils" / "servespec_common.py"),
        ("servespec_probe_under_test", role / "library" / "servespec_probe.py"),
    ):
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        monkeypatch.setitem(sys.modules, name, module)
        spec.loader.exec_module(module)
        loaded.append(module)
    return loaded[1]


class _Engine(BaseHTTPRequestHandler):
    """An engine that serves one model under a name servespec never chose (a llama.cpp -m path)."""

    models: ClassVar[Any] = None
    requests: ClassVar[list[dict[str, Any]]] = []

    def _send(self, code: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._send(200, self.models) if self.models is not None else self._send(404, {"error": "no route"})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.requests.append(body)
        served = [m["id"] for m in (self.models or {"data": []})["data"]]
        if "model" in body and served and body["model"] not in served:
            self._send(404, {"error": f"The model `{body['model']}` does not exist."})
        else:
            self._send(200, {"choices": [{"text": " hi", "finish_reason": "length"}]})

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def engine() -> Iterator[dict[str, Any]]:
    _Engine.requests = []
    _Engine.models = {"object": "list", "data": [{"id": "/srv/models/demo.gguf", "aliases": []}]}
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Engine)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield {
        "deployment": "chat",
        "model_name": None,
        "ports": [{"host_ip": "127.0.0.1", "host_port": server.server_address[1], "container_port": 8000}],
        "network_mode": "bridge",
        "healthcheck": {"path": "/health", "port": server.server_address[1], "timeout_s": 5, "start_period_s": 5},
    }
    server.shutdown()


def test_the_smoke_test_uses_a_name_the_engine_lists(probe: ModuleType, engine: dict[str, Any]) -> None:
    ok, text = probe._smoke(engine, None)
    assert ok, text
    assert _Engine.requests[-1]["model"] == "/srv/models/demo.gguf"  # never the deployment name


def test_the_smoke_test_sends_serving_model_name(probe: ModuleType, engine: dict[str, Any]) -> None:
    _Engine.models = {"object": "list", "data": [{"id": "chat"}]}
    ok, _ = probe._smoke({**engine, "model_name": "chat"}, None)
    assert ok and _Engine.requests[-1]["model"] == "chat"
    ok, text = probe._smoke({**engine, "model_name": "other"}, None)
    assert not ok and "'other'" in text  # a name the engine does not serve fails, naming it


def test_without_v1_models_the_smoke_test_names_no_model(probe: ModuleType, engine: dict[str, Any]) -> None:
    _Engine.models = None  # TGI before 2.3 has no /v1/models; it takes a request without a model
    ok, _ = probe._smoke(engine, None)
    assert ok and "model" not in _Engine.requests[-1]
