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
