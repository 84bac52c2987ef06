"""vLLM releases before 0.6.0 (0.4.1-0.5.5, catalogued from their sdists): the facts their V0 arithmetic reads, and
the two corpus logs of those releases (tests/data/vllm_logs 153 on 0.4.1, 166 on 0.5.1)."""

from __future__ import annotations

from pathlib import Path

from servespec.engines import get
from servespec.knowledge import gpus, models
from servespec.knowledge.memory import EstimateInput
from tests import vllm_logs

VLLM = get("vllm")
LOGS = Path(__file__).resolve().parent.parent / "data" / "vllm_logs"
L40 = next(g for g in gpus.catalog() if g.id.startswith("L40"))


def _batched(version: str, max_model_len: int) -> str:
    model = models.catalogued("meta-llama/Llama-3.1-8B-Instruct")
    assert model is not None
    found = VLLM.estimate(
        EstimateInput(
            engine="vllm",
            release=VLLM.select(version).release,
            model=model,
            gpu=L40,
            max_model_len=max_model_len,
            dtype="bfloat16",
        )
    )
    assert found is not None
    return next(note for note in found.notes if note.startswith("max_num_batched_tokens"))


def test_old_releases_are_v0_and_chunk_long_prefills_only_from_0_5_3() -> None:
    """0.4.1-0.5.2 never turn chunked prefill on by themselves (arg_utils.py has no ``use_long_context``), so the
    V0 profiling run is one ``max_model_len`` batch at any length; 0.5.3 turns it on above 32,768 tokens."""
    for version in ("0.4.1", "0.5.1", "0.5.2"):
        release = VLLM.catalog.release(version)
        assert release.facts.default_engine is not None and release.facts.default_engine.value == "v0", version
        assert release.facts.v0_chunked_prefill_above is None, version
        assert release.facts.profile_sampler_v0_sorts_vocab is not None, version
        assert _batched(version, 65536) == "max_num_batched_tokens 65536", version
    above = VLLM.catalog.release("0.5.3").facts.v0_chunked_prefill_above
    assert above is not None and above.value == 32768
    # chunked, the V0 scheduler's own budget: 512 tokens (SchedulerConfig, v0.5.3 vllm/config.py L805)
    assert _batched("0.5.3", 65536) == "max_num_batched_tokens 512"
    assert _batched("0.5.3", 16384) == "max_num_batched_tokens 16384"


def test_log_153_does_not_fit_on_0_4_1() -> None:
    """deepseek-coder-33b at TP 2 on two L40s, 0.4.1 defaults: 0.4.1 derives max_model_len 65,536 (16,384 x the
    linear rope factor 4) and profiles it as one batch, which leaves fewer KV tokens than one sequence needs:
    raise_if_cache_size_invalid, as the log's traceback shows."""
    row = vllm_logs.compare(next(LOGS.glob("153-*.yaml")))
    assert row.version == "0.4.1" and row.started is False
    assert row.fits is False and row.kv_gib < 65536 * 126976 / 2**30, row


def test_log_166_is_scored_on_its_verdict_with_0_5_1_layout() -> None:
    """DeepSeek-Coder-V2-Lite at TP 2 on 0.5.1: keys and values of 256 per local head (221,184 bytes per token per
    GPU), fewer tokens than the model's 163,840; the KV figure itself is not scored (the log's calibration says why)."""
    row = vllm_logs.compare(next(LOGS.glob("166-*.yaml")))
    assert row.fits is False and row.predicted is None and row.skipped.startswith(vllm_logs.VERDICT_ONLY), row
    assert "its figure is left out" in row.skipped, row
    logged_gib = 63040 * 221184 / 2**30
    assert logged_gib < row.kv_gib < 163840 * 221184 / 2**30, row
