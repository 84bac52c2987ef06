"""Links an engine container plants in the model cache never make the role's weights modules (root) touch host files.

Issue 20 item 3: engines that fetch their own models mount the cache read-write, and a container's
root is the host's root, so any entry below the cache's root may be a link a container planted. For
every path servespec_weights and servespec_weights_archive open (blobs and their ``.incomplete``
parts, ``.locks``, ``snapshots/<commit>``, ``refs/<name>``, ``.servespec-incoming``, the unpacking
folder), a planted link to a file, or a planted link to a folder, pointing at STAND-INS for
``/root/.ssh/authorized_keys`` and ``/etc/shadow`` outside the cache leaves them byte for byte and mode
unchanged, nothing is written beside them, and the module fails with a message naming the entry.
The modules run in this process on a temporary cache, as in test_weights_module.py.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.modules import role_module
from tests.rollout.hub_standin import Hub, Repo, serve
from tests.rollout.test_weights_archive_module import FILES as ARCHIVE_FILES
from tests.rollout.test_weights_archive_module import make_archive

COMMIT = "1" * 40
WEIGHTS = os.urandom(1 << 20)
BLOB = hashlib.sha256(WEIGHTS).hexdigest()
FILES = {"config.json": b'{"model_type": "llama"}', "model.safetensors": WEIGHTS}
ARCHIVE_COMMIT = "3" * 40


@pytest.fixture
def weights(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    return role_module(monkeypatch, "servespec_weights", "servespec_weights_links_under_test")


@pytest.fixture
def archive_module(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    return role_module(monkeypatch, "servespec_weights_archive", "servespec_weights_archive_links_under_test")


@pytest.fixture
def hub() -> Iterator[Hub]:
    with serve({"acme/tiny": Repo({COMMIT: FILES}, {"main": COMMIT})}) as running:
        yield running


@pytest.fixture
def host(tmp_path: Path) -> Path:
    """A folder outside the cache holding STAND-INS for /root/.ssh/authorized_keys and /etc/shadow."""
    outside = tmp_path / "host"
    outside.mkdir()
    (outside / "authorized_keys").write_bytes(b"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5 operator@admin\n")
    (outside / "authorized_keys").chmod(0o600)
    (outside / "shadow").write_bytes(b"root:$6$salt$hash:19000:0:99999:7:::\n")
    (outside / "shadow").chmod(0o640)
    return outside


def _snapshot_of(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every entry of ``folder``: its bytes (b"" for a folder) and its mode."""
    return {p.name: (b"" if p.is_dir() else p.read_bytes(), p.stat().st_mode) for p in sorted(folder.iterdir())}


def _plant(link: Path, target: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)


REPO_DIR = "hub/models--acme--tiny"
WEIGHTS_LINKS = {
    # path below the cache root -> what the link points at (a stand-in file, or the stand-ins' folder)
    f"{REPO_DIR}/blobs/{BLOB}.incomplete": "authorized_keys",
    f"{REPO_DIR}/blobs/{BLOB}": "shadow",
    f"hub/.locks/models--acme--tiny/{BLOB}.lock": "authorized_keys",
    f"{REPO_DIR}/refs/main": "authorized_keys",
    f"{REPO_DIR}/blobs": ".",
    f"{REPO_DIR}/snapshots/{COMMIT}": ".",
    f"{REPO_DIR}/snapshots": ".",
    f"{REPO_DIR}/refs": ".",
    "hub/.locks/models--acme--tiny": ".",
    "hub/.locks": ".",
    REPO_DIR: ".",
    "hub": ".",
}


def _weights_params(root: Path, hub: Hub, state: Path) -> dict[str, Any]:
    (state / "demo" / "revisions" / "1").mkdir(parents=True, exist_ok=True)
    return {
        "deployment": "demo",
        "number": 1,
        "action": "fetch",
        "repo": "acme/tiny",
        "revision": "main",
        "endpoint": hub.url,
        "cache": str(root / "hub"),
        "cache_root": str(root),
        "expected_bytes": 0,
        "timeout": 10,
        "state_root": str(state),
    }


@pytest.mark.parametrize("planted", list(WEIGHTS_LINKS))
def test_weights_never_follow_a_planted_link(
    weights: ModuleType, hub: Hub, host: Path, tmp_path: Path, planted: str
) -> None:
    root = tmp_path / "models"
    _plant(root / planted, (host / WEIGHTS_LINKS[planted]).resolve())
    before = _snapshot_of(host)
    result, problem = weights.run(_weights_params(root, hub, tmp_path / "state"))
    assert _snapshot_of(host) == before  # same files, same bytes, same modes: nothing written beside them
    assert "servespec_result" not in result
    assert ascii(str(root / planted)) in problem and "is a link" in problem, problem
    assert (root / planted).is_symlink()  # reported, left for the operator to look at


def test_a_planted_snapshot_pointer_is_replaced_not_followed(
    weights: ModuleType, hub: Hub, host: Path, tmp_path: Path
) -> None:
    """snapshots/<commit>/<file> is a link by design: a planted one is replaced by the blob's, never written through."""
    root = tmp_path / "models"
    pointer = root / REPO_DIR / "snapshots" / COMMIT / "config.json"
    _plant(pointer, host / "authorized_keys")
    before = _snapshot_of(host)
    _, problem = weights.run(_weights_params(root, hub, tmp_path / "state"))
    assert problem == ""
    assert _snapshot_of(host) == before
    assert str(pointer.readlink()) == "../../blobs/" + hashlib.sha1(b"blob 23\0" + FILES["config.json"]).hexdigest()


def test_a_pointer_out_of_the_blobs_is_refused_when_checked(weights: ModuleType, host: Path, tmp_path: Path) -> None:
    """A file the Hub lists without a blob id is cached only as a link into the repository's own blobs."""
    root = tmp_path / "models"
    pointer = root / REPO_DIR / "snapshots" / COMMIT / "config.json"
    _plant(pointer, host / "shadow")
    cache = weights.open_cache(str(root), str(root / "hub"))
    with cache, cache.folder("models--acme--tiny") as folder:
        files = [{"rfilename": "config.json", "etag": None, "size": None, "lfs": False}]
        with pytest.raises(weights.UnsafeCacheEntryError, match="a link out of the repository's blobs"):
            weights.plan(folder, COMMIT, files, 0)


def test_a_cache_outside_its_root_is_refused(weights: ModuleType, hub: Hub, tmp_path: Path) -> None:
    params = _weights_params(tmp_path / "models", hub, tmp_path / "state") | {"cache": str(tmp_path / "elsewhere")}
    _, problem = weights.run(params)
    assert "is not inside the model cache" in problem
    assert not (tmp_path / "elsewhere").exists()


ARCHIVE_DIR = "hub/models--acme--tiny"
ARCHIVE_LINKS = {
    f"{ARCHIVE_DIR}/.servespec-incoming": ".",  # where the copy went before it moved out of the cache
    f"{ARCHIVE_DIR}/snapshots/.{ARCHIVE_COMMIT}.unpacking": ".",
    f"{ARCHIVE_DIR}/snapshots/{ARCHIVE_COMMIT}": ".",
    f"{ARCHIVE_DIR}/snapshots/{ARCHIVE_COMMIT}/.servespec-archive.json": "authorized_keys",
    f"{ARCHIVE_DIR}/snapshots": ".",
    ARCHIVE_DIR: ".",
    "hub": ".",
}


def _archive_params(root: Path, archive: Path, action: str) -> dict[str, Any]:
    cache = root / "hub"
    return {
        "action": action,
        "repo": "acme/tiny",
        "commit": ARCHIVE_COMMIT,
        "cache": str(cache),
        "cache_root": str(root),
        "archive_name": archive.name,
        "archive_bytes": archive.stat().st_size,
        "archive_sha256": hashlib.sha256(archive.read_bytes()).hexdigest(),
        "incoming_root": str(root.parent / "incoming"),
        "path": str(root.parent / "incoming" / "models--acme--tiny" / archive.name),
    }


def _copy_in(root: Path, archive: Path) -> None:
    """The role's copy task: the archive in root's incoming folder, outside the cache (made by the check)."""
    incoming = root.parent / "incoming" / "models--acme--tiny"
    if incoming.is_dir():
        (incoming / archive.name).write_bytes(archive.read_bytes())


@pytest.mark.parametrize("planted", list(ARCHIVE_LINKS))
def test_the_archive_never_follows_a_planted_link(
    archive_module: ModuleType, host: Path, tmp_path: Path, planted: str
) -> None:
    root = tmp_path / "models"
    archive = make_archive(tmp_path / "tiny.tar", ARCHIVE_FILES, mode="w")
    (host / "tiny.tar").write_bytes(archive.read_bytes())  # what a link to the stand-ins' folder would find
    _plant(root / planted, (host / ARCHIVE_LINKS[planted]).resolve())
    before = _snapshot_of(host)
    problems = []
    for action in ("check", "unpack"):
        _copy_in(root, archive)
        _, problem = archive_module.run(_archive_params(root, archive, action))
        problems.append(problem)
        assert _snapshot_of(host) == before, action
    assert (root / planted).is_symlink()
    if planted.endswith(".servespec-incoming"):  # no longer used: left alone, and the archive unpacks
        assert problems == ["", ""]
        return
    assert any(ascii(str(root / planted)) in p and "is a link" in p for p in problems), problems
