"""Model Runner V2's sampler penalty state: two int32 GPU tensors per request slot over the vocabulary
(v1/worker/gpu/sample/penalties.py ``output_bin_counts``, ``prompt_bin_mask``), built on the last pipeline rank after
the worker's start-up snapshot; counted as non-KV memory where the release's budget counts the free-memory drop
(0.27.0 on), not before."""

from __future__ import annotations

from typing import Any

import pytest

from servespec import engines
from servespec.engines.vllm.memory import penalty_state_gib
from servespec.knowledge import gpus, models
from servespec.knowledge.memory import GIB, EstimateInput

VLLM = engines.get("vllm")
VOCAB = 151_936  # Qwen3's vocabulary (config.json vocab_size)
# 0.27.1 penalties.py L32-42: torch.zeros(max_num_reqs, cdiv(vocab, 32), int32) and
# torch.zeros(max_num_reqs, vocab, int32)
PER_SLOT = VOCAB * 4 + -(-VOCAB // 32) * 4
KWARGS: dict[str, Any] = {"max_model_len": 32768, "options": {"gpu_memory_utilization": 0.426}}


def _input(version: str, **extra: Any) -> EstimateInput:
    facts = models.catalogued("Qwen/Qwen3-32B")
    assert facts is not None
    gpu = gpus.resolve("NVIDIA RTX PRO 6000 Blackwell Server Edition")
    return EstimateInput("vllm", VLLM.catalog.release(version), facts, gpu, **{**KWARGS, **extra})


@pytest.mark.parametrize("version", ["0.22.0", "0.25.1", "0.27.1", "0.30.0", "0.34.0"])
def test_every_release_with_the_runner_records_its_penalty_tensors(version: str) -> None:
    fact = VLLM.catalog.release(version).facts.v2_model_runner
    assert fact is not None and fact.penalty_state is not None
    state = fact.penalty_state
    assert (state.count_bytes, state.mask_bits, state.mask_bytes, state.last_stage_only) == (4, 32, 4, True)
    assert "penalties.py" in state.source and "is_last_pp_rank" in state.source


def test_it_takes_kv_room_from_0_27_where_the_budget_counts_the_free_memory_drop() -> None:
    """1024 slots (the RTX PRO 6000's default max_num_seqs) x Qwen3's vocabulary: 0.598 GiB on 0.27.1."""
    size, last, notes = penalty_state_gib(_input("0.27.1", tensor_parallel=2), 1024)
    assert last == size  # built on the last pipeline rank (here the only one)
    assert size == pytest.approx(1024 * PER_SLOT / GIB)
    assert size == pytest.approx(0.598, abs=0.001)
    assert notes and "penalty state" in notes[0]
    with_it = VLLM.estimate(_input("0.27.1", tensor_parallel=2))
    without = VLLM.estimate(_input("0.27.1", tensor_parallel=2, env={"VLLM_USE_V2_MODEL_RUNNER": "0"}))
    assert with_it is not None and without is not None
    assert any("Model Runner V2 penalty state 0.60 GiB" in n for n in with_it.notes)
    assert not any("penalty state" in n for n in without.notes)


def test_it_scales_with_max_num_seqs() -> None:
    small, _, _ = penalty_state_gib(_input("0.27.1", options={"gpu_memory_utilization": 0.426, "max_num_seqs": 64}), 64)
    assert small == pytest.approx(64 * PER_SLOT / GIB)


def test_before_0_27_the_budget_leaves_it_out() -> None:
    """0.26.0 utils/mem_utils.py L305-313: weights (measured before the sampler is built) + the profiling run's
    torch peak over what was allocated when it began + the non-torch increase: tensors made before the profiling
    run are in none of them."""
    size, _, notes = penalty_state_gib(_input("0.25.1"), 1024)
    assert size == 0.0
    assert notes and "outside the release's budget" in notes[0]


def test_first_runner_and_unread_releases_hold_none() -> None:
    assert penalty_state_gib(_input("0.27.1", env={"VLLM_USE_V2_MODEL_RUNNER": "0"}), 1024) == (0.0, 0.0, [])
    assert penalty_state_gib(_input("0.19.0"), 1024) == (0.0, 0.0, [])


@pytest.mark.parametrize("extra", [{"tensor_parallel": 2}, {"pipeline_parallel": 2}])
def test_it_comes_off_the_binding_stages_kv(extra: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """TP 2: every GPU holds it. PP 2 (32 + 32 layers): only the last stage builds a ``Sampler``
    (``if self.is_last_pp_rank``); that stage binds and every stage takes its block count, so the KV memory drops
    by the state once, and the note names the last stage."""
    from servespec.engines.vllm import memory

    with_it = VLLM.estimate(_input("0.27.1", **extra))
    monkeypatch.setattr(memory, "penalty_state_gib", lambda inp, seqs: (0.0, 0.0, []))
    without = VLLM.estimate(_input("0.27.1", **extra))
    assert with_it is not None and without is not None
    assert without.kv_cache_gib - with_it.kv_cache_gib == pytest.approx(1024 * PER_SLOT / GIB, abs=0.011)
    if "pipeline_parallel" in extra:
        assert any("on the last pipeline stage" in n for n in with_it.notes)
        assert any("stage 1 binds" in n for n in with_it.notes)


def test_the_other_stages_keep_the_room(monkeypatch: pytest.MonkeyPatch) -> None:
    """Were it on every stage, a first stage holding more than the last would bind and lose it too; on the last
    alone, the first stage's room is unchanged: binding_stage gets it as the last stage's own overhead."""
    from servespec.engines.vllm import memory

    seen: list[float] = []
    real = memory.binding_stage

    def spy(inp: EstimateInput, weights: float, room: float, sampler: float = 0.0, segments: Any = None) -> Any:
        seen.append(room + sampler)  # the room of a stage before the last
        return real(inp, weights, room, sampler, segments)

    monkeypatch.setattr(memory, "binding_stage", spy)
    VLLM.estimate(_input("0.27.1", pipeline_parallel=2))
    with_state = seen[0]
    monkeypatch.setattr(memory, "penalty_state_gib", lambda inp, seqs: (0.0, 0.0, []))
    VLLM.estimate(_input("0.27.1", pipeline_parallel=2))
    assert seen[-1] == pytest.approx(with_state)
