"""XInference on a test host: the server container, then the launch request, then verify (stand-in engine).

The STAND-IN image answers XInference's ``GET /status``, records each ``POST /v1/models`` body and
lists the launched uids in ``GET /v1/models`` (tests/hosts/standin/servespec-standin); it does no
inference. The test asserts that the launch request the host's server received is the rendered
launch.json, that verify's smoke test ran after it, and that a second apply launches nothing again.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from tests.conftest import run_cli
from tests.rollout.conftest import RemoteHost, images
from tests.rollout.helpers import in_checkout, standin_record
from tests.rollout.test_standin_engines import _inventory

pytestmark = pytest.mark.slow

PORT = 9997


def _files(tmp_path: Path, host: RemoteHost, key: Path, archive: str) -> None:
    _inventory(tmp_path / "inventory.yaml", host, key)
    (tmp_path / "xinference.yaml").write_text(
        f"""apiVersion: servespec/v1
kind: Deployment
metadata: {{name: standin-xinference}}
inventory: inventory.yaml
model:
  source: Qwen/Qwen2.5-7B-Instruct
  max_model_len: 4096
  architecture: {{params_b: 7.6, layers: 28, hidden_size: 3584, attention_heads: 28, kv_heads: 4,
                 max_position_embeddings: 32768}}
engine:
  name: xinference
  version: "2.12.0"
  image_archive: {archive}
  options:
    model_engine: vLLM
    vllm: {{max_num_seqs: 16, enable_prefix_caching: true}}
resources: {{tensor_parallel: 2, gpu_ids: [0, 1]}}
placement: {{hosts: [host1]}}
serving: {{port: {PORT}, bind: 0.0.0.0, model_name: qwen-chat}}
rollout: {{health_timeout: 2m}}
suppress:
  - {{rule: SEC003, reason: "test spec"}}
  - {{rule: NET002, reason: "the test controller reaches the stand-in over the test network"}}
"""
    )


def test_the_launch_request_arrives_as_rendered_and_is_sent_once(
    tmp_path: Path, clean_hosts: list[RemoteHost], ssh_key: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    images.standin_image()
    archive = images.archive("servespec-standin:latest")
    host = clean_hosts[0]
    _files(tmp_path, host, ssh_key, in_checkout(archive, tmp_path))
    monkeypatch.chdir(tmp_path)
    result = run_cli(
        "apply", "xinference.yaml", "--yes", "--format", "json", "--standin-image", "servespec-standin:latest"
    )
    assert result.exit_code == 0, result.output
    rendered = tmp_path.parent / f"{tmp_path.name}-rendered"
    assert run_cli("render", "xinference.yaml", "-o", str(rendered)).exit_code == 0
    folder = rendered / "standin-xinference" / "host1"
    container = YAML(typ="safe").load((folder / "container.yaml").read_text())
    launch = json.loads((folder / "launch.json").read_text())
    record = standin_record(host.address, PORT)
    assert record["standin"] is True
    assert record["argv"] == container["command"]  # xinference-local --host 0.0.0.0 --port 9997
    assert record["launches"] == [launch]
    assert launch["model_uid"] == "qwen-chat" and launch["model_engine"] == "vLLM" and launch["n_gpu"] == 2
    assert launch["max_num_seqs"] == 16 and launch["max_model_len"] == 4096
    # verify passed after the launch: the revision is marked good
    state = json.loads(host.sh("cat /var/lib/servespec/standin-xinference/state.json"))
    assert [r["status"] for r in state["revisions"]][-1] == "good"
    again = run_cli(
        "apply", "xinference.yaml", "--yes", "--format", "json", "--standin-image", "servespec-standin:latest"
    )
    assert again.exit_code == 0, again.output
    assert '"result": "unchanged"' in again.output
    assert standin_record(host.address, PORT)["launches"] == [
        launch
    ]  # the same request into the same container: not sent again
