"""kt-kernel's CPU-expert thread pools against a host's NUMA nodes (TOPO004), for every SGLang build with ``--kt-*``.

Upstream SGLang releases carry kt-kernel's options as KTransformers' sglang-kt does
(:mod:`servespec.engines.sglang.kt` reads them), so both engines check their pools here:
KTransformers' unit inherits :meth:`Sglang.host_checks`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import servespec.engines.sglang.kt as kt
from servespec.engines.base import EngineCheck

if TYPE_CHECKING:
    from servespec.engines.base import Known
    from servespec.spec.fleet import HostView


def _pinned_node(known: Known, host: HostView) -> int | None:
    """The NUMA node the container is pinned to (render/common.py numa_pinning), or None when it is not."""
    chosen = known.deployment.spec.resources.numa
    hardware = host.hardware
    if chosen == "off" or hardware is None or not hardware.gpu_numa_nodes:
        return None
    if isinstance(chosen, int):
        return chosen
    nodes = {hardware.gpu_numa_nodes[i] for i in known.gpu_ids if i < len(hardware.gpu_numa_nodes)}
    return next(iter(nodes)) if len(nodes) == 1 and -1 not in nodes else None


def host_checks(known: Known, host: HostView) -> Iterator[EngineCheck]:
    """TOPO004: the CPU-expert thread pools against the NUMA nodes the container on ``host`` may use."""
    release = known.release
    if release is None or release.option("kt_cpuinfer") is None or host.hardware is None:
        return
    settings = kt.read(known.options, release)
    if not settings.split or settings.cpuinfer is None or settings.threadpool_count < 1:
        return  # the split is off, or ENG003 says what is missing
    yield from _pools(known, host, settings)


def _pools(known: Known, host: HostView, settings: Any) -> Iterator[EngineCheck]:
    hardware = host.hardware
    assert hardware is not None
    where = {key: known.effective[key].path for key in known.effective if key.startswith("kt_")}
    threads_path = where.get("kt_cpuinfer", ("engine", "options"))
    pools_path = where.get("kt_numa_nodes") or where.get("kt_threadpool_count") or threads_path
    node_cpus = {node: kt.cpu_count(cpus) for node, cpus in (hardware.numa_cpus or {}).items()}
    pools = list(zip(settings.pool_nodes, settings.pool_threads(), strict=False))
    pinned = _pinned_node(known, host)
    if pinned is not None:
        away = sorted({node for node, _ in pools if node != pinned})
        if away:
            yield EngineCheck(
                "TOPO004",
                pools_path,
                f"KTransformers binds its CPU-expert thread pools to NUMA nodes {sorted({n for n, _ in pools})} "
                f"(kt_threadpool_count {settings.threadpool_count}), but the container on {host.name} is pinned to "
                f"node {pinned}, its GPUs' node: the pools on {away} cannot use their node",
                hint=f"set kt_threadpool_count: 1 and kt_numa_nodes: [{pinned}], or resources.numa: off",
            )
        if pinned in node_cpus and settings.cpuinfer > node_cpus[pinned]:
            yield EngineCheck(
                "TOPO004",
                threads_path,
                f"kt_cpuinfer {settings.cpuinfer} threads on {host.name}, whose container is pinned to NUMA node "
                f"{pinned} (its GPUs' node) with {node_cpus[pinned]} CPUs",
                hint=f"set kt_cpuinfer ≤ {node_cpus[pinned]}, or resources.numa: off to use every node",
            )
        return
    if node_cpus:
        for index, (node, threads) in enumerate(pools):
            if node not in node_cpus:
                yield EngineCheck(
                    "TOPO004",
                    pools_path,
                    f"KTransformers thread pool {index} is bound to NUMA node {node}, which {host.name} does not "
                    f"have (nodes {sorted(node_cpus)})",
                    hint=f"set kt_threadpool_count to {len(node_cpus)} or fewer, or list existing kt_numa_nodes",
                )
            elif threads > node_cpus[node]:
                yield EngineCheck(
                    "TOPO004",
                    threads_path,
                    f"KTransformers thread pool {index} runs {threads} of kt_cpuinfer {settings.cpuinfer} "
                    f"threads on NUMA node {node} of {host.name}, which has {node_cpus[node]} CPUs",
                    hint=f"set kt_cpuinfer ≤ {node_cpus[node] * len(pools)} for {len(pools)} pool(s)",
                )
    elif hardware.cpus is not None and settings.cpuinfer > hardware.cpus:
        yield EngineCheck(
            "TOPO004",
            threads_path,
            f"kt_cpuinfer {settings.cpuinfer} threads on {host.name}, which has {hardware.cpus} CPUs",
            hint=f"set kt_cpuinfer ≤ {hardware.cpus}",
        )
    gpu_nodes = {
        hardware.gpu_numa_nodes[i]
        for i in known.gpu_ids
        if hardware.gpu_numa_nodes and i < len(hardware.gpu_numa_nodes)
    } - {-1}
    if gpu_nodes and not gpu_nodes & {node for node, _ in pools}:
        yield EngineCheck(
            "TOPO004",
            pools_path,
            f"KTransformers' CPU experts run on NUMA nodes {sorted({n for n, _ in pools})} of {host.name}, none of "
            f"them the GPUs' node{'s' if len(gpu_nodes) > 1 else ''} {sorted(gpu_nodes)}",
            hint=f"include node {min(gpu_nodes)} in kt_numa_nodes",
        )
