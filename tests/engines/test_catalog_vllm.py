"""vLLM release catalogs (scripts/catalog/vllm.py): every release resolves exactly, and ENG001 fires
exactly in the releases that lack an option, naming where it was added or removed.

The sampled options are cross-checked against vLLM's source at the release tags
(https://github.com/vllm-project/vllm/blob/<tag>/vllm/engine/arg_utils.py): each one is defined
in the last release before the change and absent after it (or the other way round for an
option added). The fidelity of the extractor against a real parser environment is a slow test
(it needs the parser env and the downloaded wheel source).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from servespec import engines
from servespec.engines.catalog import version_key
from tests.engines.one_option import eng001

VLLM = engines.get("vllm")
VERSIONS = VLLM.catalog.versions

REMOVED = {
    # option: (last release that has it, the next release, which has it no more)
    "engine_use_ray": ("0.6.1", "0.6.1.post1"),  # v0.6.1.post1 arg_utils.py drops --engine-use-ray
    "worker_use_ray": ("0.6.6.post1", "0.7.0"),  # v0.7.0 arg_utils.py drops --worker-use-ray
    "speculative_model": ("0.8.2", "0.8.3"),  # v0.8.3 folds the --speculative-* flags into --speculative-config
    "num_scheduler_steps": ("0.10.0", "0.10.1"),  # v0.10.1 removes multi-step scheduling
    "preemption_mode": ("0.10.2", "0.11.0"),  # v0.11.0 drops --preemption-mode with the V0 scheduler
    "disable_log_requests": ("0.16.0", "0.17.0"),  # v0.17.0 drops the deprecated flag
}
ADDED = {
    # option: (a release without it, the first release with it)
    "speculative_config": ("0.8.1", "0.8.2"),  # v0.8.2 arg_utils.py adds --speculative-config
    "async_scheduling": ("0.9.2", "0.10.0"),  # v0.10.0 arg_utils.py adds --async-scheduling
    "kv_cache_memory_bytes": ("0.10.1.1", "0.10.2"),  # v0.10.2 arg_utils.py adds --kv-cache-memory-bytes
    "shuffle_safetensors_files": ("0.33.0", "0.34.0"),  # v0.34.0 arg_utils.py adds --shuffle-safetensors-files
}

QWEN = "{source: Qwen/Qwen2.5-7B-Instruct}"


def _eng001(tmp_path: Path, version: str, option: str) -> list[str]:
    return [f.message for f in eng001(tmp_path, "vllm", version, QWEN, option) if f"'{option}'" in f.message]


def test_every_vllm_release_from_0_4_1_resolves_exactly() -> None:
    assert len(VERSIONS) >= 60
    assert VERSIONS[0] == "0.4.1"  # 0.4.1-0.5.5 from their sdists (the OpenAI server parser before `vllm serve`)
    for version in VERSIONS:
        selection = VLLM.select(version)
        assert selection.relation == "exact", version
        assert selection.release is not None and selection.release.version == version


@pytest.mark.parametrize("option", sorted(REMOVED))
def test_a_removed_option_is_eng001_exactly_from_its_removal(tmp_path: Path, option: str) -> None:
    last, first_without = REMOVED[option]
    assert last in VERSIONS and first_without in VERSIONS, "both sides of the change must be catalogued"
    since = next(v for v in VERSIONS if option in VLLM.catalog.release(v).options)  # 0.4.x/0.5.x lack some
    for version in VERSIONS:
        has = option in VLLM.catalog.release(version).options
        assert has == (version_key(since) <= version_key(version) <= version_key(last)), (option, version)
    assert _eng001(tmp_path, last, option) == []
    after = [v for v in VERSIONS if version_key(v) >= version_key(first_without)]
    for version in (after[0], after[len(after) // 2], after[-1]):
        found = _eng001(tmp_path, version, option)
        assert len(found) == 1 and f"(removed in {first_without})" in found[0], (version, found)


@pytest.mark.parametrize("option", sorted(ADDED))
def test_an_added_option_is_eng001_exactly_before_it_was_added(tmp_path: Path, option: str) -> None:
    last_without, first = ADDED[option]
    assert last_without in VERSIONS and first in VERSIONS
    for version in VERSIONS:
        has = option in VLLM.catalog.release(version).options
        assert has == (version_key(version) >= version_key(first)), (option, version)
    assert _eng001(tmp_path, first, option) == []
    found = _eng001(tmp_path, VERSIONS[0], option)
    assert len(found) == 1 and f"(added in {first})" in found[0], found
    found = _eng001(tmp_path, last_without, option)
    assert len(found) == 1 and f"(added in {first})" in found[0], found


def test_built_catalogs_record_provenance_and_the_facts_the_code_reads() -> None:
    folder = Path(str(VLLM.catalog.folder))
    for version in VERSIONS:
        data = json.loads((folder / f"{version}.json").read_text())
        release = VLLM.catalog.release(version)
        assert data["provenance"].get("method"), version
        if data["provenance"].get("tool", "").startswith("servespec-catalog"):
            # 0.4.1-0.5.5: no wheel for the builder's Python, built from the sdist (scripts/catalog/vllm.py fetch)
            sdist = version_key(version) < (0, 6) and data["provenance"]["artifact"] == f"vllm-{version}.tar.gz"
            assert sdist or data["provenance"]["artifact"].startswith(f"vllm-{version}-")
            assert len(data["provenance"]["sha256"]) == 64
            engine = release.facts.default_engine
            assert engine is not None and f"/blob/v{version}/" in engine.source
            # V1 became the default in 0.8.0 (vllm/envs.py VLLM_USE_V1 default "1")
            assert engine.value == ("v1" if version_key(version) >= (0, 8, 0) else "v0"), version
            assert release.facts.block_size_default is not None, version
    # the parser's own default moved at 0.20.0 (vllm/config/cache.py), with the CUDA-graph estimate
    # counted in the budget (vllm/envs.py VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS default "1")
    before, after = VLLM.catalog.release("0.19.1"), VLLM.catalog.release("0.20.0")
    assert (before.default("gpu_memory_utilization"), after.default("gpu_memory_utilization")) == (0.9, 0.92)
    graphs = (before.facts.cuda_graph_memory_in_budget, after.facts.cuda_graph_memory_in_budget)
    assert graphs[0] is not None and graphs[1] is not None and (graphs[0].value, graphs[1].value) == (False, True)
    fp8 = VLLM.catalog.release("0.6.0").facts.quantization_methods.get("fp8")
    assert fp8 is not None and fp8.min_capability == "8.0"  # v0.6.0 fp8.py get_min_capability: return 80
    fp8 = VLLM.catalog.release(VERSIONS[0]).facts.quantization_methods.get("fp8")
    assert fp8 is not None and fp8.min_capability == "9.0"  # v0.4.1 fp8.py get_min_capability: return 90


# --- extractor fidelity (slow: needs the parser env and the downloaded wheel source) -------------

ENVS = Path(os.environ.get("SERVESPEC_PARSER_ENVS") or Path.home() / ".cache/servespec/parser-envs")
SRC = Path(os.environ.get("SERVESPEC_CATALOG_SRC") or Path.home() / ".cache/servespec/catalog-src") / "vllm"
SCRIPTS = Path(__file__).resolve().parents[2] / "scripts" / "catalog"


def _extractor() -> ModuleType:
    spec = importlib.util.spec_from_file_location("vllm_catalog", SCRIPTS / "vllm.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.parametrize("version", ["0.11.0", "0.33.0"])
def test_the_extractor_reproduces_the_installed_release_parser(tmp_path: Path, version: str) -> None:
    """The release's source run from the wheel's .py files in the catalog host env (the 0.11.0
    parser env, as scripts/catalog/vllm.py runs it) gives the same options, types, choices and
    defaults as that release installed in its own parser env."""
    own, host = ENVS / f"vllm-{version}", ENVS / "vllm-0.11.0"
    source = SRC / version / "src"
    if not (own / "bin/python").is_file() or not (host / "bin/python").is_file() or not source.is_dir():
        pytest.skip(f"needs {own} and {host} (scripts/parser-envs) and {source} (scripts/catalog/vllm.py)")
    tool = _extractor()
    dumps: list[dict[str, Any]] = []
    for env, where in ((own, "-"), (host, str(source))):
        out = tmp_path / f"dump-{len(dumps)}.json"
        cmd = [str(env / "bin/python"), str(SCRIPTS / "vllm_dump.py"), where, str(out), ",".join(tool.EXTENSIONS)]
        subprocess.run(cmd, check=True, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        dumps.append(json.loads(out.read_text()))
    real, built = (tool.entries(d, {}) for d in dumps)
    assert set(real) == set(built)
    for key in real:
        for field in ("flag", "aliases", "type", "choices", "default", "bool_form", "nargs", "deprecated", "help"):
            assert real[key][field] == built[key][field], (key, field)


def test_0_34_0_is_catalogued_from_its_wheel_with_what_changed() -> None:
    """vLLM 0.34.0 (scripts/catalog/vllm.py): CacheConfig.DEFAULT_BLOCK_SIZE 64 (16 in 0.33.0), and
    gpu_memory_utilization's default None (resolved to 1.0 with the extensible KV cache, else 0.92)."""
    release = VLLM.select("0.34.0").release
    assert release is not None and VLLM.select("0.34.0").relation == "exact"
    assert release.facts.block_size_default is not None and release.facts.block_size_default.value == 64
    assert "v0.34.0/vllm/config/cache.py" in release.facts.block_size_default.source
    older = VLLM.catalog.release("0.33.0")
    assert older.facts.block_size_default is not None and older.facts.block_size_default.value == 16
    assert release.default("gpu_memory_utilization") is None and older.default("gpu_memory_utilization") == 0.92
    assert release.facts.hybrid_kv_cache is not None and release.facts.context_default is not None
    assert set(older.options) <= set(release.options)


# --- memory facts (engines/vllm/memory.py reads them; scripts/catalog/vllm.py derives them) -----------

MEMORY_FACTS = ("default_engine", "block_size_default", "cuda_graph_memory_in_budget")
"""Facts the vLLM estimator reads for every release (with the hybrid layout where the release has the manager,
and the profiling sampler's shape for every V1 release)."""


def _has_hybrid_manager(release: Any) -> bool:
    option = release.option("disable_hybrid_kv_cache_manager")
    engine = release.facts.default_engine
    return option is not None and option.default is not True and engine is not None and engine.value == "v1"


RANGED_FACTS = {
    "pipeline_stages": ("0.5.1", None),  # distributed/utils.py get_pp_indices (the layer split the estimate sizes)
    "pooling_models": ("0.6.5", None),  # model_executor/models/adapters.py (the pooling conversions)
    "v0_budget_counts_segments": ("0.4.1", "0.10.1.1"),  # V0's worker.py, removed in 0.11.0
    "v1_budget_counts_segments": ("0.7.0", None),  # v1/worker/gpu_worker.py determine_available_memory
    "block_fp8_moe_workspace": ("0.18.0", None),  # v1/worker/workspace.py (the persistent fused-MoE workspace)
    "v2_model_runner": ("0.22.0", None),  # v1/worker/gpu/model_runner.py (Model Runner V2)
}
"""Facts the vLLM estimator reads where the release's source has the mechanism: (first release, last or None)."""


@pytest.mark.parametrize("version", VERSIONS)
def test_every_release_carries_the_facts_its_source_range_has(version: str) -> None:
    """Each builder (scripts/catalog/vllm_pipeline.py, vllm_pooling.py, vllm_segments.py, vllm_moe_workspace.py,
    vllm_runner_v2.py) writes its fact for exactly the releases whose source has the mechanism, pinned to the tag:
    a release in the range without it would be estimated as if the mechanism did not exist."""
    release = VLLM.catalog.release(version)
    key = version_key(version)
    for name, (first, last) in RANGED_FACTS.items():
        fact = getattr(release.facts, name)
        inside = key >= version_key(first) and (last is None or key <= version_key(last))
        assert (fact is not None) == inside, (version, name)
        if fact is not None:
            assert f"/blob/v{version}/" in fact.source, (version, name, fact.source)


@pytest.mark.parametrize("version", VERSIONS)
def test_every_release_has_the_memory_facts_the_estimator_reads(version: str) -> None:
    """Each catalogued release carries, from its own source pinned to its tag, every fact the arithmetic reads:
    a release with the hybrid KV-cache manager (V1 default, --disable-hybrid-kv-cache-manager off by default)
    has its layout; one without has none (every layer caches every token, as V0 and V1 before 0.9.1 do)."""
    release = VLLM.catalog.release(version)
    pinned = f"/blob/v{version}/"
    for name in MEMORY_FACTS:
        fact = getattr(release.facts, name)
        assert fact is not None, (version, name)
        assert pinned in fact.source, (version, name, fact.source)
    sampler = release.facts.profile_sampler_sorts_vocab
    engine = release.facts.default_engine
    if engine is not None and engine.value == "v1":
        assert sampler is not None and pinned in sampler.source and "#L" in sampler.source, version
        # 0.8.0-0.33.0: gpu_model_runner.py _dummy_sampler_run (top_k = vocab - 1, top_p); 0.34.0 rewrote it
        assert sampler.value == (version_key(version) < (0, 34)), version
        # topk_topp_sampler.py apply_top_k_top_p: sorts below 0.17.0, Triton from 8 rows (0.17.0), from 1 (0.30.0)
        triton = release.facts.profile_sampler_triton_rows
        assert triton is not None and pinned in triton.source and "#L" in triton.source, version
        key = version_key(version)
        assert triton.value == (0 if key < (0, 17) else 8 if key < (0, 30) else 1), version
        # topk_topp_sampler.py TopKTopPSampler.__init__: FlashInfer whenever it imports (0.8.0-0.11.0, the
        # ``is not False`` test), opt-in (0.11.1-0.20.x), on by default (0.21.0: envs.py's default True)
        flashinfer = release.facts.profile_sampler_flashinfer
        assert flashinfer is not None and pinned in flashinfer.source and "#L" in flashinfer.source, version
        mode = "when_installed" if key < (0, 11, 1) else "opt_in" if key < (0, 21) else "default"
        assert flashinfer.value == mode, version
        # flashinfer_sample: probs then two renorm fallbacks (0.8.x), top_k_top_p_sampling_from_logits (0.9.0 on)
        assert flashinfer.float32_buffers == (4 if key < (0, 9) else 3), version
        # arg_utils.py V1 defaults (API server): H100/H200 by name to 0.8.4 (1024 sequences everywhere to 0.8.3),
        # 70 GiB from 0.8.5, A100s left out from 0.9.0, a 160 GiB tier of 16384 tokens from 0.28.0
        batch = release.facts.v1_batch_defaults
        assert batch is not None and pinned in batch.source and "#L" in batch.source, version
        first = batch.tiers[-1]
        assert (first.name_any, first.min_memory_gib) == ((["h100", "h200"], None) if key < (0, 8, 5) else ([], 70)), (
            version
        )
        assert first.name_none == (["a100"] if key >= (0, 9) else []), version
        assert (first.max_num_batched_tokens, first.max_num_seqs) == (8192, 1024), version
        small = (batch.otherwise.max_num_batched_tokens, batch.otherwise.max_num_seqs)
        assert small == (2048, 1024 if key < (0, 8, 4) else 256), version
        assert [t.min_memory_gib for t in batch.tiers[:-1]] == ([160] if key >= (0, 28) else []), version
        # the release's image installs FlashInfer from 0.10.1 (docker/Dockerfile FLASHINFER_GIT_REF v0.2.11), and
        # from 0.12.0 every CUDA install does (requirements/cuda.txt); 0.8.0-0.10.0's sdists carry no Dockerfile
        if (0, 10, 1) <= key < (0, 15) or key >= (0, 16):
            assert flashinfer.image_flashinfer, version
        elif key < (0, 10, 1):
            assert flashinfer.image_flashinfer is None, version
    else:
        assert sampler is None, version
    # worker.py determine_num_available_blocks: 0.6.4/0.6.4.post1 subtract all device memory torch did not
    # allocate (the CUDA context included); the others the growth since start-up; 0.11.0 on: no V0 worker
    whole = release.facts.v0_non_torch_whole_device
    key = version_key(version)
    if key >= (0, 11):
        assert whole is None, version
    else:
        assert whole is not None and pinned in whole.source and "#L" in whole.source, version
        assert whole.value == ((0, 6, 4) <= key < (0, 6, 5)), version
    # v1/worker/gpu_worker.py determine_available_memory: the same accounting in V1 0.8.0-0.9.0.1
    v1_whole = release.facts.v1_non_torch_whole_device
    if key >= (0, 8):
        assert v1_whole is not None and pinned in v1_whole.source and "#L" in v1_whole.source, version
        assert v1_whole.value == ((0, 8) <= key < (0, 9, 1)), version
    hybrid = release.facts.hybrid_kv_cache
    if not _has_hybrid_manager(release):
        assert hybrid is None, version
        return
    assert hybrid is not None, f"{version}: has the hybrid KV-cache manager but no hybrid_kv_cache fact"
    urls = [part.split(" ")[0] for part in hybrid.source.split("; ")]
    assert urls and all(u.startswith("https://github.com/vllm-project/vllm/blob/") for u in urls), hybrid.source
    assert all(pinned in u for u in urls), (version, hybrid.source)
    assert all("#L" in u for u in urls[:2]), (version, hybrid.source)  # the grouping and the reported tokens
    if version_key(version) >= (0, 10):
        # HybridAttentionMambaModelConfig (0.10+): how a linear-attention state sets the page, and its blocks
        assert hybrid.linear_state_block is not None and hybrid.linear_state_blocks is not None, version
        cited = [part for part in hybrid.source.split("; ") if "linear layer's state" in part or "blocks per" in part]
        assert len(cited) == 2 and all("#L" in part for part in cited), (version, cited)


# Read by hand in each release's wheel source (the lines the catalog cites), on both sides of each change.
HYBRID_CHANGES = {
    # version: (group_size_ratio, reported_tokens, chunked_local_attention, linear_state_block)
    "0.9.1": (None, "blocks_per_group", False, None),  # kv_cache_utils.py L825 group_size = min(...); L867 // len(
    "0.10.0": (None, "blocks_per_group", True, 16),  # ChunkedLocalAttentionSpec, no VLLM_ALLOW_CHUNKED_... gate
    "0.10.1": (None, "blocks_per_group", False, 16),  # envs.py VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE "0"
    "0.11.0": (None, "blocks_per_group", False, 16),  # models/config.py L367 attn_block_size = 16 * cdiv(...)
    "0.11.1": (None, "blocks_per_group", False, 16),  # kernel_block_alignment_size = 16 (non-MLA branch)
    "0.12.0": (1.25, "blocks_per_group", False, 16),  # max_num_layers < min_num_layers * 1.25
    "0.13.0": (1.25, "blocks_per_group", False, 16),
    "0.14.0": (1.25, "blocks_per_group", True, 16),  # the env default becomes "1"
    "0.17.1": (1.25, "blocks_per_group", True, 16),
    "0.18.0": (1.5, "blocks_per_group", True, 16),  # * 1.5
    "0.20.0": (1.5, "blocks_per_group", True, 16),  # L1694 num_blocks // len(groups) * block_size
    "0.20.1": (1.5, "max_concurrency", True, 16),  # L1706 int(max_concurrency * max_model_len)
    "0.33.0": (1.5, "max_concurrency", True, 16),  # kv_cache_planning.py L524; envs.py L1932 default "1"
    "0.34.0": (1.5, "max_concurrency", True, 16),
}


@pytest.mark.parametrize("version", sorted(HYBRID_CHANGES, key=version_key))
def test_hybrid_layout_follows_each_release(version: str) -> None:
    fact = VLLM.catalog.release(version).facts.hybrid_kv_cache
    assert fact is not None and fact.sliding_window_blocks
    found = (fact.group_size_ratio, fact.reported_tokens, fact.chunked_local_attention, fact.linear_state_block)
    assert found == HYBRID_CHANGES[version]


QWEN3_5 = ("Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration")
LINEAR_CHANGES = {
    # version: (linear_state_block_scales, linear_state_blocks, hybrid_prefix_caching, ssm_dtype_from_config,
    #           kda_state_float32, linear_prefill_checkpoints), read by hand on both sides of each change
    "0.10.1": (False, "one", False, (), False, False),  # MambaSpec.max_memory_usage_bytes: return page_size_bytes
    "0.11.0": (False, "one", False, (), False, False),
    "0.11.1": (False, "mamba_block", False, (), True, False),  # cdiv(max_model_len, block_size); kda float32
    "0.14.1": (False, "mamba_block", False, (), True, False),
    "0.15.0": (False, "cache_mode", False, (), True, False),  # by mamba_cache_mode: all / align (2) / none (1)
    "0.16.0": (False, "cache_mode", False, (), True, False),
    "0.17.0": (False, "cache_mode", False, QWEN3_5, True, False),  # Qwen3_5ForConditionalGenerationConfig
    "0.19.1": (False, "cache_mode", False, ("ColQwen3_5", *QWEN3_5), True, False),
    "0.20.0": (True, "cache_mode", False, ("ColQwen3_5", *QWEN3_5), True, False),  # platforms/interface.py
    "0.27.1": (True, "cache_mode", False, QWEN3_5, True, False),  # default_prefix_caching ... and not is_hybrid
    "0.28.0": (True, "cache_mode", True, QWEN3_5, True, False),  # is_prefix_caching_supported: hybrid True
    "0.32.0": (True, "cache_mode", True, QWEN3_5, True, False),
    "0.33.0": (True, "cache_mode", True, QWEN3_5, True, True),  # get_mamba_prefill_checkpoint_alignment
    "0.34.0": (True, "cache_mode", True, QWEN3_5, True, True),
}


@pytest.mark.parametrize("version", sorted(LINEAR_CHANGES, key=version_key))
def test_linear_attention_layout_follows_each_release(version: str) -> None:
    fact = VLLM.catalog.release(version).facts.hybrid_kv_cache
    assert fact is not None and fact.linear_state_block == 16
    found = (
        fact.linear_state_block_scales,
        fact.linear_state_blocks,
        fact.hybrid_prefix_caching,
        fact.ssm_dtype_from_config,
        fact.kda_state_float32,
        fact.linear_prefill_checkpoints,
    )
    assert found == LINEAR_CHANGES[version]


@pytest.mark.parametrize("version", ["0.33.0", "0.34.0"])
def test_gdn_prefill_checkpoints_are_read_where_align_mode_adds_them(version: str) -> None:
    """gdn_attn.py FLASHINFER_GDN_CHECKPOINT_ALIGNMENT = 64; qwen_gdn_linear_attn.py's spec adds
    num_prefill_checkpoint_blocks=1 and ``_resolve_gdn_prefill_backend`` picks FlashInfer on 9.0, and on the 10.x and
    12.x families for head_k_dim 128 with a CUDA 13 runtime (read by hand in both releases)."""
    fact = VLLM.catalog.release(version).facts.hybrid_kv_cache
    assert fact is not None and fact.linear_prefill_checkpoints
    assert (fact.checkpoint_alignment, fact.checkpoint_blocks) == (64, 1)
    rules = [(g.capability, g.family, g.head_k_dim, g.cuda_runtime_min) for g in fact.checkpoint_gpus]
    assert rules == [("9.0", False, None, None), ("10.0", True, 128, 13), ("12.0", True, 128, 13)]
    assert VLLM.catalog.release("0.32.0").facts.hybrid_kv_cache.checkpoint_gpus == ()  # type: ignore[union-attr]


def test_no_hybrid_manager_before_0_9_1() -> None:
    """0.8.x-0.9.0 V1 turns sliding-window specs into full attention (kv_cache_utils.py unify_hybrid_kv_cache_specs)."""
    for version in ("0.7.3", "0.8.0", "0.8.5", "0.9.0.1"):
        assert VLLM.catalog.release(version).facts.hybrid_kv_cache is None, version
    assert VLLM.catalog.release("0.9.1").facts.hybrid_kv_cache is not None


@pytest.mark.slow
def test_builder_derives_the_catalogued_hybrid_layout_from_the_cached_sources() -> None:
    """scripts/catalog/vllm.py --memory-facts, re-run on every release whose wheel source is cached here,
    yields the facts the catalogs hold (skipped where none is cached)."""
    builder = _extractor()
    pool = json.loads((Path(engines.__file__).parent / "vllm" / "releases" / "options.json").read_text())["options"]
    checked = 0
    for version in VERSIONS:
        src = builder.CACHE / version / "src"
        if not (src / "vllm").is_dir():
            continue
        path = Path(engines.__file__).parent / "vllm" / "releases" / f"{version}.json"
        data = json.loads(path.read_text())
        options = {k: pool[v] if isinstance(v, str) else v for k, v in data["options"].items()}
        engine = data["facts"]["default_engine"]["value"]
        found, _why = builder.hybrid_kv_cache(version, src, options, engine)
        assert found == data["facts"].get("hybrid_kv_cache"), version
        sampler = builder.profile_sampler_sorts_vocab(version, src, engine)
        assert sampler == data["facts"].get("profile_sampler_sorts_vocab"), version
        checked += 1
    if not checked:
        pytest.skip("no vLLM wheel source cached (scripts/catalog/vllm.py fetches it)")


@pytest.mark.parametrize("version", VERSIONS)
def test_every_release_says_what_it_allocates_after_the_kv_cache(version: str) -> None:
    """Each release's ``post_kv_warmup`` fact, read from its worker at its tag (scripts/catalog/vllm_post_kv.py):
    every release captures CUDA graphs after the KV cache is allocated; V1 (0.8.0 on) also re-runs the sampler on
    ``min(max_num_seqs, max_num_batched_tokens)`` rows there, V0 (0.6-0.7) does not; 0.34.0 sizes its KV blocks
    after the warm-up under ``enable_extensible_kv_cache``."""
    release = VLLM.catalog.release(version)
    fact = release.facts.post_kv_warmup
    assert fact is not None, version
    pinned = f"/blob/v{version}/"
    urls = [part.split(" ")[0] for part in fact.source.split("; ")]
    assert all(pinned in u and "#L" in u for u in urls), (version, fact.source)
    engine = release.facts.default_engine
    v1 = engine is not None and engine.value == "v1"
    assert fact.cuda_graphs, version
    assert fact.sampler == v1, version
    assert len(urls) == (3 if v1 else 2), version  # the warm-up, capture_model and (V1) _dummy_sampler_run lines
    key = version_key(version)
    assert fact.sized_after_warmup_option == ("enable_extensible_kv_cache" if key >= (0, 34) else None), version


def _script(name: str) -> ModuleType:
    """One of scripts/catalog's extractors, imported from its file."""
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _post_kv_extractor() -> ModuleType:
    return _script("vllm_post_kv")


def _unpacked_sdists() -> Iterator[tuple[str, Path, dict[str, Any]]]:
    """(release, its unpacked sdist's source, its catalogued facts) for every release whose sdist is cached here;
    skips the test when none is."""
    sdists = _script("vllm_mxfp4").SDISTS
    found = 0
    for version in VERSIONS:
        src = sdists / version / "src"
        if (src / "vllm").is_dir():
            found += 1
            path = Path(engines.__file__).parent / "vllm" / "releases" / f"{version}.json"
            yield version, src, json.loads(path.read_text())["facts"]
    if not found:
        pytest.skip("no vLLM sdist unpacked (scripts/catalog/vllm_mxfp4.py fetches them)")


def test_post_kv_reader_follows_the_workers_own_helpers(tmp_path: Path) -> None:
    """The reader follows ``self.<helper>()`` calls of the worker class from ``compile_or_warm_up_model`` and
    reports only the calls it reaches (a sampler call in another method does not count)."""
    worker = tmp_path / "vllm" / "v1" / "worker" / "gpu_worker.py"
    worker.parent.mkdir(parents=True)
    worker.write_text(
        "class Worker:\n"
        "    def compile_or_warm_up_model(self):\n"
        "        self._graphs()\n"
        "    def _graphs(self):\n"
        "        self.model_runner.capture_model()\n"
        "    def unrelated(self):\n"
        "        self.model_runner._dummy_sampler_run(None)\n"
    )
    reader = _post_kv_extractor()
    found = reader.post_kv_warmup("9.9.9", tmp_path, "v1")
    assert found is not None
    assert (found["cuda_graphs"], found["sampler"], found["sized_after_warmup_option"]) == (True, False, None)
    assert "gpu_worker.py#L5 (capture_model)" in found["source"]
    worker.write_text(worker.read_text().replace("self._graphs()", "self._graphs()\n        self.unrelated()"))
    found = reader.post_kv_warmup("9.9.9", tmp_path, "v1")
    assert found is not None and found["sampler"] is True
    assert reader.post_kv_warmup("9.9.9", tmp_path, "v0") is None  # no V0 worker file


@pytest.mark.slow
def test_post_kv_reader_reproduces_the_catalogued_facts_from_the_cached_sources() -> None:
    """scripts/catalog/vllm_post_kv.py re-run on every release whose sdist is unpacked here gives the catalogued
    fact (skipped where none is cached)."""
    reader = _post_kv_extractor()
    for version, src, facts in _unpacked_sdists():
        engine = facts["default_engine"]["value"]
        assert reader.post_kv_warmup(version, src, engine) == facts["post_kv_warmup"], version
        assert reader.v0_chunked_prefill_above(version, src) == facts.get("v0_chunked_prefill_above"), version


@pytest.mark.parametrize("version", VERSIONS)
def test_every_release_with_a_v0_engine_says_when_it_chunks_long_prefills(version: str) -> None:
    """``v0_chunked_prefill_above``: arg_utils.py ``use_long_context = max_model_len > 32768`` in every release that
    still has the V0 engine (0.5.3-0.10.2, vllm/engine/llm_engine.py), none from 0.11.0 (V1 only), and none before
    0.5.3, whose arg_utils.py never turns chunked prefill on by itself (the estimator reads its absence so for a
    catalogued V0 release)."""
    fact = VLLM.catalog.release(version).facts.v0_chunked_prefill_above
    if version_key(version) >= (0, 11) or version_key(version) < (0, 5, 3):
        assert fact is None, version
        return
    assert fact is not None and fact.value == 32768, version
    assert f"/blob/v{version}/vllm/engine/arg_utils.py#L" in fact.source, version


@pytest.mark.parametrize("version", VERSIONS)
def test_every_release_with_a_v0_engine_says_how_its_profile_run_samples(version: str) -> None:
    """``profile_sampler_v0_sorts_vocab``, read by scripts/catalog/vllm_sampler.py: every release that still ships
    the V0 engine (0.4.1-0.10.2: the default_engine fact's v0 releases and those with a
    ``v0_chunked_prefill_above`` fact) profiles with ``SamplingParams(top_p=0.99, top_k=vocab_size - 1)`` over
    ``max_num_seqs`` dummy groups and sorts in ``_apply_top_k_top_p``, each cited at its tag; a V1-only release
    (0.11.0 on) has no such fact."""
    release = VLLM.catalog.release(version)
    fact = release.facts.profile_sampler_v0_sorts_vocab
    engine = release.facts.default_engine
    if release.facts.v0_chunked_prefill_above is None and (engine is None or engine.value != "v0"):
        assert fact is None, version
        return
    assert fact is not None and fact.value is True, version
    urls = [part.split(" ")[0] for part in fact.source.split("; ")]
    pinned = f"https://github.com/vllm-project/vllm/blob/v{version}/"
    assert [u.removeprefix(pinned).split("#L")[0] for u in urls] == [
        "vllm/worker/model_runner.py",
        "vllm/worker/model_runner.py",
        "vllm/model_executor/layers/sampler.py",
    ], (version, fact.source)
    assert all("#L" in u for u in urls), (version, fact.source)


def _sampler_extractor() -> ModuleType:
    return _script("vllm_sampler")


_V0_RUNNER = """class ModelRunner:
    def profile_run(self):
        max_num_seqs = self.scheduler_config.max_num_seqs
        self._dummy_run(self.max_num_batched_tokens, max_num_seqs)

    def _dummy_run(self, max_num_batched_tokens, max_num_seqs=1):
        sampling_params = SamplingParams(top_p=0.99, top_k=self.vocab_size - 1)
        seqs = []
        for group_id in range(max_num_seqs):
            seqs.append(SequenceGroupMetadata(request_id=str(group_id), sampling_params=sampling_params))
"""

_V0_SAMPLER = """class Sampler:
    def forward(self, logits, sampling_tensors):
        logits = logits.to(torch.float)
        logits = _apply_top_k_top_p(logits, sampling_tensors.top_ps, sampling_tensors.top_ks)


def _apply_top_k_top_p(logits, p, k):
    logits_sort, logits_idx = logits.sort(dim=-1, descending=False)
    return logits_sort
"""


def test_v0_sampler_reader_needs_the_vocabulary_wide_params_the_groups_and_the_sort(tmp_path: Path) -> None:
    """The reader says True only where the profiling params ask for ``top_k = vocab - 1``, the run builds
    ``max_num_seqs`` groups, and the sampler sorts; each missing piece turns it False; no V0 runner: None."""
    reader = _sampler_extractor()
    runner = tmp_path / "vllm" / "worker" / "model_runner.py"
    sampler = tmp_path / "vllm" / "model_executor" / "layers" / "sampler.py"
    assert reader.v0_sorts("9.9.9", tmp_path) is None
    runner.parent.mkdir(parents=True)
    sampler.parent.mkdir(parents=True)
    runner.write_text(_V0_RUNNER)
    sampler.write_text(_V0_SAMPLER)
    found = reader.v0_sorts("9.9.9", tmp_path)
    assert found is not None and found["value"] is True
    assert "model_runner.py#L7 (SamplingParams" in found["source"]
    assert "model_runner.py#L9 (max_num_seqs" in found["source"]
    assert "sampler.py#L8 (_apply_top_k_top_p" in found["source"]
    for path, old, new in (
        (runner, "top_k=self.vocab_size - 1", "top_k=-1"),  # no top-k over the vocabulary: nothing to sort
        (runner, "range(max_num_seqs)", "range(1)"),
        (sampler, "logits.sort(", "logits.topk("),
        (sampler, "logits = _apply_top_k_top_p(", "logits = flashinfer_sample("),
    ):
        original = path.read_text()
        path.write_text(original.replace(old, new))
        changed = reader.v0_sorts("9.9.9", tmp_path)
        assert changed is not None and changed["value"] is False, (old, new)
        path.write_text(original)


@pytest.mark.slow
def test_v0_sampler_reader_reproduces_the_catalogued_facts_from_the_cached_sources() -> None:
    """scripts/catalog/vllm_sampler.py re-run on every release whose sdist is unpacked here gives the catalogued
    ``profile_sampler_v0_sorts_vocab`` (skipped where none is cached)."""
    reader = _sampler_extractor()
    for version, src, facts in _unpacked_sdists():
        assert reader.v0_sorts(version, src) == facts.get("profile_sampler_v0_sorts_vocab"), version


@pytest.mark.parametrize("version", VERSIONS)
def test_speculative_memory_per_release(version: str) -> None:
    """``speculative_memory``, read by scripts/catalog/vllm_speculative.py: every release with a
    ``SpeculativeConfig.hf_config_override`` (0.7.3 on) reads DeepSeek's ``num_nextn_predict_layers`` as an MTP
    draft's layer count, Qwen3.5's ``mtp_num_hidden_layers`` from 0.17.0 (qwen3_5 joins then); a linear layer's
    state holds the speculative tokens' blocks from 0.15.0 (``MambaSpec.max_memory_usage_bytes``); the sampler
    warm-up's rejection logits hold a draft row per dummy request from 0.8.1 and a bonus row too from 0.11.1 (0.34.0's
    model runner is not read); each cited at the release's tag."""
    fact = VLLM.catalog.release(version).facts.speculative_memory
    key = version_key(version)
    if key < (0, 7, 3):
        assert fact is None, version
        return
    assert fact is not None, version
    assert fact.mtp_layer_keys[0] == "num_nextn_predict_layers", version
    assert ("mtp_num_hidden_layers" in fact.mtp_layer_keys) == (key >= (0, 17)), version
    assert fact.linear_state_speculative_blocks == (key >= (0, 15)), version
    rows = 0 if key < (0, 8, 1) or key >= (0, 34) else 1 if key < (0, 11, 1) else 2
    assert fact.profile_rejection_rows == rows, version
    for part in fact.source.split("; "):
        assert part.startswith(f"https://github.com/vllm-project/vllm/blob/v{version}/vllm/"), (version, part)


def _speculative_extractor() -> ModuleType:
    return _script("vllm_speculative")


_SPEC_CONFIG = """class SpeculativeConfig:
    @staticmethod
    def hf_config_override(hf_config):
        if hf_config.model_type == "deepseek_mtp":
            n_predict = getattr(hf_config, "num_nextn_predict_layers", None)
        if hf_config.model_type == "qwen3_5":
            n_predict = getattr(hf_config, "mtp_num_hidden_layers", None)
            other = getattr(hf_config, "text_config", None)
        return hf_config
"""
_MAMBA_SPEC = """class MambaSpec:
    def max_memory_usage_bytes(self, vllm_config):
        if vllm_config.cache_config.mamba_cache_mode == "align":
            return self.page_size_bytes * (2 + self.num_speculative_blocks)
        else:
            return self.page_size_bytes * (1 + self.num_speculative_blocks)
"""


_RUNNER = """class GPUModelRunner:
    def _dummy_sampler_run(self, hidden_states):
        logits = self.model.compute_logits(hidden_states)
        if self.speculative_config:
            logits = torch.randn(num_tokens + num_reqs, logits.shape[-1], device=self.device)
            self.rejection_sampler(metadata, None, logits, dummy_metadata)
"""


def test_speculative_reader_on_a_small_source(tmp_path: Path) -> None:
    """The reader takes the fields assigned to ``n_predict`` (not other ``getattr`` reads) in first-read order, and the
    state's speculative blocks from the method's last ``return`` only."""
    reader = _speculative_extractor()
    (tmp_path / "vllm" / "config").mkdir(parents=True)
    (tmp_path / "vllm" / "v1").mkdir()
    (tmp_path / "vllm" / "config" / "speculative.py").write_text(_SPEC_CONFIG)
    spec = tmp_path / "vllm" / "v1" / "kv_cache_interface.py"
    spec.write_text(_MAMBA_SPEC)
    found = reader.fact("9.9.9", tmp_path)
    assert found["mtp_layer_keys"] == ["num_nextn_predict_layers", "mtp_num_hidden_layers"]
    assert found["linear_state_speculative_blocks"] is True
    assert "blob/v9.9.9/vllm/config/speculative.py#L3" in found["source"]
    spec.write_text(_MAMBA_SPEC.replace("(1 + self.num_speculative_blocks)", "1"))
    assert reader.fact("9.9.9", tmp_path)["linear_state_speculative_blocks"] is False
    assert reader.fact("9.9.9", tmp_path)["profile_rejection_rows"] == 0  # no model runner
    runner = tmp_path / "vllm" / "v1" / "worker" / "gpu_model_runner.py"
    runner.parent.mkdir()
    runner.write_text(_RUNNER)
    assert reader.fact("9.9.9", tmp_path)["profile_rejection_rows"] == 2
    runner.write_text(_RUNNER.replace("num_tokens + num_reqs", "num_tokens"))
    assert reader.fact("9.9.9", tmp_path)["profile_rejection_rows"] == 1
    runner.write_text(_RUNNER.replace("self.rejection_sampler(", "print("))
    assert reader.fact("9.9.9", tmp_path)["profile_rejection_rows"] == 0
    runner.unlink()
    spec.unlink()
    (tmp_path / "vllm" / "config" / "speculative.py").unlink()
    assert reader.fact("9.9.9", tmp_path) is None


@pytest.mark.slow
def test_speculative_reader_reproduces_the_catalogued_facts_from_the_cached_sources() -> None:
    """scripts/catalog/vllm_speculative.py re-run on every release whose sdist is unpacked here gives the catalogued
    ``speculative_memory`` (skipped where none is cached)."""
    reader = _speculative_extractor()
    for version, src, facts in _unpacked_sdists():
        assert reader.fact(version, src) == facts.get("speculative_memory"), version
