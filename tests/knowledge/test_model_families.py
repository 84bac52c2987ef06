"""Issue 23 item 4: model families read from their real config.json (layer pattern, heads, MoE, context)."""

from __future__ import annotations

from pathlib import Path

import pytest

from servespec.knowledge.memory import kv_bytes_per_token, linear_state_bytes
from servespec.knowledge.models import facts_from_config

# moonshotai/Kimi-Linear-48B-A3B-Instruct config.json, verbatim: the fields up to moe_layer_freq as
# `curl https://huggingface.co/moonshotai/Kimi-Linear-48B-A3B-Instruct/resolve/main/config.json | head -60`
# printed them (a published agent transcript, find_string id 54667546636), the rest up to
# qk_rope_head_dim from the same file in Firworks/Kimi-Linear-48B-A3B-Instruct-nvfp4
# (https://huggingface.co/Firworks/Kimi-Linear-48B-A3B-Instruct-nvfp4/resolve/main/config.json, a mirror's
# stored page), whose quantization_config is left out. The two copies agree where they overlap.
KIMI_LINEAR = {
    "architectures": ["KimiLinearForCausalLM"],
    "bos_token_id": 163584, "dtype": "bfloat16", "eos_token_id": 163586, "first_k_dense_replace": 1,
    "head_dim": 72, "hidden_act": "silu", "hidden_size": 2304, "initializer_range": 0.02,
    "intermediate_size": 9216, "kv_lora_rank": 512,
    "linear_attn_config": {
        "full_attn_layers": [4, 8, 12, 16, 20, 24, 27], "head_dim": 128,
        "kda_layers": [1, 2, 3, 5, 6, 7, 9, 10, 11, 13, 14, 15, 17, 18, 19, 21, 22, 23, 25, 26],
        "num_heads": 32, "short_conv_kernel_size": 4,
    },
    "mla_use_nope": True, "model_max_length": 1048576, "model_type": "kimi_linear", "moe_intermediate_size": 1024,
    "moe_layer_freq": 1, "moe_renormalize": True, "moe_router_activation_func": "sigmoid", "num_attention_heads": 32,
    "num_expert_group": 1, "num_experts": 256, "num_experts_per_token": 8, "num_hidden_layers": 27,
    "num_key_value_heads": 32, "num_nextn_predict_layers": 0, "num_shared_experts": 1, "pad_token_id": 163839,
    "q_lora_rank": None, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
}  # fmt: skip


def test_kimi_linear_caches_only_its_mla_layers() -> None:
    """Kimi Linear: 20 of 27 layers are KDA (a fixed state per sequence), 7 are MLA; servespec sized all 27 as MLA,
    a KV cache 3.9x too large, its experts as top-1 without the shared expert, and its context as unknown."""
    facts = facts_from_config(KIMI_LINEAR, "moonshotai/Kimi-Linear-48B-A3B-Instruct")
    assert (facts.layers, facts.linear_layers, facts.linear_kind) == (27, 20, "kda")
    assert facts.is_mla and (facts.kv_lora_rank, facts.qk_rope_head_dim) == (512, 64)
    # vLLM kda_state_shape: conv over q, k, v (3 x 32 x 128 channels, kernel 4), recurrent 32 x 128 x 128
    assert facts.linear_state == (12288, 4, 32, 128, 128)
    assert linear_state_bytes(facts, 2.0, 1) == (12288 * 3 + 32 * 128 * 128) * 2
    assert kv_bytes_per_token(facts, 2.0, 1, 1) == 7 * (512 + 64) * 2
    assert (facts.experts, facts.active_experts, facts.shared_intermediate_size) == (256, 8, 1024)
    assert facts.max_position_embeddings == 1_048_576  # model_max_length (vLLM reads it; transformers maps it)


def test_kimi_linear_parameters_match_transformers() -> None:
    """The count equals transformers 5.24's KimiLinearForCausalLM built on the meta device from this config with
    v_head_dim 128, vocab_size 163,840 and untied embeddings (KimiLinearConfig's defaults, the fields past the stored
    copies): 49,122,675,072, the model card's 48B."""
    config = {**KIMI_LINEAR, "v_head_dim": 128, "vocab_size": 163840, "tie_word_embeddings": False}
    facts = facts_from_config(config, "kimi-linear")
    assert facts.params == 49_122_675_072
    embeddings = 2 * 163840 * 2304
    assert facts.active_params - embeddings == pytest.approx(3e9, rel=0.1)  # "48B total, 3B activated"


def test_kimi_linear_without_its_kda_heads_names_them() -> None:
    """vLLM reads linear_attn_config's num_heads and head_dim without a default: a config lacking them is named."""
    from servespec.knowledge.config_fields import MissingFieldsError, missing_message

    linear = {key: value for key, value in KIMI_LINEAR["linear_attn_config"].items() if key not in ("num_heads",)}  # type: ignore[union-attr]
    with pytest.raises(MissingFieldsError) as err:
        facts_from_config({**KIMI_LINEAR, "linear_attn_config": linear}, "k")
    assert "linear_attn_config.num_heads" in missing_message(err.value)
    assert "head_dim" not in missing_message(err.value)


# Parameters of transformers 5.24's own model for each catalogued config.json, built on the meta device
# (scripts/catalog/transformers_params.py, run in the vllm-0.33.0 parser environment): the whole checkpoint,
# vision tower included, as servespec counts it.
TRANSFORMERS_COUNTS = {
    "Qwen/Qwen3-Next-80B-A3B-Thinking": 79_674_391_296,  # shared_expert_gate per MoE layer (was 98,304 short)
    "Qwen/Qwen3-Coder-480B-A35B-Instruct": 480_154_875_392,
    "MiniMaxAI/MiniMax-M2.7": 228_689_748_992,  # q_norm/k_norm over all heads (was 444,416 short)
    "Qwen/Qwen3-VL-2B-Instruct": 2_127_532_032,  # merger MLP, 3 deepstack mergers, position embeddings
    "Qwen/Qwen3-VL-8B-Instruct": 8_767_123_696,  # (were 95M and 144M short)
    "Qwen/Qwen3-VL-32B-Instruct": 33_357_390_064,
    "Qwen/Qwen3-VL-30B-A3B-Instruct": 31_070_754_032,
    "Qwen/Qwen3-VL-235B-A22B-Instruct": 235_670_022_896,
    # Qwen3_5MoeForConditionalGeneration: the text model 34,660,610,688 and its vision tower 446,571,248
    "Qwen/Qwen3.6-35B-A3B": 35_107_181_936,
}


@pytest.mark.parametrize("repo", list(TRANSFORMERS_COUNTS))
def test_catalogued_families_count_what_transformers_builds(repo: str) -> None:
    from servespec.knowledge.models import catalogued

    facts = catalogued(repo)
    assert facts is not None, repo
    assert facts.params == TRANSFORMERS_COUNTS[repo]


# (repo id, estimator class, facts the KV cache and the weights depend on), from the catalogued config.json
FAMILIES = [
    ("Qwen/Qwen3-Next-80B-A3B-Thinking", "linear",
     {"layers": 48, "linear_layers": 36, "attention_gate": True, "kv_heads": 2, "head_dim": 256, "experts": 512,
      "active_experts": 10, "linear_state": (8192, 4, 32, 128, 128)}),
    ("Qwen/Qwen3.6-35B-A3B", "linear",
     {"layers": 40, "linear_layers": 30, "experts": 256, "quant_method": None, "torch_dtype": "bfloat16"}),
    ("Qwen/Qwen3-Coder-480B-A35B-Instruct", "moe",
     {"layers": 62, "kv_heads": 8, "head_dim": 128, "experts": 160, "active_experts": 8, "sliding_layers": 0}),
    ("Qwen/Qwen3-VL-30B-A3B-Instruct", "moe", {"layers": 48, "kv_heads": 4, "experts": 128, "dense_layers": 0}),
    ("Qwen/Qwen3-VL-8B-Instruct", "dense", {"layers": 36, "kv_heads": 8, "head_dim": 128}),
    ("MiniMaxAI/MiniMax-M2.7", "moe",
     {"layers": 62, "kv_heads": 8, "experts": 256, "quant_method": "fp8", "weight_block_size": (128, 128),
      "max_position_embeddings": 204800}),
]  # fmt: skip


@pytest.mark.parametrize(("repo", "kind", "expected"), FAMILIES, ids=[f[0] for f in FAMILIES])
def test_families_resolve_with_their_layout(repo: str, kind: str, expected: dict[str, object]) -> None:
    from servespec.knowledge.error_band import model_class
    from servespec.knowledge.models import catalogued

    facts = catalogued(repo)
    assert facts is not None, repo
    assert model_class(facts) == kind
    assert {key: getattr(facts, key) for key in expected} == expected


# GLM-4.5-Air's config as transformers 4.54.1 printed it (Glm4MoeConfig repr) in a published ms-swift Megatron run of
# ZhipuAI/GLM-4.5-Air (find_string id 48221590695); no verbatim copy of zai-org's config.json was reachable.
GLM_45_AIR = {
    "architectures": ["Glm4MoeForCausalLM"], "attention_bias": True, "attention_dropout": 0.0,
    "eos_token_id": [151329, 151336, 151338], "first_k_dense_replace": 1, "head_dim": 128, "hidden_act": "silu",
    "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 10944, "max_position_embeddings": 131072,
    "model_type": "glm4_moe", "moe_intermediate_size": 1408, "n_group": 1, "n_routed_experts": 128,
    "n_shared_experts": 1, "norm_topk_prob": True, "num_attention_heads": 96, "num_experts_per_tok": 8,
    "num_hidden_layers": 46, "num_key_value_heads": 8, "num_nextn_predict_layers": 1, "pad_token_id": 151329,
    "partial_rotary_factor": 0.5, "rms_norm_eps": 1e-05, "rope_scaling": None, "rope_theta": 1000000,
    "routed_scaling_factor": 1.0, "tie_word_embeddings": False, "topk_group": 1, "torch_dtype": "bfloat16",
    "transformers_version": "4.54.1", "use_cache": True, "use_qk_norm": False, "vocab_size": 151552,
}  # fmt: skip


def test_glm45_counts_its_attention_biases() -> None:
    """GLM-4.5 (glm4_moe, attention_bias true): q, k and v carry biases (transformers Glm4MoeAttention); the count
    equals transformers 5.24's Glm4MoeForCausalLM (106,852,245,504; was 659,456 short), the published 106B / 12B."""
    facts = facts_from_config(GLM_45_AIR, "zai-org/GLM-4.5-Air")
    assert facts.params == 106_852_245_504
    assert (facts.kv_heads, facts.head_dim, facts.dense_layers, facts.shared_intermediate_size) == (8, 128, 1, 1408)
    assert facts.active_params == pytest.approx(12e9, rel=0.12)
    unbiased = facts_from_config({**GLM_45_AIR, "attention_bias": False}, "g")
    assert facts.params - unbiased.params == 46 * (96 * 128 + 2 * 8 * 128)


# Real config.json files (tests/data/model_configs/README.md) of architectures whose layout lives in fields
# servespec does not read, and the fields its refusal must name.
UNSIZED = [
    ("sgl-project--DeepSeek-V4-Flash-FP8", "deepseek_ref", ("compress_ratios", "o_lora_rank", "hc_mult")),
    # Mamba-2 + attention + latent MoE (experts in a space narrower than hidden_size), the pattern as a list
    ("nvidia--NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16", "nemotron_h", ("moe_latent_size",)),
    # per-layer attention and FFN widths (some layers without attention): 23.6B from the shared fields, 49B
    ("nvidia--Llama-3_3-Nemotron-Super-49B-v1", "nemotron-nas", ("block_configs",)),
    # Kimi Linear's layout plus latent experts narrower than hidden_size and attention residual blocks
    ("moonshotai--Kimi-K3", "kimi_linear", ("routed_expert_hidden_size", "attn_res_block_size")),
    # dense layers of their own width and sparse attention layers
    ("MiniMaxAI--MiniMax-M3", "minimax_m3", ("dense_intermediate_size", "sparse_attention_config")),
]


@pytest.mark.parametrize(("name", "model_type", "fields"), UNSIZED, ids=[u[0] for u in UNSIZED])
def test_an_unsized_architecture_names_the_fields_it_does_not_read(
    name: str, model_type: str, fields: tuple[str, ...]
) -> None:
    import json

    from servespec.knowledge.models import UnsizedArchitectureError
    from tests.conftest import REPO

    config = json.loads((REPO / "tests" / "data" / "model_configs" / f"{name}_config.json").read_text())
    with pytest.raises(UnsizedArchitectureError) as err:
        facts_from_config(config, name)
    message = str(err.value)
    assert f"'{model_type}'" in message
    assert all(field in message for field in fields), message
    assert len(message) <= 120  # REF003 quotes at most 120 characters


def test_a_model_config_servespec_cannot_size_is_reported_with_its_fields(tmp_path: Path) -> None:
    """The answer a deployment's model.config gets (what REF003 says): the fields, not a size."""
    from servespec.knowledge.sources import _config_facts
    from tests.conftest import REPO

    source = REPO / "tests" / "data" / "model_configs" / "sgl-project--DeepSeek-V4-Flash-FP8_config.json"
    path = tmp_path / "config.json"
    path.write_bytes(source.read_bytes())
    answer = _config_facts(path)
    assert answer.facts is None
    assert "deepseek_ref" in answer.problem and "compress_ratios" in answer.problem


def test_nemotron_3_nano_is_sized_from_its_pattern_as_transformers_builds_it() -> None:
    """The verbatim Nemotron-3-Nano-30B-A3B config (Mamba-2, attention and MoE blocks by hybrid_override_pattern):
    transformers 5.24 builds 31.6B parameters (tests/data/model_configs/README.md), where the shared fields alone
    would give 102.3B; 6 attention blocks hold KV, 23 Mamba-2 blocks a fixed state."""
    import json

    from tests.conftest import REPO

    name = "nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
    config = json.loads((REPO / "tests" / "data" / "model_configs" / f"{name}_config.json").read_text())
    facts = facts_from_config(config, name)
    assert facts.params == pytest.approx(31.6e9, rel=0.002)
    assert facts.linear_layers == config["hybrid_override_pattern"].count("M")
    assert facts.kv_full_layers == config["hybrid_override_pattern"].count("*")
