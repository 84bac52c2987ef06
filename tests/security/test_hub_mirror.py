"""A hostile Hub mirror cannot write on, or take a token from, the machine that asks it (issue 20, item 2).

``deploy lock``, ``deploy validate --hub`` and ``deploy estimate --hub`` ask the Hub named by
``HF_ENDPOINT``. The stand-in below is a real local HTTP server speaking the Hub API (the
stand-in of tests/knowledge/test_hub.py) whose answers a test turns hostile: a commit sha or
repository id that is a path (``../../x``, an absolute one), an ETag that is a path, a redirect
to another host, a config.json that is huge or not JSON. Every cache and home variable points
into the test's temporary folder: nothing may appear anywhere (the answers are read into
memory), no token may reach the other host, and each command reports one located finding,
never a traceback.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner

from servespec.cli import main
from servespec.spec.paths import MAX_REFERENCED_BYTES
from tests.knowledge.test_hub import CONFIG, MAIN, TOKEN, _Hub

COMMANDS = (["lock"], ["validate", "--hub"], ["estimate", "--hub"])
ESCAPE = "escaped-by-the-hub"


class _HostileHub(_Hub):
    """The stand-in Hub with the answers a test sets in ``hostile`` (keys: id, sha, etag, body, redirect)."""

    hostile: ClassVar[dict[str, Any]] = {}
    seen: ClassVar[list[tuple[str, str, str, str]]] = []
    """(server, method, path, Authorization) of every request, on either server."""

    def _send(self, body: bytes, headers: dict[str, str]) -> None:
        wild = type(self).hostile
        if headers.get("Content-Type") == "application/json" and self.path.startswith("/api/models/"):
            info = json.loads(body)
            info.update({k: wild[k] for k in ("id", "sha") if k in wild})
            body = json.dumps(info).encode()
        elif "X-Repo-Commit" in headers:
            if "redirect" in wild:
                self.send_response(302)
                self.send_header("Location", wild["redirect"] + self.path)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if "etag" in wild:
                headers = {**headers, "ETag": f'"{wild["etag"]}"'}
            if "sha" in wild:
                headers = {**headers, "X-Repo-Commit": wild["sha"]}
            if "body" in wild:
                body = wild["body"]
        super()._send(body, headers)

    def _answer(self) -> None:
        host = self.headers.get("Host", "")
        type(self).seen.append((host, self.command, self.path.split("?")[0], self.headers.get("Authorization") or ""))
        if self.path.startswith("/other/"):  # the other host: serves the config to whoever asks
            body = json.dumps(CONFIG).encode()
            super()._send(body, {"Content-Type": "text/plain", "X-Repo-Commit": MAIN, "ETag": '"other"'})
            return
        super()._answer()

    do_GET = _answer  # noqa: N815 - http.server's names
    do_HEAD = _answer  # noqa: N815


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet: servespec hangs up on a body past its cap (the default prints a traceback into the output)."""


@pytest.fixture(scope="module")
def hostile_server() -> Iterator[int]:
    server = _Server(("127.0.0.1", 0), _HostileHub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def hostile(hostile_server: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A checkout under ``tmp_path/a/b/c/d`` with every cache and home inside ``tmp_path``; the Hub is hostile."""
    checkout = tmp_path / "a" / "b" / "c" / "d"
    home = tmp_path / "home"
    for folder in (checkout / ".git", home):
        folder.mkdir(parents=True)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{hostile_server}")
    for name, value in {
        "HOME": home,
        "HF_HOME": home / "hf",
        "HF_HUB_CACHE": home / "hf" / "hub" / "deep" / "deeper",  # six ../ from its folders stay in tmp_path
        "XDG_CACHE_HOME": home / "cache",
        "HF_XET_CACHE": home / "xet",
        "HF_TOKEN": TOKEN,
    }.items():
        monkeypatch.setenv(name, str(value))
    for name in ("HF_HUB_OFFLINE", "HUGGINGFACE_HUB_CACHE", "HF_ASSETS_CACHE", "MY_HUB_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(checkout)
    _HostileHub.hostile = {}
    _HostileHub.seen.clear()
    spec = checkout / "app.yaml"
    spec.write_text(
        "apiVersion: servespec/v1\nkind: Deployment\nmetadata: {name: app}\n"
        "model:\n  source: acme/open-1b\n  max_model_len: 4096\n"
        'engine: {name: vllm, version: "0.11.0"}\n'
    )
    return spec


def _files(root: Path) -> set[str]:
    """Every file and link under ``root`` but the lock file (``deploy lock`` writes it when the answer is good)."""
    found = {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() or p.is_symlink()}
    return found - {"a/b/c/d/models.lock.yaml"}


def _run(spec: Path, command: list[str]) -> tuple[int, str]:
    root = spec.parents[4]
    before = _files(root)
    result = CliRunner().invoke(main, [*command, spec.name])
    output = result.stdout + result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit), output
    assert "Traceback" not in output and "internal error" not in output, output
    assert _files(root) == before, "the Hub's answer wrote files"
    assert not os.path.lexists(f"/{ESCAPE}")
    asked = {path for _, _, path, _ in _HostileHub.seen}
    # Only the model info and the files: huggingface_hub's own header builder would also fetch (and
    # write under HF_HOME, fixed when it was imported) an agent-harness registry from the endpoint.
    assert all(p.startswith(("/api/models/", "/other/")) or "/resolve/" in p for p in asked), asked
    return result.exit_code, output


def _one_located_finding(output: str, words: str) -> None:
    lines = [line for line in output.splitlines() if " REF003 " in line or " REF005 " in line]
    assert len(lines) == 1, output
    assert lines[0].startswith("app.yaml:5:") and words in lines[0], output


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
@pytest.mark.parametrize(
    "answer",
    [
        {"sha": f"../../../../../../{ESCAPE}"},
        {"sha": "{tmp}/" + ESCAPE},
        {"id": f"../../../../../../{ESCAPE}"},
        {"id": "{tmp}/" + ESCAPE},
    ],
    ids=["sha-relative", "sha-absolute", "id-relative", "id-absolute"],
)
def test_a_path_for_a_commit_or_repository_is_refused(
    hostile: Path, command: list[str], answer: dict[str, str]
) -> None:
    _HostileHub.hostile = {k: v.replace("{tmp}", str(hostile.parents[4])) for k, v in answer.items()}
    code, output = _run(hostile, command)
    assert code == 1 or command[0] == "validate", output
    _one_located_finding(output, "the Hub's answer")
    assert not any("/resolve/" in path for _, _, path, _ in _HostileHub.seen)  # nothing fetched at that name


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
@pytest.mark.parametrize(
    "etag", [f"../../../../../../{ESCAPE}", "{tmp}/" + ESCAPE, "../../../../home/.bashrc"], ids=["rel", "abs", "home"]
)
def test_an_etag_that_is_a_path_writes_nothing(hostile: Path, command: list[str], etag: str) -> None:
    _HostileHub.hostile = {"etag": etag.replace("{tmp}", str(hostile.parents[4]))}
    code, output = _run(hostile, command)
    assert code == 0 or command[0] != "lock", output  # the config itself is good: the ETag is never a file name


def test_lock_writes_only_its_lock_file(hostile: Path) -> None:
    _HostileHub.hostile = {"etag": f"../../../../../../{ESCAPE}"}
    result = CliRunner().invoke(main, ["lock", hostile.name])
    assert result.exit_code == 0, result.stdout + result.stderr
    root = hostile.parents[4]
    assert {str(p.relative_to(root)) for p in root.rglob("*") if not p.is_dir()} == {
        "a/b/c/d/app.yaml",
        "a/b/c/d/models.lock.yaml",
    }
    assert f"revision: {MAIN}" in (hostile.parent / "models.lock.yaml").read_text()


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_a_redirect_to_another_host_never_carries_the_token(hostile: Path, command: list[str]) -> None:
    port = os.environ["HF_ENDPOINT"].rsplit(":", 1)[1]
    _HostileHub.hostile = {"redirect": f"http://localhost:{port}/other"}  # another origin, the same server
    _run(hostile, command)
    other = [(path, auth) for host, _, path, auth in _HostileHub.seen if host.startswith("localhost")]
    assert other, _HostileHub.seen  # the redirect was followed (a CDN is another host) ...
    assert all(auth == "" for _, auth in other)  # ... without the token
    assert any(auth == f"Bearer {TOKEN}" for host, _, _, auth in _HostileHub.seen if host.startswith("127."))


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
@pytest.mark.parametrize("target", ["file:///etc/passwd", "ftp://127.0.0.1/x"], ids=["file", "ftp"])
def test_a_redirect_to_another_scheme_is_not_followed(hostile: Path, command: list[str], target: str) -> None:
    _HostileHub.hostile = {"redirect": target}
    code, output = _run(hostile, command)
    assert code == 1 or command[0] == "validate", output
    _one_located_finding(output, "acme/open-1b on the Hub")


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
@pytest.mark.parametrize(
    "body",
    [b"{" + b" " * (MAX_REFERENCED_BYTES + 10) + b"}", b"<html>not json</html>", b"[1, 2]", b"\xff\xfe"],
    ids=["huge", "html", "list", "binary"],
)
def test_a_bad_config_is_one_finding(hostile: Path, command: list[str], body: bytes) -> None:
    _HostileHub.hostile = {"body": body}
    code, output = _run(hostile, command)
    assert code == 1 or command[0] == "validate", output
    _one_located_finding(output, "acme/open-1b on the Hub")
