#!/usr/bin/python
# servespec: stage a Hub model's weights in the host's model cache before the running revision stops.

from __future__ import annotations

DOCUMENTATION = r"""
module: servespec_weights
short_description: Fetch a Hugging Face Hub model into the host's model cache, resumably
description:
  - C(check) lists the repository at its revision (the Hub API), says which files are cached and
    how many bytes remain to download, and fails when the cache's file system has less room than that.
  - C(fetch) does the same check, then downloads what is missing. Each file is written to
    C(blobs/<etag>.incomplete), resumed from its length with an HTTP Range request, verified (size,
    and the LFS sha256 or the git blob sha1 the Hub lists), and only then renamed to its blob and
    linked into C(snapshots/<commit>/). The engine never sees a partial file.
  - The layout is huggingface_hub's own cache (file_download.py, v2.4.0), so the engine's client
    finds the files cached and downloads nothing.
  - The Hub token is read from the revision's secrets.env (HF_TOKEN) on the host; it is on no
    command line and in no result. It is sent to the endpoint's own host only (never to a redirect
    target on another host, such as the LFS CDN).
options:
  deployment: {description: Deployment name, required: true, type: str}
  number: {description: Revision whose secrets.env holds HF_TOKEN (if any), required: true, type: int}
  action: {description: check or fetch, required: true, type: str, choices: [check, fetch]}
  repo: {description: Hub repository id (org/name), required: true, type: str}
  revision: {description: Commit or branch to stage, type: str, default: main}
  endpoint: {description: Hub endpoint (HF_ENDPOINT) or a mirror of it, type: str, default: "https://huggingface.co"}
  cache: {description: Host folder of the engine's Hub cache (its HF_HUB_CACHE), required: true, type: str}
  expected_bytes: {description: Weight size from the lock file (when the Hub lists no sizes), type: int, default: 0}
  timeout: {description: Seconds a read may stall before the download fails (then resumed), type: int, default: 60}
  state_root: {description: Root of the state folders, type: str, default: /var/lib/servespec}
  cache_root:
    description: The host's model cache (trusted); C(cache) lies in it, and no link below it is followed
    type: str
    default: /var/lib/servespec/models
author: servespec
"""

import contextlib
import errno
import fcntl
import hashlib
import http.client
import json
import os
import posixpath
import re
import urllib.error
import urllib.parse
import urllib.request

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.servespec_common import (
    MODEL_CACHE,
    RESULT_KEY,
    STATE_ROOT,
    WEIGHTS,
    UnsafeCacheEntryError,
    check_deployment,
    free_bytes,
    human_size,
    open_cache,
    read_env_file,
    revision_dir,
    shown,
)

REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
REVISION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$")
COMMIT = re.compile(r"^[0-9a-f]{40}$")
ETAG = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")  # git blob sha1 or LFS sha256
CHUNK = 1 << 20

# Which files an engine loads (vLLM 0.11.0 model_loader/default_loader.py _prepare_weights: load_format
# auto tries "*.safetensors", then "*.bin", and downloads only the first that matches; LoadConfig's
# ignore_patterns default is "original/**/*"; TGI and SGLang prefer safetensors the same way).
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".h5", ".msgpack", ".onnx", ".onnx_data")
NEVER = (".gguf", ".tflite", ".mlmodel", ".ot", ".npz")
PREFERRED = (".safetensors", ".bin", ".pt")


class RefusedError(Exception):
    """A problem to report as the module's failure message (never holding the token)."""


class NoRoomError(RefusedError):
    """The cache's file system has no room for what remains to download (found before any byte is fetched)."""


def _is_weight(name):
    return name.endswith(WEIGHT_SUFFIXES)


def wanted_files(siblings):
    """The repository files an engine loads: config and tokenizer files, and one weight format."""
    names = [s["rfilename"] for s in siblings if not s["rfilename"].startswith("original/")]
    names = [n for n in names if not n.endswith(NEVER)]
    chosen = next((suffix for suffix in PREFERRED if any(n.endswith(suffix) for n in names)), None)
    out = []
    for sibling in siblings:
        name = sibling["rfilename"]
        if name not in names:
            continue
        if _is_weight(name) and not (chosen and name.endswith(chosen)):
            continue
        out.append(sibling)
    return out


def _safe_name(name):
    """A repository file name usable below the snapshot folder (no absolute path, no '..', no NUL)."""
    parts = name.split("/")
    return bool(name) and "\0" not in name and not name.startswith("/") and all(p not in ("", ".", "..") for p in parts)


class _NoCrossHostAuth(urllib.request.HTTPRedirectHandler):
    """Follow redirects, dropping the token when the target is another host (the LFS CDN)."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and urllib.parse.urlsplit(newurl).netloc != urllib.parse.urlsplit(req.full_url).netloc:
            new.remove_header("Authorization")
        return new


def _opener():
    return urllib.request.build_opener(_NoCrossHostAuth)


def _request(url, token, extra=None):
    headers = {"User-Agent": "servespec-weights/1"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    headers.update(extra or {})
    return urllib.request.Request(url, headers=headers)


def _http_problem(err, repo, revision, what):
    code = getattr(err, "code", None)
    hint = {
        401: "the Hub refused the token or needs one (a gated or private repository: set model.hub_token)",
        403: "the Hub refused access (accept the model's terms on the Hub with the token's account)",
        404: "not found on this endpoint (the repository, its revision or the file)",
    }.get(code)
    if code is not None:
        return f"{what}: HTTP {code}" + (f": {hint}" if hint else "")
    reason = getattr(err, "reason", err)
    return f"{what}: {type(reason).__name__}: {reason}"


def listing(endpoint, repo, revision, token, timeout):
    """The Hub's answer for the repository at ``revision``: (commit, siblings with sizes and hashes).

    huggingface_hub's model_info(files_metadata=True): GET /api/models/{repo}/revision/{rev}?blobs=true.
    """
    url = f"{endpoint}/api/models/{repo}/revision/{urllib.parse.quote(revision, safe='')}?blobs=true"
    try:
        with _opener().open(_request(url, token), timeout=timeout) as response:
            info = json.loads(response.read(16 << 20))
    except (urllib.error.URLError, OSError, ValueError) as err:
        raise RefusedError(_http_problem(err, repo, revision, f"listing {repo} at {revision} on {endpoint}")) from None
    commit = info.get("sha") if isinstance(info, dict) else None
    siblings = info.get("siblings") if isinstance(info, dict) else None
    if not isinstance(commit, str) or not COMMIT.match(commit) or not isinstance(siblings, list):
        raise RefusedError(f"{endpoint} answered for {repo} without a commit and a file list")
    files = []
    for sibling in siblings:
        name = sibling.get("rfilename") if isinstance(sibling, dict) else None
        if not isinstance(name, str) or not _safe_name(name):
            raise RefusedError(f"{endpoint} listed a file name of {repo} that is not a plain relative path")
        lfs = sibling.get("lfs") if isinstance(sibling.get("lfs"), dict) else None
        etag = (lfs or {}).get("sha256") or sibling.get("blobId")
        size = (lfs or {}).get("size", sibling.get("size"))
        files.append(
            {
                "rfilename": name,
                "etag": etag if isinstance(etag, str) and ETAG.match(etag) else None,
                "size": size if isinstance(size, int) and not isinstance(size, bool) and size >= 0 else None,
                "lfs": lfs is not None,
            }
        )
    return commit, files


def repo_folder(cache, repo):
    """The repository's folder name in the Hub cache (huggingface_hub's ``models--ORG--NAME``)."""
    return "models--" + repo.replace("/", "--")


def _pointer_cached(folder, commit, name):
    """Whether snapshots/<commit>/<name> is there: a file, or a link to a file of the repository's blobs.

    The pointer's own link is read, never followed: it must name ``../../blobs/<blob>`` (as huggingface_hub
    links it), and that blob must be a regular file.
    """
    parts = name.split("/")
    snapshot = folder.walk(["snapshots", commit, *parts[:-1]])
    if snapshot is None:
        return False
    with snapshot:
        kind = snapshot.kind(parts[-1])
        if kind != "link":
            return kind == "file"
        link = os.readlink(parts[-1], dir_fd=snapshot.fd)
        target = posixpath.normpath(posixpath.join("snapshots", commit, *parts[:-1], link))
    blob = target[len("blobs/") :] if target.startswith("blobs/") else ""
    if not blob or "/" in blob:
        raise snapshot.refuse(parts[-1], "a link out of the repository's blobs")
    blobs = folder.folder("blobs")
    with blobs or contextlib.nullcontext():
        return blobs is not None and _blob_kind(blobs, blob) == "file"


def _blob_kind(blobs, name):
    """'file' or '' for a blob or its .incomplete part; anything else (a planted link) is refused."""
    kind = blobs.kind(name)
    if kind not in ("", "file"):
        raise blobs.refuse(name, "a link" if kind == "link" else "not a regular file")
    return kind


def _have(folder, entry):
    """(complete, bytes on disk) of one file in the cache: its blob, else its .incomplete part."""
    if folder is None:
        return False, 0
    if entry["etag"] is None:
        return _pointer_cached(folder, entry["commit"], entry["rfilename"]), 0
    blobs = folder.folder("blobs")
    if blobs is None:
        return False, 0
    with blobs:
        blob, part = entry["etag"], entry["etag"] + ".incomplete"
        if _blob_kind(blobs, blob):
            size = blobs.lstat(blob).st_size
            if entry["size"] is None or size == entry["size"]:
                return True, entry["size"] or size
        return False, blobs.lstat(part).st_size if _blob_kind(blobs, part) else 0


def plan(folder, commit, files, expected_bytes):
    """What is cached and what remains: the files with their state, and the byte counts.

    ``folder``: the repository's folder of the cache (a CacheDir), None when there is none yet.
    """
    out = {"files": [], "cached_bytes": 0, "download_bytes": 0, "partial_bytes": 0, "sizes_known": True}
    for entry in files:
        entry = dict(entry, commit=commit)
        complete, on_disk = _have(folder, entry)
        entry["cached"] = complete
        out["files"].append(entry)
        if complete:
            out["cached_bytes"] += on_disk
        elif entry["size"] is None:
            out["sizes_known"] = False
        else:
            out["download_bytes"] += entry["size"] - min(on_disk, entry["size"])
            out["partial_bytes"] += on_disk
    if not out["sizes_known"] and expected_bytes:
        out["download_bytes"] = max(out["download_bytes"], expected_bytes - out["cached_bytes"])
    return out


def room_problem(cache, repo, commit, staged):
    need, free = staged["download_bytes"], free_bytes(cache)
    if need <= free:
        return ""
    return (
        f"not enough disk for the weights of {repo} at {commit[:12]}: {human_size(need)} to download into {cache} "
        f"({human_size(staged['cached_bytes'])} already cached), {human_size(free)} free there; "
        "free space or grow the volume"
    )


def _digest(handle, digest):
    handle.seek(0)
    for chunk in iter(lambda: handle.read(CHUNK), b""):
        digest.update(chunk)
    return digest.hexdigest()


def _verify(handle, entry):
    """Why the open part ``handle`` is not the Hub's file ('' when its size and checksum match)."""
    size = os.fstat(handle.fileno()).st_size
    if entry["size"] is not None and size != entry["size"]:
        return f"{entry['rfilename']}: {size} bytes received, the Hub lists {entry['size']}"
    if entry["etag"] is None:
        return ""
    if len(entry["etag"]) == 64:
        actual = _digest(handle, hashlib.sha256())
    else:
        actual = _digest(handle, hashlib.sha1(f"blob {size}\0".encode()))  # the git object id, not a security hash
    if actual != entry["etag"]:
        return f"{entry['rfilename']}: checksum {actual[:12]} does not match the Hub's {entry['etag'][:12]}"
    return ""


def _publish(blobs, handle, name):
    """Rename the verified part to its blob; the renamed entry must be the very file verified (no swap)."""
    verified = os.fstat(handle.fileno())
    blobs.rename(name + ".incomplete", name)
    now = blobs.lstat(name)
    if now is None or (now.st_dev, now.st_ino) != (verified.st_dev, verified.st_ino):
        blobs.remove(name)
        raise blobs.refuse(name + ".incomplete", "not the file verified (it was replaced meanwhile)")


def _download(url, blobs, entry, token, timeout):
    """Fetch ``url`` into blobs/<etag>.incomplete, resuming from its length; verified, then renamed to the blob.

    The part is opened by descriptor (never through a link) and written only through that descriptor.
    """
    name = entry["etag"]
    part = name + ".incomplete"
    with os.fdopen(blobs.open_file(part, os.O_RDWR | os.O_CREAT), "r+b") as handle:
        have = os.fstat(handle.fileno()).st_size
        if entry["size"] is not None and have > entry["size"]:
            have = 0
        if entry["size"] is not None and have == entry["size"] and not _verify(handle, entry):
            _publish(blobs, handle, name)
            return 0
        headers = {"Range": f"bytes={have}-"} if have else {}
        received = 0
        try:
            with _opener().open(_request(url, token, headers), timeout=timeout) as response:
                resumed = have and response.status == 206  # 200: the server ignored the range
                handle.seek(have if resumed else 0)
                handle.truncate()
                for chunk in iter(lambda: response.read(CHUNK), b""):
                    handle.write(chunk)
                    received += len(chunk)
                handle.flush()
                os.fsync(handle.fileno())
        except urllib.error.HTTPError as err:
            if err.code != 416:  # 416: nothing left past what we have
                raise
        problem = _verify(handle, entry)
        if problem:
            if entry["size"] is not None and os.fstat(handle.fileno()).st_size < entry["size"]:
                raise RefusedError(f"{problem} (the transfer ended early; the next apply resumes it)")
            blobs.remove(part)  # wrong content: never kept, never served
            raise RefusedError(problem)
        _publish(blobs, handle, name)
    return received


def _link(folder, commit, entry):
    """snapshots/<commit>/<file> -> ../../blobs/<etag>, as huggingface_hub links it (created atomically)."""
    parts = entry["rfilename"].split("/")
    relative = posixpath.join(*([os.pardir] * (len(parts) + 1)), "blobs", entry["etag"])
    with folder.walk(["snapshots", commit, *parts[:-1]], create=True) as snapshot:
        temporary = parts[-1] + ".servespec-link"
        snapshot.remove(temporary, links=True)  # a link left by an interrupted run
        os.symlink(relative, temporary, dir_fd=snapshot.fd)
        snapshot.rename(temporary, parts[-1])


def _write_ref(folder, revision, commit):
    if revision == commit:
        return
    parts = revision.split("/")
    with folder.walk(["refs", *parts[:-1]], create=True) as refs:
        refs.write_atomic(parts[-1], commit.encode())


def _fetch_one(url, cache, folder, entry, token, timeout):
    """Download one blob under huggingface_hub's own lock file for it; returns the bytes received.

    huggingface_hub's filelock uses fcntl.flock on Unix: a download the engine or another
    deployment runs meanwhile waits for this one and never writes beside it.
    """
    blobs = folder.walk(["blobs"], create=True)
    locks = cache.walk([".locks", folder.name], create=True)
    with blobs, locks, os.fdopen(locks.open_file(entry["etag"] + ".lock", os.O_WRONLY | os.O_CREAT), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _blob_kind(blobs, entry["etag"]):
            return 0
        try:
            return _download(url, blobs, entry, token, timeout)
        except (urllib.error.URLError, OSError, http.client.HTTPException) as err:
            name = entry["rfilename"]
            if isinstance(err, OSError) and err.errno == errno.ENOSPC:
                raise RefusedError(f"the disk under {cache.where} filled while downloading {name}") from None
            problem = _http_problem(err, "", "", f"downloading {name}")
            raise RefusedError(f"{problem} (the next apply resumes it)") from None


def fetch(endpoint, repo, revision, cache, folder, staged, commit, token, timeout):
    """Download every file of ``staged`` that is not cached into the repository's ``folder``; the bytes received."""
    received = 0
    for entry in staged["files"]:
        if entry["etag"] is None:
            if entry["cached"]:
                continue
            raise RefusedError(f"{endpoint} listed {entry['rfilename']} of {repo} without a blob id")
        if not entry["cached"]:
            url = f"{endpoint}/{repo}/resolve/{commit}/{urllib.parse.quote(entry['rfilename'])}"
            received += _fetch_one(url, cache, folder, entry, token, timeout)
        _link(folder, commit, entry)
    _write_ref(folder, revision, commit)
    return received


def stage(p, endpoint, repo, revision, token):
    """List the repository, check the cache and its room, and fetch what is missing: the report.

    The cache is walked from its root by descriptor (``open_cache``): a link anywhere below the root is refused.
    """
    commit, files = listing(endpoint, repo, revision, token, p["timeout"])
    fetching = p["action"] == "fetch"
    with contextlib.ExitStack() as held:
        cache = open_cache(p.get("cache_root") or MODEL_CACHE, p["cache"], create=fetching)
        folder = None
        if cache is not None:
            held.enter_context(cache)
            folder = cache.folder(repo_folder(p["cache"], repo), create=fetching)
        if folder is not None:
            held.enter_context(folder)
        staged = plan(folder, commit, wanted_files(files), p["expected_bytes"])
        problem = room_problem(p["cache"], repo, commit, staged)
        if problem:
            raise NoRoomError(problem)
        received = 0
        if fetching:
            received = fetch(endpoint, repo, revision, cache, folder, staged, commit, token, p["timeout"])
    report = {
        "repo": repo,
        "revision": revision,
        "commit": commit,
        "files": len(staged["files"]),
        "cached_files": sum(1 for f in staged["files"] if f["cached"]),
        "cached_bytes": staged["cached_bytes"],
        "download_bytes": staged["download_bytes"],
        "partial_bytes": staged["partial_bytes"],
        "downloaded_bytes": received,
        "action": p["action"],
    }
    return report


def _token(p):
    path = os.path.join(revision_dir(p["deployment"], p["number"], p["state_root"]), "secrets.env")
    try:
        return read_env_file(path).get("HF_TOKEN", "") if os.path.isfile(path) else ""
    except OSError:
        return ""


def run(p):
    """The module's work for parameters ``p``: (result, failure message or '')."""
    repo, revision = p["repo"], p["revision"] or "main"
    if not REPO.match(repo) or not REVISION.match(revision) or ".." in revision:
        return {}, f"{repo!r} at {revision!r} is not a Hub repository id and revision"
    endpoint = (p["endpoint"] or "https://huggingface.co").rstrip("/")
    if urllib.parse.urlsplit(endpoint).scheme not in ("http", "https"):
        return {}, "the Hub endpoint is not an http(s) URL"
    token = _token(p)
    failed = {}
    try:
        report = stage(p, endpoint, repo, revision, token)
    except NoRoomError as err:
        failed, problem = {"stage": "preflight"}, str(err)
    except (RefusedError, UnsafeCacheEntryError) as err:
        problem = str(err)
    except OSError as err:  # the cache's file system itself (permissions, a full disk while linking)
        problem = f"the model cache {shown(p['cache'])}: {err.strerror or err}"
    else:
        problem = ""
    if problem:
        return failed, problem.replace(token, "***") if token else problem
    return {"changed": report["downloaded_bytes"] > 0, RESULT_KEY: dict(report, kind=WEIGHTS)}, ""


def main():
    module = AnsibleModule(
        argument_spec=dict(
            deployment=dict(type="str", required=True),
            number=dict(type="int", required=True),
            action=dict(type="str", required=True, choices=["check", "fetch"]),
            repo=dict(type="str", required=True),
            revision=dict(type="str", default="main"),
            endpoint=dict(type="str", default="https://huggingface.co"),
            cache=dict(type="str", required=True),
            expected_bytes=dict(type="int", default=0),
            timeout=dict(type="int", default=60),
            state_root=dict(type="str", default=STATE_ROOT),
            cache_root=dict(type="str", default=MODEL_CACHE),
        ),
        supports_check_mode=True,
    )
    p = dict(module.params)
    check_deployment(module, p["deployment"])
    if module.check_mode:
        p["action"] = "check"
    result, problem = run(p)
    if problem:
        module.fail_json(msg=problem, stage=result.get("stage", "weights"))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
