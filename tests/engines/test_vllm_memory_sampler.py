"""vLLM's sampler warm-up during profiling: sorted top-k/top-p before 0.17.0, Triton from the release's row count,
FlashInfer's kernels where the release takes them (``profile_sampler_flashinfer``)."""

from __future__ import annotations

from typing import Any

import pytest

from servespec import engines
from servespec.engines.vllm.memory import (
    SAMPLER_SORT_BYTES,
    SAMPLER_TRITON_BYTES,
    _activation,
    flashinfer_sampling,
    model_runner_v2,
)
from servespec.knowledge import gpus, models
from servespec.knowledge.memory import GIB, EstimateInput, forward_activation_gib

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
        # 0.21.0 on: by default, unless turned off (the first model runner: 0.22.0 gives Qwen3 Model Runner V2 by
        # default, whose warm-up samples greedily, so the variable pins the first runner here)
        ("0.22.0", {"env": {"VLLM_USE_V2_MODEL_RUNNER": "0"}}, FLASHINFER_0_9),
        (
            "0.22.0",
            {"env": {"VLLM_USE_V2_MODEL_RUNNER": "0", "VLLM_USE_FLASHINFER_SAMPLER": "0"}},
            SAMPLER_TRITON_BYTES,
        ),
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


def _runner_input(version: str, model: str, **extra: Any) -> EstimateInput:
    facts = models.catalogued(model)
    assert facts is not None
    gpu = gpus.resolve("NVIDIA RTX PRO 6000 Blackwell Server Edition")
    return EstimateInput("vllm", VLLM.catalog.release(version), facts, gpu, **extra)


@pytest.mark.parametrize(
    ("version", "model", "extra", "expected"),
    [
        # 0.25-0.28: every dense generate model (config/vllm.py: "... or not model_config.is_moe")
        ("0.27.1", "Qwen/Qwen3-32B", {}, True),
        ("0.25.1", "google/gemma-4-31B-it", {}, True),
        ("0.27.1", "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8", {}, False),  # a mixture of experts
        ("0.25.1", "google/gemma-4-26B-A4B", {}, False),
        ("0.27.1", "Qwen/Qwen3.6-27B", {}, False),  # a linear-attention hybrid not in the list
        ("0.27.1", "Qwen/Qwen3-32B", {"env": {"VLLM_USE_V2_MODEL_RUNNER": "0"}}, False),
        ("0.27.1", "Qwen/Qwen3-32B", {"speculative": "ngram"}, False),  # speculative decoding: not modelled
        # 0.22-0.23: listed architectures, neither experts nor quantized; 0.24: listed ones
        ("0.22.0", "Qwen/Qwen3-8B", {}, True),
        ("0.22.0", "Qwen/Qwen3-8B", {"quantization": "fp8"}, False),
        ("0.22.0", "meta-llama/Llama-3.1-8B-Instruct", {}, False),
        ("0.24.0", "meta-llama/Llama-3.1-8B-Instruct", {}, True),
        # 0.29 on: every model; before 0.21's opt-in: never
        ("0.29.0", "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8", {}, True),
        ("0.19.0", "Qwen/Qwen3-32B", {}, False),
    ],
)
def test_model_runner_v2_serves_the_models_its_release_gives_it(
    version: str, model: str, extra: dict[str, Any], expected: bool
) -> None:
    assert model_runner_v2(_runner_input(version, model, **extra)) is expected


def test_model_runner_v2_warms_the_sampler_up_on_the_logits_alone() -> None:
    """Model Runner V2's ``_dummy_sampler_run`` samples a dummy batch with the sampler's initial states (temperature
    0, top-k the vocabulary, top-p 1): no float32 copy, no top-k/top-p buffers, so the profiling peak is the larger of
    the forward pass and the logits in the model dtype (0.27.1 vllm/v1/worker/gpu/sample/sampler.py). Log 212
    (Qwen3-32B TP 2 on 0.27.1) left 1.66 GiB beside the weights and the KV cache, less than the first runner's
    FlashInfer warm-up alone (2.03 GiB for 1024 rows)."""
    v2 = _runner_input("0.27.1", "Qwen/Qwen3-32B")
    v1 = _runner_input("0.27.1", "Qwen/Qwen3-32B", env={"VLLM_USE_V2_MODEL_RUNNER": "0"})
    logits = 1024 * VOCAB * 2 / GIB
    assert _activation(v1, 8192, 1024) == pytest.approx(1024 * VOCAB * FLASHINFER_0_9 / GIB)
    assert _activation(v2, 8192, 1024) == pytest.approx(max(logits, forward_activation_gib(v2, 8192)))
    assert _activation(v2, 8192, 1024) < _activation(v1, 8192, 1024)


def test_model_runner_v2_subtracts_no_cuda_graph_estimate_before_0_29() -> None:
    """Its ``profile_cudagraph_memory`` returns 0 up to 0.28, so the 0.5 GiB the in-budget releases' estimate takes
    for the first runner is not subtracted; 0.29's runner estimates the capture."""
    kwargs = {"max_model_len": 32768, "options": {"gpu_memory_utilization": 0.426}}
    v2 = VLLM.estimate(_runner_input("0.27.1", "Qwen/Qwen3-32B", tensor_parallel=2, **kwargs))
    v1 = VLLM.estimate(
        _runner_input("0.27.1", "Qwen/Qwen3-32B", tensor_parallel=2, env={"VLLM_USE_V2_MODEL_RUNNER": "0"}, **kwargs)
    )
    assert v2 is not None and v1 is not None
    sampler = 1024 * VOCAB * FLASHINFER_0_9 / GIB - forward_activation_gib(
        _runner_input("0.27.1", "Qwen/Qwen3-32B", tensor_parallel=2, **kwargs), 8192
    )
    # Model Runner V2 adds its penalty state (output_bin_counts, prompt_bin_mask): test_vllm_penalty_state.py
    penalties = 1024 * (VOCAB * 4 + -(-VOCAB // 32) * 4) / GIB
    assert v1.overhead_gib - v2.overhead_gib == pytest.approx(0.5 + sampler - penalties, abs=0.01)
    assert "Model Runner V2: no CUDA-graph estimate in the budget" in v2.notes
    later = VLLM.estimate(_runner_input("0.29.0", "Qwen/Qwen3-32B", tensor_parallel=2, **kwargs))
    assert later is not None and "Model Runner V2: no CUDA-graph estimate in the budget" not in later.notes
