"""vLLM's KV-cache budget (v1/worker/gpu_worker.py ``determine_available_memory``)."""

from __future__ import annotations

from servespec.engines.catalog import version_key
from servespec.knowledge.memory import (
    VLLM_NON_TORCH_GIB,
    EstimateInput,
    GpuEstimate,
    activation_gib,
    cuda_total_gib,
    finish,
    number,
    weights_per_gpu,
)


def _big_gpu(inp: EstimateInput, total: float) -> bool:
    # vLLM's defaults for GPUs with >= 70 GiB that are not A100 (engine/arg_utils.py _set_default_args).
    return total >= 70 and inp.gpu is not None and "A100" not in inp.gpu.id


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
    # vLLM's V0 engine (the default before 0.8.0) profiles a whole max_model_len prompt when
    # chunked prefill is off, which V0 leaves off below 32K tokens of context.
    legacy = version_key(inp.engine_version) < (0, 8)
    if legacy and inp.max_model_len <= 32768 and inp.options.get("enable_chunked_prefill") is not True:
        batched = max(batched, inp.max_model_len)
    weights = weights_per_gpu(inp)
    parallel = inp.tensor_parallel * inp.pipeline_parallel > 1
    non_torch = VLLM_NON_TORCH_GIB[0] + (VLLM_NON_TORCH_GIB[1] if parallel else 0.0)
    overhead = activation_gib(inp, batched, seqs) + non_torch
    notes = [f"gpu_memory_utilization {utilization}", f"max_num_batched_tokens {batched}", f"max_num_seqs {seqs}"]
    if inp.release and version_key(inp.release.version) >= (0, 21) and inp.options.get("enforce_eager") is not True:
        # Releases since 0.21 subtract their CUDA-graph estimate from the budget (catalog fact);
        # its size, 0.5 GiB, is assumed, not computed as vLLM does.
        overhead += 0.5
        notes.append("CUDA-graph memory estimated in the budget")
    kv = utilization * total - weights - overhead
    fact = inp.release.facts.block_size_default if inp.release else None
    block = max(1, int(number(inp.options, "block_size", fact.value if fact else 16)))
    return finish(inp, total, weights, overhead, kv, block, notes, utilization)
