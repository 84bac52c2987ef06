"""OpenLLM's rendered container travels the real rollout path (stand-in image, no GPU).

The stand-in records the command line and environment it was started with and answers
BentoML's ``/readyz``, the health route OpenLLM's bento server has; the test asserts the
apply reached a healthy container started exactly as rendered (``openllm serve BENTO --port
--arg ...``, ``BENTOML_DO_NOT_TRACK`` from openllm.env). It says nothing about inference.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ruamel.yaml import YAML

from tests.conftest import run_cli
from tests.rollout.conftest import RemoteHost, images
from tests.rollout.helpers import in_checkout, standin_record

pytestmark = pytest.mark.slow

PORT = 3000

INVENTORY = """apiVersion: servespec/v1
kind: Inventory
defaults: {{ssh_user: root, ssh_key: {key}, become: false}}
hosts:
  {name}:
    address: {address}
    hardware:  # STAND-IN facts: the test host has no GPUs; --standin-image drops GPU requests
      gpus: {{model: NVIDIA L4, count: 1}}
      interconnect: pcie
      gpu_numa_nodes: [0]
      driver_version: "580.95.05"
"""

SPEC = """apiVersion: servespec/v1
kind: Deployment
metadata: {{name: standin-openllm}}
inventory: inventory.yaml
model:
  source: meta-llama/Llama-3.2-1B-Instruct
  revision: 9213176726f574b556790deb65791e0c5aa438b6
  max_model_len: 4096
engine:
  name: openllm
  version: "0.6.30"
  image: registry.example.com/openllm:0.6.30
  image_archive: {archive}
  options: {{max_log_len: 500}}
  env: {{SERVESPEC_MARKER: openllm}}
placement: {{hosts: [host1]}}
serving: {{port: {port}, bind: 0.0.0.0}}
rollout: {{health_timeout: 20m}}
suppress:
  - {{rule: NET002, reason: "the test controller reaches the stand-in over the test network"}}
"""


def test_openllm_container_starts_as_rendered(
    tmp_path: Path, clean_hosts: list[RemoteHost], ssh_key: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    images.standin_image()
    archive = images.archive("servespec-standin:latest")
    host = clean_hosts[0]
    (tmp_path / "inventory.yaml").write_text(INVENTORY.format(key=ssh_key, name=host.name, address=host.address))
    (tmp_path / "openllm.yaml").write_text(SPEC.format(archive=in_checkout(archive, tmp_path), port=PORT))
    monkeypatch.chdir(tmp_path)
    result = run_cli("apply", ".", "--yes", "--format", "json", "--standin-image", "servespec-standin:latest")
    assert result.exit_code == 0, result.output
    rendered = tmp_path / "rendered"
    assert run_cli("render", ".", "-o", str(rendered)).exit_code == 0
    container = YAML(typ="safe").load((rendered / "standin-openllm" / "host1" / "container.yaml").read_text())
    assert container["healthcheck"]["path"] == "/readyz"
    record = standin_record(host.address, PORT)
    assert record["argv"] == (container["entrypoint"] or []) + container["command"]
    assert record["argv"][:3] == ["openllm", "serve", "llama3.2:1b-instruct-c665"]
    assert "max_log_len=500" in record["argv"] and "max_model_len=4096" in record["argv"]
    env = record["env"]
    assert isinstance(env, dict) and env["SERVESPEC_MARKER"] == "openllm" and env["BENTOML_DO_NOT_TRACK"] == "true"
