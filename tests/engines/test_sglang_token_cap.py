"""SGLang ``--max-total-tokens`` (engines/sglang/memory.py ``TOKEN_CAP_SOURCE``).

Every catalogued release takes ``min(profiled tokens, max_total_tokens)`` before it allocates the pools, then rounds
down to a multiple of ``page_size``: the pool holds the cap when the memory would hold more, and the memory's own
figure when the cap is above it."""

from __future__ import annotations

from typing import Any

import pytest

from servespec import engines
from servespec.knowledge import gpus, models
from servespec.knowledge.memory import GIB, EstimateInput, GpuEstimate

SGLANG = engines.get("sglang")


def _plan(version: str, **options: Any) -> GpuEstimate:
    card = gpus.resolve("NVIDIA H100 80GB HBM3")
    model = models.catalogued("Qwen/Qwen3-14B")
    assert card is not None and model is not None
    inp = EstimateInput(
        engine="sglang",
        release=SGLANG.select(version).release,
        model=model,
        gpu=card,
        max_model_len=4096,
        engine_version=version,
        options={"mem_fraction_static": 0.85, **options},
    )
    found = SGLANG.estimate(inp)
    assert found is not None
    return found


@pytest.mark.parametrize("version", ["0.4.0", "0.4.7", "0.5.9", "0.5.23"])
def test_the_pool_holds_the_cap_when_the_memory_holds_more(version: str) -> None:
    free = _plan(version)
    assert free.kv_tokens > 20480
    capped = _plan(version, max_total_tokens=20480)
    assert capped.kv_tokens == 20480
    assert capped.kv_cache_gib == pytest.approx(20480 * free.kv_bytes_per_token / GIB, abs=0.01)
    assert capped.weights_gib == free.weights_gib
    assert any("max_total_tokens caps the pool at 20,480" in note for note in capped.notes)


def test_a_cap_above_the_memory_changes_nothing() -> None:
    free = _plan("0.5.23")
    above = _plan("0.5.23", max_total_tokens=free.kv_tokens * 2)
    assert above.kv_tokens == free.kv_tokens and above.kv_cache_gib == free.kv_cache_gib
    assert not any("max_total_tokens" in note for note in above.notes)


def test_the_cap_is_rounded_down_to_whole_pages() -> None:
    assert _plan("0.5.23", max_total_tokens=20500, page_size=64).kv_tokens == 20480
