"""vLLM's KV-cache budget (v1/worker/gpu_worker.py ``determine_available_memory``)."""

from __future__ import annotations

import math

from servespec.engines.catalog import HybridKvCache
from servespec.knowledge.memory import (
    GIB,
    VLLM_NON_TORCH_GIB,
    EstimateInput,
    GpuEstimate,
    KvLayout,
    activation_gib,
    cuda_total_gib,
    finish,
    kv_element_bytes,
    layer_bytes_per_token,
    linear_state_bytes,
    number,
    plan,
    weights_per_gpu,
)


def _big_gpu(inp: EstimateInput, total: float) -> bool:
    # vLLM's defaults for GPUs with >= 70 GiB that are not A100 (engine/arg_utils.py _set_default_args).
    return total >= 70 and inp.gpu is not None and "A100" not in inp.gpu.id


def _engine_core(inp: EstimateInput) -> str:
    """``v0`` or ``v1``: what the input says (recorded logs), else the release's default engine."""
    fact = inp.release.facts.default_engine if inp.release else None
    return inp.engine_core or (fact.value if fact else "v1")


def estimate(inp: EstimateInput) -> GpuEstimate | None:
    """vLLM's KV budget (v1/worker/gpu_worker.py determine_available_memory); None without a GPU."""
    gpu = inp.gpu
    if gpu is None:
        return None
    total = cuda_total_gib(gpu)
    default = inp.release.default("gpu_memory_utilization") if inp.release else None
    utilization = number(inp.options, "gpu_memory_utilization", float(default or 0.9))
    big = _big_gpu(inp, total)
    seqs = int(number(inp.options, "max_num_seqs", 1024 if big else 256))
    batched = int(number(inp.options, "max_num_batched_tokens", 8192 if big else 2048))
    # vLLM's V0 engine (the default before 0.8.0: the release's default_engine fact) profiles a
    # whole max_model_len prompt when chunked prefill is off, which V0 leaves off below 32K tokens.
    chunked = inp.options.get("enable_chunked_prefill") is True
    if _engine_core(inp) == "v0" and inp.max_model_len <= 32768 and not chunked:
        batched = max(batched, inp.max_model_len)
    weights = weights_per_gpu(inp)
    parallel = inp.tensor_parallel * inp.pipeline_parallel * inp.data_parallel > 1
    non_torch = VLLM_NON_TORCH_GIB[0] + (VLLM_NON_TORCH_GIB[1] if parallel else 0.0)
    overhead = activation_gib(inp, batched, seqs) + non_torch
    notes = [f"gpu_memory_utilization {utilization}", f"max_num_batched_tokens {batched}", f"max_num_seqs {seqs}"]
    graphs = inp.release.facts.cuda_graph_memory_in_budget if inp.release else None
    if graphs is not None and graphs.value and inp.options.get("enforce_eager") is not True:
        # Releases that subtract their CUDA-graph estimate from the budget (the release fact);
        # its size, 0.5 GiB, is assumed, not computed as vLLM does.
        overhead += 0.5
        notes.append("CUDA-graph memory estimated in the budget")
    kv = utilization * total - weights - overhead
    fact = inp.release.facts.block_size_default if inp.release else None
    block = max(1, int(number(inp.options, "block_size", fact.value if fact else 16)))
    layout = hybrid_layout(inp, kv, block, batched)
    if layout is not None:
        notes.append("hybrid KV-cache layout (per-type layer groups)")
        return plan(inp, total, weights, overhead, kv, 0, 0.0, utilization, notes, layout)
    return finish(inp, total, weights, overhead, kv, block, notes, utilization)


def _group_size(counts: list[int], ratio: float | None) -> int:
    """Layers per KV-cache group: the smallest type's count, or the largest when within ``ratio``."""
    low, high = min(counts), max(counts)
    return high if ratio is not None and high < low * ratio else low


def hybrid_layout(inp: EstimateInput, kv_gib: float, block: int, batched: int) -> KvLayout | None:
    """The hybrid KV-cache manager's arithmetic (vllm/v1/core/kv_cache_utils.py), or None for one layer type.

    Layers of each kind (full, sliding or chunked window, linear-attention state) are split
    into groups of equal size; one pool of blocks of ``group_size`` pages serves every group.
    A request takes ``ceil(L / block)`` blocks per full group, its window's blocks (+1 for a
    sliding window) per windowed group and one block per state group. Where the release has
    no hybrid manager (``facts.hybrid_kv_cache`` None) or disables it (Llama 4 chunked
    attention by default), windowed layers cache every token like full ones.
    """
    model = inp.model
    fact: HybridKvCache | None = inp.release.facts.hybrid_kv_cache if inp.release else None
    pipeline = inp.pipeline_parallel
    attention = model.layers - model.linear_layers
    windowed = model.sliding_layers if model.sliding_window else 0
    keeps_window = fact is not None and (
        fact.chunked_local_attention if model.window_kind == "chunked" else fact.sliding_window_blocks
    )
    if not keeps_window:
        windowed = 0
    full = math.ceil((attention - windowed) / pipeline)
    windowed = math.ceil(windowed / pipeline)
    state = math.ceil(model.linear_layers / pipeline)
    counts = [count for count in (full, windowed, state) if count]
    if len(counts) < 2:
        return None
    element = kv_element_bytes(inp)
    per_layer = layer_bytes_per_token(model, element, inp.tensor_parallel)
    if state:
        # Attention blocks grow until one page holds a linear layer's state
        # (model_executor/models/config.py HybridAttentionMambaModelConfig).
        needed = linear_state_bytes(model, 2.0 if element < 2 else element, inp.tensor_parallel)
        block = max(block, 16 * math.ceil(needed / (16 * per_layer)))
    page = block * per_layer
    size = _group_size(counts, fact.group_size_ratio if fact else None)
    full_groups, window_groups, state_groups = (math.ceil(count / size) for count in (full, windowed, state))
    blocks = int(max(kv_gib, 0.0) * GIB // (page * size))
    length = max(inp.max_model_len, 1)
    window = model.sliding_window or 0
    if model.window_kind == "chunked":
        window_blocks = math.ceil(min(window + batched, length) / block)
    else:
        window_blocks = math.ceil(min(window - 1 + batched, length) / block) + 1
    per_request = full_groups * math.ceil(length / block) + window_groups * window_blocks + state_groups
    sequences = blocks / per_request
    groups = full_groups + window_groups + state_groups
    reported = fact.reported_tokens if fact else "blocks_per_group"
    tokens = blocks // groups * block if reported == "blocks_per_group" else int(sequences * length)
    return KvLayout(
        tokens=tokens,
        sequences=sequences,
        one_sequence_bytes=per_request * page * size,
        growing_bytes_per_token=full_groups * size * per_layer,
    )
