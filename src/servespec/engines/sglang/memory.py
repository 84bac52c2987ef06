"""SGLang's KV pool: ``mem_fraction_static`` × memory before loading − weights."""

from __future__ import annotations

from servespec.knowledge.gpus import GpuModel
from servespec.knowledge.memory import (
    CONTEXT_GIB,
    EstimateInput,
    GpuEstimate,
    cuda_total_gib,
    finish,
    number,
    weights_per_gpu,
)


def _sglang_fraction(inp: EstimateInput, gpu: GpuModel) -> float:
    """SGLang's default mem_fraction_static (arg_groups/memory_hook.py handle_gpu_memory_settings)."""
    mib = gpu.memory_mib
    chunk = 2048 if mib < 20480 else 4096 if mib < 61440 else 8192 if mib < 163840 else 16384
    tp_size = inp.moe_group or inp.tensor_parallel  # SGLang's --tp-size: all ranks with --enable-dp-attention
    small_tp = tp_size < 4
    if mib < 20480:
        max_bs = 8
    elif mib < 35840:
        max_bs = 48 if small_tp else 160
    elif mib < 61440:
        max_bs = 32 if small_tp else 160
    elif mib < 163840:
        max_bs = 256 if small_tp else 512
    else:
        max_bs = 512
    chunk = int(number(inp.options, "chunked_prefill_size", chunk))
    reserved = 512 + max(chunk, 2048) * 1.5 + tp_size * inp.pipeline_parallel / 8 * 1024 + max_bs * 2
    if mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    return round((mib - reserved) / mib, 3)


def estimate(inp: EstimateInput, weights: float | None = None) -> GpuEstimate | None:
    """SGLang's KV pool: mem_fraction_static × memory before loading − weights; None without a GPU.

    ``weights``: GiB per GPU when not the whole model's share (KTransformers keeps experts in host RAM)."""
    gpu = inp.gpu
    if gpu is None:
        return None
    total = cuda_total_gib(gpu)
    fraction = number(inp.options, "mem_fraction_static", 0) or _sglang_fraction(inp, gpu)
    weights = weights_per_gpu(inp) if weights is None else weights
    before_load = total - CONTEXT_GIB
    kv = before_load * fraction - weights
    overhead = before_load * (1 - fraction) + CONTEXT_GIB
    return finish(inp, total, weights, overhead, kv, 1, [f"mem_fraction_static {fraction}"], fraction)
