"""SGLang with a hybrid linear-attention model (engines/sglang/memory.py ``MAMBA_SPLIT_SOURCE``).

SGLang gives part of the memory left after ``mem_fraction_static`` to the recurrent states of the Mamba / Gated
DeltaNet layers (``handle_max_mamba_cache``); the catalogue does not carry that split, so the estimator declines
rather than size the whole rest as KV (about twice the pool a Qwen3.5-9B start-up logged)."""

from __future__ import annotations

import pytest

from servespec import engines
from servespec.knowledge import gpus, models
from servespec.knowledge.memory import EstimateInput

SGLANG = engines.get("sglang")


def _inp(model_id: str, version: str) -> EstimateInput:
    card = gpus.resolve("NVIDIA GeForce RTX 4090")
    model = models.catalogued(model_id)
    assert card is not None and model is not None
    return EstimateInput(
        engine="sglang",
        release=SGLANG.select(version).release,
        model=model,
        gpu=card,
        tensor_parallel=2,
        max_model_len=32768,
        engine_version=version,
        options={"mem_fraction_static": 0.8},
    )


@pytest.mark.parametrize("version", ["0.5.4", "0.5.10", "0.5.23"])
def test_a_hybrid_linear_attention_model_gets_no_pool_figure(version: str) -> None:
    inp = _inp("Qwen/Qwen3.5-9B", version)
    assert inp.model.linear_layers == 24
    assert SGLANG.estimate(inp) is None


def test_a_full_attention_model_is_still_estimated() -> None:
    found = SGLANG.estimate(_inp("Qwen/Qwen3-8B", "0.5.10"))
    assert found is not None and found.kv_tokens > 0
