"""vLLM's V0 engine: 256 default sequences and the release's chunked-prefill budget on every GPU (EngineArgs /
SchedulerConfig of 0.4.1-0.7.x), not the V1 engine's by-GPU defaults; and the CUDA total of cards whose public logs
print it (gpus.yaml ``cuda_total_gib``)."""

from __future__ import annotations

import pytest

from servespec import engines
from servespec.engines.vllm.memory import V0_MAX_NUM_SEQS, batch_defaults
from servespec.knowledge import gpus, models
from servespec.knowledge.memory import CUDA_VISIBLE_SHARE, EstimateInput, cuda_total_gib

VLLM = engines.get("vllm")


def _input(version: str, gpu: str, max_model_len: int, **options: object) -> EstimateInput:
    facts = models.catalogued("Qwen/Qwen2.5-1.5B")
    card = gpus.resolve(gpu)
    assert facts is not None and card is not None
    release = VLLM.catalog.release(version)
    return EstimateInput(
        "vllm", release, facts, card, engine_core="v0", engine_version=version, max_model_len=max_model_len,
        options=dict(options),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("version", "expected"),
    [("0.4.1", 768), ("0.4.2", 512), ("0.6.4.post1", 512), ("0.6.5", 2048), ("0.7.2", 2048)],
)
def test_v0_defaults_do_not_follow_the_gpu(version: str, expected: int) -> None:
    for gpu in ("NVIDIA H100 80GB HBM3", "Tesla T4"):
        inp = _input(version, gpu, 4096)
        assert batch_defaults(inp, cuda_total_gib(inp.gpu)) == (expected, V0_MAX_NUM_SEQS)  # type: ignore[arg-type]


def test_a_v0_start_on_a_big_card_profiles_256_sequences_of_max_model_len() -> None:
    plan = VLLM.estimate(_input("0.7.2", "NVIDIA H100 80GB HBM3", 4096))
    assert plan is not None
    assert "max_num_seqs 256" in plan.notes
    assert "max_num_batched_tokens 4096" in plan.notes  # max(max_model_len, 2048): chunked prefill is off


def test_v0_chunked_prefill_above_32k_takes_the_release_budget() -> None:
    old = VLLM.estimate(_input("0.6.3.post1", "NVIDIA H100 80GB HBM3", 131072))
    new = VLLM.estimate(_input("0.7.2", "NVIDIA H100 80GB HBM3", 131072))
    assert old is not None and new is not None
    assert "max_num_batched_tokens 512" in old.notes
    assert "max_num_batched_tokens 2048" in new.notes


def test_a_card_with_a_logged_cuda_total_uses_it() -> None:
    t4 = gpus.resolve("Tesla T4")
    assert t4 is not None and t4.cuda_total_gib == 14.74
    assert cuda_total_gib(t4) == 14.74  # not 0.993 x 15.0 GiB = 14.89
    card = gpus.resolve("NVIDIA GeForce RTX 4090")
    assert card is not None and card.cuda_total_gib is None
    assert cuda_total_gib(card) == pytest.approx(card.memory_gib * CUDA_VISIBLE_SHARE)


def test_every_catalogued_cuda_total_is_below_nvidia_smi_and_sourced() -> None:
    from servespec.knowledge.datafile import load_yaml_data

    entries = {e["id"]: e for e in load_yaml_data("gpus.yaml")["gpus"]}
    with_total = [card for card in gpus.catalog() if card.cuda_total_gib is not None]
    assert with_total
    for card in with_total:
        assert 0.95 * card.memory_gib < card.cuda_total_gib < card.memory_gib  # type: ignore[operator]
        assert "github.com" in str(entries[card.id].get("cuda_total_source", ""))
