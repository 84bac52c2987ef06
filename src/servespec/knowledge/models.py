"""Model architecture facts, read from a Hugging Face ``config.json`` or the built-in catalog.

The catalog (``data/models.yaml``) stores config.json fields verbatim with the URL each
was read from; this module turns a config into :class:`ModelFacts` and counts the
parameters from the architecture (never from a name like "8B").
"""

from __future__ import annotations

import fnmatch
import functools
import json
import math
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from servespec.knowledge import config_fields as fields
from servespec.knowledge import deepseek_v4, gemma4, mamba
from servespec.knowledge import vision as towers
from servespec.knowledge.datafile import load_yaml_data
from servespec.spec.grammars import MAX_FLOAT, oversized_number
from servespec.spec.models import Architecture

TRANSFORMERS_CONFIGS = "https://github.com/huggingface/transformers/tree/main/src/transformers/models"

# transformers' own default for tie_word_embeddings differs by model type
# (e.g. GemmaConfig ties, LlamaConfig does not); see each configuration_<type>.py.
_TIED_BY_DEFAULT = {"gemma", "gemma2", "gemma3", "gemma3_text", "gemma4", "gemma4_text", "starcoder2"}
_TIED_BY_DEFAULT |= {"opt", "gpt2", "gpt_bigcode", "falcon", "bloom", "mpt", "RefinedWeb", "RefinedWebModel"}
# SmolLM3Config: tie_word_embeddings defaults to True (transformers 5.20 and 5.24 configuration_smollm3.py).
_TIED_BY_DEFAULT |= {"smollm3"}
# CohereConfig, Cohere2Config and Ernie4_5_MoeConfig: tie_word_embeddings defaults to True (transformers 5.20.2
# configuration_cohere.py L82, configuration_cohere2.py L81, configuration_ernie4_5_moe.py L105).
_TIED_BY_DEFAULT |= {"cohere", "cohere2", "ernie4_5_moe"}
# MiniCPM 1/2's remote-code MiniCPMConfig defaults tie_word_embeddings to True (configuration_minicpm.py, read by vLLM
# with trust_remote_code); MiniCPM-2B's published 2.7B total is its 2.4B without embeddings plus one tied table.
_TIED_BY_DEFAULT |= {"minicpm"}
# Model types whose attention projections carry biases (modeling_<type>.py).
_QKV_BIAS = {"qwen2", "qwen2_moe", "qwen2_vl", "qwen2_vl_text", "qwen2_5_vl", "qwen2_5_vl_text"}
# Model types whose q, k and v projections (not o_proj) carry biases when the config says attention_bias
# (transformers Glm4MoeAttention: GLM-4.5/4.6/4.7 set it true).
# GLM-4-0414 (glm4), its predecessor glm and Seed-OSS likewise: q, k and v biased by attention_bias, which their
# configuration classes default to true (transformers 5.20.2 GlmConfig, Glm4Config, SeedOssConfig.attention_bias;
# Seed-OSS's o_proj follows attention_out_bias, default false). GLM-4.5V/4.6V's text model (glm4v_moe_text) likewise
# (transformers 5.20.2 Glm4vMoeTextAttention, Glm4vMoeTextConfig.attention_bias defaulting to true).
_QKV_BIAS_WHEN_SET = {"glm4_moe", "glm", "glm4", "seed_oss", "glm4v_moe_text"}
# Model types whose sliding_window applies only when use_sliding_window is set (Qwen2 and its VL text models:
# Qwen2-VL and Qwen2.5-VL configs give sliding_window 32768 beside use_sliding_window false).
_QWEN_WINDOW_FLAG = ("qwen2", "qwen2_moe", "qwen3", "qwen3_moe", *sorted(_QKV_BIAS - {"qwen2", "qwen2_moe"}))
# Llama 3.2 Vision's text model (transformers MllamaTextModel): cross-attention layers among the
# num_hidden_layers, an embedding of vocab_size + 8 rows.
_MLLAMA_TEXT = "mllama_text_model"
_GEMMA_NORMS = {"gemma2", "gemma3", "gemma3_text"}
_GEMMA3_TYPES = ("gemma3", "gemma3_text")
# StarCoder2 (transformers Starcoder2Config / modeling_starcoder2.py): a two-matrix MLP (c_fc, c_proj), every
# projection biased when use_bias (default true), LayerNorms with a bias, embeddings tied by default.
_STARCODER2 = "starcoder2"
# Model types whose shared expert is scaled by a gate of its own (Linear(hidden, 1): modeling_<type>.py).
_SHARED_EXPERT_GATE = ("qwen2_moe", "qwen3_next", "qwen3_5_moe")

# Decoder families whose config.json names its sizes otherwise: the field servespec reads -> the family's own
# (transformers v5.24.0 configuration_<type>.py: the attribute_map of GPT2Config, GPTJConfig, GPTBigCodeConfig,
# BloomConfig and MptConfig; OPTConfig.ffn_dim; FalconConfig.ffn_hidden_size and num_kv_heads;
# https://github.com/huggingface/transformers/blob/v5.24.0/src/transformers/models/<type>/configuration_<type>.py for
# <type> in opt, gpt2, gpt_neox, gptj, gpt_bigcode, falcon, bloom, mpt). A missing field is named as the family
# spells it.
_GPT2_FIELDS = {
    "num_hidden_layers": "n_layer",
    "hidden_size": "n_embd",
    "num_attention_heads": "n_head",
    "max_position_embeddings": "n_positions",
    "intermediate_size": "n_inner",
}
_FAMILY_FIELDS: dict[str, dict[str, str]] = {
    "gpt2": _GPT2_FIELDS,
    "gptj": _GPT2_FIELDS,
    "gpt_bigcode": _GPT2_FIELDS,
    "opt": {"intermediate_size": "ffn_dim"},
    "falcon": {"intermediate_size": "ffn_hidden_size"},
    # Falcon's first configs (tiiuae/falcon-7b's RefinedWebModel, falcon-40b's RefinedWeb), which vLLM still reads
    # with a config class of its own (vllm/transformers_utils/configs/falcon.py RWConfig.attribute_map, v0.11.0)
    "RefinedWeb": {"num_hidden_layers": "n_layer", "num_attention_heads": "n_head"},
    "RefinedWebModel": {"num_hidden_layers": "n_layer", "num_attention_heads": "n_head"},
    "bloom": {"num_hidden_layers": "n_layer", "num_attention_heads": "n_head"},
    # ChatGLM2/3 and GLM-4-9B (remote code configuration_chatglm.py ChatGLMConfig, as vLLM's ChatGLMConfig reads
    # it: vllm/transformers_utils/configs/chatglm.py attribute_map num_layers, padded_vocab_size, seq_length)
    "chatglm": {
        "num_hidden_layers": "num_layers",
        "vocab_size": "padded_vocab_size",
        "intermediate_size": "ffn_hidden_size",
        "max_position_embeddings": "seq_length",
        "head_dim": "kv_channels",
    },
    # EXAONE 3 / 3.5 (remote code configuration_exaone.py ExaoneConfig.attribute_map: num_hidden_layers ->
    # num_layers; vllm/transformers_utils/configs/exaone.py the same)
    "exaone": {"num_hidden_layers": "num_layers"},
    # DBRX (transformers DbrxConfig.attribute_map); its attn_config and ffn_config are lifted beforehand
    "dbrx": {
        "num_hidden_layers": "n_layers",
        "hidden_size": "d_model",
        "num_attention_heads": "n_heads",
        "max_position_embeddings": "max_seq_len",
    },
    "mpt": {
        "num_hidden_layers": "n_layers",
        "hidden_size": "d_model",
        "num_attention_heads": "n_heads",
        "max_position_embeddings": "max_seq_len",
    },
}
# Backward-compatible keywords that win over hidden_size (BloomConfig.__post_init__, FalconConfig.__post_init__).
_FAMILY_KEYWORDS = {
    model_type: {"hidden_size": "n_embed"} for model_type in ("bloom", "falcon", "RefinedWeb", "RefinedWebModel")
}
_REFINED_WEB = ("RefinedWeb", "RefinedWebModel")
# Families whose learned absolute position table has max_position_embeddings rows (OPT's two more): sizing its
# weights needs that field.
_POSITION_TABLES = ("opt", "gpt2", "gpt_bigcode")
# Families whose MLP width has no default (OPTConfig.ffn_dim, GPTNeoXConfig.intermediate_size are read as given).
_MLP_WIDTH_NEEDED = ("opt", "gpt_neox")


@dataclass(frozen=True)
class ModelFacts:
    """What memory and parallelism rules need to know about a model."""

    name: str
    model_type: str
    layers: int
    hidden_size: int
    attention_heads: int
    kv_heads: int
    head_dim: int
    intermediate_size: int | None = None
    vocab_size: int | None = None
    max_position_embeddings: int | None = None
    tie_word_embeddings: bool = False
    torch_dtype: str | None = None
    rope_scaling: bool = False
    rope_type: str | None = None
    rope_factor: float | None = None
    original_max_position_embeddings: int | None = None
    sliding_window: int | None = None
    sliding_layers: int = 0
    experts: int | None = None
    active_experts: int | None = None
    moe_intermediate_size: int | None = None
    shared_intermediate_size: int = 0
    dense_layers: int = 0
    kv_lora_rank: int | None = None
    q_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    qk_nope_head_dim: int | None = None
    v_head_dim: int | None = None
    gguf_kv_widths: tuple[int, int] | None = None
    """A GGUF file's K and V widths per layer and cell (llama.cpp ``n_embd_k_gqa``, ``n_embd_v_gqa``: head_count_kv x
    key_length / value_length), read for MLA models only: llama.cpp caches K and V of these widths, per attention head
    in a GGUF converted before its MLA layout (PR #12801) and as the latent (kv_lora_rank + rope, kv_lora_rank) after
    it (knowledge/memory.py ``gguf_layer_bytes_per_token``). None: not read from a GGUF."""
    quant_method: str | None = None
    quant_bits: float | None = None
    quant_parts: tuple[tuple[str, float, float | None], ...] = ()
    """Parts the checkpoint stores otherwise than ``quant_bits``: (``attention``/``experts``/``mlp``/``lm_head``,
    share of that part's layers, bits per weight or None for the model's dtype): ModelOpt's excluded
    modules and MIXED_PRECISION layers."""
    weight_block_size: tuple[int, int] | None = None
    """Block-wise FP8's ``[block_n, block_k]`` (``quantization_config.weight_block_size``); None: none."""
    params_override: float | None = None
    weight_bytes: int | None = None
    """Bytes of the checkpoint's tensors as stored (safetensors headers, a GGUF file, the Hub, a lock file)."""
    params_by_dtype: tuple[tuple[str, int], ...] = ()
    """Stored elements per dtype (safetensors headers or the Hub): packed formats count packed elements."""
    file_type: str | None = None
    """A GGUF file's llama.cpp file type (``Q4_K_M``), as ``model.gguf_type`` spells it."""
    window_kind: str = "sliding"
    """How the ``sliding_layers`` limit their context: ``sliding`` windows or Llama 4 ``chunked`` attention."""
    linear_layers: int = 0
    """Linear-attention (Gated DeltaNet) or Mamba layers: a fixed state per sequence, no per-token KV."""
    linear_state: tuple[int, int, int, int, int] = (0, 0, 0, 0, 0)
    """Gated DeltaNet state shape: (conv channels, conv kernel, value heads, key head dim, value head dim)."""
    linear_ssm_dtype: str | None = None
    """The dtype the config asks for a Gated DeltaNet layer's recurrent state (Qwen3.5's ``mamba_ssm_dtype``);
    whether a release applies it is the release's fact (``hybrid_kv_cache.ssm_dtype_from_config``)."""
    architecture: str | None = None
    """The config's first ``architectures`` entry (the release's per-architecture rules: linear-attention state
    dtypes, SGLang's hybrid SWA pool and ``--cpu-offload-gb``)."""
    linear_groups: int = 0
    """Mamba-2's ``n_groups`` (vLLM widens them to the TP size when it does not divide them); 0: not Mamba-2."""
    stateless_layers: int = 0
    """Blocks with neither KV nor state (Nemotron-H's MLP-only and MoE-only blocks)."""
    layer_modules: tuple[tuple[tuple[str, str, float, bool], ...], ...] = ()
    """Per decoder layer, its modules as the serving engine names them after ``model.layers.<i>.`` (Nemotron-H's
    ``mixer.in_proj``, ``mixer.experts``...): (name, part of ``quant_parts``, parameters, whether the engine builds it
    with the quantization config). Given where the blocks differ from layer to layer (knowledge/mamba.py), so that a
    checkpoint's excluded module names are matched to the module they name; empty: every layer alike."""
    linear_kind: str = "gated_delta_net"
    """Which linear attention the ``linear_layers`` are: Qwen3-Next's ``gated_delta_net`` or Kimi Linear's ``kda``
    (Kimi Delta Attention: q, k and v convolved separately, a low-rank per-channel forget gate and output gate)."""
    mtp_layers: int = 0
    """Multi-token-prediction layers the checkpoint carries beside ``layers`` (DeepSeek-V3's and Qwen3-Next's
    ``num_nextn_predict_layers``, Qwen3.5's ``mtp_num_hidden_layers``, MiMo's ``num_mtp_modules``), loaded only as an
    ``mtp`` speculative draft; 0: none named."""
    mtp_key: str | None = None
    """The config field ``mtp_layers`` was read from (a release reads its own per model family)."""
    attention_gate: bool = False
    """Qwen3-Next / Qwen3.5 full attention: q_proj also yields an output gate (``attn_output_gate``)."""
    index_n_heads: int | None = None
    """DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5): the lightning indexer's heads (``index_n_heads``)."""
    index_head_dim: int | None = None
    """The indexer's key width per token and layer (``index_head_dim``): a cache of its own beside MLA's."""
    index_topk: int | None = None
    """Tokens each query attends to under DSA (``index_topk``)."""
    vision_params: float = 0.0
    """Parameters of a multimodal checkpoint's vision (and audio) towers and projectors: loaded with it."""
    qkv_bias: bool = False
    """The q, k and v projections carry biases (Qwen2; GLM-4.5 with ``attention_bias``)."""
    linear_bias: bool = False
    """Every attention and MLP projection carries a bias (StarCoder2's ``use_bias``, true by default)."""
    mlp_matrices: int = 3
    """Weight matrices of a dense MLP: 3 for a gated one (gate, up, down), 2 for an fc-in/fc-out one (OPT, GPT-2,
    GPT-NeoX, GPT-J, gpt_bigcode, Falcon, BLOOM, MPT)."""
    attention_biases: bool = False
    """The q, k, v and output projections carry biases (OPT ``enable_bias``, GPT-2, GPT-NeoX ``attention_bias``...)."""
    mlp_biases: bool = False
    """Both MLP matrices carry biases."""
    norms_per_layer: int = 2
    """Norms in each decoder layer (GPT-J and Falcon-7B's parallel block: one)."""
    norm_weights: int = 1
    """Parameter vectors per norm: 1 (RMSNorm, a bias-free LayerNorm), 2 (LayerNorm's weight and bias), 0 (none)."""
    final_norm: bool = True
    """The decoder ends in a norm (OPT with ``do_layer_norm_before`` false does not)."""
    position_embeddings: int = 0
    """Rows of a learned absolute position table (GPT-2 ``n_positions``; OPT ``max_position_embeddings`` + 2)."""
    embed_dim: int | None = None
    """Width of the token embeddings and LM head when not ``hidden_size`` (OPT ``word_embed_proj_dim``: the decoder
    projects in and out of it)."""
    embed_norm: bool = False
    """A LayerNorm right after the token embeddings (BLOOM ``word_embeddings_layernorm``)."""
    lm_head_bias: bool = False
    """The LM head carries a bias (GPT-J)."""
    full_kv_heads: int | None = None
    """KV heads of the full-attention layers where they differ from ``kv_heads`` (the sliding layers'): Gemma 4's
    ``num_global_key_value_heads`` with ``attention_k_eq_v``. None: the same."""
    full_head_dim: int | None = None
    """Head size of the full-attention layers where it differs from ``head_dim``: Gemma 4's ``global_head_dim``."""
    kv_shared_layers: int = 0
    """Trailing layers that read an earlier layer's KV cache and keep none (Gemma 3n/4 ``num_kv_shared_layers``)."""
    kv_shared_sliding: int = 0
    """How many of the ``kv_shared_layers`` are sliding-window layers (the rest are full-attention ones)."""
    value_from_key: bool = False
    """Full-attention layers without a ``v_proj``: the keys are the values (Gemma 4 ``attention_k_eq_v``); the
    engines still cache a value tensor of the keys' shape."""
    per_layer_input: int = 0
    """Per-layer input width (Gemma 4 ``hidden_size_per_layer_input``; 0: none)."""
    per_layer_vocab: int = 0
    """Rows of the per-layer embedding table (``vocab_size_per_layer_input``)."""
    double_wide_shared_mlp: bool = False
    """The KV-shared layers' MLPs are twice ``intermediate_size`` wide (Gemma 4 ``use_double_wide_mlp``)."""
    qk_norm_params: int = 0
    """Parameters of each layer's query and key norms where a family's layout sets them (Command R+'s per-head
    LayerNorms, OLMoE's over all heads, StableLM 2's per-head ones); 0: none, or counted by model type."""
    layer_extra: int = 0
    """Other parameters of each decoder layer outside projections and norms (Apertus' xIELU ``alpha_p`` and
    ``alpha_n``)."""
    router_bias: bool = False
    """Each MoE layer's router carries a per-expert score bias (ERNIE 4.5's ``moe_statics.e_score_correction_bias``)."""
    compress_ratios: tuple[int, ...] = ()
    """DeepSeek V4's per-layer KV compression (``compress_ratios``: 0 sliding window only, 4 compressed with an
    indexer, 128 compressed); its KV cache is not sized (knowledge/deepseek_v4.py ``KV_UNMODELLED``). Empty: none."""

    @property
    def kv_sliding_layers(self) -> int:
        """Sliding-window (or chunked) layers that keep a KV cache of their own."""
        return max(self.sliding_layers - self.kv_shared_sliding, 0)

    @property
    def kv_full_layers(self) -> int:
        """Full-attention layers that keep a KV cache of their own (linear-attention and shared layers excluded)."""
        shared_full = self.kv_shared_layers - self.kv_shared_sliding
        return max(self.layers - self.linear_layers - self.stateless_layers - self.sliding_layers - shared_full, 0)

    @property
    def uniform_kv(self) -> bool:
        """Every layer that caches keeps the same KV shape (no full-attention shape of its own)."""
        return (self.full_kv_heads or self.kv_heads) == self.kv_heads and (
            self.full_head_dim or self.head_dim
        ) == self.head_dim

    vision_profile: towers.VisionProfile | None = None
    """The dummy image vLLM V1's profiling run feeds the vision tower, and the tower's shape (knowledge/vision.py
    ``vision_profile``); None where it is not derived."""
    encoder_states: tuple[int, int, int] = (0, 0, 0)
    """Llama 3.2 Vision's encoder: (tokens per image, width, hidden states held at once) for vLLM's V0 profiling
    run, which runs every profiled image through the tower in one batch (knowledge/vision.py
    ``mllama_encoder_states``)."""
    encoder_mlp: int = 0
    """Llama 3.2 Vision's encoder: the width of its MLP, whose two activations a layer holds at once in vLLM's V0
    profiling run (knowledge/vision.py ``mllama_encoder_mlp``)."""
    cross_layers: int = 0
    """Llama 3.2 Vision: how many of the ``layers`` attend to the image (``cross_attention_layers``). Each has
    q, k, v and o projections as wide as self-attention's, q_norm, k_norm and two gates (transformers
    MllamaCrossAttentionDecoderLayer); vLLM 0.6/0.7 cache their keys and values in the same blocks as every
    other layer's (the block spans all ``num_hidden_layers``), so the KV layout is the full-attention one."""

    @property
    def derived_max_len(self) -> int | None:
        """The longest context the engine accepts for this model (vLLM's derived max_model_len).

        Rope types ``su``, ``longrope`` and ``llama3`` already express their full length in
        max_position_embeddings; ``yarn`` extends ``original_max_position_embeddings`` by its
        factor; other scaling types multiply max_position_embeddings by the factor
        (vllm/config/model.py, _get_and_verify_max_len).
        """
        base = self.max_position_embeddings
        if base is None or not self.rope_scaling or self.rope_type in ("su", "longrope", "llama3"):
            return base
        factor = self.rope_factor or 1.0
        if self.rope_type == "yarn" and self.original_max_position_embeddings:
            return int(self.original_max_position_embeddings * factor)
        return int(base * factor)

    @property
    def is_mla(self) -> bool:
        """Multi-head latent attention (DeepSeek-V2/V3): the KV cache holds a compressed latent."""
        return self.kv_lora_rank is not None

    @property
    def gguf_mla_latent(self) -> bool:
        """A GGUF in llama.cpp's MLA layout (PR #12801: one KV head whose K is the latent plus the rope part,
        ``kv_lora_rank + qk_rope_head_dim``, and whose V is the latent, ``kv_lora_rank``), which llama.cpp marks
        ``hparams.is_mla()`` (``attention.key_length_mla`` present); False for a per-head GGUF or no GGUF."""
        if self.gguf_kv_widths is None or not self.kv_lora_rank:
            return False
        k, v = self.gguf_kv_widths
        return k == self.kv_lora_rank + (self.qk_rope_head_dim or 0) and v == self.kv_lora_rank

    @property
    def is_sparse(self) -> bool:
        """DeepSeek Sparse Attention: MLA plus a lightning indexer with its own per-token key cache."""
        return bool(self.index_topk and self.index_head_dim)

    @property
    def is_moe(self) -> bool:
        """Mixture of experts."""
        return bool(self.experts and self.experts > 1)

    @property
    def params(self) -> float:
        """Total parameters, counted from the architecture (or given inline)."""
        return self.params_override if self.params_override is not None else count_parameters(self)[0]

    @property
    def active_params(self) -> float:
        """Parameters used per token (differs from :attr:`params` for MoE)."""
        if self.params_override is not None:
            return self.params_override
        return count_parameters(self)[1]


_TRANSFORMERS_DEFAULTS: dict[str, dict[str, Any]] = {
    # Gemma 3's own config.json files name few text fields (google/gemma-3-4b-it's text_config gives
    # hidden_size, intermediate_size, num_hidden_layers, rope_scaling, sliding_window): transformers
    # fills the rest from Gemma3TextConfig's defaults (configuration_gemma3.py, transformers v5.24.0
    # L42-L62; sliding_window_pattern 6: L105), as every engine loading it does.
    "gemma3_text": {
        "vocab_size": 262_208,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "max_position_embeddings": 131_072,
        "tie_word_embeddings": True,
        "sliding_window": 4096,
        "sliding_window_pattern": 6,
    },
    # The older decoder families' structural switches, as their configuration classes default them (transformers
    # v5.24.0: OPTConfig, GPTNeoXConfig.attention_bias, GPTBigCodeConfig.multi_query, FalconConfig, MptConfig).
    # Their context lengths too, where no position table depends on it (GPTNeoXConfig.max_position_embeddings,
    # GPTJConfig.n_positions, FalconConfig.max_position_embeddings, MptConfig.max_seq_len: 2048, which vLLM reads
    # from the config object); OPT's, GPT-2's and gpt_bigcode's size a learned table and are required instead.
    "opt": {"do_layer_norm_before": True, "enable_bias": True, "layer_norm_elementwise_affine": True},
    "gpt_neox": {"attention_bias": True, "max_position_embeddings": 2048},
    "gptj": {"n_positions": 2048},
    "gpt_bigcode": {"multi_query": True},
    "falcon": {
        "multi_query": True,
        "new_decoder_architecture": False,
        "parallel_attn": True,
        "bias": False,
        "max_position_embeddings": 2048,
    },
    "mpt": {"expansion_ratio": 4, "no_bias": True, "max_seq_len": 2048},
    # GlmConfig, Glm4Config, SeedOssConfig and Glm4vMoeTextConfig default attention_bias to true (transformers 5.20.2)
    **{model_type: {"attention_bias": True} for model_type in ("glm", "glm4", "seed_oss", "glm4v_moe_text")},
    # vLLM's RWConfig (v0.11.0 transformers_utils/configs/falcon.py): sequential blocks unless parallel_attn, one KV
    # head (n_head_kv 1) unless the config names more, no context length (vLLM then assumes 2048)
    **{
        model_type: {"multi_query": True, "parallel_attn": False, "bias": False, "new_decoder_architecture": False}
        for model_type in ("RefinedWeb", "RefinedWebModel")
    },
}
"""transformers' configuration-class defaults for fields a model type's real config.json leaves out."""


_UNSIZED: dict[str, tuple[str, ...]] = {
    # sgl-project's FP8 copies of DeepSeek V4 (deepseek_ref): the layout knowledge/deepseek_v4.py sizes for
    # deepseek_v4, but no expert_dtype to say how their experts are stored (vLLM defaults it to fp4).
    "deepseek_ref": ("compress_ratios", "o_lora_rank", "hc_mult"),
    # Falcon-H1: attention and Mamba-2 side by side in every layer, with muP multipliers (transformers FalconH1Config).
    "falcon_h1": ("mamba_d_ssm", "mamba_n_heads", "attention_in_multiplier"),
    # Zamba2: shared attention blocks with per-use LoRA adapters between Mamba-2 layers (transformers Zamba2Config).
    "zamba2": ("hybrid_layer_ids", "layers_block_type", "use_shared_attention_adapter"),
    # Nemotron 3 Super/Ultra: routed experts in a latent space narrower than hidden_size (knowledge/mamba.py sizes
    # the other Nemotron-H layouts).
    "nemotron_h": ("moe_latent_size",),
    # Llama-3.3-Nemotron-Super (DeciLM): each layer's attention (or none) and FFN width in block_configs.
    "nemotron-nas": ("block_configs",),
    # Kimi K3 (text_config kimi_linear): latent experts narrower than hidden_size, attention residual blocks.
    "kimi_linear": ("routed_expert_hidden_size", "attn_res_block_size"),
    # MiniMax M3: dense layers of their own width, sparse-attention layers.
    "minimax_m3": ("dense_intermediate_size", "sparse_attention_config"),
    "minimax_m3_vl": ("dense_intermediate_size", "sparse_attention_config"),
    # Whisper: an encoder-decoder (encoder_layers of audio self-attention, decoder_layers with cross-attention to
    # it; transformers WhisperConfig): servespec sizes decoder-only models and multimodal ones with a tower
    "whisper": ("encoder_layers", "decoder_layers"),
    # Hunyuan-A13B (hunyuan_v1_moe): per-layer top-k, expert widths and shared experts (lists, one per layer) that
    # Tencent's remote code and transformers' port read differently (transformers 5.20.2 HunYuanMoEV1Experts sizes
    # experts by intermediate_size): not sized until checked against the checkpoint's tensors
    "hunyuan_v1_moe": ("moe_topk", "moe_intermediate_size", "num_shared_expert"),
    # Step3 (step3_text): multi-matrix factorization attention (a shared low-rank query, share_q_dim), MoE layers
    # listed in moe_layers_enum, top-k as moe_top_k
    "step3_text": ("share_q_dim", "moe_layers_enum", "moe_top_k"),
    # Phi-4-multimodal (remote code, phi4mm): a conformer audio encoder, an image encoder and two LoRA adapters
    # (vision_lora, speech_lora) merged at load, none of which servespec counts
    "phi4mm": ("audio_processor", "embd_layer", "vision_lora", "speech_lora"),
}
"""Model types whose layout lives in config fields servespec does not read: sizing them from the shared
fields would be wrong, so a config of one that names any of them is refused, naming the ones it gives."""


def _index_share(config: dict[str, Any]) -> tuple[str, ...]:
    """GLM-5.2's IndexShare fields when they share indices: only the ``full`` layers of ``indexer_types`` (every
    ``index_topk_freq``-th after ``index_skip_topk_offset``) compute top-k indices and the ``shared`` ones reuse
    them, so the indexer is not in every layer as servespec sizes it for GLM-5/5.1 (the same model type, whose
    copies list every layer ``full``)."""
    kinds = config.get("indexer_types")
    shared = isinstance(kinds, list) and any(kind != "full" for kind in kinds)
    freq = config.get("index_topk_freq")
    if not shared and not (isinstance(freq, int) and freq > 1):
        return ()
    return tuple(key for key in ("indexer_types", "index_topk_freq", "index_skip_topk_offset") if key in config)


class UnsizedArchitectureError(ValueError):
    """A model type servespec does not size; the message names the fields it would need to read."""

    def __init__(self, model_type: str, keys: tuple[str, ...]) -> None:
        listed = ", ".join(keys)
        super().__init__(f"servespec cannot size model_type '{model_type}': {listed} unread")


_ARCHITECTURE_TYPES = {
    "ChatGLMModel": "chatglm",
    "ChatGLMForConditionalGeneration": "chatglm",
    "DbrxForCausalLM": "dbrx",
    "ExaoneForCausalLM": "exaone",
}
"""Families whose sizes go by names of their own, for a config.json that leaves ``model_type`` out: the model type
its first ``architectures`` entry names (vLLM resolves the model class from ``architectures``: the registry in
vllm/model_executor/models/registry.py maps these to chatglm.py, dbrx.py, exaone.py)."""


def _with_defaults(config: dict[str, Any]) -> dict[str, Any]:
    """The flattened config with its model type's transformers defaults under the fields it gives, and a family's
    own names for its sizes (GPT-2's ``n_layer``, MPT's ``d_model``) read as the fields servespec reads."""
    architectures = config.get("architectures")
    if config.get("model_type") is None and isinstance(architectures, list) and architectures:
        inferred = _ARCHITECTURE_TYPES.get(architectures[0]) if isinstance(architectures[0], str) else None
        if inferred is not None:
            config = {**config, "model_type": inferred}
    model_type = config.get("model_type")
    if not isinstance(model_type, str):
        return config
    config = _lift_nested(config, model_type)
    defaults = _TRANSFORMERS_DEFAULTS.get(model_type)
    # a field given as null stays null, as transformers reads it
    merged = {**defaults, **config} if defaults else config
    renames = {**_FAMILY_FIELDS.get(model_type, {}), **_FAMILY_KEYWORDS.get(model_type, {})}
    # each is a count: one that is not is named as the file spells it (ConfigFieldError), before it is read as another
    given = {
        field: fields.count(merged, own, minimum=1) for field, own in renames.items() if merged.get(own) is not None
    }
    return {**merged, **given} if given else merged


_NESTED: dict[str, dict[str, tuple[str, str]]] = {
    # DBRX keeps its attention and MoE sizes in sub-configs (transformers DbrxAttentionConfig, DbrxFFNConfig):
    # the field servespec reads -> (sub-config, the family's own field)
    "dbrx": {
        "num_key_value_heads": ("attn_config", "kv_n_heads"),
        "moe_intermediate_size": ("ffn_config", "ffn_hidden_size"),
        "num_local_experts": ("ffn_config", "moe_num_experts"),
        "num_experts_per_tok": ("ffn_config", "moe_top_k"),
    },
}


def _lift_nested(config: dict[str, Any], model_type: str) -> dict[str, Any]:
    """A family's sizes kept in sub-configs, read as the fields servespec reads (a top-level field wins)."""
    nested = _NESTED.get(model_type)
    if not nested:
        return config
    lifted = {}
    for field, (section, own) in nested.items():
        sub = fields.mapping(config, section)
        if sub is not None and sub.get(own) is not None and config.get(field) is None:
            lifted[field] = fields.count(sub, own, minimum=1)
    return {**config, **lifted} if lifted else config


_NESTED_TEXT_DEFAULTS: dict[str, dict[str, Any]] = {
    # A multimodal wrapper builds its text_config dict with the text model type's own configuration class, whose
    # defaults fill what the dict leaves out (transformers LlavaConfig.text_config: SubConfigSpec(AutoConfig,
    # model_type="llama")). llava-hf's Llava 1.5 configs name only the vocabulary and context of their Llama text
    # model; LlamaConfig's defaults (transformers 5.20.2 configuration_llama.py L64-L79) size the rest, and
    # num_key_value_heads follows num_attention_heads (__post_init__, L89-L90).
    "llama": {
        "vocab_size": 32_000,
        "hidden_size": 4096,
        "intermediate_size": 11_008,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "max_position_embeddings": 2048,
        "tie_word_embeddings": False,
    },
}
"""Defaults of a text model type when it is a wrapper's nested ``text_config`` (a top-level config of that type
still has to name its sizes)."""


def _flatten(config: dict[str, Any]) -> dict[str, Any]:
    # InternVL's remote-code checkpoints (InternVLChatConfig) name their language model llm_config, DeepSeek-VL2's
    # (DeepseekVLV2Config) language_config
    own = "language_config" if config.get("model_type") == "deepseek_vl_v2" else "llm_config"
    if fields.mapping(config, "text_config") is None and fields.mapping(config, own) is not None:
        config = {**config, "text_config": config[own]}
    text = fields.mapping(config, "text_config")
    if text is not None:
        text_type = text.get("model_type")
        defaults = _NESTED_TEXT_DEFAULTS.get(text_type, {}) if isinstance(text_type, str) else {}
        merged = {**defaults, **config, **text}
        merged.setdefault("model_type", text.get("model_type", config.get("model_type")))
        return merged
    return config


def _sliding_layers(config: dict[str, Any], layers: int, model_type: str) -> tuple[int | None, int]:
    window = fields.count(config, "sliding_window")
    layer_types = fields.items(config, "layer_types")
    chunk = fields.count(config, "attention_chunk_size")
    if chunk and not window:
        # Llama 4: layers with RoPE attend within chunks; every nope_layer_interval-th (4) is global
        # (transformers Llama4TextConfig: no_rope_layers, 1 = RoPE + chunked attention).
        flags = fields.items(config, "no_rope_layers")
        chunked = sum(1 for flag in flags if flag) if flags is not None and len(flags) == layers else None
        return chunk, layers - layers // 4 if chunked is None else chunked
    if layer_types is not None and window:
        return window, sum(1 for kind in layer_types if kind == "sliding_attention")
    if not window:
        return None, 0
    if model_type in _QWEN_WINDOW_FLAG and not fields.flag(config, "use_sliding_window"):
        return None, 0
    if model_type == "gemma2":
        return window, layers // 2  # modeling_gemma2: every other layer is local
    pattern = fields.count(config, "sliding_window_pattern", minimum=1)
    if model_type.startswith("gemma3") and pattern:
        return window, layers - layers // pattern
    if model_type == "cohere2":
        # Cohere2Config: layer i slides unless (i + 1) % sliding_window_pattern == 0 (default 4; transformers 5.20.2
        # configuration_cohere2.py L98-L100), as Command R7B and Command A configs without layer_types give it
        return window, layers - layers // (pattern or 4)
    return window, layers


def _rope(config: dict[str, Any]) -> dict[str, Any]:
    rope = fields.mapping(config, "rope_scaling")
    if rope is None:
        return {"rope_scaling": False}
    return {
        "rope_scaling": True,
        "rope_type": fields.first_text(rope, "rope_type", "type") or None,
        "rope_factor": fields.number(rope, "factor"),
        "original_max_position_embeddings": fields.count(rope, "original_max_position_embeddings") or None,
    }


def _moe(config: dict[str, Any], layers: int) -> dict[str, Any]:
    # ERNIE 4.5 MoE names them moe_num_experts, moe_k, moe_num_shared_experts (transformers Ernie4_5_MoeConfig)
    experts = fields.first_count(config, "num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")
    if not experts or experts <= 1:
        return {}
    moe_size = fields.first_count(config, "moe_intermediate_size", "intermediate_size") or 0
    shared = fields.count(config, "shared_expert_intermediate_size") or 0
    shared_experts = fields.first_count(config, "n_shared_experts", "num_shared_experts", "moe_num_shared_experts")
    if shared_experts:
        shared = shared_experts * moe_size
    dense = fields.count(config, "first_k_dense_replace") or 0
    dense += len(fields.items(config, "mlp_only_layers") or [])
    step = fields.count(config, "interleave_moe_layer_step", minimum=1)
    if step:
        # Llama 4: every step-th layer is MoE, the others dense of intermediate_size_mlp; each MoE layer
        # has one shared expert as wide as a routed one (transformers Llama4TextConfig.moe_layers,
        # Llama4TextMoe.shared_expert).
        dense = layers - layers // step
        shared = moe_size
    if config.get("moe_layer_start_index") is not None or config.get("moe_layer_interval") is not None:
        # ERNIE 4.5: layer i is MoE when (i + 1) % moe_layer_interval == 0 and moe_layer_start_index <= i <=
        # moe_layer_end_index (transformers 5.20.2 modeling_ernie4_5_moe.py L396-L400); the rest dense
        start = fields.count(config, "moe_layer_start_index") or 0
        end = fields.count(config, "moe_layer_end_index")
        every = fields.count(config, "moe_layer_interval", minimum=1) or 1
        last = layers - 1 if end is None else min(end, layers - 1)
        dense = layers - sum(1 for i in range(start, last + 1) if (i + 1) % every == 0)
    return {
        "experts": experts,
        "active_experts": fields.first_count(
            config,
            "num_experts_per_tok",
            "experts_per_token",
            "num_experts_per_token",
            "top_k_experts",
            "moe_k",
            minimum=1,
        )
        or 1,
        "moe_intermediate_size": moe_size,
        "shared_intermediate_size": shared,
        "dense_layers": min(dense, layers),
    }


def _vision_params(config: dict[str, Any], text_hidden: int) -> float:
    """A vision tower's parameters from ``vision_config`` (ViT blocks: attention, MLP, norms; patch
    embedding; a projector to the text width), as SigLIP, CLIP, Pixtral and Qwen-VL configs give them.

    An estimate within a few percent of the tower (which is itself a few percent of the model):
    enough for weight memory, never used for anything finer.
    """
    exact = towers.tower_params(config, text_hidden)
    if exact is not None:
        return exact
    vision = fields.mapping(config, "vision_config")
    if vision is None:
        return 0.0
    # MoonViT (Kimi-VL, Kimi K2.5) spells them vt_num_hidden_layers, vt_hidden_size, vt_intermediate_size
    # DeepSeek-VL2's SigLIP spells them layers, width and mlp_ratio (timm VisionTransformer arguments)
    depth = fields.first_count(vision, "num_hidden_layers", "depth", "vt_num_hidden_layers", "layers") or 0
    width = fields.first_count(vision, "hidden_size", "vt_hidden_size", "width") or 0
    ratio = fields.number(vision, "mlp_ratio")
    mlp = fields.first_count(vision, "intermediate_size", "vt_intermediate_size") or int(width * (ratio or 4.0))
    if not depth or not width:
        return 0.0
    patch = _patch_side(vision)
    channels = fields.count(vision, "num_channels") or fields.count(vision, "in_channels") or 3
    temporal = fields.count(vision, "temporal_patch_size") or 1
    per_layer = 4 * width * width + 4 * width + 2 * width * mlp + mlp + width + 4 * width
    embed = channels * patch * patch * temporal * width
    kernel = fields.items(vision, "merge_kernel_size") or []
    merge = (
        fields.count(vision, "spatial_merge_size")
        or fields.count(config, "spatial_merge_size")
        or (
            math.isqrt(math.prod(kernel))
            if len(kernel) == 2 and all(type(k) is int and 0 < k < 64 for k in kernel)
            else 1
        )
    )
    out = fields.count(vision, "out_hidden_size")
    if out is not None:
        # Qwen2.5-VL / Qwen3-VL / Qwen3.5 (transformers Qwen3VLVisionModel): the merger is a LayerNorm and a
        # two-layer MLP (merged width -> merged width -> out_hidden_size) with biases; Qwen3-VL adds one such merger
        # per deepstack_visual_indexes entry (its norm over the merged width) and learned position embeddings.
        merged = width * merge * merge
        merger = merged * merged + merged + merged * out + out
        deepstack = len(fields.items(vision, "deepstack_visual_indexes") or [])
        positions = (fields.count(vision, "num_position_embeddings") or 0) * width
        mergers = merger + 2 * width + deepstack * (merger + 2 * merged)
        return float(depth * per_layer + embed + width + positions + mergers)
    projector = width * merge * merge * text_hidden
    ratio = fields.number(config, "downsample_ratio")
    if ratio and 0 < ratio < 1:
        # InternVL (InternVLChatModel mlp1, transformers InternVLMultiModalProjector): pixel shuffle by
        # 1 / downsample_ratio each way, a LayerNorm over the shuffled width, then two Linears with biases
        shuffled = width * round(1 / ratio) ** 2
        projector = 2 * shuffled + shuffled * text_hidden + text_hidden + text_hidden * text_hidden + text_hidden
    if fields.text(vision, "model_type") == "pixtral":
        # Pixtral (Mistral 3): a gated MLP (w1, w2, w3) without biases, RMSNorms; Mistral 3's projector merges
        # merge x merge patches back to the tower width, then linear_1 and linear_2 to the text width
        # (transformers PixtralAttentionLayer, Mistral3PatchMerger, Mistral3MultiModalProjector).
        # LLaVA's projector over Pixtral (Pixtral-12B in HF format) has no merger and is biased unless
        # multimodal_projector_bias is false (LlavaConfig default true; Mistral3Config default false)
        per_layer = 4 * width * width + 3 * width * mlp + 2 * width
        mistral3 = fields.text(config, "model_type") == "mistral3"
        bias = fields.flag(config, "multimodal_projector_bias")
        biased = bias is True or (bias is None and not mistral3)
        merger = width * merge * merge * width + width if mistral3 else 0  # patch merger and the projector's norm
        projector = merger + width * text_hidden + text_hidden * text_hidden + width + 2 * text_hidden * biased
    return float(depth * per_layer + embed + projector)


def _patch_side(vision: dict[str, Any]) -> int:
    """The patch side: ``patch_size`` as a count or as a square ``[h, w]`` pair (InternVL's vision config); 14 when
    absent."""
    given = vision.get("patch_size")
    if isinstance(given, list) and len(given) == 2 and given[0] == given[1]:
        return fields.count({"patch_size": given[0]}, "patch_size", minimum=1) or 14
    return fields.count(vision, "patch_size") or 14


def _linear_attention(config: dict[str, Any], layers: int) -> dict[str, Any]:
    """Qwen3-Next's Gated DeltaNet layers: ``layer_types`` ``linear_attention``, else all but every
    ``full_attention_interval``-th layer (transformers Qwen3NextConfig); Kimi Linear's KDA layers."""
    kda = _kda(config, layers)
    if kda:
        return kda
    layer_types = fields.items(config, "layer_types")
    interval = fields.count(config, "full_attention_interval")
    if layer_types is not None:
        linear = sum(1 for kind in layer_types if kind == "linear_attention")
    elif interval and fields.count(config, "linear_num_value_heads"):
        linear = layers - layers // interval
    else:
        linear = 0
    if not linear:
        return {}
    k_heads = fields.count(config, "linear_num_key_heads") or 0
    v_heads = fields.count(config, "linear_num_value_heads") or 0
    k_dim = fields.count(config, "linear_key_head_dim") or 0
    v_dim = fields.count(config, "linear_value_head_dim") or 0
    conv = k_dim * k_heads * 2 + v_dim * v_heads
    kernel = fields.count(config, "linear_conv_kernel_dim") or 4
    return {
        "linear_layers": linear,
        "linear_state": (conv, kernel, v_heads, k_dim, v_dim),
        "linear_ssm_dtype": fields.text(config, "mamba_ssm_dtype"),
    }


def _architecture(config: dict[str, Any]) -> str | None:
    """The config's first ``architectures`` entry (the engine's model class), when it names one."""
    architectures = fields.items(config, "architectures") or []
    first = architectures[0] if architectures and isinstance(architectures[0], str) else None
    return first if first is not None and len(first) <= fields.MAX_TEXT else None


def _kda(config: dict[str, Any], layers: int) -> dict[str, Any]:
    """Kimi Linear: ``linear_attn_config`` lists the KDA layers (``kda_layers``, 1-based) beside the MLA ones
    (``full_attn_layers``) and gives the KDA heads (transformers KimiLinearConfig; vLLM
    ``MambaStateShapeCalculator.kda_state_shape``: a conv state over q, k and v, ``3 × heads × head_dim``
    channels, and a ``heads × head_dim × head_dim`` recurrent state)."""
    linear = fields.mapping(config, "linear_attn_config")
    kda_layers = fields.items(linear, "kda_layers") if linear is not None else None
    if linear is None or not kda_layers:
        return {}
    count = min(sum(1 for index in kda_layers if type(index) is int and 1 <= index <= layers), layers)
    heads = fields.count(linear, "num_heads") or 0
    dim = fields.count(linear, "head_dim") or 0
    kernel = fields.count(linear, "short_conv_kernel_size") or 4
    return {
        "linear_layers": count,
        "linear_state": (3 * heads * dim, kernel, heads, dim, dim),
        "linear_kind": "kda",
    }


# Bits per stored weight of group-quantized formats: ``bits`` plus a 16-bit scale and a
# ``bits``-wide zero point per group (AutoAWQ / GPTQ packing).
def _group_bits(bits: float, group: Any) -> float:
    size = int(group) if isinstance(group, int | float) and not isinstance(group, bool) and group > 0 else 128
    return bits + (16 + bits) / size


def _compressed_tensors(quant: dict[str, Any]) -> tuple[str | None, float | None]:
    """compressed-tensors (llm-compressor): the weights scheme of its first config group."""
    groups = fields.mapping(quant, "config_groups")
    first = next(iter(groups.values()), None) if groups else None
    weights = fields.mapping(first, "weights") if isinstance(first, dict) else None
    if weights is None:
        return "compressed-tensors", None
    bits = fields.number(weights, "num_bits", maximum=64) or 8.0
    kind = fields.text(weights, "type") or "int"
    if kind == "float" and bits >= 8:
        return "fp8", 8.0
    if kind == "float":
        return "nvfp4", 4.5  # nvfp4-pack-quantized: an FP8 scale per 16 weights
    if bits >= 8:
        return "int8", 8.0
    # pack-quantized (compressed-tensors PackedQuantizationCompressor): packed weights, a 16-bit
    # scale per group, and a packed zero point per group only when not symmetric; no group
    # (channel strategy): one scale per row, negligible.
    group = weights.get("group_size")
    size = int(group) if isinstance(group, int) and not isinstance(group, bool) and group > 0 else None
    if size is None:
        return "int4", bits
    zero = 0.0 if weights.get("symmetric", True) is True else bits
    return "int4", bits + (16 + zero) / size


# ModelOpt's algorithms (quant_algo) as bits per stored weight, scales included
# (vllm/model_executor/layers/quantization/modelopt.py, v0.33.0 LINEAR_ALGOS; the weights'
# create_weights shapes): FP8 per-tensor or per-channel scales (negligible), FP8_PB_WO a float32
# scale per 128x128 block, NVFP4 and W4A16_NVFP4 an FP8 (e4m3) scale per group of 16 FP4
# weights, MXFP8 an e8m0 scale per 32. W4A8_AWQ (TensorRT-LLM) is INT4 with a 16-bit scale per
# group (128 by default).
_MODELOPT_BITS = {
    "FP8": 8.0,
    "FP8_PER_CHANNEL_PER_TOKEN": 8.0,
    "FP8_PB_WO": 8 + 32 / (128 * 128),
    "FP8_BLOCK_SCALES": 8 + 32 / (128 * 128),
    "MXFP8": 8 + 8 / 32,
}
_PARTS = ("attention", "experts", "mlp", "lm_head")
"""The parts of a model a checkpoint can quantize differently (ModelFacts.quant_parts)."""


def _modelopt_algo(algo: str, group: Any) -> tuple[str | None, float | None]:
    """(method, bits per weight) of one ModelOpt ``quant_algo``."""
    algo = algo.upper()
    size = int(group) if isinstance(group, int) and not isinstance(group, bool) and group > 0 else None
    if "NVFP4" in algo or algo == "FP4":
        return "nvfp4", 4 + 8 / (size or 16)
    if algo in _MODELOPT_BITS:
        return "modelopt", _MODELOPT_BITS[algo]
    if "FP8" in algo:
        return "modelopt", 8.0
    if "AWQ" in algo or algo.startswith("W4A"):
        return "awq", 4 + 16 / (size or 128)
    if algo in ("INT8_SQ", "W8A8_SQ_PER_CHANNEL", "INT8"):
        return "int8", 8.0
    return "modelopt", None


def _part(module: str) -> str | None:
    """Which part of the model a module name (or pattern) names; None: a router, norm or vision module."""
    name = module.lower().removeprefix("re:").strip("^$")  # compressed-tensors' ``re:`` patterns too
    name = name.replace(".*", "*").replace("\\.", ".")
    if name.startswith("lm_head") or name.endswith("lm_head"):
        return "lm_head"
    if any(skip in name for skip in ("visual", "vision", "mtp", "embed", "norm", "router", "shared_expert_gate")):
        return None
    if re.search(r"mlp\.gate\*?$", name):  # the MoE router (Qwen3-MoE, DeepSeek: mlp.gate)
        return None
    if "expert" in name and "shared_expert" not in name:
        return "experts"
    if "attn" in name or "attention" in name:
        return "attention"
    if "mlp" in name or "feed_forward" in name or "shared_expert" in name:
        return "mlp"
    return None


def _projections(m: ModelFacts) -> dict[str, float]:
    """Each attention and MLP projection's share of its part's parameters in one layer (by name suffix)."""
    h, heads = m.hidden_size, m.attention_heads
    if m.is_mla:
        nope, rope, v = m.qk_nope_head_dim or 0, m.qk_rope_head_dim or 0, m.v_head_dim or 0
        q_lora, kv_lora = m.q_lora_rank or 0, m.kv_lora_rank or 0
        attention = {
            "q_a_proj": h * q_lora,
            "q_b_proj": q_lora * heads * (nope + rope),
            "q_proj": 0 if q_lora else h * heads * (nope + rope),
            "kv_a_proj_with_mqa": h * (kv_lora + rope),
            "kv_b_proj": kv_lora * heads * (nope + v),
            "o_proj": heads * v * h,
        }
    else:
        q, kv = h * heads * m.head_dim, h * m.kv_heads * m.head_dim
        attention = {"q_proj": q, "k_proj": kv, "v_proj": kv, "o_proj": q, "qkv_proj": q + 2 * kv}
    total = sum(size for name, size in attention.items() if name != "qkv_proj") or 1
    shares = {name: size / total for name, size in attention.items()}
    shares.update({"gate_proj": 1 / 3, "up_proj": 1 / 3, "down_proj": 1 / 3, "gate_up_proj": 2 / 3})
    return shares


def _layer_share(names: list[str], layers: int, projections: dict[str, float]) -> float:
    """The share of a part's parameters over ``layers`` layers that module names (or patterns) cover:
    a projection's own share where the name ends in one (``...self_attn.q_a_proj``), else the whole part."""
    if not layers:
        return 1.0
    covered: dict[int, float] = {}
    for name in names:
        number = re.search(r"layers\.(\d+)\.", name)
        suffix = name.rstrip("*").rsplit(".", 1)[-1]
        share = projections.get(suffix, 1.0)
        if number is None:
            return 1.0 if share == 1.0 else min(share, 1.0)  # a pattern: every layer
        index = int(number.group(1))
        covered[index] = min(covered.get(index, 0.0) + share, 1.0)
    return min(sum(covered.values()) / layers, 1.0)


_ENGINE_PREFIXES = {"nemotron_h": (("backbone", "model"), ("mtp", None))}
"""A checkpoint's module prefixes as the engine renames them before matching a quantization config's module names
(vLLM nemotron_h.py ``hf_to_vllm_mapper`` ``orig_to_new_prefix``, v0.33.0, applied to the names by
modelopt.py ``apply_vllm_mapper``): Nemotron-H's ``backbone.layers.<i>.mixer`` is ``model.layers.<i>.mixer``; its MTP
layers' names (``mtp.*``) are dropped."""


def _engine_names(module: str, model_type: str) -> list[str]:
    """One excluded-module name as vLLM matches it: ModelOpt's ``path*`` (a whole subtree) as ``path`` and ``path.*``
    (modelopt.py ``apply_vllm_mapper``, the workaround for vLLM issue 28072), then the model's prefix map."""
    names = (
        [module[:-1], module[:-1] + ".*"] if len(module) >= 2 and module[-1] == "*" and module[-2] != "." else [module]
    )
    out = []
    for name in names:
        for old, new in _ENGINE_PREFIXES.get(model_type, ()):
            if name == old or name.startswith(old + "."):
                name = "" if new is None else new + name[len(old) :]
                break
        if name:
            out.append(name)
    return out


def _names_module(pattern: str, prefix: str, children: bool) -> bool:
    """Whether an excluded-module name covers the module ``prefix`` as vLLM's ModelOpt config tests it
    (modelopt.py ``is_layer_excluded``, v0.33.0: the exact name, a substring of the prefix, or an fnmatch wildcard),
    or as compressed-tensors' ``ignore`` does with a ``re:`` regular expression (matched from the start). With
    ``children`` (a MIXED_PRECISION ``quantized_layers`` entry) a name inside the module names it too, as
    ``ModelOptMixedPrecisionConfig._resolve_quant_algo`` finds a fused MoE's per-expert entries by ``prefix.``."""
    if pattern.startswith("re:"):
        try:
            return re.match(pattern[3:], prefix) is not None
        except re.error:
            return False
    if children and pattern.startswith(prefix + "."):
        return True
    return pattern == prefix or pattern in prefix or fnmatch.fnmatchcase(prefix, pattern)


def _module_parts(
    entries: list[tuple[str, float | None]], m: ModelFacts
) -> tuple[list[tuple[str, float | None]], dict[tuple[str, float | None], float]]:
    """Entries matched against the model's own per-layer modules (:attr:`ModelFacts.layer_modules`): the parameters
    each (part, bits) covers, a module taking the first entry that names it; the LM head is handed back for
    :func:`_parts` (MIXED_PRECISION's whole-part entries are not needed: a module no entry names keeps the default,
    the dtype under MIXED_PRECISION). A name that names no module of the model (a vision
    tower's, an MTP layer's) covers nothing, as in vLLM."""
    rest: list[tuple[str, float | None]] = []
    covered: dict[tuple[str, float | None], float] = {}
    taken: set[tuple[int, str]] = set()
    for module, bits in entries:
        if module.strip("*") in _PARTS:
            continue  # MIXED_PRECISION's "part not named": here a module no entry names keeps the default
        if _part(module) == "lm_head":
            rest.append((module, bits))
            continue
        patterns = _engine_names(module, m.model_type)
        for index, layer in enumerate(m.layer_modules):
            for name, part, count, quantized in layer:
                prefix = f"model.layers.{index}.{name}"
                named = any(_names_module(p, prefix, bits is not None) for p in patterns)
                if not quantized or (index, name) in taken or not named:
                    continue
                taken.add((index, name))
                covered[(part, bits)] = covered.get((part, bits), 0.0) + count
    for part, count in _unquantized(m).items():
        covered[(part, None)] = covered.get((part, None), 0.0) + count
    return rest, covered


def _unquantized(m: ModelFacts) -> dict[str, float]:
    """Parameters per part that stay in the dtype whatever a list names: the layers' modules the engine builds
    without the quantization config, and what lies outside the layers beside the embeddings and the head (the final
    norm; a wrapper's towers, which vLLM's ModelOpt config leaves unquantized)."""
    fixed: dict[str, float] = {}
    mlp = 0.0
    for layer in m.layer_modules:
        for _, part, count, quantized in layer:
            mlp += count if part == "mlp" else 0.0
            if not quantized:
                fixed[part] = fixed.get(part, 0.0) + count
    outside = part_params(m)["mlp"] - mlp
    if outside > 0:
        fixed["mlp"] = fixed.get("mlp", 0.0) + outside
    return fixed


def _parts(entries: list[tuple[str, float | None]], m: ModelFacts) -> tuple[tuple[str, float, float | None], ...]:
    """(part, share of its parameters, bits or None for the model's dtype) from (module, bits) pairs."""
    shares: dict[tuple[str, float | None], float] = {}
    if m.layer_modules:
        entries, covered = _module_parts(entries, m)
        sizes = part_params(m)
        shares = {key: min(count / sizes[key[0]], 1.0) for key, count in covered.items() if sizes[key[0]] > 0}
    grouped: dict[tuple[str, float | None], list[str]] = {}
    for module, bits in entries:
        part = _part(module)
        if part is not None:
            grouped.setdefault((part, bits), []).append(module)
    projections = _projections(m)
    moe_layers = m.layers - m.dense_layers if m.is_moe else m.layers
    out = []
    for (part, bits), names in grouped.items():
        layers = moe_layers if part == "experts" else m.layers
        share = 1.0 if part == "lm_head" else _layer_share(names, layers, projections)
        shares[(part, bits)] = min(shares.get((part, bits), 0.0) + share, 1.0)
    for (part, bits), share in sorted(shares.items(), key=lambda item: (item[0][0], item[0][1] or 0.0)):
        out.append((part, share, bits))
    return tuple(out)


def _modelopt(quant: dict[str, Any]) -> dict[str, Any]:
    """NVIDIA ModelOpt, in either of the shapes vLLM reads (modelopt.py ``from_config``).

    ``hf_quant_config.json`` (ModelOpt 0.29 and before, stored by vLLM as the config's
    quantization_config): ``{"producer": {"name": "modelopt"}, "quantization": {"quant_algo",
    "kv_cache_quant_algo", "group_size", "exclude_modules"}}``; config.json's own
    ``quantization_config`` (ModelOpt 0.31+): ``{"quant_method": "modelopt", "quant_algo",
    "group_size", "ignore" or "exclude_modules"}``. ``MIXED_PRECISION`` names each layer's algorithm
    in ``quantized_layers``; layers it does not name stay unquantized (vLLM leaves them so).
    Excluded modules stay in the model's dtype.
    """
    inner = fields.mapping(quant, "quantization")
    body = inner if inner is not None else quant
    algo = (fields.text(body, "quant_algo") or "").upper()
    group = body.get("group_size")
    excluded = fields.items(body, "exclude_modules") if inner is not None else None
    if excluded is None:
        excluded = fields.items(body, "ignore") or fields.items(body, "exclude_modules") or []
    skipped: list[tuple[str, float | None]] = [(str(name), None) for name in excluded if isinstance(name, str)]
    if algo == "MIXED_PRECISION":
        layers_map = fields.mapping(body, "quantized_layers") or {}
        entries: list[tuple[str, float | None]] = []
        for module, recipe in layers_map.items():
            if isinstance(recipe, dict):
                _, bits = _modelopt_algo(str(recipe.get("quant_algo") or ""), recipe.get("group_size"))
                entries.append((str(module), bits))
        # Unnamed parts stay in the model's dtype: say so for every part the map does not name.
        named = {_part(module) for module, _ in entries}
        rest: list[tuple[str, float | None]] = [(f"*{part}*", None) for part in _PARTS if part not in named]
        # vLLM's method for it (modelopt.py ModelOptMixedPrecisionConfig.get_name, v0.33.0)
        return {"quant_method": "modelopt_mixed", "quant_bits": None, "_entries": entries + rest}
    method, bits = _modelopt_algo(algo, group)
    return {"quant_method": method, "quant_bits": bits, "_entries": skipped}


_QUARK_MX_BITS = {"fp4": 4.0, "fp6_e2m3": 6.0, "fp6_e3m2": 6.0}
"""AMD Quark's OCP MX weight dtypes (vLLM quark.py ``_is_ocp_mx``: per_group, group_size 32, e8m0 scales)."""


def _quark_bits(spec: Any) -> float | None:
    """Bits per stored weight of one Quark quantization spec's ``weight`` (None: not quantized or not read)."""
    weight = fields.mapping(spec, "weight") if isinstance(spec, dict) else None
    if weight is None:
        return None
    dtype = (fields.text(weight, "dtype") or "").lower()
    group = weight.get("group_size")
    if dtype in _QUARK_MX_BITS:
        size = int(group) if isinstance(group, int) and not isinstance(group, bool) and group > 0 else 32
        return _QUARK_MX_BITS[dtype] + 8 / size  # an 8-bit (e8m0) scale per group
    if dtype.startswith(("fp8", "int8", "uint8")):
        return 8.0  # per-tensor or per-channel scales: negligible
    if dtype in ("int4", "uint4"):
        return _group_bits(4.0, group) if weight.get("qscheme") == "per_group" else 4.0
    return None


def _quark(quant: dict[str, Any]) -> dict[str, Any]:
    """AMD Quark (``quant_method: quark``), as vLLM's QuarkConfig reads it (v0.11 quark.py ``_find_matched_config``):
    a module takes the first ``layer_quant_config`` pattern it matches, else ``global_quant_config``; modules named
    in ``exclude`` stay in the model's dtype. The global weight spec gives ``quant_bits``; the patterns and the
    excluded modules become per-part entries."""
    bits = _quark_bits(quant.get("global_quant_config"))
    entries: list[tuple[str, float | None]] = []
    layers = fields.mapping(quant, "layer_quant_config") or {}
    for pattern, spec in layers.items():
        entries.append((str(pattern), _quark_bits(spec)))
    entries += [(str(name), None) for name in fields.items(quant, "exclude") or [] if isinstance(name, str)]
    return {"quant_method": "quark", "quant_bits": bits, "_entries": entries}


def _is_modelopt(quant: dict[str, Any]) -> bool:
    """ModelOpt's own file read as the quantization_config (vllm/config/model.py ``_parse_quant_hf_config``:
    ``producer.name == "modelopt"``), or a config naming ``quant_method: modelopt*``."""
    method = (fields.text(quant, "quant_method") or "").lower()
    if method.startswith("modelopt"):
        return True
    producer = fields.mapping(quant, "producer")
    return not method and producer is not None and fields.text(producer, "name") == "modelopt"


def _quantization(config: dict[str, Any], hf_quant: dict[str, Any] | None = None) -> dict[str, Any]:
    """The checkpoint's quantization as (method, bits per quantized weight, parts quantized otherwise)."""
    quant = fields.mapping(config, "quantization_config")
    if quant is None:
        # compressed-tensors' older key (vllm/config/model.py _parse_quant_hf_config, v0.11.0)
        quant = fields.mapping(config, "compression_config")
    if quant is None and isinstance(hf_quant, dict):
        quant = hf_quant  # vLLM reads hf_quant_config.json as the quantization_config when config.json has none
    if quant is None:
        return {}
    if _is_modelopt(quant) or (fields.mapping(quant, "quantization") is not None and "quant_method" not in quant):
        return _modelopt(quant)
    method: str | None = (fields.text(quant, "quant_method") or "").lower() or None
    bits: float | None
    if method == "compressed-tensors":
        method, bits = _compressed_tensors(quant)
        # ``ignore``: modules left unquantized (names or ``re:`` patterns), in the model's dtype
        ignored = [(str(name), None) for name in fields.items(quant, "ignore") or [] if isinstance(name, str)]
        return {"quant_method": method, "quant_bits": bits, "_entries": ignored}
    elif method == "quark":
        return _quark(quant)
    elif method in ("fp8", "fbgemm_fp8"):
        method, bits = "fp8", 8.0
    elif method == "mxfp4":
        bits = 4.25  # OCP MX: an 8-bit scale per 32 FP4 weights
    elif method == "bitsandbytes":
        # NF4 with an 8-bit absmax per 64 weights (bnb_4bit_use_double_quant), or LLM.int8().
        bits = 4 + 8 / 64 if fields.flag(quant, "load_in_4bit") else 8.0
    else:
        number = fields.number(quant, "bits", maximum=64) or fields.number(quant, "w_bit", maximum=64)
        group = quant.get("group_size") or quant.get("q_group_size")
        bits = _group_bits(number, group) if number and method in ("awq", "gptq", "auto-round") else number
    return {"quant_method": method, "quant_bits": bits}


def _weight_block(config: dict[str, Any]) -> dict[str, Any]:
    """``quantization_config.weight_block_size`` of a block-quantized (FP8) checkpoint, when it is two counts."""
    quant = fields.mapping(config, "quantization_config")
    block = fields.items(quant, "weight_block_size") if quant is not None else None
    if block is None or len(block) != 2 or not all(type(n) is int and 0 < n <= 1 << 20 for n in block):
        return {}
    return {"weight_block_size": (block[0], block[1])}


def facts_from_config(config: dict[str, Any], name: str, hf_quant: dict[str, Any] | None = None) -> ModelFacts:
    """Build facts from a config.json dict, every field typed and bounded (:mod:`config_fields`).

    Raises KeyError (an essential field missing) or :class:`~servespec.knowledge.config_fields.ConfigFieldError`
    (a ValueError naming a field that breaks its type or bounds); never anything else, and no
    message quotes a value of the file. ``hf_quant`` is the repo's ``hf_quant_config.json``
    (ModelOpt), read when config.json has no ``quantization_config``.
    """
    raw, config = config, _with_defaults(_flatten(config))
    model_type = fields.text(config, "model_type") or "unknown"
    unread = tuple(key for key in _UNSIZED.get(model_type, ()) if config.get(key) is not None) + _index_share(config)
    raw_type = fields.text(raw, "model_type") or model_type
    if fields.mapping(raw, "audio_config") is not None and raw_type not in _AUDIO_COUNTED + gemma4.MODEL_TYPES:
        # an audio tower servespec does not count (Phi-4-multimodal, Voxtral, Gemma 3n, Qwen2.5-Omni...): refused
        # rather than sized without it
        unread += ("audio_config",)
    if unread:
        raise UnsizedArchitectureError(model_type, unread)
    missing = _missing(config)
    if missing:
        raise fields.MissingFieldsError(missing, fields.text(config, "model_type"))
    layers = _required(config, "num_hidden_layers")
    hidden = _required(config, "hidden_size")
    heads = _required(config, "num_attention_heads")
    kv_heads = fields.count(config, "num_key_value_heads") or heads
    head_dim = fields.count(config, "head_dim") or hidden // heads
    if not head_dim:
        raise fields.ConfigFieldError("hidden_size", "at least num_attention_heads")
    vision = _vision_params(raw, hidden)
    if not vision and fields.mapping(raw, "vision_config") and raw_type not in gemma4.MODEL_TYPES:
        # a tower whose size servespec finds no field of (Janus' vision_config.params, ...): refused, not left out
        raise UnsizedArchitectureError(raw_type, ("vision_config",))
    window, sliding = _sliding_layers(config, layers, model_type)
    chunked = bool(fields.count(config, "attention_chunk_size")) and not fields.count(config, "sliding_window")
    tied = fields.flag(config, "tie_word_embeddings")
    quantization = _quantization(config, hf_quant)
    entries: list[tuple[str, float | None]] = quantization.pop("_entries", [])
    facts = ModelFacts(
        name=name,
        model_type=model_type,
        layers=layers,
        hidden_size=hidden,
        attention_heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        # Llama 4's dense layers: intermediate_size_mlp (its intermediate_size is an expert's)
        intermediate_size=fields.first_count(config, "intermediate_size_mlp", "intermediate_size"),
        vocab_size=fields.count(config, "vocab_size"),
        # Kimi Linear names it model_max_length (transformers KimiLinearConfig.attribute_map)
        max_position_embeddings=fields.first_count(config, "max_position_embeddings", "model_max_length"),
        tie_word_embeddings=tied if tied is not None else model_type in _TIED_BY_DEFAULT,
        torch_dtype=fields.first_text(config, "torch_dtype", "dtype"),
        **_rope(config),
        sliding_window=window,
        sliding_layers=sliding,
        kv_lora_rank=fields.count(config, "kv_lora_rank"),
        q_lora_rank=fields.count(config, "q_lora_rank"),
        qk_rope_head_dim=fields.count(config, "qk_rope_head_dim"),
        qk_nope_head_dim=fields.count(config, "qk_nope_head_dim"),
        v_head_dim=fields.count(config, "v_head_dim"),
        gguf_kv_widths=_gguf_kv_widths(config),
        **_moe(config, layers),
        **quantization,
        **_weight_block(config),
        **_linear_attention(config, layers),
        architecture=_architecture(config),
        window_kind="chunked" if chunked else "sliding",
        attention_gate=_gated(config, model_type),
        index_n_heads=fields.count(config, "index_n_heads"),
        index_head_dim=fields.count(config, "index_head_dim"),
        index_topk=fields.count(config, "index_topk"),
        vision_params=vision + towers.audio_params(raw, hidden) + towers.phi3v_params(raw, hidden),
        qkv_bias=model_type in _QKV_BIAS_WHEN_SET and fields.flag(config, "attention_bias") is True,
        linear_bias=model_type == _STARCODER2 and fields.flag(config, "use_bias") is not False,
        cross_layers=len(fields.items(config, "cross_attention_layers") or []) if model_type == _MLLAMA_TEXT else 0,
        encoder_states=towers.mllama_encoder_states(raw),
        **_mtp(config),
        vision_profile=towers.vision_profile(raw),
        encoder_mlp=towers.mllama_encoder_mlp(raw),
    )
    layout = _modern_layout(config, model_type, hidden, heads) or _family_layout(config, model_type, hidden, heads)
    layout = layout or deepseek_v4.layout(config, model_type)
    if layout:
        facts = replace(facts, **layout)
    if model_type in mamba.MAMBA_TYPES:
        hybrid = mamba.layout(config, model_type)
        # knowledge/mamba.py counts the text model; a wrapper's towers (LFM2-VL's SigLIP2, counted above into
        # vision_params) are built beside it (Lfm2VlModel: vision_tower, multi_modal_projector, language_model)
        hybrid["params_override"] += facts.vision_params
        facts = replace(facts, **hybrid)
    if model_type in gemma4.MODEL_TYPES:
        gemma4_towers = gemma4.towers(raw, hidden)
        facts = replace(facts, **gemma4.layout(config, layers), vision_params=gemma4_towers)
    if entries or (facts.layer_modules and quantization.get("quant_method")):
        # a quantized checkpoint of per-layer modules: those the engine builds unquantized stay in the dtype
        return replace(facts, quant_parts=_parts(entries, facts))
    return facts


GGUF_KV_WIDTH_KEYS = ("gguf_n_embd_k_gqa", "gguf_n_embd_v_gqa")
"""The names knowledge/gguf_header.py (and a start-up log's print_info) give an MLA GGUF's K and V widths."""


def _gguf_kv_widths(config: dict[str, Any]) -> tuple[int, int] | None:
    """An MLA model's K and V widths as its GGUF file lays them out (:data:`GGUF_KV_WIDTH_KEYS`), else None."""
    k, v = (fields.count(config, key, minimum=1) for key in GGUF_KV_WIDTH_KEYS)
    return (k, v) if k and v and fields.count(config, "kv_lora_rank") else None


MTP_KEYS = ("num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_modules")
"""Config fields that count a checkpoint's multi-token-prediction layers (read by vLLM's
``SpeculativeConfig.hf_config_override`` per model family: vllm/config/speculative.py)."""


def _mtp(config: dict[str, Any]) -> dict[str, Any]:
    """``mtp_layers`` and the field it came from: the first :data:`MTP_KEYS` field the (flattened) config gives."""
    for key in MTP_KEYS:
        count = fields.count(config, key)
        if count:
            return {"mtp_layers": count, "mtp_key": key}
    return {}


_AUDIO_COUNTED: tuple[str, ...] = ("qwen2_audio",)
"""Model types whose ``audio_config`` tower servespec counts (knowledge/vision.py ``audio_params``; Gemma 4's in
knowledge/gemma4.py)."""

_ESSENTIAL = ("num_hidden_layers", "hidden_size", "num_attention_heads")
_MLA = ("qk_rope_head_dim",)
"""Multi-head latent attention's cached rope key beside the latent: a config naming ``kv_lora_rank`` cannot size
its KV cache without it (a GGUF header gives it as ``rope.dimension_count``)."""
_LINEAR = ("linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim")
"""Gated DeltaNet's state dimensions (transformers Qwen3NextConfig): needed once a layer is linear attention."""
_KDA = ("num_heads", "head_dim")
"""Kimi Delta Attention's heads (``linear_attn_config``): vLLM reads both with no default (kimi_gdn_linear_attn.py)."""
_INDEXER = ("index_n_heads", "index_head_dim")
_CROSS = ("cross_attention_layers",)
"""Llama 3.2 Vision's image layers (transformers MllamaTextConfig): which of the layers are cross-attention ones,
with parameters of their own; without it the count would take every layer for a self-attention one."""
"""DeepSeek Sparse Attention's indexer (DeepseekV32 ``index_topk``): its own per-token key cache."""


def _missing(config: dict[str, Any]) -> tuple[str, ...]:
    """Every field the facts cannot do without that the (flattened) config leaves absent or null.

    Named all at once, so that one message says what a config of an architecture servespec does
    not know lacks, each as its family spells it (GPT-2's ``n_layer``, OPT's ``ffn_dim``).
    """
    model_type = config.get("model_type")
    family = model_type if isinstance(model_type, str) else ""
    needed = list(_ESSENTIAL)
    if family in _POSITION_TABLES:
        needed.append("max_position_embeddings")
    if family in _MLP_WIDTH_NEEDED:
        needed.append("intermediate_size")
    if config.get("kv_lora_rank") is not None:
        needed += _MLA
    layer_types = config.get("layer_types")
    if isinstance(layer_types, list) and "linear_attention" in layer_types:
        needed += _LINEAR
    if config.get("index_topk") is not None:
        needed += _INDEXER
    own = _FAMILY_FIELDS.get(family, {})
    if config.get("model_type") == _MLLAMA_TEXT:
        needed += _CROSS
    absent = [own.get(key, key) for key in needed if config.get(key) is None]
    linear = config.get("linear_attn_config")
    if isinstance(linear, dict) and linear.get("kda_layers"):
        absent += [f"linear_attn_config.{key}" for key in _KDA if linear.get(key) is None]
    return tuple(absent)


def _on(config: dict[str, Any], key: str) -> bool:
    """A structural switch: true unless the config says false (its class default is merged in beforehand)."""
    return fields.flag(config, key) is not False


def _family_layout(config: dict[str, Any], model_type: str, hidden: int, heads: int) -> dict[str, Any]:
    """The block layout of the older decoder families: an fc-in/fc-out MLP, LayerNorms, biases, learned positions.

    Each as transformers v5.24.0 builds it (modeling_<type>.py) and vLLM's model of it loads it
    (vllm/model_executor/models/<name>.py, v0.11.0); the KV heads as vLLM counts them
    (vllm/config/model.py ``get_total_num_kv_heads``, v0.11.0: multi-query gpt_bigcode and Falcon cache one
    head, Falcon's new decoder architecture ``num_kv_heads``, MPT ``attn_config.kv_n_heads``). Rotary or ALiBi
    positions (GPT-NeoX ``rotary_pct``, GPT-J ``rotary_dim``, BLOOM, MPT) and parallel residuals
    (``use_parallel_residual``) hold no weights and change nothing here. Other model types: no change.
    """
    plain: dict[str, Any] = {"mlp_matrices": 2, "norm_weights": 2}
    if model_type in ("gpt2", "gpt_bigcode") and fields.flag(config, "add_cross_attention"):
        raise UnsizedArchitectureError(model_type, ("add_cross_attention",))  # vLLM asserts it off (gpt2.py)
    wide = fields.count(config, "intermediate_size") or 4 * hidden  # n_inner / ffn_hidden_size null: 4 x hidden
    if model_type == "opt":
        # OPTDecoderLayer: q, k, v, out_proj and fc1, fc2 biased by enable_bias; OPTLearnedPositionalEmbedding's
        # offset of 2 rows; project_in/project_out when word_embed_proj_dim differs (opt-350m); the final LayerNorm
        # only with do_layer_norm_before and not _remove_final_layer_norm.
        bias = _on(config, "enable_bias")
        return {
            **plain,
            "attention_biases": bias,
            "mlp_biases": bias,
            "norm_weights": 2 if _on(config, "layer_norm_elementwise_affine") else 0,
            "final_norm": _on(config, "do_layer_norm_before") and not fields.flag(config, "_remove_final_layer_norm"),
            "position_embeddings": (fields.count(config, "max_position_embeddings") or 0) + 2,
            "embed_dim": fields.count(config, "word_embed_proj_dim", minimum=1) or hidden,
        }
    if model_type in ("gpt2", "gpt_bigcode"):
        # GPT2Block / GPTBigCodeBlock: c_attn, c_proj, c_fc, c_proj all biased; ln_1, ln_2; wpe of n_positions rows.
        # gpt_bigcode's multi_query (default true) keeps one KV head: c_attn is hidden + 2 x head_dim wide.
        mqa = model_type == "gpt_bigcode" and _on(config, "multi_query")
        return {
            **plain,
            "intermediate_size": wide,
            "attention_biases": True,
            "mlp_biases": True,
            "position_embeddings": fields.count(config, "max_position_embeddings") or 0,
            **({"kv_heads": 1} if mqa else {}),
        }
    if model_type == "gptj":
        # GPTJBlock: unbiased q, k, v, out_proj; fc_in, fc_out biased; one ln_1 (parallel block); lm_head biased.
        return {**plain, "intermediate_size": wide, "mlp_biases": True, "norms_per_layer": 1, "lm_head_bias": True}
    if model_type == "gpt_neox":
        # GPTNeoXLayer: query_key_value and dense biased by attention_bias; dense_h_to_4h, dense_4h_to_h always.
        return {**plain, "attention_biases": _on(config, "attention_bias"), "mlp_biases": True}
    if model_type == "falcon" or model_type in _REFINED_WEB:
        # FalconDecoderLayer: every Linear biased by `bias`; a parallel block has num_ln_in_parallel_attn LayerNorms
        # (2 with new_decoder_architecture, else 1), a sequential one 2.
        # FalconConfig names its KV heads num_kv_heads; a count under num_key_value_heads is one a GGUF header (whose
        # model_type is its arch, "falcon") or a hand-written config states outright, as llama.cpp reads it
        new = fields.flag(config, "new_decoder_architecture") is True
        given = fields.count(config, "num_kv_heads", minimum=1)
        if model_type in _REFINED_WEB:
            # RWConfig: n_head_kv (default 1) is num_kv_heads; a hidden size of 8192 sets new_decoder_architecture
            # ("Hack for falcon-40b")
            new = new or hidden == 8192
            given = fields.count(config, "n_head_kv", minimum=1) or 1
        stated = fields.count(config, "num_key_value_heads", minimum=1)
        # vLLM FalconAttention (v0.11.0): num_kv_heads with the new decoder architecture, else one head if
        # multi_query, else every head (transformers' fused query_key_value is 3 x hidden wide then too)
        kv = stated or ((given or heads) if new else 1 if _on(config, "multi_query") else heads)
        norms = fields.count(config, "num_ln_in_parallel_attn") or (2 if new else 1)
        bias = fields.flag(config, "bias") is True
        return {
            **plain,
            "intermediate_size": wide,
            "kv_heads": kv,
            "attention_biases": bias,
            "mlp_biases": bias,
            "norms_per_layer": norms if _on(config, "parallel_attn") else 2,
        }
    if model_type == "bloom":
        # BloomBlock: every Linear biased, MLP 4 x hidden whatever the config says; word_embeddings_layernorm.
        return {**plain, "intermediate_size": 4 * hidden, "attention_biases": True, "mlp_biases": True,
                "embed_norm": True}  # fmt: skip
    if model_type == "mpt":
        # vLLM MPTBlock: Wqkv of kv_n_heads, up_proj expansion_ratio x d_model, every Linear and LayerNorm biased
        # unless no_bias (default true), q_ln and k_ln over d_model with qk_ln. transformers' MptBlock builds the
        # same for the defaults every released MPT uses (expansion_ratio 4, no kv_n_heads, no_bias).
        attention = fields.mapping(config, "attn_config") or {}
        bias = fields.flag(config, "no_bias") is False
        ratio = fields.count(config, "expansion_ratio", minimum=1) or 4
        return {
            **plain,
            "intermediate_size": ratio * hidden,
            "kv_heads": fields.count(attention, "kv_n_heads", minimum=1)
            or fields.count(config, "num_key_value_heads", minimum=1)  # a GGUF header's head_count_kv
            or heads,
            "attention_biases": bias,
            "mlp_biases": bias,
            "norm_weights": 2 if bias else 1,
            "norms_per_layer": 4 if fields.flag(attention, "qk_ln") else 2,
        }
    return {}


_FIXED_LAYOUTS: dict[str, dict[str, Any]] = {
    # Glm4DecoderLayer: input, post_self_attn, post_attention and post_mlp RMSNorms
    "glm4": {"norms_per_layer": 4},
    # Glm4vTextDecoderLayer (GLM-4.1V): the same four norms; q, k and v always biased (Glm4vTextAttention)
    "glm4v_text": {"norms_per_layer": 4, "qkv_bias": True},
    # Ernie4_5_MoeSparseMoeBlock: moe_statics.e_score_correction_bias, one per expert, in each MoE layer
    "ernie4_5_moe": {"router_bias": True},
    # GptOssTopKRouter: a bias beside the router weight, one per expert
    "gpt_oss": {"router_bias": True},
}
"""Layouts that no config field changes (transformers 5.20.2 modeling_<type>.py)."""


def _granite_shared(config: dict[str, Any], model_type: str) -> dict[str, Any]:
    """Granite 3 MoE with a shared expert (granitemoeshared) and Granite 4.0 (granitemoehybrid): a gated shared MLP
    ``shared_intermediate_size`` wide in every layer beside the routed experts, alone when ``num_local_experts`` is 0
    (transformers 5.20.2 GraniteMoeSharedDecoderLayer, GraniteMoeHybridDecoderLayer). Granite 4.0-H's Mamba-2
    layers (``layer_types`` ``mamba``) are laid out by knowledge/mamba.py."""
    shared = fields.count(config, "shared_intermediate_size") or 0
    experts = fields.count(config, "num_local_experts") or 0
    if experts > 1:
        return {"shared_intermediate_size": shared}
    return {"intermediate_size": shared} if shared else {}


def _qk_norms_by_flag(config: dict[str, Any], model_type: str, heads: int, kv: int, head: int) -> dict[str, Any] | None:
    """Families whose q_norm and k_norm exist only when the config sets use_qk_norm; None: not one of them."""
    on = fields.flag(config, "use_qk_norm") is True
    if model_type in ("cohere", "cohere2"):
        # CohereDecoderLayer: one input_layernorm (attention and MLP in parallel), a weight-only LayerNorm; with
        # use_qk_norm (Command R+) q_norm and k_norm are LayerNorms over (heads, head_dim) and (kv heads, head_dim)
        return {"norms_per_layer": 1, "qk_norm_params": (heads + kv) * head if on else 0}
    if model_type == "glm4_moe":
        # Glm4MoeAttention (GLM-4.5/4.6/4.7): q_norm and k_norm, RMSNorms over head_dim, when use_qk_norm (transformers
        # 5.20.2 modeling_glm4_moe.py; Glm4MoeConfig.use_qk_norm defaults to false)
        return {"qk_norm_params": 2 * head if on else 0}
    return None


def _modern_layout(config: dict[str, Any], model_type: str, hidden: int, heads: int) -> dict[str, Any] | None:
    """Gated-MLP decoder families whose norms, biases or MLP differ from Llama's; None: not one of them.

    Each as transformers 5.20.2 builds it (modeling_<type>.py), or for remote-code families as the checkpoint's own
    modelling code and vLLM's model of it (vllm/model_executor/models/<name>.py) build it.
    """
    kv = fields.count(config, "num_key_value_heads") or heads
    head = fields.count(config, "head_dim") or hidden // heads
    flagged = _qk_norms_by_flag(config, model_type, heads, kv, head)
    if flagged is not None:
        return flagged
    if model_type in _FIXED_LAYOUTS:
        return _FIXED_LAYOUTS[model_type]
    if model_type == "chatglm":
        # ChatGLM2/3, GLM-4-9B (modeling_chatglm.py GLMBlock; vllm chatglm.py GLMAttention): query_key_value biased
        # by add_qkv_bias, dense and the MLP by add_bias_linear; KV heads multi_query_group_num when
        # multi_query_attention; RMSNorm when rmsnorm, else LayerNorm with a bias; final_layernorm when
        # post_layer_norm; dense_h_to_4h is the gate and up projections fused (a SwiGLU of ffn_hidden_size)
        linear = fields.flag(config, "add_bias_linear") is True
        group = fields.count(config, "multi_query_group_num", minimum=1)
        return {
            "kv_heads": group if group and fields.flag(config, "multi_query_attention") else heads,
            "qkv_bias": fields.flag(config, "add_qkv_bias") is True and not linear,
            "attention_biases": linear,
            "mlp_biases": linear,
            "norm_weights": 1 if _on(config, "rmsnorm") else 2,
            "final_norm": _on(config, "post_layer_norm"),
        }
    if model_type == "stablelm":
        # StableLmDecoderLayer: LayerNorms with a bias, one when use_parallel_residual; q, k, v biased by
        # use_qkv_bias; qk_layernorm: a bias-free LayerNorm per head over head_dim for queries and keys
        qk = (heads + kv) * head if fields.flag(config, "qk_layernorm") else 0
        return {
            "norm_weights": 2,
            "norms_per_layer": 1 if fields.flag(config, "use_parallel_residual") else 2,
            "qkv_bias": fields.flag(config, "use_qkv_bias") is True,
            "qk_norm_params": qk,
        }
    if model_type == "phimoe":
        # PhimoeDecoderLayer: LayerNorms with a bias; q, k, v, o biased by attention_bias; lm_head by lm_head_bias
        return {
            "norm_weights": 2,
            "attention_biases": fields.flag(config, "attention_bias") is True,
            "lm_head_bias": fields.flag(config, "lm_head_bias") is True,
        }
    if model_type in ("granitemoehybrid", "granitemoeshared"):
        return _granite_shared(config, model_type)
    if model_type == "hunyuan_v1_dense":
        # HunYuanDenseV1Attention: query_layernorm and key_layernorm over head_dim in every layer
        return {"qk_norm_params": 2 * head}
    if model_type == "olmoe":
        # OlmoeAttention: q_norm over all query heads, k_norm over all key heads
        return {"qk_norm_params": (heads + kv) * head}
    if model_type in ("arcee", "apertus"):
        # ArceeMLP (ReLU^2) and ApertusMLP (xIELU): up_proj and down_proj, no gate; Apertus adds q_norm and k_norm
        # over head_dim and xIELU's alpha_p and alpha_n per layer
        apertus = model_type == "apertus"
        bias = fields.flag(config, "mlp_bias") is True
        return {
            "mlp_matrices": 2,
            "mlp_biases": bias,
            "qk_norm_params": 2 * head if apertus else 0,
            "layer_extra": 2 if apertus else 0,
        }
    return None


def _gated(config: dict[str, Any], model_type: str) -> bool:
    """Qwen3-Next and Qwen3.5 gate the attention output: q_proj is twice as wide (transformers
    Qwen3NextAttention, ``attn_output_gate`` in Qwen3.5's config, true when absent)."""
    if not model_type.startswith(("qwen3_next", "qwen3_5")):
        return False
    return fields.flag(config, "attn_output_gate") is not False


def _required(config: dict[str, Any], key: str) -> int:
    """An essential count: present, whole, at least 1."""
    value = fields.count(config, key, minimum=1, required=True)
    assert value is not None  # required: absent raised KeyError
    return value


def _attention_params(m: ModelFacts) -> float:
    h = m.hidden_size
    if m.is_mla:
        nope, rope, v = m.qk_nope_head_dim or 0, m.qk_rope_head_dim or 0, m.v_head_dim or 0
        q = h * m.attention_heads * (nope + rope)
        if m.q_lora_rank:
            q = h * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * m.attention_heads * (nope + rope)
        kv = h * ((m.kv_lora_rank or 0) + rope) + (m.kv_lora_rank or 0) * (1 + m.attention_heads * (nope + v))
        return q + kv + m.attention_heads * v * h
    q = m.attention_heads * m.head_dim
    kv = 2 * m.kv_heads * m.head_dim
    params = h * (q + kv) + q * h
    if m.attention_gate:
        params += h * q + 2 * m.head_dim  # the output gate's half of q_proj; q_norm and k_norm
    if m.qkv_bias or m.model_type in _QKV_BIAS:
        params += q + kv
    if m.model_type == "gpt_oss":
        params += q + kv + h + m.attention_heads  # biases and attention sinks
    if m.model_type == "phi" or m.linear_bias or m.attention_biases:
        params += q + kv + h  # q, k, v and dense biases (transformers PhiAttention, Starcoder2Attention)
    if m.model_type in ("qwen3", "qwen3_moe", "qwen3_vl_text", "qwen3_vl_moe_text", "exaone4", *_GEMMA3_TYPES):
        # q_norm and k_norm over head_dim (transformers Qwen3Attention, Exaone4Attention, Gemma3Attention)
        params += 2 * m.head_dim
    if m.model_type in ("minimax_m2", "olmo2", "olmo3"):
        # q_norm and k_norm over all heads (transformers MiniMaxM2Attention, Olmo2Attention, Olmo3Attention)
        params += q + kv // 2
    return params + m.qk_norm_params


def _linear_params(m: ModelFacts) -> float:
    """One Gated DeltaNet layer (transformers Qwen3NextGatedDeltaNet): in_proj_qkvz and in_proj_ba,
    the causal conv1d over q, k and v, dt_bias and A_log, the gated norm, out_proj."""
    conv, kernel, v_heads, _, v_dim = m.linear_state
    if m.linear_kind == "kda":
        return _kda_params(m)
    value = v_heads * v_dim
    key = (conv - value) // 2
    return float(
        m.hidden_size * (2 * key + 2 * value + 2 * v_heads)
        + conv * kernel
        + 2 * v_heads
        + v_dim
        + value * m.hidden_size
    )


def _kda_params(m: ModelFacts) -> float:
    """One Kimi Delta Attention layer (transformers KimiLinearDeltaAttention): q, k, v and o projections, the
    depthwise conv over q, k and v, the low-rank forget gate (f_a, f_b, dt_bias, A_log), b_proj, the low-rank
    output gate (g_a, g_b) and its gated norm."""
    conv, kernel, heads, dim, _ = m.linear_state
    h, width = m.hidden_size, heads * dim
    projections = 4 * h * width + conv * kernel
    gates = 2 * (h * dim + dim * width) + width + heads + h * heads + dim
    return float(projections + gates)


def _indexer_params(m: ModelFacts) -> float:
    """DeepSeek-V3.2's lightning indexer per layer (modeling of DeepSeek-V3.2-Exp ``Indexer``): wq_b from the
    q latent, wk and its LayerNorm, weights_proj."""
    heads, dim = m.index_n_heads or 0, m.index_head_dim or 0
    q_in = m.q_lora_rank or m.hidden_size
    return float(q_in * heads * dim + m.hidden_size * dim + 2 * dim + m.hidden_size * heads)


def _mlp_params(m: ModelFacts) -> tuple[float, float, float]:
    """(dense MLP per layer, MoE MLP per layer in total, MoE MLP per layer active)."""
    h = m.hidden_size
    dense = m.mlp_matrices * h * (m.intermediate_size or 0)
    if m.mlp_biases:
        dense += (m.intermediate_size or 0) * (m.mlp_matrices - 1) + h
    if m.model_type == "phi":  # fc1 and fc2 with biases, no gate (transformers PhiMLP)
        dense = 2 * h * (m.intermediate_size or 0) + (m.intermediate_size or 0) + h
    if m.model_type == _STARCODER2:  # c_fc and c_proj, no gate (transformers Starcoder2MLP)
        dense = 2 * h * (m.intermediate_size or 0)
        if m.linear_bias:
            dense += (m.intermediate_size or 0) + h
    if not m.is_moe:
        return dense, dense, dense
    expert = 3 * h * (m.moe_intermediate_size or 0)
    if m.model_type == "gpt_oss":
        expert += 2 * (m.moe_intermediate_size or 0) + h  # gate_up and down biases
    router = (h + m.router_bias) * (m.experts or 0)
    shared = 3 * h * m.shared_intermediate_size
    if shared and m.model_type.startswith(_SHARED_EXPERT_GATE):
        shared += h  # shared_expert_gate
    total = (m.experts or 0) * expert + router + shared
    active = (m.active_experts or 1) * expert + router + shared
    return dense, total, active


def count_parameters(m: ModelFacts) -> tuple[float, float]:
    """(total, active) parameters of the decoder, embeddings and head; MTP layers excluded."""
    if m.model_type in gemma4.MODEL_TYPES:
        return gemma4.count(m)
    h = m.hidden_size
    # Gemma's four RMSNorms per layer; StarCoder2's two LayerNorms with weight and bias
    norm = m.norm_weights * h
    norms = 4 * h if m.model_type in _GEMMA_NORMS or m.model_type == _STARCODER2 else m.norms_per_layer * norm
    dense, moe_total, moe_active = _mlp_params(m)
    moe_layers = m.layers - m.dense_layers if m.is_moe else 0
    dense_layers = m.layers - moe_layers
    full = m.layers - m.linear_layers
    attention = full * _attention_params(m) + m.linear_layers * _linear_params(m) + m.layers * (norms + m.layer_extra)
    if m.is_sparse:
        attention += m.layers * _indexer_params(m)
    attention += m.cross_layers * (2 * m.head_dim + 2)  # q_norm, k_norm, cross_attn_attn_gate, cross_attn_mlp_gate
    width = m.embed_dim or h
    embed = (m.vocab_size or 0) * width
    head = 0 if m.tie_word_embeddings else embed + (m.vocab_size or 0) * m.lm_head_bias
    if m.model_type == _MLLAMA_TEXT:
        embed += 8 * h  # MllamaTextModel.embed_tokens: vocab_size + 8 rows
    # the final norm; OPT's project_in and project_out; learned positions; BLOOM's embedding LayerNorm
    edges = (norm if m.final_norm else 0) + (2 * h * width if width != h else 0)
    edges += m.position_embeddings * h + (norm if m.embed_norm else 0)
    common = attention + dense_layers * dense + embed + head + edges + m.vision_params
    if m.model_type == "phi":
        common += h + (m.vocab_size or 0)  # the final LayerNorm's bias, lm_head's bias
    if m.model_type == _STARCODER2:
        common += h  # the final LayerNorm's bias
    return common + moe_layers * moe_total, common + moe_layers * moe_active


def part_params(m: ModelFacts) -> dict[str, float]:
    """Parameters of the decoder's attention, routed experts and other MLPs (dense, shared experts, routers).

    What ``ModelFacts.quant_parts`` refers to; norms count with the MLPs, embeddings and head in none.
    """
    total = m.params
    embed = (m.vocab_size or 0) * (m.embed_dim or m.hidden_size) * (1 if m.tie_word_embeddings else 2)
    if m.layer_modules:
        # blocks that differ from layer to layer (Nemotron-H): each layer's own modules
        sizes = {"attention": 0.0, "experts": 0.0}
        for layer in m.layer_modules:
            for _, part, count, _ in layer:
                if part in sizes:
                    sizes[part] += count
        return {**sizes, "mlp": max(total - embed - sizes["attention"] - sizes["experts"], 0.0)}
    attention = (m.layers - m.linear_layers) * _attention_params(m) + m.linear_layers * _linear_params(m)
    if m.model_type in gemma4.MODEL_TYPES:
        attention = gemma4.attention(m)
    moe_layers = m.layers - m.dense_layers if m.is_moe else 0
    experts = moe_layers * (m.experts or 0) * 3 * m.hidden_size * (m.moe_intermediate_size or 0)
    if m.compress_ratios:
        # DeepSeek V4 (knowledge/deepseek_v4.py): shared experts and routers as the MLPs, the rest of each layer
        # (attention, compressors, indexers, mHC, norms) as attention
        mlp = m.layers * (3 * m.hidden_size * m.shared_intermediate_size + (m.experts or 0) * m.hidden_size)
        return {"attention": total - embed - experts - mlp, "experts": experts, "mlp": float(mlp)}
    return {"attention": attention, "experts": experts, "mlp": max(total - embed - attention - experts, 0.0)}


@functools.cache
def _catalog() -> dict[str, dict[str, Any]]:
    data: dict[str, dict[str, Any]] = load_yaml_data("models.yaml")["models"]
    return {key.lower(): {"name": key, **value} for key, value in data.items()}


@functools.cache
def _renames() -> dict[str, str]:
    data: dict[str, dict[str, Any]] = load_yaml_data("hub_renames.yaml")["renames"]
    return {key.lower(): str(value["to"]) for key, value in data.items()}


def renamed(source: str) -> str | None:
    """The id a renamed Hugging Face repo has now (the Hub redirects the old one: data/hub_renames.yaml), else None."""
    return _renames().get(source.strip().lower())


def catalogued(source: str) -> ModelFacts | None:
    """Facts for a Hugging Face repo id in the built-in catalog (case-insensitive; a renamed repo's old id as its
    new one, :func:`renamed`)."""
    entry = _catalog().get(source.strip().lower())
    if entry is None:
        entry = _catalog().get((renamed(source) or "").lower())
    if entry is None:
        return None
    return facts_from_config(entry["config"], entry["name"], entry.get("hf_quant_config"))


def catalog_ids() -> list[str]:
    """Every repo id the catalog knows."""
    return [entry["name"] for entry in _catalog().values()]


MAX_CONFIG_NUMBER = MAX_FLOAT
"""Largest magnitude a config.json number may have (vocabularies and rope thetas stay far below)."""


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"config.json holds {name}, which is not a number a config can mean")


def parse_config(raw: bytes) -> dict[str, Any]:
    """A config.json's object; raises ValueError (never quoting the file) when it is not a sane one."""
    try:
        config = json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant)
        if oversized_number(config, max_int=MAX_CONFIG_NUMBER, max_float=MAX_CONFIG_NUMBER) is not None:
            raise ValueError("config.json holds a number too large to be a model setting")
    except RecursionError:
        raise ValueError("config.json is nested too deeply") from None
    except UnicodeDecodeError:
        raise ValueError("config.json is not UTF-8") from None
    if not isinstance(config, dict):
        raise ValueError("config.json is not an object")
    return config


def read_config(path: Path) -> ModelFacts:
    """Facts from a config.json on disk; raises OSError, ValueError or KeyError when unusable.

    The read is bounded and refuses anything but a regular file (``/dev/zero``, FIFOs):
    the path comes from a spec, which anyone opening a pull request writes.
    """
    from servespec.spec.paths import MAX_REFERENCED_BYTES, read_bounded

    raw = read_bounded(path, MAX_REFERENCED_BYTES, follow=False)  # the path was resolved inside the root
    if len(raw) > MAX_REFERENCED_BYTES:
        raise ValueError(f"config.json is larger than {MAX_REFERENCED_BYTES // (1024 * 1024)} MiB")
    return facts_from_config(parse_config(raw), str(path))


def _inline_layer_types(inline: Architecture) -> dict[str, Any]:
    """Sliding, chunked and linear layer counts of an inline ``layer_types`` list."""
    kinds = inline.layer_types
    if kinds is None:
        return {}
    chunked = kinds.count("chunked_attention")
    return {
        "sliding_layers": kinds.count("sliding_attention") + chunked,
        "window_kind": "chunked" if chunked else "sliding",
        "linear_layers": kinds.count("linear_attention"),
        "layers": inline.layers or len(kinds),
    }


def apply_inline(facts: ModelFacts | None, inline: Architecture | None, name: str) -> ModelFacts | None:
    """Overlay facts written in the spec (``model.architecture``) on catalogued ones."""
    if inline is None:
        return facts
    fields = {
        "layers": inline.layers,
        "hidden_size": inline.hidden_size,
        "intermediate_size": inline.intermediate_size,
        "attention_heads": inline.attention_heads,
        "kv_heads": inline.kv_heads,
        "head_dim": inline.head_dim,
        "vocab_size": inline.vocab_size,
        "max_position_embeddings": inline.max_position_embeddings,
        "experts": inline.experts,
        "active_experts": inline.active_experts,
        "kv_lora_rank": inline.kv_lora_rank,
        "qk_rope_head_dim": inline.qk_rope_head_dim,
        "sliding_window": inline.sliding_window,
        **_inline_layer_types(inline),
    }
    given: dict[str, Any] = {key: value for key, value in fields.items() if value is not None}
    if facts is not None:
        facts = replace(facts, **given)
    else:
        needed = ("layers", "hidden_size", "attention_heads")
        if not all(key in given for key in needed):
            return None
        given.setdefault("kv_heads", given["attention_heads"])
        given.setdefault("head_dim", given["hidden_size"] // given["attention_heads"])
        facts = ModelFacts(name=name, model_type="inline", **given)
    if inline.params_b is not None:
        facts = replace(facts, params_override=inline.params_b * 1e9)
    return facts
