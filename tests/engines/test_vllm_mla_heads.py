"""DeepSeek MLA on vLLM releases before the latent cache (0.7.1): keys and values cached per attention head, of the
head size each release's ModelConfig.get_head_size returns (engines/vllm/memory.py ``mla_cache_head_size``)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ruamel.yaml import YAML

from servespec.engines import get
from servespec.engines.vllm.memory import mla_cache_head_size
from servespec.knowledge.memory import EstimateInput
from tests import vllm_logs

LOGS = Path(__file__).resolve().parent.parent / "data" / "vllm_logs"


def _input(version: str, model_type: str = "deepseek_v2") -> EstimateInput:
    data = YAML(typ="safe").load(next(LOGS.glob("166-*.yaml")).read_text())
    facts, gpu = vllm_logs._facts(data), vllm_logs._gpu(data)
    assert facts is not None and gpu is not None and facts.is_mla
    return EstimateInput(
        engine="vllm",
        release=get("vllm").select(version).release,
        model=replace(facts, model_type=model_type),
        gpu=gpu,
        tensor_parallel=2,
        max_model_len=4096,
        engine_version=version,
        engine_core="v0",
    )


def test_head_size_per_release() -> None:
    """256 for deepseek_v2 up to 0.6.6.post1 (DeepSeek-V3 not sized so there), qk_nope + qk_rope (128 + 64) in
    0.7.0 for both, the latent from 0.7.1."""
    assert mla_cache_head_size(_input("0.5.1")) == 256
    assert mla_cache_head_size(_input("0.6.6.post1")) == 256
    assert mla_cache_head_size(_input("0.6.6", "deepseek_v3")) == 0
    assert mla_cache_head_size(_input("0.7.0")) == 192
    assert mla_cache_head_size(_input("0.7.0", "deepseek_v3")) == 192
    assert mla_cache_head_size(_input("0.7.1")) == 0
    assert mla_cache_head_size(_input("")) == 0  # no release: the latent, as the estimator has it


def test_bytes_per_token_and_weights() -> None:
    """DeepSeek-Coder-V2-Lite at TP 2: 27 layers x 2 x 8 heads x 256 x 2 bytes per token per GPU on 0.5.1 (the
    latent's 27 x 576 x 2 from 0.7.1); the weights do not change with the cache's layout."""
    old = get("vllm").estimate(_input("0.5.1"))
    new = get("vllm").estimate(_input("0.7.1"))
    assert old is not None and new is not None
    assert old.kv_bytes_per_token == 27 * 2 * 8 * 256 * 2 and new.kv_bytes_per_token == 27 * 576 * 2
    assert old.weights_gib == new.weights_gib
    assert any("MLA cached as full keys and values" in note for note in old.notes)


def test_the_failed_start_of_log_166_does_not_fit() -> None:
    """vllm_logs/166: vLLM 0.5.1's default 163,840-token context on 2x L40 needs 33.75 GiB of per-head KV cache per
    GPU, more than the budget leaves: the refusal the log shows (63,040 tokens)."""
    row = vllm_logs.compare(next(LOGS.glob("166-*.yaml")))
    assert row.fits is False, row
