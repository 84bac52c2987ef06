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


def estimate(inp: EstimateInput) -> GpuEstimate:
    """Ollama's plan on one GPU (or the host's RAM on CPU hosts)."""
    return estimate_gguf(inp, kv_cells(inp), gpu_layers(inp))
