"""vLLM releases whose KV budget subtracts all device memory torch has not allocated (``v0_non_torch_whole_device``):
the CUDA context, which the other releases leave out of the budget, counts there."""

from __future__ import annotations

import pytest

from servespec import engines
from servespec.engines.vllm.memory import CUDA_CONTEXT_GIB
from servespec.knowledge import gpus, models
from servespec.knowledge.memory import EstimateInput

VLLM = engines.get("vllm")


def _overhead(version: str, core: str = "v0") -> float:
    facts = models.catalogued("Qwen/Qwen3-8B")
    assert facts is not None
    release = VLLM.catalog.release(version)
    inp = EstimateInput("vllm", release, facts, gpus.resolve("NVIDIA L4"), max_model_len=4096, engine_core=core)
    plan = VLLM.estimate(inp)
    assert plan is not None
    return plan.overhead_gib


def test_0_6_4_counts_the_cuda_context_inside_the_budget() -> None:
    """0.6.4's worker.py L211 (``non_torch_allocations = total_allocated_bytes - torch_allocated_bytes``) against
    0.6.3's ``init_gpu_memory - free`` and 0.6.5's ``memory_profiling`` increase: the same profile otherwise."""
    assert _overhead("0.6.4.post1") - _overhead("0.6.3.post1") == pytest.approx(CUDA_CONTEXT_GIB)
    assert _overhead("0.6.4") == _overhead("0.6.4.post1")
    assert _overhead("0.6.5") == _overhead("0.6.3.post1")


def test_v1_0_8_counts_the_cuda_context_inside_the_budget() -> None:
    """V1's gpu_worker.py took the same accounting in 0.8.0-0.9.0.1 (``determine_available_memory``, v0.8.5 L205) and
    moved to ``memory_profiling``'s increase in 0.9.1: logs 122 (0.8.5.post1) and 001 (0.8.5) logged more overhead
    than the profile's peak alone."""
    assert _overhead("0.9.0.1", "v1") - _overhead("0.9.1", "v1") == pytest.approx(CUDA_CONTEXT_GIB)
