#!/usr/bin/python
# servespec: unpack a model archive copied from the controller into the host's Hub cache (air-gapped hosts).

from __future__ import annotations

DOCUMENTATION = r"""
module: servespec_weights_archive
short_description: Unpack a model archive into the host's Hub cache at a pinned commit
description:
  - For hosts that reach no Hub and no mirror, the model's files come as a tar archive (plain, gzip,
    bzip2 or xz) copied from the controller. They are unpacked into huggingface_hub's cache layout,
    C(<cache>/models--ORG--NAME/snapshots/<commit>/), where the engine's client finds a pinned commit
    without asking the Hub (_snapshot_download.py, v2.4.0: an unreachable Hub with a commit revision
    returns that snapshot folder).
  - C(check) says whether that snapshot was already unpacked from the same archive (its sha256, taken on
    the controller; then nothing is copied), and fails when the cache's file system has no room for the copy and
    the unpacked files.
  - C(unpack) extracts into a hidden folder beside the snapshot and renames it into place only when
    every member is written, so the engine never sees a partial snapshot; the copied archive is removed.
    Only regular files and folders are extracted; absolute names, C(..), links, devices and names
    with control characters are refused. A single top folder holding everything is stripped
    (C(tar cf model.tar my-model/) and C(tar cf model.tar -C my-model .) give the same snapshot).
options:
  action: {description: check or unpack, required: true, type: str, choices: [check, unpack]}
  repo: {description: Hub repository id (org/name), required: true, type: str}
  commit: {description: The commit the snapshot is filed under (model.revision), required: true, type: str}
  cache: {description: Host folder of the engine's Hub cache (its HF_HUB_CACHE), required: true, type: str}
  archive_name: {description: The archive's file name, required: true, type: str}
  archive_bytes: {description: The archive's size on the controller, required: true, type: int}
  archive_sha256: {description: The archive's sha256 on the controller, required: true, type: str}
  path: {description: Where the archive was copied on the host (unpack), type: str, default: ""}
  cache_root:
    description: The host's model cache (trusted); C(cache) lies in it, and no link below it is followed
    type: str
    default: /var/lib/servespec/models
  incoming_root:
    description: >-
      Root's folder the controller copies archives into, C(<incoming_root>/models--ORG--NAME/); mounted into
      no container, unlike the model cache
    type: str
    default: /var/lib/servespec/incoming
author: servespec
"""

import contextlib
import json
import os
import re
import shutil
import tarfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.servespec_common import (
    MODEL_CACHE,
    RESULT_KEY,
    STATE_ROOT,
    WEIGHTS,
    UnsafeCacheEntryError,
    free_bytes,
    human_size,
    open_cache,
    shown,
)

REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
COMMIT = re.compile(r"^[0-9a-f]{40}$")
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,199}$")
SHA256 = re.compile(r"^[0-9a-f]{64}$")
INCOMING_ROOT = os.path.join(STATE_ROOT, "incoming")
"""Where the role copies archives: root's own folder, mounted into no container. Not inside the model
cache: engines that fetch their own models mount that read-write, so a folder there could be swapped for
a link between this module's check and Ansible's copy, which follows links."""
MARKER = ".servespec-archive.json"
"""Written last into an unpacked snapshot: the archive it came from (name, size and sha256)."""
CHUNK = 1 << 20
RESERVE = 64 << 20
"""Bytes left free on the cache's file system while unpacking (other writers, metadata)."""


class RefusedError(Exception):
    """A problem the module reports as its failure message."""


def repo_folder(cache, repo):
    return os.path.join(cache, "models--" + repo.replace("/", "--"))


def incoming(root, repo):
    """The folder the controller copies the repository's archive into, below ``root`` (INCOMING_ROOT)."""
    return repo_folder(root, repo)


def _inbox(p, create):
    """The repository's incoming folder (a CacheDir to close), walked without following links; None if absent."""
    root = p.get("incoming_root") or INCOMING_ROOT
    if create and not os.path.isdir(root):
        os.makedirs(root, mode=0o700)
    return open_cache(root, incoming(root, p["repo"]), create=create)


def _repository(p, create):
    """The repository's folder of the cache (a CacheDir to close), walked from the cache's root; None if absent.

    Nothing below the root is followed if a link (``open_cache``): engine containers may write the cache.
    """
    cache = open_cache(p.get("cache_root") or MODEL_CACHE, p["cache"], create=create)
    if cache is None:
        return None
    with cache:
        return cache.folder(os.path.basename(repo_folder(p["cache"], p["repo"])), create=create)


def unpacked_from(folder, commit):
    """The marker of the snapshot at ``commit`` unpacked from an archive ({} when there is none)."""
    snapshot = folder.walk(["snapshots", commit]) if folder is not None else None
    if snapshot is None:
        return {}
    with snapshot:
        text = snapshot.read_text(MARKER)
    try:
        data = json.loads(text) if text is not None else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def check(p):
    """Whether the snapshot was unpacked from this archive; if not, the room check, and the incoming folder made.

    The incoming folder is made here (outside the model cache, never through a link) for the copy that follows.
    """
    prepare = p["action"] == "check" and p.get("prepare", True)
    folder = _repository(p, create=prepare)
    with folder or contextlib.nullcontext():
        marker = unpacked_from(folder, p["commit"])
        present = marker.get("sha256") == p["archive_sha256"] and marker.get("bytes") == p["archive_bytes"]
        if present:
            return {"present": True, "need_bytes": 0}
        need, free = 2 * p["archive_bytes"], free_bytes(p["cache"])
        if need > free:
            raise RefusedError(
                f"not enough disk for the model archive {p['archive_name']} of {p['repo']}: "
                f"{human_size(p['archive_bytes'])} to copy and about as much unpacked into {p['cache']}, "
                f"{human_size(free)} free there; free space or grow the volume"
            )
        if prepare:
            _inbox(p, create=True).close()
    return {"present": False, "need_bytes": need}


def _parts(name):
    """The path components of a member name, or None when it may not be extracted."""
    if not name or name.startswith("/") or "\\" in name or any(ord(c) < 32 or ord(c) == 127 for c in name):
        return None
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if any(part == ".." for part in parts):
        return None
    return parts


def members(archive):
    """Every member as (parts, TarInfo), refusing what may not be extracted; the single top folder stripped."""
    out = []
    for info in archive.getmembers():
        parts = _parts(info.name)
        if parts is None:
            raise RefusedError(f"the archive names {info.name!r}: only relative names without '..' are unpacked")
        if not (info.isfile() or info.isdir()):
            raise RefusedError(f"the archive's {info.name!r} is a link or device: only files and folders are unpacked")
        if parts:
            out.append((parts, info))
    tops = {parts[0] for parts, _ in out}
    if len(tops) == 1 and all(len(parts) > 1 or info.isdir() for parts, info in out):
        out = [(parts[1:], info) for parts, info in out if len(parts) > 1]
    if not any(info.isfile() for _, info in out):
        raise RefusedError("the archive holds no files")
    return out


def _extract(archive, todo, target):
    """Write every member below the folder ``target`` (a CacheDir): new files only, nothing through a link."""
    for parts, info in todo:
        if info.isdir():
            target.walk(parts, create=True).close()
            continue
        free = os.statvfs(target.fd)
        if info.size + RESERVE > free.f_bavail * free.f_frsize:
            raise RefusedError(f"the disk filled while unpacking {'/'.join(parts)} ({human_size(info.size)})")
        source = archive.extractfile(info)
        if source is None:
            raise RefusedError(f"the archive's {info.name!r} cannot be read")
        with target.walk(parts[:-1], create=True) as folder:
            written = folder.open_file(parts[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            with source, os.fdopen(written, "wb") as handle:
                shutil.copyfileobj(source, handle, CHUNK)
                os.fchmod(handle.fileno(), 0o644)


def _copied(p):
    """The copied archive, opened by descriptor in the incoming folder (never through a link), or refused."""
    expected = incoming(p.get("incoming_root") or INCOMING_ROOT, p["repo"])
    path = p["path"]
    name = os.path.basename(path)
    inbox = _inbox(p, create=False) if path and os.path.dirname(path) == expected else None
    if inbox is None:
        raise RefusedError(f"the copied archive {path!r} is not in {expected}")
    with inbox:
        if inbox.kind(name) != "file":
            if inbox.kind(name):
                raise inbox.refuse(name, "a link" if inbox.kind(name) == "link" else "not a regular file")
            raise RefusedError(f"the copied archive {path!r} is not in {expected}")
        return inbox.open_file(name, os.O_RDONLY)


def unpack(p):
    """Unpack the copied archive into snapshots/<commit>/ (hidden until complete); the bytes written."""
    fd = _copied(p)
    try:
        with contextlib.ExitStack() as stack:  # not a parenthesized with: hosts may run Python before 3.10
            copy = stack.enter_context(os.fdopen(fd, "rb"))
            folder = stack.enter_context(_repository(p, create=True))
            snapshots = stack.enter_context(folder.walk(["snapshots"], create=True))
            return _unpack(p, copy, snapshots)
    finally:  # the copy goes, whether or not it unpacked
        inbox = _inbox(p, create=False)
        with inbox or contextlib.nullcontext():
            if inbox is not None:
                inbox.remove(os.path.basename(p["path"]))


def _unpack(p, copy, snapshots):
    commit = p["commit"]
    work = f".{commit}.unpacking"
    snapshots.remove(work)
    try:
        with snapshots.folder(work, create=True) as target:
            try:
                with tarfile.open(fileobj=copy, mode="r:*") as archive:
                    todo = members(archive)
                    _extract(archive, todo, target)
            except (tarfile.TarError, EOFError, OSError) as err:
                raise RefusedError(f"the model archive {p['archive_name']} cannot be unpacked: {err}") from None
            marker = {"archive": p["archive_name"], "bytes": p["archive_bytes"], "sha256": p["archive_sha256"]}
            target.write_atomic(MARKER, json.dumps(marker).encode())
        old = commit + ".replaced"
        snapshots.remove(old)
        if snapshots.kind(commit) == "link":
            raise snapshots.refuse(commit, "a link")
        if snapshots.kind(commit):
            snapshots.rename(commit, old)
        snapshots.rename(work, commit)
        snapshots.remove(old)
    finally:
        snapshots.remove(work)
    return sum(info.size for _, info in todo if info.isfile())


def run(p):
    """(result, failure message or '')."""
    names = (REPO, p["repo"]), (COMMIT, p["commit"]), (NAME, p["archive_name"]), (SHA256, p["archive_sha256"])
    if not all(pattern.match(value) for pattern, value in names):
        return {}, "the model archive needs a Hub repository id, a 40-hex commit, a plain file name and a sha256"
    try:
        state = check(p)
        written = unpack(p) if p["action"] == "unpack" and not state["present"] else 0
    except (RefusedError, UnsafeCacheEntryError) as err:
        return {}, str(err)
    except OSError as err:  # the cache's file system itself (permissions, a full disk)
        return {}, f"the model cache {shown(p['cache'])}: {err.strerror or err}"
    report = {
        "repo": p["repo"],
        "commit": p["commit"],
        "archive": p["archive_name"],
        "archive_bytes": p["archive_bytes"],
        "present": state["present"],
        "unpacked_bytes": written,
        "action": p["action"],
    }
    return {"changed": written > 0, "present": state["present"], RESULT_KEY: dict(report, kind=WEIGHTS)}, ""


def main():
    module = AnsibleModule(
        argument_spec=dict(
            action=dict(type="str", required=True, choices=["check", "unpack"]),
            repo=dict(type="str", required=True),
            commit=dict(type="str", required=True),
            cache=dict(type="str", required=True),
            archive_name=dict(type="str", required=True),
            archive_bytes=dict(type="int", required=True),
            archive_sha256=dict(type="str", required=True),
            path=dict(type="str", default=""),
            cache_root=dict(type="str", default=MODEL_CACHE),
            incoming_root=dict(type="str", default=INCOMING_ROOT),
        ),
        supports_check_mode=True,
    )
    p = dict(module.params)
    if module.check_mode:
        p["action"] = "check"
    p["prepare"] = not module.check_mode
    result, problem = run(p)
    if problem:
        module.fail_json(msg=problem, stage="weights")
    module.exit_json(**result)


if __name__ == "__main__":
    main()
