"""``rollout.strategy: auto``: per host, surge beside the running revision or update it in place (pure).

Surge: the new revision's engine starts beside the running one on an internal port; once it is
healthy the deployment's front proxy (which owns ``serving.port``) sends new requests to it, the
old one drains and stops. Nothing is unavailable, but both revisions hold memory at once, so a
host surges only when what the new revision needs is free *now*:

- on a GPU host, every GPU the new revision uses (its resolved ``gpu_ids``) must have at least the
  estimate's memory per GPU (weights + overhead + KV cache: what the engine allocates at start-up)
  free, as ``nvidia-smi --query-gpu=index,memory.total,memory.used`` reports it at plan time. The
  running revision's own use counts as used: it keeps running while the new one starts.
- on a CPU-only host, the host's ``MemAvailable`` (``/proc/meminfo``) must hold the estimate's
  host-memory plan of the new revision.

Otherwise the host is updated in place: the old engine stops, the role waits until the GPUs
the new revision needs have that memory free again (the old process's memory released), then
starts the new one. Anything unknown (no estimate, no report, no proxy yet) means in place:
surge is only chosen when the numbers say it fits. The decision is made here, from the specs'
needs (:class:`Need`) and the host's report (:class:`HostCapacity`); the role executes it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

MIB = 1 << 20
MAX_GPUS = 1024
MAX_MIB = 1 << 40
"""Bounds of a host-reported GPU index and MiB count (a larger value is not what nvidia-smi prints)."""


@dataclass(frozen=True)
class GpuUse:
    """One GPU as ``nvidia-smi --query-gpu=index,memory.total,memory.used`` reports it (MiB)."""

    index: int
    total_mib: int
    used_mib: int

    @property
    def free_mib(self) -> int:
        """Memory not in use now (never negative)."""
        return max(self.total_mib - self.used_mib, 0)


@dataclass(frozen=True)
class HostCapacity:
    """What a host reported at plan time for a deployment using ``auto``.

    ``gpus``: None when nvidia-smi gave no answer; ``mem_available_mib``: ``MemAvailable`` of
    ``/proc/meminfo`` (None: unread); ``proxy``: the deployment's front proxy runs on the host.
    """

    gpus: tuple[GpuUse, ...] | None = None
    mem_available_mib: int | None = None
    proxy: bool = False

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> HostCapacity:
        """A capacity from a JSON plan case (the shape :func:`checked_capacity` returns)."""
        gpus = data.get("gpus")
        return cls(
            tuple(GpuUse(**g) for g in gpus) if gpus is not None else None,
            data.get("mem_available_mib"),
            bool(data.get("proxy", False)),
        )


@dataclass(frozen=True)
class Need:
    """What the new revision needs on one host: its GPUs and the memory it allocates (MiB).

    ``per_gpu_mib``: on each of ``gpu_ids`` (None: no estimate); ``host_mib``: host memory on a
    CPU-only host (None: no estimate); ``multi_node``: the replica spans hosts (host networking).
    """

    gpu_ids: tuple[int, ...] = ()
    per_gpu_mib: int | None = None
    host_mib: int | None = None
    multi_node: bool = False
    replicas: tuple[tuple[int, ...], ...] = ()
    """``placement.replicas_per_host`` above 1: each replica's GPUs (empty ones on a CPU-only host); the
    memory above is one replica's, which is what replacing them one at a time needs beside the others."""

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Need:
        """A need from a JSON plan case."""
        fields = dict(data)
        fields["gpu_ids"] = tuple(fields.get("gpu_ids", ()))
        fields["replicas"] = tuple(tuple(ids) for ids in fields.get("replicas", ()))
        return cls(**fields)


Path = Literal["surge", "in_place"]


@dataclass(frozen=True)
class Strategy:
    """How ``apply`` replaces the revision on one host, and why (shown in ``deploy plan``).

    ``proxied``: the front proxy owns ``serving.port`` and the engine listens on an internal port;
    ``wait_gpus``/``need_mib``: in place, the GPUs to wait on and the memory each must have free.
    """

    path: Path
    reason: str
    proxied: bool = True
    wait_gpus: tuple[int, ...] = ()
    need_mib: int = 0
    replicas: tuple[tuple[int, ...], ...] = ()
    """``placement.replicas_per_host`` above 1: each replica's GPUs, replaced one at a time on this path."""

    def to_json(self) -> dict[str, Any]:
        """A plain dict for ``deploy plan --format json`` and the plan cases (``replicas`` only where several)."""
        out: dict[str, Any] = {
            "path": self.path,
            "reason": self.reason,
            "proxied": self.proxied,
            "wait_gpus": list(self.wait_gpus),
            "need_mib": self.need_mib,
        }
        if self.replicas:
            out["replicas"] = [{"replica": index, "gpus": list(ids)} for index, ids in enumerate(self.replicas)]
        return out

    def describe(self) -> str:
        """``surge: GPU 0 has 70.2 GiB free, 9.1 GiB needed`` (one line; the replicas after it where several)."""
        line = f"{'surge' if self.path == 'surge' else 'in place'}: {self.reason}"
        return f"{line}; {self.replicas_text()}" if self.replicas else line

    def replicas_text(self) -> str:
        """``2 replicas, one at a time behind the front proxy (r0 GPUs 0,1; r1 GPUs 2,3)``."""
        each = "; ".join(
            f"r{index} GPUs {','.join(str(i) for i in ids)}" if ids else f"r{index} CPU"
            for index, ids in enumerate(self.replicas)
        )
        return f"{len(self.replicas)} replicas, one at a time behind the front proxy ({each})"


def _gib(mib: int) -> str:
    return f"{mib / 1024:.1f} GiB"


def _in_place(reason: str, need: Need, *, proxied: bool = True) -> Strategy:
    wait = need.gpu_ids if need.per_gpu_mib is not None else ()
    return Strategy("in_place", reason, proxied, tuple(wait), (need.per_gpu_mib or 0) if wait else 0)


def _gpu_decision(need: Need, capacity: HostCapacity) -> Strategy:
    if need.per_gpu_mib is None:
        return _in_place("no memory estimate for the new revision (deploy estimate says why)", need)
    if capacity.gpus is None:
        return _in_place("the host reported no GPU memory (nvidia-smi did not answer)", need)
    seen = {gpu.index: gpu for gpu in capacity.gpus}
    missing = [index for index in need.gpu_ids if index not in seen]
    if missing:
        return _in_place(f"nvidia-smi does not list GPU(s) {missing}", need)
    short = [seen[i] for i in need.gpu_ids if seen[i].free_mib < need.per_gpu_mib]
    wanted = _gib(need.per_gpu_mib)
    if short:
        gpu = short[0]
        more = f" (and {len(short) - 1} more GPU(s))" if len(short) > 1 else ""
        return _in_place(
            f"GPU {gpu.index} has {_gib(gpu.free_mib)} free of {_gib(gpu.total_mib)}, the new revision needs "
            f"{wanted} beside the running one{more}",
            need,
        )
    least = min((seen[i] for i in need.gpu_ids), key=lambda gpu: gpu.free_mib)
    gpus = ", ".join(str(i) for i in need.gpu_ids)
    return Strategy(
        "surge", f"GPU(s) {gpus} have at least {_gib(least.free_mib)} free, the new revision needs {wanted} per GPU"
    )


def _cpu_decision(need: Need, capacity: HostCapacity) -> Strategy:
    if need.host_mib is None:
        return _in_place("no memory estimate for the new revision (deploy estimate says why)", need)
    if capacity.mem_available_mib is None:
        return _in_place("the host reported no available memory (/proc/meminfo)", need)
    free, wanted = _gib(capacity.mem_available_mib), _gib(need.host_mib)
    if capacity.mem_available_mib < need.host_mib:
        return _in_place(f"CPU-only host: {free} of host memory available, the new revision needs {wanted}", need)
    return Strategy("surge", f"CPU-only host: {free} of host memory available, the new revision needs {wanted}")


def decide(setting: str, kind: str, need: Need | None, capacity: HostCapacity | None) -> Strategy | None:
    """The strategy of one host's action (None: not ``auto``, or the action starts nothing)."""
    chosen = _decide(setting, kind, need, capacity)
    if chosen is None or need is None or not need.replicas:
        return chosen
    return replace(chosen, replicas=need.replicas)


def _decide(setting: str, kind: str, need: Need | None, capacity: HostCapacity | None) -> Strategy | None:
    if setting != "auto" or kind not in ("create", "update"):
        return None
    need = need or Need()
    if need.multi_node:
        return _in_place("a multi-node replica uses host networking: its engine owns serving.port", need, proxied=False)
    if kind == "create":
        return _in_place("nothing runs here yet: the engine starts behind a new front proxy", need)
    if capacity is None:
        return _in_place("the host reported no capacity (GPU memory, host memory)", need)
    if not capacity.proxy:
        return _in_place("the front proxy does not run here yet: this rollout puts it in front of the engine", need)
    return _gpu_decision(need, capacity) if need.gpu_ids else _cpu_decision(need, capacity)


def _count(value: Any, bound: int) -> int | None:
    # bool is an int in Python; a host writing true is not reporting a number.
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < bound:
        return None
    return value


def checked_capacity(report: Any) -> HostCapacity | None:
    """A host's capacity report rebuilt from its checked fields (None when it is not what servespec writes).

    The report comes from the host (``servespec_capacity``): every number must be a bounded
    integer and the GPU list a list of such rows, else nothing of it is used (in place).
    """
    if not isinstance(report, dict):
        return None
    raw = report.get("gpus")
    gpus: list[GpuUse] | None = None
    if isinstance(raw, list) and len(raw) <= MAX_GPUS:
        gpus = []
        for row in raw:
            if not isinstance(row, dict):
                return None
            index = _count(row.get("index"), MAX_GPUS)
            total, used = _count(row.get("total_mib"), MAX_MIB), _count(row.get("used_mib"), MAX_MIB)
            if index is None or total is None or used is None:
                return None
            gpus.append(GpuUse(index, total, used))
    elif raw is not None:
        return None
    available = report.get("mem_available_mib")
    memory = _count(available, MAX_MIB)
    if available is not None and memory is None:
        return None
    proxy = report.get("proxy", False)
    if not isinstance(proxy, bool):
        return None
    return HostCapacity(tuple(gpus) if gpus is not None else None, memory, proxy)
