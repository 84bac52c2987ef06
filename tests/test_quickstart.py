"""The quick start: specs/quickstart/llama-cpp.yaml and scripts/demo_model.py (Gemma 3 270M), without the model.

scripts/demo runs the real thing (PyPI packages, llama-server, one question); these check the parts
that can break quietly: where the spec points, its chat template, the helper's refusals."""

from __future__ import annotations

import hashlib
import http.server
import importlib.util
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import jinja2
import pytest
from ruamel.yaml import YAML

REPO = Path(__file__).resolve().parents[1]
SPEC = REPO / "specs" / "quickstart" / "llama-cpp.yaml"


def _helper() -> ModuleType:
    spec = importlib.util.spec_from_file_location("demo_model", REPO / "scripts" / "demo_model.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


demo_model = _helper()


def _quickstart() -> Any:
    return YAML(typ="safe").load(SPEC.read_text(encoding="utf-8"))


def test_the_spec_serves_the_file_the_demo_assembles_under_the_name_it_asks_for() -> None:
    spec = _quickstart()
    assert spec["model"]["source"].endswith("/gemma-3-270m-q4_k_m.gguf")  # the package's MODEL_NAME
    assert spec["model"]["gguf_type"] == "Q4_K_M"
    name = spec["serving"]["model_name"]
    demo = (REPO / "scripts" / "demo").read_text(encoding="utf-8")
    assert f"--model {name}" in demo
    assert f"127.0.0.1:{spec['serving']['port']}" in demo


def test_the_chat_template_turns_messages_into_question_and_answer_text() -> None:
    template = jinja2.Environment().from_string(_quickstart()["engine"]["options"]["chat_template"])
    one = [{"role": "user", "content": "What is the capital of France?"}]
    assert template.render(messages=one) == "Question: What is the capital of France?\nAnswer:"
    shots = [
        {"role": "user", "content": "Capital of Italy?"},
        {"role": "assistant", "content": "Rome"},
        {"role": "user", "content": "Capital of France?"},
    ]
    assert (
        template.render(messages=shots)
        == "Question: Capital of Italy?\nAnswer: Rome\nQuestion: Capital of France?\nAnswer:"
    )


def _package(expected: str, content: bytes, data: Path) -> SimpleNamespace:
    for name in demo_model.SHIPPED:
        (data / name).write_text("<p>Last modified: today</p><h2>Section 1: DEFINITIONS</h2>", encoding="utf-8")

    def assemble(path: Path, overwrite: bool = False) -> Path:
        Path(path).write_bytes(content)
        return Path(path)

    return SimpleNamespace(EXPECTED_SHA256=expected, __file__=str(data.parent / "__init__.py"), assemble=assemble)


def test_a_file_with_another_sha256_is_never_left_where_the_spec_points(tmp_path: Path, monkeypatch: Any) -> None:
    data = tmp_path / "pkg" / "data"
    data.mkdir(parents=True)
    content = b"GGUF not the model"
    out = tmp_path / "models" / "gemma-3-270m-q4_k_m.gguf"
    out.parent.mkdir()
    with pytest.raises(SystemExit, match="sha256"):
        demo_model._assemble_from(_package(demo_model.MODEL_SHA256, content, data), out)
    assert sorted(p.name for p in out.parent.iterdir() if p.suffix in {".gguf", ".partial"}) == []
    with pytest.raises(SystemExit, match="expects sha256"):
        demo_model._assemble_from(_package("0" * 64, content, data), out)
    # The same file with the pinned digest goes in place.
    monkeypatch.setattr(demo_model, "MODEL_SHA256", hashlib.sha256(content).hexdigest())
    demo_model._assemble_from(_package(demo_model.MODEL_SHA256, content, data), out)
    assert out.read_bytes() == content
    assert not list(out.parent.glob(".*.partial"))


@pytest.fixture
def openai_stub() -> Iterator[tuple[str, list[dict[str, Any]], list[dict[str, Any]]]]:
    """A stand-in /v1/chat/completions: answers the queued replies and records the requests."""
    replies: list[dict[str, Any]] = []
    requests: list[dict[str, Any]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            requests.append({"path": self.path, **json.loads(self.rfile.read(int(self.headers["Content-Length"])))})
            body = json.dumps(replies.pop(0)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", replies, requests
    finally:
        server.shutdown()
        server.server_close()


def test_ask_prints_the_answer_and_fails_without_one(openai_stub: Any, capsys: Any) -> None:
    url, replies, requests = openai_stub
    replies.append(
        {"model": "gemma-3-270m", "choices": [{"message": {"content": " Paris"}}], "usage": {"completion_tokens": 2}}
    )
    assert demo_model.ask(url, "What is the capital of France?", "gemma-3-270m") == 0
    assert "A: Paris\n" in capsys.readouterr().out
    assert requests[0]["path"] == "/v1/chat/completions"
    assert requests[0]["messages"] == [{"role": "user", "content": "What is the capital of France?"}]
    assert requests[0]["model"] == "gemma-3-270m" and requests[0]["temperature"] == 0
    replies.append({"choices": [{"message": {"content": "  "}}]})
    assert demo_model.ask(url, "Anything?", None) == 1
    assert "without text" in capsys.readouterr().err


def test_ask_says_so_when_nothing_listens(capsys: Any) -> None:
    assert demo_model.ask("http://127.0.0.1:9", "Anyone?", None) == 1
    assert "no answer from http://127.0.0.1:9" in capsys.readouterr().err


def test_the_terms_shown_are_the_opening_and_the_sections(tmp_path: Path, capsys: Any) -> None:
    (tmp_path / "GEMMA_TERMS.html").write_text(
        "<html><p>menu</p><p>Last modified: March 24, 2025</p><p>By using <strong>Gemma</strong>\n you agree.</p>"
        "<h2>Section 1: DEFINITIONS</h2><p>(a) ...</p><h2>Section 2: USAGE</h2></html>",
        encoding="utf-8",
    )
    demo_model.show_terms(tmp_path)
    out = capsys.readouterr().out
    assert "  Last modified: March 24, 2025\n  By using Gemma you agree.\n" in out
    assert "Sections: Section 1: DEFINITIONS; Section 2: USAGE" in out
    assert "menu" not in out
