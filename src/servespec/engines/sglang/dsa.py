"""SGLang's KV cell of a DeepSeek Sparse Attention model (DeepSeek-V3.2, GLM-5): MLA latent plus indexer keys.

SGLang sizes its token pool as ``rest_memory // cell_size`` (``profile_max_num_token``); for a DSA
model (``is_deepseek_nsa`` / ``is_deepseek_dsa``: a DeepSeek-style architecture with ``index_topk``)
the cell of one token is, per attention layer:

* the MLA latent, ``kv_lora_rank + qk_rope_head_dim`` elements of the KV-cache dtype. From 0.5.17 the
  cell reads ``calculate_mla_kv_cache_dim``: an FP8 cache in the scaled layout of the FlashMLA
  kernels is ``kv_lora_rank`` FP8 bytes, a float32 scale per 128 of them, and the rope part in
  bfloat16 (656 bytes for DeepSeek-V3.2); the ``trtllm`` kernels (Blackwell's FP8 default) and
  CUDA TileLang on both sides keep the raw layout;
* from 0.5.4, the indexer's keys: ``index_head_dim`` FP8 bytes and a float32 scale per 128
  (``NSATokenToKVPool.index_k_with_scale_buffer``, 132 bytes for DeepSeek-V3.2). 0.5.3 allocates
  them without counting them in the cell.

The KV-cache dtype ``auto`` of a DSA model is FP8 (``fp8_e4m3``) on compute capability 10 and
above, else bfloat16; the release reads ``torch.cuda.get_device_capability()``, which on ROCm is the
major.minor HIP reports (9 on MI300X and MI355X: bfloat16 there). On ROCm the FP8 latent keeps its raw
layout with the HIP kernels (TileLang, AITER; Triton from 0.5.23), the HIP defaults. 0.5.3 also sets
``mem_fraction_static`` to 0.8 for these models, whatever was given.

Sources (each read in the release's sdist or wheel; the ranges below are the releases read):

* cell size without indexer, fraction 0.8: v0.5.3 python/sglang/srt/model_executor/model_runner.py
  ``profile_max_num_token`` L1274-1297; python/sglang/srt/server_args.py L823 (0.5.3 .. 0.5.3.post3)
* indexer added to the cell: v0.5.4 model_runner.py L1400-1416; v0.5.5 L1277-1308; v0.5.6 L1384-1415;
  v0.5.7 .. v0.5.10 model_runner_kv_cache_mixin.py ``get_cell_size_per_token``; v0.5.11, v0.5.13,
  v0.5.16 model_executor/pool_configurator.py (latent still ``kv_lora_rank + qk_rope_head_dim``)
* ``calculate_mla_kv_cache_dim`` in the cell: v0.5.17, v0.5.18, v0.5.19, v0.5.21, v0.5.23
  model_executor/pool_configurator.py
  ``_compute_cell_size``; mem_cache/kv_cache_configurator.py ``calculate_mla_kv_cache_dim``
* dtype default: v0.5.3/v0.5.4 server_args.py (``major >= 10``: fp8_e4m3); v0.5.5 .. v0.5.13
  server_args.py ``_set_default_nsa_kv_cache_dtype`` / ``_set_default_dsa_kv_cache_dtype``; v0.5.16 ..
  v0.5.23 arg_groups/overrides.py ``_dsa_kv_cache_dtype_default``
* FP8 backend default ``trtllm`` on capability 10+, ``flashmla_kv`` below: v0.5.16 .. v0.5.23
  arg_groups/overrides.py ``_dsa_split_backend_resolution``

Releases 0.5.12, 0.5.14, 0.5.15, 0.5.20 and 0.5.22 were not read: they lie between releases that
agree, and are taken to agree with them.
"""

from __future__ import annotations

import math

from packaging.version import InvalidVersion, Version

from servespec.knowledge.memory import EstimateInput, kv_element_bytes

FIRST = Version("0.5.3")
"""The first release with the NSA token pool (``NSATokenToKVPool``): before it a DSA model is sized as MLA."""
INDEXER_IN_CELL = Version("0.5.4")
SCALED_LATENT = Version("0.5.17")
QUANT_BLOCK = 128
"""``NSATokenToKVPool.quant_block_size``: one float32 scale per 128 FP8 values."""
FIXED_FRACTION = 0.8
"""0.5.3's ``mem_fraction_static`` for DSA models (server_args.py L823)."""
HIP_RAW_BACKENDS = ("tilelang", "aiter")
"""ROCm kernels that read the raw FP8 latent (v0.5.17 mem_cache/kv_cache_configurator.py L2011-L2017); the HIP
default of both backends is tilelang (v0.5.12 server_args.py L1718-L1720, v0.5.17 arg_groups/overrides.py
L1635-L1637)."""
HIP_TRITON = Version("0.5.23")
HIP_RAW_BACKENDS_TRITON = ("tilelang", "triton", "aiter")
"""v0.5.23 adds Triton to that list (kv_cache_configurator.py L3442-L3448) and makes it the HIP default of both
backends (arg_groups/overrides.py L709-L713). 0.5.18-0.5.22 were not read: taken to keep 0.5.17's list."""


def _version(inp: EstimateInput) -> Version | None:
    text = inp.release.version if inp.release is not None else inp.engine_version
    try:
        return Version(text)
    except InvalidVersion:
        return None


def applies(inp: EstimateInput) -> bool:
    """The release sizes this model's cache as a DSA model's (MLA with an indexer, SGLang 0.5.3 on)."""
    version = _version(inp)
    return inp.model.is_mla and inp.model.is_sparse and version is not None and version >= FIRST


def fixed_fraction(inp: EstimateInput) -> float | None:
    """0.5.3's forced ``mem_fraction_static`` for DSA models; None on every other release."""
    version = _version(inp)
    if applies(inp) and version is not None and version.release[:3] == (0, 5, 3):
        return FIXED_FRACTION
    return None


def _fp8(inp: EstimateInput) -> bool:
    """Whether the latent is stored in FP8: the dtype option, else ``auto``'s DSA default by capability."""
    value = inp.options.get(inp.kv_cache_dtype_option) if inp.kv_cache_dtype_option else None
    if value is not None and str(value) != "auto":
        return kv_element_bytes(inp) == 1.0
    return inp.gpu is not None and inp.gpu.compute_capability[0] >= 10


def _hip_raw(inp: EstimateInput, prefill: str, decode: str) -> bool:
    """On ROCm the latent keeps its raw layout unless both backends are set to kernels outside the HIP list."""
    version = _version(inp)
    hip_raw = HIP_RAW_BACKENDS_TRITON if version is not None and version >= HIP_TRITON else HIP_RAW_BACKENDS
    given = [name for name in (prefill, decode) if name]
    return len(given) < 2 or any(name in hip_raw for name in given)  # an unset side takes the HIP default


def _raw_layout(inp: EstimateInput) -> bool:
    """The FP8 latent keeps its raw layout: trtllm kernels (Blackwell's default) or TileLang on both sides;
    on ROCm also the HIP kernels (TileLang, AITER, Triton), which are its defaults."""
    prefill = str(inp.options.get("dsa_prefill_backend") or inp.options.get("nsa_prefill_backend") or "")
    decode = str(inp.options.get("dsa_decode_backend") or inp.options.get("nsa_decode_backend") or "")
    if "trtllm" in (prefill, decode) or (prefill == decode == "tilelang"):
        return True
    if inp.gpu is not None and inp.gpu.vendor == "amd":
        return _hip_raw(inp, prefill, decode)
    if prefill and decode:
        return False
    return inp.gpu is not None and inp.gpu.compute_capability[0] >= 10  # the default: trtllm from capability 10


def layer_bytes(inp: EstimateInput) -> float:
    """Bytes one token's cell takes in one attention layer, as the release sizes its pool."""
    model, version = inp.model, _version(inp)
    assert version is not None
    latent = (model.kv_lora_rank or 0) + (model.qk_rope_head_dim or 0)
    fp8 = _fp8(inp)
    if not fp8:
        mla = latent * (kv_element_bytes(inp) if inp.options.get(inp.kv_cache_dtype_option or "") else 2.0)
    elif version >= SCALED_LATENT and not _raw_layout(inp):
        rank = model.kv_lora_rank or 0
        mla = rank + rank // QUANT_BLOCK * 4 + (model.qk_rope_head_dim or 0) * 2
    else:
        mla = float(latent)
    indexer = 0
    if version >= INDEXER_IN_CELL:
        dim = model.index_head_dim or 0
        indexer = dim + dim // QUANT_BLOCK * 4
    return mla + indexer


def cell_bytes(inp: EstimateInput) -> float:
    """Bytes of one token's cell on one GPU (every layer of its pipeline stage; MLA is not split by TP)."""
    layers = math.ceil(inp.model.layers / inp.pipeline_parallel)
    return layers * layer_bytes(inp)
