"""TOPO rules: where a replica's GPUs sit and how they talk to each other."""

from __future__ import annotations

from collections.abc import Iterator

from servespec.findings import Finding, Severity
from servespec.knowledge import resolve
from servespec.rules.base import Rule, placements
from servespec.spec.fleet import Fleet, HostView

_NCCL_ACS = (
    "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html#pci-access-control-services-acs"
)
_NCCL_TOPO = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html#nccl-p2p-level"


_DIRECT_LINKS = ("NV", "XGMI")
"""Link kinds that join two GPUs without PCIe: NVLink (``nvidia-smi topo -m`` cells ``NV#``) and AMD Infinity Fabric
(``XGMI``, the link type ``rocm-smi --showtopo`` prints between two Instinct GPUs:
https://rocm.docs.amd.com/projects/rocm_smi_lib/en/latest/)."""


def _over_pcie(host: HostView, group: list[int]) -> bool | None:
    """Whether GPUs of the group exchange data over PCIe (no NVLink or Infinity Fabric link between some pair);
    None: unknown."""
    hardware = host.hardware
    if host.links:
        nvlinked = {(a, b) for a, b, kind in host.links if kind.upper().startswith(_DIRECT_LINKS)}
        pairs = [(a, b) for i, a in enumerate(group) for b in group[i + 1 :]]
        return any((a, b) not in nvlinked and (b, a) not in nvlinked for a, b in pairs)
    if hardware is None or hardware.interconnect is None:
        return None
    return hardware.interconnect == "pcie"


class ReplicaAcrossNuma(Rule):
    """A replica's GPUs should sit on one NUMA node when they talk over PCIe.

    Between GPUs on different CPU sockets, PCIe peer-to-peer traffic crosses the
    inter-socket link (NCCL's "SYS" path), which NCCL avoids for P2P by default
    (NCCL_P2P_LEVEL) and which is slower than a path inside one PCIe root. With NVLink or
    NVSwitch the GPUs talk directly and the split does not matter for the collective.
    A ``resources.numa`` node that holds none of the replica's GPUs is reported too: the
    engine's CPU threads would run far from their GPUs.

    Fix: choose ``gpu_ids`` on one node (the inventory's ``gpu_numa_nodes`` shows them),
    or set ``numa: auto``.

    Source: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html#nccl-p2p-level
    """

    id = "TOPO001"
    name = "topology.numa"
    severity = Severity.WARNING
    summary = "GPUs of one replica sit on different NUMA nodes"
    sources = (_NCCL_TOPO,)

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment, host in placements(fleet):
            nodes_of = host.hardware.gpu_numa_nodes if host.hardware else None
            group = _widest(resolve.resolved(deployment).replica_gpu_ids, nodes_of)
            if not nodes_of or any(i >= len(nodes_of) for i in group):
                continue
            nodes = sorted({nodes_of[i] for i in group})
            pinned = deployment.spec.resources.numa
            if isinstance(pinned, int) and pinned not in nodes:
                yield self.report(
                    deployment.document,
                    f"numa pins to node {pinned} but the replica's GPUs {group} on {host.name} are on {nodes}",
                    ("resources", "numa"),
                    hint="set numa: auto, or the GPUs' node",
                )
            if len(nodes) > 1 and _over_pcie(host, group) is not False:  # unknown: assume PCIe
                same = [[i for i, n in enumerate(nodes_of) if n == node] for node in nodes]
                yield self.report(
                    deployment.document,
                    f"GPUs {group} of one replica on {host.name} span NUMA nodes {nodes} and talk over PCIe",
                    ("resources", "gpu_ids"),
                    hint=f"pick GPUs of one node: {same}",
                )


class AcsBlocksPeerToPeer(Rule):
    """PCIe ACS (or IOMMU translation) must be off on the path between GPUs of a parallel group.

    NVIDIA's NCCL guide: "IO virtualization (also known as VT-d or IOMMU) can interfere with
    GPU Direct by redirecting all PCI point-to-point traffic to the CPU root complex,
    causing a significant performance reduction or even a hang. ... ACS must be disabled"
    (NCCL troubleshooting, "PCI Access Control Services (ACS)"). Folklore sometimes says
    the opposite; NVIDIA's documentation is the source here. The check applies when the
    replica's GPUs exchange data over PCIe (no NVLink between them) on a host whose facts
    say ``pcie_acs: enabled`` or ``iommu: on`` (``passthrough`` does not translate). It is a
    warning: NCCL still starts, and the guide promises a slowdown or a possible hang, not a
    refusal (an error must be a proof).

    Fix: disable ACS on the PCIe switches/bridges above the GPUs (setpci, or the BIOS),
    boot with ``iommu=pt`` or IOMMU off, then rerun ``deploy discover``.

    Source: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html#pci-access-control-services-acs
    """

    id = "TOPO002"
    name = "topology.pcie-acs"
    severity = Severity.WARNING
    summary = "PCIe ACS or IOMMU translation enabled between GPUs of one tensor-parallel group"
    sources = (_NCCL_ACS,)

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment, host in placements(fleet):
            hardware = host.hardware
            groups = resolve.resolved(deployment).replica_gpu_ids  # each replica's own group (replicas_per_host)
            group = next((g for g in groups if _over_pcie(host, g) is not False), groups[0])
            if hardware is None or len(group) < 2 or _over_pcie(host, group) is False:  # unknown: assume PCIe
                continue
            causes = []
            if hardware.pcie_acs == "enabled":
                causes.append(("pcie_acs", "PCIe ACS is enabled"))
            if hardware.iommu == "on":
                causes.append(("iommu", "the IOMMU translates DMA"))
            for key, cause in causes:
                document, path = host.hardware_path(key)
                yield self.report(
                    document or deployment.document,
                    f"{cause} on {host.name}, where {deployment.name} runs GPUs {group} in one group over "
                    "PCIe: peer-to-peer traffic is redirected through the CPU or disabled",
                    path,
                    hint="disable ACS (or boot with iommu=pt), then run deploy discover again",
                )


class TensorParallelOverPcie(Rule):
    """Tensor parallel beyond 2 GPUs over PCIe alone is slow.

    Tensor parallelism all-reduces activations in every layer; over PCIe (no NVLink) the
    bandwidth of the ring drops with each GPU added and decode latency suffers. NCCL
    routes over NVLink when present. Pipeline parallel or more replicas usually serve
    better on PCIe-only hosts.

    Fix: keep ``tensor_parallel ≤ 2`` on PCIe hosts and add replicas, use pipeline
    parallel, or use NVLink hosts.

    The cut-off of 2 GPUs is servespec's own judgement (one PCIe link per pair, no ring of
    several hops); the source documents how NCCL chooses NVLink or PCIe paths, not this limit.

    Source: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html#nccl-p2p-level
    """

    id = "TOPO003"
    name = "topology.pcie-tensor-parallel"
    severity = Severity.WARNING
    summary = "tensor parallel over PCIe only (no NVLink) beyond 2 GPUs"
    sources = (_NCCL_TOPO,)

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment, host in placements(fleet):
            tp = deployment.spec.resources.tensor_parallel
            if tp <= 2 or host.hardware is None or not resolve.host_gpus(host).count:
                continue
            groups = resolve.resolved(deployment).replica_gpu_ids  # each replica all-reduces within its own GPUs
            if any(_over_pcie(host, group) for group in groups):  # only when known to be PCIe
                yield self.report(
                    deployment.document,
                    f"tensor_parallel {tp} on {host.name} all-reduces over PCIe between some of its GPUs (no NVLink)",
                    ("resources", "tensor_parallel"),
                    hint="use tensor_parallel ≤ 2 with more replicas, pipeline_parallel, or NVLink hosts",
                )


_KT_POOLS = "https://pypi.org/project/kt-kernel/0.7.2/ (kt_kernel/experts_base.py, BaseMoEWrapper._get_cpu_infer)"


class KtThreadsVsNuma(Rule):
    """KTransformers' CPU-expert threads must fit the NUMA nodes they are bound to.

    kt-kernel splits ``--kt-cpuinfer`` threads over ``--kt-threadpool-count`` pools (default
    2), ``cpuinfer // count`` each (the first ``cpuinfer % count`` pools one more), and binds
    pool ``i`` to NUMA node ``--kt-numa-nodes[i]``, else node ``i``; the experts' weights of a
    pool live in that node's memory. servespec pins the container to its GPUs' NUMA node
    (``resources.numa: auto``: ``cpuset_mems``, and ``cpuset_cpus`` when the facts list the
    node's CPUs), so there every pool must be bound to that node and the threads must not
    outnumber its CPUs. Unpinned (``numa: off``), each pool's node must exist on the host and
    hold its threads, and some pool should sit on the GPUs' node. More threads than CPUs make
    the pools' busy-polling workers share cores, and a pool bound to a node the container may
    not use cannot place its memory there.

    The CPUs of each node come from the inventory's ``numa_cpus`` (``deploy discover`` reads
    them from numactl); without them only the host's total ``cpus`` is compared.

    Fix: ``kt_cpuinfer`` at most the node's CPUs (``kt run`` uses 80% of the threads), one pool
    per node the container may use (``kt_threadpool_count: 1`` with ``kt_numa_nodes: [N]`` when
    pinned), or ``resources.numa: off`` to let the pools span the sockets.

    Source: https://pypi.org/project/kt-kernel/0.7.2/ (kt_kernel/experts_base.py
    ``_get_cpu_infer``; kt_kernel/cli/commands/run.py for ``kt run``'s defaults)
    """

    id = "TOPO004"
    name = "topology.kt-cpuinfer"
    severity = Severity.WARNING
    summary = "KTransformers --kt-cpuinfer threads exceed, or are bound outside, the NUMA nodes the container may use"
    sources = (_KT_POOLS,)

    def check(self, fleet: Fleet) -> Iterator[Finding]:
        for deployment, host in placements(fleet):
            known = resolve.resolved(deployment)
            for found in known.engine.host_checks(known, host):
                if found.rule == self.id:
                    yield self.report(deployment.document, found.message, found.path, hint=found.hint)


def _widest(groups: list[list[int]], nodes_of: list[int] | None) -> list[int]:
    """The replica group spanning the most NUMA nodes (placement.replicas_per_host: each replica is its own group)."""
    if not nodes_of:
        return groups[0]
    return max(groups, key=lambda group: len({nodes_of[i] for i in group if i < len(nodes_of)}))
