"""DeepSeek V4 (model_type deepseek_v4): sized from its config as vLLM's DeepseekV4ForCausalLM builds it
(knowledge/deepseek_v4.py); its KV cache is not sized by any engine (``KV_UNMODELLED``)."""

from __future__ import annotations

import json

import pytest

from servespec import engines
from servespec.knowledge import deepseek_v4, gpus
from servespec.knowledge.memory import EstimateInput, weight_bytes
from servespec.knowledge.models import UnsizedArchitectureError, catalogued, facts_from_config
from servespec.knowledge.sources import _config_facts
from tests.conftest import REPO

FLASH_CONFIG = REPO / "tests" / "data" / "model_configs" / "deepseek-ai--DeepSeek-V4-Flash_config.json"


def test_flash_counts_the_cards_284b() -> None:
    """The card: 284B parameters (13B activated), without the MTP layer as for DeepSeek V3; llama.cpp's GGUF of the
    checkpoint logs ``model params = 284.33 B`` (ggml-org/llama.cpp issue 22319)."""
    facts = catalogued("deepseek-ai/DeepSeek-V4-Flash")
    assert facts is not None
    assert facts.params == 284_332_245_847
    assert facts.params == pytest.approx(284e9, rel=0.01)
    assert round(facts.params / 1e9, 2) == 284.33
    assert (facts.layers, facts.experts, facts.active_experts, facts.dense_layers, facts.mtp_layers) == (
        43,
        256,
        6,
        0,
        1,
    )
    assert len(facts.compress_ratios) == 43 and facts.compress_ratios[:3] == (0, 0, 4)


def test_the_vendored_flash_config_file_resolves_to_the_catalogued_facts() -> None:
    """tests/data/model_configs' copy (the same aiconfigurator file) now resolves instead of being refused."""
    facts = facts_from_config(json.loads(FLASH_CONFIG.read_text()), "deepseek-ai/DeepSeek-V4-Flash")
    catalogued_facts = catalogued("deepseek-ai/DeepSeek-V4-Flash")
    assert catalogued_facts is not None
    assert facts.params == catalogued_facts.params
    assert facts.compress_ratios == catalogued_facts.compress_ratios


def test_pro_counts_the_cards_16t_to_its_two_figures() -> None:
    """The card's 1.6T (49B activated) has two significant figures; the count without MTP is 1.573T (1.7 % under)."""
    facts = catalogued("deepseek-ai/DeepSeek-V4-Pro")
    assert facts is not None
    assert facts.params == 1_572_997_209_443
    assert round(facts.params / 1e11) == 16
    assert len(facts.compress_ratios) == 61 and facts.compress_ratios[:3] == (128, 128, 4)


def test_the_count_is_the_layout_by_hand() -> None:
    """A two-layer config whose parts are counted by hand from vLLM's modules (deepseek_v4.py docstring)."""
    h, heads, d, q, o, g, hc, v, e, m = 16, 4, 8, 6, 5, 2, 2, 10, 4, 3
    config = {
        "model_type": "deepseek_v4",
        "num_hidden_layers": 2,
        "hidden_size": h,
        "num_attention_heads": heads,
        "num_key_value_heads": 1,
        "head_dim": d,
        "q_lora_rank": q,
        "o_lora_rank": o,
        "o_groups": g,
        "qk_rope_head_dim": 4,
        "hc_mult": hc,
        "vocab_size": v,
        "n_routed_experts": e,
        "n_shared_experts": 1,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": m,
        "num_hash_layers": 1,
        "index_n_heads": 3,
        "index_head_dim": 4,
        "compress_ratios": [4, 128, 0],
        "tie_word_embeddings": False,
    }
    attention = h * q + h * d + q + q * heads * d + d + heads * d * o + g * o * h + heads
    mix = (2 + hc) * hc
    layer = attention + 2 * h + 2 * mix * hc * h + 2 * mix + 6 + e * h + 3 * h * m + e * 3 * h * m
    c4 = (4 * 2 * d + h * 4 * d + d) + (q * 3 * 4 + h * 3 + 2 * 4) + (4 * 2 * 4 + h * 4 * 4 + 4)
    c128 = 128 * d + h * 2 * d + d
    model = 2 * v * h + h + hc * hc * h + hc + 1
    expected = 2 * layer + e + c4 + c128 + model  # the second layer (past num_hash_layers) has the score bias
    facts = facts_from_config(config, "tiny")
    assert facts.params == expected
    assert deepseek_v4.active_params(config) == expected - 2 * (e - 2) * 3 * h * m


def test_flash_weighs_mxfp4_experts_and_fp8_linear_layers() -> None:
    """expert_dtype fp4: routed experts at 4.25 bits (E2M1 + a ue8m0 scale per 32), other linear layers block FP8,
    embeddings and LM head in bf16; vLLM keeps the compressors' and indexer's unquantized projections and the norms
    in bf16, and attn_sink, mHC, ape and the routers' score bias in float32."""
    facts = catalogued("deepseek-ai/DeepSeek-V4-Flash")
    card = gpus.resolve("NVIDIA H200")
    assert facts is not None and card is not None
    inp = EstimateInput(engine="vllm", release=None, model=facts, gpu=card, max_model_len=8192)
    h, layers, q, d, heads, hc, mix, e, hi, di = 4096, 43, 1024, 512, 64, 4, 24, 256, 64, 128
    c4, c128 = 21, 20  # compress_ratios: two 0s, then 4 and 128 alternating, 4 last
    assert (facts.compress_ratios.count(4), facts.compress_ratios.count(128)) == (c4, c128)
    wide = layers * (q + d + 2 * h) + h + c4 * (h * 4 * d + d) + c128 * (h * 2 * d + d)
    wide += c4 * (h * hi + 2 * di + h * 4 * di + di)
    full = layers * (heads + 2 * mix * hc * h + 2 * mix + 6) + hc * hc * h + hc + 1 + e * (layers - 3)
    full += c4 * 4 * 2 * d + c128 * 128 * d + c4 * 4 * 2 * di
    experts = layers * e * 3 * h * 2048
    embed = 129280 * h
    fp8 = facts.params - experts - 2 * embed - wide - full
    expected = experts * 4.25 / 8 + fp8 * 1.0 + 2 * embed * 2.0 + wide * 2.0 + full * 4.0
    assert weight_bytes(inp) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize(("engine", "version"), [("vllm", "0.34.0"), ("sglang", "0.5.23")])
def test_no_engine_sizes_the_compressed_kv_cache(engine: str, version: str) -> None:
    """No plan rather than a KV figure from a layout that is not the engine's (knowledge/deepseek_v4.py)."""
    unit = engines.get(engine)
    facts = catalogued("deepseek-ai/DeepSeek-V4-Flash")
    card = gpus.resolve("NVIDIA H200")
    assert facts is not None and card is not None
    inp = EstimateInput(
        engine=engine,
        release=unit.select(version).release,
        model=facts,
        gpu=card,
        tensor_parallel=4,
        max_model_len=65536,
        engine_version=version,
    )
    assert unit.estimate(inp) is None
    assert "compress_ratio" in deepseek_v4.KV_UNMODELLED


def test_a_bad_compress_ratios_field_is_a_clear_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    config = json.loads(FLASH_CONFIG.read_text())
    with pytest.raises(ValueError, match="compress_ratios"):
        facts_from_config({**config, "compress_ratios": [4] * 10}, "short")
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**config, "compress_ratios": "4"}))
    answer = _config_facts(path)
    assert answer.facts is None and "compress_ratios" in answer.problem
    other = tmp_path / "other"
    other.mkdir()
    (other / "config.json").write_text(json.dumps({**config, "expert_dtype": "int2"}))
    assert "expert_dtype" in _config_facts(other / "config.json").problem


def test_sglangs_deepseek_ref_copies_stay_refused() -> None:
    config = json.loads((REPO / "tests/data/model_configs/sgl-project--DeepSeek-V4-Flash-FP8_config.json").read_text())
    with pytest.raises(UnsizedArchitectureError, match="deepseek_ref"):
        facts_from_config(config, "sgl-project/DeepSeek-V4-Flash-FP8")


def test_a_lock_keeps_what_the_count_reads() -> None:
    """models.lock.yaml keeps compress_ratios, the low-rank and mHC fields, expert_dtype and quantization_config."""
    from servespec.knowledge.lock import locked_config

    config = json.loads(FLASH_CONFIG.read_text())
    locked = facts_from_config(locked_config(config), "deepseek-ai/DeepSeek-V4-Flash")
    direct = facts_from_config(config, "deepseek-ai/DeepSeek-V4-Flash")
    assert (locked.params, locked.compress_ratios, locked.quant_parts) == (
        direct.params,
        direct.compress_ratios,
        direct.quant_parts,
    )
