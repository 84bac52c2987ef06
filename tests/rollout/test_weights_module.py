"""servespec_weights (the role's module) against the Hub stand-in, and what the real huggingface_hub makes of it.

The module is imported by path with its module_utils, as Ansible provides them, and run in
this process on a temporary cache folder: staged files land where huggingface_hub's own cache
puts them (``snapshot_download(..., local_files_only=True)`` finds them, so an engine downloads
nothing), an interrupted transfer resumes with a Range request and is never visible as a file,
content that fails its checksum is thrown away, and a cache without room is refused before any
byte is fetched. The slow tests on real hosts are in test_staged_weights.py.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from servespec.rollout.runner import playbook_root
from tests.modules import role_module
from tests.rollout.hub_standin import Hub, Repo, serve

ROLE = playbook_root() / "roles" / "servespec"
OLD = "1" * 40
NEW = "2" * 40
WEIGHTS = os.urandom(3 << 20)  # 3 MiB: several reads of the module's 1 MiB chunks
FILES = {
    "config.json": b'{"model_type": "llama"}',
    "tokenizer.json": b'{"version": "1.0"}',
    "model.safetensors": WEIGHTS,
    "pytorch_model.bin": b"old format, never fetched when safetensors exist",
    "original/consolidated.pth": b"the original checkpoint, never fetched",
}
TOKEN = "hf_stagedweightstesttoken0123456789"


@pytest.fixture
def weights(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The role's servespec_weights module, imported by path (its module_utils as Ansible provides them)."""
    return role_module(monkeypatch, "servespec_weights", "servespec_weights_under_test")


@pytest.fixture
def hub() -> Iterator[Hub]:
    repos = {
        "acme/tiny": Repo({OLD: FILES, NEW: {**FILES, "model.safetensors": WEIGHTS[::-1]}}, {"main": NEW}),
        "acme/gated": Repo({OLD: FILES}, {"main": OLD}, token=TOKEN),
    }
    with serve(repos) as running:
        yield running


def _params(tmp_path: Path, hub: Hub, **changes: Any) -> dict[str, Any]:
    state = tmp_path / "state"
    (state / "demo" / "revisions" / "1").mkdir(parents=True, exist_ok=True)
    params = {
        "deployment": "demo",
        "number": 1,
        "action": "fetch",
        "repo": "acme/tiny",
        "revision": OLD,
        "endpoint": hub.url,
        "cache": str(tmp_path / "models" / "hub"),
        "cache_root": str(tmp_path / "models"),
        "expected_bytes": 0,
        "timeout": 10,
        "state_root": str(state),
    }
    return params | changes


def _snapshot(cache: str, commit: str) -> Path:
    return Path(cache) / "models--acme--tiny" / "snapshots" / commit


def test_staged_files_are_huggingface_hubs_own_cache(weights: ModuleType, hub: Hub, tmp_path: Path) -> None:
    from huggingface_hub import snapshot_download, try_to_load_from_cache

    params = _params(tmp_path, hub)
    result, problem = weights.run(params)
    assert problem == ""
    report = result["servespec_result"]
    assert report["kind"] == "weights_staged" and report["commit"] == OLD
    assert report["downloaded_bytes"] == sum(len(FILES[n]) for n in ("config.json", "tokenizer.json")) + len(WEIGHTS)
    assert {"pytorch_model.bin", "consolidated.pth"}.isdisjoint(name for _, path, _, _ in hub.log for name in [path])
    # The real client, offline, finds every staged file in the cache and fetches nothing.
    folder = snapshot_download("acme/tiny", revision=OLD, cache_dir=params["cache"], local_files_only=True)
    assert Path(folder) == _snapshot(params["cache"], OLD)
    assert (Path(folder) / "model.safetensors").read_bytes() == WEIGHTS
    cached = try_to_load_from_cache("acme/tiny", "model.safetensors", cache_dir=params["cache"], revision=OLD)
    assert isinstance(cached, str) and Path(cached).read_bytes() == WEIGHTS
    blob = Path(params["cache"]) / "models--acme--tiny" / "blobs" / hashlib.sha256(WEIGHTS).hexdigest()
    assert blob.is_file() and (Path(folder) / "model.safetensors").resolve() == blob.resolve()

    # Again: everything is cached, nothing is downloaded.
    before = len(hub.downloads("model.safetensors"))
    again, problem = weights.run(params)
    assert problem == "" and again["changed"] is False
    assert again["servespec_result"]["downloaded_bytes"] == 0
    assert again["servespec_result"]["cached_files"] == again["servespec_result"]["files"] == 3
    assert len(hub.downloads("model.safetensors")) == before


def test_a_branch_is_staged_at_its_commit_and_named_in_refs(weights: ModuleType, hub: Hub, tmp_path: Path) -> None:
    from huggingface_hub import snapshot_download

    params = _params(tmp_path, hub, revision="main")
    result, problem = weights.run(params)
    assert problem == "" and result["servespec_result"]["commit"] == NEW
    assert (Path(params["cache"]) / "models--acme--tiny" / "refs" / "main").read_text() == NEW
    folder = snapshot_download("acme/tiny", revision="main", cache_dir=params["cache"], local_files_only=True)
    assert (Path(folder) / "model.safetensors").read_bytes() == WEIGHTS[::-1]


def test_an_interrupted_download_resumes_and_is_never_served(weights: ModuleType, hub: Hub, tmp_path: Path) -> None:
    params = _params(tmp_path, hub)
    hub.cut_next("model.safetensors")
    result, problem = weights.run(params)
    assert "the next apply resumes it" in problem, problem
    snapshot = _snapshot(params["cache"], OLD)
    assert not (snapshot / "model.safetensors").exists()  # the engine finds no weights file, not half of one
    blobs = Path(params["cache"]) / "models--acme--tiny" / "blobs"
    part = blobs / (hashlib.sha256(WEIGHTS).hexdigest() + ".incomplete")
    assert 0 < part.stat().st_size < len(WEIGHTS)
    kept = part.stat().st_size

    checked, problem = weights.run(params | {"action": "check"})
    assert problem == "" and checked["servespec_result"]["partial_bytes"] == kept
    others = sum(len(FILES[n]) for n in ("config.json", "tokenizer.json") if not (snapshot / n).exists())
    assert checked["servespec_result"]["download_bytes"] == len(WEIGHTS) - kept + others

    result, problem = weights.run(params)
    assert problem == "", problem
    assert hub.downloads("model.safetensors")[-1] == f"bytes={kept}-"
    assert result["servespec_result"]["downloaded_bytes"] == len(WEIGHTS) - kept + others
    assert (snapshot / "model.safetensors").read_bytes() == WEIGHTS
    assert not part.exists()


def test_content_that_fails_its_checksum_is_thrown_away(
    weights: ModuleType, hub: Hub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    served = hub.handler.repos["acme/tiny"].commits[OLD]
    original = weights.listing

    def listed_then_changed(*args: Any) -> Any:
        """The listing is of the true content; the file then served is another of the same length."""
        answer = original(*args)
        monkeypatch.setitem(served, "model.safetensors", WEIGHTS[::-1])
        return answer

    monkeypatch.setattr(weights, "listing", listed_then_changed)
    params = _params(tmp_path, hub)
    _, problem = weights.run(params)
    assert "does not match the Hub's" in problem, problem
    blobs = Path(params["cache"]) / "models--acme--tiny" / "blobs"
    assert not any(p.name.startswith(hashlib.sha256(WEIGHTS).hexdigest()) for p in blobs.iterdir())
    assert not (_snapshot(params["cache"], OLD) / "model.safetensors").exists()


def test_a_cache_without_room_is_refused_before_any_download(
    weights: ModuleType, hub: Hub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A STAND-IN for the file system's free space (the slow test fills a real tmpfs).
    monkeypatch.setattr(weights, "free_bytes", lambda path: 1 << 20)
    params = _params(tmp_path, hub)
    result, problem = weights.run(params | {"action": "check"})
    assert result.get("stage") == "preflight"
    assert "not enough disk for the weights of acme/tiny" in problem
    assert "1.0 MiB free" in problem and "3.0 MiB to download" in problem
    assert hub.downloads("model.safetensors") == []
    _, problem = weights.run(params)
    assert "not enough disk" in problem and hub.downloads("model.safetensors") == []


def test_the_lock_size_is_checked_when_the_hub_lists_no_sizes(weights: ModuleType, tmp_path: Path) -> None:
    files = [{"rfilename": "model.safetensors", "etag": "a" * 64, "size": None, "lfs": True}]
    staged = weights.plan(None, OLD, files, 5 << 30)
    assert staged["download_bytes"] == 5 << 30 and not staged["sizes_known"]


def test_the_token_comes_from_secrets_env_and_never_back(weights: ModuleType, hub: Hub, tmp_path: Path) -> None:
    params = _params(tmp_path, hub, repo="acme/gated")
    _, problem = weights.run(params)
    assert "HTTP 401" in problem and "model.hub_token" in problem
    secrets = Path(params["state_root"]) / "demo" / "revisions" / "1" / "secrets.env"
    secrets.write_text(f"HF_TOKEN={TOKEN}\n")
    result, problem = weights.run(params)
    assert problem == "", problem
    assert TOKEN not in repr(result)
    assert {auth for _, path, _, auth in hub.log if "gated" in path} >= {f"Bearer {TOKEN}"}


def test_bad_names_from_the_spec_or_the_hub_are_refused(weights: ModuleType, hub: Hub, tmp_path: Path) -> None:
    _, problem = weights.run(_params(tmp_path, hub, repo="../../etc"))
    assert "is not a Hub repository id" in problem
    _, problem = weights.run(_params(tmp_path, hub, endpoint="file:///etc"))
    assert "not an http(s) URL" in problem
    hub.handler.repos["acme/evil"] = Repo({OLD: {"../../escape.json": b"{}"}}, {"main": OLD})
    _, problem = weights.run(_params(tmp_path, hub, repo="acme/evil"))
    assert "not a plain relative path" in problem
    assert not (tmp_path / "models" / "escape.json").exists()


def test_the_stand_in_speaks_the_real_clients_protocol(hub: Hub, tmp_path: Path) -> None:
    """The stand-in is the Hub as the real client sees it: snapshot_download fetches through it."""
    from huggingface_hub import snapshot_download

    folder = snapshot_download(
        "acme/tiny",
        revision=OLD,
        cache_dir=tmp_path / "client",
        endpoint=hub.url,
        allow_patterns=["*.json", "*.safetensors"],
    )
    assert (Path(folder) / "model.safetensors").read_bytes() == WEIGHTS
