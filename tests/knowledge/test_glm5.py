"""GLM-5 / GLM-5.1 (``glm_moe_dsa``): the config read, the parameter count, and SGLang's memory for it on MI355X."""

from __future__ import annotations

import dataclasses

import pytest

from servespec.engines import get
from servespec.engines.sglang import dsa, mla
from servespec.engines.sglang.memory import ROCM_SETUP_NOTE
from servespec.knowledge.config_fields import MissingFieldsError
from servespec.knowledge.gpus import resolve
from servespec.knowledge.memory import GIB, EstimateInput
from servespec.knowledge.models import catalogued, facts_from_config, part_params

LAYERS, HIDDEN, Q_LORA, KV_LORA, ROPE = 78, 6144, 2048, 512, 64


def test_glm_5_1_config_reads_as_mla_with_a_sparse_indexer() -> None:
    facts = catalogued("zai-org/GLM-5.1")
    assert facts is not None
    assert (facts.model_type, facts.layers, facts.hidden_size, facts.dense_layers) == ("glm_moe_dsa", 78, 6144, 3)
    assert facts.is_mla and facts.is_sparse
    assert (facts.kv_lora_rank, facts.qk_rope_head_dim, facts.q_lora_rank) == (KV_LORA, ROPE, Q_LORA)
    assert (facts.index_n_heads, facts.index_head_dim, facts.index_topk) == (32, 128, 2048)
    assert (facts.experts, facts.active_experts, facts.moe_intermediate_size) == (256, 8, 2048)
    assert facts.max_position_embeddings == 202752
    # GLM-5.1 changes the weights, not the architecture: the same facts as GLM-5 but its name
    glm5 = catalogued("zai-org/GLM-5")
    assert glm5 is not None and dataclasses.replace(facts, name=glm5.name) == glm5


def test_glm_5_parameter_count_by_part() -> None:
    """744B without the MTP layer (the GLM-5 report); the routed experts are 75 MoE layers x 256 x 3 x 6144 x 2048."""
    facts = catalogued("zai-org/GLM-5.1")
    assert facts is not None
    assert facts.params == pytest.approx(744e9, rel=0.002)
    assert part_params(facts)["experts"] == 75 * 256 * 3 * HIDDEN * 2048


def test_a_config_without_the_indexer_width_says_so() -> None:
    config = {
        "model_type": "glm_moe_dsa", "num_hidden_layers": 78, "hidden_size": 6144, "num_attention_heads": 64,
        "kv_lora_rank": 512, "qk_rope_head_dim": 64, "index_topk": 2048, "index_n_heads": 32,
    }  # fmt: skip
    with pytest.raises(MissingFieldsError, match="index_head_dim"):
        facts_from_config(config, "partial")


def test_sglang_replicates_the_latent_down_projections_and_the_indexer() -> None:
    """ReplicatedLinear in v0.5.12: fused_qkv_a_proj_with_mqa, the indexer's wq_b and wk (stored like attention)
    and weights_proj (bfloat16): every tensor-parallel rank holds them whole."""
    facts = catalogued("zai-org/GLM-5.1")
    assert facts is not None
    stored, bf16 = mla.replicated_params(facts)
    assert stored == HIDDEN * (Q_LORA + KV_LORA + ROPE) + Q_LORA * 32 * 128 + HIDDEN * 128
    assert bf16 == HIDDEN * 32
    mxfp4 = dataclasses.replace(facts, quant_method="mxfp4", quant_bits=4.25)  # experts only: attention in bf16
    inp = EstimateInput(engine="sglang", release=None, model=mxfp4, gpu=None, tensor_parallel=8)
    assert mla.extra_gib(inp) == pytest.approx(LAYERS * (stored + bf16) * 2 * (1 - 1 / 8) / GIB)
    assert mla.extra_gib(dataclasses.replace(inp, tensor_parallel=1)) == 0.0
    dense = catalogued("Qwen/Qwen3-0.6B")
    assert dense is not None and mla.replicated_params(dense) == (0.0, 0.0)


def test_sglang_0_5_12_on_mi355x_sizes_the_fp8_dsa_cell_and_the_replicated_weights() -> None:
    """GLM-5.1 MXFP4 experts at TP8 on MI355X with --kv-cache-dtype fp8_e4m3: the cell is 78 x (576 + 132) bytes,
    the raw FP8 latent of the HIP kernels plus the indexer keys with their scales (as SGLang's own 'KV size' over
    '#tokens' gives on those logs: 182.18 GB / 3,542,208 tokens = 55,224 bytes)."""
    facts = catalogued("zai-org/GLM-5.1")
    assert facts is not None
    model = dataclasses.replace(facts, quant_method="mxfp4", quant_bits=4.25)
    sglang = get("sglang")
    inp = EstimateInput(
        engine="sglang",
        release=sglang.select("0.5.12").release,
        model=model,
        gpu=resolve("AMD Instinct MI355X"),
        tensor_parallel=8,
        max_model_len=202752,
        options={"mem_fraction_static": 0.85, "kv_cache_dtype": "fp8_e4m3"},
        engine_version="0.5.12",
        kv_cache_dtype_option="kv_cache_dtype",
    )
    assert dsa.cell_bytes(inp) == LAYERS * (576 + 132) == 55224
    plan = sglang.estimate(inp)
    assert plan is not None
    assert plan.kv_bytes_per_token == 55224
    assert any("whole on every rank" in note for note in plan.notes)
    assert plan.total_gib == pytest.approx(288.0)  # HIP reports the whole VRAM (no NVIDIA share)
    assert ROCM_SETUP_NOTE in plan.notes  # RCCL/aiter set-up memory: said, not guessed


def test_glm52_index_share_is_refused_naming_its_fields() -> None:
    """GLM-5.2 (same model type as GLM-5) shares indexer results between layers: servespec does not size that,
    so it names the fields instead of sizing an indexer in every layer; an all-"full" list (GLM-5 copies) is sized."""
    from servespec.knowledge import models

    base = models._catalog()["zai-org/glm-5.1"]["config"]
    kinds = ["full" if (layer - 3) % 4 == 0 else "shared" for layer in range(base["num_hidden_layers"])]
    shared = {**base, "indexer_types": kinds, "index_topk_freq": 4, "index_skip_topk_offset": 3}
    with pytest.raises(models.UnsizedArchitectureError) as err:
        models.facts_from_config(shared, "zai-org/GLM-5.2")
    assert "indexer_types" in str(err.value) and "index_topk_freq" in str(err.value)
    every = {**base, "indexer_types": ["full"] * base["num_hidden_layers"], "index_topk_freq": 1}
    assert models.facts_from_config(every, "GLM-5").params == models.facts_from_config(base, "GLM-5").params
