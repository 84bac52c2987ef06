"""Weights SGLang keeps whole on every tensor-parallel rank of an MLA model: the latent down-projections and the
DSA indexer.

``weights_per_gpu`` splits a model's dense part over the tensor-parallel ranks. SGLang's DeepSeek-style attention
(DeepSeek V2/V3/V3.2, Kimi K2, GLM-5 ``GlmMoeDsaForCausalLM``, which subclasses ``DeepseekV2ForCausalLM``) builds
some of it as ``ReplicatedLinear``, a full copy per rank (v0.5.12):

* ``fused_qkv_a_proj_with_mqa``: hidden → q_lora_rank + kv_lora_rank + qk_rope_head_dim, when the model has a
  ``q_lora_rank``; else ``kv_a_proj_with_mqa``: hidden → kv_lora_rank + qk_rope_head_dim
  (python/sglang/srt/models/deepseek_v2.py L1370-L1403);
* DeepSeek Sparse Attention's indexer: ``wq_b`` q_lora_rank → index_n_heads × index_head_dim, ``wk`` hidden →
  index_head_dim, ``weights_proj`` hidden → index_n_heads in bfloat16
  (python/sglang/srt/layers/attention/nsa/nsa_indexer.py L222-L242).

So each rank holds ``(1 − 1/tp)`` of them more than an even split gives. They are stored like the attention
part: in the model's dtype when only the experts are quantized (MXFP4), else at the checkpoint's width.
"""

from __future__ import annotations

import math

from servespec.knowledge.memory import GIB, EstimateInput, dtype_bytes, load_quantization
from servespec.knowledge.models import ModelFacts

EXPERTS_ONLY = frozenset({"mxfp4"})
"""Methods servespec sizes as quantizing the routed experts only (knowledge/memory.py ``weight_bytes``)."""


def replicated_params(model: ModelFacts) -> tuple[float, float]:
    """(parameters stored like attention, parameters always in bfloat16) per layer that every rank holds whole."""
    if not model.is_mla:
        return 0.0, 0.0
    h, rope, kv_lora = model.hidden_size, model.qk_rope_head_dim or 0, model.kv_lora_rank or 0
    q_lora = model.q_lora_rank or 0
    stored = h * (q_lora + kv_lora + rope)
    bf16 = 0.0
    if model.is_sparse:
        heads, dim = model.index_n_heads or 0, model.index_head_dim or 0
        stored += q_lora * heads * dim + h * dim
        bf16 = float(h * heads)
    return float(stored), bf16


def _attention_bytes(inp: EstimateInput) -> float:
    """Bytes per attention weight as the checkpoint stores it."""
    model = inp.model
    element = dtype_bytes(model, inp.dtype)
    method = load_quantization(inp.quantization) or model.quant_method
    if method is None or method in EXPERTS_ONLY or model.quant_bits is None:
        return element
    if any(part == "attention" and bits is None for part, _, bits in model.quant_parts):
        return element
    return min(model.quant_bits / 8, element)


def extra_gib(inp: EstimateInput) -> float:
    """GiB per GPU the replicated projections add to the even tensor-parallel split of the weights."""
    stored, bf16 = replicated_params(inp.model)
    if inp.tensor_parallel <= 1 or not (stored or bf16):
        return 0.0
    layers = math.ceil(inp.model.layers / inp.pipeline_parallel)
    per_layer = stored * _attention_bytes(inp) + bf16 * 2
    return layers * per_layer * (1 - 1 / inp.tensor_parallel) / GIB
