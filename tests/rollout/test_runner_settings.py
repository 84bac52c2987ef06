"""How the controller runs Ansible: one SSH connection per host, forks sized to the batch (issue 13 item 4)."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

from servespec.rollout import runner


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """ansible_runner.run replaced by a recorder of what the controller asks for."""
    seen: dict[str, Any] = {}

    def run(**kwargs: Any) -> Any:
        seen.update(kwargs)
        return types.SimpleNamespace(status="successful")

    monkeypatch.setitem(sys.modules, "ansible_runner", types.SimpleNamespace(run=run))
    return seen


def _inventory(count: int) -> dict[str, Any]:
    hosts = {f"h{i}": {"ansible_host": f"10.0.0.{i}"} for i in range(count)}
    return {"all": {"children": {"servespec_targets": {"hosts": hosts}}}}


def test_connection_sharing_is_on_by_default(captured: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANSIBLE_SSH_ARGS", raising=False)
    runner.run_playbook("status.yml", _inventory(2), {})
    env = captured["envvars"]
    assert env["ANSIBLE_PIPELINING"] == "True"
    assert "ControlMaster=auto" in env["ANSIBLE_SSH_ARGS"] and "ControlPersist=60s" in env["ANSIBLE_SSH_ARGS"]


def test_the_users_ssh_args_keep_connection_sharing(captured: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANSIBLE_SSH_ARGS", "-o ProxyJump=bastion -o ControlPersist=5m")
    runner.run_playbook("status.yml", _inventory(1), {})
    args = captured["envvars"]["ANSIBLE_SSH_ARGS"].split()
    # The user's options come first (ssh keeps the first value: their 5m wins), sharing follows.
    assert args[:4] == ["-o", "ProxyJump=bastion", "-o", "ControlPersist=5m"]
    assert "ControlMaster=auto" in args


@pytest.mark.parametrize(
    ("hosts", "forks", "serial", "expected"),
    [(32, 32, 32, 32), (32, 32, 4, 4), (32, 32, None, 32), (3, 10, None, 3), (5, 5, True, 5), (0, 5, None, 1)],
)
def test_forks_are_sized_to_the_batch(
    captured: dict[str, Any], hosts: int, forks: int, serial: object, expected: int
) -> None:
    extravars = {} if serial is None else {"servespec_serial": serial}
    runner.run_playbook("apply.yml", _inventory(hosts), extravars, forks=forks)
    assert captured["forks"] == expected
