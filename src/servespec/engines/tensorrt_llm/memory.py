"""TensorRT-LLM's KV-cache sizing (PyTorch backend)."""

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
    """TensorRT-LLM (PyTorch backend): free memory after weights and activations × free_gpu_memory_fraction.

    None without a GPU.
    """
    gpu = inp.gpu
    if gpu is None:
        return None
    total = cuda_total_gib(gpu)
    default = float((inp.release.default("free_gpu_memory_fraction") if inp.release else None) or 0.9)
    flag_value = number(inp.options, "free_gpu_memory_fraction", default)
    fraction = number(inp.options, "kv_cache_config.free_gpu_memory_fraction", flag_value)
    tokens = int(number(inp.options, "max_num_tokens", 8192))
    weights = weights_per_gpu(inp)
    activation = activation_gib(inp, tokens, 1)
    free = total - CONTEXT_GIB - weights - activation
    kv = free * fraction
    claimed = (total - free * (1 - fraction)) / total
    notes = [f"free_gpu_memory_fraction {fraction}"]
    return finish(inp, total, weights, total - weights - kv, kv, 32, notes, claimed)
