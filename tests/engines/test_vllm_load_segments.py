"""Issue 23: vLLM releases whose KV budget counts the model load as the caching allocator's segments
(``v0_budget_counts_segments`` / ``v1_budget_counts_segments``, scripts/catalog/vllm_segments.py) and the replayed
build's segments beyond the weights' bytes (engines/vllm/memory.py ``load_segments_gib``, knowledge/load_replay.py)."""

from __future__ import annotations

import importlib.util
from dataclasses import replace
from pathlib import Path
from types import ModuleType

import pytest

from servespec import engines
from servespec.engines.catalog import SourcedBool, version_key
from servespec.engines.vllm import memory as vllm_memory
from servespec.knowledge import gpus, load_replay, models
from servespec.knowledge.memory import GIB, EstimateInput

ROOT = Path(__file__).resolve().parents[2]
VLLM = engines.get("vllm")
VERSIONS = VLLM.catalog.versions


def _builder() -> ModuleType:
    spec = importlib.util.spec_from_file_location("vllm_segments", ROOT / "scripts" / "catalog" / "vllm_segments.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("version", VERSIONS)
def test_which_releases_count_segments(version: str) -> None:
    """V0: the free-memory drop (to 0.6.3.post1), device use less torch's allocated bytes (0.6.4, 0.6.4.post1) and
    ``memory_profiling``'s non-torch term over the baseline (0.6.5-0.6.6.post1) count segments, the
    ``MemorySnapshot`` form (0.7.0 on) the weights' bytes. V1: device use less torch's allocated bytes to 0.9.0.1,
    bytes from 0.9.1, the free-memory drop (``total_consumed``) from 0.27.0. Each cited at the release's tag."""
    facts = VLLM.catalog.release(version).facts
    key = version_key(version)
    v0, v1 = facts.v0_budget_counts_segments, facts.v1_budget_counts_segments
    if key < (0, 10, 2):
        assert v0 is not None and v0.value == (key < (0, 7)), version
    else:
        assert v0 is None, version
    if key < (0, 7):
        assert v1 is None, version
    else:
        assert v1 is not None and v1.value == (key < (0, 9, 1) or key >= (0, 27)), version
    for fact in (v0, v1):
        if fact is not None:
            assert fact.source.startswith(f"https://github.com/vllm-project/vllm/blob/v{version}/vllm/"), version
            assert "#L" in fact.source, version


_PROFILING = """class MemorySnapshot:
    def measure(self):
        self.torch_memory = torch.cuda.memory_reserved()
        self.non_torch_memory = self.cuda_memory - self.torch_memory


def memory_profiling(baseline_snapshot, weights_memory):
    result.non_kv_cache_memory = non_torch_memory + peak_activation_memory + result.weights_memory
"""
_WORKER = """class Worker:
    def determine_available_memory(self):
        with memory_profiling(self.init_snapshot, weights_memory=self.model_runner.model_memory_usage) as result:
            self.model_runner.profile_run()
"""


def test_the_builder_reads_each_form(tmp_path: Path) -> None:
    """Bytes where the snapshot's non-torch term leaves out torch's reserved memory; segments where the profiling
    takes the free-memory drop or the worker device use less allocated bytes; None where the form is unknown."""
    builder = _builder()
    worker = tmp_path / "vllm" / "v1" / "worker" / "gpu_worker.py"
    utils = tmp_path / "vllm" / "utils" / "mem_utils.py"
    worker.parent.mkdir(parents=True)
    utils.parent.mkdir(parents=True)

    def read() -> dict[str, object] | None:
        found: dict[str, object] | None = builder.counts_segments(
            "9.9.9", tmp_path, builder.V1_WORKER, "determine_available_memory"
        )
        return found

    assert read() is None  # no worker
    worker.write_text(_WORKER)
    utils.write_text(_PROFILING)
    found = read()
    assert found == {
        "value": False,
        "source": "https://github.com/vllm-project/vllm/blob/v9.9.9/vllm/utils/mem_utils.py#L4",
    }
    utils.write_text(_PROFILING.replace("memory_reserved", "memory_allocated"))
    assert read() is None  # the non-torch term over allocated bytes: not a form the builder knows
    drop = "    result.total_consumed = result.before_create.free_memory - result.after_profile.free_memory\n"
    utils.write_text(_PROFILING + drop)
    found = read()
    assert found is not None and found["value"] is True and found["source"].endswith("mem_utils.py#L9")
    worker.write_text(_WORKER + "        non_torch_allocations = total_allocated_bytes - torch_allocated_bytes\n")
    utils.write_text(_PROFILING)
    found = read()
    assert found is not None and found["value"] is True and found["source"].endswith("gpu_worker.py#L5")


def _input(model: models.ModelFacts, version: str, tp: int = 1, pp: int = 1) -> EstimateInput:
    return EstimateInput(
        engine="vllm",
        release=VLLM.catalog.release(version),
        model=model,
        gpu=gpus.resolve("NVIDIA A40"),
        tensor_parallel=tp,
        pipeline_parallel=pp,
        max_model_len=4096,
        options={},
        engine_version=version,
    )


def _qwen25_32b() -> models.ModelFacts:
    model = models.catalogued("Qwen/Qwen2.5-32B-Instruct")
    assert model is not None
    return model


def test_segments_only_where_the_release_counts_them() -> None:
    """Qwen2.5-32B at TP 4: o_proj's 12.5 MiB takes a 14 MiB segment whose 1.5 MiB rest nothing later fits, qkv
    17.5 MiB an 18 MiB one, down 67.5 MiB a 68 MiB one (2.5 MiB a layer, 160 MiB over 64 layers, plus the
    vocabulary tables' rounding): counted by 0.6.4.post1 and 0.27.1, not by 0.26.0."""
    model = _qwen25_32b()
    counted, notes = vllm_memory.load_segments_gib(_input(model, "0.27.1", 4))
    assert len(counted) == 1 and 160 / 1024 <= counted[0] < 0.3, counted
    assert "mem_utils.py#L318" in notes[0]
    assert vllm_memory.load_segments_gib(_input(model, "0.6.4.post1", 4))[0] == counted
    assert vllm_memory.load_segments_gib(_input(model, "0.26.0", 4)) == ([], [])
    # the expert group a dense model is given (the TP ranks, as the log harness and a spec set it) changes nothing
    assert vllm_memory.load_segments_gib(replace(_input(model, "0.27.1", 4), moe_group=4))[0] == counted
    # not replayed: a quantized checkpoint, an MoE layout
    assert vllm_memory.load_segments_gib(_input(replace(model, quant_method="fp8"), "0.27.1", 4)) == ([], [])
    assert vllm_memory.load_segments_gib(_input(replace(model, architecture="Qwen3MoeForCausalLM"), "0.27.1", 4)) == (
        [],
        [],
    )


def test_the_estimate_takes_the_segments_off_the_kv_budget() -> None:
    """The same release with the fact flipped to bytes gives exactly the segments' GiB more KV memory."""
    inp = _input(_qwen25_32b(), "0.27.1", 4)
    release = inp.release
    assert release is not None
    fact = release.facts.v1_budget_counts_segments
    assert fact is not None and fact.value
    as_bytes = replace(
        release,
        facts=release.facts.model_copy(update={"v1_budget_counts_segments": SourcedBool(value=False, source="x")}),
    )
    counted = vllm_memory.estimate(inp)
    uncounted = vllm_memory.estimate(replace(inp, release=as_bytes))
    assert counted is not None and uncounted is not None
    segments = vllm_memory.load_segments_gib(inp)[0][0]
    # the same formula counts Model Runner V2's penalty state, made after the snapshot (test_vllm_penalty_state.py)
    seqs = vllm_memory.batch_defaults(inp, vllm_memory.cuda_total_gib(gpus.resolve("NVIDIA A40")))[1]
    penalties = vllm_memory.penalty_state_gib(inp, seqs)[0]
    assert penalties > 0
    assert uncounted.kv_cache_gib - counted.kv_cache_gib == pytest.approx(
        segments + penalties, abs=0.01
    )  # kv_cache_gib: 2 decimals


def test_pipeline_stages_build_their_own_layers_and_tables() -> None:
    """Stage 0 holds the embedding and its layers, the last stage its layers, the norm and the untied head; the
    stages' parameters add up to the whole model's."""
    model = _qwen25_32b()
    inp = _input(model, "0.27.1", 1, 2)
    half = model.layers // 2
    first, p0 = load_replay.events(inp, 2, 2, range(half), first=True, last=False)
    last, p1 = load_replay.events(inp, 2, 2, range(half, model.layers), first=False, last=True)
    _, p = load_replay.events(inp, 2, 2)
    assert p0 + p1 == p
    assert first[0][0] == "embed" and "lm_head" not in {n for n, _ in first}
    assert last[-1][0] == "lm_head" and "embed" not in {n for n, _ in last}
    assert sum(n.startswith("rope.cat") for n, _ in last) >= 1  # the stage's first layer builds its own cache
    stages, _ = vllm_memory.load_segments_gib(inp)
    assert len(stages) == 2 and all(s >= 0 for s in stages)
    assert (p + (model.max_position_embeddings or 0) * model.head_dim * 2) / GIB == pytest.approx(
        vllm_memory.weights_per_gpu(replace(inp, pipeline_parallel=1)) + vllm_memory.rope_cache_gib(inp), abs=2e-3
    )


@pytest.mark.slow
def test_the_builder_reproduces_the_catalogued_facts_from_the_cached_sources() -> None:
    """scripts/catalog/vllm_segments.py re-run on every release whose sdist is unpacked here gives the catalogued
    facts (skipped where none is cached)."""
    builder = _builder()
    spec = importlib.util.spec_from_file_location("vllm_mxfp4", ROOT / "scripts" / "catalog" / "vllm_mxfp4.py")
    assert spec is not None and spec.loader is not None
    mxfp4 = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mxfp4)
    found = 0
    for version in VERSIONS:
        src = mxfp4.SDISTS / version / "src"
        if not src.is_dir():
            continue
        found += 1
        facts = VLLM.catalog.release(version).facts
        for worker, name, fact in (
            (builder.V0_WORKER, "determine_num_available_blocks", facts.v0_budget_counts_segments),
            (builder.V1_WORKER, "determine_available_memory", facts.v1_budget_counts_segments),
        ):
            read = builder.counts_segments(version, src, worker, name)
            assert read == (fact.model_dump() if fact is not None else None), (version, worker)
    if not found:
        pytest.skip("no vLLM sdist unpacked here")
