"""A multi-node vLLM replica: vLLM's own --nnodes where the release has it, Ray where the options ask for it.

vLLM 0.33 refuses ``--nnodes`` above 1 with the Ray backend ("nnodes > 1 can only be set when
distributed executor backend is mp, uni or external_launcher.": vllm/config/parallel.py), so a
spec naming ``distributed_executor_backend: ray`` gets the Ray cluster (a head on the leader,
``ray start`` on the worker), and NET002 names Ray's head port, not torch.distributed's.
"""

from __future__ import annotations

from pathlib import Path

from servespec.render import render_fleet
from servespec.rules.runner import check_fleet
from servespec.spec.fleet import Fleet, load_fleet
from tests.golden.regen import GOLDEN


def _fleet(tmp_path: Path, options: str = "") -> Fleet:
    path = tmp_path / "two-nodes.yaml"
    path.write_text(
        f"""apiVersion: servespec/v1
kind: Deployment
metadata: {{name: two}}
model: {{source: Qwen/Qwen2.5-7B-Instruct, revision: 0123456789abcdef0123456789abcdef01234567, max_model_len: 4096}}
engine:
  name: vllm
  version: "0.33.0"
{options}
resources: {{tensor_parallel: 8, pipeline_parallel: 2}}
placement: {{hosts: [h100-a, h100-b], hosts_per_replica: 2}}
"""
    )
    fleet = load_fleet([path], GOLDEN / "inventory.yaml")
    assert fleet.deployments, [f.to_text() for f in fleet.findings]
    return fleet


def _config(tmp_path: Path, options: str = "") -> dict[str, str]:
    files = render_fleet(_fleet(tmp_path, options)).files
    return {host: files[f"two/{host}/config.yaml"] for host in ("h100-a", "h100-b")}


def test_native_multinode_by_default(tmp_path: Path) -> None:
    config = _config(tmp_path)
    assert "nnodes: 2" in config["h100-a"] and "headless: true" in config["h100-b"]
    assert "distributed-executor-backend" not in config["h100-a"]


def test_the_ray_backend_gets_a_ray_cluster_not_nnodes(tmp_path: Path) -> None:
    options = "  options: {distributed_executor_backend: ray}"
    config = _config(tmp_path, options)
    assert "distributed-executor-backend: ray" in config["h100-a"]
    assert all("nnodes" not in text and "node-rank" not in text for text in config.values())
    rendered = render_fleet(_fleet(tmp_path, options))
    leader, worker = rendered.containers[("two", "h100-a")], rendered.containers[("two", "h100-b")]
    assert leader.command[0].startswith("ray start --head --port=6379 ") and "exec vllm serve" in leader.command[0]
    assert [*(worker.entrypoint or ()), *worker.command][:4] == ["ray", "start", "--block", "--address=10.1.0.1:6379"]
    net = [f.message for f in check_fleet(_fleet(tmp_path, options)) if f.rule == "NET002"]
    assert net and "Ray's head port" in net[0]
