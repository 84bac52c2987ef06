"""TGI's warm-up sizing (server/text_generation_server/models/flash_causal_lm.py)."""

from __future__ import annotations

from servespec.knowledge.memory import (
    CONTEXT_GIB,
    EstimateInput,
    GpuEstimate,
    activation_gib,
    cuda_total_gib,
    finish,
    number,
    weights_per_gpu,
)


def estimate(inp: EstimateInput) -> GpuEstimate | None:
    """TGI's warm-up sizing: free memory × cuda_memory_fraction × TGI_WIGGLE_ROOM (0.90); None without a GPU."""
    gpu = inp.gpu
    if gpu is None:
        return None
    total = cuda_total_gib(gpu)
    fraction = number(inp.options, "cuda_memory_fraction", 1.0)
    prefill = int(number(inp.options, "max_batch_prefill_tokens", 4096))  # assumed when unset (catalog: no default)
    weights = weights_per_gpu(inp)
    activation = activation_gib(inp, prefill, 1)
    free = total - CONTEXT_GIB - weights - activation
    kv = free - (1 - fraction * 0.9) * total
    overhead = total - weights - kv
    block = 16
    notes = [f"cuda_memory_fraction {fraction}", "TGI_WIGGLE_ROOM 0.9"]
    return finish(inp, total, weights, overhead, kv, block, notes, fraction)
