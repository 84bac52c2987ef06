"""The estimator's arithmetic on known quantities."""

from __future__ import annotations

import pytest

from servespec.engines import get
from servespec.knowledge import gpus
from servespec.knowledge.memory import EstimateInput, kv_bytes_per_token, weight_bytes
from servespec.knowledge.models import catalogued


def facts(repo: str):  # type: ignore[no-untyped-def]
    found = catalogued(repo)
    assert found is not None
    return found


def test_kv_bytes_per_token_gqa_split_and_replication() -> None:
    llama = facts("meta-llama/Llama-3.1-8B-Instruct")
    # 32 layers x 2 (K and V) x 8 KV heads x 128 x 2 bytes = 128 KiB per token
    assert kv_bytes_per_token(llama, 2.0, 1, 1) == 131072
    assert kv_bytes_per_token(llama, 2.0, 2, 1) == 65536
    assert kv_bytes_per_token(llama, 2.0, 16, 1) == 131072 / 8  # one replicated head per GPU


def test_kv_bytes_per_token_mla_is_not_split() -> None:
    deepseek = facts("deepseek-ai/DeepSeek-V3")
    # 61 layers x (kv_lora_rank 512 + rope 64) x 2 bytes, on every tensor-parallel rank
    assert kv_bytes_per_token(deepseek, 2.0, 8, 1) == 61 * 576 * 2


def test_weights_by_quantization() -> None:
    llama = facts("meta-llama/Llama-3.1-70B-Instruct")
    bf16 = weight_bytes(EstimateInput("vllm", None, llama, None))
    fp8 = weight_bytes(EstimateInput("vllm", None, llama, None, quantization="fp8"))
    awq = weight_bytes(EstimateInput("vllm", None, llama, None, quantization="awq"))
    assert bf16 / 2**30 == pytest.approx(131.4, rel=0.01)
    assert fp8 < bf16 * 0.55 and awq < fp8 * 0.6


def test_gguf_bits_follow_llama_quantize_table() -> None:
    release = get("llama.cpp").select("b11312").release
    llama = facts("meta-llama/Llama-3.1-8B-Instruct")
    size = weight_bytes(EstimateInput("llama.cpp", release, llama, None, quantization="gguf", gguf_type="Q4_K_M"))
    assert size / 2**30 == pytest.approx(4.58, rel=0.01)  # "4.58G ... @ Llama-3-8B" in quantize.cpp


def test_vllm_budget_and_tokens() -> None:
    release = get("vllm").select("0.11.0").release
    plan = get("vllm").estimate(
        EstimateInput(
            "vllm",
            release,
            facts("meta-llama/Llama-3.1-8B-Instruct"),
            gpus.resolve("NVIDIA A100-SXM4-80GB"),
            max_model_len=8192,
        )
    )
    assert plan is not None
    assert plan.weights_gib == pytest.approx(14.96, abs=0.05)
    assert plan.kv_tokens % 16 == 0
    assert plan.kv_cache_gib == pytest.approx(0.9 * plan.total_gib - plan.weights_gib - plan.overhead_gib, abs=0.02)
    assert plan.max_sequences == pytest.approx(plan.kv_tokens / 8192, abs=0.01)


def test_gguf_engine_on_cpu_uses_host_memory() -> None:
    release = get("llama.cpp").select("b11312").release
    plan = get("llama.cpp").estimate(
        EstimateInput(
            "llama.cpp",
            release,
            facts("meta-llama/Llama-3.2-1B-Instruct"),
            None,
            quantization="gguf",
            gguf_type="Q8_0",
            max_model_len=4096,
            options={"parallel": 2},
            host_memory_gib=16,
        )
    )
    assert plan is not None and plan.total_gib == 16 and plan.kv_tokens == 8192
