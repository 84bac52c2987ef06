"""KTransformers' memory: SGLang's KV pool on the GPUs, the routed experts in host RAM.

The split's arithmetic is :mod:`servespec.engines.sglang.kt_memory` (upstream SGLang has the same ``--kt-*``
options); without the split it is SGLang's estimate, unchanged."""

from __future__ import annotations

from servespec.engines.sglang import memory as sglang_memory
from servespec.knowledge.memory import EstimateInput, GpuEstimate


def estimate(inp: EstimateInput) -> GpuEstimate | None:
    """One GPU's plan: SGLang's, with the routed experts split between the GPUs and host RAM when asked."""
    return sglang_memory.estimate(inp)
