"""TGI's warm-up sizing (server/text_generation_server/models/flash_causal_lm.py)."""

from __future__ import annotations

from dataclasses import replace

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
    found = finish(inp, total, weights, overhead, kv, block, notes, fraction)
    fact = inp.context_default
    if fact is None or not fact.kv_capacity:
        return found
    # From 2.4.1 an unset max_total_tokens is what the KV cache holds after warm-up, from 3.0
    # at most the model's maximum (the release fact's source: flash_causal_lm.py warmup).
    model_max = inp.model.derived_max_len
    length = min(found.kv_tokens, model_max) if fact.within_model and model_max else found.kv_tokens
    bound = f", the model's maximum {model_max}" if fact.within_model and model_max else ""
    version = inp.release.version if inp.release else inp.engine_version
    basis = f"engine default for {inp.engine} {version}: {length} (min(the KV cache's {found.kv_tokens} tokens{bound}))"
    return finish(
        replace(inp, max_model_len=max(length, 1), context_basis=basis),
        total,
        weights,
        overhead,
        kv,
        block,
        notes,
        fraction,
    )
