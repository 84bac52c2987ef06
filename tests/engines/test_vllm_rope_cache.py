"""vLLM's rotary cos/sin cache in the weights it reports ("Model loading took").

vLLM builds one ``cos_sin_cache`` buffer of ``max_position × rotary_dim`` in the model dtype per rotary
configuration (model_executor/layers/rotary_embedding/base.py, v0.19.0 L58-63; ``get_rope``'s ``_ROPE_DICT``
shares it between layers), not split by tensor parallelism. The figures below are worked by hand from the configs.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ruamel.yaml import YAML

from servespec.engines import get
from servespec.engines.vllm.memory import rope_cache_gib
from servespec.knowledge import models
from servespec.knowledge.memory import EstimateInput, weights_per_gpu
from tests import vllm_logs

VLLM = get("vllm")
LOGS = Path(__file__).resolve().parent.parent / "data" / "vllm_logs"


def _input(repo: str, tp: int = 1, dtype: str = "bfloat16") -> EstimateInput:
    facts = models.catalogued(repo)
    assert facts is not None, repo
    return EstimateInput(
        engine="vllm",
        release=VLLM.select("0.19.0").release,
        model=facts,
        gpu=None,
        tensor_parallel=tp,
        dtype=dtype,
        max_model_len=8192,
    )


def test_rope_cache_by_hand() -> None:
    """Llama 4 Scout: 10,485,760 positions (llama3 scaling keeps max_position_embeddings) × head_dim 128 × 2 bytes
    = 2.5 GiB on every GPU whatever the TP; Llama 3.1 8B: 131,072 × 128 × 2 = 32 MiB, 64 MiB in float32."""
    assert rope_cache_gib(_input("meta-llama/Llama-4-Scout-17B-16E-Instruct", tp=4)) == pytest.approx(2.5)
    assert rope_cache_gib(_input("meta-llama/Llama-3.1-8B-Instruct")) == pytest.approx(1 / 32)
    assert rope_cache_gib(_input("meta-llama/Llama-3.1-8B-Instruct", dtype="float32")) == pytest.approx(1 / 16)


def test_llama4_scout_weights_match_the_logged_load() -> None:
    """vllm_logs/046 (Llama 4 Scout, TP4, vLLM 0.19.0, "Model loading took 53.12 GiB"): the text model and the
    vision tower split over four GPUs (50.59 GiB) plus the 2.5 GiB cache come within 0.1 GiB of the log; without the
    tower and the cache the estimate was 2.9 GiB low and the KV tokens 18.6 % high."""
    path = next(LOGS.glob("046-*.yaml"))
    data = YAML(typ="safe").load(path.read_text())
    facts = vllm_logs._facts(data)
    gpu = vllm_logs._gpu(data)
    assert facts is not None and gpu is not None
    inp = EstimateInput(
        engine="vllm",
        release=VLLM.select("0.19.0").release,
        model=facts,
        gpu=gpu,
        tensor_parallel=4,
        dtype="bfloat16",
        max_model_len=8192,
        engine_version="0.19.0",
    )
    plan = VLLM.estimate(inp)
    assert plan is not None
    assert plan.weights_gib == pytest.approx(data["observed"]["model_weights_gib"], abs=0.1)
    assert plan.weights_gib == pytest.approx(weights_per_gpu(inp) + 2.5, abs=0.01)
