"""Ollama's memory: ``num_ctx × numParallel`` KV cells (llm/server.go ``KvSize``), layers fitted to VRAM.

``num_gpu`` (a Modelfile parameter, -1 by default) is the number of layers on the GPUs; at
-1 Ollama's scheduler puts as many as fit and keeps the rest in host memory
(https://github.com/ollama/ollama/blob/v0.32.15/llm/memory.go, ``EstimateGPULayers``), less
``OLLAMA_GPU_OVERHEAD`` per GPU.
"""

from __future__ import annotations

from servespec.engines.gguf import integer
from servespec.engines.ollama import ENGINE
from servespec.knowledge.memory import GIB, EstimateInput, GpuEstimate, GpuLayers, KvCells, estimate_gguf


def kv_cells(inp: EstimateInput) -> KvCells:
    """Each of ``num_parallel`` slots gets ``num_ctx`` cells."""
    slots = ENGINE.slots(inp.options, inp.release)
    return KvCells(inp.max_model_len, slots, f"{slots} slot(s) × {inp.max_model_len} tokens")


def gpu_layers(inp: EstimateInput) -> GpuLayers:
    """``num_gpu`` as given, else as many layers as fit (Ollama's own fitting)."""
    value = inp.options.get("modelfile.num_gpu", inp.options.get("num_gpu"))
    count = integer(value)
    if count is not None and count >= 0:
        return GpuLayers("all") if count >= inp.model.layers else GpuLayers("count", count, f"num_gpu {count}")
    overhead = integer(inp.options.get("gpu_overhead")) or 0
    return GpuLayers("auto", reason="num_gpu -1: Ollama fits layers to free VRAM", margin_gib=max(overhead, 0) / GIB)


def auto_parallel(inp: EstimateInput) -> int | None:
    """The slots a release before 0.10 tries when OLLAMA_NUM_PARALLEL is unset or 0, else None."""
    fact = inp.release.facts.auto_parallel if inp.release is not None else None
    value = integer(inp.options.get("num_parallel"))
    return fact.value if fact is not None and (value is None or value <= 0) else None


def estimate(inp: EstimateInput) -> GpuEstimate:
    """Ollama's plan on one GPU (or the host's RAM on CPU hosts).

    Before 0.10 an unset OLLAMA_NUM_PARALLEL makes the scheduler try ``defaultParallel`` slots
    (4, then 2 from 0.6.7) and load with them only when the whole model fits in VRAM, else
    with 1 (server/sched.go ``pickBestFullFitByLibrary``: "try larger then smaller, always end
    with 1"); on a CPU host it takes ``defaultParallel`` as it is.
    """
    tried = auto_parallel(inp)
    if tried is None:
        return estimate_gguf(inp, kv_cells(inp), gpu_layers(inp))
    context = inp.max_model_len
    source = inp.release.facts.auto_parallel.source if inp.release and inp.release.facts.auto_parallel else ""
    cells = KvCells(context, tried, f"{tried} automatic slot(s) × {context} tokens ({source})")
    first = estimate_gguf(inp, cells, gpu_layers(inp))
    whole = first.offload is None and first.weights_gib + first.overhead_gib + first.kv_cache_gib <= first.total_gib
    if inp.gpu is None or whole:
        return first
    note = f"1 slot × {context} tokens: {tried} automatic slots do not fit in VRAM, so Ollama loads 1 ({source})"
    return estimate_gguf(inp, KvCells(context, 1, note), gpu_layers(inp))
