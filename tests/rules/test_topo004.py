"""TOPO004: KTransformers' CPU-expert thread pools against the NUMA nodes the container may use.

The case file (cases/TOPO004.yaml) has the passing and failing layouts; these tests pin the
arithmetic kt-kernel uses (``cpuinfer // count`` per pool, the first ``cpuinfer % count`` one
more; pool i on ``kt_numa_nodes[i]``, else node i) and the fallbacks.
"""

from __future__ import annotations

from pathlib import Path

from servespec.rules.runner import check_fleet
from servespec.spec.fleet import load_fleet

HOST = """\
apiVersion: servespec/v1
kind: Inventory
hosts:
  kt1:
    address: 10.0.1.1
    hardware:
      gpus: {{model: NVIDIA GeForce RTX 4090, count: 1}}
      gpu_numa_nodes: [{gpu_node}]
      cpus: 128
      memory_gib: 1024
{numa}"""
NUMA = '      numa_cpus: {0: "0-31,64-95", 1: "32-63,96-127"}\n'


def _topo004(tmp_path: Path, options: str, *, numa: str = "off", gpu_node: int = 0, cpus: str = NUMA) -> list[str]:
    (tmp_path / "hosts.yaml").write_text(HOST.format(gpu_node=gpu_node, numa=cpus))
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "apiVersion: servespec/v1\nkind: Deployment\nmetadata: {name: kt}\ninventory: hosts.yaml\n"
        "model: {source: deepseek-ai/DeepSeek-V3, max_model_len: 8192}\n"
        "engine: {name: ktransformers, version: '0.7.2', options: {kt_weight_path: /srv/models/w, "
        f"kt_num_gpu_experts: 0, mem_fraction_static: 0.94, {options}}}}}\n"
        f"resources: {{gpu_ids: [0], numa: '{numa}'}}\nplacement: {{hosts: [kt1]}}\n"
    )
    return [f.message for f in check_fleet(load_fleet([spec])) if f.rule == "TOPO004"]


def test_pools_get_cpuinfer_split_as_kt_kernel_does(tmp_path: Path) -> None:
    # 129 threads over 2 pools: 65 and 64; only node 0's pool exceeds its 64 CPUs
    found = _topo004(tmp_path, "kt_cpuinfer: 129, kt_threadpool_count: 2")
    assert found == [
        "KTransformers thread pool 0 runs 65 of kt_cpuinfer 129 threads on NUMA node 0 of kt1, which has 64 CPUs"
    ]
    assert _topo004(tmp_path, "kt_cpuinfer: 128, kt_threadpool_count: 2") == []


def test_explicit_numa_nodes_and_the_gpus_node(tmp_path: Path) -> None:
    found = _topo004(tmp_path, "kt_cpuinfer: 48, kt_threadpool_count: 1, kt_numa_nodes: [1]", gpu_node=0)
    assert found and "none of them the GPUs' node [0]" in found[0]
    assert _topo004(tmp_path, "kt_cpuinfer: 48, kt_threadpool_count: 1, kt_numa_nodes: [0]", gpu_node=0) == []


def test_pinned_container_allows_its_node_only(tmp_path: Path) -> None:
    found = _topo004(tmp_path, "kt_cpuinfer: 48, kt_threadpool_count: 1, kt_numa_nodes: [1]", numa="auto")
    assert len(found) == 1 and "pinned to node 0" in found[0] and "pools on [1]" in found[0]
    assert _topo004(tmp_path, "kt_cpuinfer: 60, kt_threadpool_count: 1", numa="auto") == []


def test_without_numa_cpus_the_hosts_cpus_bound_the_threads(tmp_path: Path) -> None:
    assert _topo004(tmp_path, "kt_cpuinfer: 200, kt_threadpool_count: 2", cpus="") == [
        "kt_cpuinfer 200 threads on kt1, which has 128 CPUs"
    ]
    assert _topo004(tmp_path, "kt_cpuinfer: 120, kt_threadpool_count: 2", cpus="") == []


def test_no_finding_while_the_split_is_off(tmp_path: Path) -> None:
    # without a GPU-expert count sglang-kt keeps every expert on the GPU: ENG003 says so, the threads do not run
    (tmp_path / "hosts.yaml").write_text(HOST.format(gpu_node=0, numa=NUMA))
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "apiVersion: servespec/v1\nkind: Deployment\nmetadata: {name: kt}\ninventory: hosts.yaml\n"
        "model: {source: deepseek-ai/DeepSeek-V3, max_model_len: 8192}\n"
        "engine: {name: ktransformers, version: '0.7.2', options: {kt_weight_path: /srv/models/w, kt_cpuinfer: 999}}\n"
        "placement: {hosts: [kt1]}\n"
    )
    assert [f for f in check_fleet(load_fleet([spec])) if f.rule == "TOPO004"] == []
