"""SGLang's KV pool: ``mem_fraction_static`` × memory before loading − weights."""

from __future__ import annotations

from servespec.engines.catalog import MemFractionDefault
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


def _from_table(rule: MemFractionDefault, parallel: int) -> float:
    return next((fraction for size, fraction in rule.table if parallel >= size), rule.else_fraction)


def _reserved_formula(inp: EstimateInput, mib: int, rule: MemFractionDefault | None) -> float:
    """0.5.3+: 512 MiB + activations of the prefill chunk + CUDA graphs + parallel size (at least 10 GiB over 60)."""
    small_chunk = rule.small_gpu_chunk if rule is not None and rule.small_gpu_chunk else 4096
    tiers = ((20480, 2048), (35840, small_chunk), (61440, 4096), (163840, 8192))
    chunk = next((size for below, size in tiers if mib < below), 16384)
    tp_size = inp.moe_group or inp.tensor_parallel  # SGLang's --tp-size: all ranks with --enable-dp-attention
    small_tp = tp_size < 4
    small_gpu = rule.graph_bs_small_gpu if rule is not None and rule.graph_bs_small_gpu else (48, 160)
    if mib < 20480:
        max_bs = 8
    elif mib < 35840:
        max_bs = small_gpu[0] if small_tp else small_gpu[1]
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


def _sglang_fraction(inp: EstimateInput, gpu: GpuModel) -> float:
    """The release's default mem_fraction_static (its catalog's ``mem_fraction_default``, read from its source).

    A release without the fact (outside the catalogued range) gets the newest rule.
    """
    mib = gpu.memory_mib
    rule = inp.release.facts.mem_fraction_default if inp.release else None
    variant = rule.variant if rule is not None else "reserved_formula"
    if rule is None or variant == "reserved_formula":
        return _reserved_formula(inp, mib, rule)
    tp_size = inp.moe_group or inp.tensor_parallel
    if variant == "tp_table":
        return _from_table(rule, tp_size)
    if variant == "tp_table_large_gpu":
        return _from_table(rule, tp_size) if mib <= 81920 else (mib - 1024 * 13) / mib
    if variant == "parallel_table_large_gpu":
        parallel = tp_size * inp.pipeline_parallel
        fraction = _from_table(rule, parallel) if mib <= 81920 else rule.else_fraction
        if rule.b200_fraction is not None and mib > 180 * 1000:  # SGLang compares MiB with 180 * 1000
            return rule.b200_fraction
        if mib > 96 * 1024:
            fraction = min(fraction + 48 * 1024 * (1 - fraction) / mib, (mib - 1024 * 18) / mib)
        return fraction
    parallel = tp_size * inp.pipeline_parallel
    gib = mib / 1024
    _, base, divisor = next((row for row in rule.reserved if row[0] is None or gib < row[0]), rule.reserved[-1])
    reserved = (base + (parallel / divisor if divisor else 0)) * 1024
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
