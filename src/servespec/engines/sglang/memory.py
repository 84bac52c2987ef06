"""SGLang's KV pool: ``mem_fraction_static`` × memory before loading − weights."""

from __future__ import annotations

from servespec.engines.sglang import dsa
from servespec.knowledge.gpus import GpuModel
from servespec.knowledge.memory import (
    CONTEXT_GIB,
    GIB,
    EstimateInput,
    GpuEstimate,
    cuda_total_gib,
    finish,
    number,
    plan,
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
    fraction = dsa.fixed_fraction(inp) or number(inp.options, "mem_fraction_static", 0) or _sglang_fraction(inp, gpu)
    weights = weights_per_gpu(inp) if weights is None else weights
    before_load = total - CONTEXT_GIB
    kv = before_load * fraction - weights
    overhead = before_load * (1 - fraction) + CONTEXT_GIB
    notes = [f"mem_fraction_static {fraction}"]
    if dsa.applies(inp):
        # DeepSeek Sparse Attention: the release's own cell (MLA latent in its dtype and layout, indexer keys)
        per_token = dsa.cell_bytes(inp)
        tokens = int(max(kv, 0.0) * GIB // per_token) if per_token else 0
        notes.append(f"DSA cell {per_token:,.0f} bytes per token (MLA latent + indexer keys)")
        return plan(inp, total, weights, overhead, kv, tokens, per_token, fraction, notes)
    return finish(inp, total, weights, overhead, kv, 1, notes, fraction)
