"""placement.replicas_per_host: the status module's replica list as the controller checks it, and deploy status."""

from __future__ import annotations

from typing import Any

from servespec.rollout.progress import replica_line
from servespec.rollout.reported import checked_report
from servespec.rollout.state import Status

GOOD = {
    "index": 1,
    "name": "servespec-pair-r1",
    "status": "running",
    "started_at": "2026-12-04T13:00:00.123456789Z",
    "revision": "0123456789ab",
    "port": 18081,
    "healthy": True,
}


def _report(*replicas: dict[str, Any]) -> dict[str, Any]:
    return {"state": None, "files": {}, "lock": None, "container": None, "healthy": True, "replicas": list(replicas)}


def test_a_well_formed_replica_list_is_kept() -> None:
    checked, problem = checked_report(_report(GOOD))
    assert problem == ""
    assert checked["replicas"] == [GOOD]


def test_a_replica_list_a_host_could_forge_is_refused() -> None:
    for bad in (
        {**GOOD, "name": "servespec-pair-r1; rm -rf /"},
        {**GOOD, "name": "other-container"},
        {**GOOD, "index": True},
        {**GOOD, "index": 99},
        {**GOOD, "port": 70000},
        {**GOOD, "status": "dancing"},
        {**GOOD, "healthy": "yes"},
        {**GOOD, "revision": "not hex"},
    ):
        checked, problem = checked_report(_report(bad))
        assert problem and ("replicas" in problem or "container" in problem), (bad, problem)
        assert checked["healthy"] is False and "replicas" not in checked
    assert checked_report(_report(*[GOOD] * 17))[1]


def test_deploy_status_lists_each_replica() -> None:
    row = Status("pair", "host1", 2, True, "http://10.0.0.1:8080", None, "running", replicas=[GOOD])
    assert row.to_json()["replicas"] == [GOOD]
    assert "replicas" not in Status("one", "host1", 2, True, "http://10.0.0.1:8080", None, "running").to_json()
    assert replica_line(GOOD) == "r1 running rev 0123456789ab port 18081 healthy"
