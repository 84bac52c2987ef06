"""SGLang's KV pool: ``mem_fraction_static`` × memory before loading − weights.

The default ``mem_fraction_static``, its multimodal cut and the pool's baseline are the release's
own (``facts.memory`` of its catalog, read from its source by scripts/catalog/sglang_memory.py)."""

from __future__ import annotations

from dataclasses import replace

from servespec.engines.catalog import SglangFraction, SglangMemory
from servespec.engines.sglang import all_reduce, dsa, kt_memory, load_memory, mamba, mla, offload, swa
from servespec.knowledge.gpus import GpuModel
from servespec.knowledge.memory import (
    CONTEXT_GIB,
    GIB,
    EstimateInput,
    GpuEstimate,
    cuda_total_gib,
    finish,
    nccl_gib,
    number,
    plan,
    weights_per_gpu,
)

ROCM_SETUP_NOTE = (
    "ROCm: what RCCL allocates for its communicators in SGLang's distributed set-up (before its baseline) is set "
    "in RCCL, not SGLang or aiter, and is not modelled beyond the NCCL allowance (on MI355X, with aiter's 3 GiB "
    "and the quick all-reduce's 4 GiB counted, about 1 GiB per rank at TP2 and 3 GiB at TP8 stay unexplained), "
    "so the KV pool may be smaller than estimated"
)
"""On ROCm SGLang's distributed set-up creates an RCCL communicator for the tensor-parallel group and warms it
up with a one-element all-reduce (``PyNcclCommunicator.__init__``, v0.5.12 pynccl.py L110-L120), and builds
aiter's custom all-reduce and SGLang's quick all-reduce (engines/sglang/all_reduce.py, modelled), all before
``pre_model_load_memory`` is read (model_runner.py L1250-L1303). ``pre_warm_nccl`` (default ``is_hip()`` in the
dataclass, v0.5.12 server_args.py L725) is a store_true flag on the command line (L6522-L6526), so a CLI launch
leaves it off: the GLM-5.1 logs print ``pre_warm_nccl=False``. The logs (tests/data/startup_logs/sglang/005-011,
SGLang's ROCm images, which set ``ROCM_QUICK_REDUCE_QUANTIZATION=INT8`` and ``NCCL_MIN_NCHANNELS=112``) show
8.18 GB at TP2 and 10.04 GB at TP8 ("Init torch distributed ends ... mem usage"): 3.01 GiB of it aiter's buffers
(aiter 0.1.12.post1 and later in those images), 4.00 GiB the quick all-reduce's, and 1.17 / 3.03 GiB RCCL's
(its 2.27.7 communicator with at least 112 channels; RCCL's buffer sizes and which connections a one-element
all-reduce sets up are RCCL's, whose source for that release is not read here)."""

TOKEN_CAP_SOURCE = (
    "model_runner.py init_memory_pool: max_total_num_tokens = min(profiled, max_total_tokens) (v0.4.0 L491-L498, "
    "v0.4.7 L898-L905), then down to a multiple of page_size (v0.4.7 L907-L910; "
    "model_runner_kv_cache_mixin.py L378-L389 at v0.5.9)"
)
"""Where SGLang caps its pool at ``--max-total-tokens``: every catalogued release (0.4.0 on) takes the smaller
of the profiled token count and the option, before the pools are allocated, so the KV cache holds the cap."""

MAMBA_SPLIT_SOURCE = (
    "model_runner.py profile_max_num_token / handle_max_mamba_cache (v0.5.4 L1383-L1470; v0.5.10 "
    "model_runner_kv_cache_mixin.py L144-L238): for a model with Mamba / Gated DeltaNet layers (mambaish_config) the "
    "memory left after mem_fraction_static is split between a state pool of max_mamba_cache_size requests and the KV "
    "pool of the full-attention layers, by mamba_full_memory_ratio (default 0.9, server_args.py L382 / L550), by "
    "--max-mamba-cache-size, or by --max-running-requests with the radix cache off, and the speculative draft's "
    "intermediate states come off first; v0.5.2-v0.5.3 (Qwen3-Next) take max_mamba_cache_size requests' states "
    "(--max-running-requests, else 512) off the rest (v0.5.2 model_runner.py L308-L325, L1126-L1131)"
)
"""How SGLang shares the memory left after ``mem_fraction_static`` with a hybrid linear-attention model's recurrent
states: per release in ``facts.memory.mamba_split`` (scripts/catalog/sglang_memory.py), sized by
engines/sglang/mamba.py. A Qwen3.5-9B start-up at TP2 on two RTX 4090 (2026-04) logged 4.48 GB of states for 186
requests beside a 5.00 GB KV pool of 327,310 tokens; taking the whole rest as KV gave 635,222."""

VIT_BLOCK_PARAMS = 12
"""Assumed: a ViT block holds about 12 × hidden² parameters (attention 4h², MLP 8h²), so a tower's
layers × hidden² — what ``adjust_mem_fraction_for_vlm`` compares — is its parameters / 12 (the
model facts keep the tower's parameter count, not its depth and width)."""


def _gpu_defaults(fact: SglangFraction, mib: int, tp_size: int) -> tuple[int, int]:
    """The release's default (chunked_prefill_size, cuda_graph_max_bs) for this GPU and tp size."""
    for upper, chunk, small, large in fact.defaults_by_gpu or ():
        if upper is None or mib < upper:
            return chunk, small if tp_size < (fact.tp_split or 0) else large
    raise ValueError("defaults_by_gpu has no last row")


def _reserved_fraction(mib: int, reserved: float) -> float:
    return round((mib - reserved) / mib, 3)


def default_fraction(inp: EstimateInput, gpu: GpuModel, memory: SglangMemory) -> float:
    """The release's default mem_fraction_static for this replica (``facts.memory.fraction_default``)."""
    fact = memory.fraction_default
    mib = gpu.memory_mib
    tp_size = inp.moe_group or inp.tensor_parallel  # SGLang's --tp-size: all ranks with --enable-dp-attention
    if fact.variant == "parallel_table":
        parallel = tp_size * (inp.pipeline_parallel if fact.parallel == "tp_size * pp_size" else 1)
        fraction = next(f for n, f in fact.by_parallel or () if parallel >= n)
        big = fact.large_gpu
        if big is not None and mib > big.above_mib:
            fraction = (mib - big.reserved_mib) / mib if big.reserved_mib is not None else big.fraction or fraction
        if big is not None and big.huge_above_mib is not None and mib > big.huge_above_mib:
            return big.huge_fraction or fraction
        if big is not None and big.boost_above_mib is not None and mib > big.boost_above_mib:
            fraction = min(
                fraction + (big.boost_mib or 0) * (1 - fraction) / mib, (mib - (big.cap_reserved_mib or 0)) / mib
            )
        return fraction
    if fact.variant == "reserved_by_gpu":
        parallel = tp_size * inp.pipeline_parallel
        for upper, base, divisor in fact.rows or ():
            if upper is None or mib < upper:
                return _reserved_fraction(mib, (base + (parallel / divisor if divisor else 0)) * 1024)
        raise ValueError("reserved rows have no last row")
    chunk, max_bs = _gpu_defaults(fact, mib, tp_size)
    chunk = int(number(inp.options, "chunked_prefill_size", chunk))
    max_bs = int(number(inp.options, "cuda_graph_max_bs", max_bs))
    reserved = (
        (fact.constant_mib or 0)
        + max(chunk, fact.activation_min_tokens or 0) * (fact.mib_per_token or 0)
        + max_bs * (fact.mib_per_graph_bs or 0)
        + tp_size * inp.pipeline_parallel / (fact.parallel_divisor or 1) * (fact.parallel_mib or 0)
    )
    if fact.floor_above_mib is not None and mib > fact.floor_above_mib:
        reserved = max(reserved, fact.floor_mib or 0)
    return _reserved_fraction(mib, reserved)


def multimodal_cut(inp: EstimateInput, memory: SglangMemory) -> float:
    """The factor the release applies to a multimodal model's default fraction (1.0 when none)."""
    cut = memory.multimodal
    if cut is None or inp.model.vision_params <= 0:
        return 1.0
    if cut.kind == "factor":
        return cut.factor or 1.0
    baseline = (cut.baseline_vit_layers or 0) * (cut.baseline_vit_hidden or 0) ** 2
    ratio = inp.model.vision_params / VIT_BLOCK_PARAMS / baseline if baseline else 1.0
    dynamic = max(cut.low or 0.0, min(cut.high or 1.0, 1.0 - (cut.sensitivity or 0.0) * (ratio - 1.0)))
    return (cut.base or 1.0) * dynamic


def _communicators(inp: EstimateInput, memory: SglangMemory | None) -> tuple[float, list[str]]:
    """GiB per GPU the distributed set-up allocates before SGLang measures its baseline, and notes saying how:
    NCCL's allowance, and on ROCm the custom and quick all-reduce buffers (engines/sglang/all_reduce.py)."""
    fact = memory.all_reduce if memory is not None else None
    reduce_gib, reduce_note = all_reduce.rocm_gib(inp, fact)
    quick_gib, quick_note = all_reduce.quick_reduce_gib(inp, fact)
    nccl = nccl_gib(inp)
    notes = [f"NCCL communicators {nccl:.2f} GiB before loading"] if nccl else []
    notes += [note for note in (reduce_note, quick_note) if note]
    if inp.gpu is not None and inp.gpu.vendor == "amd" and inp.tensor_parallel * inp.pipeline_parallel > 1:
        notes.append(ROCM_SETUP_NOTE)
    return nccl + reduce_gib + quick_gib, notes


def estimate(inp: EstimateInput, weights: float | None = None) -> GpuEstimate | None:
    """SGLang's KV pool: mem_fraction_static × memory before loading − weights; None without a GPU. A model with
    linear-attention (Gated DeltaNet) layers gives part of it to their states first (:data:`MAMBA_SPLIT_SOURCE`,
    engines/sglang/mamba.py); None where the release's split or the model's state shape is not modelled.

    ``weights``: GiB per GPU when not the whole model's share (KTransformers keeps experts in host RAM). With the
    ``--kt-*`` CPU/GPU expert split (sglang-kt, and upstream SGLang from the release that has ``--kt-weight-path``)
    the weights are the GPU's share of it (:mod:`~servespec.engines.sglang.kt_memory`)."""
    gpu = inp.gpu
    if gpu is None:
        return None
    if weights is None and kt_memory.applies(inp):
        return kt_memory.estimate(inp, lambda split, on_gpu: estimate(split, weights=on_gpu))
    total = cuda_total_gib(gpu)
    memory = inp.release.facts.memory if inp.release is not None else None
    given = dsa.fixed_fraction(inp) or number(inp.options, "mem_fraction_static", 0)
    if given:
        fraction = given
    elif memory is not None:
        fraction = round(default_fraction(inp, gpu, memory) * multimodal_cut(inp, memory), 3)
    else:
        return None  # the release's default is not known (no facts.memory): no answer rather than a guess
    replicated = mla.extra_gib(inp) if weights is None else 0.0
    building = weights is None
    weights = weights_per_gpu(inp) + replicated if weights is None else weights
    moved = offload.offloaded(inp, memory, weights)  # --cpu-offload-gb: layers' weights in host memory
    if moved is not None:
        weights -= moved.gib
    # the load's allocator segments and RoPE cache, where the build is replayed (not with weights moved to the host)
    load = load_memory.overhead(inp, memory) if building and (moved is None or not moved.gib) else None
    if load is not None:
        weights += load.gib
    # SGLang measures the memory it takes fractions of after its distributed set-up (model_runner.py
    # init_torch_distributed, then profile_max_num_token): NCCL's communicators are already allocated then.
    communicators, communicator_notes = _communicators(inp, memory)
    before_load = total - CONTEXT_GIB - communicators
    kv = before_load * fraction - weights
    overhead = before_load * (1 - fraction) + CONTEXT_GIB + communicators
    notes = [f"mem_fraction_static {fraction}"]
    if moved is not None:
        notes.append(moved.note)
    if load is not None:
        notes.append(load.note)
    if replicated:
        notes.append(f"MLA down-projections (and DSA indexer) whole on every rank: +{replicated:.2f} GiB")
    notes.extend(communicator_notes)
    lay_out = _beside_states if inp.model.linear_layers else _pool  # hybrid linear attention: its states first
    return lay_out(inp, memory, (total, weights, overhead, kv, fraction), notes)


def _beside_states(
    inp: EstimateInput,
    memory: SglangMemory | None,
    budget: tuple[float, float, float, float, float],
    notes: list[str],
) -> GpuEstimate | None:
    """The pool of a hybrid linear-attention model: the release's state pool comes off the rest first
    (:data:`MAMBA_SPLIT_SOURCE`, engines/sglang/mamba.py); None where that split is not modelled."""
    total, weights, overhead, kv, fraction = budget
    states = mamba.split(inp, memory.mamba_split if memory is not None else None, kv)
    if isinstance(states, str):
        return None  # the release's split or the model's state shape is not modelled: no figure
    notes.append(states.note)
    found = _pool(inp, memory, (total, weights, overhead + states.gib, kv - states.gib, fraction), notes)
    if found is not None and found.max_sequences > states.requests:
        found = replace(
            found, max_sequences=float(states.requests)
        )  # each running request holds a state slot (an upper bound of SGLang's cap)
    return found


def _pool(
    inp: EstimateInput,
    memory: SglangMemory | None,
    budget: tuple[float, float, float, float, float],
    notes: list[str],
) -> GpuEstimate | None:
    """The plan of the pool the release lays out in ``kv`` GiB (``budget``: total, weights, overhead, kv and the
    fraction, as :func:`estimate` worked them out): DSA's cell, the hybrid SWA pools, or one pool; capped at
    ``--max-total-tokens`` (:data:`TOKEN_CAP_SOURCE`)."""
    total, weights, overhead, kv, fraction = budget
    if dsa.applies(inp):
        # DeepSeek Sparse Attention: the release's own cell (MLA latent in its dtype and layout, indexer keys)
        per_token = dsa.cell_bytes(inp)
        tokens = int(max(kv, 0.0) * GIB // per_token) if per_token else 0
        notes.append(f"DSA cell {per_token:,.0f} bytes per token (MLA latent + indexer keys)")
        return _capped(inp, plan(inp, total, weights, overhead, kv, tokens, per_token, fraction, notes))
    hybrid = swa.pool(inp, memory, kv) if memory is not None else None
    if hybrid is not None:
        # the release's hybrid SWA pool (facts.memory.hybrid_swa): full layers and sliding ones in pools of their own
        notes.append(hybrid.note)
        layout = hybrid.layout(inp)
        cap = _token_cap(inp)
        if cap is not None and layout.tokens > cap:
            return None  # the release splits the capped count between its pools: not modelled, so no estimate
        return plan(
            inp, total, weights, overhead, kv, layout.tokens, layout.growing_bytes_per_token, fraction, notes, layout
        )
    return _capped(inp, finish(inp, total, weights, overhead, kv, 1, notes, fraction))


def _token_cap(inp: EstimateInput) -> int | None:
    """``--max-total-tokens`` as a whole number of pages (:data:`TOKEN_CAP_SOURCE`); None when unset."""
    cap = int(number(inp.options, "max_total_tokens", 0))
    if cap <= 0:
        return None
    page = max(int(number(inp.options, "page_size", 1)), 1)
    return cap // page * page


def _capped(inp: EstimateInput, found: GpuEstimate) -> GpuEstimate:
    """The plan with its pool cut to ``--max-total-tokens`` when the memory would hold more: SGLang allocates
    the cap, and the memory above it stays free (:data:`TOKEN_CAP_SOURCE`)."""
    cap = _token_cap(inp)
    if cap is None or found.kv_tokens <= cap:
        return found
    kv_bytes = cap * found.kv_bytes_per_token
    note = (
        f"max_total_tokens caps the pool at {cap:,} tokens (the memory holds {found.kv_tokens:,}): {TOKEN_CAP_SOURCE}"
    )
    return replace(
        found,
        kv_tokens=cap,
        kv_cache_gib=round(kv_bytes / GIB, 2),
        kv_cache_bytes=kv_bytes,
        max_sequences=round(cap / inp.max_model_len, 2) if inp.max_model_len else 0.0,
        notes=(*found.notes, note),
    )
