"""rollout.strategy auto on the controller, with faked hosts: what the hosts are asked and what each is told to do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from servespec import rollout
from servespec.rollout.runner import HostResult, Report
from servespec.rollout.surge import slot_ports
from tests.rollout.test_outcomes import FakeHosts, _fleet, _report, _write, fake

__all__ = ["fake"]  # the fixture, imported for the tests below


def _auto(paths: list[Path]) -> None:
    for path in paths:
        path.write_text(
            path.read_text().replace("serving: {port: 8080}", "serving: {port: 8080}\nrollout: {strategy: auto}")
        )


def _with_capacity(fake: FakeHosts, capacity: dict[str, dict[str, Any]]) -> None:
    """Each host's status run also returns ``capacity[host]`` as servespec_capacity would."""
    answer = fake._status

    def status(host: str, deployment: str) -> HostResult:
        result = answer(host, deployment)
        if host in capacity:
            result.reports[Report.CAPACITY] = {"kind": Report.CAPACITY, **capacity[host]}
        return result

    fake._status = status  # type: ignore[method-assign]


def test_each_host_gets_the_path_the_plan_chose(tmp_path: Path, fake: FakeHosts) -> None:
    paths = _write(tmp_path, {"d": (["h1", "h2", "h3"], "")})
    _auto(paths)
    fake.reports = {"h1": _report(1, (1,)), "h2": _report(1, (1,)), "h3": _report(1, (1,))}
    free = {"gpus": None, "mem_available_mib": 6000}
    _with_capacity(
        fake,
        {
            "h1": {**free, "proxies": {"d": True}},
            "h2": {**free, "proxies": {"d": False}},  # the first auto rollout: the proxy is not there yet
            "h3": {**free, "mem_available_mib": "lots", "proxies": {"d": True}},  # not what servespec writes
        },
    )
    actions, _ = rollout.apply(_fleet(paths), rollout.ApplyOptions(), tmp_path / "work")
    status = [hosts for playbook, hosts in fake.passed if playbook == "status.yml"]
    assert all(extra.get("servespec_capacity") is True for hosts in status for extra in hosts.values())
    chosen = {a.host: a.strategy.path if a.strategy else None for a in actions}
    assert chosen == {"h1": "surge", "h2": "in_place", "h3": "in_place"}
    told = fake.variables
    assert told["h1"]["servespec_rollout_path"] == "surge" and told["h2"]["servespec_rollout_path"] == "in_place"
    assert told["h1"]["servespec_proxy_port"] == 8080
    assert told["h1"]["servespec_proxy_ports"] == [18080, 28080]
    assert told["h1"]["servespec_proxy_image"] == "haproxy:2.6"


def test_rolling_asks_no_capacity_and_passes_no_path(tmp_path: Path, fake: FakeHosts) -> None:
    paths = _write(tmp_path, {"d": (["h1"], "")})
    fake.reports = {"h1": _report(1, (1,))}
    rollout.apply(_fleet(paths), rollout.ApplyOptions(), tmp_path / "work")
    assert all("servespec_capacity" not in extra for _, hosts in fake.passed for extra in hosts.values())
    assert fake.variables["h1"]["servespec_rollout_path"] == ""
    assert fake.variables["h1"]["servespec_proxy_port"] == 0


def test_a_rollback_of_auto_restores_in_place_behind_the_proxy(tmp_path: Path, fake: FakeHosts) -> None:
    paths = _write(tmp_path, {"d": (["h1"], "")})
    _auto(paths)
    archive = tmp_path / "haproxy.tar"
    archive.write_bytes(b"an image archive")
    auto = "{strategy: auto, proxy_image_archive: haproxy.tar}"
    paths[0].write_text(paths[0].read_text().replace("{strategy: auto}", auto))
    fake.reports = {"h1": _report(2, (1, 2))}
    rollout.rollback(_fleet(paths), None, rollout.ApplyOptions())
    told = fake.variables["h1"]
    assert told["servespec_existing_revision"] == 1
    assert told["servespec_rollout_path"] == "in_place" and told["servespec_proxy_port"] == 8080
    # The proxy's archive is read through a link in the rollback's own work folder (the role reads nothing else).
    linked = Path(told["servespec_proxy_image_archive"])  # the folder is gone once rollback returns
    assert linked.name == "haproxy.tar" and linked.parents[2].name.startswith("servespec-rollback-")


def test_slot_ports_stay_in_range() -> None:
    assert slot_ports(8000) == (18000, 28000)
    assert slot_ports(60000) == (40000, 50000)
