"""DeepSeek V4 (``model_type: deepseek_v4``, DeepseekV4ForCausalLM): parameters from the config, as vLLM builds them.

Layout read from vLLM's model (vllm/model_executor/models/deepseek_v4.py and layers/deepseek_v4_attention.py,
layers/deepseek_compressor.py, vllm-project/vllm main as stored in the search index, 2026):

* attention per layer (``DeepseekV4Attention``): ``wq_a`` (hidden -> q_lora_rank) and ``wkv`` (hidden -> head_dim)
  fused as ``fused_wqa_wkv``, ``q_norm`` (q_lora_rank), ``wq_b`` (q_lora_rank -> heads x head_dim), ``kv_norm``
  (head_dim), ``wo_a`` (heads x head_dim / o_groups -> o_groups x o_lora_rank), ``wo_b`` (o_groups x o_lora_rank
  -> hidden), ``attn_sink`` (one per head);
* a compressor on each layer whose ``compress_ratios`` entry is above 1 (``DeepseekCompressor``: ``ape``
  (ratio x coff x head_dim), ``wkv`` and ``wgate`` (hidden -> coff x head_dim each), ``norm`` (head_dim); coff 2
  where the ratio is 4, else 1);
* on ratio-4 layers only, the indexer (``DeepseekV4Indexer``: ``wq_b`` (q_lora_rank -> index_n_heads x
  index_head_dim), ``weights_proj`` (hidden -> index_n_heads), ``k_norm`` LayerNorm (weight and bias) and its own
  ratio-4 compressor of ``index_head_dim``);
* mHC per layer (``DeepseekV4DecoderLayer``): ``hc_attn_fn`` and ``hc_ffn_fn`` ((2 + hc_mult) x hc_mult rows of
  hc_mult x hidden), their ``base`` ((2 + hc_mult) x hc_mult) and ``scale`` (3), ``attn_norm`` and ``ffn_norm``;
* MoE in every layer (``DeepseekV4MoE``): the router (n_routed_experts x hidden; a score bias on the layers past
  ``num_hash_layers``, whose hash layers route by a token table instead), routed experts (w1, w2, w3) and the
  shared expert(s) of ``moe_intermediate_size``;
* the model: embeddings, LM head (untied), final norm, ``hc_head_fn`` (hc_mult x hc_mult x hidden), its base and
  scale. The MTP layer (``num_nextn_predict_layers``) is skipped at load (``skip_substrs=["mtp."]``) unless it
  drafts, as for DeepSeek V3.

The hash layers' ``tid2eid`` token table (vocab x num_experts_per_tok int32 entries, 3 layers: about 9 MB) is an
index, not weights, and is not counted.

The checkpoint stores linear layers in block FP8 and, with ``expert_dtype: fp4``, the routed experts in MXFP4
(``DeepseekV4FP8Config``: ``Mxfp4MoEMethod`` for FusedMoE layers; uint8 pairs of E2M1 values plus one ue8m0 scale
byte per 32: 4.25 bits per weight, ``DeepseekV4MegaMoEExperts`` shapes).
"""

from __future__ import annotations

from typing import Any

from servespec.knowledge import config_fields as fields

MODEL_TYPES = ("deepseek_v4",)
"""Model types sized here (sgl-project's ``deepseek_ref`` FP8 copies stay refused: their config names no
``expert_dtype``, which vLLM defaults to fp4 while those checkpoints are re-quantized)."""

MXFP4_BITS = 4 + 8 / 32
"""An MXFP4 expert weight: a 4-bit E2M1 value and a ue8m0 scale byte per 32 (vLLM ``DeepseekV4MegaMoEExperts``:
``w13_weight`` hidden // 2 bytes, ``w13_weight_scale`` hidden // 32 bytes per row)."""

KV_UNMODELLED = (
    "DeepSeek V4's KV cache is not modelled: per layer a sliding-window cache (sliding_window tokens), a compressed "
    "cache of 1/compress_ratio of the tokens, the ratio-4 layers' indexer keys and the compressors' fp32 state, in "
    "the engine's own packed layout (vLLM DeepseekV4SWACache / MLAAttentionSpec compress_ratio / "
    "CompressorStateCache; SGLang's DeepSeek V4 memory pools), whose per-release facts are not catalogued"
)
"""Why no engine sizes a DeepSeek V4 KV cache here (engines/base.py ``estimate`` returns no plan)."""

KV_UNMODELLED_SHORT = (
    "DeepSeek V4's KV cache (a sliding-window cache, caches compressed by compress_ratios, indexer keys and "
    "compressor state per layer) is not modelled for any engine release: no memory plan, MEM rules skipped"
)
"""What REF003 says for a deployment of a DeepSeek V4 model (rules/references.py)."""


def _compressor(hidden: int, head_dim: int, ratio: int) -> int:
    """``DeepseekCompressor``: ape, the fused wkv/wgate projection, the RMSNorm."""
    coff = 2 if ratio == 4 else 1
    return ratio * coff * head_dim + hidden * 2 * coff * head_dim + head_dim


def _ratios(config: dict[str, Any], layers: int) -> tuple[int, ...]:
    ratios = fields.items(config, "compress_ratios")
    if ratios is None or len(ratios) < layers or not all(type(r) is int and 0 <= r <= 1 << 20 for r in ratios):
        raise fields.ConfigFieldError("compress_ratios", f"a list of at least num_hidden_layers ({layers}) counts")
    return tuple(ratios[:layers])


def _required(config: dict[str, Any], key: str) -> int:
    value = fields.count(config, key, required=True)
    assert value is not None  # required: a missing field raises KeyError
    return value


def count(config: dict[str, Any]) -> tuple[int, int, tuple[int, ...]]:
    """(total parameters, active parameters, per-layer compress ratios) of the decoder, embeddings and head; the
    MTP layer excluded."""
    layers = _required(config, "num_hidden_layers")
    h = _required(config, "hidden_size")
    heads = _required(config, "num_attention_heads")
    head_dim = _required(config, "head_dim")
    q_rank = _required(config, "q_lora_rank")
    o_rank = _required(config, "o_lora_rank")
    groups = _required(config, "o_groups")
    hc = _required(config, "hc_mult")
    vocab = _required(config, "vocab_size")
    experts = _required(config, "n_routed_experts")
    top_k = _required(config, "num_experts_per_tok")
    width = _required(config, "moe_intermediate_size")
    shared = fields.count(config, "n_shared_experts") or 0
    hash_layers = fields.count(config, "num_hash_layers") or 0
    ratios = _ratios(config, layers)
    attention = (
        h * q_rank + h * head_dim + q_rank + q_rank * heads * head_dim + head_dim
        + (heads * head_dim // groups) * groups * o_rank + groups * o_rank * h + heads
    )  # fmt: skip
    mix = (2 + hc) * hc
    per_layer_fixed = attention + 2 * h + 2 * (mix * hc * h) + 2 * mix + 2 * 3
    per_layer_fixed += experts * h + shared * 3 * h * width
    fixed = 0
    for index, ratio in enumerate(ratios):
        fixed += per_layer_fixed + (experts if index >= hash_layers else 0)
        if ratio > 1:
            fixed += _compressor(h, head_dim, ratio)
        if ratio == 4:
            index_heads = _required(config, "index_n_heads")
            index_dim = _required(config, "index_head_dim")
            fixed += q_rank * index_heads * index_dim + h * index_heads + 2 * index_dim
            fixed += _compressor(h, index_dim, 4)
    fixed += 2 * vocab * h + h + hc * hc * h + hc + 1
    expert = 3 * h * width
    return fixed + layers * experts * expert, fixed + layers * top_k * expert, ratios


def layout(config: dict[str, Any], model_type: str) -> dict[str, Any]:
    """The ModelFacts fields DeepSeek V4 sets beyond the shared ones: its count, its compress ratios, and its
    MXFP4 experts where ``expert_dtype`` is fp4 (vLLM's default when the field is absent); {} for other types."""
    if model_type not in MODEL_TYPES:
        return {}
    total, _, ratios = count(config)
    found: dict[str, Any] = {"params_override": float(total), "compress_ratios": ratios, "dense_layers": 0}
    expert_dtype = config.get("expert_dtype", "fp4")
    if expert_dtype not in ("fp4", "fp8"):
        raise fields.ConfigFieldError("expert_dtype", "fp4 or fp8")
    if (
        expert_dtype == "fp4"
        and fields.text(fields.mapping(config, "quantization_config") or {}, "quant_method") == "fp8"
    ):
        found["quant_parts"] = (("experts", 1.0, MXFP4_BITS),)
    return found


def active_params(config: dict[str, Any]) -> int:
    """Parameters one token uses: the routed experts it is sent to (num_experts_per_tok) instead of all."""
    return count(config)[1]
