"""Rollout faults on real hosts: health timeout, an unreachable host, two applies at once,
an interrupted apply, and an unchanged re-apply. The engine is the STAND-IN image (it starts
in a second and its health can be held back), which is all these mechanics need."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.rollout.conftest import RemoteHost, images, wait_for
from tests.rollout.helpers import get, standin_spec

pytestmark = pytest.mark.slow
KEY = "fault-secret"


@pytest.fixture
def archive() -> Path:
    images.standin_image()
    return images.archive("servespec-standin:latest")


@pytest.fixture
def workdir(tmp_path: Path, inventory: Path, clean_hosts: list[RemoteHost], monkeypatch: pytest.MonkeyPatch) -> Path:
    for host in clean_hosts:
        host.sh("mkdir -p /srv/models && echo stand-in > /srv/models/demo.gguf")
    monkeypatch.setenv("E2E_KEY", KEY)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _env(host: RemoteHost) -> dict[str, str]:
    status, record = get(f"http://{host.address}:8080/servespec-standin/record")
    return record["env"] if status == 200 else {}


def _state(host: RemoteHost, name: str) -> dict[str, object]:
    text = host.sh(f"cat /var/lib/servespec/{name}/state.json 2>/dev/null || true", check=False)
    return json.loads(text) if text.strip() else {}


def test_health_timeout_restores_the_previous_revision(
    workdir: Path, archive: Path, clean_hosts: list[RemoteHost]
) -> None:
    host = clean_hosts[0]
    spec = standin_spec(workdir / "s.yaml", "faulty", [host.name], archive, env="{GENERATION: one}")
    assert run_cli("apply", str(spec), "--yes").exit_code == 0
    standin_spec(spec, "faulty", [host.name], archive, env="{GENERATION: two, STANDIN_UNHEALTHY: '1'}", timeout="15s")
    result = run_cli("apply", str(spec), "--yes", "--format", "json")
    assert result.exit_code == 1
    assert '"result": "rolled back"' in result.output and "not healthy after 15 s" in result.output
    assert _env(host)["GENERATION"] == "one"
    state = _state(host, "faulty")
    assert state["current"] == 1 and state["good"] == 1
    assert [r["status"] for r in state["revisions"]] == ["good", "failed"]  # type: ignore[index]


def test_unreachable_host_is_reported_and_the_rest_applied(
    workdir: Path, archive: Path, clean_hosts: list[RemoteHost]
) -> None:
    names = [h.name for h in clean_hosts]
    clean_hosts[1].sh("iptables -I INPUT -p tcp --dport 22 -j REJECT")  # SSH refused; the host keeps running
    spec = standin_spec(workdir / "s.yaml", "partial", names, archive)
    result = run_cli("apply", str(spec), "--yes", "--format", "json")
    assert result.exit_code == 1
    assert '"result": "unreachable"' in result.output, result.output
    assert _state(clean_hosts[0], "partial").get("current") == 1, result.output
    assert _state(clean_hosts[2], "partial").get("current") == 1, result.output
    assert _state(clean_hosts[1], "partial") == {}


def test_second_concurrent_apply_is_refused_by_the_lock(
    workdir: Path, archive: Path, clean_hosts: list[RemoteHost]
) -> None:
    host = clean_hosts[0]
    spec = standin_spec(workdir / "s.yaml", "locked", [host.name], archive, env="{STANDIN_HEALTH_DELAY: '15'}")
    first: list[object] = []
    thread = threading.Thread(target=lambda: first.append(run_cli("apply", str(spec), "--yes")), daemon=True)
    thread.start()
    wait_for(lambda: host.sh("test -d /var/lib/servespec/locked/lock && echo y", check=False).strip() == "y", 60)
    second = run_cli("apply", str(spec), "--yes", "--format", "json")
    thread.join(timeout=180)
    assert second.exit_code == 1
    assert "locked by another apply" in second.output
    assert first and first[0].exit_code == 0  # type: ignore[attr-defined]
    assert _state(host, "locked")["good"] == 1


def test_interrupted_apply_converges_on_the_next_apply(
    workdir: Path, archive: Path, clean_hosts: list[RemoteHost]
) -> None:
    host = clean_hosts[0]
    spec = standin_spec(workdir / "s.yaml", "interrupted", [host.name], archive, env="{STANDIN_HEALTH_DELAY: '30'}")
    deploy = Path(sys.executable).parent / "deploy"
    process = subprocess.Popen(
        [str(deploy), "apply", str(spec), "--yes", "--format", "json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env={**os.environ, "E2E_KEY": KEY},
    )
    wait_for(lambda: host.container_json("servespec-interrupted") is not None, 120)
    os.killpg(process.pid, signal.SIGINT)
    process.wait(timeout=60)
    assert process.returncode != 0
    standin_spec(spec, "interrupted", [host.name], archive)
    result = run_cli("apply", str(spec), "--yes", "--format", "json")
    assert result.exit_code == 0, result.output
    state = _state(host, "interrupted")
    assert state["current"] == state["good"]
    assert get(f"http://{host.address}:8080/health")[0] == 200


def test_unchanged_reapply_restarts_nothing(workdir: Path, archive: Path, clean_hosts: list[RemoteHost]) -> None:
    names = [h.name for h in clean_hosts[:2]]
    spec = standin_spec(workdir / "s.yaml", "steady", names, archive)
    assert run_cli("apply", str(spec), "--yes").exit_code == 0
    started = [h.container_json("servespec-steady")["State"]["StartedAt"] for h in clean_hosts[:2]]  # type: ignore[index]
    time.sleep(1)
    again = run_cli("apply", str(spec), "--yes", "--format", "json")
    assert again.exit_code == 0
    assert again.output.count('"result": "unchanged"') == 2
    assert [h.container_json("servespec-steady")["State"]["StartedAt"] for h in clean_hosts[:2]] == started  # type: ignore[index]


def test_rollback_to_an_earlier_revision_and_destroy(
    workdir: Path, archive: Path, clean_hosts: list[RemoteHost]
) -> None:
    host = clean_hosts[0]
    spec = standin_spec(workdir / "s.yaml", "history", [host.name], archive, env="{GENERATION: one}")
    assert run_cli("apply", str(spec), "--yes").exit_code == 0
    standin_spec(spec, "history", [host.name], archive, env="{GENERATION: two}")
    assert run_cli("apply", str(spec), "--yes").exit_code == 0
    assert _env(host)["GENERATION"] == "two"
    back = run_cli("rollback", str(spec), "--to", "1", "--yes")
    assert back.exit_code == 0, back.output
    assert _env(host)["GENERATION"] == "one"
    assert _state(host, "history")["current"] == 1
    gone = run_cli("destroy", str(spec), "--yes")
    assert gone.exit_code == 0, gone.output
    assert host.container_json("servespec-history") is None
    assert _state(host, "history") == {}
    assert host.sh("test -e /etc/servespec/history && echo left || echo gone").strip() == "gone"
