"""Vision-language models: the tower, projector and text model counted as transformers builds them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from servespec.knowledge import config_fields
from servespec.knowledge.models import catalogued, facts_from_config
from tests.conftest import REPO

CASES: dict[str, Any] = json.loads((REPO / "tests" / "data" / "transformers_vision_param_counts.json").read_text())[
    "cases"
]
# Qwen3VLMoeConfig's defaults tie the text config's embeddings (text_config.tie_word_embeddings true) but not the
# composite model's (false at the top): transformers 5.24 builds an lm_head of its own there. Released Qwen3-VL MoE
# configs say false at the top and nothing in text_config, so only the tower of this default case is compared.
_TIE_DISAGREES = {"Qwen3VLMoeConfig"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_tower_and_model_match_transformers(name: str) -> None:
    """Qwen2-VL, Qwen2.5-VL, Qwen3-VL (dense and MoE), Llama 3.2 Vision (mllama), Llama 4 and LLaVA-NeXT with
    SigLIP (granite-vision's shape): the vision part and the whole model equal transformers' meta-device build
    (scripts/vision_param_counts.py)."""
    case = CASES[name]
    facts = facts_from_config(case["config"], name)
    assert facts.vision_params == case["vision_params"], name
    if name not in _TIE_DISAGREES:
        assert facts.params == case["params"], name


def test_the_cases_cover_every_exact_tower() -> None:
    """The data file holds a case of each tower servespec counts exactly (knowledge/vision.py)."""
    vision_types = {str(case["config"]["model_type"]) for case in CASES.values()}
    assert {"qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe", "mllama", "llama4", "llava_next"} <= vision_types


def test_qwen2_vl_reads_embed_dim_not_the_text_width() -> None:
    """Qwen2-VL's vision_config gives ``embed_dim`` (the tower's width) beside ``hidden_size`` (the merger's output,
    the text width): the tower is 32 blocks of 1280, not of the text width."""
    case = CASES["Qwen2VLConfig"]
    vision = case["config"]["vision_config"]
    assert vision["embed_dim"] == 1280 and vision["hidden_size"] != 1280
    wider = {**case["config"], "vision_config": {**vision, "embed_dim": 1536}}
    assert facts_from_config(wider, "q").vision_params > case["vision_params"] * 1.3


def test_qwen2_vl_sliding_window_is_off_unless_use_sliding_window() -> None:
    """Qwen2-VL and Qwen2.5-VL configs give ``sliding_window`` 32768 with ``use_sliding_window`` false: every layer
    is full attention (transformers Qwen2VLTextConfig), as for Qwen2. The released config.json files have no
    ``layer_types`` (transformers 5 writes one), so it is left out here."""
    for name in ("Qwen2VLConfig", "Qwen2_5_VLConfig"):
        text = {key: value for key, value in CASES[name]["config"]["text_config"].items() if key != "layer_types"}
        text.update(sliding_window=32768, use_sliding_window=False)
        facts = facts_from_config({**CASES[name]["config"], "text_config": text}, name)
        assert facts.sliding_layers == 0 and facts.model_type.startswith("qwen2")
        text["use_sliding_window"] = True
        assert facts_from_config({**CASES[name]["config"], "text_config": text}, name).sliding_layers > 0


def test_mllama_cross_attention_layers_are_read_and_cached_like_the_others() -> None:
    """Llama 3.2 Vision: 8 of the 40 text layers are cross-attention layers with norms and gates of their own;
    vLLM 0.6.3 sizes a KV block over all ``num_hidden_layers`` (worker/cache_engine.py get_cache_block_size reads
    ``get_num_attention_layers``: 40) and allocates the image's cross-attention blocks from the same pool
    (core/block_manager_v2.py ``cross_block_tables``), so the facts keep 40 full-attention layers."""
    case = CASES["MllamaConfig"]
    facts = facts_from_config(case["config"], "mllama")
    assert (facts.layers, facts.cross_layers, facts.sliding_layers, facts.linear_layers) == (40, 8, 0, 0)
    text = {key: value for key, value in case["config"]["text_config"].items() if key != "cross_attention_layers"}
    with pytest.raises(config_fields.MissingFieldsError, match="cross_attention_layers"):
        facts_from_config({**case["config"], "text_config": text}, "mllama")


def test_llama4_catalog_counts_its_vision_tower() -> None:
    """Llama 4 Scout and Maverick: the catalogued config.json now carries the vision_config (aiconfigurator at
    64c5ddb6), so the 34-layer tower and its projector (0.87B) are in the weights; Scout equals transformers."""
    scout = catalogued("meta-llama/Llama-4-Scout-17B-16E-Instruct")
    maverick = catalogued("meta-llama/Llama-4-Maverick-17B-128E-Instruct")
    assert scout is not None and maverick is not None
    assert scout.params == CASES["meta-llama/Llama-4-Scout-17B-16E-Instruct"]["params"]
    assert scout.vision_params == maverick.vision_params == pytest.approx(0.872e9, rel=1e-3)
    assert scout.params == pytest.approx(109e9, rel=0.01) and maverick.params == pytest.approx(400e9, rel=0.02)


def test_catalogued_vision_language_models_match_their_published_sizes() -> None:
    """Qwen2-VL-2B-Instruct (2.21B on its model page; vLLM 0.10.2 loaded 4.1513 GiB of bfloat16 weights,
    vllm_logs/081) and Llama-3.2-11B-Vision (10.6B on its model card), each counted with its tower."""
    qwen = catalogued("Qwen/Qwen2-VL-2B-Instruct")
    assert qwen is not None and qwen.model_type == "qwen2_vl" and qwen.sliding_layers == 0
    assert qwen.params == pytest.approx(2.21e9, rel=0.005)
    assert qwen.params * 2 / 2**30 == pytest.approx(4.1513, abs=0.05)
    mllama = catalogued("meta-llama/Llama-3.2-11B-Vision")
    assert mllama is not None and (mllama.layers, mllama.cross_layers, mllama.kv_heads) == (40, 8, 8)
    assert mllama.params == pytest.approx(10.6e9, rel=0.01)


def test_a_lock_keeps_what_the_towers_read() -> None:
    """models.lock.yaml keeps scalars and lists of scalars of vision_config: the facts of a locked config are the
    same (mllama's supported_aspect_ratios, a list of lists, is dropped; its default, 8 ratios, is read)."""
    from servespec.knowledge.lock import locked_config

    repos = (
        "Qwen/Qwen2-VL-2B-Instruct",
        "meta-llama/Llama-3.2-11B-Vision",
        "meta-llama/Llama-4-Scout-17B-16E-Instruct",
    )
    for repo in repos:
        facts = catalogued(repo)
        assert facts is not None
        config = _catalog_config(repo)
        assert facts_from_config(locked_config(config), repo) == facts_from_config(config, repo), repo
    for name in ("granite-vision shape (LlavaNext, granite + SigLIP)", "Qwen2_5_VLConfig", "MllamaConfig"):
        config = CASES[name]["config"]
        assert facts_from_config(locked_config(config), name).params == facts_from_config(config, name).params, name


def _catalog_config(repo: str) -> dict[str, Any]:
    from servespec.knowledge.models import _catalog

    config: dict[str, Any] = _catalog()[repo.lower()]["config"]
    return config
