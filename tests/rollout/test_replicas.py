"""placement.replicas_per_host on a real test host: two llama.cpp replicas behind the front proxy.

The engine is llama.cpp's llama-server (CPU build) serving a random-weight demo GGUF made at test
time; the front proxy is HAProxy from Debian's package (tests/hosts/Dockerfile.proxy), loaded from
a docker save archive. A bounded load loop (one thread, completions one after another, at most
MAX_REQUESTS) runs through serving.port while ``deploy apply`` replaces the replicas one at a time;
no request may fail.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli
from tests.rollout.conftest import RemoteHost, images
from tests.rollout.helpers import demo_model_yaml, in_checkout, post, stage_demo_model

pytestmark = pytest.mark.slow
KEY = "replicas-key"
NAME = "pair"
MAX_REQUESTS = 20000
"""The load loop's bound: it stops at this many requests even if the apply is still running (the test then fails:
the load must cover the whole update)."""
PAUSE_S = 0.02
"""Between two requests of the load loop."""


def _spec(path: Path, host: str, engine: str, proxy: str, length: int) -> Path:
    path.write_text(
        f"""apiVersion: servespec/v1
kind: Deployment
metadata: {{name: {NAME}}}
inventory: inventory.yaml
{demo_model_yaml(length)}engine:
  name: llama.cpp
  version: b11434
  image: {images.llama_cpp_image()}
  image_archive: {engine}
  options: {{parallel: 1, threads: 1}}
placement: {{hosts: [{host}], replicas_per_host: 2}}
serving: {{port: 8080, bind: 0.0.0.0, api_key: {{from_env: REPLICAS_KEY}}}}
rollout:
  strategy: auto
  health_timeout: 2m
  proxy_image: servespec-proxy:latest
  proxy_image_archive: {proxy}
"""
    )
    return path


def _complete(url: str) -> bool:
    status, body = post(
        url, {"prompt": "hello", "max_tokens": 2, "temperature": 0, "logit_bias": {"2": -100}}, KEY, timeout=30
    )
    return status == 200 and isinstance(body, dict) and body["choices"][0]["finish_reason"] == "length"


def _apply_under_load(spec: Path, url: str) -> tuple[Any, list[bool]]:
    """``deploy apply`` while a thread sends completions through ``url``: the apply's result and each request's."""
    results: list[bool] = []
    done = threading.Event()

    def load() -> None:
        while not done.is_set() and len(results) < MAX_REQUESTS:
            results.append(_complete(url))
            time.sleep(PAUSE_S)

    thread = threading.Thread(target=load, daemon=True)
    thread.start()
    result = run_cli("apply", str(spec), "--yes", "--format", "json")
    done.set()
    thread.join(60)
    return result, results


def _status(spec: Path) -> dict[str, Any]:
    result = run_cli("status", str(spec), "--format", "json")
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.output)["hosts"]
    return dict(row)


def _revisions(host: RemoteHost) -> list[str]:
    """The revision label of each replica's running container."""
    out = []
    for index in range(2):
        data = host.container_json(f"servespec-{NAME}-r{index}")
        assert data and data["State"]["Running"], index
        out.append(str(data["Config"]["Labels"]["servespec.revision"]))
    return out


def test_two_replicas_serve_every_request_through_an_update(
    tmp_path: Path, clean_hosts: list[RemoteHost], ssh_key: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    images.proxy_image()
    host = clean_hosts[0]
    (tmp_path / "inventory.yaml").write_text(
        f"""apiVersion: servespec/v1
kind: Inventory
defaults: {{ssh_user: root, ssh_key: {ssh_key}, become: false}}
hosts:
  {host.name}:
    address: {host.address}
    hardware: {{gpus: {{count: 0}}, cpus: 2, memory_gib: 8}}
"""
    )
    stage_demo_model([host], tmp_path)
    monkeypatch.setenv("REPLICAS_KEY", KEY)
    monkeypatch.chdir(tmp_path)
    engine = in_checkout(images.archive(images.llama_cpp_image()), tmp_path)
    proxy = in_checkout(images.archive("servespec-proxy:latest"), tmp_path)
    spec = _spec(tmp_path / "pair.yaml", host.name, engine, proxy, 256)
    url = f"http://{host.address}:8080/v1/completions"

    first = run_cli("apply", str(spec), "--yes", "--format", "json")
    assert first.exit_code == 0, first.output
    assert KEY not in first.output
    assert _complete(url)
    before = _revisions(host)
    assert before[0] == before[1]
    row = _status(spec)
    assert row["healthy"] is True and row["endpoint"].endswith(":8080"), row
    listed = row["replicas"]
    assert [(r["index"], r["name"], r["status"], r["healthy"]) for r in listed] == [
        (0, f"servespec-{NAME}-r0", "running", True),
        (1, f"servespec-{NAME}-r1", "running", True),
    ]
    config = host.sh(f"cat /var/lib/servespec/{NAME}/proxy/haproxy.cfg")
    assert "balance leastconn" in config and "option httpchk GET /health" in config

    # A changed context length restarts both replicas: one at a time, behind the proxy.
    _spec(spec, host.name, engine, proxy, 384)
    plan = run_cli("plan", str(spec), "--format", "json")
    assert plan.exit_code == 0, plan.output
    (action,) = json.loads(plan.output)["actions"]
    assert [r["replica"] for r in action["strategy"]["replicas"]] == [0, 1], action["strategy"]

    second, results = _apply_under_load(spec, url)
    assert second.exit_code == 0, second.output
    failed = results.count(False)
    print(f"replicas: {len(results)} requests during the update, {failed} failed")
    assert 50 <= len(results) < MAX_REQUESTS, len(results)  # the load ran until the apply ended
    assert failed == 0, f"{failed} of {len(results)} requests failed while the replicas were replaced"

    after = _revisions(host)
    assert after[0] == after[1] != before[0]
    listed = _status(spec)["replicas"]
    assert [(r["name"], r["revision"], r["healthy"]) for r in listed] == [
        (f"servespec-{NAME}-r0", after[0], True),
        (f"servespec-{NAME}-r1", after[1], True),
    ]
    assert _complete(url)

    # A broken spec: replica 0's new revision never becomes healthy; the rescue puts it back, replica 1 is
    # never touched, and the host serves throughout.
    broken = spec.read_text().replace("/srv/models/demo.gguf", "/srv/models/missing.gguf")
    spec.write_text(broken)
    third, results = _apply_under_load(spec, url)
    assert third.exit_code == 1, third.output
    assert '"result": "rolled back"' in third.output, third.output
    print(f"replicas, failed update: {len(results)} requests, {results.count(False)} failed")
    assert results and results.count(False) == 0
    assert _revisions(host) == after
    assert _status(spec)["healthy"] is True
    assert _complete(url)
