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


@pytest.mark.parametrize("version", ["0.4.1", "0.4.2", "0.6.3", "0.6.4.post1", "0.7.3", "0.8.5"])
def test_an_unset_v0_budget_is_at_least_2048_tokens_below_2048_of_context(version: str) -> None:
    """SchedulerConfig's ``max(max_model_len, 2048)`` without chunked prefill (V0_UNCHUNKED_MIN_BATCHED_TOKENS): a
    128-token context still profiles 2048 tokens, not the chunked budget (768 / 512 / 2048) nor 128."""
    plan = VLLM.estimate(_input(version, "Tesla T4", 128))
    assert plan is not None
    assert "max_num_batched_tokens 2048" in plan.notes, plan.notes


def test_a_set_v0_budget_is_kept_and_never_below_max_model_len() -> None:
    given = VLLM.estimate(_input("0.6.3", "Tesla T4", 1024, max_num_batched_tokens=1536))
    below = VLLM.estimate(_input("0.6.3", "Tesla T4", 1024, max_num_batched_tokens=512))
    assert given is not None and below is not None
    assert "max_num_batched_tokens 1536" in given.notes
    assert "max_num_batched_tokens 1024" in below.notes  # the release refuses less than max_model_len unchunked


def _vision_input(version: str, max_model_len: int) -> EstimateInput:
    facts = models.catalogued("Qwen/Qwen2.5-VL-7B-Instruct")
    card = gpus.resolve("NVIDIA H100 80GB HBM3")
    assert facts is not None and facts.vision_params > 0 and card is not None
    release = VLLM.catalog.release(version)
    return EstimateInput(
        "vllm", release, facts, card, engine_core="v0", engine_version=version, max_model_len=max_model_len,
    )  # fmt: skip


@pytest.mark.parametrize("version", ["0.6.3", "0.7.3", "0.8.3", "0.10.1"])
def test_v0_never_chunks_a_multimodal_model_by_itself(version: str) -> None:
    """From 0.6.1.post1 the V0 engine leaves chunked prefill off for a multimodal model above 32K too
    (V0_MULTIMODAL_UNCHUNKED_SINCE), so it profiles the whole max_model_len; a text model of the same length is
    chunked (the release's budget)."""
    vision = VLLM.estimate(_vision_input(version, 65536))
    text = VLLM.estimate(_input(version, "NVIDIA H100 80GB HBM3", 65536))
    assert vision is not None and text is not None
    assert "max_num_batched_tokens 65536" in vision.notes, vision.notes
    assert "max_num_batched_tokens 65536" not in text.notes, text.notes


def test_v0_before_0_6_1_post1_chunks_a_long_multimodal_context() -> None:
    plan = VLLM.estimate(_vision_input("0.6.0", 65536))
    assert plan is not None
    # v0.6.0 arg_utils.py has no multimodal clause: chunked, its 512-token budget under the 4096 multimodal floor
    assert "max_num_batched_tokens 4096" in plan.notes, plan.notes


def test_log_293_mllama_at_its_full_context_does_not_fit_on_four_a10() -> None:
    """Llama 3.2 11B Vision over four A10s on 0.8.3's V0 engine at the model's 131072 tokens: multimodal, so not
    chunked, the profiling run batches 131072 tokens and leaves fewer KV tokens than one sequence needs."""
    from pathlib import Path

    from tests import vllm_logs

    logs = Path(__file__).resolve().parent.parent / "data" / "vllm_logs"
    row = vllm_logs.compare(next(logs.glob("293-*.yaml")))
    assert row.started is False and row.fits is False, row


@pytest.mark.parametrize(("version", "expected"), [("0.5.5", 2048), ("0.6.0", 4096), ("0.6.2", 4096), ("0.6.3", 5120)])
def test_v0_puts_the_multimodal_floor_under_an_unset_budget(version: str, expected: int) -> None:
    """V0_MULTIMODAL_MIN_BATCHED_TOKENS: ``_MULTIMODAL_MODEL_MAX_NUM_BATCHED_TOKENS`` (4096 in 0.6.0-0.6.2, 5120 from
    0.6.3, none before 0.6.0) under the budget of a multimodal model; a text model keeps 2048, a set budget stays."""
    plan = VLLM.estimate(_vision_input(version, 1024))
    text = VLLM.estimate(_input(version, "NVIDIA H100 80GB HBM3", 1024))
    facts = models.catalogued("Qwen/Qwen2.5-VL-7B-Instruct")
    card = gpus.resolve("NVIDIA H100 80GB HBM3")
    assert facts is not None and card is not None
    given = VLLM.estimate(
        EstimateInput(
            "vllm",
            VLLM.catalog.release(version),
            facts,
            card,
            engine_core="v0",
            engine_version=version,
            max_model_len=1024,
            options={"max_num_batched_tokens": 1536},
        )
    )
    assert plan is not None and text is not None and given is not None
    assert f"max_num_batched_tokens {expected}" in plan.notes, plan.notes
    assert "max_num_batched_tokens 2048" in text.notes
    assert "max_num_batched_tokens 1536" in given.notes
