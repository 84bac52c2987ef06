"""What a host reports, type-checked before the controller uses any of it.

A compromised host controls its ``state.json``, its lock's ``holder.json`` and everything
the status module returns. The controller copies some of those values into the next run
(revision numbers on rollback, a stale lock's run id) and prints others (digests, file
names), so each is checked against the shape servespec itself writes: integer revisions,
hex digests and run ids, known status words, plain file names. A report that does not fit
is dropped whole and named as the host's error; nothing of it is reused.
"""

from __future__ import annotations

import re
from typing import Any

RUN_ID = re.compile(r"^[0-9a-f]{12}$")
DIGEST = re.compile(r"^[0-9a-f]{1,64}$")
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?(Z|[+-]\d\d:\d\d)?$")
FILE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$")
CONTROLLER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$")
REVISION_STATUS = ("pending", "good", "failed")
CONTAINER_STATUS = ("created", "restarting", "running", "removing", "paused", "exited", "dead", "missing")
MAX_FILE_CHARS = 4 << 20
MAX_REVISIONS = 10_000


class ReportError(ValueError):
    """A host-reported value that servespec never writes (the message names the field, never its value)."""


def _revision_number(value: Any, field: str) -> int | None:
    # bool is an int in Python; a host writing true is as wrong as one writing "1".
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 2**31:
        raise ReportError(f"{field} is not a revision number")
    return value


def _optional(value: Any, pattern: re.Pattern[str], field: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not pattern.match(value):
        raise ReportError(f"{field} is malformed")
    return value


def _revision(entry: Any) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise ReportError("revisions[] is not an object")
    number = _revision_number(entry.get("number"), "revisions[].number")
    if number is None:
        raise ReportError("revisions[].number is missing")
    status = entry.get("status")
    if status not in REVISION_STATUS:
        raise ReportError("revisions[].status is not one of " + ", ".join(REVISION_STATUS))
    out: dict[str, Any] = {"number": number, "status": status}
    out["digest"] = _optional(entry.get("digest"), DIGEST, "revisions[].digest") or ""
    for key in ("created", "since", "failed_at"):
        if entry.get(key) is not None:
            out[key] = _optional(entry.get(key), TIMESTAMP, f"revisions[].{key}")
    return out


def checked_state(state: Any) -> dict[str, Any] | None:
    """A ``state.json`` rebuilt from its checked fields (None when the host has none)."""
    if state is None:
        return None
    if not isinstance(state, dict):
        raise ReportError("it is not an object")
    revisions = state.get("revisions", [])
    if not isinstance(revisions, list) or len(revisions) > MAX_REVISIONS:
        raise ReportError("revisions is not a list")
    return {
        "current": _revision_number(state.get("current"), "current"),
        "good": _revision_number(state.get("good"), "good"),
        "revisions": [_revision(entry) for entry in revisions],
    }


def checked_lock(lock: Any) -> dict[str, Any] | None:
    """A lock holder with a host name, an integer pid and a 12-hex run id (None when not locked)."""
    if lock is None:
        return None
    if not isinstance(lock, dict):
        raise ReportError("it is not an object")
    pid = lock.get("pid")
    if isinstance(pid, bool) or not isinstance(pid, int) or pid < 0:
        raise ReportError("pid is not a process id")
    return {
        "controller": _optional(lock.get("controller"), CONTROLLER, "controller"),
        "pid": pid,
        "run_id": _optional(lock.get("run_id"), RUN_ID, "run_id"),
        "since": _optional(lock.get("since"), TIMESTAMP, "since"),
    }


def _files(files: Any) -> dict[str, str]:
    if files is None:
        return {}
    if not isinstance(files, dict):
        raise ReportError("files is not an object")
    for name, text in files.items():
        if not isinstance(name, str) or not FILE_NAME.match(name):
            raise ReportError("files has a name servespec never writes")
        if not isinstance(text, str) or len(text) > MAX_FILE_CHARS:
            raise ReportError("files has a value that is not text of a bounded size")
    return dict(files)


def _container(container: Any) -> dict[str, Any] | None:
    if container is None:
        return None
    if not isinstance(container, dict) or container.get("status") not in CONTAINER_STATUS:
        raise ReportError("container.status is not a Docker status")
    return {
        "status": container["status"],
        "started_at": _optional(container.get("started_at"), TIMESTAMP, "container.started_at"),
    }


REPLICA_NAME = re.compile(r"^servespec-[A-Za-z0-9][A-Za-z0-9_.-]{0,120}-r\d{1,2}$")
MAX_REPLICAS = 16
"""At most spec.models.MAX_REPLICAS_PER_HOST replicas on one host."""


def _replicas(replicas: Any) -> list[dict[str, Any]]:
    """``placement.replicas_per_host``'s replicas as the status module reports them ([] for one engine)."""
    if replicas is None:
        return []
    if not isinstance(replicas, list) or len(replicas) > MAX_REPLICAS:
        raise ReportError("replicas is not a list of at most 16 replicas")
    out = []
    for entry in replicas:
        if not isinstance(entry, dict):
            raise ReportError("replicas has an entry that is not an object")
        index, name, port = entry.get("index"), entry.get("name"), entry.get("port")
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < MAX_REPLICAS:
            raise ReportError("replicas[].index is not a replica index")
        if not isinstance(name, str) or not REPLICA_NAME.match(name):
            raise ReportError("replicas[].name is not a replica's container name")
        if port is not None and (isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536):
            raise ReportError("replicas[].port is not a port")
        if not isinstance(entry.get("healthy"), bool):
            raise ReportError("replicas[].healthy is not a boolean")
        container = _container({"status": entry.get("status"), "started_at": entry.get("started_at")}) or {}
        out.append(
            {
                "index": index,
                "name": name,
                **container,
                "revision": _optional(entry.get("revision"), DIGEST, "replicas[].revision"),
                "port": port,
                "healthy": entry["healthy"],
            }
        )
    return out


def checked_report(report: Any) -> tuple[dict[str, Any], str]:
    """The status module's report of one deployment, checked; and the problem ('' when it is fine).

    A report that fails any check comes back empty (nothing deployed, not healthy): the
    caller must not act on it and reports the problem for that host.
    """
    empty: dict[str, Any] = {"state": None, "files": {}, "lock": None, "container": None, "healthy": False}
    if not report:
        return empty, ""
    if not isinstance(report, dict):
        return empty, "status report: it is not an object"
    checks = (
        ("state.json", "state", checked_state),
        ("lock holder.json", "lock", checked_lock),
        ("status report", "files", _files),
        ("status report", "container", _container),
        ("status report", "replicas", _replicas),
    )
    out: dict[str, Any] = {}
    for label, key, check in checks:
        try:
            out[key] = check(report.get(key))
        except ReportError as err:
            return empty, f"{label} on the host is not what servespec writes: {err}"
    healthy = report.get("healthy", False)
    if not isinstance(healthy, bool):
        return empty, "status report on the host is not what servespec writes: healthy is not a boolean"
    out["healthy"] = healthy
    return out, ""


MAX_BYTES = 1 << 60
"""Largest byte or file count a weights report may hold (an exbibyte: more is no real model cache)."""
REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}(/[A-Za-z0-9][A-Za-z0-9._-]{0,95})?$")
REVISION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,254}$")
ARCHIVE_NAME = re.compile(r"^[^/\x00-\x1f\x7f]{1,255}$")
"""The model archive's file name as the controller sent it (one path step, no control character)."""
WEIGHTS_ACTIONS = ("check", "fetch", "unpack")
HUB_COUNTS = ("files", "cached_files", "cached_bytes", "download_bytes", "partial_bytes")
"""What servespec_weights always reports (``downloaded_bytes`` too, after a fetch)."""
ARCHIVE_COUNTS = ("archive_bytes", "unpacked_bytes")
"""What servespec_weights_archive always reports, with the archive's file name and ``present``."""


def _count(value: Any, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < MAX_BYTES:
        raise ReportError(f"{field} is not a count")
    return value


def checked_weights(report: Any) -> dict[str, Any]:
    """A weights report (``Report.WEIGHTS``) rebuilt from its checked fields; ReportError names the first bad one.

    Counts are integers in ``[0, MAX_BYTES)`` (never a string, a bool, a float or NaN), names
    follow their grammars, and a missing field is as wrong as a wrong-typed one.
    """
    if not isinstance(report, dict):
        raise ReportError("it is not an object")
    out: dict[str, Any] = {"kind": report.get("kind")}
    out["repo"] = _optional(report.get("repo"), REPO_ID, "repo")
    out["commit"] = _optional(report.get("commit"), REVISION, "commit")
    if out["repo"] is None or out["commit"] is None:
        raise ReportError("repo or commit is missing")
    if report.get("action") not in WEIGHTS_ACTIONS:
        raise ReportError("action is not one of " + ", ".join(WEIGHTS_ACTIONS))
    out["action"] = report["action"]
    if "archive" in report:
        out["archive"] = _optional(report.get("archive"), ARCHIVE_NAME, "archive")
        if not isinstance(report.get("present"), bool):
            raise ReportError("present is not a boolean")
        out["present"] = report["present"]
        counts: tuple[str, ...] = ARCHIVE_COUNTS
    else:
        counts = HUB_COUNTS + (("downloaded_bytes",) if "downloaded_bytes" in report else ())
    out |= {key: _count(report.get(key), key) for key in counts}
    return out
