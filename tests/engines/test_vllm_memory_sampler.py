"""vLLM's sampler warm-up during profiling: sorted top-k/top-p before 0.17.0, Triton from the release's row count,
FlashInfer's kernels where the release takes them (``profile_sampler_flashinfer``)."""

from __future__ import annotations

from typing import Any

import pytest

from servespec import engines
from servespec.engines.vllm.memory import SAMPLER_SORT_BYTES, SAMPLER_TRITON_BYTES, _activation, flashinfer_sampling
from servespec.knowledge import gpus, models
from servespec.knowledge.memory import GIB, EstimateInput

VLLM = engines.get("vllm")
VOCAB = 151_936  # Qwen3's vocabulary


def _input(version: str, gpu: str = "NVIDIA H100 80GB HBM3", **extra: Any) -> EstimateInput:
    facts = models.catalogued("Qwen/Qwen3-8B")
    assert facts is not None
    return EstimateInput("vllm", VLLM.catalog.release(version), facts, gpus.resolve(gpu), **extra)


def _peak(version: str, seqs: int, **extra: Any) -> float:
    extra.setdefault("flashinfer_sampler", False)  # a pip install without FlashInfer (logs 102, 117, 122)
    return _activation(_input(version, **extra), 8192, seqs)


def test_the_warm_up_sorts_before_0_17_and_runs_triton_after() -> None:
    vocab = 151_936  # Qwen3's vocabulary
    assert _peak("0.10.2", 1024) == 1024 * vocab * SAMPLER_SORT_BYTES / GIB  # 5.35 GiB: log 102 peaked at 5.58
    assert _peak("0.19.0", 1024) == 1024 * vocab * SAMPLER_TRITON_BYTES / GIB  # 2.32 GiB: log 068 peaked at 2.21
    # from 0.17.0 a batch of fewer than 8 rows still sorts (apply_top_k_top_p: logits.shape[0] >= 8)
    assert _peak("0.19.0", 4) < _peak("0.10.2", 1024)
    small = 4 * vocab * SAMPLER_SORT_BYTES / GIB
    assert _peak("0.19.0", 4) == max(small, _peak("0.19.0", 4))


FLASHINFER_0_9 = 2 + 3 * 4  # bf16 logits; the float32 copy, FlashInfer's top-k-masked logits, the softmax
FLASHINFER_0_8 = 2 + 4 * 4  # bf16 logits; the float32 copy, the softmax, the two renormalised copies


@pytest.mark.parametrize(
    ("version", "extra", "per_entry"),
    [
        # 0.8.0-0.11.0 take FlashInfer whenever it imports: the official 0.10.2 image installs it (Dockerfile v0.3.0)
        ("0.10.2", {}, FLASHINFER_0_9),
        ("0.10.2", {"flashinfer_sampler": True}, FLASHINFER_0_9),  # a log says "Using FlashInfer for top-p & top-k"
        ("0.10.2", {"flashinfer_sampler": False}, SAMPLER_SORT_BYTES),  # "FlashInfer is not available"
        ("0.10.2", {"image": "example.org/own-vllm:0.10.2"}, SAMPLER_SORT_BYTES),  # not known to carry it
        ("0.10.2", {"env": {"VLLM_USE_FLASHINFER_SAMPLER": "0"}}, SAMPLER_SORT_BYTES),
        ("0.8.5", {}, SAMPLER_SORT_BYTES),  # the image's FlashInfer not read (no Dockerfile in the sdist)
        ("0.8.5", {"flashinfer_sampler": True}, FLASHINFER_0_8),
        # 0.11.1-0.20.x: opt-in only
        ("0.19.0", {}, SAMPLER_TRITON_BYTES),
        ("0.19.0", {"env": {"VLLM_USE_FLASHINFER_SAMPLER": "1"}}, FLASHINFER_0_9),
        # 0.21.0 on: by default, unless turned off
        ("0.22.0", {}, FLASHINFER_0_9),
        ("0.22.0", {"env": {"VLLM_USE_FLASHINFER_SAMPLER": "0"}}, SAMPLER_TRITON_BYTES),
    ],
)
def test_the_warm_up_runs_flashinfer_where_the_release_and_its_install_do(
    version: str, extra: dict[str, Any], per_entry: int
) -> None:
    """The sampler warm-up's peak follows ``TopKTopPSampler.__init__`` of the release: logs 007-011 and 077 (0.10.1.1,
    "Using FlashInfer for top-p & top-k sampling") logged about 0.8 GiB more KV cache than log 010 of the same
    model and settings whose install had no FlashInfer."""
    assert _activation(_input(version, **extra), 8192, 1024) == pytest.approx(1024 * VOCAB * per_entry / GIB)


def test_flashinfer_is_not_taken_below_turing() -> None:
    """FlashInfer's kernels need capability 7.5: a V100 takes the native path even where the release defaults to it."""
    assert flashinfer_sampling(_input("0.22.0"))
    assert not flashinfer_sampling(_input("0.22.0", gpu="Tesla V100-SXM2-32GB"))
