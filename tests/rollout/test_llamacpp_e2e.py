"""A real engine end to end: llama.cpp's llama-server on three hosts over SSH.

The image is built offline and loaded on each host from a ``docker save`` archive; the
model is a random-weight demo GGUF the test generates (under 1 MiB), so the output is noise:
the test bans the end-of-sequence token and checks ``finish_reason == "length"``.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.rollout.conftest import RemoteHost, images
from tests.rollout.helpers import current_revision, demo_model_yaml, get, in_checkout, serves, stage_demo_model

pytestmark = pytest.mark.slow
KEY = "e2e-secret"


def _spec(path: Path, archive: Path, *, source: str, length: int) -> Path:
    path.write_text(
        f"""apiVersion: servespec/v1
kind: Deployment
metadata: {{name: tiny}}
inventory: inventory.yaml
{demo_model_yaml(length, source)}engine:
  name: llama.cpp
  version: b11434
  image: {images.llama_cpp_image()}
  image_archive: {in_checkout(archive, path.parent)}
  options: {{parallel: 1, threads: 1}}
placement: {{hosts: [host1, host2, host3]}}
serving: {{port: 8080, bind: 0.0.0.0, api_key: {{from_env: E2E_KEY}}}}
rollout: {{max_unavailable: 1, health_timeout: 2m}}
"""
    )
    return path


def _started(host: RemoteHost) -> str:
    data = host.container_json("servespec-tiny")
    return str(data["State"]["StartedAt"]) if data else ""


def _report(output: str) -> list[dict[str, object]]:
    """The per-host rows of `apply --format json` (the last JSON document it prints)."""
    line = next(line for line in reversed(output.splitlines()) if line.startswith('{"version": 1, "hosts"'))
    return json.loads(line)["hosts"]  # type: ignore[no-any-return]


def test_apply_roll_and_roll_back_a_real_llama_cpp(
    tmp_path: Path, inventory: Path, clean_hosts: list[RemoteHost], monkeypatch: pytest.MonkeyPatch
) -> None:

    archive = images.archive(images.llama_cpp_image())
    stage_demo_model(clean_hosts, tmp_path)
    monkeypatch.setenv("E2E_KEY", KEY)
    monkeypatch.chdir(tmp_path)
    spec = _spec(tmp_path / "tiny.yaml", archive, source="/srv/models/demo.gguf", length=256)

    first = run_cli("apply", str(spec), "--yes", "--format", "json")
    assert first.exit_code == 0, first.output
    assert KEY not in first.output
    for host in clean_hosts:
        status, models = get(f"http://{host.address}:8080/v1/models", KEY)
        assert status == 200 and models["data"], host.name
        assert serves(host.address, KEY), host.name
        assert get(f"http://{host.address}:8080/v1/models")[0] == 401  # the API key is enforced
    started = {h.name: _started(h) for h in clean_hosts}

    # A changed spec rolls one host at a time; the others serve throughout.
    healthy_counts: list[int] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            healthy_counts.append(sum(get(f"http://{h.address}:8080/health", timeout=1)[0] == 200 for h in clean_hosts))
            time.sleep(0.2)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    _spec(spec, archive, source="/srv/models/demo.gguf", length=384)
    second = run_cli("apply", str(spec), "--yes", "--format", "json")
    stop.set()
    watcher.join()
    assert second.exit_code == 0, second.output
    assert {(row["old"], row["new"]) for row in _report(second.output)} == {(1, 2)}
    assert healthy_counts and min(healthy_counts) >= 2, healthy_counts
    assert all(current_revision(h, "tiny") == 2 for h in clean_hosts)
    assert all(_started(h) != started[h.name] for h in clean_hosts)
    started = {h.name: _started(h) for h in clean_hosts}

    # A broken spec: the first host is restored and serves; the others are never touched.
    _spec(spec, archive, source="/srv/models/missing.gguf", length=384)
    third = run_cli("apply", str(spec), "--yes", "--format", "json")
    assert third.exit_code == 1, third.output
    assert '"result": "rolled back"' in third.output and "missing.gguf" in third.output
    assert '"result": "not reached (rollout stopped)"' in third.output
    for host in clean_hosts:
        assert current_revision(host, "tiny") == 2, host.name
        assert serves(host.address, KEY), host.name
        assert _started(host) == started[host.name], f"{host.name} was restarted"

    # Re-applying the last good spec changes nothing and restarts nothing.
    _spec(spec, archive, source="/srv/models/demo.gguf", length=384)
    again = run_cli("apply", str(spec), "--yes", "--format", "json")
    assert again.exit_code == 0, again.output
    assert all(_started(h) == started[h.name] for h in clean_hosts)
    status = run_cli("status", str(spec), "--format", "json")
    assert status.exit_code == 0
    assert '"healthy": true' in status.output and '"revision": 2' in status.output
