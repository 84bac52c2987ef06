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
  which must fit; nothing is pre-allocated by fraction. The cells per layer (sliding-window
  layers by their window, padding) follow the release's ``kv_cache`` fact through the unit.

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
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from servespec.engines.catalog import ContextDefault, EngineRelease
from servespec.knowledge.gpus import GpuModel
from servespec.knowledge.models import ModelFacts, part_params

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

NVLS_GIB = 1.8
"""Measured: what NCCL's NVLink SHARP (NVLS) all-reduce adds to a tensor-parallel rank's non-torch memory on
NVSwitch boards of Hopper and later (:data:`NVLS_GPUS`). vLLM's PR 10511 logged non_torch_memory 1.79 GiB at TP1
and 3.58 GiB at TP2 for Llama-3-8B on one 79.22 GiB H100 (https://github.com/vllm-project/vllm/pull/10511, comment
of 2024-12-14); the llm-d-planner campaign's vLLM 0.19.0 logs on H100 SXM (tests/data/vllm_logs 042, 043, 050,
055, 065, 066, 076) log 2.06-2.21 GiB at TP 2 and 4 against 0.24-0.27 GiB at TP 1 and 0.07 GiB with pipeline
parallelism alone (point-to-point, no all-reduce); A100 boards (no NVLS) log no such step (009). NVIDIA's NeMo
launcher sets NCCL_NVLS_ENABLE=0 "for memory saving" (https://github.com/NVIDIA/NeMo-Framework-Launcher/pull/127).
NVLS is an all-reduce offload over NVLink within one node (https://github.com/NVIDIA/nccl/issues/1031)."""

NVLS_GPUS = frozenset(
    {"H100-SXM5-80GB", "H200-SXM-141GB", "H800-SXM5-80GB", "H20", "H20-3e", "B200", "B300", "GB200", "GB300"}
)
"""GPUs that come on NVSwitch (HGX / NVL) boards of Hopper or later: where NCCL uses NVLS by default. PCIe and
NVL-bridge parts (H100 PCIe, H100 NVL, H200 NVL) and earlier generations do not."""


def nvls_gib(inp: EstimateInput) -> float:
    """NCCL's NVLS buffers per GPU (:data:`NVLS_GIB`) when the replica all-reduces over an NVSwitch board."""
    gpu = inp.gpu
    return NVLS_GIB if gpu is not None and gpu.id in NVLS_GPUS and inp.tensor_parallel > 1 else 0.0


def nccl_gib(inp: EstimateInput) -> float:
    """Device memory NCCL's communicators take per GPU when the replica spans GPUs: the extra fitted on vLLM's
    logs (``VLLM_NON_TORCH_GIB[1]``) plus NVLS buffers on NVSwitch boards (:func:`nvls_gib`); 0 on one GPU."""
    spans = inp.tensor_parallel * inp.pipeline_parallel * inp.data_parallel > 1
    return (VLLM_NON_TORCH_GIB[1] if spans else 0.0) + nvls_gib(inp)


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
# Bits per weight of a format named without its checkpoint's config: 4-bit AWQ/GPTQ (and their
# Marlin/MoE kernels, AutoRound's GPTQ-style packing) store a 16-bit scale and a 4-bit zero point
# per group of 128; compressed-tensors W4A16 a 16-bit scale per 128 (symmetric); NVFP4 an FP8 scale
# per 16; MXFP4 an 8-bit scale per 32. bitsandbytes quantizes to NF4 with an 8-bit absmax per 64
# weights (vLLM's in-flight default). Names the format does not size (compressed-tensors) are absent.
_GROUP_INT4 = 4 + 20 / 128
_QUANT_BITS = {
    "awq": _GROUP_INT4,
    "awq_marlin": _GROUP_INT4,
    "gptq": _GROUP_INT4,
    "gptq_marlin": _GROUP_INT4,
    "moe_wna16": _GROUP_INT4,
    "auto_round": _GROUP_INT4,
    "auto-round": _GROUP_INT4,
    "int4": _GROUP_INT4,
    "w4a16": 4 + 16 / 128,
    "fp8": 8.0,
    "modelopt": 8.0,
    "int8": 8.0,
    "w8a8": 8.0,
    "w8a8_int8": 8.0,
    "w8a8_fp8": 8.0,
    "nvfp4": 4.5,
    "modelopt_fp4": 4.5,
    "mxfp4": 4.25,
    "bitsandbytes": 4 + 8 / 64,
}


def quant_bits_of_name(method: str) -> float | None:
    """Bits per weight the name alone fixes (scales included), or None where only the checkpoint's config can."""
    return _QUANT_BITS.get(method.strip().lower())


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
    """GPUs that shard one data-parallel rank's attention layers and KV cache."""
    pipeline_parallel: int = 1
    data_parallel: int = 1
    """Data-parallel ranks of the replica (engines/layout.py)."""
    moe_group: int = 0
    """GPUs of a pipeline stage that the routed experts are split over, by expert or tensor
    parallelism alike (each holds ``experts / moe_group`` of them); 0: ``tensor_parallel``."""
    expert_parallel: int = 1
    """GPUs of the MoE group that split the routed experts by expert, each holding whole experts (the layout's
    ``expert``: vLLM ``--enable-expert-parallel`` or ``resources.expert_parallel``); 1: each expert is
    tensor-sharded over the group."""
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
    context_basis: str = ""
    """Why ``max_model_len`` is what it is (``model.max_model_len``, or the engine's default and why)."""
    context_default: ContextDefault | None = None
    """The release's default when the spec sets no context: engine units refine it (TGI's KV
    capacity, llama.cpp's ``--fit``); None when the spec sets one."""
    host_memory_total_gib: float | None = None
    """The host's RAM, where layers a GGUF engine keeps off the GPUs live (None: not in the inventory)."""
    adapters: int = 0
    """``model.adapters`` entries: an engine that reserves LoRA slots at start-up (vLLM) counts them."""
    speculative: str | None = None
    """``model.speculative.method`` (None: no speculative decoding)."""
    draft: ModelFacts | None = None
    """The draft model's facts (``model.speculative.draft``) when known."""
    speculative_tokens: int | None = None
    """``model.speculative.num_tokens`` (vLLM ``num_speculative_tokens``); None: not given."""
    image: str | None = None
    """``engine.image``: the container image reference (None: the engine's official image)."""
    env: dict[str, str] = field(default_factory=dict)
    """The engine process's environment as the spec sets it (``engine.env``): variables an engine reads at
    start-up that change its memory (SGLang's ``ROCM_QUICK_REDUCE_QUANTIZATION``)."""
    flashinfer_sampler: bool | None = None
    """Whether the engine's environment lets vLLM's V1 sampler run FlashInfer's top-k/top-p kernels (FlashInfer
    installed in a version the release takes): what a recorded log says it ran. None: the spec's image decides (the
    release's official image installs FlashInfer or not: its ``profile_sampler_flashinfer`` fact)."""


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
class AfterKv:
    """What an engine allocates after it has sized and allocated the KV cache, against the memory its budget left
    (GiB per GPU): vLLM's warm-up (CUDA graphs, the sampler re-run) after ``gpu_memory_utilization × total``."""

    outside_gib: float
    """The device memory the budget leaves out: ``(1 − fraction) × total``."""
    context_gib: float
    """In use before the engine's own start-up snapshot (the CUDA context), which the budget does not count."""
    graphs_gib: float
    """CUDA graphs captured after the KV cache (an assumed size, not computed; 0 under ``enforce_eager``)."""
    sampler_gib: float
    """The sampler warm-up's allocation: ``sampler_rows`` dummy requests over the whole vocabulary."""
    sampler_rows: int
    reserved_gib: float
    """The profiled activation peak inside the budget, freed again when the warm-up runs."""
    source: str
    """The release's source of the warm-up (its ``post_kv_warmup`` fact)."""

    @property
    def shortfall_gib(self) -> float:
        """Memory the warm-up needs that is not there: the CUDA context and the sampler warm-up against what the
        budget leaves out plus the activation peak freed inside it (the graphs are not counted: their size is
        assumed, not computed)."""
        return self.context_gib + self.sampler_gib - self.outside_gib - self.reserved_gib

    @property
    def tight(self) -> bool:
        """The sampler warm-up fits only by reusing the activation peak's memory inside the budget: the context,
        the graphs and the warm-up exceed what the budget leaves out."""
        return self.sampler_gib > 0 and self.context_gib + self.graphs_gib + self.sampler_gib > self.outside_gib


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
    context_tokens: int = 0
    """The context per sequence the plan assumes (``max_sequences`` counts sequences of it)."""
    context_basis: str = ""
    """Why: ``model.max_model_len``, or the engine's default for the release and how it was found."""
    offload: Offload | None = None
    """Layers a GGUF engine keeps in host memory (None: every layer on the GPUs)."""
    beside_gib: float = 0.0
    """GiB per GPU that adapters or a draft model take beside the model (vLLM's LoRA slots), counted in
    ``overhead_gib``: MEM007 reports a KV cache they leave too small."""
    one_sequence_floor_gib: float | None = None
    """The least one sequence can need when the release's KV layout for this model is not known
    (a hybrid model on a release whose hybrid-manager fact is not catalogued): full-attention
    layers at the whole context, windowed ones at their window, state layers nothing per token.
    None: ``one_sequence_gib`` is the layout's own figure."""
    after_kv: AfterKv | None = None
    """What the engine allocates after the KV cache is sized, against the memory its budget left (MEM008);
    None: not modelled for the engine or release."""
    kv_cache_bytes: float = 0.0
    """``kv_cache_gib`` in bytes, unrounded: what a GGUF engine allocates is compared with its log to the byte
    (the per-token figure leaves out sliding-window layers' fixed cells)."""
    unified_memory: str = ""
    """On a GPU that shares the host's RAM (gpus.yaml ``unified_memory``): how the engine release's KV budget rests
    on the host's memory use during start-up, in words (MEM009); "" otherwise or when the engine does not say."""
    kv_cache_bytes_all_devices: float = 0.0
    """GGUF engines: the whole KV cache the engine lays out, every cell of every layer over the GPUs and host memory
    alike (llama.cpp sizes each layer's K and V the same wherever the layer is); 0 for the other engines."""


@dataclass(frozen=True)
class Offload:
    """A partial offload: ``gpu_layers`` of ``layers`` on the GPUs, the rest (weights and KV) in host RAM."""

    gpu_layers: int
    layers: int
    host_gib: float
    """Weights and KV cache of the layers kept in host memory."""
    host_total_gib: float | None
    """The host's RAM (None: the inventory does not say)."""
    reason: str
    """``n_gpu_layers 20`` as the spec sets it, or how the engine chose it (``--fit``, Ollama's scheduler)."""
    unit: str = "layers"
    """What ``gpu_layers`` of ``layers`` counts: layers, or KTransformers' routed experts of one MoE layer."""
    contents: str = "weights and KV cache"
    """What lives in host memory (KTransformers: the CPU experts' weights only)."""


def default_context(fact: ContextDefault | None, model: ModelFacts, vram_gib: float | None) -> tuple[int | None, str]:
    """The context a release serves when the spec sets none, and how it follows from the release's facts.

    ``vram_gib``: the total memory of the GPUs the engine sees on this host (0 on a CPU host),
    for defaults chosen by VRAM (Ollama). The model's maximum is its config's derived length
    (rope scaling included) or a GGUF's ``n_ctx_train``.
    """
    model_max = model.derived_max_len
    if fact is None:
        return model_max, f"the model's maximum ({model_max})" if model_max else ""
    tokens, why = fact.tokens, ""
    if fact.by_vram:
        vram = vram_gib or 0.0
        tier = next((t for t in fact.by_vram if vram >= t.min_vram_gib), fact.by_vram[-1])
        tokens, why = tier.tokens, f"chosen by VRAM: {vram:.1f} GiB ≥ {tier.min_vram_gib:g} GiB"
    elif tokens is not None:
        why = "fixed"
    else:
        tokens, why = model_max, "the model's maximum"
    if fact.cap is not None:
        if tokens is None or tokens > fact.cap:
            why = f"min(the model's maximum {model_max}, {fact.cap})" if model_max else f"{fact.cap} (no model maximum)"
        tokens = fact.cap if tokens is None else min(tokens, fact.cap)
    if fact.within_model and model_max and tokens is not None and tokens > model_max:
        tokens, why = model_max, f"{why}, lowered to the model's maximum"
    return tokens, why


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
    MoE experts only (its ``modules_to_not_convert``). An explicit method on a checkpoint that is
    already quantized names the kernel or format that loads it: the checkpoint's config still
    sizes it. On an unquantized one it quantizes at load, sized by the name.
    """
    model = inp.model
    params = model.params
    embed = (model.vocab_size or 0) * model.hidden_size * (1 if model.tie_word_embeddings else 2)
    linear = max(params - embed, 0.0)
    element = dtype_bytes(model, inp.dtype)
    explicit = load_quantization(inp.quantization)
    if explicit is not None and model.quant_method is not None and explicit != "gguf":
        explicit = None  # a pre-quantized checkpoint is loaded as it is stored
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
        experts = part_params(model)["experts"]
        return experts * (bits or _QUANT_BITS["mxfp4"]) / 8 + (params - experts) * element
    if explicit is None and model.quant_parts:
        return _by_part(model, bits, element)
    linear_bits = _linear_bits(inp)
    if linear_bits is None:
        return params * element
    return linear * linear_bits / 8 + embed * element


def _linear_bits(inp: EstimateInput) -> float | None:
    """Bits per weight of every linear layer where :func:`weight_bytes` sizes the model as quantized linear layers
    beside embeddings (and an LM head) in the model's dtype; None where it sizes it otherwise (unquantized, GGUF,
    MXFP4 experts, a checkpoint's own tensors or parts)."""
    model = inp.model
    element = dtype_bytes(model, inp.dtype)
    explicit = load_quantization(inp.quantization)
    if explicit is not None and model.quant_method is not None and explicit != "gguf":
        explicit = None
    method = explicit or model.quant_method
    if method == "gguf" or inp.gguf_type or (method == "mxfp4" and model.is_moe):
        return None
    if (explicit is None and model.weight_bytes and inp.dtype == "auto") or (explicit is None and model.quant_parts):
        return None
    bits = _QUANT_BITS.get(explicit) if explicit else model.quant_bits or _QUANT_BITS.get(method or "")
    return None if bits is None or bits >= element * 8 else bits


def _by_part(model: ModelFacts, bits: float | None, element: float) -> float:
    """Bytes of a checkpoint whose parts are stored differently (ModelOpt excluded modules, MIXED_PRECISION).

    Each part (attention, routed experts, other MLPs, the LM head) is stored as ``quant_parts``
    says for its share of layers and in ``bits`` for the rest (the model's dtype when a
    MIXED_PRECISION map, ``bits`` None, leaves it unnamed); the input embedding stays in the dtype.

    Under a MIXED_PRECISION map the vision tower and the MoE routers stay in the dtype as well, whatever the MLP
    part's bits: ``part_params`` counts them with the MLPs, but vLLM quantizes only the modules the map names
    (modelopt.py ``ModelOptMixedPrecisionConfig.get_quant_method``, v0.24.0 L2481-2490: a linear layer not in
    ``quantized_layers`` takes ``UnquantizedLinearMethod``), and the map names decoder projections only.
    """
    default = bits / 8 if bits is not None and bits < element * 8 else element
    sizes = part_params(model)
    unnamed = 0.0
    if bits is None:
        moe_layers = model.layers - model.dense_layers if model.is_moe else 0
        unnamed = model.vision_params + moe_layers * (model.experts or 0) * model.hidden_size
        unnamed = min(unnamed, sizes["mlp"])
        sizes["mlp"] -= unnamed
    head = 0.0 if model.tie_word_embeddings else (model.vocab_size or 0) * model.hidden_size
    sizes["lm_head"] = head
    total = (model.vocab_size or 0) * model.hidden_size * element + unnamed * element
    for part, count in sizes.items():
        rows = [(share, stored) for name, share, stored in model.quant_parts if name == part]
        covered = min(sum(share for share, _ in rows), 1.0)
        rest = element if part == "lm_head" and not rows else default
        total += count * (sum(share * (element if stored is None else stored / 8) for share, stored in rows))
        total += count * (1.0 - covered) * rest
    return total


def kv_element_bytes(inp: EstimateInput) -> float:
    """Bytes per KV-cache element: the engine's kv-cache dtype option, else the model dtype."""
    value = inp.options.get(inp.kv_cache_dtype_option) if inp.kv_cache_dtype_option else None
    explicit = _KV_DTYPE_BYTES.get(str(value)) if value is not None else None
    return explicit if explicit is not None else dtype_bytes(inp.model, inp.dtype)


def layer_bytes_per_token(model: ModelFacts, element: float, tensor_parallel: int) -> float:
    """KV-cache bytes one token occupies in one attention layer on one GPU (a sliding one where the full-attention
    layers have a shape of their own: :func:`full_layer_bytes_per_token`).

    KV heads split across tensor-parallel ranks; with fewer KV heads than ranks each rank
    keeps a replicated head (PAR004). MLA caches one latent per layer on every rank (a release that caches its keys
    and values per attention head passes the model so laid out: engines/vllm/memory.py ``mla_kv_input``).
    """
    if model.is_mla:
        return ((model.kv_lora_rank or 0) + (model.qk_rope_head_dim or 0)) * element
    heads = max(1, model.kv_heads // tensor_parallel)
    return 2 * heads * model.head_dim * element


def full_layer_bytes_per_token(model: ModelFacts, element: float, tensor_parallel: int) -> float:
    """KV-cache bytes one token occupies in one full-attention layer on one GPU.

    Gemma 4's full layers have their own head size and KV heads (``global_head_dim``, ``num_global_key_value_heads``):
    llama.cpp caches ``n_embd_k_gqa(il)`` + ``n_embd_v_gqa(il)`` per layer (src/llama-hparams.cpp), vLLM one
    ``FullAttentionSpec`` of the layer's ``head_size`` and ``num_kv_heads`` (model_executor/models/gemma4.py); a value
    is cached even where the keys serve as values (``attention_k_eq_v``).
    """
    if model.uniform_kv or model.is_mla:
        return layer_bytes_per_token(model, element, tensor_parallel)
    heads = max(1, (model.full_kv_heads or model.kv_heads) // tensor_parallel)
    return 2 * heads * (model.full_head_dim or model.head_dim) * element


def kv_bytes_per_token(model: ModelFacts, element: float, tensor_parallel: int, pipeline_parallel: int) -> float:
    """KV-cache bytes one token occupies on one GPU when every attention layer caches every token.

    Linear-attention (Gated DeltaNet, Mamba) layers keep a fixed state per sequence instead
    and are not counted, nor are layers that read another layer's cache (Gemma 3n/4
    ``num_kv_shared_layers``); sliding-window layers are, as engines without a hybrid layout do.
    """
    sliding, full = model.kv_sliding_layers, model.kv_full_layers
    per_layer = layer_bytes_per_token(model, element, tensor_parallel)
    if model.uniform_kv:
        return math.ceil((sliding + full) / pipeline_parallel) * per_layer
    per_full = full_layer_bytes_per_token(model, element, tensor_parallel)
    return math.ceil(sliding / pipeline_parallel) * per_layer + math.ceil(full / pipeline_parallel) * per_full


def linear_state_bytes(
    model: ModelFacts, element: float, tensor_parallel: int, recurrent: float | None = None
) -> float:
    """Bytes of one linear-attention layer's state for one sequence on one GPU.

    Gated DeltaNet (vLLM ``MambaStateShapeCalculator.gated_delta_net_state_shape``; Mamba-1, Mamba-2 and short
    conv by ``mamba1_state_shape``, ``mamba2_state_shape``, ``short_conv_state_shape``: knowledge/mamba.py): a conv
    state of ``conv_channels / tp × (kernel − 1)`` elements of ``element`` bytes and a recurrent
    state of ``value_heads / tp × key_head_dim × value_head_dim`` elements of ``recurrent`` bytes
    (``element`` when None: both in the model's dtype).
    """
    conv, kernel, v_heads, k_dim, v_dim = model.linear_state
    state = element if recurrent is None else recurrent
    groups = model.linear_groups
    if model.linear_kind == "mamba2" and groups % tensor_parallel:
        # mamba2_state_shape: n_groups + extra_groups_for_head_shards (tp - n_groups) when tp does not divide them
        conv += 2 * (tensor_parallel - groups) * v_dim
    return conv // tensor_parallel * (kernel - 1) * element + v_heads // tensor_parallel * k_dim * v_dim * state


HIP_VISIBLE_SHARE = 1.0
"""Assumed: the HIP runtime reports an AMD Instinct card's whole VRAM as total (rocm-smi's 192 GiB of an MI300X).
NVIDIA's share cannot hold there: SGLang logs 287.31 GiB free on an MI355X (288 GiB) before its distributed set-up
(tests/data/startup_logs/sglang/005, 007), more than 0.993 of it. A vLLM line quoting torch's total as 191.45 GiB on
an MI300X (0.997) was found but not tied to a linkable log."""


def cuda_total_gib(gpu: GpuModel) -> float:
    """Memory the CUDA (or HIP) runtime reports as total, from nvidia-smi's memory.total (rocm-smi's VRAM total);
    a unified-memory GPU's catalogued memory is already cudaMemGetInfo's total (gpus.yaml ``unified_memory``), and a
    card whose CUDA total public logs print has it catalogued (gpus.yaml ``cuda_total_gib``); other cards take
    :data:`CUDA_VISIBLE_SHARE` of nvidia-smi's figure."""
    if gpu.unified_memory:
        return gpu.memory_gib
    if gpu.cuda_total_gib is not None:
        return gpu.cuda_total_gib
    return gpu.memory_gib * (CUDA_VISIBLE_SHARE if gpu.vendor == "nvidia" else HIP_VISIBLE_SHARE)


def finish(
    inp: EstimateInput,
    total: float,
    weights: float,
    overhead: float,
    kv_gib: float,
    block: int,
    notes: list[str],
    claimed: float,
    extra_per_token: float = 0.0,
) -> GpuEstimate:
    """The plan of one KV layout where every layer caches every token (``extra_per_token``: a draft's KV bytes)."""
    per_token = kv_bytes_per_token(inp.model, kv_element_bytes(inp), inp.tensor_parallel, inp.pipeline_parallel)
    per_token += extra_per_token
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
    notes = [*notes, *_parallel_notes(inp)]
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
            context_tokens=inp.max_model_len,
            context_basis=inp.context_basis,
            kv_cache_bytes=kv_gib * GIB,
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
        context_tokens=inp.max_model_len,
        context_basis=inp.context_basis,
        kv_cache_bytes=kv_gib * GIB,
    )


def number(options: dict[str, Any], key: str, default: float) -> float:
    """A numeric option, or ``default`` when unset or not a number (ENG002 reports bad values)."""
    value = options.get(key)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return default


def _parallel_notes(inp: EstimateInput) -> list[str]:
    """How data and expert parallelism split this GPU's share (nothing for plain tensor/pipeline splits)."""
    group = inp.moe_group or inp.tensor_parallel
    if inp.data_parallel == 1 and group == inp.tensor_parallel:
        return []
    notes = [
        f"{inp.data_parallel} data-parallel rank(s), attention and KV cache of each on {inp.tensor_parallel} GPU(s)"
    ]
    if inp.model.is_moe and group != inp.tensor_parallel:
        known = part_params(inp.model)["experts"] > 0
        notes.append(
            f"routed experts split over {group} GPUs"
            + ("" if known else " (expert size unknown: all weights counted as split so, a lower bound)")
        )
    return notes


def routed_expert_bytes(inp: EstimateInput) -> float:
    """Bytes of the routed experts of every MoE layer, within :func:`weight_bytes` (0: a dense model).

    An MoE model whose expert size is not known (an inline architecture with ``params_b``) counts
    all its weights: the per-GPU figure is then a lower bound, so that MEM001 never rests on a guess.

    Their share of the weights is their share of the parameters (MXFP4 quantizes only them:
    they are counted at its bits per weight).
    """
    model = inp.model
    if not model.is_moe:
        return 0.0
    whole = weight_bytes(inp)
    experts = part_params(model)["experts"]
    if experts <= 0 or model.params <= 0:
        return whole  # share unknown: the lower bound, all split over the MoE group (no error rests on a guess)
    if (load_quantization(inp.quantization) or model.quant_method) == "mxfp4":
        return min(experts * _QUANT_BITS["mxfp4"] / 8, whole)
    bits = _linear_bits(inp)
    if bits is not None:
        # quantized linear layers beside embeddings kept in the dtype: the experts are linear layers, at ``bits``
        # (their share of the parameters would hand them part of the 16-bit embeddings)
        return min(experts * bits / 8, whole)
    return whole * min(experts / model.params, 1.0)


def weights_per_gpu(inp: EstimateInput) -> float:
    """GiB of weights on one GPU: each pipeline stage's dense part (attention, dense MLPs, shared
    experts, embeddings) split over ``tensor_parallel``, its routed experts over the MoE group
    (which spans the data-parallel ranks where the engine lays them out so: engines/layout.py)."""
    whole = weight_bytes(inp)
    experts = routed_expert_bytes(inp) if inp.moe_group else 0.0
    group = inp.moe_group or inp.tensor_parallel
    return ((whole - experts) / inp.tensor_parallel + experts / group) / inp.pipeline_parallel / GIB


def forward_activation_gib(inp: EstimateInput, tokens: int) -> float:
    """Peak activations of a profiling forward pass over ``tokens`` tokens (no sampler)."""
    model = inp.model
    # Assumed model, not from an engine: the MLP's gate/up/down buffers plus four hidden-size
    # buffers per token, in 16 bits.
    intermediate = model.moe_intermediate_size if model.is_moe else model.intermediate_size
    width = 3 * (intermediate or 4 * model.hidden_size) / inp.tensor_parallel + 4 * model.hidden_size
    return tokens * width * 2 / GIB


def activation_gib(inp: EstimateInput, tokens: int, sequences: int) -> float:
    """Peak activations of a profiling forward pass over ``tokens`` tokens, plus sampler logits."""
    # Assumed: the sampler's float32 logits twice (32000: assumed vocab).
    sampler = sequences * (inp.model.vocab_size or 32000) * 4 * 2
    return forward_activation_gib(inp, tokens) + sampler / GIB


@dataclass(frozen=True)
class KvCells:
    """How a GGUF engine allocates its KV cache: ``streams`` × ``per_sequence`` cells, all at start-up.

    ``full_cells`` and ``window_cells`` are the engine release's own rule (its unit's arithmetic):
    the cells one full-attention layer, and one of the ``window_layers`` sliding-window layers,
    allocate in all for a context of ``per_sequence`` tokens (the fit may shrink it).
    """

    per_sequence: int
    """The context each sequence may use (llama.cpp ``n_ctx_seq``, Ollama ``num_ctx``)."""
    streams: int
    """Sequences' worth of cells: the slots, or 1 when they share one unified cache."""
    note: str
    """How, for the plan's notes (``4 automatic slots share one unified KV cache``)."""
    full_cells: Callable[[int], int] | None = field(default=None, compare=False)
    """Cells of one full-attention layer for a context (None: ``context × streams``)."""
    window_cells: Callable[[int], int] | None = field(default=None, compare=False)
    """Cells of one sliding-window layer for a context (None: none is sized by its window)."""
    window_layers: int = 0
    """Layers ``window_cells`` applies to (the rest of the attention layers are full)."""
    window_note: str = ""
    state_bytes: int = 0
    """Bytes the engine counts with its KV cache that do not grow with the context (Ollama's Go engine: the linear
    layers' recurrent states per sequence); 0: none."""
    v_at_widest: bool = False
    """Every layer's V cache at the widest layer's V width (llama.cpp without flash attention keeps V transposed and
    sizes it ``n_embd_v_gqa_max()`` in every layer: Gemma 4's full and sliding layers differ); False: each its own."""
    mla_v_cache: bool = True
    """Whether a GGUF in llama.cpp's MLA layout (``ModelFacts.gguf_mla_latent``) also gets a V cache: True before
    llama.cpp's V-less cache (PR #19067), False for a build that keeps the latent in K alone (the unit's fact)."""


@dataclass(frozen=True)
class GpuLayers:
    """Which layers a GGUF engine puts on the GPUs: ``all``, a given ``count``, or ``auto`` (as many as fit)."""

    mode: Literal["all", "count", "auto"]
    count: int = 0
    reason: str = ""
    """How it was chosen: the option as set (``n_gpu_layers 20``), or the engine's automatic fitting."""
    margin_gib: float = 0.0
    """Memory the engine's fitting leaves free on each GPU (llama.cpp ``--fit`` target)."""
    fit_context: int | None = None
    """An unset context shrinks to fit, not below this (llama.cpp ``--fit``); None: it does not shrink."""


def _align_down(tokens: float, step: int) -> int:
    return int(tokens // step * step)


def _kv_bytes(inp: EstimateInput, cells: KvCells) -> tuple[Callable[[int], float], float]:
    """Bytes of the whole KV cache for a context, and the bytes per cell of the layers that grow with it.

    Each layer kind takes its own bytes per cell (Gemma 4's full layers, :func:`full_layer_bytes_per_token`);
    layers that reuse another's cache take none (llama.cpp ``hparams.has_kv``)."""
    element = kv_element_bytes(inp)
    per_window = layer_bytes_per_token(inp.model, element, 1)
    per_full = full_layer_bytes_per_token(inp.model, element, 1)
    if inp.model.is_mla:  # llama.cpp caches K and V of an MLA model as its GGUF lays them out (V-less from #19067)
        per_window = per_full = gguf_layer_bytes_per_token(inp.model, element, cells.mla_v_cache)[0]
    elif cells.v_at_widest and per_window != per_full:  # K and V are as wide in each layer kind: V at the widest
        widest = max(per_window, per_full) / 2
        per_window, per_full = per_window / 2 + widest, per_full / 2 + widest
    sliding = inp.model.kv_sliding_layers
    windowed = min(cells.window_layers, sliding) if cells.window_cells is not None else 0
    growing = inp.model.kv_full_layers * per_full + (sliding - windowed) * per_window

    def total(context: int) -> float:
        grown = cells.full_cells(context) if cells.full_cells is not None else context * cells.streams
        fixed = cells.window_cells(context) * windowed * per_window if cells.window_cells is not None else 0
        return grown * growing + fixed + cells.state_bytes

    return total, growing or inp.model.kv_full_layers * per_full + sliding * per_window


def gguf_layer_bytes_per_token(model: ModelFacts, element: float, v_cache: bool = True) -> tuple[float, str]:
    """Bytes one cell takes in one layer of an MLA model's KV cache in llama.cpp (and Ollama's llama.cpp runner),
    and how the layout was chosen.

    llama.cpp allocates K of ``n_embd_k_gqa`` and V of ``n_embd_v_gqa`` elements per cell and layer for every
    architecture (llama-kv-cache.cpp: https://github.com/ollama/ollama/blob/v0.9.0/llama/llama.cpp/src/
    llama-kv-cache.cpp#L82-L104 to https://github.com/ollama/ollama/blob/v0.24.0/llama/llama.cpp/src/
    llama-kv-cache.cpp#L112-L134): it has no latent-only cache. Ollama's Go engine puts the same K and V per cell
    (model/models/deepseek2/model.go: per-head K and V, or the latent and its kv_lora_rank part as V by
    ``attention.key_length_mla``, https://github.com/ollama/ollama/blob/v0.20.7/model/models/deepseek2/model.go#L99-L120,
    L252-L254). The widths come from the GGUF file
    (``model.gguf_kv_widths``: the latent, kv_lora_rank + rope and kv_lora_rank, in a file converted with llama.cpp's
    MLA layout of PR #12801; per attention head before it). A model not read from a GGUF takes the per-head layout:
    the only one builds before that PR load (Ollama vendors it from 0.6.8: ``n_embd_head_k_mla`` is absent from
    https://github.com/ollama/ollama/blob/v0.6.6/llama/llama.cpp/src/llama-model.cpp and present in v0.6.8's), and
    the layout of GGUFs converted before it; a file converted after it caches less.

    ``v_cache`` False: a llama.cpp build with the V-less cache (PR #19067, ``has_v = !is_mla``) allocates no V for a
    GGUF in the MLA layout (``model.gguf_mla_latent``), the latent and rope part in K alone; a per-head GGUF keeps
    both."""
    if model.gguf_kv_widths is not None:
        k, v = model.gguf_kv_widths
        if not v_cache and model.gguf_mla_latent:
            return k * element, f"MLA latent K width {k} per cell and layer, no V cache (llama.cpp's V-less cache)"
        return (k + v) * element, f"MLA K/V widths {k} + {v} per cell and layer, from the GGUF file"
    heads = model.attention_heads
    nope, rope, value = model.qk_nope_head_dim or 0, model.qk_rope_head_dim or 0, model.v_head_dim or 0
    if not (nope or value):  # no per-head sizes: the latent, K and V
        latent = model.kv_lora_rank or 0
        return (2 * latent + rope) * element, f"MLA latent K ({latent} + {rope}) and V ({latent}) per cell and layer"
    why = (
        f"MLA K/V per attention head ({heads} x ({nope} + {rope}) + {heads} x {value} per cell and layer): the GGUF's "
        "layout is not known, and llama.cpp before its MLA layout (PR #12801; Ollama before 0.6.8) and GGUFs "
        "converted before it cache per head; a GGUF converted with the MLA layout caches the latent (less)"
    )
    return heads * (nope + rope + value) * element, why


def estimate_gguf(inp: EstimateInput, cells: KvCells, layers: GpuLayers) -> GpuEstimate:
    """llama.cpp / Ollama: every cell of the KV cache is allocated up front; weights and KV must fit.

    On a GPU host, layers left in host memory (``layers``: a given count, or as many as fit
    when the engine fits them itself) take their weights and KV cache to host RAM. An unset
    context that the engine shrinks to fit (llama.cpp ``--fit``) is shrunk first, as its
    ``common_fit_params`` does, in steps of 256 tokens down to ``fit_context``. Sliding-window
    layers take the cells the release's own rule gives them (``cells.window_cells``).
    """
    gpu = inp.gpu
    total = cuda_total_gib(gpu) if gpu else float(inp.host_memory_gib or 0.0)
    gpus = inp.tensor_parallel * inp.pipeline_parallel
    weights_all = weight_bytes(inp) / GIB
    kv_bytes, per_token_all = _kv_bytes(inp, cells)
    # Assumed: 0.25 GiB of compute buffers plus float32 logits of one micro-batch of 512 tokens.
    compute = 0.25 + (inp.model.vocab_size or 32000) * 512 * 4 / GIB
    overhead = compute + (CONTEXT_GIB if gpu else 0.0)
    context, basis = cells.per_sequence, inp.context_basis
    notes = [cells.note, *([cells.window_note] if cells.window_note else [])]
    if inp.model.is_mla:
        notes.append(gguf_layer_bytes_per_token(inp.model, 1.0, cells.mla_v_cache)[1])
    budget = total - (layers.margin_gib if gpu else 0.0)

    def kv_gib(tokens: int) -> float:
        return kv_bytes(tokens) / GIB

    share = 1.0
    if gpu is not None and layers.mode == "count":
        share = min(max(layers.count, 0), inp.model.layers) / inp.model.layers
    if layers.fit_context is not None and gpu is not None:
        need = (weights_all + kv_gib(context)) * share / gpus + overhead
        if need > budget and per_token_all:
            room = (budget - overhead) * gpus / share - weights_all if share else 0.0
            # the windowed layers' cells stay as they are; the full layers' shrink with the context
            room -= max(kv_bytes(context) - per_token_all * context * cells.streams, 0.0) / GIB
            fitted = max(layers.fit_context, _align_down(room * GIB / (per_token_all * cells.streams), 256))
            if fitted < context:
                basis = f"{basis}, reduced to {fitted} by the engine's fitting to device memory"
                notes.append(f"context {context} reduced to {fitted} to fit")
                context = fitted
    if gpu is not None and layers.mode == "auto":
        whole = (weights_all + kv_gib(context)) / gpus
        if whole + overhead > budget:
            share = _align_down(max(budget - overhead, 0.0) / whole * inp.model.layers, 1) / inp.model.layers
    weights = weights_all * share / gpus
    kv = kv_gib(context) * share / gpus
    offload = None
    if share < 1.0:
        on_gpu = round(share * inp.model.layers)
        offload = Offload(
            gpu_layers=on_gpu,
            layers=inp.model.layers,
            host_gib=round((weights_all + kv_gib(context)) * (1 - share), 2),
            host_total_gib=inp.host_memory_total_gib,
            reason=layers.reason,
        )
        notes.append(f"{on_gpu} of {inp.model.layers} layers on the GPUs ({layers.reason}), the rest in host memory")
    tokens_all = context * cells.streams
    free_for_kv = total - weights - overhead
    fixed = max(kv_gib(context) - per_token_all * tokens_all / GIB, 0.0) * share / gpus
    per_gpu_token = per_token_all * share / gpus
    tokens = tokens_all if free_for_kv >= kv else int(max(free_for_kv - fixed, 0) * GIB // max(per_gpu_token, 1))
    claimed = (weights + overhead + kv) / total if total else 1.0
    sized = replace(inp, max_model_len=context, context_basis=basis)
    found = plan(sized, total, weights, overhead, kv, tokens, per_gpu_token, claimed, notes)
    cache_bytes = kv * GIB if free_for_kv >= kv else tokens * per_gpu_token + fixed * GIB
    return replace(found, offload=offload, kv_cache_bytes=cache_bytes, kv_cache_bytes_all_devices=kv_bytes(context))
