"""vLLM's sampler warm-up during profiling: sorted top-k/top-p before 0.17.0, Triton from the release's row count."""

from __future__ import annotations

from servespec import engines
from servespec.engines.vllm.memory import SAMPLER_SORT_BYTES, SAMPLER_TRITON_BYTES, _activation
from servespec.knowledge import gpus, models
from servespec.knowledge.memory import GIB, EstimateInput

VLLM = engines.get("vllm")


def _peak(version: str, seqs: int) -> float:
    facts = models.catalogued("Qwen/Qwen3-8B")
    assert facts is not None
    inp = EstimateInput("vllm", VLLM.catalog.release(version), facts, gpus.resolve("NVIDIA H100 80GB HBM3"))
    return _activation(inp, 8192, seqs)


def test_the_warm_up_sorts_before_0_17_and_runs_triton_after() -> None:
    vocab = 151_936  # Qwen3's vocabulary
    assert _peak("0.10.2", 1024) == 1024 * vocab * SAMPLER_SORT_BYTES / GIB  # 5.35 GiB: log 102 peaked at 5.58
    assert _peak("0.19.0", 1024) == 1024 * vocab * SAMPLER_TRITON_BYTES / GIB  # 2.32 GiB: log 068 peaked at 2.21
    # from 0.17.0 a batch of fewer than 8 rows still sorts (apply_top_k_top_p: logits.shape[0] >= 8)
    assert _peak("0.19.0", 4) < _peak("0.10.2", 1024)
    small = 4 * vocab * SAMPLER_SORT_BYTES / GIB
    assert _peak("0.19.0", 4) == max(small, _peak("0.19.0", 4))
