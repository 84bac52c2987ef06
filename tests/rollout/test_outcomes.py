"""What apply, rollback and status report when hosts cannot be read or a run stops part-way.

No test host is needed: ``rollout.inventory.run_on`` is replaced by a fake that answers the status
playbook from a table and records every other playbook it is asked to run.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from servespec import rollout
from servespec.rollout.runner import HostResult, Report, RunResult
from servespec.spec.fleet import Fleet, load_fleet
from tests.conftest import run_cli

ARCH = (
    "{params_b: 0.0001, layers: 2, hidden_size: 64, intermediate_size: 128, attention_heads: 4, kv_heads: 2, "
    "head_dim: 16, vocab_size: 300, max_position_embeddings: 2048}"
)
HARDWARE = "hardware: {gpus: {count: 0}, cpus: 2, memory_gib: 8}"


def _write(tmp_path: Path, deployments: dict[str, tuple[list[str], str]]) -> list[Path]:
    """An inventory of h1..h3 (h3 on IPv6) and one spec file per deployment: name -> (hosts, api_key or '')."""
    (tmp_path / "inventory.yaml").write_text(
        "apiVersion: servespec/v1\nkind: Inventory\ndefaults: {ssh_user: root, become: false}\nhosts:\n"
        f"  h1: {{address: 10.0.0.1, {HARDWARE}}}\n"
        f"  h2: {{address: 10.0.0.2, {HARDWARE}}}\n"
        f'  h3: {{address: "2001:db8::10", {HARDWARE}}}\n'
    )
    paths = []
    for name, (hosts, api_key) in deployments.items():
        key = f", api_key: {api_key}" if api_key else ""
        path = tmp_path / f"{name}.yaml"
        path.write_text(
            f"apiVersion: servespec/v1\nkind: Deployment\nmetadata: {{name: {name}}}\ninventory: inventory.yaml\n"
            f"model: {{source: /srv/models/demo.gguf, quantization: gguf, max_model_len: 256, architecture: {ARCH}}}\n"
            f"engine: {{name: llama.cpp, version: b11434}}\nplacement: {{hosts: [{', '.join(hosts)}]}}\n"
            f"serving: {{port: 8080{key}}}\nsuppress:\n  - {{rule: SEC003, reason: test}}\n"
        )
        paths.append(path)
    return paths


def _report(current: int | None = None, revisions: tuple[int, ...] = ()) -> dict[str, Any]:
    state = (
        None
        if current is None
        else {
            "version": 1,
            "deployment": "d",
            "current": current,
            "good": current,
            "revisions": [{"number": n, "digest": "ab" * 6, "status": "good"} for n in revisions],
        }
    )
    return {"state": state, "files": {}, "lock": None, "container": None, "healthy": False}


class FakeHosts:
    """Stands in for ``rollout.inventory.run_on``: answers status.yml from ``reports``, records every other run."""

    def __init__(self, reports: dict[str, Any]) -> None:
        self.reports = reports
        """host -> a status report, "unreachable", or "hostile" (a report that fails the checks)."""
        self.runs: list[tuple[str, list[str]]] = []
        self.variables: dict[str, dict[str, Any]] = {}
        """Each host's variables in the last run that was not status.yml."""
        self.after_run: Callable[[str], None] = lambda playbook: None
        self.passed: list[tuple[str, dict[str, dict[str, Any]]]] = []
        self.refusal = ""
        """When set, every later run raises a RolloutError with this message."""
        """Every run (status.yml too): the playbook and each host's variables."""

    def __call__(
        self, playbook: str, hosts: dict[str, Any], extravars: dict[str, Any], on_event: Any, secrets: Any = ()
    ) -> RunResult:
        if self.refusal:
            raise rollout.RolloutError(self.refusal)
        rollout.inventory_for(hosts)  # what the real one writes first
        # ... and what it refuses: a controller file outside the run's work folder
        rollout.inventory.controller_files(hosts, str(extravars.get(rollout.inventory.WORK) or ""))
        self.passed.append((playbook, {name: extra for name, (_, extra) in hosts.items()}))
        if playbook == "status.yml":
            (name,) = {extra["servespec_deployments"][0] for _, extra in hosts.values()}
            return RunResult("successful", {host: self._status(host, name) for host in hosts})
        self.runs.append((playbook, list(hosts)))
        self.variables = {name: extra for name, (_, extra) in hosts.items()}
        done = {Report.ALLOCATED: {"kind": Report.ALLOCATED, "number": 1}, Report.GOOD: {"kind": Report.GOOD}}
        result = RunResult("successful", {name: HostResult(name, touched=True, reports=dict(done)) for name in hosts})
        self.after_run(playbook)
        return result

    def _status(self, host: str, deployment: str) -> HostResult:
        report = self.reports.get(host, _report())
        if report == "unreachable":
            return HostResult(host, ok=False, unreachable=True, touched=True, error="ssh: no route", stage="connect")
        if report == "hostile":
            report = {**_report(), "state": {"current": "{{ x }}", "revisions": []}}
        return HostResult(host=host, touched=True, reports={Report.STATUS: {"deployments": {deployment: report}}})


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeHosts:
    hosts = FakeHosts({})
    monkeypatch.setattr(rollout.inventory, "run_on", hosts)
    return hosts


def _fleet(paths: list[Path]) -> Fleet:
    return load_fleet(paths)


# B5: rollback never calls an unread host "unchanged" ----------------------------------------------


def test_rollback_reports_unreadable_hosts_as_failed_and_exits_1(tmp_path: Path, fake: FakeHosts) -> None:
    paths = _write(tmp_path, {"d": (["h1", "h2", "h3"], "")})
    fake.reports = {"h1": "unreachable", "h2": "hostile", "h3": _report(2, (1, 2))}
    outcomes = rollout.rollback(_fleet(paths), None, rollout.ApplyOptions())
    results = {o.host: (o.action, o.result) for o in outcomes}
    assert results == {"h1": ("rollback", "unreachable"), "h2": ("rollback", "failed"), "h3": ("rollback", "ok")}
    assert fake.runs == [("rollback.yml", ["h3"])]
    assert "state.json" in next(o.error for o in outcomes if o.host == "h2")

    result = run_cli("rollback", "--yes", str(paths[0]))
    assert result.exit_code == 1, result.output
    assert "unreachable" in result.output and "unchanged" not in result.output


# B5: apply checks every deployment's controller inputs before the first host changes ---------------


def test_apply_refuses_a_later_deployments_secret_before_any_host_changes(
    tmp_path: Path, fake: FakeHosts, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SERVESPEC_TEST_UNSET_KEY", raising=False)
    (tmp_path / "keys").mkdir()
    (tmp_path / "outside").write_text("not a key\n")
    for key in ("{from_env: SERVESPEC_TEST_UNSET_KEY}", f"{{from_file: {tmp_path / 'outside'}}}"):
        paths = _write(tmp_path, {"d1": (["h1"], ""), "d2": (["h2"], key)})
        fleet = _fleet(paths)
        assert not [f for f in fleet.findings if f.severity.value == "error"], [f.to_text() for f in fleet.findings]
        with pytest.raises(rollout.RolloutError) as caught:
            rollout.apply(fleet, rollout.ApplyOptions(secrets_dir=tmp_path / "keys"), tmp_path / "work")
        assert fake.runs == []  # d1 was not rolled out either: "nothing was changed" is true
        assert not isinstance(caught.value, rollout.StoppedAfterChangesError)

        result = run_cli("apply", "--yes", "--secrets-dir", str(tmp_path / "keys"), *map(str, paths))
        assert result.exit_code == 1 and "nothing was changed" in result.output, result.output
        assert fake.runs == []


def test_a_later_error_reports_what_earlier_deployments_changed(
    tmp_path: Path, fake: FakeHosts, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = _write(tmp_path, {"d1": (["h1"], ""), "d2": (["h2"], "{from_env: SERVESPEC_TEST_KEY}")})
    monkeypatch.setenv("SERVESPEC_TEST_KEY", "k3y-value-for-the-test")
    fake.after_run = lambda playbook: os.environ.pop("SERVESPEC_TEST_KEY", None)  # gone once d1 rolled out
    with pytest.raises(rollout.StoppedAfterChangesError) as caught:
        rollout.apply(_fleet(paths), rollout.ApplyOptions(), tmp_path / "work")
    assert caught.value.changed == ["d1"]
    assert [(o.deployment, o.host, o.result) for o in caught.value.outcomes] == [("d1", "h1", "ok")]
    assert fake.runs == [("apply.yml", ["h1"])]

    monkeypatch.setenv("SERVESPEC_TEST_KEY", "k3y-value-for-the-test")
    result = run_cli("apply", "--yes", "--format", "json", *map(str, paths))
    assert result.exit_code == 1, result.output
    assert "nothing was changed" not in result.output
    assert "d1 changed" in result.output and '"deployment": "d1"' in result.output


def test_apply_check_mode_reads_no_controller_inputs(tmp_path: Path, fake: FakeHosts) -> None:
    paths = _write(tmp_path, {"d1": (["h1"], "{from_env: SERVESPEC_TEST_UNSET_KEY}")})
    result = run_cli("apply", "--check", str(paths[0]))
    assert result.exit_code == 0, result.output
    assert "check mode" in result.output and fake.runs == []


# B6: status brackets an IPv6 endpoint ----------------------------------------------------------


def test_status_endpoint_brackets_an_ipv6_address(tmp_path: Path, fake: FakeHosts) -> None:
    paths = _write(tmp_path, {"d": (["h1", "h3"], "")})
    endpoints = {row.host: row.endpoint for row in rollout.status(_fleet(paths))}
    assert endpoints == {"h1": "http://10.0.0.1:8080", "h3": "http://[2001:db8::10]:8080"}


# One definition of the model roots: the controller always passes the inventory's list ------------


def test_apply_passes_the_inventorys_model_roots(tmp_path: Path, fake: FakeHosts) -> None:
    from servespec.spec.models import DEFAULT_MODEL_ROOTS

    paths = _write(tmp_path, {"d": (["h1"], "")})
    rollout.apply(_fleet(paths), rollout.ApplyOptions(), tmp_path / "work")
    assert fake.variables["h1"]["servespec_model_roots"] == list(DEFAULT_MODEL_ROOTS)
    inventory = (tmp_path / "inventory.yaml").read_text()
    (tmp_path / "inventory.yaml").write_text(
        inventory.replace("become: false", "become: false, model_roots: [/srv/models, /w]")
    )
    rollout.apply(_fleet(paths), rollout.ApplyOptions(), tmp_path / "work")
    assert fake.variables["h1"]["servespec_model_roots"] == ["/srv/models", "/w"]


@pytest.mark.parametrize(("command", "playbook"), [("rollback", "rollback.yml"), ("destroy", "destroy.yml")])
def test_a_later_error_in_rollback_or_destroy_names_what_changed(
    tmp_path: Path, fake: FakeHosts, command: str, playbook: str
) -> None:
    paths = _write(tmp_path, {"d1": (["h1"], ""), "d2": (["h2"], "")})
    fake.reports = {"h1": _report(2, (1, 2)), "h2": _report(2, (1, 2))}
    fake.after_run = lambda ran: setattr(fake, "refusal", "h2: refused")  # once d1 ran, d2 cannot
    result = run_cli(command, "--yes", *map(str, paths))
    assert result.exit_code == 1, result.output
    assert fake.runs == [(playbook, ["h1"])]
    assert "nothing was changed" not in result.output
    assert "stopped after d1 changed" in result.output
