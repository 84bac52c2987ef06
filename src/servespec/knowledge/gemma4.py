"""Gemma 4 (``model_type`` gemma4 / gemma4_text): its layer layout from a config.json and its parameter count.

Read from transformers 5.25.0 (``models/gemma4/configuration_gemma4.py`` and ``modeling_gemma4.py``, the PyPI
wheel), which every engine's loader follows:

- ``Gemma4TextConfig.__post_init__``: ``layer_types`` default to five sliding layers and one full one
  (``sliding_window_pattern = 6``) and the last layer is forced to ``full_attention``; the full layers take
  ``global_head_dim`` (default 512) as their head size and, only when ``attention_k_eq_v``,
  ``num_global_key_value_heads`` as their KV heads (``per_layer_config``).
- ``Gemma4TextConfig.kv_sharing_modes``: the last ``num_kv_shared_layers`` layers reuse the cache of the last
  earlier layer of their own type and keep none of their own (the E2B/E4B models, as Gemma 3n).
- ``Gemma4TextAttention``: a shared layer has no ``k_proj``/``v_proj``/``k_norm``; a full layer of a
  ``attention_k_eq_v`` model has no ``v_proj`` (its keys serve as values); ``q_norm`` and ``k_norm`` are
  RMSNorms over the head, ``v_norm`` has no weight.
- ``Gemma4TextDecoderLayer``: four RMSNorms; the per-layer-input gate, projection and norm when
  ``hidden_size_per_layer_input``; with ``enable_moe_block`` the dense MLP stays beside a router (projection,
  scale, per-expert scale) and ``num_experts`` experts of ``moe_intermediate_size`` (fused gate/up and down), with
  three more norms. ``Gemma4TextMLP`` is twice as wide on shared layers when ``use_double_wide_mlp``.
- ``Gemma4TextModel``: the per-layer embeddings (``vocab_size_per_layer_input`` × layers ×
  ``hidden_size_per_layer_input``), their model projection and norm.
- ``Gemma4VisionModel`` / ``Gemma4AudioModel`` / ``Gemma4MultimodalEmbedder``: the towers and their projections
  into the text width (clipped linears' bounds and ``layer_scalar`` are buffers, not parameters).

This module reads plain values only (``config_fields``); the facts it serves are built in ``models.py``.
"""

from __future__ import annotations

from typing import Any, Protocol

from servespec.knowledge import config_fields as fields

MODEL_TYPES = ("gemma4_text", "gemma4")
"""A config.json's text model type, and the GGUF architecture whose header keys gguf_header turns into its fields."""
SOURCE = "transformers 5.25.0 models/gemma4 (configuration_gemma4.py, modeling_gemma4.py)"
_PATTERN = 6
"""Gemma4TextConfig's default: five sliding-window layers, then one full layer."""
_GLOBAL_HEAD_DIM = 512
"""Gemma4TextConfig's ``global_head_dim`` when a config leaves it out."""
_WINDOW = 512
"""Gemma4TextConfig's ``sliding_window`` when a config leaves it out."""


class Layout(Protocol):
    """The model facts the count reads (``models.ModelFacts`` has them all)."""

    @property
    def layers(self) -> int: ...
    @property
    def hidden_size(self) -> int: ...
    @property
    def attention_heads(self) -> int: ...
    @property
    def kv_heads(self) -> int: ...
    @property
    def head_dim(self) -> int: ...
    @property
    def intermediate_size(self) -> int | None: ...
    @property
    def vocab_size(self) -> int | None: ...
    @property
    def tie_word_embeddings(self) -> bool: ...
    @property
    def sliding_layers(self) -> int: ...
    @property
    def full_kv_heads(self) -> int | None: ...
    @property
    def full_head_dim(self) -> int | None: ...
    @property
    def kv_shared_layers(self) -> int: ...
    @property
    def kv_shared_sliding(self) -> int: ...
    @property
    def value_from_key(self) -> bool: ...
    @property
    def per_layer_input(self) -> int: ...
    @property
    def per_layer_vocab(self) -> int: ...
    @property
    def double_wide_shared_mlp(self) -> bool: ...
    @property
    def experts(self) -> int | None: ...
    @property
    def active_experts(self) -> int | None: ...
    @property
    def moe_intermediate_size(self) -> int | None: ...
    @property
    def vision_params(self) -> float: ...


def layer_types(config: dict[str, Any], layers: int) -> list[str]:
    """Each layer's kind as transformers fills them in: the config's list, else 5 sliding : 1 full; the last full."""
    given = fields.items(config, "layer_types")
    kinds = [str(kind) for kind in given] if given is not None and len(given) == layers else None
    if kinds is None:
        kinds = ["sliding_attention" if (i + 1) % _PATTERN else "full_attention" for i in range(layers)]
    if kinds:
        kinds[-1] = "full_attention"
    return kinds


def layout(config: dict[str, Any], layers: int) -> dict[str, Any]:
    """``ModelFacts`` fields of a (flattened) gemma4_text config: the layer kinds, the full layers' own KV shape,
    the shared-KV layers, per-layer inputs, the MoE block and the towers."""
    kinds = layer_types(config, layers)
    kv_equal = fields.flag(config, "attention_k_eq_v") is True
    kv_heads = fields.count(config, "num_key_value_heads") or fields.count(config, "num_attention_heads") or 1
    global_heads = fields.count(config, "num_global_key_value_heads", minimum=1)
    shared = min(fields.count(config, "num_kv_shared_layers") or 0, layers)
    tail = kinds[layers - shared :] if shared else []
    window = fields.count(config, "sliding_window") or _WINDOW
    found: dict[str, Any] = {
        "sliding_window": window,
        "sliding_layers": kinds.count("sliding_attention"),
        "full_kv_heads": global_heads if kv_equal and global_heads else kv_heads,
        "full_head_dim": fields.count(config, "global_head_dim", minimum=1) or _GLOBAL_HEAD_DIM,
        "kv_shared_layers": shared,
        "kv_shared_sliding": tail.count("sliding_attention"),
        "value_from_key": kv_equal,
        "per_layer_input": fields.count(config, "hidden_size_per_layer_input") or 0,
        "per_layer_vocab": fields.count(config, "vocab_size_per_layer_input") or 0,
        "double_wide_shared_mlp": fields.flag(config, "use_double_wide_mlp") is True,
    }
    if fields.flag(config, "enable_moe_block") is not True:
        found.update(experts=None, active_experts=None, moe_intermediate_size=None)
    else:
        # The dense MLP runs beside the experts in every layer: counted as an always-on shared expert.
        found["shared_intermediate_size"] = fields.count(config, "intermediate_size") or 0
    return found


def towers(config: dict[str, Any], text_hidden: int) -> float:
    """Parameters of the vision and audio towers and their embedders into the text width (the raw config)."""
    total = 0
    vision = fields.mapping(config, "vision_config")
    if vision is not None:
        width = fields.count(vision, "hidden_size") or 0
        heads = fields.count(vision, "num_attention_heads") or 0
        kv_heads = fields.count(vision, "num_key_value_heads") or heads
        head = fields.count(vision, "head_dim") or (width // heads if heads else 0)
        mlp = fields.count(vision, "intermediate_size") or 0
        depth = fields.count(vision, "num_hidden_layers") or 0
        patch = fields.count(vision, "patch_size") or 16
        positions = fields.count(vision, "position_embedding_size") or 10 * 1024
        attention = 2 * width * heads * head + 2 * width * kv_heads * head + 2 * head  # q, o; k, v; q/k norms
        per_layer = attention + 3 * width * mlp + 4 * width
        embedder = 3 * patch * patch * width + 2 * positions * width  # input_proj, the 2-D position table
        total += depth * per_layer + embedder + width * text_hidden  # embed_vision (its norm has no weight)
    audio = fields.mapping(config, "audio_config")
    if audio is not None:
        total += _audio(audio, text_hidden)
    return float(total)


def _audio(audio: dict[str, Any], text_hidden: int) -> int:
    """Gemma4AudioModel (a Conformer) and ``embed_audio``, with Gemma4AudioConfig's defaults."""
    width = fields.count(audio, "hidden_size") or 1024
    heads = fields.count(audio, "num_attention_heads") or 8
    depth = fields.count(audio, "num_hidden_layers") or 12
    kernel = fields.count(audio, "conv_kernel_size") or 5
    out = fields.count(audio, "output_proj_dims") or 1536
    channels = [c for c in fields.items(audio, "subsampling_conv_channels") or [] if type(c) is int and c > 0]
    first, second = channels[:2] if len(channels) >= 2 else (128, 32)
    # two 3x3 convolutions without bias, each with a bias-free LayerNorm, then input_proj_linear
    subsample = 9 * first + first + 9 * first * second + second + (first // 4) * second * width
    feed_forward = 2 * (8 * width * width + 2 * width)  # two macaron halves: 4x up, down, pre/post norms
    attention = 5 * width * width + width // heads  # q, k, v, post, relative_k_proj; per_dim_scale
    conv = 3 * width * width + width * kernel + 2 * width  # linear_start (GLU), linear_end, depthwise, 2 norms
    per_layer = feed_forward + attention + conv + 3 * width
    return subsample + depth * per_layer + width * out + out + out * text_hidden  # output_proj (biased), embed_audio


def attention(m: Layout) -> int:
    """Parameters of every layer's attention: q and o of each kind's head size, k (and v) where the layer keeps
    its own cache, q_norm and k_norm."""
    h, full = m.hidden_size, m.layers - m.sliding_layers
    shared_full = m.kv_shared_layers - m.kv_shared_sliding
    full_dim = m.full_head_dim or m.head_dim
    full_kv = m.full_kv_heads or m.kv_heads
    q_o = 2 * h * m.attention_heads * (m.sliding_layers * m.head_dim + full * full_dim)
    q_norm = m.sliding_layers * m.head_dim + full * full_dim
    sliding_kv = (m.sliding_layers - m.kv_shared_sliding) * (2 * h * m.kv_heads * m.head_dim + m.head_dim)
    full_kv_projections = 1 if m.value_from_key else 2
    full_kv_params = (full - shared_full) * (full_kv_projections * h * full_kv * full_dim + full_dim)
    return q_o + q_norm + sliding_kv + full_kv_params


def count(m: Layout) -> tuple[float, float]:
    """(total, active) parameters of a Gemma 4 checkpoint as transformers builds it, towers included."""
    h, layers = m.hidden_size, m.layers
    width = m.intermediate_size or 0
    wide = m.kv_shared_layers if m.double_wide_shared_mlp else 0
    mlp = 3 * h * width * (layers + wide)
    per_layer_input = layers * (2 * h * m.per_layer_input + h) if m.per_layer_input else 0
    if m.per_layer_input:
        stacked = layers * m.per_layer_input
        per_layer_input += m.per_layer_vocab * stacked + h * stacked + m.per_layer_input
    embed = (m.vocab_size or 0) * h * (1 if m.tie_word_embeddings else 2)
    common = attention(m) + mlp + layers * 4 * h + per_layer_input + embed + h + m.vision_params
    experts = m.experts or 0
    if experts <= 1:
        return float(common), float(common)
    router = h * experts + h + experts + 3 * h  # proj, scale, per_expert_scale; the three extra norms
    expert = 3 * h * (m.moe_intermediate_size or 0)
    total = common + layers * (router + experts * expert)
    active = common + layers * (router + (m.active_experts or 1) * expert)
    return float(total), float(active)
