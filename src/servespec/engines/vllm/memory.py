"""vLLM's KV-cache budget (v1/worker/gpu_worker.py ``determine_available_memory``)."""

from __future__ import annotations

import math
from dataclasses import replace

from servespec.engines.catalog import BlockFp8MoeWorkspace, HybridKvCache, MmEncoderProfile, Mxfp4Choice, version_key
from servespec.knowledge import load_replay
from servespec.knowledge import vision as towers
from servespec.knowledge.memory import (
    GIB,
    VLLM_NON_TORCH_GIB,
    AfterKv,
    EstimateInput,
    GpuEstimate,
    KvLayout,
    activation_gib,
    cuda_total_gib,
    dtype_bytes,
    finish,
    forward_activation_gib,
    full_layer_bytes_per_token,
    kv_bytes_per_token,
    kv_element_bytes,
    layer_bytes_per_token,
    linear_state_bytes,
    load_quantization,
    nccl_gib,
    number,
    nvls_gib,
    plan,
    routed_expert_bytes,
    weight_bytes,
    weights_per_gpu,
)
from servespec.knowledge.models import ModelFacts
from servespec.knowledge.torch_allocator import SOURCE as ALLOCATOR_SOURCE
from servespec.knowledge.torch_allocator import held_after


def _big_gpu(inp: EstimateInput, total: float) -> bool:
    """vLLM's defaults for GPUs with >= 70 GiB that are not A100 (engine/arg_utils.py _set_default_args).

    The memory there is ``current_platform.get_device_total_memory()``: NVML's ``nvmlDeviceGetMemoryInfo`` (v0.10.2
    L1659, v0.13.0 L1787 and platforms/cuda.py L523-526), which a unified-memory GPU answers NOT_SUPPORTED (GB10,
    driver 580.173.02: https://github.com/XuehaiPan/nvitop/pull/208); the ``except Exception`` around it sets the
    memory to 0, so such a GPU gets the small defaults (max_num_batched_tokens 2048, max_num_seqs 256), as the GB10
    and Thor logs show (tests/data/vllm_logs/012, 013, 119: "max_num_batched_tokens=2048")."""
    if inp.gpu is not None and inp.gpu.unified_memory:
        return False
    return total >= 70 and inp.gpu is not None and "A100" not in inp.gpu.id


V0_MAX_NUM_SEQS = 256
"""The V0 engine's ``max_num_seqs`` when unset, on every GPU: ``max_num_seqs: int = 256`` in EngineArgs
(https://github.com/vllm-project/vllm/blob/v0.4.1/vllm/engine/arg_utils.py#L39, v0.6.3.post1 L115) and, once the
field became optional, ``256 if not envs.VLLM_USE_V1 else 1024``
(https://github.com/vllm-project/vllm/blob/v0.6.5/vllm/engine/arg_utils.py#L210,
https://github.com/vllm-project/vllm/blob/v0.7.2/vllm/engine/arg_utils.py#L216-L217). The GPU-dependent defaults
(8192 tokens / 1024 sequences on a >= 70 GiB card) are the V1 engine's only (``_override_v1_engine_args``,
``_set_default_args_v1``)."""

V0_CHUNKED_BATCHED_TOKENS = (((0, 4, 1), 768), ((0, 4, 2), 512), ((0, 6, 5), 2048))
"""(first release, tokens): the V0 scheduler's ``max_num_batched_tokens`` when chunked prefill is on and the budget
is unset (SchedulerConfig): 768 in v0.4.1 (https://github.com/vllm-project/vllm/blob/v0.4.1/vllm/config.py#L578),
512 from v0.4.2 (config.py L621) to v0.6.4.post1 (https://github.com/vllm-project/vllm/blob/v0.6.4.post1/vllm/config.py#L1114;
v0.5.5 L901, v0.6.3.post1 L998), 2048 from v0.6.5 (https://github.com/vllm-project/vllm/blob/v0.6.5/vllm/config.py#L1344,
v0.7.2 L1533). Without chunked prefill the budget is ``max(max_model_len, 2048)`` in all of them (:func:`_estimate`,
:data:`V0_UNCHUNKED_MIN_BATCHED_TOKENS`)."""

V0_UNCHUNKED_MIN_BATCHED_TOKENS = 2048
"""The V0 scheduler's ``max_num_batched_tokens`` floor when chunked prefill is off and the budget is unset: the
SchedulerConfig default is ``max(max_model_len, 2048)`` ("If max_model_len is too short, use 2048 as the default
value for higher throughput"), so the profiling run of a short ``max_model_len`` still batches 2048 tokens, read in
v0.4.1 (https://github.com/vllm-project/vllm/blob/v0.4.1/vllm/config.py#L582), v0.4.2 (config.py L625), v0.5.4
(L818), v0.6.3 (L987), v0.6.4.post1 (L1118), v0.6.6 (L1442), v0.7.3 (L1536), v0.8.5 (L1983-L1984 with
``_DEFAULT_MAX_NUM_BATCHED_TOKENS = 2048``, L68) and v0.10.1 (vllm/config/scheduler.py L195-L196,
``DEFAULT_MAX_NUM_BATCHED_TOKENS``). The multimodal floor on top is :data:`V0_MULTIMODAL_MIN_BATCHED_TOKENS`; the
pooling floor (``_POOLING_MODEL_MAX_NUM_BATCHED_TOKENS``) and the cap at ``max_num_seqs x max_model_len`` of v0.9.2
(config.py) and v0.10.1 (config/scheduler.py L212-216), which binds only below 8 tokens of context at 256
sequences, are not applied."""

V0_MULTIMODAL_MIN_BATCHED_TOKENS = (((0, 6, 0), 4096), ((0, 6, 3), 5120))
"""(first release, tokens): the floor the V0 SchedulerConfig puts under an unset ``max_num_batched_tokens`` of a
multimodal model, chunked or not ("The value needs to be at least the number of multimodal tokens":
``if is_multimodal_model: max_num_batched_tokens = max(..., _MULTIMODAL_MODEL_MAX_NUM_BATCHED_TOKENS)``): 4096 in
v0.6.0 (https://github.com/vllm-project/vllm/blob/v0.6.0/vllm/config.py#L35, applied L989-994), v0.6.1, v0.6.1.post2
and v0.6.2 (config.py L34-35); 5120 from v0.6.3 (config.py L34), v0.6.4.post1 (L40), v0.6.6 (L53), v0.7.3 (L54),
v0.8.0 (L63), v0.8.5 (L70) to v0.10.1 (vllm/utils/__init__.py L88, applied in config/scheduler.py L205-210); none
in v0.5.5 and earlier."""


def _release_key(inp: EstimateInput) -> tuple[int, ...]:
    """The stated release's version key, else the catalogued release's (empty when neither is known)."""
    return version_key(inp.engine_version or (inp.release.version if inp.release else ""))


def _by_release(table: tuple[tuple[tuple[int, ...], int], ...], inp: EstimateInput, otherwise: int) -> int:
    """The value of ``table``'s last (first release, value) entry the release has reached; ``otherwise`` for a
    release the first entry precedes or an unknown one."""
    key = _release_key(inp)
    value = otherwise
    for since, tokens in table:
        if key and key >= since:
            value = tokens
    return value


def _v0_multimodal_floor(inp: EstimateInput) -> int:
    """The release's V0 floor under an unset budget for a multimodal model (:data:`V0_MULTIMODAL_MIN_BATCHED_TOKENS`);
    0 for a text model or a release before 0.6.0."""
    return _by_release(V0_MULTIMODAL_MIN_BATCHED_TOKENS, inp, 0) if inp.model.vision_params > 0 else 0


def _v0_chunked_batched_tokens(inp: EstimateInput) -> int:
    """The V0 engine's chunked-prefill budget for the release (:data:`V0_CHUNKED_BATCHED_TOKENS`); a release the
    table's first entry precedes, or an unknown one, takes the latest."""
    return _by_release(V0_CHUNKED_BATCHED_TOKENS, inp, V0_CHUNKED_BATCHED_TOKENS[-1][1])


def batch_defaults(inp: EstimateInput, total: float) -> tuple[int, int]:
    """(``max_num_batched_tokens``, ``max_num_seqs``) the release's API server takes when both are unset: on V1 the
    first tier of its ``v1_batch_defaults`` fact the GPU passes (device memory as NVML reports it, 0 on a
    unified-memory GPU: :func:`_big_gpu`; the device name lower-cased), else its ``otherwise``; without the fact
    (releases not read) 0.9.0's rule (:func:`_big_gpu`). The V0 engine takes :data:`V0_MAX_NUM_SEQS` sequences and
    its chunked-prefill budget (:func:`_v0_chunked_batched_tokens`) on every GPU; :func:`_estimate` takes
    ``max(max_model_len, 2048)`` when chunked prefill is off (:data:`V0_UNCHUNKED_MIN_BATCHED_TOKENS`)."""
    if _engine_core(inp) == "v0":
        return _v0_chunked_batched_tokens(inp), V0_MAX_NUM_SEQS
    fact = inp.release.facts.v1_batch_defaults if inp.release is not None else None
    gpu = inp.gpu
    if fact is None or gpu is None:
        return (8192, 1024) if _big_gpu(inp, total) else (2048, 256)
    memory = 0.0 if gpu.unified_memory else total
    name = " ".join((gpu.id, *gpu.names)).lower()
    for tier in fact.tiers:
        if tier.min_memory_gib is not None and memory < tier.min_memory_gib:
            continue
        if tier.name_any and not any(part in name for part in tier.name_any):
            continue
        if any(part in name for part in tier.name_none):
            continue
        return tier.max_num_batched_tokens, tier.max_num_seqs
    return fact.otherwise.max_num_batched_tokens, fact.otherwise.max_num_seqs


UMA_CAPABILITIES = ((8, 7), (11, 0), (12, 1))
"""vLLM 0.11.1-0.19.x's shared-memory devices (Orin, Thor, Spark): ``shared_sysmem_device_mem_sms`` in
vllm/utils/mem_utils.py ``MemorySnapshot.measure`` (v0.11.1 L86, v0.19.1 L105)."""


def unified_memory_note(inp: EstimateInput) -> str:
    """What the KV budget rests on when the GPU shares the host's RAM; "" on a GPU with its own memory.

    vLLM sizes the KV cache as ``gpu_memory_utilization × total − (weights + activation peak + non-torch increase)``
    (v1/worker/gpu_worker.py ``determine_available_memory``), the non-torch increase being the growth of
    ``total − free − torch.cuda.memory_reserved()`` from the worker's first snapshot to the end of the profile run
    (``memory_profiling``). On a discrete card ``free`` moves only with the engine's own GPU allocations; on a
    unified-memory GPU it is the host's memory, so every host allocation made during start-up is subtracted too:

    * up to 0.11.0, ``free`` is cudaMemGetInfo's (``MemorySnapshot.measure``, vllm/utils/__init__.py v0.10.2 L2672,
      v0.11.0 L2734), which on such a GPU leaves out reclaimable page cache (vLLM 0.11.1's own comment, the CUDA for
      Tegra app note): reading the checkpoint from disk shrinks it by up to the checkpoint's size, so the KV cache
      depends on whether the files were already cached;
    * 0.11.1 to 0.19.x read the host's MemAvailable (``psutil.virtual_memory().available``) on capabilities 8.7,
      11.0 and 12.1 only (:data:`UMA_CAPABILITIES`); 0.20.0 on every GPU torch calls integrated
      (``current_platform.is_integrated_gpu``, vllm/utils/mem_utils.py v0.20.0 L109-116): page cache no longer
      counts, but the engine's own CPU-side growth and other processes' do.

    Either way the figure depends on the host's memory use while the engine starts, which no spec shows: the
    estimate is what a quiet host gives, an upper bound. NVIDIA's own DGX Spark launchers say the same of vLLM 0.20:
    a cold checkpoint load's page-cache activity "can be counted by vLLM as model or non-Torch overhead, reducing the
    computed KV-cache budget or making it negative", and a cached second attempt passes with identical settings
    (https://github.com/NVIDIA/xr-ai/pull/462, which pins ``kv_cache_memory_bytes`` instead)."""
    gpu = inp.gpu
    if gpu is None or not gpu.unified_memory:
        return ""
    version = inp.engine_version or (inp.release.version if inp.release else "")
    key = version_key(version)
    if key and key >= (0, 20, 0):
        free = "the host's MemAvailable (torch reports the GPU integrated; vllm/utils/mem_utils.py v0.20.0 L109-116)"
        counted = "the engine's own host memory growth and other processes'"
    elif key and key >= (0, 11, 1) and gpu.compute_capability in UMA_CAPABILITIES:
        free = "the host's MemAvailable (capability 8.7, 11.0 or 12.1; vllm/utils/mem_utils.py v0.11.1 L86-102)"
        counted = "the engine's own host memory growth and other processes'"
    elif key:
        free = (
            "cudaMemGetInfo's free, which leaves out the page cache (vllm/utils/__init__.py MemorySnapshot.measure, "
            "v0.10.2 L2672, v0.11.0 L2734)"
        )
        counted = "page cache filled reading the checkpoint, the engine's own host memory growth and other processes'"
    else:
        free = "the host's free memory (the release is not known)"
        counted = "host memory growth"
    return (
        f"unified memory: vLLM {version or '(release unknown)'} reads free memory as {free}, so the non-torch "
        f"increase it subtracts from gpu_memory_utilization x total counts {counted} during start-up: the KV cache "
        "is this estimate less that growth, which host state decides"
    )


def _non_torch_whole_device(inp: EstimateInput) -> bool:
    """Whether the release's V0 worker subtracts every byte of device memory torch has not allocated, the CUDA
    context included (the ``v0_non_torch_whole_device`` fact: 0.6.4 and 0.6.4.post1; ``v1_non_torch_whole_device``:
    V1 0.8.0-0.9.0.1); other releases subtract the
    growth since the worker started, which leaves the context out (:data:`CUDA_CONTEXT_GIB`). Other processes on the
    GPU (a desktop's display: log 004's 0.3 GiB) count there too and are not modelled."""
    facts = inp.release.facts if inp.release else None
    v0 = _engine_core(inp) == "v0"
    fact = (facts.v0_non_torch_whole_device if v0 else facts.v1_non_torch_whole_device) if facts else None
    return fact is not None and fact.value


def _context_in_budget(inp: EstimateInput) -> tuple[float, list[str]]:
    """(GiB, notes): the CUDA context the release subtracts inside the budget (:func:`_non_torch_whole_device`)."""
    if not _non_torch_whole_device(inp):
        return 0.0, []
    note = (
        f"CUDA context {CUDA_CONTEXT_GIB} GiB in the budget (this release subtracts all device memory torch has not "
        "allocated, other processes' included)"
    )
    return CUDA_CONTEXT_GIB, [note]


def _engine_core(inp: EstimateInput) -> str:
    """``v0`` or ``v1``: what the input says (recorded logs), else the release's default engine; V0 for a pooling
    model on a release whose V1 engine falls back to V0 for a pooling task (``pooling_models.v0_fallback``,
    0.8.0-0.9.1: arg_utils.py ``_is_v1_supported_oracle``, v0.8.0 L1513)."""
    if inp.engine_core:
        return inp.engine_core
    fact = inp.release.facts.default_engine if inp.release else None
    pooling = inp.release.facts.pooling_models if inp.release else None
    if pooling is not None and pooling.v0_fallback and pooling_runner(inp):
        return "v0"
    return fact.value if fact else "v1"


_EXTENSIBLE_OFF = ("kv_cache_memory_bytes", "num_gpu_blocks_override", "kv_transfer_config", "enable_elastic_ep")
"""Settings under which vLLM turns its extensible KV cache off when unset (vllm/config/vllm.py
``_resolve_extensible_kv_cache``, v0.34.0 L3180-3240)."""


def _default_utilization(inp: EstimateInput) -> float:
    """The release's default gpu_memory_utilization for these options.

    From 0.34.0 the option has no fixed default (vllm/config/cache.py L216, v0.34.0):
    ``resolved_gpu_memory_utilization`` (L495) is 1.0 with the extensible KV cache, which the
    release turns on by default on CUDA unless a setting above rules it out, and
    ``DEFAULT_GPU_MEMORY_UTILIZATION`` (0.92) otherwise. Releases that record no default: 0.9.
    """
    release = inp.release
    default = release.default("gpu_memory_utilization") if release else None
    if default is not None:
        return float(default)
    if release is None or "enable_extensible_kv_cache" not in release.options:
        return 0.9
    wanted = inp.options.get("enable_extensible_kv_cache")
    if wanted is True or (wanted is None and not any(inp.options.get(name) for name in _EXTENSIBLE_OFF)):
        return 1.0
    return 0.92


SAMPLER_SORT_BYTES = 37
"""Measured: the sampler warm-up's peak per dummy request per vocabulary entry where top-k/top-p sorts the
vocabulary (vLLM before 0.17.0, or fewer rows than the Triton kernel takes): the float32 logits, the sorted values
and their int64 indices, the scattered copy, the top-p softmax and mask, and the sort's own buffers. Logged
activation peaks over ``rows × vocab``: 38.5 bytes (Qwen3-30B-A3B on 0.10.2, 1024 rows, tests/data/vllm_logs 102)
and 38.6 (Phi-4-mini on 0.10.2, 256 rows, 117), the forward pass included; the 0.10.0 TP8 logs (110, 111) agree.
Used for V0's warm-up too (``profile_sampler_v0_sorts_vocab``): its sampler (vllm/model_executor/layers/sampler.py
``_apply_top_k_top_p``) runs the same ``Tensor.sort`` over float32 logits, the same top-k gather and mask, top-p
softmax and cumsum, and scatter back; it differs in a cumsum not done in place (V1 0.10.2 writes it into the
softmax's tensor), 0.6.x's inverse-index scatter plus gather, and probs and logprobs both kept after the sort.
Not refitted on V0 logs: the logged V0 peaks (116, 121, 124, 127) lie within 0.2 GiB of the estimate."""

SAMPLER_TRITON_BYTES = 16
"""Measured: the same where the Triton top-k/top-p kernel runs (no sort): the float32 logits, the softmax
probabilities and the exponential noise of the random sample, plus the kernel's workspace. vLLM 0.19.0 logs
15.2-15.5 bytes (Llama-3.1-8B, Qwen2.5-7B, gpt-oss-20b on one H100, 1024 rows: tests/data/vllm_logs 039, 064, 075)."""


FLASHINFER_SAMPLER_MIN_CAPABILITY = (7, 5)
"""FlashInfer's kernels need Turing or newer: 0.12.0 on check ``FlashInferBackend.supports_compute_capability``
before taking the FlashInfer sampler (vllm/v1/sample/ops/topk_topp_sampler.py v0.22.0 L39-66, falling back to the
native sampler by default), and FlashInfer itself is built for sm75 on (docker/Dockerfile v0.10.1.1, "FlashInfer only
supports sm75+")."""


def _flag(value: str | None) -> bool | None:
    """``VLLM_USE_FLASHINFER_SAMPLER`` as vllm/envs.py reads it (``bool(int(...))``); None: unset or not a number."""
    if value is None:
        return None
    try:
        return bool(int(value))
    except ValueError:
        return None


def flashinfer_sampling(inp: EstimateInput) -> bool:
    """Whether the release's V1 sampler (and so the profiling run's sampler warm-up) runs FlashInfer's top-k/top-p
    kernels rather than the native sort or Triton path (the ``profile_sampler_flashinfer`` fact):

    * ``when_installed`` (0.8.0-0.11.0): when FlashInfer imports, unless ``VLLM_USE_FLASHINFER_SAMPLER=0``. Whether it
      is installed is the environment's: a recorded log says which sampler ran (``EstimateInput.flashinfer_sampler``);
      for a spec, the official image installs it where the release's Dockerfile says so (``image_flashinfer``: read
      from 0.10.1 on); a pip install without it, or an image not known to carry it, takes the native path (the
      larger peak);
    * ``opt_in`` (0.11.1-0.20.x): only with ``VLLM_USE_FLASHINFER_SAMPLER=1``;
    * ``default`` (0.21.0 on): unless ``VLLM_USE_FLASHINFER_SAMPLER=0``.

    Never on a GPU below :data:`FLASHINFER_SAMPLER_MIN_CAPABILITY`, on ROCm, or where the environment is known not
    to have it."""
    fact = inp.release.facts.profile_sampler_flashinfer if inp.release else None
    capability = inp.gpu.cuda_capability if inp.gpu is not None else None
    if fact is None or _engine_core(inp) != "v1" or capability is None:
        return False
    if capability < FLASHINFER_SAMPLER_MIN_CAPABILITY or inp.flashinfer_sampler is False:
        return False
    flag = _flag(inp.env.get("VLLM_USE_FLASHINFER_SAMPLER"))
    if flag is False:
        return False
    if fact.value == "opt_in":
        return flag is True
    if fact.value == "default" or inp.flashinfer_sampler is True:
        return True
    return inp.image is None and fact.image_flashinfer is not None


def model_runner_v2(inp: EstimateInput) -> bool:
    """Whether the release's V1 engine serves the model with its second GPU model runner (vllm/v1/worker/gpu/
    model_runner.py, "Model Runner V2") by default: the ``v2_model_runner`` fact, read from config/vllm.py
    ``use_v2_model_runner`` (``VLLM_USE_V2_MODEL_RUNNER`` in the engine's environment decides where it is set).

    Generate models only (a pooling runner keeps the first). Where the fact lists architectures, the model's own
    (``architectures[0]`` of its config); ``listed_unquantized`` (0.22-0.23) also wants neither experts nor a
    quantized checkpoint or method, ``dense`` (0.25-0.28) takes every model that is neither a mixture of experts nor
    a linear-attention hybrid beside the listed ones, ``all`` (0.29 on) every model. Speculative decoding is not
    modelled (the runners support different methods release by release): with it the first runner is assumed, as
    before this fact was read."""
    fact = inp.release.facts.v2_model_runner if inp.release else None
    if fact is None or _engine_core(inp) != "v1" or pooling_runner(inp) or inp.speculative is not None:
        return False
    flag = _flag(inp.env.get("VLLM_USE_V2_MODEL_RUNNER"))
    if flag is not None:
        return flag
    model = inp.model
    listed = model.architecture is not None and model.architecture in fact.architectures
    if fact.value == "all":
        return True
    if fact.value == "listed":
        return listed
    if fact.value == "listed_unquantized":
        quantized = model.quant_method is not None or bool(inp.quantization)
        return listed and not model.is_moe and not quantized
    if model.linear_layers and not listed:
        return False
    return listed or not model.is_moe


def _greedy_warmup(inp: EstimateInput) -> bool:
    """Model Runner V2's sampler warm-up samples greedily from logits it leaves in the model dtype (the fact's
    ``sampler_warmup: greedy``, 0.21-0.32): no float32 copy, no top-k/top-p."""
    fact = inp.release.facts.v2_model_runner if inp.release else None
    return fact is not None and fact.sampler_warmup == "greedy" and model_runner_v2(inp)


def _sampler_bytes(inp: EstimateInput, rows: int) -> float:
    """Bytes per row per vocabulary entry of the release's sampler warm-up: FlashInfer's path where it runs
    (:func:`flashinfer_sampling`: the logits in the model dtype beside ``float32_buffers`` float32 tensors of the
    fact, counted from the release's code), else Triton's or the sort's (``profile_sampler_triton_rows``)."""
    fact = inp.release.facts.profile_sampler_flashinfer if inp.release else None
    if fact is not None and flashinfer_sampling(inp):
        return dtype_bytes(inp.model, inp.dtype) + 4 * fact.float32_buffers
    triton_fact = inp.release.facts.profile_sampler_triton_rows if inp.release else None
    triton = triton_fact.value if triton_fact is not None else 0
    return SAMPLER_TRITON_BYTES if triton and rows >= triton else SAMPLER_SORT_BYTES


CUDA_CONTEXT_GIB = 0.5
"""Measured: device memory in use when vLLM's worker takes its start-up snapshot (the CUDA context), which
``gpu_memory_utilization × total`` does not count (the budget subtracts what grew since that snapshot: v0.19.0
vllm/v1/worker/gpu_worker.py L417 ``requested_memory - non_kv_cache_memory``). "worker init memory snapshot:
... cuda_memory=0.51GiB" in the 43 single-GPU logs that print it (tests/data/vllm_logs 016-075); tensor-parallel
workers log 1.43-2.07 GiB, the single-GPU figure is used for every layout (the smaller claim)."""

CUDA_GRAPHS_GIB = 0.5
"""CUDA-graph memory assumed where it is not in the budget (the figure the in-budget releases' estimate uses):
the H100 logs of 0.19.0 report 0.51-1.85 GiB of graph pool, older releases' "Graph capturing finished ... took"
lines as little as 0.14 GiB (and negative deltas): not computed, so a warning input only."""

HELD_AFTER_PROFILING_GIB = 2.35
"""Measured, for messages: memory vLLM 0.19.0 still holds after its profiling run that it counts neither as the
activation peak nor as non-torch memory (initial free − free after profiling − weights − non-torch increase),
0.16-2.35 GiB over the H100 logs 016-076 (largest: Gemma 2 27B, 021; the failed gpt-oss-20b starts 075/076: 2.02 and
1.83 GiB). The sampler warm-up after the KV cache can reuse the activation peak's memory only where it is not held."""


V0_AUTO_CHUNKED_PREFILL_SINCE = (0, 5, 3)
"""The first release whose V0 engine turns chunked prefill on by itself above a ``max_model_len`` of 32768
(https://github.com/vllm-project/vllm/blob/v0.5.3/vllm/engine/arg_utils.py#L746-L768 ``use_long_context``); up to
v0.5.2 ``enable_chunked_prefill`` defaults to False with no such rule
(https://github.com/vllm-project/vllm/blob/v0.5.2/vllm/engine/arg_utils.py#L85), so the profiling run takes a whole
``max_model_len`` prompt at any length (``max_num_batched_tokens = max(max_model_len, 2048)``,
https://github.com/vllm-project/vllm/blob/v0.4.1/vllm/config.py#L573-L582). For releases the catalog does not hold;
the catalogued ones carry ``v0_chunked_prefill_above``."""


V0_MULTIMODAL_UNCHUNKED_SINCE = (0, 6, 1, 1)
"""The first release whose V0 engine leaves chunked prefill off for a multimodal model at any ``max_model_len``
when it is unset, so its profiling run batches ``max(max_model_len, 2048)`` tokens however long the context:
"Chunked prefill is currently disabled for multimodal models by default" (``if use_long_context and not
model_config.is_multimodal_model``, v0.6.1.post1 vllm/engine/arg_utils.py L887, v0.6.2 L917, v0.6.3 L944), then
``if model_config.is_multimodal_model: self.enable_chunked_prefill = bool(envs.VLLM_USE_V1)`` (v0.6.6 L1089, v0.7.3
L1172) and "Chunked prefill not supported for Multimodal or MLA in V0" (v0.8.0 L1612-1613, v0.8.3 L1553-1554,
v0.8.5 L1507-1508, v0.9.2 L1513-1514, v0.10.1 L1528-1529); v0.6.1 and earlier auto-enable it for any long-context
model (v0.6.0 L843-861 has no multimodal clause)."""


def _v0_multimodal_unchunked(inp: EstimateInput) -> bool:
    """Whether the release's V0 engine keeps chunked prefill off for this model because it is multimodal
    (:data:`V0_MULTIMODAL_UNCHUNKED_SINCE`; a model with a vision tower is one vLLM registers as multimodal)."""
    if inp.model.vision_params <= 0:
        return False
    key = _release_key(inp)
    return bool(key) and key >= V0_MULTIMODAL_UNCHUNKED_SINCE


def _v0_chunked_prefill_above(inp: EstimateInput) -> float:
    """The ``max_model_len`` above which the release's V0 engine turns chunked prefill on by itself: the catalogued
    release's ``v0_chunked_prefill_above`` (a catalogued release without it: never); for a release the catalog
    lacks, none before
    :data:`V0_AUTO_CHUNKED_PREFILL_SINCE` (its stated version), else 32768 as every catalogued release has it; never
    for a pooling model where the release's rule leaves them out (arg_utils.py ``and model_config.runner_type !=
    "pooling"``, v0.8.0 L1628: ``pooling_models.v0_long_context_unchunked``)."""
    above = inp.release.facts.v0_chunked_prefill_above if inp.release else None
    pooling = inp.release.facts.pooling_models if inp.release else None
    if pooling is not None and pooling.v0_long_context_unchunked and pooling_runner(inp):
        return math.inf  # the long-context rule leaves pooling models out (``v0_long_context_unchunked``)
    if _v0_multimodal_unchunked(inp):
        return math.inf  # and multimodal models (:data:`V0_MULTIMODAL_UNCHUNKED_SINCE`)
    if above is not None:
        return float(above.value)
    if inp.release is not None:  # a catalogued V0 release without the fact (0.4.1-0.5.2): never by itself
        return math.inf
    stated = version_key(inp.engine_version or "")
    return math.inf if stated and stated < V0_AUTO_CHUNKED_PREFILL_SINCE else 32768.0


def _extensible(inp: EstimateInput) -> bool:
    """Whether the release's extensible KV cache is on for these options (0.34.0: on by default unless a setting in
    :data:`_EXTENSIBLE_OFF` rules it out)."""
    release = inp.release
    if release is None or "enable_extensible_kv_cache" not in release.options:
        return False
    wanted = inp.options.get("enable_extensible_kv_cache")
    return wanted is True or (wanted is None and not any(inp.options.get(name) for name in _EXTENSIBLE_OFF))


_TASK_CONVERT = {"embedding": "embed", "embed": "embed", "classify": "classify", "reward": "reward"}
"""``--task`` value -> the conversion it asks for (vllm/config/model.py ``_task_to_convert``, v0.11.0 L460-471;
``score`` follows the architecture's default pooling task: :func:`pooling_convert`)."""


def _suffix_default(inp: EstimateInput, runner: str | None = None) -> tuple[str, str] | None:
    """The release's ``(runner, convert)`` default for the model's architecture (``_SUFFIX_TO_DEFAULTS``, first match,
    optionally only rows of ``runner``: ``try_match_architecture_defaults``); None: no row matches or not read."""
    fact = inp.release.facts.pooling_models if inp.release else None
    architecture = inp.model.architecture or ""
    if runner is None and fact is not None and architecture in fact.generative_architectures:
        return "generate", "none"  # the registry lists it as generative, asked before the suffixes
    for suffix, row_runner, convert in fact.suffix_defaults if fact else []:
        if architecture.endswith(suffix) and (runner is None or row_runner == runner):
            return row_runner, convert
    return None


def pooling_convert(inp: EstimateInput) -> str | None:
    """The pooling conversion the release serves the model with (``embed``, ``classify``, ``reward``), None where it
    runs it as a generative model, from the release's ``pooling_models`` fact (scripts/catalog/vllm_pooling.py).

    ``--runner pooling`` (0.10.1 on) or a pooling ``--task`` (``pooling_tasks``: ``embedding`` from 0.6.4, ``embed``
    / ``classify`` / ``score`` / ``reward`` from 0.6.5 to 0.12.0) selects the pooling runner; with neither given (or
    ``auto``) a release that resolves by architecture suffix (``_SUFFIX_TO_DEFAULTS``, 0.10.1 on: vllm/config/model.py
    ``_get_default_runner_type``, v0.11.0 L745-767) serves ``*ForSequenceClassification``, ``*EmbeddingModel``,
    ``*RewardModel`` and any other ``*Model`` as pooling models. ``--convert`` names the conversion, else the
    architecture's pooling row, else ``embed`` (``_get_default_convert_type``, v0.11.0 L788-817). Not modelled: a
    Sentence-Transformers repository (``modules.json``) that makes ``--runner auto`` pool a ``*ForCausalLM``
    (``get_pooling_config``, L752-753) -- servespec reads no repository files but the config -- and the registry
    lists older releases resolve by; a catalog without the fact (before 0.6.5) is never pooling."""
    release = inp.release
    fact = release.facts.pooling_models if release else None
    if release is None or fact is None:
        return None
    runner = inp.options.get("runner") if "runner" in release.options else None
    task = inp.options.get("task") if "task" in release.options else None
    convert = inp.options.get("convert") if "convert" in release.options else None
    if runner in ("generate", "draft") or (
        runner in (None, "auto") and task not in (None, "auto") and task not in fact.pooling_tasks
    ):
        return None
    if runner in (None, "auto") and task in (None, "auto"):
        found = _suffix_default(inp)
        if found is None or found[0] != "pooling":
            return None
    if convert not in (None, "auto", "none"):
        return str(convert)
    if task == "score":
        row = _suffix_default(inp, "pooling")
        return "classify" if row is not None and row[1] == "classify" else "embed"
    if isinstance(task, str) and task in _TASK_CONVERT:
        return _TASK_CONVERT[task]
    row = _suffix_default(inp, "pooling")
    return row[1] if row is not None else "embed"


def pooling_runner(inp: EstimateInput) -> bool:
    """Whether the engine serves the model as a pooling model (:func:`pooling_convert`): it warms up the pooler, not
    the sampler, both in the profiling run and after the KV cache is sized, so no logits or sampler buffers take part
    (V1: vllm/v1/worker/gpu_model_runner.py ``profile_run`` L3394-3397 and gpu_worker.py ``compile_or_warm_up_model``
    L410-414 at v0.11.0; the same branches in every catalogued V1 release that serves pooling models, 0.9.2 to
    0.34.0. V0: worker.py picks ``PoolingModelRunner`` for the pooling runner (v0.7.0 L78), whose ``execute_model``
    -- what ``profile_run``'s dummy batch calls -- pools the hidden states and samples nothing (pooling_model_runner.py
    L46-149)). The pooler's own buffers (one pooled vector per dummy request) are not modelled."""
    return pooling_convert(inp) is not None


def pooling_head_bytes(inp: EstimateInput) -> float:
    """Bytes of the untied LM head a pooling model does not keep (``pooling_models.drops_lm_head``: the adapters'
    pooling class deletes it after construction, 0.6.5-0.17, or never builds it, later; the loader skips
    ``lm_head.*``; the transient head is out of both the logged weights and the profiled peak, which V1 measures
    after ``torch.cuda.empty_cache()`` and ``reset_peak_memory_stats()``: v0.11.0 platforms/cuda.py L209-211,
    utils/__init__.py L2833-2834), to take off the weights; 0 for a tied head (it is the input embedding), a
    generative model, or a checkpoint whose stored tensors size the weights (which of them is the head is not
    known). A reranker
    converted from its LM head (``from_2_way_softmax`` / ``no_post_processing``) builds the head only while loading
    and deletes it; its ``num_labels`` x hidden score head (float32 from 0.10.0: ``score_head_float32``) is a few
    KiB and not counted."""
    model = inp.model
    fact = inp.release.facts.pooling_models if inp.release else None
    if fact is None or not fact.drops_lm_head or model.tie_word_embeddings or not pooling_runner(inp):
        return 0.0
    if model.weight_bytes and inp.dtype == "auto":
        return 0.0
    return (model.vocab_size or 0) * model.hidden_size * dtype_bytes(model, inp.dtype)


def pooling_head_gib(inp: EstimateInput) -> tuple[float, list[str]]:
    """GiB per GPU of the LM head a pooling model leaves out (:func:`pooling_head_bytes`, on the last pipeline stage,
    split over tensor-parallel ranks as the weights are), and the plan's note."""
    head = pooling_head_bytes(inp) / inp.tensor_parallel / inp.pipeline_parallel / GIB
    return head, [f"pooling model: the untied LM head ({head:.2f} GiB per GPU) is not built"] if head else []


def after_kv(inp: EstimateInput, total: float, utilization: float, reserved: float, rows: int) -> AfterKv | None:
    """What the release allocates after sizing the KV cache (its ``post_kv_warmup`` fact) against what
    ``gpu_memory_utilization`` leaves out; None without the fact, with ``kv_cache_memory_bytes`` (no budget), or
    where the release sizes its KV blocks after the warm-up (``sized_after_warmup_option`` on).

    ``reserved``: the activation peak the profile measured inside the budget (:func:`_activation`), free again when
    the warm-up runs; ``rows``: ``min(max_num_seqs, max_num_batched_tokens)``, the sampler warm-up's requests."""
    fact = inp.release.facts.post_kv_warmup if inp.release else None
    if fact is None or inp.options.get("kv_cache_memory_bytes"):
        return None
    if fact.sized_after_warmup_option and _extensible(inp):
        return None
    eager = inp.options.get("enforce_eager") is True
    budget = inp.release.facts.cuda_graph_memory_in_budget if inp.release else None
    graphs = 0.0 if eager or not fact.cuda_graphs or (budget is not None and budget.value) else CUDA_GRAPHS_GIB
    sampler = 0.0
    if fact.sampler and _engine_core(inp) == "v1" and not pooling_runner(inp):
        sampler = rows * (inp.model.vocab_size or 32000) * _sampler_bytes(inp, rows) / GIB
        sampler += rejection_warmup_gib(inp, rows)  # the same _dummy_sampler_run, its rejection pass included
        if inp.release is not None and inp.release.facts.profile_sampler_sorts_vocab is not None:
            # the profiling run warms the same sampler up (0.34: written otherwise, its size not modelled there)
            reserved = max(reserved, sampler)
    return AfterKv(
        outside_gib=round(max(1.0 - utilization, 0.0) * total, 3),
        context_gib=CUDA_CONTEXT_GIB,
        graphs_gib=graphs,
        sampler_gib=round(sampler, 3),
        sampler_rows=rows if sampler else 0,
        reserved_gib=round(reserved, 3),
        source=fact.source,
    )


def _activation(inp: EstimateInput, batched: int, seqs: int) -> float:
    """The profiling peak the release measures above the weights (GiB).

    Where the release's sampler warm-up applies top-k/top-p over the whole vocabulary, it runs after the forward
    pass, on ``min(max_num_seqs, max_num_batched_tokens)`` rows: the peak is the larger of the two. V1
    (``profile_sampler_sorts_vocab``: 0.8.0-0.33.0, read from each release's gpu_model_runner.py
    ``_dummy_sampler_run``) sorts or runs Triton as the release does (:func:`_sampler_bytes`); V0
    (``profile_sampler_v0_sorts_vocab``: 0.6.0-0.10.2, model_runner.py ``profile_run``) samples one token for each
    of its ``max_num_seqs`` dummy sequence groups with ``top_k = vocab - 1`` and ``top_p``, and its sampler's
    ``_apply_top_k_top_p`` sorts the float32 logits with the same ``Tensor.sort`` and the same top-k/top-p masking
    as V1 before 0.17: :data:`SAMPLER_SORT_BYTES` per row per vocabulary entry. Otherwise (releases not read) the
    generic formula.
    """
    facts = inp.release.facts if inp.release else None
    v1 = _engine_core(inp) == "v1"
    fact = (facts.profile_sampler_sorts_vocab if v1 else facts.profile_sampler_v0_sorts_vocab) if facts else None
    if pooling_runner(inp):
        return forward_activation_gib(inp, batched)  # no sampler warm-up (:func:`pooling_runner`)
    if fact is None or not fact.value:
        return activation_gib(inp, batched, seqs)
    rows = min(seqs, batched)
    if v1 and _greedy_warmup(inp):  # Model Runner V2: the logits alone (:func:`model_runner_v2`)
        logits = rows * (inp.model.vocab_size or 32000) * dtype_bytes(inp.model, inp.dtype) / GIB
        return max(forward_activation_gib(inp, batched), logits)
    per_entry = _sampler_bytes(inp, rows) if v1 else SAMPLER_SORT_BYTES
    sampler = rows * (inp.model.vocab_size or 32000) * per_entry / GIB
    if v1:
        sampler += rejection_warmup_gib(inp, rows)
    return max(forward_activation_gib(inp, batched), sampler)


def rejection_warmup_gib(inp: EstimateInput, rows: int) -> float:
    """GiB the sampler warm-up's rejection pass holds beside a sampling pass over ``rows`` requests, at the least.

    Under speculative decoding (any method) V1's ``_dummy_sampler_run`` then builds a new ``torch.randn`` logits
    tensor of ``profile_rejection_rows`` rows per dummy request in the logits' dtype (the model's) and runs the
    rejection sampler on it, whose bonus and target passes sample those rows as the plain warm-up does while the
    tensor stays allocated (vllm/v1/sample/rejection_sampler.py ``forward``). From the code, not measured against a
    log: the pass's own float32 copies of the target rows come on top."""
    fact = inp.release.facts.speculative_memory if inp.release else None
    if inp.speculative is None or fact is None or not fact.profile_rejection_rows:
        return 0.0
    element = dtype_bytes(inp.model, inp.dtype)
    return fact.profile_rejection_rows * rows * (inp.model.vocab_size or 32000) * element / GIB


def estimate(inp: EstimateInput) -> GpuEstimate | None:
    """vLLM's KV budget (v1/worker/gpu_worker.py determine_available_memory); None without a GPU.

    The LoRA slots (:func:`lora_slots_gib`) are part of the overhead, and told apart as ``beside_gib``; what the
    release allocates after the KV cache is sized is ``after_kv`` (:func:`after_kv`).
    """
    found = _estimate(inp)
    beside = lora_slots_gib(inp) + draft_share(inp)[0]
    found = replace(found, beside_gib=round(beside, 3)) if found is not None and beside else found
    shared = unified_memory_note(inp)
    return replace(found, unified_memory=shared) if found is not None and shared else found


def _capability(text: str) -> tuple[int, int]:
    major, _, minor = text.partition(".")
    return int(major), int(minor or 0)


def mxfp4_backend(inp: EstimateInput) -> Mxfp4Choice | None:
    """The MXFP4 MoE backend the release picks on this GPU by default (the ``mxfp4_moe`` fact);
    None: not an MXFP4 MoE checkpoint, no fact, or a GPU outside every modelled capability range."""
    fact = inp.release.facts.mxfp4_moe if inp.release else None
    model = inp.model
    method = load_quantization(inp.quantization) or model.quant_method
    if fact is None or not fact.supported or inp.gpu is None or method != "mxfp4" or not model.is_moe:
        return None
    capability = inp.gpu.cuda_capability
    if capability is None:
        return None  # the by-capability table is CUDA's; vLLM's ROCm platform picks its own MXFP4 kernels
    for choice in fact.by_capability:
        below = _capability(choice.below) if choice.below else None
        if _capability(choice.min_capability) <= capability and (below is None or capability < below):
            return choice
    return None


def mxfp4_padding_gib(inp: EstimateInput) -> tuple[float, list[str]]:
    """GiB per GPU that the release's MXFP4 MoE backend adds to the experts' 4.25 bits per weight.

    ``create_weights`` rounds the hidden size and the per-rank intermediate size (after the tensor-parallel
    split over the MoE group; whole under expert parallelism) up to the backend's multiples: each local
    expert then holds ``3 × H' × I'`` 4-bit values and one 8-bit scale per 32 (17/32 byte per value); a backend that
    keeps the checkpoint-layout scales next to its swizzled copy (Triton) holds those scales twice, and Triton
    holds the experts' biases in float32."""
    choice = mxfp4_backend(inp)
    fact = inp.release.facts.mxfp4_moe if inp.release else None
    model = inp.model
    if choice is None or fact is None:
        mxfp4 = (load_quantization(inp.quantization) or model.quant_method) == "mxfp4" and model.is_moe
        if fact is not None and fact.supported and inp.gpu is not None and mxfp4:
            return 0.0, ["MXFP4 MoE backend on this GPU not modelled: experts counted unpadded"]
        return 0.0, []
    padding = fact.backends.get(choice.backend)
    experts, inter = model.experts or 0, model.moe_intermediate_size or 0
    if padding is None or not experts or not inter:
        return 0.0, [f"MXFP4 MoE backend {choice.backend}: padding not known, experts counted unpadded"]
    group = inp.moe_group or inp.tensor_parallel
    # the layout's expert split (resources.expert_parallel renders --enable-expert-parallel) or the option itself
    expert_parallel = (inp.expert_parallel > 1 or inp.options.get("enable_expert_parallel") is True) and group > 1
    local = experts / group if expert_parallel else experts
    per_rank = inter if expert_parallel else inter / group  # vLLM's MoE tensor split spans tensor x data
    hidden = model.hidden_size
    hidden_pad = -(-hidden // padding.hidden_multiple) * padding.hidden_multiple
    inter_pad = -(-math.ceil(per_rank) // padding.intermediate_multiple) * padding.intermediate_multiple
    layers = math.ceil((model.layers - model.dense_layers) / inp.pipeline_parallel)
    values = layers * local * 3 * hidden_pad * inter_pad
    extra = (values - layers * local * 3 * hidden * per_rank) * 17 / 32
    if padding.keeps_loaded_scales:
        extra += values / 32
    # create_weights' biases, w13 (2·I') and w2 (H') per local expert, bf16 or float32 after loading; the
    # model's parameter count holds them (gpt-oss) in bf16 with the rest of the non-expert weights (split by TP)
    bias_bytes = 4 if padding.bias_float32 else 2
    extra += layers * (
        local * (2 * inter_pad + hidden_pad) * bias_bytes - experts * (2 * inter + hidden) * 2 / inp.tensor_parallel
    )
    note = (
        f"MXFP4 MoE backend {choice.backend}: experts padded to hidden {hidden_pad}, intermediate {inter_pad} per rank"
    )
    if padding.keeps_loaded_scales:
        note += ", loaded scales kept beside the swizzled ones"
    return extra / GIB, [f"{note} (+{extra / GIB:.2f} GiB)"]


def redundant_experts(inp: EstimateInput) -> int:
    """EPLB's redundant experts per MoE layer (``--num-redundant-experts``, or ``eplb_config``'s from 0.10.2); 0
    unless EPLB is on (``enable_eplb``: vLLM refuses redundant experts without it, config/parallel.py v0.10.1
    L296-L299, "num_redundant_experts should be used with EPLB")."""
    if inp.options.get("enable_eplb") is not True:
        return 0
    nested = inp.options.get("eplb_config")
    value = nested.get("num_redundant_experts") if isinstance(nested, dict) else None
    if value is None:
        value = inp.options.get("num_redundant_experts")
    return int(value) if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def redundant_experts_gib(inp: EstimateInput) -> tuple[float, list[str]]:
    """GiB per GPU of EPLB's redundant experts: vLLM builds ``num_experts + num_redundant_experts`` physical experts
    per MoE layer and splits them over the expert-parallel group (fused_moe/layer.py ``FusedMoE.__init__``:
    ``self.global_num_experts = num_experts + num_redundant_experts``, v0.10.1 L762, v0.11.0 L995;
    ``determine_expert_map`` over ``ep_size``), so each GPU holds ``R / group`` more experts' weights."""
    extra = redundant_experts(inp)
    experts = inp.model.experts or 0
    group = inp.moe_group or inp.tensor_parallel
    if not extra or not experts or (inp.expert_parallel <= 1 and inp.options.get("enable_expert_parallel") is not True):
        return 0.0, []
    per_expert = routed_expert_bytes(inp) / experts
    gib = extra * per_expert / group / inp.pipeline_parallel / GIB
    return gib, [f"EPLB: {extra} redundant experts per MoE layer over {group} GPUs (+{gib:.2f} GiB)"]


def _round_up(value: float, multiple: int) -> float:
    return math.ceil(value / multiple) * multiple


def _deep_gemm_capability(capability: tuple[int, int], listed: tuple[str, ...]) -> bool:
    """Whether ``support_deep_gemm`` names the capability: ``"9.0"`` exactly, ``"10"`` the 10.x family."""
    return any(capability == _capability(entry) if "." in entry else capability[0] == int(entry) for entry in listed)


def _deep_gemm_off(inp: EstimateInput) -> bool:
    """``VLLM_USE_DEEP_GEMM`` or ``VLLM_MOE_USE_DEEP_GEMM`` set to 0: the fp8 oracle drops DeepGEMM
    (fused_moe/oracle/fp8.py ``select_fp8_moe_backend``, ``envs.is_set``)."""
    return any(_flag(inp.env.get(name)) is False for name in ("VLLM_USE_DEEP_GEMM", "VLLM_MOE_USE_DEEP_GEMM"))


def block_fp8_moe_workspace_gib(inp: EstimateInput, batched: int) -> tuple[float, list[str]]:
    """GiB per GPU the Triton experts of a block-FP8, unquantized or per-tensor FP8 MoE hold from the profiling run
    on, and why (the ``block_fp8_moe_workspace`` fact, :class:`~servespec.engines.catalog.BlockFp8MoeWorkspace`:
    the oracles of each scheme, :func:`_unquantized_not_triton`, :func:`_per_tensor_fp8_not_triton`).

    The profiling batch (``batched`` tokens, unchunked) sizes the workspace manager's one buffer:
    ``round256(max(M·topk·max(N/2, K), M·K)·e) + round256(M·topk·max(N, K)·e)`` bytes, with ``N`` twice the local
    expert width (the gated SiLU's gate and up halves: the whole ``moe_intermediate_size`` under expert parallelism,
    its tensor-parallel share otherwise), ``K`` the hidden size and ``e`` the activation dtype's bytes. It stays
    allocated, so it comes on top of the transient peak and of the sampler warm-up. Where the oracle picks another
    backend (DeepGEMM, FlashInfer CUTLASS under expert parallelism on Hopper, FlashInfer TRT-LLM on Blackwell 10.x)
    or the tokens are gathered over data-parallel ranks, nothing is added and a note says so."""
    fact = inp.release.facts.block_fp8_moe_workspace if inp.release else None
    model = inp.model
    method = load_quantization(inp.quantization) or model.quant_method
    if fact is None or not model.is_moe or inp.gpu is None:
        return 0.0, []
    capability = inp.gpu.cuda_capability
    group = inp.moe_group or inp.tensor_parallel
    expert_parallel = (inp.expert_parallel > 1 or inp.options.get("enable_expert_parallel") is True) and group > 1
    if method is None and fact.unquantized_source and capability is not None:
        other = _unquantized_not_triton(inp, fact, capability)
        kind = "unquantized MoE"
    elif method == "fp8" and model.weight_block_size is not None and capability is not None and capability >= (8, 9):
        other = _block_fp8_not_triton(inp, fact, capability, expert_parallel)
        kind = "block-FP8 MoE"
    elif method == "fp8" and fact.per_tensor_fp8_source and capability is not None and capability >= (8, 9):
        other = _per_tensor_fp8_not_triton(inp, capability)
        kind = "per-tensor FP8 MoE"
    elif method == "mxfp4" and fact.mxfp4_source:
        return _mxfp4_workspace_gib(inp, fact, batched)
    else:
        return 0.0, []  # other schemes, ROCm's own kernels; below 8.9 no FP8 Triton experts (Marlin)
    # ``--moe-backend`` other than "auto" decides before either oracle's list ("triton": TRITON in the unquantized
    # and fp8 oracles' ``map_*_backend``, v0.18.0 oracle/unquantized.py L58, oracle/fp8.py L193).
    asked = inp.options.get("moe_backend")
    if isinstance(asked, str) and asked != "auto":
        other = "" if asked == "triton" else f"moe_backend {asked}"
    if other:
        return 0.0, [f"{kind} experts: {other}; its workspace is not modelled"]
    if inp.data_parallel > 1:
        return 0.0, []  # the gathered tokens' note says what is left out (:func:`_gathered_tokens_note`)
    topk, hidden = model.active_experts or 0, model.hidden_size
    inter = model.moe_intermediate_size or 0
    if not topk or not inter:
        return 0.0, []
    width = 2 * (inter if expert_parallel else inter / group)
    element = dtype_bytes(model, inp.dtype)
    first = max(batched * topk * max(width / 2, hidden), batched * hidden) * element
    second = batched * topk * max(width, hidden) * element
    gib = (_round_up(first, 256) + _round_up(second, 256)) / GIB
    return gib, [f"{kind} Triton experts' workspace {gib:.2f} GiB ({batched} tokens x top-{topk}; held)"]


def _mxfp4_workspace_gib(inp: EstimateInput, fact: BlockFp8MoeWorkspace, batched: int) -> tuple[float, list[str]]:
    """An MXFP4 MoE's held workspace (the ``mxfp4_*`` fields of the fact): the default backend on this GPU
    (:func:`mxfp4_backend`) either runs a monolithic kernel (Triton on 9.x, FlashInfer TRT-LLM on 10.x: nothing
    held) or Marlin's modular experts (8.x): ``max(M·topk·max(I', H'), M·H') + M·topk·max(2·I', H')`` activation
    elements, ``I'``/``H'`` the backend's padded per-rank intermediate and hidden sizes (the layer pads the activations
    to its rounded hidden size before the experts: v0.19.0 fused_moe/layer.py L536-L545, runner/default_moe_runner.py
    L458-L467). Environment toggles, ``--moe-backend``, LoRA and EPLB choose other kernels (noted, not modelled)."""
    choice = mxfp4_backend(inp)
    mxfp4 = inp.release.facts.mxfp4_moe if inp.release else None
    if choice is None or mxfp4 is None:
        return 0.0, []
    asked = inp.options.get("moe_backend")
    toggled = [name for name in mxfp4.env_selected if _flag(inp.env.get(name)) is not None]
    if toggled or (isinstance(asked, str) and asked != "auto") or inp.options.get("enable_lora") is True:
        why = ", ".join(toggled) or ("moe_backend " + str(asked) if asked not in (None, "auto") else "LoRA")
        return 0.0, [f"MXFP4 MoE experts: {why} picks the kernels; their workspace is not modelled"]
    if inp.options.get("enable_eplb") is True or inp.data_parallel > 1:
        return 0.0, []  # the monolithic Triton class refuses EPLB and dp > 1 (modular fallback: not modelled)
    if choice.backend in fact.mxfp4_transient_backends:
        return 0.0, [f"MXFP4 MoE backend {choice.backend}: monolithic kernel, its buffers are transient (none held)"]
    padding = mxfp4.backends.get(choice.backend)
    topk, inter = inp.model.active_experts or 0, inp.model.moe_intermediate_size or 0
    if choice.backend not in fact.mxfp4_held_backends or padding is None or not topk or not inter:
        return 0.0, [f"MXFP4 MoE backend {choice.backend}: its workspace is not modelled"]
    group = inp.moe_group or inp.tensor_parallel
    expert_parallel = (inp.expert_parallel > 1 or inp.options.get("enable_expert_parallel") is True) and group > 1
    per_rank = inter if expert_parallel else inter / group
    inter_pad = _round_up(math.ceil(per_rank), padding.intermediate_multiple)
    hidden = _round_up(inp.model.hidden_size, padding.hidden_multiple)
    element = dtype_bytes(inp.model, inp.dtype)
    first = max(batched * topk * max(inter_pad, hidden), batched * hidden) * element
    second = batched * topk * max(2 * inter_pad, hidden) * element
    gib = (_round_up(first, 256) + _round_up(second, 256)) / GIB
    return gib, [f"MXFP4 MoE {choice.backend} experts' workspace {gib:.2f} GiB ({batched} tokens x top-{topk}; held)"]


def _unquantized_not_triton(inp: EstimateInput, fact: BlockFp8MoeWorkspace, capability: tuple[int, int]) -> str:
    """The backend the unquantized oracle takes instead of Triton, or "" where Triton runs: 0.18-0.19 FlashInfer only
    with ``VLLM_USE_FLASHINFER_MOE_FP16`` on; 0.20 on FlashInfer where its kernels name the capability, unless
    ``VLLM_USE_FLASHINFER_MOE_FP16`` is set to 0 or the priority list moves them behind Triton (Hopper, 0.23 on)."""
    flag = _flag(inp.env.get("VLLM_USE_FLASHINFER_MOE_FP16")) if fact.unquantized_fp16_env else None
    if flag:
        return "FlashInfer, asked for (VLLM_USE_FLASHINFER_MOE_FP16=1)"
    if fact.unquantized_flashinfer_opt_in or flag is False:
        return ""
    if str(capability[0]) in fact.unquantized_triton_first_families:
        return ""
    if _deep_gemm_capability(capability, fact.unquantized_flashinfer_capabilities):
        return f"FlashInfer TRT-LLM or CUTLASS (ahead of Triton on {capability[0]}.{capability[1]})"
    return ""


def _per_tensor_fp8_not_triton(inp: EstimateInput, capability: tuple[int, int]) -> str:
    """The backend the fp8 oracle takes for per-tensor FP8 instead of Triton, or "" where Triton runs: a runtime
    ``--quantization fp8`` of an unquantized checkpoint has dynamic activations (``Fp8Config``'s default scheme),
    which FlashInfer CUTLASS does not take; a serialized checkpoint's scheme is not known here, and a static one goes
    to FlashInfer CUTLASS from 9.0. FlashInfer TRT-LLM (Blackwell 10.x) and ``VLLM_USE_FLASHINFER_MOE_FP8=1`` are
    not modelled."""
    if _flag(inp.env.get("VLLM_USE_FLASHINFER_MOE_FP8")):
        return "FlashInfer, asked for (VLLM_USE_FLASHINFER_MOE_FP8=1)"
    if capability[0] == 10:
        return "FlashInfer TRT-LLM (Blackwell 10.x)"
    if inp.model.quant_method is not None and capability >= (9, 0):
        return "FlashInfer CUTLASS where the checkpoint's activation scheme is static"
    return ""


def _block_fp8_not_triton(
    inp: EstimateInput, fact: BlockFp8MoeWorkspace, capability: tuple[int, int], expert_parallel: bool
) -> str:
    """The backend the fp8 oracle takes for block FP8 instead of Triton, or "" where Triton runs."""
    other = ""
    if capability == (9, 0) and expert_parallel:
        other = "FlashInfer CUTLASS (Hopper, expert parallel)"
    elif capability[0] == 10:
        other = "FlashInfer TRT-LLM or DeepGEMM (Blackwell 10.x)"
    elif capability != (9, 0) and _deep_gemm_capability(capability, fact.deep_gemm_capabilities):
        other = "" if _deep_gemm_off(inp) else "DeepGEMM (VLLM_USE_DEEP_GEMM not 0)"
    return other


def _gathered_tokens_note(inp: EstimateInput) -> list[str]:
    """What the estimate leaves out under data parallelism: the default dispatch gathers every rank's tokens before
    the experts (fused_moe/layer.py ``forward_impl``, v0.10.1 L1639-L1645; ``VLLM_ALL2ALL_BACKEND`` "naive" in
    0.10.x, "allgather_reducescatter" in 0.11.0), so the profiling step's MoE layers run on D x its tokens."""
    if inp.data_parallel <= 1 or not inp.model.is_moe:
        return []
    return [
        f"profiling: the MoE layers see all {inp.data_parallel} data-parallel ranks' tokens (gathered by the "
        "default all2all dispatch); the experts' kernel workspace on them is not modelled"
    ]


def _graphs_in_budget(inp: EstimateInput) -> tuple[float, list[str]]:
    """The CUDA-graph estimate the release subtracts from the budget (the ``cuda_graph_memory_in_budget`` fact;
    its size, 0.5 GiB, is assumed, not computed as vLLM does), and why: none with ``enforce_eager``, and none under
    Model Runner V2 where its ``profile_cudagraph_memory`` returns 0 (``v2_model_runner.cudagraph_estimate``:
    0.21-0.28)."""
    graphs = inp.release.facts.cuda_graph_memory_in_budget if inp.release else None
    if graphs is None or not graphs.value or inp.options.get("enforce_eager") is True:
        return 0.0, []
    runner = inp.release.facts.v2_model_runner if inp.release else None
    if runner is not None and not runner.cudagraph_estimate and model_runner_v2(inp):
        return 0.0, ["Model Runner V2: no CUDA-graph estimate in the budget"]
    return 0.5, ["CUDA-graph memory estimated in the budget"]


def load_segments_gib(inp: EstimateInput) -> tuple[list[float], list[str]]:
    """(GiB per pipeline stage, notes): what the caching allocator's segments hold beyond the weights' bytes after the
    model is built, where the release's budget counts the load as segments (``v0_budget_counts_segments`` /
    ``v1_budget_counts_segments``: the free-memory drop, 0.4.1-0.6.6.post1 V0, 0.7.0-0.9.0.1 and 0.27.0 on V1) and the
    build is replayed (knowledge/load_replay.py: dense 16-bit Llama, Mistral, Qwen2, Qwen3; the RoPE cache in the
    model dtype, which :func:`rope_cache_gib` already counts, is taken off; the vocabulary's padding rows are
    added). Empty: the budget counts the weights'
    bytes ("Model loading took" logs ``torch.cuda.max_memory_allocated``, platforms/cuda.py
    ``get_current_memory_usage``, in every release), the fact is not read, or the layout is not replayed (nothing
    is added). Not modelled: the profiling run's activation segments the allocator still holds afterwards."""
    facts = inp.release.facts if inp.release else None
    fact = (
        (facts.v0_budget_counts_segments if _engine_core(inp) == "v0" else facts.v1_budget_counts_segments)
        if facts
        else None
    )
    if fact is None or not fact.value:
        return [], []
    size = load_replay.width(inp)
    if size is None:
        return [], []
    stages = inp.pipeline_parallel
    parts = stage_layers(inp) if stages > 1 else [inp.model.layers]
    if parts is None:
        return [], []
    rope = (inp.model.max_position_embeddings or 0) * inp.model.head_dim * size
    found: list[float] = []
    start = 0
    for stage, count in enumerate(parts):
        layers = range(start, start + count)
        start += count
        events, params = load_replay.events(inp, size, size, layers, first=stage == 0, last=stage == stages - 1)
        # the vocabulary's padding rows to a multiple of 64 are allocated too, beyond the config's vocabulary
        tables = sum(name in ("embed", "lm_head") for name, _ in events)
        padding = tables * (load_replay.padded_vocab(inp) - (inp.model.vocab_size or 0)) * inp.model.hidden_size
        found.append((held_after(events) - params - rope + padding * size // inp.tensor_parallel) / GIB)
    note = (
        f"model load: the caching allocator's segments hold {max(found):.3f} GiB beyond the weights' bytes, which "
        f"the budget counts ({fact.source}; {ALLOCATOR_SOURCE})"
    )
    return found, [note]


def stage_layers(inp: EstimateInput) -> list[int] | None:
    """Decoder layers per pipeline stage as the release splits them (``pipeline_stages`` fact: ``get_pp_indices``,
    vllm/distributed/utils.py): ``VLLM_PP_LAYER_PARTITION`` where the release reads it and it names ``pipeline``
    counts summing to the layers (else the release refuses to start), otherwise ``layers // pp`` each and the
    remainder one each to the stages before the last, nearest to it first (0.8.2 on), or all on the last stage
    (``remainder_to_last``, earlier). None: one stage, the fact absent, or a release that splits otherwise (the even
    share stands)."""
    fact = inp.release.facts.pipeline_stages if inp.release else None
    stages, layers = inp.pipeline_parallel, inp.model.layers
    if fact is None or stages <= 1:
        return None
    named = inp.env.get("VLLM_PP_LAYER_PARTITION") if fact.partition_env else None
    if named:
        try:
            parts = [int(part) for part in named.split(",")]
        except ValueError:
            return None
        return parts if len(parts) == stages and sum(parts) == layers and min(parts) > 0 else None
    parts = [layers // stages] * stages
    if fact.remainder_to_last:
        parts[-1] += layers % stages
        return parts
    if not fact.remainder_before_last:
        return None
    for i in range(2, layers % stages + 2):
        parts[-i] += 1
    return parts


def stage_tables_gib(inp: EstimateInput, stage: int) -> float:
    """GiB per GPU of the vocabulary tables (embedding, untied LM head) pipeline stage ``stage`` holds: the
    embedding on the first stage (and on the last where the head is tied to it), an untied head on the last; on
    every stage where the release's model file builds them unguarded (``pipeline_stages.every_stage_embedding`` /
    ``every_stage_lm_head``, e.g. Qwen3-MoE's qwen3_moe.py)."""
    fact = inp.release.facts.pipeline_stages if inp.release else None
    model = inp.model
    table = (model.vocab_size or 0) * model.hidden_size * dtype_bytes(model, inp.dtype) / inp.tensor_parallel / GIB
    first, last = stage == 0, stage == inp.pipeline_parallel - 1
    arch = model.architecture or ""
    tied = model.tie_word_embeddings
    embedding = first or (tied and last) or (fact is not None and arch in fact.every_stage_embedding)
    head = not tied and (last or (fact is not None and arch in fact.every_stage_lm_head))
    return table * (int(embedding) + int(head))


def penalty_state_gib(inp: EstimateInput, seqs: int) -> tuple[float, float, list[str]]:
    """(GiB, of it what only the last pipeline stage holds, notes): Model Runner V2's sampler ``PenaltiesState``
    where the release's budget counts it (the ``v2_model_runner`` fact's ``penalty_state``, 0.22-0.34). Its two
    int32 GPU tensors per request slot over the vocabulary, ``output_bin_counts`` (``max_num_reqs x
    vocab_size``) and ``prompt_bin_mask`` (``max_num_reqs x cdiv(vocab_size, 32)``),
    v1/worker/gpu/sample/penalties.py v0.27.1 L32-42, are made when the runner builds its ``Sampler``
    (``max_num_reqs``: ``max_num_seqs``), on the last pipeline stage only (``if self.is_last_pp_rank``,
    v1/worker/gpu/model_runner.py v0.27.1 L351), after the worker's start-up snapshot (v1/worker/gpu_worker.py
    v0.27.1 L395). From 0.27.0 the budget counts the whole free-memory drop since that snapshot
    (``v1_budget_counts_segments``, utils/mem_utils.py v0.27.1 L326), so they take KV room. Up to 0.26 it counts
    the weights' bytes (``model_memory_usage``, measured before the sampler is built), the profiling run's torch
    peak over what was allocated when it began (``torch_peak_increase``) and the non-torch increase
    (utils/mem_utils.py v0.26.0 L305-313): tensors allocated before the profiling run fall in none of them, so
    they take no KV room there (the GPU holds them beyond the budget). 0.0 where the runner is not Model Runner
    V2, the fact is not read or the vocabulary is unknown."""
    fact = inp.release.facts.v2_model_runner if inp.release else None
    state = fact.penalty_state if fact else None
    vocab = inp.model.vocab_size
    if state is None or not vocab or not model_runner_v2(inp):
        return 0.0, 0.0, []
    counted = inp.release.facts.v1_budget_counts_segments if inp.release else None
    size = seqs * (vocab * state.count_bytes + -(-vocab // state.mask_bits) * state.mask_bytes) / GIB
    where = "the last pipeline stage" if state.last_stage_only and inp.pipeline_parallel > 1 else "each GPU"
    if counted is None or not counted.value:
        return 0.0, 0.0, [f"Model Runner V2 penalty state {size:.2f} GiB on {where}, outside the release's budget"]
    return (
        size,
        size if state.last_stage_only else 0.0,
        [f"Model Runner V2 penalty state {size:.2f} GiB on {where} ({seqs} request slots x vocabulary)"],
    )


def binding_stage(
    inp: EstimateInput, weights: float, room: float, sampler: float = 0.0, segments: list[float] | None = None
) -> tuple[int, float, float] | None:
    """The pipeline stage whose KV cache binds, with its weights and the KV memory an even stage of
    ``ceil(layers / pp)`` layers would need for the same blocks; None where every stage is sized alike.

    Each worker sizes its blocks by its own layers' bytes and every worker takes the fewest any fits
    (``pipeline_stages`` fact: v1/core/kv_cache_utils.py ``get_kv_cache_configs``, V0 the executor's
    ``min(num_gpu_blocks)``); a stage holds its share of the decoder layers (:func:`stage_layers`) and its tables
    (:func:`stage_tables_gib`). ``weights``: the even share (with its per-GPU extras); ``room``: the budget less the
    overhead; ``sampler``: what of that overhead's profiling peak only the sampler warm-up adds, which runs on the
    last stage alone (``profile_run``: ``if get_pp_group().is_last_rank: ... _dummy_sampler_run``, v1/worker/
    gpu_model_runner.py v0.19.0 L5785, v0.27.1 L6496; Model Runner V2 v1/worker/gpu/model_runner.py v0.27.1 L724),
    and Model Runner V2's penalty state (:func:`penalty_state_gib`, built on the last rank alone), so the other
    stages have that much more room; ``segments``: each stage's allocator segments beyond its weights
    (:func:`load_segments_gib`), where counted. Only for models whose every layer caches the same KV (no sliding
    window, linear attention or shared KV)."""
    parts = stage_layers(inp)
    model = inp.model
    cached = model.kv_full_layers + model.kv_sliding_layers
    if parts is None or not model.uniform_kv or cached != model.layers or model.kv_sliding_layers:
        return None
    stages = inp.pipeline_parallel
    table = (model.vocab_size or 0) * model.hidden_size * dtype_bytes(model, inp.dtype) / inp.tensor_parallel / GIB
    # the even share holds 1/pp of the model's one embedding and one untied head: the rest is decoder layers
    share = weights_per_gpu(inp) - table * (1 if model.tie_word_embeddings else 2) / stages
    extras = weights - weights_per_gpu(inp)
    widest = math.ceil(model.layers / stages)
    found: tuple[float, int, float] | None = None
    for stage, layers in enumerate(parts):
        held = share * stages * layers / model.layers + stage_tables_gib(inp, stage) + extras
        held += segments[stage] if segments else 0.0
        per_layer = (room + (sampler if stage < stages - 1 else 0.0) - held) / layers
        if found is None or per_layer < found[0]:
            found = (per_layer, stage, held)
    assert found is not None
    per_layer, stage, held = found
    return stage, held, per_layer * widest


def _v0_budget(inp: EstimateInput, batched: int) -> int:
    """The profiling run's token budget on the V0 engine (``batched`` unchanged on V1)."""
    if _engine_core(inp) != "v0":
        return batched
    # vLLM's V0 engine (the default before 0.8.0: the release's default_engine fact) profiles a
    # whole max_model_len prompt when chunked prefill is off, which V0 leaves off up to the release's
    # v0_chunked_prefill_above (32768 from 0.5.5; assumed for an uncatalogued release); a catalogued V0
    # release without the fact (0.4.1-0.5.4) never turns it on by itself.
    chunked = inp.options.get("enable_chunked_prefill") is True
    if inp.max_model_len <= _v0_chunked_prefill_above(inp) and not chunked:
        # an unset budget is max(max_model_len, 2048) (:data:`V0_UNCHUNKED_MIN_BATCHED_TOKENS`); a set one below
        # max_model_len is refused by the release, so max_model_len is the least it can be
        unset = inp.options.get("max_num_batched_tokens") is None
        batched = max(V0_UNCHUNKED_MIN_BATCHED_TOKENS if unset else batched, inp.max_model_len)
    if inp.options.get("max_num_batched_tokens") is None:
        batched = max(batched, _v0_multimodal_floor(inp))  # chunked or not
    return batched


def _estimate(inp: EstimateInput) -> GpuEstimate | None:
    gpu = inp.gpu
    if gpu is None:
        return None
    total = cuda_total_gib(gpu)
    utilization = number(inp.options, "gpu_memory_utilization", _default_utilization(inp))
    default_batched, default_seqs = batch_defaults(inp, total)
    seqs = int(number(inp.options, "max_num_seqs", default_seqs))
    batched = int(number(inp.options, "max_num_batched_tokens", default_batched))
    batched = _v0_budget(inp, batched)
    padded, padding_notes = mxfp4_padding_gib(inp)
    rope = rope_cache_gib(inp)
    redundant, redundant_notes = redundant_experts_gib(inp)
    redundant_notes += _gathered_tokens_note(inp)
    head, said = pooling_head_gib(inp)
    weights = weights_per_gpu(inp) - head + padded + rope + redundant
    padding_notes = [*padding_notes, *said]
    segments, said = load_segments_gib(inp)
    padding_notes = [*padding_notes, *said]
    padding_notes = [*padding_notes, *redundant_notes]
    if rope >= 0.05:
        padding_notes = [*padding_notes, f"rotary cos/sin cache {rope:.2f} GiB (one per GPU, in the model dtype)"]
    nvls = nvls_gib(inp)
    activation = _activation(inp, batched, seqs)
    notes = [f"gpu_memory_utilization {utilization}", f"max_num_batched_tokens {batched}", f"max_num_seqs {seqs}"]
    activation, said = _with_encoder(inp, activation, batched, seqs)
    notes += said
    overhead = activation + VLLM_NON_TORCH_GIB[0] + nccl_gib(inp)
    workspace, said = block_fp8_moe_workspace_gib(inp, batched)
    overhead += workspace
    notes += said
    context, said = _context_in_budget(inp)
    overhead += context
    notes += said
    encoder = encoder_profile_gib(inp, seqs)
    if encoder:
        overhead += encoder
        notes.append(f"V0 profiling run's vision encoder states {encoder:.2f} GiB (at least)")
    notes += padding_notes
    if nvls:
        notes.append(f"NCCL NVLS buffers {nvls} GiB (tensor parallel on an NVSwitch board; measured)")
    graphs, said = _graphs_in_budget(inp)
    overhead += graphs
    notes += said
    lora = lora_slots_gib(inp)
    if lora:
        overhead += lora
        notes.append(f"LoRA slots {lora:.2f} GiB (reserved at start-up)")
    draft, draft_kv, said = draft_share(inp)
    overhead += draft
    notes += said
    penalties, last_only, said = penalty_state_gib(inp, seqs)
    overhead += penalties
    notes += said
    sampler_only = max(activation - forward_activation_gib(inp, batched), 0.0) if _engine_core(inp) == "v1" else 0.0
    sampler_only += last_only  # the last stage's alone (:func:`penalty_state_gib`)
    binding = binding_stage(inp, weights, utilization * total - overhead, sampler_only, segments)
    # one stage, or stages sized alike: the largest stage's segments
    weights += max(segments, default=0.0) if binding is None else 0.0
    kv = utilization * total - weights - overhead
    if binding is not None:
        stage, weights, kv = binding
        parts = stage_layers(inp) or []
        notes.append(
            f"pipeline stages of {','.join(map(str, parts))} layers: stage {stage} binds "
            f"({weights:.2f} GiB of weights; every stage takes its blocks)"
        )
    warmup = after_kv(inp, total, utilization, activation, min(seqs, batched))
    inp, mla_notes = mla_kv_input(inp)  # the KV arithmetic below reads the layout the release caches
    notes += mla_notes
    block = block_size(inp)
    layout = hybrid_layout(inp, kv, block, batched)
    if layout is not None:
        notes.append("hybrid KV-cache layout (per-type layer groups)")
        return replace(plan(inp, total, weights, overhead, kv, 0, 0.0, utilization, notes, layout), after_kv=warmup)
    if hybrid_layout_unknown(inp):
        notes.append(_unknown_layout_note(inp))
        found = finish(inp, total, weights, overhead, kv, block, notes, utilization, draft_kv)
        return replace(found, one_sequence_floor_gib=round(one_sequence_floor(inp) / GIB, 3), after_kv=warmup)
    return replace(finish(inp, total, weights, overhead, kv, block, notes, utilization, draft_kv), after_kv=warmup)


def _unknown_layout_note(inp: EstimateInput) -> str:
    """Why the hybrid manager's layout is not sized (:func:`hybrid_layout_unknown`), for the plan's notes."""
    version = inp.release.version if inp.release else ""
    fact = inp.release.facts.hybrid_kv_cache if inp.release else None
    rule = linear_state_rule(inp, fact) if fact is not None else None
    what = f"for which {rule}" if isinstance(rule, str) else "whose layout is not catalogued"
    if fact is not None and draft_attention_layers(inp) is None:
        what = f"whose layout beside the {inp.speculative} draft's own attention layers is not modelled"
    return (
        f"vLLM {version} has a hybrid KV-cache manager {what}: "
        "every layer sized at full length, the least one sequence needs given as a floor"
    )


def _images_per_prompt(inp: EstimateInput, default: int = 1) -> int:
    """``limit_mm_per_prompt``'s image count (``default`` where it names none: V0's 1, or the V1 release's
    ``mm_encoder_profile.default_limit``)."""
    limit = inp.options.get("limit_mm_per_prompt")
    images = limit.get("image") if isinstance(limit, dict) else None
    return images if isinstance(images, int) and not isinstance(images, bool) and images >= 0 else default


ROTARY_ATTENTION_WIDTHS = 10
"""Tensors of the tower's width (per tensor-parallel rank) alive at once in a ViT attention that rotates q and k
(Qwen's 2D RoPE), besides the block's input and normed input. Counted from the releases' code: 11 in v0.10.2's
Qwen2VisionAttention.forward (model_executor/models/qwen2_vl.py L361-384, ``apply_rotary_pos_emb_vision`` L275-284:
the qkv output 3, the contiguous q, k and v 3, the float32 copy of the q or k being turned 2, its float32 result 2 and
the bf16 result 1), 9 in v0.24.0's Qwen2_5_VisionAttention.forward (qwen2_5_vl.py, used by Qwen3-VL and Qwen3.5: the
qkv output 3, the contiguous q and k 2, their rotation in bf16 2, ApplyRotaryEmb's ``enable_fp32_compute`` off, v's
copy for the attention 1, its output 1). One figure, 10, for both: the tower's smaller buffers (the patch
embedding's convolution, the rotary tables, ``cu_seqlens``) are not counted. Checked, not fitted, against the logs:
081 (0.10.2, Qwen2-VL-2B) logs a 2.65 GiB activation peak for one 16,384-token image, estimated 2.31 GiB; 002 and 155
(0.24.0, Qwen3.6-35B-A3B) come out within 1% of their logged KV cache."""
PLAIN_ATTENTION_WIDTHS = 5
"""The same without rotary embeddings: v0.19.0's SiglipAttention.forward (model_executor/models/siglip.py) keeps the
qkv output (3; q, k and v are views of it, which the encoder attention's flash-attention path reshapes without a
copy: v1/attention/ops/vit_attn_wrappers.py), the attention output (1) and the output projection's (1)."""


def _mm_items(inp: EstimateInput, tokens: int, batched: int, seqs: int, fact: MmEncoderProfile) -> int:
    """Dummy items the release's profiling run feeds the encoder (v0.24.0 multimodal/encoder_budget.py
    ``_get_max_items`` L140-180, v1/core/encoder_cache_manager.py ``compute_mm_encoder_budget`` L296-316): the
    encoder budget ``min(max(max_num_encoder_input_tokens, T), max(encoder_cache_size, T))`` (both default to
    ``max_num_batched_tokens``) over the ``T`` tokens per item, capped by the decoder's ``max_num_seqs x
    min(limit_mm_per_prompt, max_model_len // T)`` (requests limited to ``max_num_batched_tokens // T`` without
    chunked prefill), at least 1."""
    compute = int(number(inp.options, "max_num_encoder_input_tokens", batched))
    cache = int(number(inp.options, "encoder_cache_size", batched))
    budget = min(max(compute, tokens), max(cache, tokens))
    encoder = -(-budget // tokens) if fact.items_division == "ceil" else budget // tokens
    requests = seqs if inp.options.get("enable_chunked_prefill") is not False else min(seqs, batched // tokens)
    per_prompt = max(1, min(_images_per_prompt(inp, fact.default_limit), inp.max_model_len // tokens))
    return max(1, min(encoder, requests * per_prompt))


def _with_encoder(inp: EstimateInput, activation: float, batched: int, seqs: int) -> tuple[float, list[str]]:
    """The profiling peak with V1's multimodal encoder pass: the larger of the encoder's own peak and the language
    model's (its forward pass and sampler warm-up) beside the encoder outputs the release still holds."""
    peak, held, said = mm_encoder_profile_gib(inp, batched, seqs)
    return (max(activation + held, peak) if peak else activation), said


def mm_encoder_profile_gib(inp: EstimateInput, batched: int, seqs: int) -> tuple[float, float, list[str]]:
    """(peak GiB, GiB held through the language model's dummy run, notes) of V1's multimodal encoder profiling.

    The release's ``mm_encoder_profile`` fact says that ``profile_run`` runs the encoder on dummy images of the
    most features the processor gives (:func:`servespec.knowledge.vision.vision_profile`), as many as
    :func:`_mm_items` allows, in one batch, and keeps the outputs in ``encoder_cache`` until the language model's
    dummy run and sampler warm-up are done. The tower's peak, per patch: the pixel values as the processor hands them
    (float32) and their copy in the model dtype, and one block's working set in the model dtype: the residual stream
    and the normed input (2 widths) beside the larger of the attention's (:data:`ROTARY_ATTENTION_WIDTHS` or
    :data:`PLAIN_ATTENTION_WIDTHS`) and the MLP's (its two ``intermediate_size`` outputs), both split by tensor
    parallelism. (0, 0, []) without the fact, on V0, for a model whose dummy image is not derived, with
    ``skip_mm_profiling``, or with no image allowed (``limit_mm_per_prompt`` image 0).

    Images only: the release profiles the modality with the most tokens per item, and for Qwen2-VL / Qwen2.5-VL (and
    Qwen3-VL before its dummy video was fixed at two frames, 0.15.0) the dummy video's frames grow with
    ``max_model_len`` (qwen2_vl.py ``get_num_frames_with_most_features``), so from 32,768 tokens a video could be
    the profiled item. Not modelled: log 104 (0.12.0, Qwen3-VL at 65,536 tokens) agrees with the image (+1.0%), which
    a video of that size would contradict, and no log settles it. For Qwen3-VL the video is the profiled item (v0.11.0,
    0.12.0 alike: qwen3_vl.py ``get_max_video_tokens`` L658-675 counts 12.5 formatted tokens per video token), but its
    video processor's pixel budget (``size.longest_edge`` 25,165,824 over all frames, transformers' Qwen3-VL video
    ``smart_resize``) holds the dummy video to 12,288 tokens (49,152 patches; 24,576 frames of 32 x 32 px from 16,384
    tokens of context on), fewer patches than the 16,384-token image: the image figure bounds it, as log 104 agrees.
    """
    fact = inp.release.facts.mm_encoder_profile if inp.release else None
    profile = inp.model.vision_profile
    if fact is None or not fact.runs_encoder or profile is None or _engine_core(inp) != "v1":
        return 0.0, 0.0, []
    if fact.skip_option and inp.options.get(fact.skip_option) is True:
        return 0.0, 0.0, [f"{fact.skip_option}: the multimodal encoder is not profiled"]
    if inp.options.get("language_model_only") is True and inp.release and inp.release.option("language_model_only"):
        # every modality's limit is 0 (v0.27.1 config/multimodal.py get_limit_per_prompt L350): no tower modality
        return 0.0, 0.0, ["language_model_only: no multimodal encoder to profile"]
    if _images_per_prompt(inp, fact.default_limit) == 0:
        return 0.0, 0.0, ["no image per prompt: the encoder profiling of other modalities is not modelled"]
    kwargs = inp.options.get("mm_processor_kwargs")
    override = kwargs.get("max_pixels") if isinstance(kwargs, dict) else None
    if isinstance(override, int) and not isinstance(override, bool):
        profile = towers.with_max_pixels(profile, override)
    items = _mm_items(inp, profile.tokens, batched, seqs, fact)
    element = dtype_bytes(inp.model, inp.dtype)
    tp = max(inp.tensor_parallel, 1)
    attention = (ROTARY_ATTENTION_WIDTHS if profile.rotary else PLAIN_ATTENTION_WIDTHS) * profile.width
    block = 2 * profile.width + max(attention, 2 * profile.mlp) / tp
    per_patch = profile.patch_volume * (4 + element) + element * block
    peak = items * profile.patches * per_patch / GIB
    held = items * profile.tokens * inp.model.hidden_size * element / GIB if fact.holds_outputs else 0.0
    note = (
        f"multimodal encoder profiling: {items} image(s) of {profile.tokens} tokens ({profile.patches} patches), "
        f"peak {peak:.2f} GiB, outputs held {held:.2f} GiB"
    )
    return peak, held, [note]


def encoder_profile_gib(inp: EstimateInput, seqs: int) -> float:
    """GiB per GPU the V0 encoder-decoder profiling run holds in Llama 3.2 Vision's encoder, at the least.

    ``EncoderDecoderModelRunner.profile_run`` builds ``max_num_seqs`` dummy sequences, each with the per-prompt
    image limit of maximum-size images (vLLM v0.6.3 worker/enc_dec_model_runner.py L288-320, v0.8.0 L268-300;
    mllama's dummy data: every image at ``max_num_tiles`` tiles), and runs them through the model in one batch: the
    tower sees ``seqs × images`` images of ``tokens`` (tiles × padded patches) at once, in the model dtype, and
    holds, while its layers run:

    - the hidden state of each ``intermediate_layers_indices`` layer beside the live one, ``tokens × width`` each
      and not split by tensor parallelism (:func:`servespec.knowledge.vision.mllama_encoder_states`);
    - the aspect-ratio attention mask, ``(images, 1, tokens, tokens)``, built once for both transformers
      (model_executor/models/mllama.py ``_prepare_aspect_ratio_attention_mask``: v0.6.3 L165-192, called at L547;
      the same through v0.10.2);
    - one layer's MLP activations, ``fc1``'s output and GELU's, ``tokens × intermediate / TP`` each
      (:func:`servespec.knowledge.vision.mllama_encoder_mlp`).

    A lower bound: the attention's q/k/v and output, the residual and the mask's transient copy come on top. 0 on
    V1 and for other models.
    """
    tokens, width, kept = inp.model.encoder_states
    if not tokens or _engine_core(inp) != "v0":
        return 0.0
    images = seqs * _images_per_prompt(inp)
    size = dtype_bytes(inp.model, inp.dtype)
    held = images * tokens * width * kept * size
    mask = images * tokens * tokens * size
    mlp = 2 * images * tokens * math.ceil(inp.model.encoder_mlp / max(inp.tensor_parallel, 1)) * size
    return (held + mask + mlp) / GIB


def rope_cache_gib(inp: EstimateInput) -> float:
    """GiB of the rotary embedding's cos/sin cache on each GPU, which "Model loading took" includes.

    vLLM registers it as a buffer of ``max_position × rotary_dim`` in the model dtype when the layer is built
    (model_executor/layers/rotary_embedding/base.py ``RotaryEmbedding.__init__``: ``_compute_cos_sin_cache``,
    ``cache.to(dtype)``, ``register_buffer``; v0.19.0 L58-63, the same in v0.6.3 rotary_embedding.py), one instance
    shared by every layer (``get_rope``'s ``_ROPE_DICT``) and not split by tensor parallelism. Its length is the
    model's ``max_position_embeddings``, times the factor for the scaling types that extend the cache (YaRN from
    ``original_max_position_embeddings``, linear and dynamic NTK): ``derived_max_len``. Negligible for most models
    (32 MiB at 131,072 positions); Llama 4 Scout's 10,485,760 positions make it 2.5 GiB.
    """
    model = inp.model
    positions = model.derived_max_len or model.max_position_embeddings or 0
    rotary = (model.qk_rope_head_dim or model.head_dim) if model.is_mla else model.head_dim
    return positions * rotary * dtype_bytes(model, inp.dtype) / GIB


_UNTYPED = ("inline", "unknown")
"""Model types of an architecture given without its config (a spec's inline ``model.architecture``): an MLA one is
taken for DeepSeek's, the architecture vLLM's MLA layout follows (``is_deepseek_mla``, ``DeepseekV2Attention``)."""
_PADDED_TYPES = ("deepseek_v2", "deepseek_v3", *_UNTYPED)
"""Model types whose attention is vLLM's ``DeepseekV2Attention`` (model_executor/models/deepseek_v2.py, deepseek_v3.py
in 0.6.6), the class ``padded_head_size`` is read from; another MLA model (MiniCPM3) caches ``qk_head_dim``."""


def mla_latent(inp: EstimateInput) -> tuple[bool, str] | None:
    """Whether the release caches this MLA model's compressed latent (its ``mla_kv_cache`` fact), and why not: a text
    model type the release's ``is_deepseek_mla`` names, ``VLLM_MLA_DISABLE`` (the fact's ``disable_env``) not set in
    the engine's environment, and a quantization ``use_mla`` takes. None: not an MLA model, or the fact not read
    (the latent is assumed, as for an uncatalogued release)."""
    model = inp.model
    fact = inp.release.facts.mla_kv_cache if inp.release else None
    if not model.is_mla or fact is None:
        return None
    text_type = fact.text_model_types.get(model.model_type, model.model_type)
    if not fact.latent_model_types:
        return False, "the release has no latent MLA cache (ModelConfig.use_mla came in 0.7.1)"
    if text_type not in fact.latent_model_types and text_type not in _UNTYPED:
        return False, f"model type {text_type} is not one the release caches as a latent (is_deepseek_mla)"
    if fact.disable_env and str(inp.env.get(fact.disable_env, "")).strip().lower() not in ("", "0", "false"):
        return False, f"{fact.disable_env} set"
    method = load_quantization(inp.quantization) or model.quant_method
    if fact.latent_quantizations is not None and method is not None and method not in fact.latent_quantizations:
        return False, f"the release's latent cache does not take {method} quantization"
    return True, ""


def mla_kv_input(inp: EstimateInput) -> tuple[EstimateInput, list[str]]:
    """``inp`` with the model as the release lays its KV cache out, and a note: for an MLA model the release does not
    cache as a latent (:func:`mla_latent`), full keys and values for each attention head, split by tensor
    parallelism, of the release's ``padded_head_size`` (256 in 0.5.1-0.6.6.post1) or ``qk_nope_head_dim +
    qk_rope_head_dim`` (values padded to it): vLLM's ``DeepseekV2Attention`` builds its ``Attention`` with
    ``num_kv_heads=num_local_heads`` (model_executor/models/deepseek_v2.py). Only the KV arithmetic reads the
    replaced model; the weights are counted from the real one."""
    found = mla_latent(inp)
    if found is None:
        return inp, []
    latent, why = found
    if latent:
        note = "MLA: the compressed latent cached (kv_lora_rank + qk_rope_head_dim per token and layer)"
        untyped = inp.model.model_type in _UNTYPED
        return inp, [note + (", the architecture given inline taken for DeepSeek's" if untyped else "")]
    model = inp.model
    fact = inp.release.facts.mla_kv_cache if inp.release else None
    text_type = fact.text_model_types.get(model.model_type, model.model_type) if fact else model.model_type
    padded = fact.padded_head_size if fact and text_type in _PADDED_TYPES else None
    size = padded or (model.qk_nope_head_dim or model.head_dim) + (model.qk_rope_head_dim or 0)
    size = size or model.head_dim
    expanded = replace(model, kv_lora_rank=None, kv_heads=model.attention_heads, head_dim=size, full_head_dim=None)
    note = f"MLA cached as per-head keys and values of {size} for each attention head: {why}"
    return replace(inp, model=expanded), [note]


def block_size(inp: EstimateInput) -> int:
    """Tokens per KV-cache block: ``block_size`` when set, else the release's default (its catalog fact)."""
    fact = inp.release.facts.block_size_default if inp.release else None
    return max(1, int(number(inp.options, "block_size", fact.value if fact else 16)))


def kv_tokens(inp: EstimateInput, kv_gib: float, batched: int) -> int:
    """The KV-cache size in tokens the release reports ("GPU KV cache size") for ``kv_gib`` GiB of KV
    budget per GPU and a ``batched``-token step: the last step of :func:`estimate`, without the budget's
    own arithmetic (what the engine-oracle tests compare with the release's kv_cache_utils)."""
    inp = mla_kv_input(inp)[0]
    layout = hybrid_layout(inp, kv_gib, block_size(inp), batched)
    if layout is not None:
        return layout.tokens
    return finish(inp, 0.0, 0.0, 0.0, kv_gib, block_size(inp), [], 1.0, draft_share(inp)[1]).kv_tokens


MTP_LAYERS = 1
"""Layers a ``mtp`` draft runs where the model's config names none (:func:`mtp_layers`): DeepSeek-V3's and
Qwen3-Next's ``num_nextn_predict_layers`` are 1."""
VLLM_DRAFT_KV = "https://github.com/vllm-project/vllm/blob/v0.11.0/vllm/v1/worker/gpu_model_runner.py"
"""``get_kv_cache_spec`` lists every attention layer of the forward context, the draft's (EAGLE, MTP, draft model)
with the target's: one pool, each token cached in both (v0.20.1 L6944-L6974 the same)."""


def mtp_layers(inp: EstimateInput) -> tuple[int, str]:
    """(layers an ``mtp`` draft builds, a note when they are not the config's own count as the release reads it).

    The release's ``SpeculativeConfig.hf_config_override`` reads the count from a config field per model family
    (its ``speculative_memory.mtp_layer_keys``): Qwen3.5's ``mtp_num_hidden_layers`` from 0.17.0, DeepSeek's
    ``num_nextn_predict_layers``; a config without such a field: :data:`MTP_LAYERS`."""
    model = inp.model
    fact = inp.release.facts.speculative_memory if inp.release else None
    if not model.mtp_layers or model.mtp_key is None:
        return MTP_LAYERS, f"MTP layers not named by the config: {MTP_LAYERS} assumed"
    if fact is not None and model.mtp_key not in fact.mtp_layer_keys:
        version = inp.release.version if inp.release else ""
        return MTP_LAYERS, f"vLLM {version} reads no {model.mtp_key}: {MTP_LAYERS} MTP layer assumed"
    return model.mtp_layers, ""


def draft_attention_layers(inp: EstimateInput) -> int | None:
    """Attention layers of the target's shape that the draft adds to the KV-cache groups: an ``mtp`` draft's layers
    (each a full-attention decoder layer), or a draft checkpoint's (EAGLE head, draft model, DFlash) when every one is
    a full-attention layer whose KV bytes per token equal a target layer's, so that its spec joins the target's
    full-attention groups; None where the draft's layers have a shape of their own or are not known, whose place
    in a hybrid layout is not modelled; 0 without a draft."""
    method = inp.speculative
    if method is None or method == "ngram":
        return 0
    if method == "mtp":
        return mtp_layers(inp)[0]
    draft = inp.draft
    if draft is None or draft.linear_layers or draft.kv_sliding_layers or draft.is_mla != inp.model.is_mla:
        return None
    element = kv_element_bytes(inp)
    target = full_layer_bytes_per_token(inp.model, element, inp.tensor_parallel)
    if layer_bytes_per_token(draft, element, inp.tensor_parallel) != target:
        return None
    return draft.kv_full_layers


def speculative_tokens(inp: EstimateInput) -> int | None:
    """``num_speculative_tokens``: the spec's, else an MTP draft's layer count (vLLM's default: ``n_predict``,
    vllm/config/speculative.py ``__post_init__``); None where neither says."""
    if inp.speculative_tokens:
        return inp.speculative_tokens
    if inp.speculative == "mtp":
        return mtp_layers(inp)[0]
    return None


def draft_share(inp: EstimateInput) -> tuple[float, float, list[str]]:
    """(GiB per GPU of the draft's weights, its KV bytes per token per GPU, notes) for ``model.speculative``.

    ``mtp`` runs :func:`mtp_layers` more layers of the target's shape (weights: the target's per
    layer; KV: one layer's each); ``eagle``, ``eagle3``, ``draft`` and ``dflash`` (its attention layers cache the
    context's keys and values as a draft model's do, v1/spec_decode/dflash.py) load the draft checkpoint, sized
    from its config when known (split over the same tensor-parallel GPUs: vLLM's draft
    ``tensor_parallel_size`` defaults to the target's); ``ngram`` loads nothing. The KV of the
    draft's layers shares the target's pool (:data:`VLLM_DRAFT_KV`), so each token costs both.
    """
    method = inp.speculative
    if method is None or method == "ngram":
        return 0.0, 0.0, []
    element = kv_element_bytes(inp)
    tp = max(inp.tensor_parallel, 1)
    if method == "mtp":
        layers, said = mtp_layers(inp)
        per_layer = weight_bytes(inp) / max(inp.model.layers, 1) / tp / GIB
        kv = layers * layer_bytes_per_token(mla_kv_input(inp)[0].model, element, tp)
        notes = [f"MTP draft: {layers} more layer(s), {per_layer * layers:.2f} GiB"] + ([said] if said else [])
        return per_layer * layers, kv, notes
    if inp.draft is None:
        return 0.0, 0.0, [f"{method} draft not known (no config at hand): its weights and KV cache are not counted"]
    draft = replace(inp, model=inp.draft, quantization=None, gguf_type=None, adapters=0, speculative=None)
    weights = weight_bytes(draft) / tp / GIB
    kv = kv_bytes_per_token(inp.draft, element, tp, 1)
    return weights, kv, [f"{method} draft {weights:.2f} GiB of weights, {kv / 1024:.1f} KiB of KV per token"]


def lora_settings(inp: EstimateInput) -> tuple[int, int] | None:
    """(max_loras, max_lora_rank) vLLM reserves slots for, or None when LoRA is off.

    LoRA is on with ``model.adapters`` (rendered as ``--enable-lora``) or ``enable_lora``; the
    limits are the spec's, else the release's defaults (its catalog: 1 and 16 in every catalogued
    release from 0.6.0 to 0.34.0, vllm/config/lora.py).
    """
    if not inp.adapters and inp.options.get("enable_lora") is not True:
        return None
    release = inp.release
    loras = int(number(inp.options, "max_loras", (release.default("max_loras") if release else None) or 1))
    rank = int(number(inp.options, "max_lora_rank", (release.default("max_lora_rank") if release else None) or 16))
    return max(loras, 1), max(rank, 1)


def lora_slots_gib(inp: EstimateInput) -> float:
    """GiB per GPU of the LoRA slots vLLM allocates when the model loads, before it sizes the KV cache
    (worker ``load_model`` creates the LoRA manager; ``determine_available_memory`` profiles after it)."""
    from servespec.knowledge.adapters import vllm_lora_slot_bytes

    found = lora_settings(inp)
    if found is None:
        return 0.0
    loras, rank = found
    dtype = inp.options.get("lora_dtype")
    element = 4.0 if dtype == "float32" or (dtype in (None, "auto") and inp.dtype == "float32") else 2.0
    layers = math.ceil(inp.model.layers / max(inp.pipeline_parallel, 1))
    model = replace(inp.model, layers=layers)
    sharded = inp.options.get("fully_sharded_loras") is True
    return vllm_lora_slot_bytes(model, loras, rank, inp.tensor_parallel, element, sharded) / GIB


def _windowed_layers(model: ModelFacts) -> int:
    """Windowed layers with a cache of their own (Gemma 3n/4's shared-KV layers keep none: vLLM's
    ``kv_sharing_target_layer_name``, model_executor/models/gemma4.py from 0.19.0)."""
    return model.kv_sliding_layers if model.sliding_window else 0


def hybrid_layout_unknown(inp: EstimateInput) -> bool:
    """A model with windowed or linear-attention layers on a V1 release that has a hybrid KV-cache
    manager (its ``--disable-hybrid-kv-cache-manager`` option, vllm/config/scheduler.py from 0.9.1)
    but whose catalog lacks the ``hybrid_kv_cache`` fact, or a linear-attention model on a release
    whose page alignment for a layer's state is not modelled (``linear_state_block`` None, 0.11.1+):
    how it lays the model out is not known."""
    release = inp.release
    if release is None or _engine_core(inp) != "v1":
        return False
    if release.option("disable_hybrid_kv_cache_manager") is None:
        return False
    disabled = inp.options.get("disable_hybrid_kv_cache_manager", release.default("disable_hybrid_kv_cache_manager"))
    if disabled is True:
        return False  # the manager is off: every layer caches every token, as sized
    fact = release.facts.hybrid_kv_cache
    hybrid = bool(_windowed_layers(inp.model) or inp.model.linear_layers)
    if fact is not None and hybrid and draft_attention_layers(inp) is None:
        return True  # a draft model's or EAGLE head's own layers beside the hybrid groups: not modelled
    if fact is not None:
        return bool(inp.model.linear_layers) and isinstance(linear_state_rule(inp, fact), str)
    return hybrid


_STATE_DTYPE_BYTES = {"float32": 4.0, "bfloat16": 2.0, "float16": 2.0}
"""``--mamba-cache-dtype`` / ``--mamba-ssm-cache-dtype`` values and a config's ``mamba_ssm_dtype`` (vllm/config/cache.py
``MambaDType``: auto, float32, float16; bfloat16 from Qwen3.5's configs)."""


def _prefix_caching(inp: EstimateInput, fact: HybridKvCache) -> bool:
    """Prefix caching for this hybrid model: the option when given, else the release's default for hybrid models."""
    wanted = inp.options.get("enable_prefix_caching")
    return wanted if isinstance(wanted, bool) else fact.hybrid_prefix_caching


def linear_state_rule(inp: EstimateInput, fact: HybridKvCache) -> tuple[int, int] | str:
    """(attention-block multiple, blocks per request of a linear layer's group) the release lays a linear-attention
    model out with, or why that layout is not modelled.

    Prefix caching puts a Gated DeltaNet or KDA model in ``align`` mode (neither supports ``all``): two state blocks
    per request from 0.15 (``linear_state_blocks`` ``cache_mode``), one without prefix caching. Not modelled: prefix
    caching on 0.11.1-0.14 (``mamba_block_size`` follows the attention block, aligned to the chunk size), align mode
    where the release adds prefill checkpoints (0.32+), speculative blocks (0.15+), MLA attention beside the state
    (Kimi Linear: the MLA kernels' alignment, 0.11.1+)."""
    multiple = fact.linear_state_block
    if multiple is None or fact.linear_state_blocks is None:
        return "the page size for a linear-attention layer's state is not modelled"
    found = _state_blocks(inp, fact)
    if isinstance(found, str):
        return found
    blocks, checkpoint_alignment = found
    if fact.linear_state_block_blackwell and _blackwell_head_256(inp, fact):
        multiple = fact.linear_state_block_blackwell
    if fact.linear_state_block_scales:
        multiple = max(multiple, block_size(inp))
    return math.lcm(multiple, checkpoint_alignment), blocks


def _state_blocks(inp: EstimateInput, fact: HybridKvCache) -> tuple[int, int] | str:
    """(blocks a state group holds per request, the prefill checkpoints' alignment or 1) (:func:`linear_state_rule`),
    or why they are not modelled."""
    caching = _prefix_caching(inp, fact)
    if fact.linear_state_blocks == "one":
        return 1, 1
    if inp.model.is_mla:
        return "the MLA kernels' block alignment beside a linear-attention state is not modelled"
    if fact.linear_state_blocks == "mamba_block":
        return "prefix caching aligns a linear layer's blocks to its chunk size (not modelled)" if caching else (1, 1)
    spare = _speculative_state_blocks(inp)
    if isinstance(spare, str):
        return spare
    if not caching:
        return 1 + spare, 1
    if inp.model.linear_kind in ("mamba1", "mamba2", "short_conv"):
        # align mode: two blocks (MambaSpec.max_memory_usage_bytes), plus MambaMixer2's prefill checkpoint (0.32+)
        return 2 + spare + (fact.mamba2_checkpoint_blocks if inp.model.linear_kind == "mamba2" else 0), 1
    if not fact.linear_prefill_checkpoints:
        return 2 + spare, 1
    flashinfer = _flashinfer_gdn_prefill(inp, fact)
    if flashinfer is None or fact.checkpoint_alignment is None or fact.checkpoint_blocks is None:
        return "prefix caching's align mode adds prefill checkpoints (per GDN prefill kernel), which are not modelled"
    return (2 + spare + fact.checkpoint_blocks, fact.checkpoint_alignment) if flashinfer else (2 + spare, 1)


def _speculative_state_blocks(inp: EstimateInput) -> int | str:
    """State blocks a linear layer holds per request for speculative decoding: ``num_speculative_tokens`` where the
    release counts them (``speculative_memory.linear_state_speculative_blocks``: ``MambaSpec``'s
    ``num_speculative_blocks``, 0.15.0 on), else 0; or why that is not known."""
    if inp.speculative is None:
        return 0
    fact = inp.release.facts.speculative_memory if inp.release else None
    if fact is None:
        return "speculative decoding's state blocks per request are not read for this release"
    if not fact.linear_state_speculative_blocks:
        return 0
    tokens = speculative_tokens(inp)
    if tokens is None:
        return "speculative decoding adds num_speculative_tokens state blocks per request, and the count is not given"
    return tokens


def _flashinfer_gdn_prefill(inp: EstimateInput, fact: HybridKvCache) -> bool | None:
    """Whether the release runs a Qwen Gated DeltaNet layer's prefill on FlashInfer here (``checkpoint_gpus``, the
    ``gdn_prefill_backend`` option, the wheel's CUDA runtime: ``image_cuda``); None: not known (no GPU, KDA)."""
    backend = inp.options.get("gdn_prefill_backend")
    if backend not in (None, "auto", "flashinfer"):
        return False
    if inp.gpu is None or inp.model.linear_kind != "gated_delta_net" or not fact.checkpoint_gpus:
        return None
    cuda = inp.release.facts.image_cuda if inp.release else None
    runtime = int(cuda.value.split(".")[0]) if cuda is not None and cuda.value.split(".")[0].isdigit() else None
    major, minor = inp.gpu.compute_capability
    for rule in fact.checkpoint_gpus:
        want_major, _, want_minor = rule.capability.partition(".")
        if major != int(want_major) or (not rule.family and minor != int(want_minor or 0)):
            continue
        if rule.head_k_dim is not None and inp.model.linear_state[3] != rule.head_k_dim:
            continue
        if rule.cuda_runtime_min is not None and (runtime is None or runtime < rule.cuda_runtime_min):
            return None if runtime is None else False
        return True
    return False


def _blackwell_head_256(inp: EstimateInput, fact: HybridKvCache) -> bool:
    """The release's FlashInfer case: head size 256 on compute capability 10.0 (10.x from 0.14), FlashInfer or no
    attention backend chosen (``attention_backend``)."""
    if inp.gpu is None or inp.model.head_dim != 256:
        return False
    if inp.options.get("attention_backend") not in (None, "FLASHINFER"):
        return False
    major, minor = inp.gpu.compute_capability
    return major == 10 and (fact.linear_state_block_blackwell_family or minor == 0)


def linear_state_page(inp: EstimateInput, fact: HybridKvCache | None) -> float:
    """Bytes of one linear layer's state per sequence on one GPU, in the dtypes the release gives it: the conv state
    in ``mamba_cache_dtype`` (auto: the model's dtype), the recurrent state in ``mamba_ssm_cache_dtype``; auto
    follows the conv state, except where the release applies the config's ``mamba_ssm_dtype``
    (``ssm_dtype_from_config``: Qwen3.5/3.6, float32) or keeps KDA's state in float32 (``kda_state_float32``)."""
    model = inp.model
    element = dtype_bytes(model, inp.dtype)
    conv = _STATE_DTYPE_BYTES.get(str(inp.options.get("mamba_cache_dtype")), element)
    asked = _STATE_DTYPE_BYTES.get(str(inp.options.get("mamba_ssm_cache_dtype")))
    recurrent = conv if asked is None else asked
    if asked is None and fact is not None:
        if model.linear_kind == "kda" and fact.kda_state_float32:
            recurrent = 4.0
        elif model.architecture in fact.ssm_dtype_from_config and model.linear_ssm_dtype in _STATE_DTYPE_BYTES:
            recurrent = _STATE_DTYPE_BYTES[str(model.linear_ssm_dtype)]
        elif model.linear_kind == "mamba2" and model.architecture in dict(fact.ssm_dtype_defaults):
            # NemotronH: the config's mamba_ssm_cache_dtype, else the release's default (float32)
            wanted = model.linear_ssm_dtype or dict(fact.ssm_dtype_defaults)[model.architecture]
            recurrent = _STATE_DTYPE_BYTES.get(wanted, recurrent)
    return linear_state_bytes(model, conv, inp.tensor_parallel, recurrent)


def one_sequence_floor(inp: EstimateInput) -> float:
    """Bytes per GPU that one ``max_model_len`` sequence needs under any layout of the hybrid manager.

    Full-attention layers cache every token; a sliding-window or chunked layer at least its
    window (vllm/v1/kv_cache_interface.py ``SlidingWindowSpec``/``ChunkedLocalAttentionSpec``
    ``max_memory_usage_bytes``: the window plus the scheduled tokens, in blocks); a linear-attention
    layer a fixed state (not counted here). Page padding and group rounding only add to it.
    """
    model = inp.model
    pipeline = inp.pipeline_parallel
    windowed = _windowed_layers(model)
    full = math.ceil((model.kv_full_layers + model.kv_sliding_layers - windowed) / pipeline)
    element = kv_element_bytes(inp)
    per_layer = layer_bytes_per_token(model, element, inp.tensor_parallel)
    per_full = full_layer_bytes_per_token(model, element, inp.tensor_parallel) if model.kv_full_layers else per_layer
    length = max(inp.max_model_len, 1)
    window = min(model.sliding_window or 0, length)
    return full * length * per_full + math.ceil(windowed / pipeline) * window * per_layer


def _group_size(counts: list[int], ratio: float | None) -> int:
    """Layers per KV-cache group: the smallest type's count, or the largest when within ``ratio``."""
    low, high = min(counts), max(counts)
    return high if ratio is not None and high < low * ratio else low


def _in_flight_batches(inp: EstimateInput, fact: HybridKvCache | None) -> int:
    """Batches a windowed layer reserves blocks for (``VllmConfig.max_concurrent_batches``, 0.26+): 2 under
    async scheduling (on unless ``async_scheduling: false``) at pipeline size 1, else the pipeline size."""
    if fact is None or not fact.in_flight_window:
        return 1
    if inp.pipeline_parallel <= 1 and inp.options.get("async_scheduling") is not False:
        return 2
    return max(inp.pipeline_parallel, 1)


def state_block(inp: EstimateInput, fact: HybridKvCache, block: int) -> tuple[int, int] | None:
    """(attention block in tokens, blocks per request of a state group) for a linear-attention model: the block
    grows to ``M × ceil(state page / (M × per-token page))`` tokens, ``M`` the release's alignment
    (:func:`linear_state_rule`), so that one page holds a layer's state; None where the layout is not modelled."""
    rule = linear_state_rule(inp, fact)
    if isinstance(rule, str):
        return None
    multiple, blocks = rule
    per_layer = layer_bytes_per_token(inp.model, kv_element_bytes(inp), inp.tensor_parallel)
    needed = linear_state_page(inp, fact)
    return max(block, multiple * math.ceil(needed / (multiple * per_layer))), blocks


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
    if inp.options.get("disable_hybrid_kv_cache_manager") is True or _engine_core(inp) != "v1":
        fact = None  # the manager off, or the V0 engine: every attention layer caches every token
    pipeline = inp.pipeline_parallel
    attention = model.kv_full_layers + model.kv_sliding_layers
    windowed = _windowed_layers(model)
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
    drafted = draft_attention_layers(inp) if fact is not None else 0
    if drafted is None:
        return None  # a draft of its own shape in a hybrid layout: hedged (hybrid_layout_unknown)
    full += drafted  # the draft's attention layers join the pool's full-attention groups (VLLM_DRAFT_KV)
    counts = [count for count in (full, windowed, state) if count]
    element = kv_element_bytes(inp)
    per_layer = layer_bytes_per_token(model, element, inp.tensor_parallel)
    state_blocks = 1
    if not model.uniform_kv and windowed:
        if state:
            return None  # a state page beside two attention page sizes: not modelled (hedged)
        return _unified_pages(inp, fact, kv_gib, block, batched, (full, windowed))
    if state:
        # Attention blocks grow until one page holds a linear layer's state (:func:`state_block`); a layout
        # the release makes otherwise is hedged (hybrid_layout_unknown), not sized here.
        found = state_block(inp, fact, block) if fact is not None else None
        if found is None:
            return None
        block, state_blocks = found
    page = block * per_layer
    size = _group_size(counts, fact.group_size_ratio if fact else None)
    full_groups, window_groups, state_groups = (math.ceil(count / size) for count in (full, windowed, state))
    blocks = int(max(kv_gib, 0.0) * GIB // (page * size))
    length = max(inp.max_model_len, 1)
    window = model.sliding_window or 0
    batched *= _in_flight_batches(inp, fact)
    if model.window_kind == "chunked":
        window_blocks = math.ceil(min(window + batched, length) / block)
    else:
        window_blocks = math.ceil(min(window - 1 + batched, length) / block) + 1
    per_request = full_groups * math.ceil(length / block) + window_groups * window_blocks + state_groups * state_blocks
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


def _window_blocks(model: ModelFacts, window: int, batched: int, length: int, block: int) -> int:
    """Blocks a windowed layer holds per request (``SlidingWindowSpec``/``ChunkedLocalAttentionSpec``)."""
    if model.window_kind == "chunked":
        return math.ceil(min(window + batched, length) / block)
    return math.ceil(min(window - 1 + batched, length) / block) + 1


def _unified_pages(
    inp: EstimateInput, fact: HybridKvCache | None, kv_gib: float, block: int, batched: int, counts: tuple[int, int]
) -> KvLayout | None:
    """Full and windowed layers of different bytes per token (Gemma 4's full layers: ``global_head_dim``, their own KV
    heads): vLLM's ``unify_kv_cache_spec_page_size`` (v1/core/kv_cache_utils.py, 0.19.0 L914-L951) multiplies the
    block size of the kind with the smaller page until both pages hold the same bytes (NotImplementedError when
    they do not divide: None, hedged), then groups layers as for one page size; the reported size is
    ``num_blocks // groups × min block_size`` (``_report_kv_cache_config``) or concurrency × length."""
    model = inp.model
    element = kv_element_bytes(inp)
    per_window = layer_bytes_per_token(model, element, inp.tensor_parallel)
    per_full = full_layer_bytes_per_token(model, element, inp.tensor_parallel)
    page = max(block * per_window, block * per_full)
    if page % (block * per_window) or page % (block * per_full):
        return None
    full_block, window_block = int(page // per_full), int(page // per_window)
    full, windowed = counts
    size = _group_size([count for count in counts if count], fact.group_size_ratio if fact else None)
    full_groups, window_groups = math.ceil(full / size), math.ceil(windowed / size)
    blocks = int(max(kv_gib, 0.0) * GIB // (page * size))
    length = max(inp.max_model_len, 1)
    batched *= _in_flight_batches(inp, fact)
    window_blocks = _window_blocks(model, model.sliding_window or 0, batched, length, window_block)
    per_request = full_groups * math.ceil(length / full_block) + window_groups * window_blocks
    groups = full_groups + window_groups
    reported = fact.reported_tokens if fact else "blocks_per_group"
    smallest = min(full_block if full else window_block, window_block)
    tokens = blocks // groups * smallest if reported == "blocks_per_group" else int(blocks / per_request * length)
    return KvLayout(
        tokens=tokens,
        sequences=blocks / per_request,
        one_sequence_bytes=per_request * page * size,
        growing_bytes_per_token=full_groups * size * per_full,
    )
