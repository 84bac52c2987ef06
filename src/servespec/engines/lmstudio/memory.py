"""LM Studio's memory: llama.cpp's arithmetic for a GGUF model (LM Studio runs it with its llama.cpp engine).

What is approximate, because llmster is closed source: the KV cache is taken as one cache of
``--context-length`` tokens shared by the ``--parallel`` predictions (llama-server's unified cache;
LM Studio documents continuous batching, not its cache layout:
https://lmstudio.ai/docs/app/advanced/parallel-requests), and ``--gpu RATIO`` as that share of the
model's layers on the GPU, rounded down (``off`` none, ``max`` all: gpuOptionParser,
https://github.com/lmstudio-ai/lms/blob/07b7252d6de26a3a58c1bb80ed7e75a2b17f5eb6/src/subcommands/load.ts).
Unset, LM Studio picks the offload itself; the estimate then fits layers to the GPU with no margin.
"""

from __future__ import annotations

import math

from servespec.engines.lmstudio import ENGINE, gpu_ratio
from servespec.knowledge.memory import EstimateInput, GpuEstimate, GpuLayers, KvCells, estimate_gguf


def kv_cells(inp: EstimateInput) -> KvCells:
    """One KV cache of the context length, shared by the parallel predictions (assumed, see the module)."""
    slots = ENGINE.slots(inp.options, inp.release)
    note = f"{slots} parallel prediction(s) share one KV cache of {inp.max_model_len} tokens (assumed)"
    return KvCells(inp.max_model_len, 1, note)


def gpu_layers(inp: EstimateInput) -> GpuLayers:
    """``--gpu`` as a share of the layers (rounded down); unset, as many as fit (LM Studio decides)."""
    value = inp.options.get("gpu")
    ratio = gpu_ratio(value) if value is not None else None
    if ratio is None:
        return GpuLayers("auto", reason="--gpu unset: LM Studio chooses the offload (estimated: as many as fit)")
    count = math.floor(ratio * inp.model.layers)
    if count >= inp.model.layers:
        return GpuLayers("all")
    return GpuLayers("count", count, f"--gpu {value}: {count} of {inp.model.layers} layers (approximate)")


def estimate(inp: EstimateInput) -> GpuEstimate:
    """LM Studio's plan on one GPU (or the host's RAM on CPU hosts)."""
    return estimate_gguf(inp, kv_cells(inp), gpu_layers(inp))
