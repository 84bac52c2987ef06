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
byte per 32: 4.25 bits per weight, ``DeepseekV4MegaMoEExperts`` shapes). vLLM builds the compressors' projections
and the indexer's ``weights_proj`` unquantized (model dtype) and the sinks, mHC tensors, ``ape`` and score biases in
float32 (:func:`_count`); the routers' dtype is not read here and they are sized with the FP8 layers.
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
    total, active, ratios, _, _ = _count(config)
    return total, active, ratios


def _count(config: dict[str, Any]) -> tuple[int, int, tuple[int, ...], int, int]:
    """:func:`count`, and of the non-expert, non-embedding parameters those vLLM keeps out of the checkpoint's FP8:
    (..., in the model dtype, in float32).

    In the model dtype: the compressors' ``fused_wkv_wgate`` and the indexer's ``weights_proj`` (built with
    ``quant_config=None``) and every norm. In float32 (``dtype=torch.float32``): ``attn_sink``, the mHC ``fn``,
    ``base`` and ``scale`` tensors, the compressors' ``ape`` and the routers' ``e_score_correction_bias``."""
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
    projections = (
        h * q_rank + h * head_dim + q_rank * heads * head_dim
        + (heads * head_dim // groups) * groups * o_rank + groups * o_rank * h
    )  # fmt: skip
    mix = (2 + hc) * hc
    norms = q_rank + head_dim + 2 * h  # q_norm, kv_norm, attn_norm, ffn_norm
    wide = norms * layers + h  # and the final norm
    full = (heads + 2 * (mix * hc * h) + 2 * mix + 2 * 3) * layers + hc * hc * h + hc + 1
    fixed = (projections + experts * h + shared * 3 * h * width) * layers + 2 * vocab * h
    full += experts * max(layers - hash_layers, 0)  # e_score_correction_bias past the hash layers
    for ratio in ratios:
        if ratio > 1:
            coff = 2 if ratio == 4 else 1
            full += ratio * coff * head_dim
            wide += h * 2 * coff * head_dim + head_dim
        if ratio == 4:
            index_heads = _required(config, "index_n_heads")
            index_dim = _required(config, "index_head_dim")
            fixed += q_rank * index_heads * index_dim
            wide += h * index_heads + 2 * index_dim + h * 2 * 2 * index_dim + index_dim
            full += 4 * 2 * index_dim
    fixed += wide + full
    expert = 3 * h * width
    return fixed + layers * experts * expert, fixed + layers * top_k * expert, ratios, wide, full


def layout(config: dict[str, Any], model_type: str) -> dict[str, Any]:
    """The ModelFacts fields DeepSeek V4 sets beyond the shared ones: its count, its compress ratios, and, for the
    FP8 checkpoints, what is stored otherwise: MXFP4 experts where ``expert_dtype`` is fp4 (vLLM's default when the
    field is absent), the parts vLLM keeps in the model dtype and in float32 (:func:`_count`); {} for other types."""
    if model_type not in MODEL_TYPES:
        return {}
    total, _, ratios, wide, full = _count(config)
    found: dict[str, Any] = {"params_override": float(total), "compress_ratios": ratios, "dense_layers": 0}
    expert_dtype = config.get("expert_dtype", "fp4")
    if expert_dtype not in ("fp4", "fp8"):
        raise fields.ConfigFieldError("expert_dtype", "fp4 or fp8")
    if fields.text(fields.mapping(config, "quantization_config") or {}, "quant_method") != "fp8":
        return found
    h, layers = _required(config, "hidden_size"), _required(config, "num_hidden_layers")
    experts, width = _required(config, "n_routed_experts"), _required(config, "moe_intermediate_size")
    shared = fields.count(config, "n_shared_experts") or 0
    # the attention part as knowledge/models.py part_params counts it for DeepSeek V4: what is not embeddings,
    # routed experts, shared experts or routers
    routed = layers * experts * 3 * h * width
    attention = (
        total - 2 * _required(config, "vocab_size") * h - routed - layers * (3 * h * shared * width + experts * h)
    )
    parts: tuple[tuple[str, float, float | None], ...] = (("attention", wide / attention, 16.0),)
    parts += (("attention", full / attention, 32.0),)
    if expert_dtype == "fp4":
        parts = (("experts", 1.0, MXFP4_BITS), *parts)
    found["quant_parts"] = parts
    return found


def active_params(config: dict[str, Any]) -> int:
    """Parameters one token uses: the routed experts it is sent to (num_experts_per_tok) instead of all."""
    return count(config)[1]
