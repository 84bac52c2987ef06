"""servespec_weights_archive (the role's module): a model archive unpacked into the Hub cache, and what
the real huggingface_hub makes of the result.

The module is imported by path with its module_utils, as Ansible provides them, and run in this
process on a temporary cache: the snapshot lands where huggingface_hub looks for a pinned commit
(``snapshot_download(..., local_files_only=True)`` returns it), appears only once complete, is not
unpacked twice from the same archive, and hostile archives (``..``, absolute names, links) are
refused with nothing left behind. The slow test on a real host is in test_staged_weights.py.
"""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.modules import role_module

COMMIT = "3" * 40
REPO = "acme/tiny"
FILES = {"config.json": b'{"model_type": "llama"}', "model.safetensors": os.urandom(3 << 20)}


@pytest.fixture
def module(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    return role_module(monkeypatch, "servespec_weights_archive", "servespec_weights_archive_under_test")


def make_archive(path: Path, files: dict[str, bytes], *, top: str = "", mode: str = "w:gz") -> Path:
    with tarfile.open(path, mode) as archive:
        if top:
            folder = tarfile.TarInfo(top)
            folder.type = tarfile.DIRTYPE
            archive.addfile(folder)
        for name, data in files.items():
            info = tarfile.TarInfo(f"{top}/{name}" if top else name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def copied(module: ModuleType, cache: Path, archive: Path) -> Path:
    """The archive where the role's copy task puts it on the host."""
    target = Path(module.incoming(str(cache.parent / "incoming"), REPO)) / archive.name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(archive.read_bytes())
    return target


def params(cache: Path, archive: Path, action: str, path: Path | None = None) -> dict[str, Any]:
    return {
        "action": action,
        "repo": REPO,
        "commit": COMMIT,
        "cache": str(cache),
        "cache_root": str(cache.parent),
        "incoming_root": str(cache.parent / "incoming"),
        "archive_name": archive.name,
        "archive_bytes": archive.stat().st_size,
        "archive_sha256": hashlib.sha256(archive.read_bytes()).hexdigest(),
        "path": str(path or ""),
    }


def snapshot(cache: Path) -> Path:
    return cache / "models--acme--tiny" / "snapshots" / COMMIT


@pytest.mark.parametrize("top", ["", "tiny-model"])
def test_unpacks_at_the_commit_where_huggingface_hub_finds_it(module: ModuleType, tmp_path: Path, top: str) -> None:
    from huggingface_hub import snapshot_download

    cache = tmp_path / "hub"
    archive = make_archive(tmp_path / "tiny.tar.gz", FILES, top=top)
    result, problem = module.run(params(cache, archive, "check"))
    assert problem == "" and result["present"] is False
    host_copy = copied(module, cache, archive)
    result, problem = module.run(params(cache, archive, "unpack", host_copy))
    assert problem == ""
    assert result["servespec_result"]["unpacked_bytes"] == sum(len(data) for data in FILES.values())
    for name, data in FILES.items():
        assert (snapshot(cache) / name).read_bytes() == data
    assert not host_copy.exists()  # the copy is removed once unpacked
    found = snapshot_download(REPO, revision=COMMIT, cache_dir=str(cache), local_files_only=True)
    assert Path(found) == snapshot(cache)


def test_the_same_archive_is_not_copied_or_unpacked_twice(module: ModuleType, tmp_path: Path) -> None:
    cache = tmp_path / "hub"
    archive = make_archive(tmp_path / "tiny.tar", FILES, mode="w")
    module.run(params(cache, archive, "unpack", copied(module, cache, archive)))
    result, problem = module.run(params(cache, archive, "check"))
    assert problem == "" and result["present"] is True and result["changed"] is False
    (tmp_path / "other").mkdir()
    changed = make_archive(
        tmp_path / "other" / "tiny.tar", {**FILES, "config.json": b'{"model_type": "qwen"}'}, mode="w"
    )
    assert changed.stat().st_size == archive.stat().st_size  # same name, same size, other content
    result, _ = module.run(params(cache, changed, "check"))
    assert result["present"] is False  # unpacked again


@pytest.mark.parametrize(
    "name",
    ["../escape.json", "/etc/cron.d/evil", "ok/../../escape.json", "bad\nname.json"],
)
def test_hostile_member_names_are_refused_and_nothing_is_left(module: ModuleType, tmp_path: Path, name: str) -> None:
    cache = tmp_path / "hub"
    archive = make_archive(tmp_path / "evil.tar", {"config.json": b"{}", name: b"owned"}, mode="w")
    _, problem = module.run(params(cache, archive, "unpack", copied(module, cache, archive)))
    assert "only relative names" in problem
    assert not snapshot(cache).exists()
    assert not (tmp_path / "escape.json").exists() and not (cache / "escape.json").exists()
    assert [p.name for p in snapshot(cache).parent.iterdir()] == []


def test_links_are_refused(module: ModuleType, tmp_path: Path) -> None:
    cache = tmp_path / "hub"
    archive = tmp_path / "links.tar"
    with tarfile.open(archive, "w") as tar:
        link = tarfile.TarInfo("config.json")
        link.type = tarfile.SYMTYPE
        link.linkname = "/etc/shadow"
        tar.addfile(link)
    _, problem = module.run(params(cache, archive, "unpack", copied(module, cache, archive)))
    assert "link or device" in problem
    assert not snapshot(cache).exists()


def test_a_truncated_archive_leaves_no_snapshot(module: ModuleType, tmp_path: Path) -> None:
    cache = tmp_path / "hub"
    archive = make_archive(tmp_path / "tiny.tar.gz", FILES)
    archive.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    _, problem = module.run(params(cache, archive, "unpack", copied(module, cache, archive)))
    assert "cannot be unpacked" in problem
    assert not snapshot(cache).exists()


def test_no_room_is_refused_before_the_copy(
    module: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "hub"
    archive = make_archive(tmp_path / "tiny.tar", FILES, mode="w")
    monkeypatch.setattr(module, "free_bytes", lambda path: archive.stat().st_size)  # room for the copy only
    _, problem = module.run(params(cache, archive, "check"))
    assert problem.startswith("not enough disk for the model archive tiny.tar of acme/tiny")


def test_an_archive_outside_the_incoming_folder_is_refused(module: ModuleType, tmp_path: Path) -> None:
    cache = tmp_path / "hub"
    archive = make_archive(tmp_path / "tiny.tar", FILES, mode="w")
    _, problem = module.run(params(cache, archive, "unpack", archive))
    assert "is not in" in problem
    assert archive.exists()


def test_parameters_that_are_not_a_repo_and_commit_are_refused(module: ModuleType, tmp_path: Path) -> None:
    archive = make_archive(tmp_path / "tiny.tar", FILES, mode="w")
    for change in ({"repo": "../../etc"}, {"commit": "main"}, {"archive_name": "../x.tar"}, {"archive_sha256": "x"}):
        _, problem = module.run({**params(tmp_path / "hub", archive, "check"), **change})
        assert "needs a Hub repository id" in problem
