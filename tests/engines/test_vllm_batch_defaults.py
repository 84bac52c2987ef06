"""vLLM V1's scheduler defaults per release and GPU (``v1_batch_defaults``, engine/arg_utils.py): the profiling run's
batch and the sampler warm-up's rows follow them."""

from __future__ import annotations

import pytest

from servespec import engines
from servespec.engines.vllm.memory import batch_defaults
from servespec.knowledge import gpus, models
from servespec.knowledge.memory import EstimateInput, cuda_total_gib

VLLM = engines.get("vllm")


def _defaults(version: str, gpu: str) -> tuple[int, int]:
    facts = models.catalogued("Qwen/Qwen3-8B")
    card = gpus.resolve(gpu)
    assert facts is not None and card is not None
    inp = EstimateInput("vllm", VLLM.catalog.release(version), facts, card, engine_core="v1")
    return batch_defaults(inp, cuda_total_gib(card))


@pytest.mark.parametrize(
    ("version", "gpu", "expected"),
    [
        ("0.8.3", "NVIDIA L4", (2048, 1024)),  # 0.8.0-0.8.3: 1024 sequences on every GPU
        ("0.8.3", "NVIDIA H100 80GB HBM3", (8192, 1024)),
        ("0.8.3", "NVIDIA A100-SXM4-80GB", (2048, 1024)),  # the name test: not an H100/H200
        ("0.8.4", "NVIDIA L4", (2048, 256)),
        ("0.8.5", "NVIDIA A100-SXM4-80GB", (8192, 1024)),  # 70 GiB, A100s included
        ("0.9.0", "NVIDIA A100-SXM4-80GB", (2048, 256)),  # "a100" not in device_name
        ("0.19.0", "NVIDIA H100 80GB HBM3", (8192, 1024)),
        ("0.28.0", "NVIDIA B200", (16384, 1024)),  # the 160 GiB tier
        ("0.28.0", "NVIDIA H200", (8192, 1024)),
    ],
)
def test_the_release_picks_its_defaults_by_gpu(version: str, gpu: str, expected: tuple[int, int]) -> None:
    assert _defaults(version, gpu) == expected
