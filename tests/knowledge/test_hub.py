"""The Hub path of the model-facts chain, with the real huggingface_hub client against a local stand-in for the Hub.

The server answers the two kinds of request the client makes, as the Hub does
(huggingface_hub hf_api.py ``model_info``: ``GET /api/models/{repo}[/revision/{rev}]``;
file_download.py ``hf_hub_download``: ``HEAD``/``GET /{repo}/resolve/{rev}/{file}`` with
``X-Repo-Commit`` and ``ETag``), refuses a gated repository without the right token (401,
``X-Error-Code: GatedRepo``), answers 404 ``RepoNotFound`` for a missing one, and redirects a
renamed repository (307) to its new name. ``HF_ENDPOINT`` points the client at it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner

from servespec.cli import main
from servespec.knowledge import resolve, sources
from servespec.spec.fleet import load_fleet

MAIN = "a" * 40
OLD = "b" * 40
TOKEN = "hf_testtokenforthegatedrepo0123456789"
CONFIG = {
    "model_type": "llama",
    "num_hidden_layers": 16,
    "hidden_size": 2048,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "intermediate_size": 8192,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
    "torch_dtype": "bfloat16",
    "auto_map": {"AutoModel": "modeling_evil.Model"},
}
REPOS: dict[str, dict[str, Any]] = {
    "acme/open-1b": {
        "revisions": {"main": MAIN, OLD: OLD},
        "configs": {MAIN: CONFIG, OLD: {**CONFIG, "num_hidden_layers": 8}},
    },
    "acme/gated-1b": {"revisions": {"main": MAIN}, "configs": {MAIN: CONFIG}, "gated": True},
    "acme/new-name": {"revisions": {"main": MAIN}, "configs": {MAIN: {**CONFIG, "num_hidden_layers": 20}}},
    # a PEFT adapter: adapter_config.json only (issue 24, ADP002 reads its rank from the Hub)
    "acme/sql-lora": {
        "revisions": {"main": MAIN},
        "configs": {MAIN: {}},
        "files": {
            "adapter_config.json": {
                "base_model_name_or_path": "acme/open-1b",
                "peft_type": "LORA",
                "r": 64,
                "lora_alpha": 128,
                "target_modules": ["q_proj", "v_proj"],
            }
        },
    },
}
RENAMED = {"acme/old-name": "acme/new-name"}


def _sha(entry: dict[str, Any], revision: str) -> str | None:
    """A branch's commit, or the revision itself when it is a commit of the repository."""
    return entry["revisions"].get(revision) or (revision if revision in entry["configs"] else None)


class _Hub(BaseHTTPRequestHandler):
    requests: ClassVar[list[tuple[str, str, str]]] = []

    def log_message(self, *args: Any) -> None:  # keep pytest's output clean
        pass

    def _refuse(self, status: int, code: str) -> None:
        self.send_response(status)
        self.send_header("X-Error-Code", code)
        self.send_header("Content-Type", "application/json")
        body = json.dumps({"error": code}).encode()
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _repo(self, repo: str, rest: str) -> dict[str, Any] | None:
        if repo in RENAMED:
            self.send_response(307)
            self.send_header("Location", self.path.replace(repo, RENAMED[repo], 1))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        entry = REPOS.get(repo)
        if entry is None:
            self._refuse(404, "RepoNotFound")
            return None
        if entry.get("gated") and self.headers.get("Authorization") != f"Bearer {TOKEN}":
            self._refuse(401, "GatedRepo")
            return None
        return entry

    def _send(self, body: bytes, headers: dict[str, str]) -> None:
        self.send_response(200)
        for key, value in {**headers, "Content-Length": str(len(body))}.items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _answer(self) -> None:
        path = self.path.split("?")[0]
        type(self).requests.append((self.command, path, self.headers.get("Authorization") or ""))
        if path.startswith("/api/models/"):
            parts = path.removeprefix("/api/models/").split("/")
            repo, revision = "/".join(parts[:2]), (parts[3] if len(parts) > 3 else "main")
            entry = self._repo(repo, path)
            if entry is None:
                return
            sha = _sha(entry, revision)
            if sha is None:
                self._refuse(404, "RevisionNotFound")
                return
            info = {
                "id": repo,
                "sha": sha,
                "siblings": [{"rfilename": "config.json"}, {"rfilename": "model.safetensors"}],
                "safetensors": {"parameters": {"BF16": 1_000_000_000, "F32": 1000}, "total": 1_000_001_000},
            }
            self._send(json.dumps(info).encode(), {"Content-Type": "application/json"})
            return
        parts = path.lstrip("/").split("/")
        if len(parts) >= 5 and parts[2] == "resolve":
            repo, revision, name = "/".join(parts[:2]), parts[3], "/".join(parts[4:])
            entry = self._repo(repo, path)
            if entry is None:
                return
            sha = _sha(entry, revision)
            files = entry.get("files", {})
            if sha is None or (name != "config.json" and name not in files):
                self._refuse(404, "EntryNotFound" if sha else "RevisionNotFound")
                return
            body = json.dumps(files[name] if name in files else entry["configs"][sha]).encode()
            self._send(body, {"X-Repo-Commit": sha, "ETag": f'"{sha[:8]}{len(body)}"', "Content-Type": "text/plain"})
            return
        self._refuse(404, "EntryNotFound")

    do_GET = _answer  # noqa: N815 - http.server's names
    do_HEAD = _answer  # noqa: N815


@pytest.fixture(scope="module")
def hub_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def hub(hub_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("HF_ENDPOINT", hub_server)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    for name in ("HF_TOKEN", "HF_HUB_OFFLINE", "MY_HUB_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    _Hub.requests.clear()
    return hub_server


def _spec(tmp_path: Path, source: str, extra: str = "") -> Path:
    (tmp_path / ".git").mkdir(exist_ok=True)
    spec = tmp_path / "specs" / "app.yaml"
    spec.parent.mkdir(exist_ok=True)
    spec.write_text(
        "apiVersion: servespec/v1\nkind: Deployment\nmetadata: {name: app}\n"
        f"model:\n  source: {source}\n  max_model_len: 4096\n{extra}"
        'engine: {name: vllm, version: "0.11.0"}\n'
    )
    return spec


def _answer(tmp_path: Path, source: str, extra: str = "", *, hub: bool = True) -> sources.Found:
    fleet = load_fleet([_spec(tmp_path, source, extra)])
    deployment = fleet.deployments[0]
    if not hub:
        return sources.find(deployment)
    with sources.hub_access():
        return sources.find(deployment)


def test_public_repo_config_from_the_hub(hub: str, tmp_path: Path) -> None:
    found = _answer(tmp_path, "acme/open-1b")
    assert found.origin == "hub" and found.facts is not None
    assert (found.facts.layers, found.facts.kv_heads, found.revision) == (16, 8, MAIN)
    assert found.facts.weight_bytes == 2_000_000_000 + 4000  # the Hub's safetensors summary: BF16 x2 + F32 x4
    assert dict(found.facts.params_by_dtype) == {"BF16": 1_000_000_000, "F32": 1000}
    assert ("GET", "/api/models/acme/open-1b", "") in _Hub.requests  # no token sent for a public repo


def test_pinned_revision_reads_that_commit(hub: str, tmp_path: Path) -> None:
    found = _answer(tmp_path, "acme/open-1b", f"  revision: {OLD}\n")
    assert found.facts is not None and found.facts.layers == 8 and found.revision == OLD
    assert any(path == f"/api/models/acme/open-1b/revision/{OLD}" for _, path, _ in _Hub.requests)


def test_missing_revision_is_a_problem(hub: str, tmp_path: Path) -> None:
    found = _answer(tmp_path, "acme/open-1b", f"  revision: {'c' * 40}\n")
    assert found.facts is None and "revision" in found.problem and "not found" in found.problem


def test_gated_repo_without_a_token_says_set_hf_token(hub: str, tmp_path: Path) -> None:
    found = _answer(tmp_path, "acme/gated-1b")
    assert found.facts is None
    assert "set HF_TOKEN" in found.problem and "gated" in found.problem
    assert hub not in found.problem and str(tmp_path) not in found.problem  # no URL, no local path


def test_gated_repo_with_hf_token(hub: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    found = _answer(tmp_path, "acme/gated-1b")
    assert found.origin == "hub" and found.facts is not None


def test_gated_repo_with_the_specs_token_variable(hub: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_HUB_TOKEN", TOKEN)
    found = _answer(tmp_path, "acme/gated-1b", "  hub_token: {from_env: MY_HUB_TOKEN}\n")
    assert found.origin == "hub" and found.facts is not None
    assert any(auth == f"Bearer {TOKEN}" for _, _, auth in _Hub.requests)


def test_missing_repo(hub: str, tmp_path: Path) -> None:
    found = _answer(tmp_path, "acme/no-such-model")
    assert found.facts is None and "not found" in found.problem and "acme/no-such-model" in found.problem


def test_renamed_repo_resolves_as_the_hub_does(hub: str, tmp_path: Path) -> None:
    found = _answer(tmp_path, "acme/old-name")
    assert found.facts is not None and found.facts.layers == 20
    assert found.repo == "acme/new-name" and found.facts.name == "acme/old-name"


def test_offline_never_asks(hub: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    found = _answer(tmp_path, "acme/open-1b")
    assert found.facts is None and "HF_HUB_OFFLINE" in found.problem
    assert _Hub.requests == []


def test_hub_is_opt_in(hub: str, tmp_path: Path) -> None:
    found = _answer(tmp_path, "acme/open-1b", hub=False)
    assert found.facts is None
    assert _Hub.requests == []


def test_unreachable_hub_is_a_problem_not_a_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # discard port: nothing listens
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    found = _answer(tmp_path, "acme/open-1b")
    assert found.facts is None and "cannot be reached" in found.problem


def test_validate_hub_flag_gives_full_memory_checks(hub: str, tmp_path: Path) -> None:
    spec = _spec(tmp_path, "acme/gated-1b")
    result = CliRunner().invoke(main, ["validate", "--hub", str(spec)])
    assert "REF003" in result.stderr + result.stdout and "set HF_TOKEN" in result.stdout + result.stderr
    spec = _spec(tmp_path, "acme/open-1b")
    plain = CliRunner().invoke(main, ["validate", str(spec)])
    assert "REF003" in plain.stdout
    with_hub = CliRunner().invoke(main, ["validate", "--hub", str(spec)])
    assert "REF003" not in with_hub.stdout, with_hub.stdout


def test_lock_from_the_hub_then_validate_offline(hub: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = _spec(tmp_path, "acme/old-name")
    result = CliRunner().invoke(main, ["lock", str(spec)])
    assert result.exit_code == 0, result.stderr
    lock = (spec.parent / "models.lock.yaml").read_text()
    assert "resolved_from: hub" in lock and f"revision: {MAIN}" in lock and "repo: acme/new-name" in lock
    assert "weight_bytes: 2000004000" in lock
    assert "auto_map" not in lock and TOKEN not in lock
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    _Hub.requests.clear()
    fleet = load_fleet([spec])
    answer = resolve.resolved(fleet.deployments[0]).model
    assert answer.facts is not None and answer.facts.layers == 20 and answer.facts.weight_bytes == 2_000_004_000
    assert _Hub.requests == []


def test_lock_reports_models_it_cannot_resolve(hub: str, tmp_path: Path) -> None:
    spec = _spec(tmp_path, "acme/gated-1b")
    result = CliRunner().invoke(main, ["lock", str(spec)])
    assert result.exit_code == 1
    assert "app.yaml:5:" in result.stderr and "REF005" in result.stderr and "set HF_TOKEN" in result.stderr
    message = result.stderr.split("REF005", 1)[1]  # the finding's text, after the file as it was named
    assert "Traceback" not in result.stderr and str(tmp_path) not in message


def test_an_adapters_rank_is_read_from_the_hub_with_hub(hub: str, tmp_path: Path) -> None:
    """adapter_config.json from the Hub (knowledge/adapters.py via hub.fetch_json): its rank 64 is over vLLM's
    default max_lora_rank 16, which the release refuses (ADP002); without --hub nothing is asked."""
    extra = "  adapters: [{name: sql, source: acme/sql-lora}]\n"
    spec = _spec(tmp_path, "acme/open-1b", extra)
    plain = CliRunner().invoke(main, ["validate", str(spec)])
    assert "ADP002" not in plain.stdout
    assert not [r for r in _Hub.requests if "sql-lora" in r[1]]
    with_hub = CliRunner().invoke(main, ["validate", "--hub", str(spec)])
    assert "ADP002" in with_hub.stdout and "rank 64" in with_hub.stdout, with_hub.stdout
    assert "the Hub's adapter_config.json" in with_hub.stdout
    assert ("GET", "/acme/sql-lora/resolve/" + MAIN + "/adapter_config.json", "") in _Hub.requests
