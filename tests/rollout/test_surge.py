"""rollout.strategy auto on real test hosts: surge behind the front proxy, or in place after the GPU memory is released.

A bounded load loop sends completions through the proxy's port (serving.port) for the whole of a
``deploy apply`` of a changed spec and counts the requests that failed. The engine is the STAND-IN
image (no inference); the GPU is STAND-IN too: the inventory declares one H100 the host does not
have, and the host's stand-in ``nvidia-smi`` (tests/hosts/standin/bin) reports ``engine-mib`` used
while an engine container runs and for ``release-delay-s`` after it stopped. The front proxy is
HAProxy from Debian's package (tests/hosts/Dockerfile.proxy), loaded from a docker save archive.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, run_cli
from tests.rollout.conftest import RemoteHost, images
from tests.rollout.helpers import DEMO_ARCH, get, in_checkout, post

pytestmark = pytest.mark.slow
KEY = "surge-key"
NAME = "surge"
STANDIN = "/usr/local/share/servespec-standin"
GPU_HOST = """hardware:  # STAND-IN facts: the test host has no GPU; --standin-image drops GPU requests
      gpus: {model: NVIDIA H100 80GB HBM3, count: 1}
      driver_version: "580.95.05"
      cpus: 2
      memory_gib: 8"""


@dataclass
class Load:
    """What the load loop saw: (monotonic time, ok) per request."""

    results: list[tuple[float, bool]] = field(default_factory=list)

    @property
    def failed(self) -> int:
        return sum(1 for _, ok in self.results if not ok)

    def unavailable_s(self) -> float:
        """Seconds from the first failed request to the first good one after the last failure (0: none failed)."""
        bad = [t for t, ok in self.results if not ok]
        if not bad:
            return 0.0
        after = [t for t, ok in self.results if ok and t > bad[-1]]
        return round((after[0] if after else bad[-1]) - bad[0], 2)


@contextmanager
def load_loop(url: str, limit_s: float = 300) -> Iterator[Load]:
    """Completions sent one after another to ``url`` until the block ends (at most ``limit_s``)."""
    load, stop = Load(), threading.Event()

    def hammer() -> None:
        deadline = time.monotonic() + limit_s
        while not stop.is_set() and time.monotonic() < deadline:
            status, body = post(url, {"prompt": "Hello", "max_tokens": 2}, KEY, timeout=5)
            load.results.append((time.monotonic(), status == 200 and isinstance(body, dict) and "choices" in body))
            time.sleep(0.05)

    thread = threading.Thread(target=hammer, daemon=True)
    thread.start()
    try:
        yield load
    finally:
        stop.set()
        thread.join(10)


def _inventory(path: Path, host: RemoteHost, key: Path, *, gpu: bool) -> None:
    hardware = GPU_HOST if gpu else "hardware: {gpus: {count: 0}, cpus: 2, memory_gib: 8}"
    path.write_text(
        f"""apiVersion: servespec/v1
kind: Inventory
defaults: {{ssh_user: root, ssh_key: {key}, become: false}}
hosts:
  {host.name}:
    address: {host.address}
    {hardware}
"""
    )


def _spec(path: Path, host: str, archive: str, proxy: str, env: str, timeout: str = "1m", gpu: bool = True) -> Path:
    gpus = "resources: {gpu_ids: [0]}\n" if gpu else ""
    path.write_text(
        f"""apiVersion: servespec/v1
kind: Deployment
metadata: {{name: {NAME}}}
inventory: inventory.yaml
model:
  source: /srv/models/demo.gguf
  quantization: gguf
  max_model_len: 256
  architecture: {DEMO_ARCH}
engine:
  name: llama.cpp
  version: b11434
  image: servespec-standin:latest
  image_archive: {archive}
  env: {env}
{gpus}placement: {{hosts: [{host}]}}
serving: {{port: 8080, bind: 0.0.0.0, api_key: {{from_env: SURGE_KEY}}}}
rollout:
  strategy: auto
  health_timeout: {timeout}
  proxy_image: servespec-proxy:latest
  proxy_image_archive: {proxy}
"""
    )
    return path


def _standin_gpu(host: RemoteHost, engine_mib: int, release_delay_s: int) -> None:
    """Install the STAND-IN nvidia-smi with an engine's memory and its release delay."""
    host.sh(f"mkdir -p {STANDIN} /srv/models && echo stand-in > /srv/models/demo.gguf")
    script = (REPO / "tests" / "hosts" / "standin" / "bin" / "nvidia-smi").read_text()
    host.sh(f"cat > /usr/local/bin/nvidia-smi <<'EOF'\n{script}EOF\nchmod 755 /usr/local/bin/nvidia-smi")
    host.sh(f"echo {engine_mib} > {STANDIN}/engine-mib && echo {release_delay_s} > {STANDIN}/release-delay-s")


@pytest.fixture
def setup(tmp_path: Path, clean_hosts: list[RemoteHost], ssh_key: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    images.standin_image()
    images.proxy_image()
    host = clean_hosts[0]
    _inventory(tmp_path / "inventory.yaml", host, ssh_key, gpu=True)
    monkeypatch.setenv("SURGE_KEY", KEY)
    monkeypatch.chdir(tmp_path)
    engine = in_checkout(images.archive("servespec-standin:latest"), tmp_path)
    proxy = in_checkout(images.archive("servespec-proxy:latest"), tmp_path)
    # The engine image already on the host, as after any earlier rollout there: the proxy's archive
    # must then find its folder made by its own tasks (the engine's archive tasks are skipped).
    archive = images.archive("servespec-standin:latest")
    subprocess.run(["docker", "cp", str(archive), f"{host.container}:/root/engine.tar"], check=True)
    host.sh("docker load -i /root/engine.tar >/dev/null && rm /root/engine.tar")
    return host, engine, proxy, tmp_path / "surge.yaml"


def _apply(spec: Path) -> tuple[int, str]:
    result = run_cli("apply", str(spec), "--yes", "--format", "json", "--standin-image", "servespec-standin:latest")
    return result.exit_code, result.output


def _plan(spec: Path) -> dict[str, Any]:
    result = run_cli("plan", str(spec), "--format", "json")
    assert result.exit_code == 0, result.output
    (action,) = json.loads(result.output)["actions"]
    return dict(action["strategy"])


def _generation(host: RemoteHost) -> str:
    """The GENERATION of the engine that answers on serving.port (through the proxy)."""
    status, record = get(f"http://{host.address}:8080/servespec-standin/record")
    return str(record["env"].get("GENERATION")) if status == 200 else ""


def _live(host: RemoteHost) -> dict[str, Any]:
    return dict(json.loads(host.sh(f"cat /var/lib/servespec/{NAME}/proxy/live.json")))


def _started(host: RemoteHost, name: str = f"servespec-{NAME}") -> str:
    data = host.container_json(name)
    return str(data["State"]["StartedAt"]) if data and data["State"]["Running"] else ""


def test_surge_serves_every_request_and_a_failed_surge_never_switches(setup: Any, ssh_key: Path) -> None:
    """A CPU-only host: surge where the host's real MemAvailable holds the new revision (it does here)."""
    host, engine, proxy, spec = setup
    _inventory(spec.parent / "inventory.yaml", host, ssh_key, gpu=False)
    host.sh("mkdir -p /srv/models && echo stand-in > /srv/models/demo.gguf")
    url = f"http://{host.address}:8080/v1/completions"

    _spec(spec, host.name, engine, proxy, "{GENERATION: one}", gpu=False)
    code, output = _apply(spec)
    assert code == 0, output
    assert _generation(host) == "one"
    assert host.container_json(f"servespec-{NAME}-proxy")["State"]["Running"]
    first = _live(host)
    assert first["port"] in (18080, 28080)

    _spec(spec, host.name, engine, proxy, "{GENERATION: two, STANDIN_HEALTH_DELAY: '3'}", gpu=False)
    chosen = _plan(spec)
    assert chosen["path"] == "surge" and "CPU-only host" in chosen["reason"], chosen
    with load_loop(url) as load:
        code, output = _apply(spec)
    assert code == 0, output
    print(f"surge: {len(load.results)} requests during apply, {load.failed} failed")
    assert len(load.results) > 50
    assert load.failed == 0, f"{load.failed} of {len(load.results)} requests failed on the surge path"
    assert _generation(host) == "two"
    assert _live(host)["port"] != first["port"] and _live(host)["revision"] == 2
    assert host.container_json(f"servespec-{NAME}-previous") is None  # promoted: the old one is gone
    serving = _started(host)

    # A new revision that never becomes healthy: the old one keeps serving, the proxy is never switched.
    _spec(spec, host.name, engine, proxy, "{GENERATION: three, STANDIN_UNHEALTHY: '1'}", timeout="10s", gpu=False)
    with load_loop(url) as load:
        code, output = _apply(spec)
    assert code == 1, output
    assert '"result": "rolled back"' in output
    print(f"failed surge: {len(load.results)} requests during apply, {load.failed} failed")
    assert load.failed == 0
    assert _generation(host) == "two" and _started(host) == serving
    assert _live(host)["revision"] == 2
    assert host.container_json(f"servespec-{NAME}-next") is None

    # Rollback and status keep working behind the proxy.
    result = run_cli("rollback", str(spec), "--to", "1", "--yes")
    assert result.exit_code == 0, result.output
    assert _generation(host) == "one"
    status = run_cli("status", str(spec), "--format", "json")
    assert '"healthy": true' in status.output and '"revision": 1' in status.output, status.output

    assert run_cli("destroy", str(spec), "--yes").exit_code == 0
    assert host.container_json(f"servespec-{NAME}-proxy") is None


def _events(host: RemoteHost, since: int) -> list[tuple[float, str, str]]:
    """(time, event, container name) of the host's engine containers since ``since`` (docker events)."""
    out = host.sh(
        f"docker events --since {since} --until $(date +%s) --filter type=container --filter event=die "
        "--filter event=start --format '{{.TimeNano}} {{.Action}} {{.Actor.Attributes.name}}'"
    )
    rows = [line.split() for line in out.splitlines() if line.strip()]
    return [(int(t) / 1e9, action, name) for t, action, name in rows if name == f"servespec-{NAME}"]


def test_in_place_waits_for_the_gpu_memory_of_the_old_engine(setup: Any) -> None:
    host, engine, proxy, spec = setup
    delay = 6
    # The engine holds 81,000 of the GPU's 81,559 MiB: the new revision never fits beside it.
    _standin_gpu(host, engine_mib=81000, release_delay_s=delay)
    _spec(spec, host.name, engine, proxy, "{GENERATION: one}")
    code, output = _apply(spec)
    assert code == 0, output

    _spec(spec, host.name, engine, proxy, "{GENERATION: two}")
    chosen = _plan(spec)
    assert chosen["path"] == "in_place" and chosen["wait_gpus"] == [0] and chosen["need_mib"] > 559, chosen
    since = int(host.sh("date +%s").strip())
    with load_loop(f"http://{host.address}:8080/v1/completions") as load:
        code, output = _apply(spec)
    assert code == 0, output
    assert _generation(host) == "two"
    events = _events(host, since)
    died = [t for t, action, _ in events if action == "die"]
    started = [t for t, action, _ in events if action == "start"]
    assert died and started, events
    waited = started[-1] - died[0]
    print(
        f"in place: {len(load.results)} requests, {load.failed} failed, unavailable {load.unavailable_s()} s; "
        f"the new engine started {waited:.1f} s after the old one stopped (stand-in release delay {delay} s)"
    )
    assert waited >= delay - 1, "the new engine started before the stand-in GPU memory was released"
    assert load.failed > 0 and load.unavailable_s() >= delay - 1
