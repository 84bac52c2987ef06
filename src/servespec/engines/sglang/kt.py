"""What the ``--kt-*`` options of one spec make KTransformers do: which experts live where, which threads run them.

Read from sglang-kt's own code (``sglang/srt/layers/moe/kt_ep_wrapper.py`` and kt-kernel's
``kt_kernel/experts_base.py`` in the wheels of 0.7.2, https://pypi.org/project/sglang-kt/0.7.2/
and https://pypi.org/project/kt-kernel/0.7.2/):

- The CPU/GPU expert split is on only with ``--kt-weight-path`` (``create_kt_config_from_server_args``
  returns None without it) and with ``--kt-num-gpu-experts`` or ``--kt-gpu-experts-ratio``
  (``_init_kt_gpu_experts_masks`` warns "Either kt_num_gpu_experts or kt_gpu_experts_ratio is
  required but not set." and returns None); otherwise the server is plain SGLang with every
  expert on the GPUs.
- ``--kt-num-gpu-experts N`` is per MoE layer (``N × num_moe_layers`` in all); a ratio
  overrides it (``int(total_experts × ratio)``), kt-kernel clamps to the experts there are.
- ``--kt-cpuinfer`` threads are split over ``--kt-threadpool-count`` pools
  (``cpuinfer // count``, the first ``cpuinfer % count`` pools one more), pool ``i`` bound to
  NUMA node ``--kt-numa-nodes[i]``, else node ``i`` (``BaseMoEWrapper._get_cpu_infer``); a
  node list of another length is a ValueError.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from servespec.engines.catalog import EngineRelease
    from servespec.knowledge.models import ModelFacts

SOURCE = "https://pypi.org/project/sglang-kt/0.7.2/ (sglang/srt/layers/moe/kt_ep_wrapper.py)"
KERNEL_SOURCE = "https://pypi.org/project/kt-kernel/0.7.2/ (kt_kernel/experts_base.py, kt_kernel/experts.py)"

METHOD_BITS: dict[str, tuple[float, str]] = {
    "AMXINT4": (4.0, "kt-kernel's own size estimate (cli/utils/quant_interactive.py: int4 = 4 bits)"),
    "AMXINT8": (8.0, "kt-kernel's own size estimate (cli/utils/quant_interactive.py: int8 = 8 bits)"),
    "MOE_INT4": (4.0, "assumed: 4-bit weights, scales not counted (as kt-kernel's estimate for AMXINT4)"),
    "MOE_INT8": (8.0, "assumed: 8-bit weights, scales not counted (as kt-kernel's estimate for AMXINT8)"),
    "RAWINT4": (4.5, "packed group-32 INT4 (experts.py: 'Native packed group-32 INT4'); a 16-bit scale per 32 assumed"),
    "GPTQ_INT4": (4 + 20 / 128, "GPTQ 4-bit, a 16-bit scale and 4-bit zero per group of 128"),
    "SYCL_GPTQ_INT4": (4 + 20 / 128, "GPTQ 4-bit with a 16-bit scale and 4-bit zero per group of 128"),
    "FP8": (8.0, "FP8 E4M3 (block scales not counted)"),
    "FP8_PERCHANNEL": (8.0, "FP8 per channel (scales not counted)"),
    "BF16": (16.0, "bfloat16"),
    "MXFP4": (4.25, "E2M1 nibble + ue8m0 scale per 32 (experts.py)"),
    "NVFP4": (4.5, "E2M1 nibble + e4m3 scale per 16 (experts.py)"),
    "MXFP8": (8.25, "E4M3fn byte + ue8m0 scale per 32 (experts.py)"),
    "LLAMAFILE": (4.9, "assumed: a GGUF Q4_K_M file (LLAMAFILE reads GGUF; the file type is not known here)"),
}
"""Bits per routed-expert weight in host RAM, by ``--kt-method`` (the format of ``--kt-weight-path``)."""


@dataclass(frozen=True)
class Kt:
    """The ``--kt-*`` settings of one spec, with the release's defaults filled in."""

    weight_path: str | None
    method: str
    cpuinfer: int | None
    threadpool_count: int
    numa_nodes: tuple[int, ...] | None
    num_gpu_experts: int | None
    gpu_experts_ratio: float | None
    dynamic_update: bool

    @property
    def split(self) -> bool:
        """Whether the options ask for the CPU/GPU expert split at all (a weight path and a GPU-expert count)."""
        return self.weight_path is not None and (self.num_gpu_experts is not None or self.gpu_experts_ratio is not None)

    @property
    def pool_nodes(self) -> tuple[int, ...]:
        """The NUMA node of each thread pool."""
        return self.numa_nodes if self.numa_nodes is not None else tuple(range(max(self.threadpool_count, 0)))

    def pool_threads(self) -> tuple[int, ...]:
        """Threads of each pool (kt-kernel: ``cpuinfer // count``, the first ``cpuinfer % count`` one more)."""
        count, total = max(self.threadpool_count, 1), self.cpuinfer or 0
        return tuple(total // count + (1 if i < total % count else 0) for i in range(count))

    def gpu_experts_per_layer(self, model: ModelFacts) -> float:
        """Routed experts per MoE layer on the GPUs (a ratio counts over all MoE layers' experts)."""
        experts = model.experts or 0
        if self.gpu_experts_ratio is not None:
            return min(max(self.gpu_experts_ratio, 0.0), 1.0) * experts
        return float(min(max(self.num_gpu_experts or 0, 0), experts))


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def read(options: dict[str, Any], release: EngineRelease | None) -> Kt:
    """The settings from the effective options (catalog keys, typed), the release's defaults where unset."""

    def get(key: str, fallback: Any = None) -> Any:
        if key in options:
            return options[key]
        return release.default(key) if release is not None and release.option(key) is not None else fallback

    nodes = get("kt_numa_nodes")
    ratio = get("kt_gpu_experts_ratio")
    path = get("kt_weight_path")
    return Kt(
        weight_path=str(path) if path not in (None, "") else None,
        method=str(get("kt_method", "AMXINT4")),
        cpuinfer=_int(get("kt_cpuinfer")),
        threadpool_count=_int(get("kt_threadpool_count", 2)) or 0,
        numa_nodes=tuple(n for n in nodes if _int(n) is not None) if isinstance(nodes, list) else None,
        num_gpu_experts=_int(get("kt_num_gpu_experts")),
        gpu_experts_ratio=float(ratio) if isinstance(ratio, int | float) and not isinstance(ratio, bool) else None,
        dynamic_update=get("kt_enable_dynamic_expert_update", False) is True,
    )


def cpu_count(cpus: str) -> int:
    """CPUs in a numactl list (``0-47,96-143`` → 96)."""
    total = 0
    for part in cpus.split(","):
        low, _, high = part.partition("-")
        total += int(high or low) - int(low) + 1
    return total
