"""Mamba / Mamba-2 / short-conv hybrids: layout, state bytes per vLLM release, refusals (knowledge/mamba.py).

The configs are built here from the published field values of nvidia/Nemotron-H-8B-Base-8K (as Megatron-Bridge's
tests copy them) and ibm-granite/granite-4.0-h-small (its attention positions are a STAND-IN: 4 of 40 layers, the
count the model card gives; only the count enters the arithmetic). They are not verbatim copies and are not
catalogued. State bytes: vLLM 0.11.0's own MambaStateShapeCalculator.mamba2_state_shape and
MambaStateDtypeCalculator.mamba2_state_dtype give 2,158,592 (bf16), 4,255,744 (float32 recurrent) for Nemotron-H-8B
and 2,147,840 for Granite-4.0-H-Small (run in the vllm-0.11.0 parser environment).
"""

from __future__ import annotations

from typing import Any

import pytest

from servespec.engines import get
from servespec.engines.vllm.memory import linear_state_page, state_block
from servespec.knowledge import config_fields as fields
from servespec.knowledge.memory import EstimateInput
from servespec.knowledge.models import ModelFacts, UnsizedArchitectureError, facts_from_config

NEMOTRON_H_8B: dict[str, Any] = {
    "architectures": ["NemotronHForCausalLM"],
    "attention_head_dim": 128,
    "conv_kernel": 4,
    "hidden_size": 4096,
    "hybrid_override_pattern": "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-",
    "intermediate_size": 21504,
    "mamba_head_dim": 64,
    "mamba_num_heads": 128,
    "max_position_embeddings": 8192,
    "model_type": "nemotron_h",
    "n_groups": 8,
    "num_attention_heads": 32,
    "num_hidden_layers": 52,
    "num_key_value_heads": 8,
    "ssm_state_size": 128,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "use_bias": False,
    "use_conv_bias": True,
    "vocab_size": 131072,
}
_GRANITE_TYPES = ["attention" if i in (5, 15, 25, 35) else "mamba" for i in range(40)]
GRANITE_H_SMALL: dict[str, Any] = {
    "architectures": ["GraniteMoeHybridForCausalLM"],
    "model_type": "granitemoehybrid",
    "hidden_size": 4096,
    "num_hidden_layers": 40,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "num_local_experts": 72,
    "num_experts_per_tok": 10,
    "shared_intermediate_size": 1536,
    "intermediate_size": 768,
    "mamba_d_state": 128,
    "mamba_d_conv": 4,
    "mamba_expand": 2,
    "mamba_n_heads": 128,
    "mamba_d_head": 64,
    "mamba_n_groups": 1,
    "mamba_conv_bias": True,
    "mamba_proj_bias": False,
    "vocab_size": 100352,
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
    "layer_types": _GRANITE_TYPES,
}


def _state(model: ModelFacts, version: str, tp: int = 1, **options: Any) -> tuple[float, tuple[int, int] | None]:
    release = get("vllm").select(version).release
    assert release is not None
    inp = EstimateInput(
        engine="vllm",
        release=release,
        model=model,
        gpu=None,
        max_model_len=8192,
        tensor_parallel=tp,
        options={"block_size": 16, "max_num_batched_tokens": 8192, **options},
    )
    fact = release.facts.hybrid_kv_cache
    assert fact is not None
    return linear_state_page(inp, fact), state_block(inp, fact, 16)


def test_nemotron_h_layout_from_its_pattern() -> None:
    m = facts_from_config(NEMOTRON_H_8B, "nh8")
    assert (m.layers, m.linear_layers, m.stateless_layers, m.kv_full_layers) == (52, 24, 24, 4)
    assert m.linear_kind == "mamba2" and m.linear_groups == 8
    assert m.linear_state == (128 * 64 + 2 * 8 * 128, 4, 128, 64, 128)
    # nvidia/Nemotron-H-8B-Base-8K: 8.1B on its model card; counted by the modelling code
    assert m.params == pytest.approx(8.10e9, rel=0.005)


def test_granite_h_small_layout_and_params() -> None:
    m = facts_from_config(GRANITE_H_SMALL, "g")
    assert (m.layers, m.linear_layers, m.kv_full_layers) == (40, 36, 4)
    assert m.linear_state == (8192 + 2 * 128, 4, 128, 64, 128)
    assert m.params == pytest.approx(32.2e9, rel=0.005)  # ibm-granite/granite-4.0-h-small: 32.2B on its card


def test_state_bytes_and_page_per_release() -> None:
    nh = facts_from_config(NEMOTRON_H_8B, "nh8")
    # 0.11.0: both states in the model dtype; 0.20.0: NemotronHForCausalLMConfig's float32 recurrent state
    assert _state(nh, "0.11.0") == (2_158_592, (528, 1))
    assert _state(nh, "0.20.0") == (4_255_744, (1040, 1))
    # an explicit --mamba-ssm-cache-dtype wins over the release's default
    assert _state(nh, "0.20.0", mamba_ssm_cache_dtype="bfloat16")[0] == 2_158_592
    granite = facts_from_config(GRANITE_H_SMALL, "g")
    assert _state(granite, "0.20.0")[0] == 2_147_840  # GraniteMoeHybrid: no such default


def test_mamba2_groups_widen_to_the_tp_size() -> None:
    granite = facts_from_config(GRANITE_H_SMALL, "g")
    # n_groups 1 at TP 4: extra_groups_for_head_shards makes it 4: conv (8192 + 2*4*128)/4 x 3, heads 32 x 64 x 128
    assert _state(granite, "0.20.0", tp=4)[0] == (8192 + 1024) // 4 * 3 * 2 + 32 * 64 * 128 * 2


def test_align_mode_adds_mamba2_checkpoint_block_from_032() -> None:
    nh = facts_from_config(NEMOTRON_H_8B, "nh8")
    assert _state(nh, "0.31.0", enable_prefix_caching=True)[1] == (1040, 2)
    assert _state(nh, "0.33.0", enable_prefix_caching=True)[1] == (1040, 3)


def test_jamba_and_lfm2_layouts() -> None:
    jamba = {
        "model_type": "jamba",
        "hidden_size": 64,
        "num_hidden_layers": 8,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "intermediate_size": 128,
        "vocab_size": 100,
        "mamba_d_state": 16,
        "mamba_d_conv": 4,
        "mamba_expand": 2,
        "attn_layer_period": 8,
        "attn_layer_offset": 4,
        "num_experts": 1,
    }
    m = facts_from_config(jamba, "j")
    assert (m.linear_layers, m.kv_full_layers, m.linear_kind) == (7, 1, "mamba1")
    assert m.linear_state == (128, 4, 128, 1, 16)
    lfm2 = {
        "model_type": "lfm2",
        "hidden_size": 64,
        "num_hidden_layers": 4,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "block_ff_dim": 128,
        "vocab_size": 100,
        "conv_L_cache": 3,
        "layer_types": ["conv", "full_attention", "conv", "conv"],
    }
    m = facts_from_config(lfm2, "l")
    assert (m.linear_layers, m.kv_full_layers, m.linear_kind, m.linear_state) == (3, 1, "short_conv", (64, 3, 0, 0, 0))


def test_missing_fields_named_as_the_family_spells_them() -> None:
    broken = {k: v for k, v in NEMOTRON_H_8B.items() if k not in ("mamba_num_heads", "ssm_state_size")}
    with pytest.raises(fields.MissingFieldsError) as err:
        facts_from_config(broken, "nh")
    assert "mamba_num_heads" in str(err.value) and "ssm_state_size" in str(err.value)
    no_pattern = {k: v for k, v in NEMOTRON_H_8B.items() if k != "hybrid_override_pattern"}
    with pytest.raises(fields.MissingFieldsError, match="hybrid_override_pattern"):
        facts_from_config(no_pattern, "nh")
    granite = {k: v for k, v in GRANITE_H_SMALL.items() if k != "mamba_d_state"}
    with pytest.raises(fields.MissingFieldsError, match="mamba_d_state"):
        facts_from_config(granite, "g")
    with pytest.raises(UnsizedArchitectureError, match="mamba_d_ssm"):
        facts_from_config({"model_type": "falcon_h1", "mamba_d_ssm": 1024, **_BASE}, "f")


_BASE = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4}


# LFM2-VL: the published structure of LiquidAI/LFM2-VL-1.6B (an LFM2 text model of 16 layers, six of them attention,
# inside a SigLIP2 NaViT tower of 27 layers and a pixel-unshuffle projector). NOT a verbatim copy of its config.json
# (none was at hand) and not catalogued; the expected counts are what transformers builds for exactly these dicts on
# the meta device (scripts/catalog/transformers_params.py in the vllm-0.33.0 parser environment, transformers
# v5.24.0): total ``params`` and the ``vision_tower`` share, to which the projector is added here.
LFM2_VL_1_6B: dict[str, Any] = {
    "model_type": "lfm2_vl",
    "architectures": ["Lfm2VlForConditionalGeneration"],
    "downsample_factor": 2,
    "projector_hidden_size": 2560,
    "projector_hidden_act": "gelu",
    "projector_bias": True,
    "image_token_id": 396,
    "text_config": {
        "model_type": "lfm2",
        "vocab_size": 65536,
        "hidden_size": 2048,
        "num_hidden_layers": 16,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "block_ff_dim": 12288,
        "block_auto_adjust_ff_dim": True,
        "block_ffn_dim_multiplier": 1.0,
        "block_multiple_of": 256,
        "conv_L_cache": 3,
        "conv_bias": False,
        "max_position_embeddings": 128000,
        "full_attn_idxs": [2, 5, 8, 10, 12, 14],
    },
    "vision_config": {
        "model_type": "siglip2_vision_model",
        "hidden_size": 1152,
        "intermediate_size": 4304,
        "num_hidden_layers": 27,
        "num_attention_heads": 16,
        "num_channels": 3,
        "patch_size": 16,
        "num_patches": 256,
        "vision_use_head": False,
    },
}


def _lfm2_vl_variants() -> list[tuple[dict[str, Any], int, int]]:
    """(config, transformers' total, transformers' vision_tower) for LFM2-VL-1.6B's structure and two variants."""
    headed = {
        **LFM2_VL_1_6B,
        "projector_use_layernorm": False,
        "projector_bias": False,
        "vision_config": {k: v for k, v in LFM2_VL_1_6B["vision_config"].items() if k != "vision_use_head"},
    }
    text = {k: v for k, v in LFM2_VL_1_6B["text_config"].items() if k != "full_attn_idxs"}
    small = {
        **LFM2_VL_1_6B,
        "downsample_factor": 3,
        "tie_word_embeddings": False,
        "text_config": {**text, "hidden_size": 1024, "layer_types": ["conv", "conv", "full_attention"] + ["conv"] * 13},
        "vision_config": {
            "model_type": "siglip2_vision_model",
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_hidden_layers": 12,
            "num_attention_heads": 12,
            "num_patches": 256,
            "vision_use_head": False,
        },
    }
    return [
        (LFM2_VL_1_6B, 1_600_043_504, 412_649_712),
        (headed, 1_615_268_032, 427_888_064),
        (small, 708_663_616, 85_843_200),
    ]


def _projector(config: dict[str, Any]) -> int:
    """Lfm2VlMultiModalProjector as modeling_lfm2_vl.py builds it (LayerNorm, linear_1, linear_2)."""
    unshuffled = config["vision_config"]["hidden_size"] * config["downsample_factor"] ** 2
    inner, text = config["projector_hidden_size"], config["text_config"]["hidden_size"]
    bias = config.get("projector_bias", True)
    norm = 2 * unshuffled if config.get("projector_use_layernorm", True) else 0
    return norm + unshuffled * inner + inner * text + ((inner + text) if bias else 0)


@pytest.mark.parametrize("index", range(3))
def test_lfm2_vl_keeps_its_tower_beside_the_hybrid_text_model(index: int) -> None:
    config, total, tower = _lfm2_vl_variants()[index]
    m = facts_from_config(config, "lfm2-vl")
    assert m.vision_params == tower + _projector(config)
    assert m.params == total  # the text model (knowledge/mamba.py) plus the tower and projector
    assert (m.layers, m.linear_kind) == (16, "short_conv")


def test_lfm2_layer_types_from_full_attn_idxs() -> None:
    """Lfm2Config.__post_init__ derives layer_types from full_attn_idxs when a config gives only those."""
    m = facts_from_config(LFM2_VL_1_6B, "lfm2-vl")
    assert (m.linear_layers, m.kv_full_layers) == (10, 6)
    bad = {**LFM2_VL_1_6B, "text_config": {**LFM2_VL_1_6B["text_config"], "full_attn_idxs": [99]}}
    with pytest.raises(fields.ConfigFieldError, match="full_attn_idxs"):
        facts_from_config(bad, "lfm2-vl")
