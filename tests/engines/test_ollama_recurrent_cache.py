"""Issue 23: Ollama's Go engine counts a Gated DeltaNet hybrid's recurrent states in its "kv cache" line.

Worked from the cited source, not from the code under test (https://github.com/ollama/ollama, v0.17.1-v0.24.0;
v0.15.5-v0.17.0 keep the same layout in model/models/qwen3next/cache.go and checkpoints.go, with
``checkpointCountDefault = 32``, for qwen3next alone):

- kvcache/recurrent.go: per linear-attention layer, ``Zeros(ml.DTypeF32, convDim*convChannels, maxSequences)``
  and ``Zeros(ml.DTypeF32, recurrentStateSize, maxSequences)``; ``DefaultCheckpointCount = 24``;
- kvcache/recurrent_checkpoints.go: the reserve pass makes every slot's 24 checkpoints of both states up front
  (``reserveCheckpointConv`` / ``reserveCheckpointRecurrent``, float32, one tensor each);
- model/models/qwen3next/model.go (registers qwen35, qwen35moe, qwen3next): ``convDim = conv_kernel - 1``,
  ``convChannels = d_inner + 2 × n_group × d_state``, ``deltaStateSize = headVDim² × numVHeads``; the
  full-attention layers keep the causal K/V (kvcache/causal.go, f16 by default);
- ml/backend/ggml/ggml.go ``newTensor``: every tensor of a layer's context adds to ``Cache[layer]``, which
  ml/device.go logs as "kv cache".

Qwen3.5-9B (and -4B: the same layout; https://huggingface.co/Qwen/Qwen3.5-9B config.json): 32 layers, every
4th full attention (8), 4 KV heads of 256; 24 linear layers of 16 key / 32 value heads of 128, conv kernel 4.
Per linear layer and sequence: conv 3 × (32·128 + 2·16·128) × 4 B = 96 KiB, delta 128² × 32 × 4 B = 2 MiB.
The real log (tests/data/startup_logs/ollama/006-*, Ollama 0.19.0, num_ctx 32768, 1 slot, f16) prints
"kv cache" 2.2 GiB: 8 × 32768 × 2 × 4 × 256 × 2 B = 1 GiB of K/V plus 24 × 25 × 2.09375 MiB = 1256.25 MiB.
"""

from __future__ import annotations

from typing import Any

import pytest

from servespec.engines import get
from servespec.engines.ollama import memory as ollama_memory
from servespec.knowledge import models
from servespec.knowledge.memory import GIB, EstimateInput
from servespec.knowledge.models import ModelFacts, facts_from_config

MIB = 2**20
CONV = 3 * (32 * 128 + 2 * 16 * 128) * 4  # bytes per linear layer and sequence
DELTA = 128 * 128 * 32 * 4
KV_PER_CELL = 8 * 2 * 4 * 256 * 2  # 8 full-attention layers, K and V, f16


def _qwen35_9b() -> ModelFacts:
    """Qwen3.5-9B from the catalog (its commit-pinned config.json): 32 layers, every 4th full attention with 4 KV
    heads of 256; 16 key / 32 value linear heads of 128, conv kernel 4."""
    model = models.catalogued("Qwen/Qwen3.5-9B")
    assert model is not None
    return model


def _input(version: str, model: ModelFacts, context: int, **options: Any) -> EstimateInput:
    release = get("ollama").select(version).release
    assert release is not None and release.version == version
    return EstimateInput(
        "ollama",
        release,
        model,
        None,
        max_model_len=context,
        options=options,
        host_memory_gib=512,
        kv_cache_dtype_option="kv_cache_type",  # engines/ollama/profile.yaml
    )


def _releases() -> list[str]:
    return list(get("ollama").catalog.versions)


def _has_recurrent(version: str) -> bool:
    release = get("ollama").select(version).release
    engine = release.facts.go_engine if release is not None else None
    return engine is not None and engine.recurrent is not None


def _count(version: str) -> int:
    """The checkpoints per sequence the cited source keeps: 32 in qwen3next's own cache, 24 in kvcache's."""
    return 32 if version in _QWEN3NEXT_OWN else 24


_QWEN3NEXT_OWN = ("0.15.5", "0.15.6", "0.16.0", "0.16.1", "0.16.2", "0.16.3", "0.17.0")


def test_the_fact_is_read_for_every_release_with_the_recurrent_cache() -> None:
    with_fact = [v for v in _releases() if _has_recurrent(v)]
    # qwen3next arrives in v0.15.5 (its own cache), kvcache/recurrent.go and qwen35 in v0.17.1; v0.30 drops the
    # Go engine's qwen3next package
    assert with_fact[0] == "0.15.5" and with_fact[-1] == "0.24.0", with_fact
    assert "0.15.4" in _releases() and not _has_recurrent("0.15.4")
    for version in with_fact:
        release = get("ollama").select(version).release
        assert release is not None and release.facts.go_engine is not None
        fact = release.facts.go_engine.recurrent
        assert fact is not None
        assert (fact.checkpoints, fact.state_bytes) == (_count(version), 4), version
        own = version in _QWEN3NEXT_OWN
        assert set(fact.architectures) == ({"qwen3next"} if own else {"qwen35", "qwen35moe", "qwen3next"}), version
        assert set(fact.architectures) <= set(release.facts.go_engine.architectures), version
        where = "model/models/qwen3next/checkpoints.go#L" if own else "kvcache/recurrent.go#L"
        assert f"/v{version}/{where}" in fact.source


def _qwen3_next() -> ModelFacts:
    """Qwen3-Next-80B-A3B from the catalog (its commit-pinned config.json): 48 layers, every 4th full attention with
    2 KV heads of 256; 16 key / 32 value linear heads of 128, conv kernel 4; the MoE fields do not enter the cache."""
    model = models.catalogued("Qwen/Qwen3-Next-80B-A3B-Instruct")
    assert model is not None
    return model


@pytest.mark.parametrize("version", [v for v in _releases() if _has_recurrent(v)])
def test_every_release_with_the_fact_counts_states_and_checkpoints(version: str) -> None:
    model = _qwen35_9b() if version not in _QWEN3NEXT_OWN else _qwen3_next()
    linear = 24 if version not in _QWEN3NEXT_OWN else 36
    assert model.linear_layers == linear
    for slots in (1, 3):
        state, note = ollama_memory.recurrent_state(_input(version, model, 32768), slots)
        assert state == linear * slots * (1 + _count(version)) * (CONV + DELTA), (version, slots)
        assert f"{_count(version)} checkpoints" in note


def test_the_0_19_0_log_s_kv_cache_line() -> None:
    model = _qwen35_9b()
    inp = _input("0.19.0", model, 32768, flash_attention=True, num_parallel=1)
    cells = ollama_memory.kv_cells(inp)
    assert cells.state_bytes == int(1256.25 * MIB)
    estimate = ollama_memory.estimate(inp)
    whole = estimate.kv_cache_bytes_all_devices
    assert whole == 32768 * KV_PER_CELL + int(1256.25 * MIB)
    assert 2.15 <= whole / GIB < 2.25  # the log's "kv cache" device=CUDA0 size="2.2 GiB" (one decimal)


def test_q8_0_shrinks_the_k_v_not_the_float32_states() -> None:
    model = _qwen35_9b()
    f16 = ollama_memory.estimate(_input("0.19.0", model, 32768, kv_cache_type="q8_0"))
    state = 24 * 25 * (CONV + DELTA)
    # q8_0: 34 bytes per 32 elements (ggml block_q8_0)
    assert f16.kv_cache_bytes_all_devices == 32768 * KV_PER_CELL * 34 // 64 + state


def test_releases_before_the_recurrent_cache_and_other_models_add_nothing() -> None:
    model = _qwen35_9b()
    assert ollama_memory.recurrent_state(_input("0.15.4", _qwen3_next(), 32768), 1) == (0, "")
    assert ollama_memory.recurrent_state(_input("0.17.0", model, 32768), 1) == (0, "")  # qwen35 not yet there
    dense = facts_from_config(
        {
            "model_type": "qwen3",
            "hidden_size": 4096,
            "num_hidden_layers": 36,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "intermediate_size": 12288,
            "vocab_size": 151936,
        },
        "Qwen/Qwen3-8B",
    )
    assert ollama_memory.recurrent_state(_input("0.19.0", dense, 32768), 1) == (0, "")
