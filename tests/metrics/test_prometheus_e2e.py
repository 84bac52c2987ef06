"""A real Prometheus scrapes a real llama.cpp through the scrape configuration `deploy render --monitoring` writes.

llama-server (the b11434 CPU image the rollout tests build, ``servespec-llama.cpp:b11434-cpu``)
serves the random-weight demo GGUF with ``--metrics`` on a loopback port; the spec names that
port and an inventory host at 127.0.0.1, so the rendered file_sd target is the running server.
Debian's ``prometheus`` runs the rendered ``prometheus.yml`` (after ``promtool check config``),
and one engine metric is read back through the Prometheus HTTP API with its deployment labels.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO, run_cli

pytestmark = pytest.mark.slow
IMAGE = "servespec-llama.cpp:b11434-cpu"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as reply:
        return bytes(reply.read()).decode()


def _wait(url: str, seconds: float) -> str:
    deadline, last = time.monotonic() + seconds, ""
    while time.monotonic() < deadline:
        try:
            return _get(url)
        except OSError as err:
            last = str(err)
            time.sleep(0.5)
    raise AssertionError(f"{url} did not answer in {seconds}s: {last}")


@pytest.fixture
def llama_server(tmp_path: Path) -> Iterator[int]:
    if (
        shutil.which("docker") is None
        or subprocess.run(["docker", "image", "inspect", IMAGE], capture_output=True).returncode
    ):
        pytest.skip(f"docker image {IMAGE} is not built (tests/rollout builds it)")
    models = tmp_path / "models"
    models.mkdir()
    subprocess.run([sys.executable, str(REPO / "scripts" / "make_demo_gguf.py"), str(models / "demo.gguf")], check=True)
    port, name = _free_port(), f"servespec-metrics-e2e-{tmp_path.name[-12:]}"
    run = ["docker", "run", "-d", "--rm", "--name", name, "-p", f"127.0.0.1:{port}:8080", "-v", f"{models}:/m:ro"]
    run += [IMAGE, "-m", "/m/demo.gguf", "--host", "0.0.0.0", "--port", "8080", "--metrics", "-t", "1", "-c", "512"]
    subprocess.run(run, check=True, capture_output=True)
    try:
        _wait(f"http://127.0.0.1:{port}/health", 60)
        yield port
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True)


def _spec(folder: Path, port: int) -> Path:
    (folder / "inventory.yaml").write_text(
        "apiVersion: servespec/v1\nkind: Inventory\nhosts:\n  local:\n    address: 127.0.0.1\n"
        "    hardware: {gpus: {count: 0}, cpus: 2, memory_gib: 4}\n"
    )
    text = (REPO / "specs" / "examples" / "llama.cpp.yaml").read_text()
    text = text.replace("inventory: inventory/fleet.yaml", "inventory: inventory.yaml")
    text = text.replace("hosts: [cpu-01]", "hosts: [local]").replace("port: 8080", f"port: {port}")
    text = text.replace("    parallel: 2\n", "    parallel: 2\n    metrics: true\n")
    (folder / "tiny.yaml").write_text(text)
    return folder / "tiny.yaml"


def test_prometheus_reads_a_llama_cpp_metric_through_the_rendered_config(tmp_path: Path, llama_server: int) -> None:
    prometheus, promtool = shutil.which("prometheus"), shutil.which("promtool")
    if prometheus is None or promtool is None:
        pytest.skip("Debian's prometheus package is not installed (scripts/setup.sh ensure_promtool)")
    spec = _spec(tmp_path, llama_server)
    result = run_cli("render", str(spec), "-o", str(tmp_path / "out"), "--monitoring", str(tmp_path / "mon"))
    assert result.exit_code == 0, result.output
    mon = tmp_path / "mon"
    text = (mon / "prometheus.yml").read_text().replace("scrape_interval: 15s", "scrape_interval: 1s")
    (mon / "prometheus.yml").write_text(text)  # scrape each second so the test need not wait 15
    checked = subprocess.run([promtool, "check", "config", "prometheus.yml"], cwd=mon, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    web = _free_port()
    server = subprocess.Popen(
        [
            prometheus,
            "--config.file=prometheus.yml",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{web}",
        ],
        cwd=mon,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        query = urllib.parse.quote('llamacpp:requests_processing{deployment="qwen-tiny-cpu"}')
        deadline, found = time.monotonic() + 60, []
        while time.monotonic() < deadline and not found:
            with contextlib.suppress(OSError):
                found = json.loads(_get(f"http://127.0.0.1:{web}/api/v1/query?query={query}"))["data"]["result"]
            time.sleep(1)
        assert found, "Prometheus never stored llamacpp:requests_processing from the rendered target"
        labels = found[0]["metric"]
        assert labels["engine"] == "llama.cpp" and labels["release"] == "b11312" and labels["host"] == "local"
        assert labels["replica"] == "0" and len(labels["revision"]) == 64
    finally:
        server.terminate()
        server.wait(timeout=30)
