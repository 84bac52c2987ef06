"""KTransformers applied to a test host with the STAND-IN engine (no GPU, no inference, no kt-kernel).

The host declares an H100 and two NUMA nodes it does not have, so the spec validates and
renders as on real hardware; ``--standin-image`` runs the container with the stand-in image,
which records the command line it was started with. The test checks that the rendered
sglang-kt command (the image's serve interpreter, ``--config`` with the ``--kt-*`` options,
``--kt-numa-nodes`` on the command line) and the read-only mount of ``--kt-weight-path``
arrive on the host unchanged, and that the health check passes. It says nothing about
inference or the CPU experts themselves.
"""

from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from servespec.engines.ktransformers.render import PYTHON
from tests.conftest import run_cli
from tests.rollout.conftest import RemoteHost, images
from tests.rollout.helpers import in_checkout, standin_record

pytestmark = pytest.mark.slow

WEIGHTS = "/srv/models/qwen3-30b-a3b-amxint4"
PORT = 30000


def _files(tmp_path: Path, host: RemoteHost, key: Path, archive: str) -> None:
    (tmp_path / "inventory.yaml").write_text(
        f"""apiVersion: servespec/v1
kind: Inventory
defaults: {{ssh_user: root, ssh_key: {key}, become: false}}
hosts:
  {host.name}:
    address: {host.address}
    hardware:  # STAND-IN facts: the test host has no GPUs; --standin-image drops GPU requests and NUMA pinning
      gpus: {{model: NVIDIA H100 80GB HBM3, count: 1}}
      gpu_numa_nodes: [0]
      driver_version: "580.95.05"
      cpus: 64
      memory_gib: 512
      numa_cpus: {{0: "0-31", 1: "32-63"}}
"""
    )
    (tmp_path / "kt.yaml").write_text(
        f"""apiVersion: servespec/v1
kind: Deployment
metadata: {{name: standin-kt}}
inventory: inventory.yaml
model: {{source: Qwen/Qwen3-30B-A3B, max_model_len: 8192}}
engine:
  name: ktransformers
  version: "0.7.2"
  image_archive: {archive}
  options:
    kt_weight_path: {WEIGHTS}
    kt_method: AMXINT4
    kt_num_gpu_experts: 8
    kt_cpuinfer: 24
    kt_threadpool_count: 1
    kt_numa_nodes: [0]
  env: {{SERVESPEC_MARKER: ktransformers}}
placement: {{hosts: [{host.name}]}}
serving: {{port: {PORT}, bind: 0.0.0.0, api_key: {{from_env: STANDIN_KEY}}}}
rollout: {{health_timeout: 2m}}
suppress:
  - {{rule: SEC003, reason: "test spec"}}
"""
    )


def test_ktransformers_container_starts_as_rendered(
    tmp_path: Path, clean_hosts: list[RemoteHost], ssh_key: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    images.standin_image()
    archive = images.archive("servespec-standin:latest")
    host = clean_hosts[0]
    host.sh(f"mkdir -p {WEIGHTS} && echo stand-in > {WEIGHTS}/experts.bin")
    _files(tmp_path, host, ssh_key, in_checkout(archive, tmp_path))
    monkeypatch.setenv("STANDIN_KEY", "standin-kt-secret")
    monkeypatch.chdir(tmp_path)
    validate = run_cli("validate", "kt.yaml")
    assert validate.exit_code == 0, validate.output
    result = run_cli("apply", "kt.yaml", "--yes", "--format", "json", "--standin-image", "servespec-standin:latest")
    assert result.exit_code == 0, result.output
    assert "standin-kt-secret" not in result.output
    rendered = tmp_path / "rendered"
    assert run_cli("render", "kt.yaml", "-o", str(rendered)).exit_code == 0
    container = YAML(typ="safe").load((rendered / "standin-kt" / host.name / "container.yaml").read_text())
    assert container["entrypoint"][0] == PYTHON and "--kt-numa-nodes" in container["command"]

    record = standin_record(host.address, PORT)
    assert record["standin"] is True
    assert record["argv"] == container["entrypoint"] + container["command"]
    env = record["env"]
    assert isinstance(env, dict) and env["SERVESPEC_MARKER"] == "ktransformers"
    assert env["SERVESPEC_API_KEY"] == "standin-kt-secret"
    config = host.sh("cat /etc/servespec/standin-kt/config.yaml")
    assert f"kt-weight-path: {WEIGHTS}" in config and "kt-cpuinfer: 24" in config
    inspect = host.container_json("servespec-standin-kt")
    assert inspect is not None
    mounts = {m["Destination"]: m for m in inspect["Mounts"]}
    assert mounts[WEIGHTS]["Source"] == WEIGHTS and mounts[WEIGHTS]["RW"] is False
    with urllib.request.urlopen(f"http://{host.address}:{PORT}/health", timeout=5) as response:
        assert response.status == 200
