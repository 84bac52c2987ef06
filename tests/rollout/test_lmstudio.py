"""LM Studio's host-native unit applied to a real systemd host, with a STAND-IN ``lms``.

The test host is tests/hosts/Dockerfile.host-systemd: Debian with systemd as PID 1 and sshd, no
Docker engine (a host-native unit runs no container). LM Studio itself is not installed: the
STAND-IN ``tests/hosts/standin/lms`` (labelled as such; no model, no inference) is copied to where
LM Studio's installer puts ``lms`` for root. It records each command line it runs and answers
``/v1/models`` and one completion, so the test sees what the rendered unit made systemd run.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, run_cli
from tests.rollout.conftest import PROJECT, RemoteHost, docker_available
from tests.rollout.helpers import container_address, ssh_ready

sys.path.insert(0, str(REPO / "tests" / "hosts"))
import images  # type: ignore[import-not-found]  # tests/hosts/images.py builds the test-host images

pytestmark = pytest.mark.slow

STANDIN = REPO / "tests" / "hosts" / "standin" / "lms"
USER = "lmstudio"
LMS = f"/home/{USER}/.lmstudio/bin/lms"
NAME = "lms-chat"
UNIT = f"servespec-{NAME}.service"


@pytest.fixture
def systemd_host(ssh_key: Path) -> Iterator[RemoteHost]:
    """A fresh systemd test host (removed afterwards)."""
    if not docker_available():
        pytest.skip("no Docker engine: run scripts/test (it installs and starts one)")
    image = images.test_host_systemd_image()
    container = f"{PROJECT}-lmstudio-host"
    subprocess.run(["docker", "rm", "-f", container], capture_output=True, check=False)
    key = "SERVESPEC_TEST_PUBKEY=" + ssh_key.with_suffix(".pub").read_text().strip()
    # systemd as PID 1: its own /run and /run/lock, the machine's cgroups read-only (cgroup v1 and v2)
    tmpfs = ["--tmpfs", "/run", "--tmpfs", "/run/lock", "--tmpfs", "/tmp", "-v", "/sys/fs/cgroup:/sys/fs/cgroup:ro"]
    confined = [
        "--cap-add",
        "SYS_ADMIN",
        "--security-opt",
        "seccomp=unconfined",
        "--security-opt",
        "apparmor=unconfined",
    ]
    subprocess.run(
        ["docker", "run", "-d", "--name", container, "--hostname", "lmshost", *tmpfs, *confined, "-e", key, image],
        check=True,
        capture_output=True,
    )
    try:
        host = RemoteHost("lmshost", container, container_address(container))
        _wait(lambda: ssh_ready(host.address), 180)  # systemd boots slowly on a loaded test machine
        _wait(
            lambda: host.sh("systemctl is-system-running || true", check=False).strip() in ("running", "degraded"), 90
        )
        yield host
    finally:
        subprocess.run(["docker", "rm", "-f", container], capture_output=True, check=False)


def _wait(check: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.5)
    raise AssertionError("condition not met in time")


def _install_standin(host: RemoteHost) -> None:
    """The user LM Studio is installed for, and the stand-in where its installer puts lms (its state folder theirs)."""
    host.sh(f"useradd --create-home --shell /usr/sbin/nologin {USER}")
    host.sh(f"mkdir -p /home/{USER}/.lmstudio/bin /var/lib/servespec-standin")
    subprocess.run(["docker", "cp", str(STANDIN), f"{host.container}:{LMS}"], check=True, capture_output=True)
    host.sh(f"chmod 755 {LMS} && chown -R {USER}:{USER} /home/{USER}/.lmstudio /var/lib/servespec-standin")


def _write(tmp_path: Path, host: RemoteHost, key: Path, env: str = "{}", timeout: str = "2m") -> Path:
    (tmp_path / "inventory.yaml").write_text(
        f"""apiVersion: servespec/v1
kind: Inventory
defaults: {{ssh_user: root, ssh_key: {key}, become: false}}
hosts:
  {host.name}:
    address: {host.address}
    hardware: {{gpus: {{count: 0}}, cpus: 2, memory_gib: 8}}
"""
    )
    spec = tmp_path / "lms.yaml"
    spec.write_text(
        f"""apiVersion: servespec/v1
kind: Deployment
metadata: {{name: {NAME}}}
inventory: inventory.yaml
model:
  source: google/gemma-3-270m
  quantization: gguf
  gguf_type: Q4_K_M
  max_model_len: 4096
  architecture: {{params_b: 0.27, layers: 18, hidden_size: 640, attention_heads: 4, kv_heads: 1, head_dim: 256,
                 max_position_embeddings: 32768}}
engine:
  name: lmstudio
  version: "07b7252"
  options: {{gpu: "off", parallel: 2}}
  env: {env}
placement: {{hosts: [{host.name}]}}
serving: {{port: 1234, model_name: gemma-3-270m}}
rollout: {{health_timeout: {timeout}}}
"""
    )
    return spec


def _rendered(tmp_path: Path, spec: Path, host: RemoteHost) -> tuple[str, dict[str, Any]]:
    out = tmp_path / f"rendered-{len(list(tmp_path.glob('rendered-*')))}"
    result = run_cli("render", str(spec), "-o", str(out))
    assert result.exit_code == 0, result.output
    folder = out / NAME / host.name
    return (folder / UNIT).read_text(), json.loads((folder / "lms-commands.json").read_text())


def _recorded(host: RemoteHost) -> list[list[str]]:
    text = host.sh("cat /var/lib/servespec-standin/lms.jsonl 2>/dev/null || true", check=False)
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _active(host: RemoteHost) -> str:
    return host.sh(f"systemctl show --property=ActiveState,ActiveEnterTimestampMonotonic {UNIT}").strip()


def test_unit_applied_verified_unchanged_and_restored(tmp_path: Path, systemd_host: RemoteHost, ssh_key: Path) -> None:
    host = systemd_host
    spec = _write(tmp_path, host, ssh_key)

    # Without lms on the host, preflight says so and nothing is installed.
    refused = run_cli("apply", str(spec), "--yes", "--format", "json")
    assert refused.exit_code == 1
    assert f"lms not found at {LMS}" in refused.output, refused.output
    assert host.sh(f"test -e /etc/systemd/system/{UNIT} && echo yes || echo no").strip() == "no"

    _install_standin(host)
    applied = run_cli("apply", str(spec), "--yes", "--format", "json")
    assert applied.exit_code == 0, applied.output
    unit_text, native = _rendered(tmp_path, spec, host)
    assert host.sh(f"cat /etc/systemd/system/{UNIT}") == unit_text
    assert "ActiveState=active" in _active(host)
    commands = [argv[1:] for argv in native["commands"]]
    assert _recorded(host) == commands  # daemon up, load with its options, server start: as rendered
    # every lms command and the daemon ran as the dedicated user, none as root
    assert host.sh("stat -c %U /var/lib/servespec-standin/lms.jsonl").strip() == USER
    owners = host.sh("ps -eo user:32=,args= | grep '[.]lmstudio/bin/lms' | cut -d' ' -f1", check=False).split()
    assert owners and set(owners) == {USER}, owners
    assert commands[1][:2] == ["load", "google/gemma-3-270m"] and "--gpu" in commands[1]
    models = json.loads(host.sh("curl -sf http://127.0.0.1:1234/v1/models"))
    assert [m["id"] for m in models["data"]] == ["gemma-3-270m"]

    status = run_cli("status", str(spec), "--format", "json")
    assert status.exit_code == 0, status.output
    assert json.loads(status.output)["hosts"][0]["healthy"] is True  # the unit is active and /v1/models answers

    # The same spec again: nothing restarts.
    before = _active(host)
    again = run_cli("apply", str(spec), "--yes", "--format", "json")
    assert again.exit_code == 0, again.output
    assert '"result": "unchanged"' in again.output, again.output
    assert _active(host) == before
    assert _recorded(host) == commands

    # A revision whose health check fails: the previous unit is put back and serves again.
    _write(tmp_path, host, ssh_key, env="{STANDIN_LMS_HEALTH: fail}", timeout="10s")
    failed = run_cli("apply", str(spec), "--yes", "--format", "json")
    assert failed.exit_code == 1, failed.output
    assert '"result": "rolled back"' in failed.output, failed.output
    assert host.sh(f"cat /etc/systemd/system/{UNIT}") == unit_text
    assert "ActiveState=active" in _active(host)
    assert json.loads(host.sh("curl -sf http://127.0.0.1:1234/v1/models"))["data"][0]["id"] == "gemma-3-270m"
    state = json.loads(host.sh(f"cat /var/lib/servespec/{NAME}/state.json"))
    # revision 1 is the apply preflight refused, 2 the good one, 3 the unhealthy one
    assert state["current"] == 2 and state["good"] == 2
    assert [r["status"] for r in state["revisions"]] == ["failed", "good", "failed"]
    recorded = _recorded(host)
    assert recorded[: len(commands)] == commands and recorded[-len(commands) :] == commands  # restored revision

    # deploy destroy stops and removes the unit.
    destroyed = run_cli("destroy", str(spec), "--yes")
    assert destroyed.exit_code == 0, destroyed.output
    assert host.sh(f"test -e /etc/systemd/system/{UNIT} && echo yes || echo no").strip() == "no"
    assert (
        host.sh("curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:1234/v1/models || true", check=False) == "000"
    )
