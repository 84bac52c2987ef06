"""Engine release catalogs: each release's real options and the few facts servespec reads.

``engines/<name>/releases/<version>.json`` is one release's option catalog, extracted from
that release's own source (``engines/FORMAT.md``). Its options are ids into the engine's
shared pool ``releases/options.json`` (an option unchanged across releases is stored once)
or, in hand-written files, inline entries. Its ``facts`` are typed (:class:`ReleaseFacts`,
validated when loaded); its ``notes`` keep the rest of what was extracted, with sources,
for people — code never reads them. A spec's ``engine.version`` is checked against the
same release when it is catalogued, else the nearest earlier one.

Only the file names are read to choose a release; a release file (and the pool) is parsed
when a spec needs it, so ``deploy validate`` pays for the releases it checks against.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.resources.abc import Traversable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from servespec.engines.versions import POOL as POOL  # re-exported: the pool's file name
from servespec.engines.versions import is_prerelease as is_prerelease
from servespec.engines.versions import ordered, release_names
from servespec.engines.versions import version_key as version_key


def capability(text: str | float | int | None) -> tuple[int, int] | None:
    """Parse a compute capability written ``8.9``, ``"8.9"`` or ``89``."""
    if text is None:
        return None
    value = str(text)
    if "." in value:
        major, minor = value.split(".", 1)
        return int(major), int(minor)
    number = int(value)
    return number // 10, number % 10


def normalize_option(name: str) -> str:
    """The catalog key for an option name as users write it (dashes to underscores)."""
    return name.lstrip("-").replace("-", "_")


class _Fact(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)  # built on first use (start-up)


class RemovedOption(_Fact):
    """An option an earlier release had and this one has not."""

    removed_in: str | None = None
    """The first release without it (None when only "absent here" is known)."""
    replaced_by: str | None = None
    source: str


class QuantizationMethod(_Fact):
    """A ``--quantization`` method the release accepts."""

    min_capability: str | None = None
    """``QuantizationConfig.get_min_capability()`` and the like, as ``"8.0"``; None: no minimum stated."""
    source: str


class ExclusiveBounds(_Fact):
    """A float option whose bound is strict (pydantic ``gt``/``lt``): the bound itself is refused."""

    min_exclusive: float | None = None
    max_exclusive: float | None = None
    source: str


class GgufFileType(_Fact):
    """A GGUF file type as ``llama-quantize`` lists it."""

    quantize_help: str
    """llama-quantize's description: a file size "@ Llama-3-8B" or a bits-per-weight figure."""


class GgmlType(_Fact):
    """A ggml tensor type's block layout (ggml.c ``type_traits``)."""

    block_size: int
    type_size_bytes: int
    bits_per_weight: float


class SourcedText(_Fact):
    value: str
    source: str


class SourcedInt(_Fact):
    value: int
    source: str


class SourcedBool(_Fact):
    value: bool
    source: str


class MmEncoderProfile(_Fact):
    """vLLM V1: how ``profile_run`` profiles a multimodal model's encoder before the KV cache is sized
    (scripts/catalog/vllm_mm_profile.py, read by ``ast`` from the release's model runner and encoder budget)."""

    runs_encoder: bool
    """The profiling run feeds dummy items of the modality with the most tokens per item through the encoder
    (``get_multimodal_embeddings`` / ``embed_multimodal`` / ``profile_encoder_cache``), inside the measured peak."""
    items_division: Literal["floor", "ceil"]
    """Items per dummy batch: ``encoder_budget // tokens_per_item`` (floor) or ``cdiv`` (ceil, before 0.10), capped by
    ``max_num_seqs`` x the items one prompt may hold, at least 1."""
    holds_outputs: bool
    """The encoder's outputs stay in ``encoder_cache`` through the language model's dummy run and sampler warm-up."""
    skip_option: str | None = None
    """The option that turns the encoder profiling off (``skip_mm_profiling``); None: the release has none."""
    default_limit: int
    """Items per prompt of a modality ``--limit-mm-per-prompt`` does not name, on V1 (``get_limit_per_prompt``:
    1 in 0.8.x, 999 from 0.9.0)."""
    source: str


class MlaKvCache(_Fact):
    """vLLM: how the release caches multi-head latent attention (scripts/catalog/vllm_mla.py reads it from the
    release's ModelConfig and DeepSeek-V2 model).

    The compressed latent (``kv_lora_rank + qk_rope_head_dim`` per token and layer, one vector on every rank)
    where ``ModelConfig.use_mla`` holds: a ``hf_text_config.model_type`` in ``latent_model_types``, ``disable_env``
    unset, and a quantization in ``latent_quantizations`` (None: any). Otherwise full per-head keys and values for
    each local attention head, of ``padded_head_size`` (None: ``qk_nope_head_dim + qk_rope_head_dim``, values
    padded to it)."""

    latent_model_types: list[str] = []
    """Model types ``is_deepseek_mla`` names; empty: the release has no latent cache (before 0.7.1)."""
    latent_quantizations: list[str] | None = None
    disable_env: str | None = None
    padded_head_size: int | None = None
    text_model_types: dict[str, str] = {}
    """Multimodal model types whose text config the release builds as a DeepSeek one (``kimi_vl``: ``deepseek_v2``)."""
    deepseek_v2: bool = True
    """The release has the DeepSeek-V2 model (model_executor/models/deepseek_v2.py, 0.5.1 on)."""
    source: str


class PostKvWarmup(_Fact):
    """vLLM: what the worker allocates after it has sized and allocated the KV cache (``compile_or_warm_up_model``).

    The budget is ``gpu_memory_utilization × total`` less what profiling measured; what the warm-up allocates
    afterwards must fit in what the budget left: the rest of the device and the profiled activation peak, freed
    again (scripts/catalog/vllm_post_kv.py reads it from each release's worker)."""

    cuda_graphs: bool
    """The warm-up captures the CUDA graphs (``capture_model``; skipped under ``enforce_eager``)."""
    sampler: bool
    """The warm-up re-runs the sampler on ``min(max_num_seqs, max_num_batched_tokens)`` dummy requests over the whole
    vocabulary (V1 ``_dummy_sampler_run``, after the graphs)."""
    sized_after_warmup_option: str | None = None
    """An option under which the release measures its KV blocks after the warm-up instead (0.34's
    ``enable_extensible_kv_cache``): then nothing it allocates falls outside the budget."""
    source: str


class SglangLargeGpu(_Fact):
    """SGLang 0.4.5.post3-0.4.7: the tp-size table's exception for GPUs above ``above_mib``."""

    above_mib: int
    reserved_mib: int | None = None
    """``(gpu_mem - reserved_mib) / gpu_mem`` above ``above_mib`` (0.4.5.post3-0.4.6.post1)."""
    fraction: float | None = None
    """A constant above ``above_mib`` (0.4.6.post2 on)."""
    boost_above_mib: int | None = None
    boost_mib: int | None = None
    cap_reserved_mib: int | None = None
    """Above ``boost_above_mib``: ``min(f + boost_mib * (1 - f) / gpu_mem, (gpu_mem - cap_reserved_mib) / gpu_mem)``."""
    huge_above_mib: int | None = None
    huge_fraction: float | None = None
    """Above ``huge_above_mib`` (CUDA): this fraction (0.4.6.post5-0.4.7)."""


class SglangFraction(_Fact):
    """How a SGLang release sets ``mem_fraction_static`` when it is not given (one variant).

    ``parallel_table``: ``by_parallel`` rows ``[min parallel size, fraction]``, largest first,
    ``large_gpu`` where the release has one. ``reserved_by_gpu``: ``rows`` ``[upper_mib | None,
    base_gib, divisor | None]``: ``reserved = (base_gib + parallel / divisor) * 1024`` MiB.
    ``reserved_formula``: ``reserved = constant_mib + max(chunked_prefill_size,
    activation_min_tokens) * mib_per_token + cuda_graph_max_bs * mib_per_graph_bs + tp * pp /
    parallel_divisor * parallel_mib``, at least ``floor_mib`` above ``floor_above_mib``; the
    defaults by GPU memory in ``defaults_by_gpu`` rows ``[upper_mib | None, chunked_prefill_size,
    max_bs below tp_split, max_bs from tp_split]``. The reserved variants round
    ``(gpu_mem - reserved) / gpu_mem`` to 3 places."""

    variant: Literal["parallel_table", "reserved_by_gpu", "reserved_formula"]
    parallel: str | None = None
    by_parallel: tuple[tuple[int, float], ...] | None = None
    large_gpu: SglangLargeGpu | None = None
    rows: tuple[tuple[int | None, float, int | None], ...] | None = None
    speculative_mib: int | None = None
    dp_attention_mib: int | None = None
    constant_mib: int | None = None
    activation_min_tokens: int | None = None
    mib_per_token: float | None = None
    mib_per_graph_bs: int | None = None
    parallel_divisor: int | None = None
    parallel_mib: int | None = None
    floor_above_mib: int | None = None
    floor_mib: int | None = None
    defaults_by_gpu: tuple[tuple[int | None, int, int, int], ...] | None = None
    tp_split: int | None = None
    source: str


class SglangMultimodal(_Fact):
    """The cut of a multimodal model's default ``mem_fraction_static``: ``factor`` (a constant), or
    ``vit_adjust`` (``adjust_mem_fraction_for_vlm``: ``base`` times ``1 - sensitivity * (complexity
    ratio - 1)`` clamped to ``[low, high]``; complexity = vision layers × hidden², against the baseline ViT)."""

    kind: Literal["factor", "vit_adjust"]
    factor: float | None = None
    base: float | None = None
    baseline_vit_layers: int | None = None
    baseline_vit_hidden: int | None = None
    sensitivity: float | None = None
    low: float | None = None
    high: float | None = None
    source: str


class SglangHybridSwa(_Fact):
    """SGLang's hybrid SWA pool: a full-attention pool and a sliding-window one holding ``ratio`` × its tokens.

    ``selection``: ``none`` (one pool for every model), ``sliding_model`` (0.4.9.post3-0.5.6: every model in
    ``architectures``, the ones whose SGLang class returns a sliding window, Llama 4 excepted), ``allowlist``
    (``is_hybrid_swa_model`` / ``is_hybrid_model``: the ``architectures`` named). ``chunked_ratio_option``: Llama 4
    takes the pool only with that option above 0 (0.4.9-0.5.7), its ratio ``(1 - r) + r * chunk / context_len``.
    ``config_opt_in``: a config's ``is_hybrid_swa`` also selects it (not read by servespec: model facts do not keep
    it). ``arithmetic``: ``layer_bytes`` ``full = memory / (F * n_full + ratio * S * n_swa)`` or ``layer_count``
    ``full = (memory / cell) * layers / (ratio * n_swa + n_full)`` (every layer's bytes alike); both page-aligned,
    ``swa = full * ratio``; the reported ``max_total_num_tokens`` is ``full``."""

    selection: Literal["none", "sliding_model", "allowlist"]
    architectures: tuple[str, ...] = ()
    chunked_ratio_option: str | None = None
    config_opt_in: bool = False
    ratio_option: str | None = None
    ratio_default: float | None = None
    disable_option: str | None = None
    arithmetic: Literal["layer_bytes", "layer_count"] | None = None
    source: str


class SglangAllReduce(_Fact):
    """SGLang: the custom all-reduce its tensor-parallel group builds in the distributed set-up, before the
    memory it takes fractions of is measured (scripts/catalog/sglang_memory.py ``_all_reduce``).

    ``hip``: ``aiter`` where ``dispatch_custom_allreduce`` returns aiter's ``CustomAllreduce`` by default
    (``aiter_kwargs``: what SGLang passes it; no ``max_size``, so aiter's default sizes its buffers:
    ``engines/sglang/aiter_all_reduce.json``), ``sglang`` for SGLang's own class (buffers meta_size +
    max_size, max_size, max_size). ``cuda``: ``v2`` where the JIT ``CustomAllReduceV2`` (buffers allocated
    in C++) is the CUDA default. ``quick_reduce_default``: ``ROCM_QUICK_REDUCE_QUANTIZATION``'s default
    (``NONE``: no quick all-reduce buffers); None where the release has no quick all-reduce.
    ``quick_reduce_archs`` / ``quick_reduce_world_sizes``: where ``QuickAllReduce`` initialises (the
    ``gcnArchName`` prefixes of ``qr_rocm_arch_available``, ``_SUPPORTED_WORLD_SIZES``; more than two GPUs only
    when fully connected); ``quick_reduce_max_size_env``: the variable that sets its largest input in MB (0 or
    unset: the kernel's default, which ``quick_reduce_default_max_gb`` states as the release's comment does);
    ``quick_reduce_regimes``: the values that variable takes (``QuickReduceRegime``; any other is refused with a
    warning and allocates nothing); ``quick_reduce_source``: the line of ``init_quick_all_reduce`` that reads
    the quantization variable.
    ``released``: the artefact's PyPI upload time (ISO 8601)."""

    hip: Literal["aiter", "sglang"]
    aiter_kwargs: tuple[str, ...] = ()
    sglang_max_size_cuda: int
    sglang_max_size_hip: int
    cuda: Literal["sglang", "v2"]
    quick_reduce_default: str | None = None
    quick_reduce_regimes: tuple[str, ...] = ()
    quick_reduce_archs: tuple[str, ...] = ()
    quick_reduce_world_sizes: tuple[int, ...] = ()
    quick_reduce_max_size_env: str | None = None
    quick_reduce_default_max_gb: int | None = None
    quick_reduce_source: str | None = None
    released: str | None = None
    source: str


class SglangCpuOffload(_Fact):
    """SGLang ``--cpu-offload-gb`` (scripts/catalog/sglang_memory.py ``_cpu_offload``): each rank moves up to
    ``cpu_offload_gb × 1024³`` bytes of weights to pinned host memory as ``make_layers`` creates the decoder layers,
    one parameter at a time in layer order until the bytes moved reach the budget (``granularity: parameter``: the
    last one may pass it); embeddings, the LM head and anything built outside ``make_layers`` stay on the GPU.
    ``architectures``: the ones whose model file builds its layers so (others offload nothing). ``resident``: parts
    of a layer the release keeps on the GPU (``mla_kv_b_proj``, ``kda_qkv_conv1d``: 0.5.21 on). The moved weights
    are copied back to the GPU layer by layer in each forward (after the KV pool is sized)."""

    granularity: Literal["parameter"]
    architectures: tuple[str, ...]
    resident: tuple[str, ...] = ()
    source: str


class SglangRopeCache(_Fact):
    """SGLang: how ``RotaryEmbedding`` keeps its ``cos_sin_cache`` (scripts/catalog/sglang_memory.py ``rope_cache``):
    ``max_position x rotary_dim`` elements, built on the GPU while the model is constructed (between the readings
    around ``load_model``), in ``float32`` or the ``model``'s dtype on each platform; ``shared``: ``get_rope`` keeps
    one per distinct argument set (``_ROPE_DICT``), so the layers of a model share one."""

    cuda: Literal["float32", "model"]
    hip: Literal["float32", "model"]
    shared: bool
    source: str


class SglangMambaSplit(_Fact):
    """SGLang: how the memory left after ``mem_fraction_static`` is shared between a hybrid linear-attention model's
    recurrent states (Mamba / Gated DeltaNet: a conv state and a temporal state per layer and request) and the KV pool
    of its full-attention layers (scripts/catalog/sglang_memory.py ``mamba_split``).

    ``fixed_requests`` (0.5.2-0.5.3.post1): ``--max-mamba-cache-size``, else ``--max-running-requests``, else
    ``fixed_requests`` requests' states come off the rest. ``ratio`` (0.5.3.post2 on): unless an explicit
    size applies (``explicit_size``: ``radix_off``: with ``--disable-radix-cache`` the option, else
    ``--max-running-requests``, else 512; ``radix_off_or_option``: the same when the radix cache is off or the option
    is given; ``option_then_requests``: the option, else ``--max-running-requests`` with the radix cache off),
    ``max_mamba_cache_size = int(rest × r / (1 + r) GiB // state bytes per request)`` with ``r`` the
    ``ratio_option`` (default ``ratio_default``), and ``rest − max_mamba_cache_size × state bytes`` is the KV pool's.
    ``unread``: the release has the split in a shape the builder does not read (none catalogued now). The conv
    state is kept in ``conv_dtype``; the temporal state in ``--mamba-ssm-dtype``, else (``ssm_dtype_from_config``)
    the config's ``mamba_ssm_dtype``, else ``ssm_dtype_default``."""

    variant: Literal["fixed_requests", "ratio", "unread"]
    fixed_requests: int | None = None
    requests_option: str | None = None
    ratio_option: str | None = None
    ratio_default: float | None = None
    size_option: str | None = None
    explicit_size: Literal["radix_off", "radix_off_or_option", "option_then_requests"] | None = None
    conv_dtype: str | None = None
    ssm_dtype_option: str | None = None
    ssm_dtype_default: str | None = None
    ssm_dtype_from_config: bool = False
    dtype_source: str | None = None
    padding_slot: bool = False
    """0.5.17 on: the count is ``int((rest × r / (1 + r) GiB − per_req) // per_req)`` and ``(count + 1) × per_req``
    comes off the rest (the pool's padding slot), on every path."""
    multimodal_reserve_mb: int | None = None
    """0.5.18 on: MiB a multimodal model's rest keeps back before the split (``SGLANG_VLM_CACHE_SIZE_MB``'s default;
    more with a GPU ``--mm-feature-transport``)."""
    source: str


class SglangMemory(_Fact):
    """SGLang: what the KV pool's size reads, per release (scripts/catalog/sglang_memory.py)."""

    fraction_default: SglangFraction
    multimodal: SglangMultimodal | None
    """None: the release applies no multimodal cut."""
    hybrid_swa: SglangHybridSwa | None = None
    """None only where the release was catalogued before the fact was read (a test requires it for SGLang's)."""
    pool_baseline: SourcedText
    """``total_minus_reserved``: ``rest_memory = available - total * (1 - mem_fraction_static)``,
    total measured after the distributed set-up (``profile_max_num_token``)."""
    all_reduce: SglangAllReduce | None = None
    """None in catalogs built before this fact (KTransformers' sglang-kt); every SGLang release has it."""
    cpu_offload: SglangCpuOffload | None = None
    """None in catalogs built before this fact (KTransformers' sglang-kt); every SGLang release has it."""
    rope_cache: SglangRopeCache | None = None
    """None where the release's models take their rotary embedding from vLLM (0.4.0-0.4.1.post6), or in catalogs
    built before this fact (KTransformers' sglang-kt)."""
    mamba_split: SglangMambaSplit | None = None
    """None where the release has no hybrid linear-attention state pool (before 0.5.2), or in catalogs built before
    this fact (KTransformers' sglang-kt)."""


class TgiPrefillDefault(_Fact):
    """TGI: the launcher's ``max_batch_prefill_tokens`` when it is not given (one variant).

    ``input_plus`` (2.0.0-2.4.0): ``max_input_tokens + margin`` (``max_batch_size × max_input_tokens`` with
    ``--max-batch-size``), ``max_input_tokens`` defaulting to ``min(max_position_embeddings, tokens) - 1``.
    ``min_position`` (2.4.1): ``min(tokens, max_position_embeddings)``. ``compute_optimal`` (3.0.0 on):
    ``min(optimal, max_position_embeddings, vram_maximum)``, ``optimal`` the card's f16 flops × shards over
    the model's flops per token when above ``min_optimal``, else ``by_model_type`` or ``tokens``."""

    variant: Literal["input_plus", "min_position", "compute_optimal"]
    tokens: int
    margin: int | None = None
    by_model_type: dict[str, int] = {}
    card_names: dict[str, str] = {}
    """``nvidia-smi``'s name, spaces to dashes, lower case -> the launcher's card (``impl From<&str> for Gpu``)."""
    card_tflops: dict[str, int] = {}
    """The launcher's card -> its f16 TFLOPs (``ComputeType::f16_flop``)."""
    min_optimal: int | None = None
    vram_wiggle: float | None = None
    """``ComputeType::vram``: memory.total × shards × cuda_memory_fraction × this (its ``TGI_WIGGLE_ROOM`` default)."""
    card_query: str | None = None
    """The tool the launcher reads the card and its memory with (``compute_type``: ``nvidia-smi``): on a GPU it does
    not answer for (an AMD card in the ROCm image) there is no ``optimal`` and no ``vram_maximum``."""
    source: str


class TgiMemory(_Fact):
    """TGI: what the warm-up's KV sizing reads, per release (scripts/catalog/tgi_memory.py)."""

    wiggle_room: float
    """``TGI_WIGGLE_ROOM``'s default (2.3 on) or the literal 0.95 of 2.0-2.2."""
    wiggle_of: Literal["free", "total"]
    """``free`` (2.0.0-2.4.1): the KV cache gets ``wiggle_room × (free - (1 - cuda_memory_fraction) × total)``;
    ``total`` (3.0.0 on): ``free - (1 - cuda_memory_fraction × wiggle_room) × total``; free measured after the
    warm-up prefill (flash_causal_lm.py ``warmup``)."""
    wiggle_source: str
    block_sizes: dict[str, int]
    """``BLOCK_SIZE`` per ``ATTENTION`` value (``paged``: the one block size before 2.1.1)."""
    default_attention: str
    fallback_model_types: tuple[str, ...] = ()
    """Model types the launcher forces to the fallback attention (``resolve_attention``; 2.2.0: FLASH_DECODING)."""
    flashinfer_head_dims: tuple[int, ...] = ()
    """Head dimensions the default attention takes; another forces the fallback (empty: no such rule)."""
    fallback_attention: Literal["flashdecoding", "by_capability"]
    """``by_capability``: ``paged`` below compute capability 8.0, else ``flashdecoding``."""
    attention_source: str
    prefill_default: TgiPrefillDefault
    warmup_logits_copies: int
    """``[prefill tokens × vocab]`` logits tensors (model dtype) the warm-up prefill holds at its peak: the
    router's warm-up asks for prefill logprobs, so the LM head runs on every prefill token; 2 (2.0-2.3: logits
    and log_softmax), 1 (2.4: log_softmax in place), 0 (3.0 on: dropped unless ``REQUEST_LOGPROBS``)."""
    warmup_logits_source: str
    warmup_logits_copies_sharded: int
    """The same tensors with the LM head split over several shards: the gathered head returns a transposed
    view, which ``log_softmax`` copies contiguous and writes through a temporary (2.4) or a new tensor (2.0-2.3):
    3 where the logits are kept, 0 from 3.0; the head's local shard (``1/shards`` of one) goes to torch's cache
    before."""
    mlp_intermediates: int
    """``[tokens × intermediate/shard]`` tensors at the MLP's peak (gate_up 2, the activation 1, the product 1)."""
    free_read_cached: bool
    """The free memory is read after the warm-up prefill without ``empty_cache()``: torch's cached blocks of the
    prefill count as used (unless a failed allocation made the caching allocator release them)."""
    warmup_peak_source: str
    warmup_requests: Literal["input_steps", "input_optional"]
    """How the router's warm-up splits the prefill budget: ``input_steps`` (2.0-2.4.0) requests of
    ``max_input_length`` each holding ``max_total_tokens - 1`` tokens of blocks; ``input_optional`` (2.4.1 on)
    requests of ``max_input_tokens`` if set (else one), holding ``max_total_tokens - 1`` if set, else their prompt."""
    warmup_requests_source: str
    rocm_free_memory: bool = False
    """A ROCm (HIP) build reads the warm-up's free memory with ``torch.cuda.mem_get_info`` too, so the arithmetic
    above holds on an AMD card (False: not shown by the release's source, no estimate there)."""
    rocm_image_attention: str | None = None
    """``ATTENTION`` the ROCm image sets (Dockerfile_amd ``ENV ATTENTION``; 2.3.1 on: ``paged``), which the
    launcher takes over its own rule; None: the image sets none."""
    rocm_source: str = ""


class CheckpointGpus(_Fact):
    """GPUs where a release runs Gated DeltaNet's prefill on FlashInfer (``_resolve_gdn_prefill_backend``), whose
    align-mode prefill checkpoints change the layout."""

    capability: str
    """``9.0``: that compute capability; with ``family``, every ``10.x`` / ``12.x``."""
    family: bool = False
    head_k_dim: int | None = None
    """Only for this ``linear_key_head_dim``; None: any."""
    cuda_runtime_min: int | None = None
    """Only when the CUDA runtime's major version is at least this (the release's wheel: ``image_cuda``)."""


class SpeculativeMemory(_Fact):
    """vLLM: what speculative decoding adds to the memory a release lays out (scripts/catalog/vllm_speculative.py)."""

    mtp_layer_keys: list[str]
    """The config fields ``SpeculativeConfig.hf_config_override`` reads as an MTP draft's layer count (``n_predict``,
    per model family: ``num_nextn_predict_layers``, Qwen3.5's ``mtp_num_hidden_layers`` from 0.17.0 ...); the draft
    runs those layers of the target's checkpoint, each with its own attention KV cache in the shared pool."""
    linear_state_speculative_blocks: bool
    """A linear-attention (Mamba, Gated DeltaNet) layer holds ``num_speculative_tokens`` more state blocks per request
    (``MambaSpec.max_memory_usage_bytes`` adds ``num_speculative_blocks``: 0.15.0 on); False: its state page only."""
    profile_rejection_rows: int = 0
    """V1's profiling sampler warm-up also runs the rejection sampler under speculative decoding, on a new logits
    tensor of this many rows per dummy request (1 draft token: 0.8.1-0.11.0; plus a bonus row: 0.11.1 on); 0: none
    (0.8.0), or not read (0.34.0's model runner, whose sampler warm-up is not modelled either)."""
    source: str


class FlashinferSampler(_Fact):
    """vLLM V1: when the top-k/top-p sampler (vllm/v1/sample/ops/topk_topp_sampler.py ``TopKTopPSampler.__init__``)
    runs FlashInfer's sampling kernels instead of the PyTorch-native path, which the profiling run's sampler warm-up
    then takes too (scripts/catalog/vllm_sampler.py ``flashinfer_sampler``)."""

    value: Literal["when_installed", "opt_in", "default"]
    """``when_installed`` (0.8.0-0.11.0): whenever FlashInfer imports (at least 0.2.3) and
    ``VLLM_USE_FLASHINFER_SAMPLER`` is not set to 0 (``envs.VLLM_USE_FLASHINFER_SAMPLER is not False``, the variable
    None when unset); ``opt_in`` (0.11.1-0.20.x): only with ``VLLM_USE_FLASHINFER_SAMPLER=1``; ``default``
    (0.21.0 on): unless it is set to 0 (envs.py's default True, FlashInfer a requirement of the CUDA wheel)."""
    float32_buffers: int
    """Vocabulary-wide float32 tensors alive at the FlashInfer path's peak, beside the model-dtype logits, counted
    from ``flashinfer_sample``: the sampler's float32 copy and the softmax probabilities (2), plus FlashInfer's
    top-k-masked logits where top-k and top-p go through ``top_k_top_p_sampling_from_logits`` (3: 0.9.0 on); 0.8.x
    softmaxes first, calls ``top_k_top_p_sampling_from_probs`` and, where its rejection rounds fail, renormalises
    into two new tensors (``top_k_renorm_prob``, ``top_p_renorm_prob``) while the probabilities stay held (4)."""
    image_flashinfer: str | None = None
    """The FlashInfer the release's own container image installs (docker/Dockerfile ``FLASHINFER_GIT_REF`` or the
    CUDA requirements' ``flashinfer-python`` pin); None: not read (the sdist carries no Dockerfile before 0.10.1)."""
    source: str


class PenaltyState(_Fact):
    """Model Runner V2's sampler ``PenaltiesState`` (vllm/v1/worker/gpu/sample/penalties.py): GPU tensors per
    request slot over the vocabulary, made after the worker's start-up memory snapshot when the runner builds its
    ``Sampler``; scripts/catalog/vllm_runner_v2.py."""

    count_bytes: int
    """Bytes per vocabulary entry of ``output_bin_counts`` (``torch.zeros(max_num_reqs, vocab_size, dtype=int32)``)."""
    mask_bits: int
    """Vocabulary entries per word of ``prompt_bin_mask`` (``cdiv(vocab_size, 32)`` words per slot)."""
    mask_bytes: int
    """Bytes per word of ``prompt_bin_mask`` (int32)."""
    last_stage_only: bool
    """The runner builds its ``Sampler`` under ``if self.is_last_pp_rank``: the last pipeline stage only."""
    source: str


class V2ModelRunner(_Fact):
    """vLLM V1: the releases' second GPU model runner (vllm/v1/worker/gpu/model_runner.py, "Model Runner V2") and
    which models it serves by default (config/vllm.py ``VllmConfig.use_v2_model_runner``, unless
    ``VLLM_USE_V2_MODEL_RUNNER`` says otherwise), with what its profiling run measures where that differs from
    the first runner's (vllm/v1/worker/gpu_model_runner.py); scripts/catalog/vllm_runner_v2.py."""

    value: Literal["listed", "listed_unquantized", "dense", "all"]
    """Who gets it by default (generate models; ``_is_default_v2_model_runner_model``): ``listed_unquantized``
    the ``architectures`` unless the model is a mixture of experts or quantized (0.22-0.23: ``not is_moe and not
    is_quantized``); ``listed`` the ``architectures`` (0.24); ``dense`` those and every model that is neither a
    mixture of experts nor a hybrid (Mamba / linear attention) one (0.25-0.28: ``... or not model_config.is_moe``);
    ``all`` every model (0.29 on)."""
    architectures: list[str] = []
    """``DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES`` (``listed`` and ``dense``)."""
    sampler_warmup: Literal["greedy", "sampling_params"]
    """What its ``_dummy_sampler_run`` samples: ``greedy``, a dummy batch with the sampler's initial states
    (temperature 0, top-k the vocabulary, top-p 1), so the logits stay in the model dtype and no top-k/top-p or
    float32 copy is made (vllm/v1/worker/gpu/sample/sampler.py ``_requires_logits_processing``); ``sampling_params``,
    a second pass with ``SamplingParams.for_sampler_warmup()`` (0.34), not modelled here."""
    cudagraph_estimate: bool
    """False where its ``profile_cudagraph_memory`` returns 0, so the worker subtracts no CUDA-graph estimate from
    the budget (0.21-0.28); True where it estimates the capture (0.29 on)."""
    penalty_state: PenaltyState | None = None
    """Its sampler's per-request vocabulary tensors (0.22-0.34); None where not read."""
    source: str


class BatchTier(_Fact):
    """One branch of the engine arguments' device test and the API server's defaults under it."""

    min_memory_gib: float | None = None
    """``device_memory >= N * GiB_bytes``; None: no memory test."""
    name_any: list[str] = []
    """The lower-cased device name contains one of these (``"h100" in device_name or "h200" in device_name``)."""
    name_none: list[str] = []
    """... and none of these (``"a100" not in device_name``)."""
    max_num_batched_tokens: int
    max_num_seqs: int


class V1BatchDefaults(_Fact):
    """vLLM V1: the scheduler defaults the engine arguments fill in when ``max_num_seqs`` and
    ``max_num_batched_tokens`` are unset, for the API server (engine/arg_utils.py ``_set_default_args_v1``, later
    ``_set_default_args``; scripts/catalog/vllm_sampler.py ``batch_defaults``): the first tier whose test the GPU
    passes, else ``otherwise``. 0.8.0-0.8.4 test the device name (H100/H200), 0.8.0-0.8.3 set 1024 sequences on every
    GPU; 0.8.5 tests 70 GiB, 0.9.0 leaves A100s out, 0.28.0 adds a 160 GiB tier of 16384 tokens."""

    tiers: list[BatchTier]
    otherwise: BatchTier
    source: str


class HybridKvCache(_Fact):
    """How a release's KV-cache manager lays out a model with several attention kinds.

    Without this fact a release allocates every attention layer's KV for every token
    (vLLM's V0 engine and V1 before the hybrid manager; the manager disabled).
    """

    sliding_window_blocks: bool
    """Sliding-window layers keep only their window's blocks (``SlidingWindowSpec``) by default."""
    chunked_local_attention: bool
    """Llama 4 chunked-attention layers keep only their chunk by default (else they cache every token)."""
    group_size_ratio: float | None
    """Groups take the larger type's layer count when max < min × ratio; None: always the smaller."""
    reported_tokens: Literal["blocks_per_group", "max_concurrency"]
    """"GPU KV cache size": ``num_blocks // groups × block_size``, or ``max_concurrency × max_model_len``."""
    linear_state_block: int | None = None
    """With linear-attention (Mamba-style) layers, the attention block grows to ``N × ceil(state /
    (N × per-token page))`` tokens so one page holds a layer's state: ``N`` 16 as a literal (0.10.1-0.11.0), the
    non-MLA ``kernel_block_alignment_size`` (0.11.1-0.19, models/config.py), or the attention backend's smallest
    kernel block size against the default block size (0.20+, platforms/interface.py ``_align_hybrid_block_size``).
    None: the release aligns it otherwise, which is not modelled (linear-attention models are then hedged)."""
    in_flight_window: bool = False
    """A windowed layer reserves ``window - 1 + max_in_flight_tokens`` per request: one batch per concurrent
    step (2 under async scheduling, on by default, at pipeline size 1; the pipeline size otherwise); False:
    one batch (before 0.26)."""
    linear_state_block_scales: bool = False
    """The multiple is ``max(linear_state_block, block_size)`` (0.20+: the backend's smallest kernel block against
    the block size in use), not ``linear_state_block`` alone."""
    linear_state_block_blackwell: int | None = None
    """The multiple instead on Blackwell for head size 256 when FlashInfer (or no backend) is chosen
    (flashinfer-ai/flashinfer#1993): 32 in 0.11.1-0.17; None: no such case."""
    linear_state_block_blackwell_family: bool = False
    """That case covers compute capability 10.x (``is_device_capability_family(100)``, 0.14+), else exactly 10.0."""
    linear_prefill_checkpoints: bool = False
    """In ``align`` mode the release adds Mamba prefill checkpoints where the FlashInfer GDN prefill runs (0.33+):
    the alignment becomes ``lcm(multiple, checkpoint_alignment)`` and each state group holds ``checkpoint_blocks``
    more blocks per request, on ``checkpoint_gpus``; where a field is not read, such layouts are hedged."""
    checkpoint_alignment: int | None = None
    """``FLASHINFER_GDN_CHECKPOINT_ALIGNMENT`` (vllm/v1/attention/backends/gdn_attn.py): 64."""
    checkpoint_blocks: int | None = None
    """``num_prefill_checkpoint_blocks`` a Qwen GDN layer's spec takes (qwen_gdn_linear_attn.py): 1."""
    checkpoint_gpus: tuple[CheckpointGpus, ...] = ()
    linear_state_blocks: Literal["one", "mamba_block", "cache_mode"] | None = None
    """Blocks a linear-attention (Mamba-style) group holds per request (``MambaSpec.max_memory_usage_bytes``):
    ``one`` (0.10-0.11.0, prefix caching off for hybrid models); ``mamba_block``: ``cdiv(max_model_len,
    mamba_block_size)``, one block unless prefix caching sets ``mamba_block_size`` to the attention block
    (0.11.1-0.14); ``cache_mode``: by ``mamba_cache_mode``: one (``none``), two (``align``, what prefix caching
    gives Gated DeltaNet and KDA models, which do not support the ``all`` mode), one per block (``all``) (0.15+).
    None: not read (linear-attention models are then hedged)."""
    hybrid_prefix_caching: bool = False
    """Prefix caching is on by default for hybrid (linear-attention) models (0.28+: ``is_prefix_caching_supported``
    is True for them and the default no longer excludes ``is_hybrid``)."""
    ssm_dtype_from_config: tuple[str, ...] = ()
    """Architectures whose config's ``mamba_ssm_dtype`` sets the recurrent state's dtype when
    ``--mamba-ssm-cache-dtype`` is ``auto`` (models/config.py ``Qwen3_5ForConditionalGenerationConfig``, 0.17+)."""
    ssm_dtype_defaults: tuple[tuple[str, str], ...] = ()
    """(architecture, dtype): the recurrent state's dtype when ``--mamba-ssm-cache-dtype`` is ``auto``, unless the
    config names ``mamba_ssm_cache_dtype`` (models/config.py ``NemotronHForCausalLMConfig``
    ``DEFAULT_MAMBA_SSM_CACHE_DTYPE`` float32, 0.13+)."""
    mamba2_checkpoint_blocks: int = 0
    """Blocks a Mamba-2 layer's spec adds per request in ``align`` mode (``MambaMixer2.get_kv_cache_spec``
    ``num_prefill_checkpoint_blocks``, 0.32+: 1); 0: none."""
    kda_state_float32: bool = False
    """Kimi Delta Attention's recurrent state is float32 whatever the model dtype (mamba_utils.py
    ``MambaStateDtypeCalculator.kda_state_dtype``)."""
    source: str


class Mxfp4Padding(_Fact):
    """How one MXFP4 MoE backend lays out the experts' weights (``create_weights``): the hidden size and the
    per-rank intermediate size (after the tensor-parallel split) are rounded up to these multiples, so
    each expert's ``w13`` holds ``2 × I' × H'`` and ``w2`` ``H' × I'`` 4-bit values, with one 8-bit scale per 32."""

    hidden_multiple: int
    """1: the hidden size is not padded."""
    intermediate_multiple: int
    keeps_loaded_scales: bool = False
    """The backend swizzles the scales into a new tensor and leaves the checkpoint-layout scale parameters
    registered on the layer (Triton: ``w13_precision_config`` gets the copy), so both stay in memory."""
    bias_float32: bool = False
    """The backend turns the experts' bf16 biases (``w13_bias`` 2·I', ``w2_bias`` H' per local expert, allocated
    by ``create_weights`` at the padded sizes) into float32 (Triton); else they stay bf16."""
    source: str


class Mxfp4Choice(_Fact):
    """The MXFP4 MoE backend a release picks on CUDA GPUs of ``min_capability`` up to (not including)
    ``below`` when no environment variable selects one, with the packages the release ships
    (``triton_kernels`` bundled by its build, ``flashinfer-python`` in its CUDA requirements)."""

    min_capability: str
    below: str | None
    backend: str
    source: str


class Mxfp4Moe(_Fact):
    """vLLM: how a release stores the routed experts of an MXFP4 checkpoint (gpt-oss), per backend.

    ``supported`` False: the release has no ``mxfp4`` method (the fact says so explicitly)."""

    supported: bool
    backends: dict[str, Mxfp4Padding] = {}
    """Backend (``marlin``, ``triton``, ``flashinfer_trtllm``, ``flashinfer_cutlass``, ``rocm``) to its padding."""
    by_capability: tuple[Mxfp4Choice, ...] = ()
    """The default backend per compute-capability range; a GPU outside every range: not modelled."""
    env_selected: tuple[str, ...] = ()
    """Environment variables that select another backend (noted, not modelled)."""
    source: str


class BlockFp8MoeWorkspace(_Fact):
    """vLLM: the workspace a block-FP8 MoE checkpoint's experts hold where the release runs them through its Triton
    experts (fused_moe ``TritonExperts``) inside the modular kernel, read by scripts/catalog/vllm_moe_workspace.py.

    ``FusedMoEModularKernel._allocate_buffers`` takes ``workspace13`` (shared with the output) and ``workspace2``
    from the worker's workspace manager (vllm/v1/worker/workspace.py ``get_simultaneous``: one ``torch.empty`` that
    grows to the largest request and is never freed), sized for the whole batch (``M_chunk = M_full``, no chunking),
    with ``TritonExperts.workspace_shapes``' ``(M, topk, max(N / 2, K))`` and ``(M, topk, max(N, K))`` in the
    activation dtype (N: the local gate-and-up width, K: the hidden size): after the profiling run over the batched
    tokens it stays allocated, outside the transient activation peak and inside the non-KV memory.

    The fp8 oracle (fused_moe/oracle/fp8.py ``select_fp8_moe_backend``) picks Triton for block FP8 (weights
    ``kFp8Static128BlockSym``, activations ``kFp8Dynamic128Sym``) on Hopper (9.0) without expert parallelism
    (``_move_to_front(..., TRITON)``), and elsewhere when no backend ahead of it takes the scheme: FlashInfer
    CUTLASS's block FP8 is 9.0 only, FlashInfer TRT-LLM's experts Blackwell 10.x only, DeepGEMM on the
    capabilities of ``support_deep_gemm`` unless ``VLLM_USE_DEEP_GEMM`` or ``VLLM_MOE_USE_DEEP_GEMM`` is 0."""

    deep_gemm_capabilities: tuple[str, ...]
    """``CudaPlatform.support_deep_gemm``: ``"9.0"`` (exact) and ``"10"``/``"12"`` (capability families)."""
    source: str
    unquantized_flashinfer_opt_in: bool = False
    """0.18-0.19 (fused_moe/oracle/unquantized.py ``select_unquantized_moe_backend``): an unquantized (bf16/fp16)
    MoE runs the same Triton experts on CUDA unless ``VLLM_USE_FLASHINFER_MOE_FP16`` is 1 (envs.py default 0)."""
    unquantized_flashinfer_capabilities: tuple[str, ...] = ()
    """0.20 on (``_get_priority_backends``: FlashInfer TRT-LLM, FlashInfer CUTLASS, then Triton): the capabilities
    their ``_supports_current_device`` names (``"9.0"`` exact, ``"10"`` a family); elsewhere Triton runs."""
    unquantized_triton_first_families: tuple[str, ...] = ()
    """Capability families on which the priority list moves both FlashInfer backends behind Triton (0.23 on: ``"9"``,
    Hopper)."""
    per_tensor_fp8_source: str = ""
    """Per-tensor FP8 (``Fp8MoEMethod``, quantization/fp8.py): activations dynamic unless the checkpoint's
    ``activation_scheme`` is static, and then the fp8 oracle's first taker is Triton (FlashInfer CUTLASS takes only
    static activations, from 9.0; FlashInfer TRT-LLM is Blackwell 10.x; DeepGEMM block scales only; vLLM CUTLASS
    not allowed). Empty: not read (no per-tensor workspace is added)."""
    unquantized_fp16_env: bool = False
    """The oracle reads ``VLLM_USE_FLASHINFER_MOE_FP16`` (0.18-0.23): 1 asks for FlashInfer, 0 (0.20 on) removes it
    from the list; 0.24 on the variable is gone."""
    unquantized_source: str = ""
    """Where the unquantized oracle was read; empty: not read (no unquantized workspace is added)."""
    mxfp4_held_backends: tuple[str, ...] = ()
    """MXFP4 MoE backends (``Mxfp4Moe.backends`` names) whose default experts run inside the modular kernel with
    workspace shapes read from source, so their buffers are held: ``marlin`` (``MarlinExperts.workspace_shapes``
    ``(M * topk, max(N, K))`` and ``(M * topk * max(2 * N, K),)``, N the padded per-rank intermediate size, K the
    padded hidden size)."""
    mxfp4_transient_backends: tuple[str, ...] = ()
    """MXFP4 MoE backends whose default experts are a monolithic kernel (0.19 on: the first class
    fused_moe/oracle/mxfp4.py ``backend_to_kernel_cls`` lists is a ``...Monolithic``; 0.18: quantization/mxfp4.py
    ``is_monolithic``): one call allocates its intermediates with ``torch.empty`` and frees them, nothing is held."""
    mxfp4_source: str = ""
    """Where the MXFP4 kernels were read; empty: not read (no MXFP4 workspace is added)."""


class ContextTier(_Fact):
    """A default context chosen by the GPUs' memory: ``tokens`` from ``min_vram_gib`` of total VRAM up."""

    min_vram_gib: float
    tokens: int


class ContextDefault(_Fact):
    """The context length (tokens per sequence) a release serves when the spec sets none.

    Read in order: a fixed number (``tokens``) or, without one, the model's own maximum
    (its config's derived length, a GGUF's ``n_ctx_train``); ``by_vram`` replaces it by the
    host's tier; ``cap`` and ``within_model`` bound it; ``kv_capacity`` bounds it by the KV
    cache the engine sized; ``fit_min`` lets it shrink to fit device memory.
    """

    tokens: int | None = None
    """A fixed default whatever the model (Ollama's num_ctx 2048, later 4096); None: the model's maximum."""
    by_vram: tuple[ContextTier, ...] = ()
    """Chosen by the total memory of the GPUs the engine sees, largest tier first (Ollama 0.15.5+: 256K/32K/4K)."""
    cap: int | None = None
    """At most this many tokens (TGI 2.0.0-2.4.0: ``min(max_position_embeddings, 4096)``)."""
    within_model: bool = True
    """Lowered to the model's maximum when above it (Ollama: num_ctx above n_ctx_train)."""
    kv_capacity: bool = False
    """At most what the KV cache holds after warm-up (TGI 2.4.1+: ``min(num_blocks × BLOCK_SIZE, ...)``)."""
    fit_min: int | None = None
    """llama.cpp ``--fit`` (on by default): an unset context shrinks to fit device memory, not below this."""
    fit_margin_mib: int = 0
    """The free memory ``--fit`` leaves on each device (``fit_params_target``)."""
    source: str


class ServerSlots(_Fact):
    """llama-server's slots (``--parallel``) and how one ``--ctx-size`` KV cache is shared among them."""

    auto_slots: int
    """Slots when ``--parallel`` is unset or -1 (auto)."""
    auto_kv_unified: bool
    """Automatic slots share one unified KV cache of ``--ctx-size`` tokens (each may use all of it)."""
    split_per_slot: bool
    """With ``--parallel N`` and no unified KV cache, each slot gets ``ctx-size / N`` tokens."""
    pad: int
    """``--ctx-size`` (and each slot's share) is rounded up to a multiple of this (``GGML_PAD``)."""
    source: str


class SwaCells(_Fact):
    """How many cells a sliding-window (or chunked) layer's KV cache gets where the runtime sizes it by its window.

    ``rule`` ``llama_cpp`` (src/llama-kv-cache-iswa.cpp): per KV stream ``pad(min(n_ctx_seq, n_swa × (n_seq_max
    if unified else 1) + n_ubatch), pad)`` (``pad_inside_min``: ``min(n_ctx_seq, pad(n_swa × … + n_ubatch, pad))``).
    ``ollama_causal`` (Ollama's kvcache/causal.go): one cache of ``pad(sequences × memory + batch, pad)`` cells,
    ``memory`` the window (plus one with several sequences), or ``sequences × context`` when ``memory`` reaches it.
    """

    rule: Literal["llama_cpp", "ollama_causal"]
    pad: int
    pad_inside_min: bool = False
    batch_option: str
    """The option whose value is the batch added (llama.cpp ``ubatch_size``, Ollama ``modelfile.num_batch``)."""
    batch_default: int
    full_option: str | None = None
    """An option that gives windowed layers the whole context instead (llama.cpp ``--swa-full``, off by default)."""
    extra_sequence_cell: bool = False
    """``ollama_causal``: with several sequences the memory is at least the window plus one (0.12.4 on)."""
    source: str


class KvCacheCells(_Fact):
    """How a GGUF runtime (llama.cpp, Ollama's runners) sizes each layer's KV cache in cells."""

    swa: SwaCells | None
    """None: every attention layer caches the whole context (no windowed cache, or full-size SWA by default)."""
    cell_pad: int
    """The cells of a full-attention layer are a multiple of this (1: no padding beyond ``server_slots.pad``)."""
    cell_pad_flash_attn: int | None = None
    """The padding when flash attention is on, where the release pads by it (llama.cpp's ``get_padding``: 256 / 32)."""
    cache_types: tuple[str, ...]
    """The KV-cache element types the release accepts (``--cache-type-k/-v``, ``OLLAMA_KV_CACHE_TYPE``)."""
    cache_type_default: str
    source: str


class RecurrentCache(_Fact):
    """Ollama's Go engine: the Gated DeltaNet hybrids' cache (qwen3next's own cache.go 0.15.5-0.17.0, then
    ``kvcache/recurrent.go``).

    Beside the causal K/V of the full-attention layers, each linear-attention layer keeps, per sequence
    (``num_parallel``), a conv state of ``(kernel - 1) × conv_channels`` and a delta state of
    ``value_heads × head_dim²`` elements, plus ``checkpoints`` copies of both per sequence that the reserve pass
    allocates up front (prefix-reuse checkpoints), all in ``state_bytes``-byte elements whatever the KV-cache
    type. Every tensor is made in a layer's context, so the plan's "kv cache" line counts all of it
    (ml/backend/ggml/ggml.go ``newTensor``: ``Cache[layer] += size``)."""

    architectures: tuple[str, ...]
    """GGUF architectures whose model package builds this cache with a Gated DeltaNet layout (qwen3next)."""
    checkpoints: int
    """Checkpoint copies of each linear layer's states per sequence (``checkpointCountDefault`` 32, from 0.17.1
    ``DefaultCheckpointCount`` 24)."""
    state_bytes: int
    """Bytes per element of the conv and delta states and their checkpoints (``ml.DTypeF32``: 4)."""
    source: str


class GoEngine(_Fact):
    """Ollama 0.5.12-0.29: the architectures its own Go engine (ollamarunner) runs, and that engine's KV cache."""

    architectures: tuple[str, ...]
    """GGUF ``general.architecture`` values the release always runs on the Go engine (``OllamaEngineRequired``)."""
    kv_cache: KvCacheCells
    swa_memory: dict[str, int] = {}
    """Architectures whose sliding-window cache keeps this many tokens instead of its window (``NewSWAMemCache``)."""
    recurrent: RecurrentCache | None = None
    """The Gated DeltaNet hybrids' recurrent states, counted with the KV cache; None: not read or not there."""
    source: str


class PoolingModels(_Fact):
    """vLLM: how the release serves an embedding, reranker or reward model (scripts/catalog/vllm_pooling.py, read by
    ``ast`` from its adapters.py, model config and arg_utils.py)."""

    drops_lm_head: bool
    """The pooling conversion of a ``*ForCausalLM`` (models/adapters.py) keeps no LM head: deleted after
    construction (0.6.5-0.17) or never initialised (later), and ``lm_head.*`` skipped by the loader."""
    score_head_float32: bool = False
    """``as_seq_cls_model``'s score head (``num_labels`` x hidden) is built in float32 (0.10.2 on)."""
    pooling_tasks: list[str] = []
    """``--task`` values that select the pooling runner (``TaskOption`` less auto/generate/transcription/draft)."""
    suffix_defaults: list[tuple[str, str, str]] = []
    """``_SUFFIX_TO_DEFAULTS``: (architecture suffix, runner, convert), first match wins (0.10.1 on); empty: the
    release resolves by its registry's lists, not read."""
    generative_architectures: list[str] = []
    """Registry architectures served as generative models though their names fall on a pooling suffix (the registry
    is asked first): ``ChatGLMModel``, ``AquilaModel``."""
    v0_fallback: bool = False
    """The V1 engine falls back to V0 for a pooling task (0.8.0-0.9.1 ``_is_v1_supported_oracle``)."""
    v0_long_context_unchunked: bool = False
    """V0's long-context rule (chunked prefill on above 32K) leaves pooling models out (0.6.5-0.10.0), so V0 profiles
    them with the whole ``max_model_len``."""
    source: str


class PipelineStages(_Fact):
    """vLLM: what each pipeline stage holds and how the engine combines the stages' KV caches
    (scripts/catalog/vllm_pipeline.py, read from the release's distributed/utils.py, KV-cache code and model files)."""

    remainder_before_last: bool
    """``get_pp_indices``: layers that do not divide evenly go one each to the stages before the last, the nearest
    to it first (``partitions[-i] += 1`` for ``i`` in ``2..remaining+1``); False: the release splits otherwise."""
    remainder_to_last: bool = False
    """Earlier ``get_pp_indices`` (0.5-0.8.1): ``layers // pp`` each and the last stage to the end
    (``if pp_rank == pp_size - 1: end_layer = num_hidden_layers``), so the last stage takes the remainder."""
    partition_env: bool
    """``VLLM_PP_LAYER_PARTITION`` (comma-separated layers per stage) overrides the split."""
    every_stage_embedding: list[str] = []
    """Registry architectures whose model file builds ``embed_tokens`` (``VocabParallelEmbedding``) on every stage,
    without the ``is_first_rank`` guard (``PPMissingLayer``) other model files use. Read per model file (a file
    with any unguarded construction counts for all its architectures)."""
    every_stage_lm_head: list[str] = []
    """Likewise the ``ParallelLMHead`` (an untied head) built on every stage, not only under ``is_last_rank``."""
    source: str


class ReleaseFacts(_Fact):
    """Exactly the release facts servespec's code reads (``engines/FORMAT.md``)."""

    removed_options: dict[str, RemovedOption] = {}
    """ENG001: "removed in" for an option this release lacks."""
    quantization_methods: dict[str, QuantizationMethod] = {}
    """HW002/HW003: methods the release accepts, with their minimum compute capability."""
    image_cuda: SourcedText | None = None
    """HW005 and preflight: the CUDA ``major.minor`` the official image is built with."""
    option_bounds_exclusive: dict[str, ExclusiveBounds] = {}
    """ENG002: strict bounds the option catalog's min/max cannot express."""
    gguf_file_types: dict[str, GgufFileType] = {}
    ggml_quant_types: dict[str, GgmlType] = {}
    """The estimator's bits per weight of GGUF files (llama.cpp and Ollama)."""
    block_size_default: SourcedInt | None = None
    """The KV-cache block size the engine uses on CUDA when none is given."""
    default_engine: SourcedText | None = None
    """vLLM: the engine core a release runs by default, ``v0`` or ``v1`` (V1 from 0.8.0)."""
    cuda_graph_memory_in_budget: SourcedBool | None = None
    """vLLM: whether the release subtracts its CUDA-graph memory estimate from the KV budget."""
    block_size_multiple: SourcedInt | None = None
    """vLLM: the multiple the default CUDA attention backend needs of ``--block-size`` (ENG002)."""
    hybrid_kv_cache: HybridKvCache | None = None
    speculative_memory: SpeculativeMemory | None = None
    """vLLM: the MTP draft's layer-count fields and the linear-attention state's speculative blocks; None: not read."""
    mla_kv_cache: MlaKvCache | None = None
    """vLLM: the MLA cache layout (latent or per-head) and when it applies; None: not read (latent assumed)."""
    profile_sampler_sorts_vocab: SourcedBool | None = None
    """vLLM V1: the profiling run's sampler warm-up (gpu_model_runner.py ``_dummy_sampler_run``, after the
    forward pass over the batched-token budget) passes ``top_k = vocab - 1`` for ``min(max_num_seqs,
    max_num_batched_tokens)`` dummy requests, so the sampler sorts float32 logits over the whole
    vocabulary (values and int64 indices): the peak is the larger of the forward pass and that sort.
    None: not read for the release (the generic activation formula is used)."""
    profile_sampler_triton_rows: SourcedInt | None = None
    """vLLM V1: from how many rows ``apply_top_k_top_p`` (vllm/v1/sample/ops/topk_topp_sampler.py) runs its Triton
    kernel on a GPU instead of sorting the vocabulary (8 from 0.17.0, 1 from 0.30.0); 0: it always sorts
    (scripts/catalog/vllm_sampler.py). None: not read (the sort is assumed)."""
    profile_sampler_flashinfer: FlashinferSampler | None = None
    """vLLM V1: when the sampler warm-up runs FlashInfer's kernels rather than the sort or Triton path
    (:class:`FlashinferSampler`); None: not read (the native path is assumed)."""
    v2_model_runner: V2ModelRunner | None = None
    """vLLM V1: Model Runner V2 and the models it serves by default (:class:`V2ModelRunner`); None: the release has
    none (before 0.21) or it was not read."""
    v1_batch_defaults: V1BatchDefaults | None = None
    """vLLM V1: the release's scheduler defaults by device (:class:`V1BatchDefaults`); None: not read (0.9.0's rule
    is assumed)."""
    v0_non_torch_whole_device: SourcedBool | None = None
    """vLLM V0 (vllm/worker/worker.py ``determine_num_available_blocks``): True where the release subtracts all
    device memory torch has not allocated after profiling (``non_torch_allocations = total_allocated_bytes -
    torch_allocated_bytes``, the total from ``mem_get_info``: 0.6.4 and 0.6.4.post1), so the CUDA context and other
    processes' memory sit inside the budget; False where it subtracts what grew since the worker started (before
    0.6.4: ``init_gpu_memory - free``; 0.6.5 on: ``memory_profiling``'s increase over the baseline). None: no V0
    worker (scripts/catalog/vllm_sampler.py ``v0_non_torch``)."""
    v1_non_torch_whole_device: SourcedBool | None = None
    """vLLM V1 (vllm/v1/worker/gpu_worker.py ``determine_available_memory``): the same as
    ``v0_non_torch_whole_device`` for the V1 worker: True for 0.8.0-0.9.0.1, whose budget subtracts all device
    memory torch has not allocated; False from 0.9.1 (``memory_profiling``'s increase over the worker's first
    snapshot). None: no V1 worker."""
    v0_budget_counts_segments: SourcedBool | None = None
    """vLLM V0 (vllm/worker/worker.py ``determine_num_available_blocks``): True where the memory subtracted before the
    KV cache is sized holds the weights as the caching allocator's segments, not their bytes (the free-memory drop,
    0.4.1-0.6.3.post1; device use less torch's allocated bytes, 0.6.4; ``memory_profiling``'s non-torch term over the
    baseline, 0.6.5-0.6.6.post1); False where ``memory_profiling``'s ``MemorySnapshot`` puts the segments' rest in
    torch's reserved memory, out of every term (0.7.0 on). None: no V0 worker (scripts/catalog/vllm_segments.py)."""
    v1_budget_counts_segments: SourcedBool | None = None
    """vLLM V1 (vllm/v1/worker/gpu_worker.py ``determine_available_memory``): the same as ``v0_budget_counts_segments``
    for the V1 worker: True for 0.7.0-0.9.0.1 (device use less torch's allocated bytes) and from 0.27.0
    (``memory_profiling``'s ``total_consumed``, the free-memory drop since the worker's first snapshot); False for
    0.9.1-0.26.0. None: no V1 worker."""
    profile_sampler_v0_sorts_vocab: SourcedBool | None = None
    """vLLM V0 (vllm/worker/model_runner.py, 0.6.0-0.10.2): the profiling run (``profile_run``, from 0.8 its
    ``_dummy_run``) samples one token for each of ``max_num_seqs`` dummy sequence groups with
    ``SamplingParams(top_p=0.99, top_k=vocab_size - 1)``, and the V0 sampler's ``_apply_top_k_top_p``
    (vllm/model_executor/layers/sampler.py) sorts their float32 logits over the whole vocabulary, inside the measured
    peak (scripts/catalog/vllm_sampler.py). None: the release has no V0 model runner."""
    """vLLM: the hybrid KV-cache manager's layout (on by default from 0.9.2); None: full KV for every layer."""
    v0_chunked_prefill_above: SourcedInt | None = None
    """vLLM V0: the ``max_model_len`` above which the engine turns chunked prefill on by itself (arg_utils.py
    ``use_long_context``, 32768 in 0.6-0.10); below it, chunked prefill off, profiling runs a whole
    ``max_model_len`` prompt. None: the release has no V0 engine."""
    pooling_models: PoolingModels | None = None
    """vLLM: the pooling (embedding / score / classify / reward) conversion and how it is selected; None: the
    release has no adapters.py (before 0.6.5), or not read."""
    pipeline_stages: PipelineStages | None = None
    """vLLM: the pipeline's layer split, which stage holds the embedding and LM head, and the blocks every worker
    allocates (the fewest any stage fits); None: not read."""
    mm_encoder_profile: MmEncoderProfile | None = None
    """vLLM V1: the profiling run's multimodal encoder pass (dummy items through the vision tower); None: V0."""
    post_kv_warmup: PostKvWarmup | None = None
    """vLLM: what the default engine core allocates after the KV cache is sized (CUDA graphs, the sampler
    warm-up); None: not read (no check after the KV cache)."""
    mxfp4_moe: Mxfp4Moe | None = None
    """vLLM: the MXFP4 MoE experts' padding per backend and the backend chosen per compute capability."""
    block_fp8_moe_workspace: BlockFp8MoeWorkspace | None = None
    """vLLM: the Triton experts' workspace a block-FP8 MoE holds from the profiling run on (0.18 on); None: not read,
    or the release chunks or frees it."""
    context_default: ContextDefault | None = None
    """The context length served when ``model.max_model_len`` is unset (servespec renders none then)."""
    server_slots: ServerSlots | None = None
    """llama.cpp: automatic slots and how ``--ctx-size`` is split among them."""
    memory: SglangMemory | None = None
    """SGLang: mem_fraction_static's default, the multimodal cut and the pool baseline of the release."""
    tgi_memory: TgiMemory | None = None
    """TGI: the warm-up's wiggle room and how it applies, block sizes by attention, the prefill budget's default."""
    kv_cache: KvCacheCells | None = None
    """llama.cpp and Ollama: cells per layer (sliding-window rule, padding) and KV element types of the release's
    llama.cpp (Ollama: the runner that loads a model the Go engine does not); None: every layer at the full context."""
    go_engine: GoEngine | None = None
    """Ollama 0.5.12-0.29: the architectures its Go engine runs, with that engine's KV cache; None: no Go engine."""
    auto_parallel: SourcedInt | None = None
    """Ollama before 0.10: with OLLAMA_NUM_PARALLEL unset the scheduler loads this many slots where
    they fit in VRAM, else 1 (server/sched.go ``defaultParallel``; on CPU this many); None: the option's default."""


@dataclass(frozen=True)
class EngineOption:
    """One option of one engine release."""

    key: str
    flag: str | None
    aliases: tuple[str, ...]
    env: str | None
    config_key: str | None
    type: str
    choices: tuple[Any, ...] | None
    min: float | None
    max: float | None
    default: Any
    bool_form: str | None
    nargs: str | None
    help: str
    deprecated: bool

    @classmethod
    def from_json(cls, key: str, data: dict[str, Any]) -> EngineOption:
        """Build from one catalog entry."""
        choices = data.get("choices")
        return cls(
            key=key,
            flag=data.get("flag"),
            aliases=tuple(data.get("aliases") or ()),
            env=data.get("env"),
            config_key=data.get("config_key"),
            type=str(data.get("type") or "str"),
            choices=tuple(choices) if choices else None,
            min=data.get("min"),
            max=data.get("max"),
            default=data.get("default"),
            bool_form=data.get("bool_form"),
            nargs=data.get("nargs"),
            help=str(data.get("help") or ""),
            deprecated=bool(data.get("deprecated", False)),
        )


@dataclass(frozen=True)
class EngineRelease:
    """One catalogued release of an engine."""

    engine: str
    version: str
    source: str
    options: dict[str, EngineOption]
    facts: ReleaseFacts
    partial: bool = False
    """Built from incomplete sources: an option it does not list may still exist (ENG001 warns)."""
    spelled_elsewhere: Callable[[str], tuple[str, ...]] | None = field(default=None, compare=False, repr=False)
    """The spellings other releases give the option they key ``name`` (the catalog's :meth:`Catalog.spellings`)."""

    def option(self, name: str) -> EngineOption | None:
        """An option by key, or by any of its flag spellings (``--block-size``, ``-tp``).

        A key this release lacks is also looked up by the spellings another release gives
        it: trtllm-serve 1.2 keys ``tensor_parallel_size`` with the alias ``--tp_size``,
        which is 1.0's only spelling, so 1.0 finds its ``tp_size``. A flag as written
        (``--tensor_parallel_size``, as ``extra_args`` pass it) must be this release's own.
        """
        found = self._own(name)
        if found is None and self.spelled_elsewhere is not None and not name.startswith("-"):
            for spelling in self.spelled_elsewhere(normalize_option(name)):
                if (found := self._own(spelling)) is not None:
                    break
        return found

    def flag(self, name: str) -> str | None:
        """This release's command-line spelling of an option, or None (unknown, or config-file only).

        An option this release keys as a config-file entry is still a flag where another
        release's long spelling of it is one of this release's flags: trtllm-serve 1.0 keys
        the LLM-API field ``tensor_parallel_size`` and takes it on the command line as ``--tp_size``.
        """
        option = self.option(name)
        if option is not None and option.flag:
            return option.flag
        if self.spelled_elsewhere is not None and not name.startswith("-"):
            for spelling in self.spelled_elsewhere(normalize_option(name)):
                if spelling in self._flags:
                    return self._flags[spelling].flag
        return None

    def _own(self, name: str) -> EngineOption | None:
        key = normalize_option(name)
        if key in self.options:
            return self.options[key]
        if name.startswith("-"):
            return self._flags.get(name)
        # as written (trtllm-serve's --max_batch_size), then dashed (SGLang's alias --ep-size for ep_size)
        return self._flags.get(f"--{name}") or self._flags.get("--" + key.replace("_", "-"))

    @functools.cached_property
    def _flags(self) -> dict[str, EngineOption]:
        table: dict[str, EngineOption] = {}
        for option in self.options.values():
            for spelling in (option.flag, *option.aliases):
                if spelling:
                    table[spelling] = option
        return table

    def removed(self, name: str) -> RemovedOption | None:
        """What the catalog records about an option removed before this release."""
        return self.facts.removed_options.get(normalize_option(name))

    def default(self, key: str | None) -> Any:
        """The catalogued default of an option (None when unset, unknown or computed at run time)."""
        option = self.options.get(key) if key else None
        return option.default if option else None


class CatalogError(ValueError):
    """A release catalog that does not follow engines/FORMAT.md (a defect in servespec's data)."""


def option_id(entry: dict[str, Any]) -> str:
    """The pool id of an option entry: 12 hex digits of the sha256 of its canonical JSON."""
    text = json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


@functools.cache
def _pool(folder: Traversable) -> dict[str, dict[str, Any]]:
    entry = folder.joinpath(POOL)
    if not entry.is_file():
        return {}
    data = json.loads(entry.read_text(encoding="utf-8"))
    return dict(data["options"])


def load_release(
    engine: str,
    entry: Traversable,
    folder: Traversable | None = None,
    spelled_elsewhere: Callable[[str], tuple[str, ...]] | None = None,
) -> EngineRelease:
    """One release catalog file, validated; pooled options are looked up in ``folder``'s ``options.json``."""
    data = json.loads(entry.read_text(encoding="utf-8"))
    where = f"{engine}/releases/{entry.name}"
    try:
        facts = ReleaseFacts.model_validate(data.get("facts") or {})
    except ValueError as err:
        raise CatalogError(f"{where}: {err}") from None
    pool = _pool(folder) if folder is not None else {}  # type: ignore[arg-type]  # package folders are Paths
    options = {}
    for key, value in data["options"].items():
        if isinstance(value, str):
            if value not in pool:
                raise CatalogError(f"{where}: option {key} names {value}, which {POOL} does not hold")
            value = pool[value]
        options[key] = EngineOption.from_json(key, value)
    return EngineRelease(
        engine,
        str(data["version"]),
        str(data.get("source", "")),
        options,
        facts,
        bool(data.get("partial", False)),
        spelled_elsewhere,
    )


@dataclass(frozen=True)
class Catalog:
    """An engine's release catalogs, read lazily: file names to choose, a file when it is needed."""

    engine: str
    folder: Traversable

    @functools.cached_property
    def files(self) -> frozenset[str]:
        """Every catalogued version as its file is named, pre-releases included."""
        return release_names(self.folder)

    @functools.cached_property
    def versions(self) -> tuple[str, ...]:
        """The catalogued releases in order, oldest first: pre-releases only where an engine has no other.

        A pre-release's own file is still used for a spec that names it exactly (:meth:`select`).
        """
        return ordered(self.files)

    @functools.cache  # noqa: B019 - one Catalog per engine, kept for the process
    def release(self, version: str) -> EngineRelease:
        """One catalogued release (``version`` as its file is named)."""
        return load_release(self.engine, self.folder.joinpath(f"{version}.json"), self.folder, self.spellings)

    @functools.cache  # noqa: B019 - one Catalog per engine, kept for the process
    def spellings(self, key: str) -> tuple[str, ...]:
        """The long flags the releases that key an option ``key`` spell it with (its renames across releases).

        Short forms (``-q``) are left out: builds reuse them for other options. Parses every
        release whose file names ``key`` at all (another engine's key names none), so only a
        release that lacks ``key`` asks.
        """
        found: list[str] = []
        needle = json.dumps(key)
        for version in self.versions:
            if needle not in self.folder.joinpath(f"{version}.json").read_text(encoding="utf-8"):
                continue
            option = self.release(version).options.get(key)
            if option is not None:
                found += [s for s in (option.flag, *option.aliases) if s and s.startswith("--") and s not in found]
        return tuple(found)

    def all(self) -> tuple[EngineRelease, ...]:
        """Every catalogued release, oldest first (parses them all: docs, tests, "added in")."""
        return tuple(self.release(version) for version in self.versions)

    def select(self, version: str) -> Selection:
        """The release to check ``version`` against: itself, the nearest earlier, or the newest."""
        names = self.versions
        named = version.strip().removeprefix("v")
        if named in self.files:  # the file of that very release (a pre-release too)
            return Selection(self.release(named), version, "exact", names)
        wanted = version_key(version)
        plain = re.fullmatch(r"[vb]?\d+(?:\.\d+)*", version.strip()) is not None  # "0.12" is 0.12.0; "0.12.0-x" is not
        exact = [name for name in names if version_key(name) == wanted and plain]
        if exact:
            return Selection(self.release(exact[-1]), version, "exact", names)
        earlier = [name for name in names if version_key(name) < wanted]
        if not earlier:
            return Selection(None, version, "older", names)
        relation = "between" if len(earlier) < len(names) else "newer"
        return Selection(self.release(earlier[-1]), version, relation, names)

    def candidates(self, version: str) -> tuple[str, ...]:
        """The catalogued releases whose code a build of ``version`` lies between: the release itself when it is
        catalogued, else the last catalogued release before it and the first after it (PEP 440 order: a development
        or release-candidate build precedes its release, ``0.10.1.dev101`` lies after 0.10.0 and before 0.10.1; a
        local label, ``+gbda9d0535``, is ignored). One release when the version is newer than every catalogued one
        (the newest: unbounded above, as :meth:`select` takes it); none when it is older than all of them.

        A figure that is the same under every candidate does not depend on where between them the build lies
        (tests/vllm_logs.py answers such a log and labels the release as a stand-in)."""
        public = version.strip().removeprefix("v").split("+")[0]
        wanted = version_key(public)
        if public in self.files:
            return (public,)
        exact = [
            name for name in self.versions if version_key(name) == wanted and re.fullmatch(r"\d+(?:\.\d+)*", public)
        ]
        if exact or not wanted:  # the same release spelled otherwise ("0.12" is 0.12.0), as :meth:`select` takes it
            return tuple(exact[-1:])
        numeric = re.match(r"^[vb]?\d+(?:\.\d+)*(?:\.?post\d+)?", public)
        tail = public[numeric.end() :] if numeric else ""
        pre = re.match(r"^[.\-_]?(?:a|alpha|b|beta|c|rc|pre|preview|dev)\d*", tail) is not None
        # a pre-release of X precedes X; any other uncatalogued spelling sits after the releases of its number
        below = [
            name for name in self.versions if version_key(name) < wanted or (not pre and version_key(name) == wanted)
        ]
        above = [name for name in self.versions if version_key(name) >= wanted and name not in below]
        return tuple(below[-1:] + above[:1]) if below else ()

    def nearest(self, version: str) -> tuple[str, ...]:
        """The catalogued versions on either side of ``version`` (for a finding to name)."""
        wanted = version_key(version)
        below = [name for name in self.versions if version_key(name) < wanted]
        above = [name for name in self.versions if version_key(name) > wanted]
        return tuple(below[-1:] + above[:1])


@dataclass(frozen=True)
class Selection:
    """The catalogued release a spec's ``engine.version`` is checked against."""

    release: EngineRelease | None
    requested: str
    relation: str
    """``exact``, ``between`` (nearest earlier used), ``newer`` (newest used), ``older`` (none usable)."""
    known: tuple[str, ...] = field(default=())
