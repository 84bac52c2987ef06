"""What vLLM allocates after sizing the KV cache (the ``post_kv_warmup`` fact, engines/vllm/memory.py ``after_kv``,
rule MEM008), against the memory ``gpu_memory_utilization`` leaves, and the recorded start-up logs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from servespec.engines import get
from servespec.findings import Severity
from servespec.knowledge import gpus
from servespec.knowledge.memory import AfterKv, EstimateInput, GpuEstimate
from servespec.knowledge.models import catalogued
from servespec.rules.runner import check_fleet
from servespec.spec.fleet import load_fleet
from tests.vllm_logs import compare_all

FLEET = Path(__file__).resolve().parents[1] / "rules" / "cases" / "_fleet" / "inventory.yaml"


def _plan(repo: str, release: str, gpu: str = "H100-SXM5-80GB", **options: Any) -> GpuEstimate:
    model = catalogued(repo)
    assert model is not None, repo
    plan = get("vllm").estimate(
        EstimateInput(
            engine="vllm",
            release=get("vllm").select(release).release,
            model=model,
            gpu=gpus.resolve(gpu),
            max_model_len=8192,
            engine_version=release,
            kv_cache_dtype_option="kv_cache_dtype",
            options=options,
        )
    )
    assert plan is not None
    return plan


def test_gpt_oss_20b_at_095_on_an_h100_needs_the_freed_peak_for_its_sampler_warm_up() -> None:
    """vLLM 0.19.0 warms the sampler up after the KV cache on min(1024, 8192) requests over gpt-oss's 201,088-token
    vocabulary: 16 B each (Triton top-k/top-p) is 3.07 GiB, more than the 3.96 GiB 0.95 leaves out of 79.19 GiB
    after the CUDA context and 0.5 GiB of graphs (logs 075/076 fail exactly there); the freed activation peak
    covers it, so the arithmetic shows no shortfall: a warning, not an error."""
    plan = _plan("openai/gpt-oss-20b", "0.19.0", gpu_memory_utilization=0.95)
    warmup = plan.after_kv
    assert warmup is not None
    assert warmup.sampler_rows == 1024
    assert warmup.sampler_gib == pytest.approx(1024 * 201088 * 16 / 1024**3, abs=0.01)
    assert warmup.outside_gib == pytest.approx(0.05 * plan.total_gib, abs=0.01)
    assert warmup.tight
    assert warmup.shortfall_gib <= 0
    assert "v0.19.0/vllm/v1/worker/gpu_worker.py#L686 (_dummy_sampler_run)" in warmup.source


def test_the_same_at_090_fits_outside_the_budget() -> None:
    warmup = _plan("openai/gpt-oss-20b", "0.19.0", gpu_memory_utilization=0.90).after_kv
    assert warmup is not None and not warmup.tight and warmup.shortfall_gib < 0


def test_fewer_warm_up_requests_fit_at_095() -> None:
    """max_num_seqs bounds the warm-up's rows (vLLM's own advice when it fails)."""
    warmup = _plan("openai/gpt-oss-20b", "0.19.0", gpu_memory_utilization=0.95, max_num_seqs=256).after_kv
    assert warmup is not None and warmup.sampler_rows == 256 and not warmup.tight


def test_a_small_vocabulary_at_095_fits() -> None:
    """Llama 3.1 8B (128,256 tokens) at 0.95 on an H100: 1.96 GiB of warm-up fit outside the budget (logs 033-045
    start)."""
    warmup = _plan("meta-llama/Llama-3.1-8B-Instruct", "0.19.0", gpu_memory_utilization=0.95).after_kv
    assert warmup is not None and warmup.sampler_gib == pytest.approx(1.96, abs=0.01) and not warmup.tight


def test_v0_warms_no_sampler_up_and_eager_captures_no_graphs() -> None:
    """0.7.3's V0 worker captures CUDA graphs after the cache (initialize_cache -> _warm_up_model) and runs no
    sampler: an L4 at 0.99 starts (log 116) and is not flagged; enforce_eager drops the graphs."""
    warmup = _plan("meta-llama/Llama-3.1-8B", "0.7.3", gpu="L4", gpu_memory_utilization=0.99).after_kv
    assert warmup is not None and warmup.sampler_gib == 0 and warmup.graphs_gib == 0.5
    assert not warmup.tight and warmup.shortfall_gib < 0
    eager = _plan("meta-llama/Llama-3.1-8B", "0.7.3", gpu="L4", gpu_memory_utilization=0.99, enforce_eager=True)
    assert eager.after_kv is not None and eager.after_kv.graphs_gib == 0


def test_not_checked_where_the_release_sizes_its_blocks_after_the_warm_up_or_the_budget_is_bypassed() -> None:
    """0.34.0's extensible KV cache (on by default) measures its blocks after the warm-up; kv_cache_memory_bytes
    replaces the utilization budget."""
    assert _plan("openai/gpt-oss-20b", "0.34.0").after_kv is None
    off = _plan("openai/gpt-oss-20b", "0.34.0", enable_extensible_kv_cache=False).after_kv
    assert off is not None and off.sampler_rows == 1024
    assert _plan("openai/gpt-oss-20b", "0.19.0", kv_cache_memory_bytes=40 * 1024**3).after_kv is None


def test_shortfall_counts_the_context_and_the_warm_up_against_what_is_left_and_the_freed_peak() -> None:
    found = AfterKv(
        outside_gib=0.2,
        context_gib=0.5,
        graphs_gib=0.5,
        sampler_gib=4.0,
        sampler_rows=1024,
        reserved_gib=1.0,
        source="",
    )
    assert found.shortfall_gib == pytest.approx(0.5 + 4.0 - 0.2 - 1.0)
    assert found.tight
    roomy = AfterKv(
        outside_gib=8.0,
        context_gib=0.5,
        graphs_gib=0.5,
        sampler_gib=4.0,
        sampler_rows=1024,
        reserved_gib=4.0,
        source="",
    )
    assert roomy.shortfall_gib < 0 and not roomy.tight


def _findings(tmp_path: Path, utilization: float) -> list[Any]:
    (tmp_path / "inventory.yaml").write_text(FLEET.read_text())
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "apiVersion: servespec/v1\nkind: Deployment\nmetadata: {name: gpt-oss}\ninventory: inventory.yaml\n"
        "model:\n  source: openai/gpt-oss-20b\n  max_model_len: 8192\n"
        f'engine:\n  name: vllm\n  version: "0.19.0"\n  options: {{gpu_memory_utilization: {utilization}}}\n'
        "placement: {hosts: [nvs8]}\n"
    )
    return [f for f in check_fleet(load_fleet([spec])) if f.rule == "MEM008"]


def test_mem008_warns_and_never_errs_where_only_the_reuse_of_the_peak_is_in_doubt(tmp_path: Path) -> None:
    found = _findings(tmp_path, 0.95)
    assert len(found) == 1 and found[0].severity == Severity.WARNING
    assert found[0].message.startswith("may not fit: after sizing the KV cache vLLM 0.19.0")
    assert "1024 requests" in found[0].message and "max_num_seqs" in (found[0].hint or "")
    assert _findings(tmp_path, 0.9) == []


def test_no_started_log_is_flipped_and_the_sampler_warm_up_failures_are_warned() -> None:
    """Over the recorded vLLM logs: no log that started has an arithmetic shortfall after the KV cache (its verdict
    stays "fits"), and both 0.19.0 gpt-oss-20b starts that ran out of memory warming the sampler up get MEM008's
    warning."""
    rows = {row.name: row for row in compare_all()}
    modelled = [r for r in rows.values() if r.started and r.after_kv_shortfall_gib is not None]
    assert len(modelled) >= 89  # every vLLM log from a catalogued release the estimator answers
    assert [r.name for r in modelled if r.after_kv_shortfall_gib > 0] == []
    for name in ("075-gpt-oss-20b-tp1-8192-h100-llmd", "076-gpt-oss-20b-tp2-8192-h100-llmd"):
        assert not rows[name].started and rows[name].warned_after_kv, name
    # the same model at 0.90 (055) starts and is not warned
    assert rows["055-gpt-oss-20b-tp2-8192-h100-llmd"].started
    assert not rows["055-gpt-oss-20b-tp2-8192-h100-llmd"].warned_after_kv


def test_v0_profiles_the_whole_prompt_up_to_the_releases_own_long_context_threshold() -> None:
    """V0 with chunked prefill off profiles one max_model_len prompt up to ``v0_chunked_prefill_above`` (32768 in
    0.7.3's arg_utils.py); the threshold is read from the release, not assumed: lowered to 16384 in a copy of the
    release, a 20,000-token context is profiled at the batched-token default again."""
    from dataclasses import replace

    from servespec.engines.catalog import SourcedInt

    model = catalogued("meta-llama/Llama-3.1-8B-Instruct")
    release = get("vllm").select("0.7.3").release
    assert model is not None and release is not None
    assert release.facts.v0_chunked_prefill_above is not None
    assert release.facts.v0_chunked_prefill_above.value == 32768

    def batched(rel: Any) -> str:
        inp = EstimateInput(
            engine="vllm", release=rel, model=model, gpu=gpus.resolve("A100-SXM4-80GB"), max_model_len=20000,
            engine_version="0.7.3", kv_cache_dtype_option="kv_cache_dtype",
        )  # fmt: skip
        plan = get("vllm").estimate(inp)
        assert plan is not None
        return next(note for note in plan.notes if note.startswith("max_num_batched_tokens"))

    assert batched(release) == "max_num_batched_tokens 20000"
    lowered = release.facts.model_copy(update={"v0_chunked_prefill_above": SourcedInt(value=16384, source="test")})
    assert batched(replace(release, facts=lowered)) == "max_num_batched_tokens 2048"


def test_the_pooling_runner_warms_the_pooler_up_not_the_sampler() -> None:
    """``--runner pooling`` (0.11.0's gpu_worker.py L410-414, gpu_model_runner.py ``profile_run`` L3394-3397): no
    sampler warm-up after the KV cache and none in the profiling peak, so the gpt-oss case above is no longer tight
    and more memory is left for the cache; the same option on a release without ``--runner`` (0.10.0) changes
    nothing."""
    generate = _plan("openai/gpt-oss-20b", "0.19.0", gpu_memory_utilization=0.95)
    pooling = _plan("openai/gpt-oss-20b", "0.19.0", gpu_memory_utilization=0.95, runner="pooling")
    assert generate.after_kv is not None and pooling.after_kv is not None
    assert pooling.after_kv.sampler_gib == 0 and pooling.after_kv.sampler_rows == 0
    assert not pooling.after_kv.tight
    assert pooling.kv_cache_gib > generate.kv_cache_gib
    older = _plan("meta-llama/Llama-3.1-8B-Instruct", "0.10.0", runner="pooling")
    assert older.kv_cache_gib == _plan("meta-llama/Llama-3.1-8B-Instruct", "0.10.0").kv_cache_gib
