"""The memory estimator's shared arithmetic: weights, KV bytes per token, the plan every engine ends in.

Every engine budgets GPU memory differently; each engine's own arithmetic is its unit's
``memory.py`` (``servespec/engines/<name>/``), built on this module, so that ``deploy
estimate`` and the MEM rules predict what the engine itself will log at start-up:

- vLLM: ``gpu_memory_utilization × total − weights − activation peak − non-torch``,
  minus the CUDA-graph estimate from the releases that profile it (vllm/v1/worker/gpu_worker.py).
- SGLang: ``mem_fraction_static × total − weights`` (model_runner / memory_hook.py), with the
  default fraction computed from the GPU's memory as SGLang does.
- TGI: ``cuda_memory_fraction × TGI_WIGGLE_ROOM × total − weights − warm-up peak``
  (server/text_generation_server/models/flash_causal_lm.py).
- TensorRT-LLM: ``free_gpu_memory_fraction × (free memory after weights and activations)``.
- llama.cpp and Ollama: weights by GGUF type + KV cache by cache type + compute buffers,
  which must fit; nothing is pre-allocated by fraction.

Some numbers are not from any engine's source and are marked where they stand: fitted on
the recorded logs (the CUDA-visible share, vLLM's non-torch overhead) or assumed (the CUDA
context, the activation-width model, the CUDA-graph allowance, the GGUF compute buffer,
fallback vocabulary and bits-per-weight values, and defaults used when a release's catalog
has none). ``tests/test_estimator_logs.py`` measures the whole estimate against real
start-up logs; it does not isolate any single assumed number.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from servespec.engines.catalog import EngineRelease
from servespec.knowledge.gpus import GpuModel
from servespec.knowledge.models import ModelFacts

GIB = 1024**3
CUDA_VISIBLE_SHARE = 0.993
"""Fitted: torch's total memory is below nvidia-smi's memory.total (A100 80GB logs: 79.3 of
80.0 GiB; H200: 139.8 of 140.4 GiB)."""
CONTEXT_GIB = 0.5
"""Assumed: CUDA context and library handles outside any engine budget (engines that measure
free memory see it). Not measured per GPU or driver."""
VLLM_NON_TORCH_GIB = (0.05, 0.25)
"""Fitted on the recorded vLLM logs: non-torch growth during profiling for one GPU, and the
extra for NCCL when tensor or pipeline parallel is used."""

_DTYPE_BYTES = {"float32": 4.0, "float16": 2.0, "bfloat16": 2.0, "auto": 2.0}
_KV_DTYPE_BYTES = {
    "auto": None,
    "fp8": 1.0,
    "fp8_e4m3": 1.0,
    "fp8_e5m2": 1.0,
    "fp8_e4m3fn": 1.0,
    "bfloat16": 2.0,
    "bf16": 2.0,
    "float16": 2.0,
    "f16": 2.0,
    "f32": 4.0,
    "q8_0": 34 / 32,
    "q4_0": 18 / 32,
    "q4_1": 20 / 32,
    "q5_0": 22 / 32,
    "q5_1": 24 / 32,
    "iq4_nl": 18 / 32,
}
# Bits per weight of weight-only formats: 4-bit AWQ/GPTQ store a 16-bit scale and a 4-bit
# zero point per group of 128; NVFP4 an FP8 scale per 16; MXFP4 an 8-bit scale per 32.
# bitsandbytes quantizes to NF4 with an 8-bit absmax per 64 weights (vLLM's in-flight default).
_QUANT_BITS = {
    "awq": 4 + 20 / 128,
    "gptq": 4 + 20 / 128,
    "int4": 4 + 20 / 128,
    "fp8": 8.0,
    "int8": 8.0,
    "nvfp4": 4.5,
    "mxfp4": 4.25,
    "bitsandbytes": 4 + 8 / 64,
}
LLAMA3_8B_PARAMS = 8.03e9
"""llama-quantize documents file sizes "@ Llama-3-8B"; its parameter count (counted from its
config) turns them into bits per weight."""


@dataclass(frozen=True)
class EstimateInput:
    """Everything one replica's memory depends on."""

    engine: str
    release: EngineRelease | None
    model: ModelFacts
    gpu: GpuModel | None
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    dtype: str = "auto"
    quantization: str | None = None
    gguf_type: str | None = None
    max_model_len: int = 4096
    options: dict[str, Any] = field(default_factory=dict)
    host_memory_gib: float | None = None
    """System memory, for CPU-only hosts (llama.cpp/Ollama without a GPU)."""
    engine_version: str = ""
    """The spec's ``engine.version`` (the release catalog may be an earlier one)."""
    engine_core: str | None = None
    """vLLM's engine core when known otherwise than from the release (``v0``/``v1``: a recorded log states it)."""
    kv_cache_dtype_option: str | None = None
    """The engine's option for the KV cache's element type (profile ``kv_cache_dtype_option``)."""


@dataclass(frozen=True)
class KvLayout:
    """A KV cache whose layers do not all cache every token (sliding windows, linear attention)."""

    tokens: int
    """What the engine reports as its KV-cache size in tokens."""
    sequences: float
    """Concurrent ``max_model_len`` sequences the cache holds."""
    one_sequence_bytes: float
    """Bytes one ``max_model_len`` sequence takes on one GPU."""
    growing_bytes_per_token: float
    """Bytes per token of the layers that grow with the context (the full-attention ones)."""


@dataclass(frozen=True)
class GpuEstimate:
    """The memory plan of one GPU of a replica (or of the host's RAM on CPU hosts)."""

    total_gib: float
    weights_gib: float
    overhead_gib: float
    kv_cache_gib: float
    kv_tokens: int
    max_sequences: float
    kv_bytes_per_token: float
    one_sequence_gib: float
    claimed_fraction: float = 1.0
    """Share of the GPU's memory the engine claims at start-up (what MEM004 adds up)."""
    notes: tuple[str, ...] = ()


def dtype_bytes(model: ModelFacts, dtype: str) -> float:
    """Bytes per weight element for the chosen dtype (``auto`` follows the checkpoint)."""
    if dtype == "auto" and model.torch_dtype == "float32":
        return 2.0  # engines load float32 checkpoints in 16-bit unless float32 is asked for
    return _DTYPE_BYTES.get(dtype, 2.0)


def gguf_bits(release: EngineRelease | None, gguf_type: str | None) -> float | None:
    """Bits per weight of a GGUF file type, from llama.cpp's own quantize table."""
    if gguf_type is None:
        return None
    kinds = release.facts.gguf_file_types if release else {}
    types = release.facts.ggml_quant_types if release else {}
    name = gguf_type.upper()
    entry = kinds.get(name) or kinds.get(name.replace("_M", "_K_M"))
    if entry:
        text = entry.quantize_help
        size = re.match(r"\s*([\d.]+)G, .*Llama-3-8B", text)
        if size:
            return float(size.group(1)) * GIB * 8 / LLAMA3_8B_PARAMS
        bpw = re.match(r"\s*([\d.]+)\s*bpw", text)
        if bpw:
            return float(bpw.group(1))
    if name in types:
        return types[name].bits_per_weight
    # Assumed, used only when the release's catalog lacks the type: approximate llama.cpp
    # bits per weight (Q8_0 and Q4_0 follow from their block layouts, 34 and 18 bytes per 32).
    fallback = {"Q4_K_M": 4.9, "Q8_0": 8.5, "F16": 16.0, "BF16": 16.0, "Q4_0": 4.5, "Q6_K": 6.56, "Q5_K_M": 5.7}
    return fallback.get(name)


def load_quantization(quantization: str | None) -> str | None:
    """The method a spec asks the engine to quantize with at load time; None for ``auto`` (or null)."""
    return None if quantization in (None, "auto") else quantization


def weight_bytes(inp: EstimateInput) -> float:
    """Bytes of all weights of the model as this engine loads them (one full copy).

    ``model.quantization: auto`` sizes the checkpoint as its ``quantization_config`` says
    (knowledge/models.py ``_quantization``: bits per quantized weight, scales included);
    embeddings and the LM head stay in the model's dtype, and MXFP4 (gpt-oss) quantizes the
    MoE experts only (its ``modules_to_not_convert``). An explicit method quantizes at load.
    """
    model = inp.model
    params = model.params
    embed = (model.vocab_size or 0) * model.hidden_size * (1 if model.tie_word_embeddings else 2)
    linear = max(params - embed, 0.0)
    element = dtype_bytes(model, inp.dtype)
    explicit = load_quantization(inp.quantization)
    method = explicit or model.quant_method
    if method == "gguf" or inp.gguf_type:
        same_file = inp.gguf_type is None or inp.gguf_type.upper() == (model.file_type or "").upper()
        if model.weight_bytes and same_file:
            return float(model.weight_bytes)  # the GGUF file's tensors, from its header
        return params * (gguf_bits(inp.release, inp.gguf_type) or 4.9) / 8
    bits = _QUANT_BITS.get(explicit) if explicit else model.quant_bits or _QUANT_BITS.get(method or "")
    if explicit is None and model.weight_bytes and inp.dtype == "auto":
        return float(model.weight_bytes)  # the checkpoint's tensors as stored
    if method == "mxfp4" and model.is_moe:
        experts = _expert_params(model)
        return experts * (bits or _QUANT_BITS["mxfp4"]) / 8 + (params - experts) * element
    if bits is None or bits >= element * 8:
        return params * element
    return linear * bits / 8 + embed * element


def _expert_params(model: ModelFacts) -> float:
    moe_layers = model.layers - model.dense_layers
    return moe_layers * (model.experts or 0) * 3 * model.hidden_size * (model.moe_intermediate_size or 0)


def kv_element_bytes(inp: EstimateInput) -> float:
    """Bytes per KV-cache element: the engine's kv-cache dtype option, else the model dtype."""
    value = inp.options.get(inp.kv_cache_dtype_option) if inp.kv_cache_dtype_option else None
    explicit = _KV_DTYPE_BYTES.get(str(value)) if value is not None else None
    return explicit if explicit is not None else dtype_bytes(inp.model, inp.dtype)


def layer_bytes_per_token(model: ModelFacts, element: float, tensor_parallel: int) -> float:
    """KV-cache bytes one token occupies in one attention layer on one GPU.

    KV heads split across tensor-parallel ranks; with fewer KV heads than ranks each rank
    keeps a replicated head (PAR004). MLA caches one latent per layer on every rank.
    """
    if model.is_mla:
        return ((model.kv_lora_rank or 0) + (model.qk_rope_head_dim or 0)) * element
    heads = max(1, model.kv_heads // tensor_parallel)
    return 2 * heads * model.head_dim * element


def kv_bytes_per_token(model: ModelFacts, element: float, tensor_parallel: int, pipeline_parallel: int) -> float:
    """KV-cache bytes one token occupies on one GPU when every attention layer caches every token.

    Linear-attention (Gated DeltaNet, Mamba) layers keep a fixed state per sequence instead
    and are not counted; sliding-window layers are, as engines without a hybrid layout do.
    """
    layers = math.ceil((model.layers - model.linear_layers) / pipeline_parallel)
    return layers * layer_bytes_per_token(model, element, tensor_parallel)


def linear_state_bytes(model: ModelFacts, element: float, tensor_parallel: int) -> float:
    """Bytes of one linear-attention layer's state for one sequence on one GPU.

    Gated DeltaNet (vLLM ``MambaStateShapeCalculator.gated_delta_net_state_shape``): a conv
    state of ``conv_channels / tp × (kernel − 1)`` and a recurrent state of
    ``value_heads / tp × key_head_dim × value_head_dim``, in the model's dtype.
    """
    conv, kernel, v_heads, k_dim, v_dim = model.linear_state
    return (conv // tensor_parallel * (kernel - 1) + v_heads // tensor_parallel * k_dim * v_dim) * element


def cuda_total_gib(gpu: GpuModel) -> float:
    """Memory the CUDA runtime reports as total, from nvidia-smi's memory.total."""
    return gpu.memory_gib * CUDA_VISIBLE_SHARE


def finish(
    inp: EstimateInput,
    total: float,
    weights: float,
    overhead: float,
    kv_gib: float,
    block: int,
    notes: list[str],
    claimed: float,
) -> GpuEstimate:
    per_token = kv_bytes_per_token(inp.model, kv_element_bytes(inp), inp.tensor_parallel, inp.pipeline_parallel)
    usable = max(kv_gib, 0.0)
    blocks = int(usable * GIB // (per_token * block)) if per_token else 0
    return plan(inp, total, weights, overhead, kv_gib, blocks * block, per_token, claimed, notes)


def plan(
    inp: EstimateInput,
    total: float,
    weights: float,
    overhead: float,
    kv_gib: float,
    tokens: int,
    per_token: float,
    claimed: float,
    notes: list[str],
    layout: KvLayout | None = None,
) -> GpuEstimate:
    """The rounded estimate every engine's arithmetic ends in (``layout``: a hybrid KV layout's own figures)."""
    if layout is not None:
        return GpuEstimate(
            total_gib=round(total, 2),
            weights_gib=round(weights, 2),
            overhead_gib=round(overhead, 2),
            kv_cache_gib=round(kv_gib, 2),
            kv_tokens=layout.tokens,
            max_sequences=round(layout.sequences, 2),
            kv_bytes_per_token=layout.growing_bytes_per_token,
            one_sequence_gib=round(layout.one_sequence_bytes / GIB, 3),
            claimed_fraction=round(claimed, 3),
            notes=tuple(notes),
        )
    return GpuEstimate(
        total_gib=round(total, 2),
        weights_gib=round(weights, 2),
        overhead_gib=round(overhead, 2),
        kv_cache_gib=round(kv_gib, 2),
        kv_tokens=tokens,
        max_sequences=round(tokens / inp.max_model_len, 2) if inp.max_model_len else 0.0,
        kv_bytes_per_token=per_token,
        one_sequence_gib=round(per_token * inp.max_model_len / GIB, 3),
        claimed_fraction=round(claimed, 3),
        notes=tuple(notes),
    )


def number(options: dict[str, Any], key: str, default: float) -> float:
    """A numeric option, or ``default`` when unset or not a number (ENG002 reports bad values)."""
    value = options.get(key)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return default


def weights_per_gpu(inp: EstimateInput) -> float:
    return weight_bytes(inp) / (inp.tensor_parallel * inp.pipeline_parallel) / GIB


def activation_gib(inp: EstimateInput, tokens: int, sequences: int) -> float:
    """Peak activations of a profiling forward pass over ``tokens`` tokens, plus sampler logits."""
    model = inp.model
    # Assumed model, not from an engine: the MLP's gate/up/down buffers plus four hidden-size
    # buffers per token, in 16 bits; the sampler's float32 logits twice (32000: assumed vocab).
    intermediate = model.moe_intermediate_size if model.is_moe else model.intermediate_size
    width = 3 * (intermediate or 4 * model.hidden_size) / inp.tensor_parallel + 4 * model.hidden_size
    forward = tokens * width * 2
    sampler = sequences * (model.vocab_size or 32000) * 4 * 2
    return (forward + sampler) / GIB


def estimate_gguf(inp: EstimateInput, slots: int) -> GpuEstimate:
    """llama.cpp / Ollama: ``slots`` contexts are allocated up front; they must fit with the weights."""
    gpu = inp.gpu
    total = cuda_total_gib(gpu) if gpu else float(inp.host_memory_gib or 0.0)
    gpus = inp.tensor_parallel * inp.pipeline_parallel
    weights = weight_bytes(inp) / gpus / GIB
    context_tokens = inp.max_model_len * slots
    element = kv_element_bytes(inp)
    per_token_all = kv_bytes_per_token(inp.model, element, 1, 1) / gpus
    kv = per_token_all * context_tokens / GIB
    # Assumed: 0.25 GiB of compute buffers plus float32 logits of one micro-batch of 512 tokens.
    compute = 0.25 + (inp.model.vocab_size or 32000) * 512 * 4 / GIB
    overhead = compute + (CONTEXT_GIB if gpu else 0.0)
    notes = [f"{slots} slot(s) × {inp.max_model_len} tokens"]
    free_for_kv = total - weights - overhead
    tokens = context_tokens if free_for_kv >= kv else int(max(free_for_kv, 0) * GIB // max(per_token_all, 1))
    claimed = (weights + overhead + kv) / total if total else 1.0
    return plan(inp, total, weights, overhead, kv, tokens, per_token_all, claimed, notes)
