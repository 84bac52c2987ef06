"""Gemma 4 resolves from its config: layer kinds, per-kind KV shapes, shared-KV layers, MoE, per-layer inputs and
towers, with the parameter count transformers builds (knowledge/gemma4.py)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from servespec.knowledge.memory import full_layer_bytes_per_token, kv_bytes_per_token, layer_bytes_per_token
from servespec.knowledge.models import catalogued, facts_from_config
from tests.conftest import REPO

CONFIG_26B = REPO / "tests" / "data" / "model_configs" / "google--gemma-4-26B-A4B_config.json"

# Parameters of transformers 5.25.0's Gemma4ForConditionalGeneration built on the meta device from each config
# (scripts/catalog/transformers_params.py with the 5.25.0 wheel on the path, in the vllm-0.11.0 parser environment
# for torch): the whole checkpoint, towers included.
TRANSFORMERS_5_25 = {
    "google/gemma-4-26B-A4B": 25_805_933_872,  # language model 25,233,141,760 (llama.cpp: "25.23 B")
    "google/gemma-4-31B-it": 31_273_086_512,
    "google/gemma-4-E4B-it": 7_941_100_832,  # audio tower 304,824,608, vision 167,364,608
}


@pytest.mark.parametrize("repo", list(TRANSFORMERS_5_25))
def test_catalogued_gemma4_counts_what_transformers_builds(repo: str) -> None:
    facts = catalogued(repo)
    assert facts is not None, repo
    assert facts.params == TRANSFORMERS_5_25[repo]


def _variant(**text: Any) -> dict[str, Any]:
    """The 31B's catalogued config with text_config fields changed (shapes no release has, counted by transformers)."""
    entry = catalogued("google/gemma-4-31B-it")
    assert entry is not None
    from servespec.knowledge.models import _catalog

    config = copy.deepcopy(_catalog()["google/gemma-4-31b-it"]["config"])
    config["text_config"].update(text)
    return config  # type: ignore[no-any-return]


def test_shapes_no_release_has_count_what_transformers_builds() -> None:
    """Every branch of the count against transformers 5.25.0 (meta device): E2B's shape (35 layers, 4:1 pattern, 20
    shared layers with double-wide MLPs, one KV head; the E4B towers) and a 31B with MoE, per-layer inputs and
    shared layers under attention_k_eq_v."""
    e4b = catalogued("google/gemma-4-E4B-it")
    assert e4b is not None
    from servespec.knowledge.models import _catalog

    e2b = copy.deepcopy(_catalog()["google/gemma-4-e4b-it"]["config"])
    e2b["text_config"].update(
        hidden_size=1536,
        num_hidden_layers=35,
        intermediate_size=6144,
        num_key_value_heads=1,
        num_kv_shared_layers=20,
        use_double_wide_mlp=True,
        layer_types=(["sliding_attention"] * 4 + ["full_attention"]) * 7,
    )
    assert facts_from_config(e2b, "e2b-shaped").params == 5_104_297_504
    mixed = _variant(
        num_kv_shared_layers=12,
        use_double_wide_mlp=True,
        hidden_size_per_layer_input=64,
        vocab_size_per_layer_input=1000,
        enable_moe_block=True,
        num_experts=4,
        top_k_experts=2,
        moe_intermediate_size=96,
    )
    facts = facts_from_config(mixed, "mixed")
    assert facts.params == 35_412_723_040
    # two of four experts in each of the 60 layers are idle per token
    assert facts.params - facts.active_params == 60 * 2 * 3 * 5376 * 96


def test_the_26b_resolves_with_its_layout() -> None:
    """google/gemma-4-26B-A4B (the real config.json): 25 sliding layers of 8 KV heads x 256 and 5 full ones of 2 x 512
    (attention_k_eq_v: num_global_key_value_heads), 128 experts, 8 active."""
    facts = facts_from_config(json.loads(CONFIG_26B.read_text()), "google/gemma-4-26B-A4B")
    assert (facts.layers, facts.sliding_layers, facts.sliding_window) == (30, 25, 1024)
    assert (facts.kv_heads, facts.head_dim, facts.full_kv_heads, facts.full_head_dim) == (8, 256, 2, 512)
    assert (facts.kv_sliding_layers, facts.kv_full_layers, facts.kv_shared_layers) == (25, 5, 0)
    assert (facts.experts, facts.active_experts, facts.moe_intermediate_size) == (128, 8, 704)
    assert facts.value_from_key and not facts.uniform_kv
    assert facts.params == TRANSFORMERS_5_25["google/gemma-4-26B-A4B"]
    # f16 cache, every layer at every token: llama.cpp's n_embd_k_gqa + n_embd_v_gqa per layer kind (print_info)
    assert layer_bytes_per_token(facts, 2.0, 1) == 2 * 2048 * 2
    assert full_layer_bytes_per_token(facts, 2.0, 1) == 2 * 1024 * 2
    assert kv_bytes_per_token(facts, 2.0, 1, 1) == 25 * 8192 + 5 * 4096
    # tensor parallel 2: each rank keeps half of each kind's heads
    assert kv_bytes_per_token(facts, 2.0, 2, 1) == (25 * 8192 + 5 * 4096) / 2


def test_shared_kv_layers_keep_no_cache() -> None:
    """E4B: the last 18 of 42 layers reuse the caches of layers 22 (sliding) and 23 (full); 20 sliding and 4 full
    layers keep one, as llama.cpp logs it ("4 global layers", "20 SWA layers")."""
    facts = catalogued("google/gemma-4-E4B-it")
    assert facts is not None
    assert (facts.sliding_layers, facts.kv_shared_layers, facts.kv_shared_sliding) == (35, 18, 15)
    assert (facts.kv_sliding_layers, facts.kv_full_layers) == (20, 4)
    assert (facts.kv_heads, facts.head_dim, facts.full_kv_heads, facts.full_head_dim) == (2, 256, 2, 512)
    assert kv_bytes_per_token(facts, 2.0, 1, 1) == 20 * 2048 + 4 * 4096
    assert facts.per_layer_input == 256 and facts.vision_params == 478_087_456


def test_defaults_transformers_fills_in() -> None:
    """No layer_types: five sliding, one full, the last forced full; no global_head_dim: 512; no sliding_window: 512;
    num_global_key_value_heads ignored without attention_k_eq_v (Gemma4TextConfig.__post_init__)."""
    text = {
        "model_type": "gemma4_text",
        "num_hidden_layers": 8,
        "hidden_size": 256,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 64,
        "num_global_key_value_heads": 1,
        "intermediate_size": 512,
        "vocab_size": 1000,
    }
    facts = facts_from_config({"model_type": "gemma4", "text_config": text}, "tiny")
    assert (facts.sliding_layers, facts.sliding_window) == (6, 512)  # layers 5 and 7 full
    assert (facts.full_kv_heads, facts.full_head_dim) == (2, 512)
    with_equal = facts_from_config({"model_type": "gemma4", "text_config": {**text, "attention_k_eq_v": True}}, "t")
    assert with_equal.full_kv_heads == 1
    assert facts.tie_word_embeddings  # Gemma4TextConfig.tie_word_embeddings defaults to true


def test_a_bad_gemma4_field_is_named_not_raised() -> None:
    """A field of the wrong type is a ConfigFieldError naming it (REF003), never a traceback."""
    from servespec.knowledge.config_fields import ConfigFieldError

    config = json.loads(CONFIG_26B.read_text())
    config["text_config"]["num_kv_shared_layers"] = "18"
    with pytest.raises(ConfigFieldError, match="num_kv_shared_layers"):
        facts_from_config(config, "g")


def test_a_lock_keeps_the_audio_tower() -> None:
    """models.lock.yaml keeps audio_config beside vision_config: a locked E4B config gives the same facts."""
    from servespec.knowledge.lock import locked_config
    from servespec.knowledge.models import _catalog

    for repo in ("google/gemma-4-E4B-it", "google/gemma-4-26B-A4B"):
        config = _catalog()[repo.lower()]["config"]
        assert facts_from_config(locked_config(config), repo) == facts_from_config(config, repo), repo


def test_the_attention_part_is_gemma4_s_own() -> None:
    """quant_parts' attention share (part_params): the 31B's 50 sliding layers of q/o 32 x 256 and k/v 16 x 256, and 10
    full layers of q/o 32 x 512 and k only 4 x 512 (attention_k_eq_v; the module tree of the 31B-it report shows
    k_proj 5376 -> 2048 and no v_proj), with q_norm and k_norm."""
    from servespec.knowledge.models import part_params

    facts = catalogued("google/gemma-4-31B-it")
    assert facts is not None
    h = 5376
    sliding = 50 * (2 * h * 8192 + 2 * h * 4096 + 2 * 256)
    full = 10 * (2 * h * 16384 + h * 2048 + 2 * 512)
    assert part_params(facts)["attention"] == sliding + full
