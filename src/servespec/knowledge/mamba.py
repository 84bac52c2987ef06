"""Mamba / Mamba-2 / short-conv hybrid models: their layer layout, state shapes and parameters from their own config.

Each family as its transformers configuration class spells it and vLLM's model of it reads it
(vllm/model_executor/models/<type>.py ``get_mamba_state_shape_from_config``, v0.33.0):

- ``nemotron_h`` (Nemotron-H, Nemotron Nano 2, Nemotron 3): one block per character of
  ``hybrid_override_pattern`` (``M`` Mamba-2, ``*`` attention, ``-`` MLP, ``E`` MoE; transformers'
  ``layers_block_type`` lists the same as words), each a norm and its mixer. Mamba-2 width
  ``mamba_num_heads × mamba_head_dim``, ``n_groups``, ``ssm_state_size``, ``conv_kernel``.
- ``granitemoehybrid`` (Granite 4.0-H) and ``bamba``: ``layer_types`` (``mamba``/``attention``) or
  ``attn_layer_indices``; Mamba-2 width ``mamba_expand × hidden_size``, ``mamba_n_heads``,
  ``mamba_d_head``, ``mamba_n_groups``, ``mamba_d_state``, ``mamba_d_conv``; each layer also an MLP
  (Granite: a shared MLP of ``shared_intermediate_size`` beside ``num_local_experts`` experts).
- ``jamba``: Mamba-1 except every ``attn_layer_period``-th layer from ``attn_layer_offset``; MoE every
  ``expert_layer_period``-th from ``expert_layer_offset``; width ``mamba_expand × hidden_size``,
  ``mamba_d_state``, ``mamba_d_conv``, ``mamba_dt_rank``.
- ``lfm2``: ``layer_types`` (``conv``/``full_attention``); a short conv of ``conv_L_cache`` over
  ``hidden_size`` channels (vLLM reads ``conv_dim``, which transformers' Lfm2Config sets to ``hidden_size``).

The state is stored in ``ModelFacts.linear_state`` as the Gated DeltaNet arithmetic reads it
(``conv channels × (kernel − 1)`` + ``heads × k × v``): Mamba-2 ``(I + 2·G·N, kernel, heads,
head_dim, N)`` with ``linear_groups`` G (``MambaStateShapeCalculator.mamba2_state_shape`` widens G
to the TP size when it does not divide it); Mamba-1 ``(I, kernel, I, 1, N)``; short conv
``(hidden, L_cache, 0, 0, 0)``.

Parameters are counted here, from the config by the modelling code (transformers
modeling_<type>.py, which vLLM loads one for one): transformers is not installed where servespec runs,
so the counts are checked against the published totals in the tests.
"""

from __future__ import annotations

import math
from typing import Any

from servespec.knowledge import config_fields as fields

MAMBA_TYPES = ("nemotron_h", "granitemoehybrid", "bamba", "jamba", "lfm2")
"""Model types read here."""

MAX_PATTERN = 4096


def _need(config: dict[str, Any], model_type: str, *keys: str) -> dict[str, int]:
    """Counts the family cannot do without, every absent one named at once as the family spells it."""
    absent = tuple(key for key in keys if config.get(key) is None)
    if absent:
        raise fields.MissingFieldsError(absent, model_type)
    return {key: int(fields.count(config, key, minimum=1) or 0) for key in keys}


def _kinds(config: dict[str, Any], model_type: str, layers: int) -> list[str]:  # noqa: C901
    """One of ``mamba``, ``attention``, ``mlp``, ``moe``, ``conv`` per block, from the family's own field."""
    if model_type == "nemotron_h":
        pattern = config.get("hybrid_override_pattern")
        words = fields.items(config, "layers_block_type")
        if isinstance(pattern, str) and 0 < len(pattern) <= MAX_PATTERN:
            table = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}
            if any(ch not in table for ch in pattern):
                raise fields.ConfigFieldError("hybrid_override_pattern", "a string of M, *, - and E")
            return [table[ch] for ch in pattern]
        if pattern is not None:
            raise fields.ConfigFieldError("hybrid_override_pattern", f"a string of 1 to {MAX_PATTERN} characters")
        if words:
            if any(word not in ("mamba", "attention", "mlp", "moe") for word in words):
                raise fields.ConfigFieldError("layers_block_type", "a list of mamba, attention, mlp and moe")
            return list(words)
        raise fields.MissingFieldsError(("hybrid_override_pattern",), model_type)
    if model_type in ("granitemoehybrid", "bamba", "lfm2"):
        types = fields.items(config, "layer_types")
        if types is not None:
            names = {"mamba": "mamba", "attention": "attention", "conv": "conv", "full_attention": "attention"}
            if len(types) != layers or any(kind not in names for kind in types):
                raise fields.ConfigFieldError("layer_types", "one of mamba, attention, conv, full_attention per layer")
            return [names[kind] for kind in types]
        indices = fields.items(config, "attn_layer_indices")
        if model_type == "bamba" and indices is not None:
            if any(type(i) is not int or not 0 <= i < layers for i in indices):
                raise fields.ConfigFieldError("attn_layer_indices", "layer indices below num_hidden_layers")
            return ["attention" if i in indices else "mamba" for i in range(layers)]
        full = fields.items(config, "full_attn_idxs")
        if model_type == "lfm2" and full is not None:
            # Lfm2Config.__post_init__: layer_types from full_attn_idxs when the config gives no layer_types
            if any(type(i) is not int or not 0 <= i < layers for i in full):
                raise fields.ConfigFieldError("full_attn_idxs", "layer indices below num_hidden_layers")
            return ["attention" if i in full else "conv" for i in range(layers)]
        return ["mamba"] * layers if model_type != "lfm2" else _missing_kinds(model_type)
    if model_type == "jamba":
        period = int(fields.count(config, "attn_layer_period", minimum=1) or 8)  # JambaConfig defaults
        offset = int(fields.count(config, "attn_layer_offset") or 4)
        return ["attention" if i % period == offset else "mamba" for i in range(layers)]
    return _missing_kinds(model_type)


def _missing_kinds(model_type: str) -> list[str]:
    raise fields.MissingFieldsError(("layer_types",), model_type)


def layout(config: dict[str, Any], model_type: str) -> dict[str, Any]:
    """``ModelFacts`` fields of a Mamba hybrid (see the module): layer counts, state, parameters."""
    layers = int(fields.count(config, "num_hidden_layers", minimum=1) or 0)
    kinds = _kinds(config, model_type, layers)
    hidden = int(fields.count(config, "hidden_size", minimum=1) or 0)
    if model_type == "nemotron_h":
        latent = [key for key in ("moe_latent_size",) if config.get(key) is not None]
        if latent:
            raise fields.ConfigFieldError(latent[0], "absent (latent MoE is not sized)")
        need = _need(config, model_type, "mamba_num_heads", "mamba_head_dim", "n_groups", "ssm_state_size")
        kernel = int(fields.count(config, "conv_kernel", minimum=2) or 4)
        heads, dim = need["mamba_num_heads"], need["mamba_head_dim"]
        width, groups, state = heads * dim, need["n_groups"], need["ssm_state_size"]
        kind = "mamba2"
    elif model_type in ("granitemoehybrid", "bamba"):
        need = _need(config, model_type, "mamba_n_heads", "mamba_d_state")
        width = int(fields.count(config, "mamba_expand", minimum=1) or 2) * hidden
        heads, state = need["mamba_n_heads"], need["mamba_d_state"]
        head = config.get("mamba_d_head")
        dim = width // heads if head in (None, "auto") else int(fields.count(config, "mamba_d_head", minimum=1) or 0)
        groups = int(fields.count(config, "mamba_n_groups", minimum=1) or 1)
        kernel = int(fields.count(config, "mamba_d_conv", minimum=2) or 4)
        kind = "mamba2"
    elif model_type == "jamba":
        need = _need(config, model_type, "mamba_d_state")
        width = int(fields.count(config, "mamba_expand", minimum=1) or 2) * hidden
        state, kernel = need["mamba_d_state"], int(fields.count(config, "mamba_d_conv", minimum=2) or 4)
        heads, dim, groups, kind = width, 1, 0, "mamba1"
    else:  # lfm2
        need = _need(config, model_type, "conv_L_cache")
        width, kernel, heads, dim, state, groups, kind = hidden, need["conv_L_cache"], 0, 0, 0, 0, "short_conv"
    conv = width + 2 * groups * state if kind == "mamba2" else width
    stateful = sum(1 for k in kinds if k in ("mamba", "conv"))
    attention = kinds.count("attention")
    facts: dict[str, Any] = {
        "layers": len(kinds),
        "linear_layers": stateful,
        "stateless_layers": len(kinds) - stateful - attention,
        "linear_state": (conv, kernel, heads, dim if kind != "short_conv" else 0, state),
        "linear_groups": groups,
        "linear_kind": kind,
        "params_override": float(_params(config, model_type, kinds, hidden, (width, groups, state, heads, kernel))),
    }
    if model_type == "nemotron_h":
        facts["layer_modules"] = _nemotron_modules(config, kinds, hidden, (width, groups, state, heads, kernel))
    architectures = fields.items(config, "architectures") or []
    if architectures and isinstance(architectures[0], str) and len(architectures[0]) <= fields.MAX_TEXT:
        facts["architecture"] = architectures[0]
    if model_type == "nemotron_h":
        facts["linear_ssm_dtype"] = fields.text(config, "mamba_ssm_cache_dtype")
    return facts


def _attention(config: dict[str, Any], hidden: int) -> int:
    """q, k, v, o projections (with ``attention_bias``); LFM2 adds q and k layernorms of a head's width."""
    heads = int(fields.count(config, "num_attention_heads", minimum=1) or 1)
    kv = int(fields.count(config, "num_key_value_heads", minimum=1) or heads)
    dim = int(fields.first_count(config, "head_dim", "attention_head_dim", minimum=1) or hidden // heads)
    params = 2 * hidden * heads * dim + 2 * hidden * kv * dim
    if fields.flag(config, "attention_bias"):
        params += heads * dim + 2 * kv * dim + hidden
    return params


def _mamba2(
    config: dict[str, Any], hidden: int, shape: tuple[int, int, int, int, int], bias: bool, conv_bias: bool
) -> int:
    """MambaMixer2: in_proj to ``2I + 2GN + H``, the depthwise conv over ``I + 2GN``, dt_bias, A_log and D
    per head, the gated RMSNorm over I, out_proj."""
    width, groups, state, heads, kernel = shape
    conv = width + 2 * groups * state
    projected = 2 * width + 2 * groups * state + heads
    params = hidden * projected + conv * kernel + 3 * heads + width + width * hidden
    if bias:
        params += projected + hidden
    if conv_bias:
        params += conv
    return params


def _mamba1(config: dict[str, Any], hidden: int, width: int, state: int, kernel: int) -> int:
    """Jamba's MambaMixer: in_proj to 2I, the conv over I, x_proj to ``dt_rank + 2N``, dt_proj, A_log (I × N), D,
    out_proj, and the dt, B and C RMSNorms."""
    rank_value = config.get("mamba_dt_rank")
    rank = math.ceil(hidden / 16) if rank_value in (None, "auto") else int(fields.count(config, "mamba_dt_rank") or 0)
    params = hidden * 2 * width + width * kernel + width * (rank + 2 * state) + rank * width + width
    params += width * state + width + width * hidden + rank + 2 * state
    if fields.flag(config, "mamba_conv_bias") is not False:
        params += width
    if fields.flag(config, "mamba_proj_bias"):
        params += 2 * width + hidden
    return params


def _lfm2_width(config: dict[str, Any]) -> int:
    """Lfm2MLP's width: ``block_ff_dim``, 2/3 of it and times ``block_ffn_dim_multiplier`` when
    ``block_auto_adjust_ff_dim``, rounded up to ``block_multiple_of``."""
    width = int(fields.first_count(config, "block_ff_dim", "intermediate_size", minimum=1) or 0)
    if fields.flag(config, "block_auto_adjust_ff_dim"):
        width = int(2 * width / 3)
        multiplier = fields.number(config, "block_ffn_dim_multiplier")
        if multiplier is not None:
            width = int(multiplier * width)
        multiple = int(fields.count(config, "block_multiple_of", minimum=1) or 256)
        width = multiple * ((width + multiple - 1) // multiple)
    return width


def _params(
    config: dict[str, Any], model_type: str, kinds: list[str], hidden: int, shape: tuple[int, int, int, int, int]
) -> int:
    width, _, state, _, kernel = shape
    vocab = int(fields.count(config, "vocab_size", minimum=1) or 0)
    tied = fields.flag(config, "tie_word_embeddings")
    tied = tied if tied is not None else model_type in ("lfm2", "granitemoehybrid", "bamba")
    total = vocab * hidden * (1 if tied else 2) + hidden  # embeddings, LM head, final norm
    attention = _attention(config, hidden)
    if model_type == "nemotron_h":
        mamba = _mamba2(config, hidden, shape, fields.flag(config, "use_bias") is True, _on(config, "use_conv_bias"))
        inner = int(fields.count(config, "intermediate_size") or 0)
        mlp_bias = fields.flag(config, "mlp_bias") is True
        mlp = 2 * hidden * inner + ((inner + hidden) if mlp_bias else 0)  # up and down, no gate (relu2)
        experts = int(fields.count(config, "n_routed_experts") or 0)
        expert = int(fields.count(config, "moe_intermediate_size") or 0)
        shared = int(fields.count(config, "moe_shared_expert_intermediate_size") or 0)
        shared *= int(fields.count(config, "n_shared_experts") or 0)
        moe = experts * 2 * hidden * expert + 2 * hidden * shared + experts * hidden + experts
        block = {"mamba": mamba, "attention": attention, "mlp": mlp, "moe": moe}
        return total + sum(block[k] + hidden for k in kinds)
    if model_type in ("granitemoehybrid", "bamba"):
        bias = fields.flag(config, "mamba_proj_bias") is True
        mamba = _mamba2(config, hidden, shape, bias, _on(config, "mamba_conv_bias"))
        if model_type == "bamba":
            ffn = 3 * hidden * int(fields.count(config, "intermediate_size") or 0)
        else:
            experts = int(fields.count(config, "num_local_experts") or 0)
            inner = int(fields.count(config, "intermediate_size") or 0)
            shared = int(fields.count(config, "shared_intermediate_size") or 0)
            ffn = 3 * hidden * shared + (experts * 3 * hidden * inner + experts * hidden if experts else 0)
        return total + sum((mamba if k == "mamba" else attention) + ffn + 2 * hidden for k in kinds)
    if model_type == "jamba":
        mamba = _mamba1(config, hidden, width, state, kernel)
        inner = int(fields.count(config, "intermediate_size") or 0)
        experts = int(fields.count(config, "num_experts") or 1)
        period = int(fields.count(config, "expert_layer_period", minimum=1) or 2)
        offset = int(fields.count(config, "expert_layer_offset") or 1)
        dense, sparse = 3 * hidden * inner, experts * 3 * hidden * inner + experts * hidden
        return (
            total
            + sum(
                (mamba if k == "mamba" else attention) + (sparse if experts > 1 and i % period == offset else dense)
                for i, k in enumerate(kinds)
            )
            + 2 * hidden * len(kinds)
        )
    # lfm2: ShortConv (in_proj to 3H, the depthwise conv, out_proj), attention with q/k layernorms, a gated MLP
    conv_bias = fields.flag(config, "conv_bias") is True
    short = 3 * hidden * hidden + hidden * kernel + hidden * hidden + (4 * hidden + hidden if conv_bias else 0)
    heads = int(fields.count(config, "num_attention_heads", minimum=1) or 1)
    head = hidden // heads
    ffn = 3 * hidden * _lfm2_width(config)
    return total + sum((short if k == "conv" else attention + 2 * head) + ffn + 2 * hidden for k in kinds)


Module = tuple[str, str, float, bool]
"""(name after ``model.layers.<i>.``, quantization part, parameters, built with the quantization config)."""


def _nemotron_modules(
    config: dict[str, Any], kinds: list[str], hidden: int, shape: tuple[int, int, int, int, int]
) -> tuple[tuple[Module, ...], ...]:
    """Each Nemotron-H block's modules as vLLM's nemotron_h.py (v0.33.0) names and builds them, one ``mixer`` per
    block: MambaMixer2's ``in_proj`` and ``out_proj`` (its ``conv1d`` is built with ``quant_config=None``; A, D,
    dt_bias and the gated norm are no linear layers); NemotronHAttention's q, k, v (loaded into ``qkv_proj``) and
    ``o_proj``; NemotronHMLP's ``up_proj`` and ``down_proj``; NemotronHMoE's ``experts`` (one FusedMoE),
    ``shared_experts.up_proj``/``down_proj`` and the router ``gate`` (a GateLinear without the quantization config,
    with its ``e_score_correction_bias``); and the block's ``norm``. The sequence mixers (Mamba-2, attention) are the
    ``attention`` part, routed experts ``experts``, the rest ``mlp``; the sizes sum to :func:`_params`' blocks."""
    width, groups, state, heads, kernel = shape
    bias = fields.flag(config, "use_bias") is True
    conv = width + 2 * groups * state
    projected = 2 * width + 2 * groups * state + heads
    rest = conv * kernel + 3 * heads + width + (conv if _on(config, "use_conv_bias") else 0)
    mamba: tuple[Module, ...] = (
        ("mixer.in_proj", "attention", hidden * projected + (projected if bias else 0), True),
        ("mixer.out_proj", "attention", width * hidden + (hidden if bias else 0), True),
        ("mixer.conv1d", "attention", rest, False),
    )
    q_heads = int(fields.count(config, "num_attention_heads", minimum=1) or 1)
    kv = int(fields.count(config, "num_key_value_heads", minimum=1) or q_heads)
    dim = int(fields.first_count(config, "head_dim", "attention_head_dim", minimum=1) or hidden // q_heads)
    biased = fields.flag(config, "attention_bias") is True
    attention: tuple[Module, ...] = (
        ("mixer.q_proj", "attention", hidden * q_heads * dim + (q_heads * dim if biased else 0), True),
        ("mixer.k_proj", "attention", hidden * kv * dim + (kv * dim if biased else 0), True),
        ("mixer.v_proj", "attention", hidden * kv * dim + (kv * dim if biased else 0), True),
        ("mixer.o_proj", "attention", q_heads * dim * hidden + (hidden if biased else 0), True),
    )
    inner = int(fields.count(config, "intermediate_size") or 0)
    mlp_bias = fields.flag(config, "mlp_bias") is True
    mlp: tuple[Module, ...] = (
        ("mixer.up_proj", "mlp", hidden * inner + (inner if mlp_bias else 0), True),
        ("mixer.down_proj", "mlp", inner * hidden + (hidden if mlp_bias else 0), True),
    )
    experts = int(fields.count(config, "n_routed_experts") or 0)
    expert = int(fields.count(config, "moe_intermediate_size") or 0)
    shared = int(fields.count(config, "moe_shared_expert_intermediate_size") or 0)
    shared *= int(fields.count(config, "n_shared_experts") or 0)
    moe: tuple[Module, ...] = (
        ("mixer.experts", "experts", experts * 2 * hidden * expert, True),
        ("mixer.shared_experts.up_proj", "mlp", hidden * shared, True),
        ("mixer.shared_experts.down_proj", "mlp", shared * hidden, True),
        ("mixer.gate", "mlp", experts * hidden + experts, False),
    )
    blocks = {"mamba": mamba, "attention": attention, "mlp": mlp, "moe": moe}
    norm: Module = ("norm", "mlp", hidden, False)
    return tuple((*blocks[kind], norm) for kind in kinds)


def _on(config: dict[str, Any], key: str) -> bool:
    return fields.flag(config, key) is not False
