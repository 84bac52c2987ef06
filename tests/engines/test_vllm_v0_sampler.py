"""vLLM V0's profiling peak: the sampler warm-up of ``profile_run`` (``profile_sampler_v0_sorts_vocab``) against the
"PyTorch activation peak memory" the V0 worker logs (tests/data/vllm_logs)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from servespec.engines import get
from servespec.knowledge.memory import VLLM_NON_TORCH_GIB, EstimateInput, activation_gib, forward_activation_gib
from tests.vllm_logs import _facts, _gpu

LOGS = Path(__file__).resolve().parents[1] / "data" / "vllm_logs"

# V0 logs that print the activation peak (worker.py "PyTorch activation peak memory takes X GiB")
V0_PEAK_LOGS = (
    "116-llama-3.1-8b-base-l4-v0-0.7.3-util0.99",
    "121-opt-125m-t4-v0-fallback-0.10.2",
    "124-deepseek-r1-0528-qwen3-8b-v100-32gb-v0-0.10.0",
    "127-llama-3.2-3b-t4-v0-fallback-0.9.2",
)


def _input(data: dict[str, Any], **changes: Any) -> EstimateInput:
    facts = _facts(data)
    gpu = _gpu(data)
    assert facts is not None and gpu is not None
    settings = data.get("settings") or {}
    version = str(data["vllm_version"])
    inp = EstimateInput(
        engine="vllm",
        release=get("vllm").select(version).release,
        model=facts,
        gpu=gpu,
        max_model_len=int(settings.get("max_model_len") or facts.derived_max_len or 4096),
        engine_version=version,
        engine_core="v0",
        kv_cache_dtype_option="kv_cache_dtype",
    )
    return replace(inp, **changes)


def _activation(inp: EstimateInput) -> float:
    plan = get("vllm").estimate(inp)
    assert plan is not None
    return plan.overhead_gib - VLLM_NON_TORCH_GIB[0]  # one GPU, no LoRA, no draft: V0 counts no CUDA graphs


@pytest.mark.parametrize("log", V0_PEAK_LOGS)
def test_v0_profiling_peak_is_the_larger_of_the_forward_pass_and_the_vocabulary_sort(log: str) -> None:
    """V0's ``profile_run`` samples one token for each of ``max_num_seqs`` (256 below 70 GiB) dummy groups with
    ``top_k = vocab - 1`` and a ``top_p``: the sampler sorts their float32 logits over the whole vocabulary. The
    estimate, max(forward, 37 B × rows × vocab), is within 0.2 GiB of the logged peak on every V0 log that prints
    it; the generic forward + 8 B × rows × vocab was 0.33-0.72 GiB off on three of them (121, 124: the sort
    dominates; 116: the 24,576-token prompt does)."""
    data = YAML(typ="safe").load((LOGS / f"{log}.yaml").read_text())
    logged = float(data["observed"]["activation_peak_gib"])
    inp = _input(data)
    release = inp.release
    assert release is not None and release.facts.profile_sampler_v0_sorts_vocab is not None
    assert release.facts.profile_sampler_v0_sorts_vocab.value is True
    assert _activation(inp) == pytest.approx(logged, abs=0.2)


def test_v0_sampler_term_replaces_the_generic_one_only_where_the_release_is_read() -> None:
    """With the fact the V0 peak is max(forward, 37 B × rows × vocab); a release without it keeps the generic
    forward + 8 B × rows × vocab; a V1 engine core on the same release reads its own fact instead."""
    data = YAML(typ="safe").load((LOGS / "124-deepseek-r1-0528-qwen3-8b-v100-32gb-v0-0.10.0.yaml").read_text())
    inp = _input(data, options={"max_model_len": 4096, "max_num_seqs": 256})
    release = inp.release
    assert release is not None
    rows, vocab, batched = 256, inp.model.vocab_size, 4096  # V0: chunked prefill off, one max_model_len prompt
    sort = rows * vocab * 37 / 2**30
    assert sort > forward_activation_gib(inp, batched)
    assert _activation(inp) == pytest.approx(sort, abs=0.01)
    unread = replace(release, facts=release.facts.model_copy(update={"profile_sampler_v0_sorts_vocab": None}))
    generic = _input(data, release=unread, options=inp.options)
    assert _activation(generic) == pytest.approx(activation_gib(generic, batched, rows), abs=0.01)
    assert _activation(generic) < sort - 0.5
    more_rows = _input(data, options={**inp.options, "max_num_seqs": 512, "max_num_batched_tokens": 4096})
    assert _activation(more_rows) == pytest.approx(2 * sort, abs=0.02)


def test_v0_before_0_5_3_profiles_a_whole_prompt_of_any_length() -> None:
    """Up to v0.5.2 V0 never turns chunked prefill on by itself (v0.5.3 arg_utils.py ``use_long_context`` does above
    32768): the catalogued 0.4.1-0.5.2 releases carry no ``v0_chunked_prefill_above``, so they profile
    ``max_model_len`` tokens at any length. Log 153 (deepseek-coder-33b, linear rope x4: 65,536 tokens on vLLM
    0.4.1) then leaves less KV cache than one sequence, the refusal its traceback shows (raise_if_cache_size_invalid);
    0.5.3, which has the fact, chunks above 32768. A release the catalog lacks follows its stated version."""
    from servespec.engines.catalog import version_key
    from servespec.engines.vllm.memory import V0_AUTO_CHUNKED_PREFILL_SINCE

    data = YAML(typ="safe").load(next(LOGS.glob("153-*.yaml")).read_text())
    inp = replace(_input(data), tensor_parallel=2, dtype="float16")
    assert inp.release is not None and inp.release.facts.v0_chunked_prefill_above is None
    assert inp.max_model_len == 65536  # 16384 positions x linear factor 4
    old = get("vllm").estimate(inp)
    chunking = get("vllm").select("0.5.3").release
    assert chunking is not None and chunking.facts.v0_chunked_prefill_above is not None
    later = get("vllm").estimate(replace(inp, release=chunking, engine_version="0.5.3"))
    assert old is not None and later is not None
    # 0.5.3 chunks at its V0 scheduler's 512-token budget (SchedulerConfig, v0.5.3 vllm/config.py L805)
    assert "max_num_batched_tokens 65536" in old.notes and "max_num_batched_tokens 512" in later.notes
    assert old.kv_cache_gib < old.one_sequence_gib < later.kv_cache_gib, (old, later)
    uncatalogued = get("vllm").estimate(replace(inp, release=None, engine_version="0.3.3"))
    assert uncatalogued is not None and "max_num_batched_tokens 65536" in uncatalogued.notes
    assert version_key("0.3.3") < V0_AUTO_CHUNKED_PREFILL_SINCE
