"""vLLM's LoRA slots in the memory plan (issue 24, item 1): the A/B tensors ``create_lora_weights`` allocates.

vllm/lora/layers/base_linear.py (v0.11.0) L36-L80: per wrapped layer and slice, ``lora_a_stacked``
(max_loras, 1, max_lora_rank, input_size) and ``lora_b_stacked`` (max_loras, 1, output_size,
max_lora_rank), a column-parallel layer with its whole input and its output shard, a row-parallel
one with its input shard and its whole output.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from servespec.engines import get
from servespec.engines.vllm.memory import rejection_warmup_gib
from servespec.knowledge import gpus
from servespec.knowledge.adapters import parse, vllm_lora_slot_bytes
from servespec.knowledge.memory import EstimateInput
from tests.knowledge.test_memory import facts

LLAMA_8B = "meta-llama/Llama-3.1-8B-Instruct"


def _by_hand(tp: int) -> int:
    """Llama 3.1 8B (h 4096, 32 heads and 8 KV heads of 128, intermediate 14336, 32 layers), one slot of rank 16."""
    h, q, kv, inter = 4096, 32 * 128, 8 * 128, 14336
    qkv = 3 * 16 * h + 16 * (q + 2 * kv) // tp  # MergedQKVParallelLinearWithLoRA: three A slices, B per shard
    o = 16 * q // tp + 16 * h  # RowParallelLinearWithLoRA
    gate_up = 2 * 16 * h + 2 * 16 * inter // tp  # MergedColumnParallelLinearWithLoRA
    down = 16 * inter // tp + 16 * h
    return 32 * (qkv + o + gate_up + down) * 2  # bf16


def test_slot_bytes_follow_the_tensors_vllm_allocates() -> None:
    llama = facts(LLAMA_8B)
    assert vllm_lora_slot_bytes(llama, 1, 16, 1, 2.0, False) == _by_hand(1) == 80 * 2**20
    assert vllm_lora_slot_bytes(llama, 1, 16, 2, 2.0, False) == _by_hand(2)
    # slots and rank scale it linearly: 4 slots of rank 64 = 16x
    assert vllm_lora_slot_bytes(llama, 4, 64, 1, 2.0, False) == 16 * _by_hand(1)
    # fully_sharded_loras splits the column layers' A and the row layers' B too
    assert vllm_lora_slot_bytes(llama, 1, 16, 2, 2.0, True) < _by_hand(2)


def test_the_vllm_plan_counts_the_slots_before_the_kv_cache() -> None:
    release = get("vllm").select("0.11.0").release
    base = EstimateInput("vllm", release, facts(LLAMA_8B), gpus.resolve("NVIDIA L4"), max_model_len=8192)
    without = get("vllm").estimate(base)
    with_adapters = get("vllm").estimate(replace(base, adapters=1, options={"max_loras": 4, "max_lora_rank": 64}))
    defaults = get("vllm").estimate(replace(base, adapters=1))
    assert without is not None and with_adapters is not None and defaults is not None
    slots = 16 * 80 / 1024  # 4 x 64 = 16x one rank-16 slot (80 MiB) = 1.25 GiB
    assert with_adapters.beside_gib == pytest.approx(slots, abs=0.001)
    assert with_adapters.overhead_gib - without.overhead_gib == pytest.approx(slots, abs=0.01)
    assert without.kv_cache_gib - with_adapters.kv_cache_gib == pytest.approx(slots, abs=0.01)
    # the release's defaults (max_loras 1, max_lora_rank 16: vllm/config/lora.py, every catalogued release)
    assert defaults.beside_gib == pytest.approx(80 / 1024, abs=0.001)
    assert without.beside_gib == 0.0
    assert any("LoRA slots" in note for note in with_adapters.notes)


def test_adapter_config_fields_are_read_as_vllm_reads_them() -> None:
    # a real PEFT adapter_config.json shape (peft 0.13 LoraConfig.save_pretrained)
    config = {
        "alpha_pattern": {},
        "base_model_name_or_path": "meta-llama/Llama-3.1-8B-Instruct",
        "bias": "none",
        "fan_in_fan_out": False,
        "lora_alpha": 16,
        "lora_dropout": 0.05,
        "modules_to_save": None,
        "peft_type": "LORA",
        "r": 8,
        "rank_pattern": {"model.layers.0.self_attn.o_proj": 32},
        "target_modules": ["q_proj", "v_proj", "o_proj"],
        "task_type": "CAUSAL_LM",
        "use_dora": False,
        "use_rslora": False,
    }
    found = parse(config, "the Hub")
    assert found.rank == 32  # max(r, *rank_pattern.values()): vLLM 0.33.0 peft_helper.py validate_legal
    assert found.base_model == "meta-llama/Llama-3.1-8B-Instruct"
    assert found.target_modules == ("q_proj", "v_proj", "o_proj")
    assert not found.use_dora and found.modules_to_save == ()
    # wrong-typed fields read as absent, never as a rank
    assert parse({"r": "64", "rank_pattern": [1], "target_modules": 3}, "x").rank is None


def test_a_draft_model_adds_its_weights_and_its_kv_per_token() -> None:
    """vLLM loads the draft beside the target and caches each token in the draft's layers too
    (v0.11.0 vllm/v1/worker/gpu_model_runner.py get_kv_cache_spec: every attention layer, one pool)."""
    release = get("vllm").select("0.11.0").release
    base = EstimateInput("vllm", release, facts(LLAMA_8B), gpus.resolve("NVIDIA L4"), max_model_len=8192)
    without = get("vllm").estimate(base)
    drafted = get("vllm").estimate(replace(base, speculative="draft", draft=facts("meta-llama/Llama-3.2-1B-Instruct")))
    assert without is not None and drafted is not None
    # Llama 3.2 1B: 1.24e9 parameters in bf16 (its config's tied embeddings counted once)
    assert drafted.beside_gib == pytest.approx(2.30, abs=0.01)
    # the overhead grows by the draft's weights and by the sampler warm-up's rejection logits (one bf16 row per
    # dummy request on 0.11.0: 256 x 128,256 x 2 B), the profile's peak here being the sampler's
    rejection = rejection_warmup_gib(replace(base, speculative="draft"), 256)
    assert rejection == pytest.approx(256 * 128256 * 2 / 2**30)
    assert drafted.overhead_gib - without.overhead_gib == pytest.approx(drafted.beside_gib + rejection, abs=0.01)
    # KV per token: 128 KiB for the 8B (32 layers x 2 x 8 heads x 128 x 2 B) + 32 KiB for the 1B (16 x 2 x 8 x 64 x 2)
    assert without.kv_bytes_per_token == 128 * 1024
    assert drafted.kv_bytes_per_token == 160 * 1024
    ngram = get("vllm").estimate(replace(base, speculative="ngram"))
    assert ngram is not None and ngram.beside_gib == 0.0 and ngram.kv_bytes_per_token == without.kv_bytes_per_token


def test_mtp_runs_one_more_layer_of_the_target() -> None:
    release = get("vllm").select("0.11.0").release
    model = facts(LLAMA_8B)
    base = EstimateInput("vllm", release, model, gpus.resolve("NVIDIA H100 80GB HBM3"), max_model_len=8192)
    without = get("vllm").estimate(base)
    mtp = get("vllm").estimate(replace(base, speculative="mtp"))
    assert without is not None and mtp is not None
    assert mtp.kv_bytes_per_token == without.kv_bytes_per_token * 33 / 32  # one more layer's KV
    assert mtp.beside_gib == pytest.approx(without.weights_gib / 32, abs=0.01)
