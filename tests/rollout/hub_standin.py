"""The Hub stand-in of tests/knowledge/test_hub.py, grown to serve whole repositories (staged weights).

Besides what that server answers (model info, config.json, gated and renamed repositories),
this one lists a repository's files with their sizes and hashes, as the Hub does for
``GET /api/models/{repo}/revision/{rev}?blobs=true`` (huggingface_hub ``model_info(files_metadata=True)``:
``siblings[].size``, ``blobId``, and ``lfs.sha256``/``lfs.size`` for LFS files) and for
``GET /api/models/{repo}/tree/{rev}?recursive=true`` (``list_repo_tree``, which snapshot_download
reads in huggingface_hub 2.4.0), and serves each file
at ``/{repo}/resolve/{rev}/{file}`` with ``X-Repo-Commit``, ``ETag`` (the git blob id, or the
sha256 for LFS files, with ``X-Linked-Etag``/``X-Linked-Size``, as the Hub answers a file stored in
LFS) and ``Range`` requests (206). A test can cut the next transfer of a file short
(:meth:`Hub.cut_next`): the server sends half the bytes it promised and closes the connection,
as a dropped link does. Every request is recorded with its Range header.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import Any, ClassVar

from tests.knowledge.test_hub import _Hub

LFS_SUFFIXES = (".safetensors", ".bin", ".gguf")


def git_blob_id(data: bytes) -> str:
    """The git object id of a file's content (what the Hub lists as ``blobId`` and sends as ETag)."""
    return hashlib.sha1(f"blob {len(data)}\0".encode() + data).hexdigest()


@dataclass
class Repo:
    """One repository: each commit's files; branches name commits."""

    commits: dict[str, dict[str, bytes]]
    branches: dict[str, str] = field(default_factory=dict)
    token: str = ""
    """A token the repository needs (gated), or '' for an open one."""

    def commit(self, revision: str) -> str | None:
        return self.branches.get(revision) or (revision if revision in self.commits else None)


class _WeightsHub(_Hub):
    repos: ClassVar[dict[str, Repo]] = {}
    log: ClassVar[list[tuple[str, str, str, str]]] = []
    """(method, path, Range header, Authorization header) of every request."""
    cut: ClassVar[set[str]] = set()
    """File names whose next GET is cut short."""

    def _weights_repo(self, repo: str) -> Repo | None:
        entry = type(self).repos.get(repo)
        if entry is None:
            return None
        if entry.token and self.headers.get("Authorization") != f"Bearer {entry.token}":
            self._refuse(401, "GatedRepo")
            raise _Answered
        return entry

    def _listing(self, repo: str, entry: Repo, revision: str) -> None:
        sha = entry.commit(revision)
        if sha is None:
            self._refuse(404, "RevisionNotFound")
            return
        siblings = []
        for name, data in sorted(entry.commits[sha].items()):
            sibling: dict[str, Any] = {"rfilename": name, "size": len(data), "blobId": git_blob_id(data)}
            if name.endswith(LFS_SUFFIXES):
                sibling["lfs"] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
            siblings.append(sibling)
        info = {"id": repo, "sha": sha, "siblings": siblings}
        self._send(json.dumps(info).encode(), {"Content-Type": "application/json"})

    def _tree(self, entry: Repo, revision: str) -> None:
        """``GET /api/models/{repo}/tree/{rev}?recursive=true``: snapshot_download's listing (list_repo_tree)."""
        sha = entry.commit(revision)
        if sha is None:
            self._refuse(404, "RevisionNotFound")
            return
        items = []
        for name, data in sorted(entry.commits[sha].items()):
            item: dict[str, Any] = {"type": "file", "oid": git_blob_id(data), "size": len(data), "path": name}
            if name.endswith(LFS_SUFFIXES):
                item["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
            items.append(item)
        self._send(json.dumps(items).encode(), {"Content-Type": "application/json"})

    def _file(self, entry: Repo, revision: str, name: str) -> None:
        sha = entry.commit(revision)
        data = entry.commits[sha].get(name) if sha else None
        if sha is None or data is None:
            self._refuse(404, "EntryNotFound" if sha else "RevisionNotFound")
            return
        lfs = name.endswith(LFS_SUFFIXES)
        etag = hashlib.sha256(data).hexdigest() if lfs else git_blob_id(data)
        headers = {"X-Repo-Commit": sha, "ETag": f'"{etag}"', "Accept-Ranges": "bytes"}
        if lfs:
            headers |= {"X-Linked-Etag": f'"{etag}"', "X-Linked-Size": str(len(data))}
        start = 0
        wanted = self.headers.get("Range", "")
        if wanted.startswith("bytes=") and wanted.endswith("-"):
            start = int(wanted[6:-1])
        if start >= len(data) and start:
            self._refuse(416, "RangeNotSatisfiable")
            return
        body = data[start:]
        self.send_response(206 if start else 200)
        for key, value in headers.items():
            self.send_header(key, value)
        if start:
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command == "HEAD":
            return
        if name in type(self).cut:
            type(self).cut.discard(name)
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(body)

    def _answer(self) -> None:
        path = self.path.split("?")[0]
        type(self).log.append(
            (self.command, path, self.headers.get("Range") or "", self.headers.get("Authorization") or "")
        )
        parts = path.lstrip("/").split("/")
        try:
            if path.startswith("/api/models/") and len(parts) >= 6 and parts[4] == "revision":
                entry = self._weights_repo("/".join(parts[2:4]))
                if entry is not None:
                    self._listing("/".join(parts[2:4]), entry, "/".join(parts[5:]))
                    return
            if path.startswith("/api/models/") and len(parts) >= 6 and parts[4] == "tree":
                entry = self._weights_repo("/".join(parts[2:4]))
                if entry is not None:
                    self._tree(entry, parts[5])
                    return
            if len(parts) >= 5 and parts[2] == "resolve":
                entry = self._weights_repo("/".join(parts[:2]))
                if entry is not None:
                    self._file(entry, parts[3], "/".join(parts[4:]))
                    return
        except _Answered:
            return
        super()._answer()

    do_GET = _answer  # noqa: N815 - http.server's names
    do_HEAD = _answer  # noqa: N815


class _Answered(Exception):  # noqa: N818 - control flow, not an error
    """The request was answered (refused) while looking the repository up."""


@dataclass
class Hub:
    """A running stand-in: its URL, the requests it saw, and the switch that cuts a transfer."""

    url: str
    handler: type[_WeightsHub]

    @property
    def log(self) -> list[tuple[str, str, str, str]]:
        return self.handler.log

    def downloads(self, name: str) -> list[str]:
        """The Range headers of every GET of file ``name`` ('' for a whole-file GET)."""
        return [
            r
            for method, path, r, _ in self.log
            if method == "GET" and "/resolve/" in path and path.endswith("/" + name)
        ]

    def cut_next(self, name: str) -> None:
        self.handler.cut.add(name)


@contextmanager
def serve(repos: dict[str, Repo], bind: str = "127.0.0.1", advertise: str | None = None) -> Iterator[Hub]:
    """Run the stand-in on ``bind`` (a free port); its URL names ``advertise`` (default: ``bind``)."""
    handler = type("WeightsHub", (_WeightsHub,), {"repos": repos, "log": [], "cut": set()})
    server = ThreadingHTTPServer((bind, 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Hub(f"http://{advertise or bind}:{server.server_address[1]}", handler)
    finally:
        server.shutdown()
        server.server_close()
