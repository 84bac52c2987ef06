"""Issue 23: SGLang sizes a DeepSeek Sparse Attention model's token pool with its own cell per release.

DeepSeek-V3.2's real config (61 layers, kv_lora_rank 512, qk_rope_head_dim 64, index_head_dim 128):
SGLang's ``cell_size`` per token is, per layer, the MLA latent in the cache's dtype and layout plus,
from 0.5.4, the indexer's FP8 keys and a float32 scale (132 bytes). Arithmetic from the releases'
sources (engines/sglang/dsa.py lists the lines).
"""

from __future__ import annotations

from typing import Any

import pytest

from servespec.engines import get
from servespec.knowledge import gpus, models
from servespec.knowledge.memory import EstimateInput, GpuEstimate

LAYERS = 61
INDEXER = 128 + 4  # index_head_dim FP8 bytes + one float32 scale per 128
BF16_LATENT = (512 + 64) * 2
FP8_RAW = 512 + 64
FP8_SCALED = 512 + 512 // 128 * 4 + 64 * 2  # 656: FlashMLA's FP8 layout, rope in bfloat16


def _estimate(version: str, gpu: str, **options: Any) -> GpuEstimate:
    engine = get("sglang")
    model = models.catalogued("deepseek-ai/DeepSeek-V3.2")
    assert model is not None
    found = engine.estimate(
        EstimateInput(
            engine="sglang",
            release=engine.select(version).release,
            model=model,
            gpu=gpus.resolve(gpu),
            tensor_parallel=8,
            max_model_len=8192,
            options=options,
            engine_version=version,
            kv_cache_dtype_option="kv_cache_dtype",
        )
    )
    assert found is not None
    return found


CASES = [
    # (release, GPU, options, bytes per token per layer)
    ("0.5.3", "NVIDIA H200", {}, BF16_LATENT),  # the pool exists, the cell does not count the indexer
    ("0.5.4", "NVIDIA H200", {}, BF16_LATENT + INDEXER),  # Hopper: bfloat16 by default
    ("0.5.10", "NVIDIA H200", {"kv_cache_dtype": "fp8_e4m3"}, FP8_RAW + INDEXER),
    ("0.5.16", "NVIDIA H200", {"kv_cache_dtype": "fp8_e4m3"}, FP8_RAW + INDEXER),  # the cell before the layout
    ("0.5.17", "NVIDIA H200", {"kv_cache_dtype": "fp8_e4m3"}, FP8_SCALED + INDEXER),  # calculate_mla_kv_cache_dim
    ("0.5.23", "NVIDIA H200", {"kv_cache_dtype": "fp8_e4m3"}, FP8_SCALED + INDEXER),  # flashmla_kv: 48,068 B
    ("0.5.10", "NVIDIA B200", {}, FP8_RAW + INDEXER),  # capability 10: FP8 by default
    ("0.5.23", "NVIDIA B200", {}, FP8_RAW + INDEXER),  # Blackwell's FP8 default backend trtllm: raw layout
    ("0.5.23", "NVIDIA B200", {"dsa_prefill_backend": "flashmla_kv", "dsa_decode_backend": "flashmla_kv"},
     FP8_SCALED + INDEXER),
]  # fmt: skip


@pytest.mark.parametrize(("version", "gpu", "options", "per_layer"), CASES)
def test_dsa_cell_per_release(version: str, gpu: str, options: dict[str, Any], per_layer: int) -> None:
    found = _estimate(version, gpu, **options)
    assert found.kv_bytes_per_token == LAYERS * per_layer
    assert abs(found.kv_tokens * found.kv_bytes_per_token / 1024**3 - found.kv_cache_gib) < 0.01


def test_release_0_5_3_fixes_the_fraction_for_dsa() -> None:
    """server_args.py L823 of v0.5.3: mem_fraction_static = 0.8 for DeepSeek NSA, whatever was given."""
    assert _estimate("0.5.3", "NVIDIA H200", mem_fraction_static=0.9).claimed_fraction == 0.8
    assert _estimate("0.5.4", "NVIDIA H200", mem_fraction_static=0.9).claimed_fraction == 0.9


def test_mla_without_indexer_keeps_the_latent() -> None:
    """DeepSeek-V3 (no index_topk): the plain MLA cell, on every release."""
    engine = get("sglang")
    model = models.catalogued("deepseek-ai/DeepSeek-V3")
    assert model is not None and not model.is_sparse
    found = engine.estimate(
        EstimateInput(
            engine="sglang",
            release=engine.select("0.5.23").release,
            model=model,
            gpu=gpus.resolve("NVIDIA H200"),
            tensor_parallel=8,
            max_model_len=8192,
            engine_version="0.5.23",
            kv_cache_dtype_option="kv_cache_dtype",
        )
    )
    assert found is not None and found.kv_bytes_per_token == LAYERS * BF16_LATENT
