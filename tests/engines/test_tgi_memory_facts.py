"""TGI's memory facts per release (facts.tgi_memory and facts.context_default, scripts/catalog/tgi_memory.py)
and the warm-up arithmetic engines/tgi/memory.py computes from them.

Each expected number below is the arithmetic of the release's own source, at the line cited."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from servespec import engines
from servespec.engines.catalog import ContextDefault, EngineRelease, TgiMemory
from servespec.engines.tgi import memory as tgi_memory
from servespec.knowledge import gpus, models
from servespec.knowledge.gpus import GpuModel
from servespec.knowledge.memory import GIB, EstimateInput, GpuEstimate, cuda_total_gib

TGI = engines.get("tgi")

REQUIRED = {
    # what engines/tgi/memory.py reads of each prefill variant
    "input_plus": ("margin",),
    "min_position": (),
    "compute_optimal": ("card_names", "card_tflops", "min_optimal", "vram_wiggle"),
}


def _releases() -> list[EngineRelease]:
    return [TGI.catalog.release(v) for v in TGI.catalog.versions]


def _facts(release: EngineRelease) -> TgiMemory:
    facts = release.facts.tgi_memory
    assert facts is not None, f"tgi {release.version}: no facts.tgi_memory"
    return facts


def _card(name: str) -> GpuModel:
    card = gpus.resolve(name)
    assert isinstance(card, GpuModel)
    return card


def _input(
    version: str | EngineRelease, model: str, gpu: str, tp: int = 1, **options: float
) -> tuple[EstimateInput, GpuModel]:
    release = version if isinstance(version, EngineRelease) else TGI.catalog.release(version)
    found = models.catalogued(model)
    assert found is not None
    card = _card(gpu)
    inp = EstimateInput(
        engine="tgi",
        release=release,
        model=found,
        gpu=card,
        tensor_parallel=tp,
        options=dict(options),
        max_model_len=4096,
        kv_cache_dtype_option="kv_cache_dtype",
    )
    return inp, card


def _estimate(version: str | EngineRelease, model: str, gpu: str, **options: float) -> GpuEstimate:
    plan = TGI.estimate(_input(version, model, gpu, **options)[0])
    assert plan is not None
    return plan


def test_every_catalogued_release_has_the_memory_facts_the_estimate_reads() -> None:
    """memory-facts: a release without them (or with a variant lacking a constant) fails here."""
    releases = _releases()
    assert len(releases) >= 29  # 2.0.0 -> 3.3.7
    for release in releases:
        facts = _facts(release)
        tag = f"/v{release.version}/"
        assert 0 < facts.wiggle_room < 1 and tag in facts.wiggle_source and "#L" in facts.wiggle_source
        assert "paged" in facts.block_sizes and facts.default_attention in facts.block_sizes
        assert tag in facts.attention_source and "#L" in facts.attention_source
        assert facts.warmup_logits_copies in (0, 1, 2) and "#L" in facts.warmup_logits_source
        # the gathered head's transposed logits cost 3 tensors wherever the logits are kept at all
        assert facts.warmup_logits_copies_sharded == (3 if facts.warmup_logits_copies else 0)
        assert facts.mlp_intermediates == 4 and facts.free_read_cached
        assert facts.warmup_peak_source.count(tag) == 3 and facts.warmup_peak_source.count("#L") == 3
        rule = facts.prefill_default
        assert rule.tokens > 0 and tag in rule.source and "#L" in rule.source
        for name in REQUIRED[rule.variant]:
            assert getattr(rule, name), f"{release.version}: {rule.variant} lacks {name}"
        assert set(rule.card_names.values()) <= set(rule.card_tflops)
        context = release.facts.context_default
        assert context is not None and tag in context.source and "#L" in context.source
        assert context.kv_capacity or context.cap
        assert isinstance(release.default("cuda_memory_fraction"), float)  # the launcher's clap default
        # and the estimate answers from them alone
        plan = _estimate(release, "mistralai/Mistral-7B-v0.1", "NVIDIA A100-SXM4-80GB")
        assert plan.kv_tokens > 0 and f"TGI_WIGGLE_ROOM {facts.wiggle_room}" in " ".join(plan.notes)


def test_no_memory_facts_no_answer() -> None:
    """Without the release's facts the estimate says unknown rather than guessing constants."""
    release = TGI.catalog.release("3.3.7")
    bare = EngineRelease(
        release.engine,
        release.version,
        release.source,
        release.options,
        release.facts.model_copy(update={"tgi_memory": None}),
    )
    inp, _ = _input(bare, "mistralai/Mistral-7B-v0.1", "NVIDIA A100-SXM4-80GB")
    assert TGI.estimate(inp) is None


def test_the_facts_follow_the_releases() -> None:
    """The constants change where the source changed (flash_causal_lm.py warmup, models/globals.py, launcher)."""
    facts = {v: _facts(TGI.catalog.release(v)) for v in TGI.catalog.versions}
    # 2.0-2.2: `int((free_memory * 0.95) // total_cache_size)`; 2.3: TGI_WIGGLE_ROOM "0.95"; 2.4: "0.90"
    assert (facts["2.0.0"].wiggle_room, facts["2.0.0"].wiggle_of) == (0.95, "free")
    assert (facts["2.3.1"].wiggle_room, facts["2.4.0"].wiggle_room, facts["2.4.1"].wiggle_of) == (0.95, 0.9, "free")
    # 3.0: get_free_memory(device, MEMORY_FRACTION * TGI_WIGGLE_ROOM) with "0.95"; 3.1-3.2: "0.93"; 3.3: "0.90"
    assert (facts["3.0.0"].wiggle_room, facts["3.0.0"].wiggle_of) == (0.95, "total")
    assert (facts["3.1.0"].wiggle_room, facts["3.2.3"].wiggle_room, facts["3.3.0"].wiggle_room) == (0.93, 0.93, 0.9)
    # BLOCK_SIZE: 16 before 2.1.1; flashinfer (1 per block) the launcher's default from 2.3.0
    assert facts["2.0.0"].block_sizes == {"paged": 16} and facts["2.2.0"].default_attention == "paged"
    assert facts["2.3.0"].block_sizes["flashinfer"] == 1 and facts["3.3.7"].default_attention == "flashinfer"
    assert facts["3.3.7"].block_sizes["flashdecoding"] == 256 and facts["3.3.7"].fallback_attention == "by_capability"
    # warm-up logits: logits + log_softmax (2.0-2.3), in place (2.4), dropped without REQUEST_LOGPROBS (3.0 on)
    copies = [facts[v].warmup_logits_copies for v in ("2.0.0", "2.3.1", "2.4.0", "2.4.1", "3.0.0", "3.3.7")]
    assert copies == [2, 2, 1, 1, 0, 0]
    sharded = [facts[v].warmup_logits_copies_sharded for v in ("2.0.0", "2.3.1", "2.4.0", "2.4.1", "3.0.0", "3.3.7")]
    assert sharded == [3, 3, 3, 3, 0, 0]
    # the gathered head lived in utils/layers.py before 2.1 (layers/tensor_parallel.py after)
    assert "utils/layers.py" in facts["2.0.0"].warmup_peak_source
    assert "layers/tensor_parallel.py" in facts["3.3.7"].warmup_peak_source
    variants = [facts[v].prefill_default.variant for v in ("2.0.0", "2.4.0", "2.4.1", "3.0.0", "3.3.7")]
    assert variants == ["input_plus", "input_plus", "min_position", "compute_optimal", "compute_optimal"]
    assert facts["3.3.7"].prefill_default.by_model_type == {"qwen2_vl": 10000, "qwen2_5_vl": 10000, "gemma3": 8000}
    assert facts["3.0.0"].prefill_default.card_tflops["H100"] == 900


@pytest.mark.parametrize(
    ("version", "model", "gpu", "expected"),
    [
        # 2.0.0 launcher/src/main.rs#L1344: max_input_tokens + 50, max_input_tokens = min(32768, 4096) - 1
        ("2.0.0", "mistralai/Mistral-7B-v0.1", "NVIDIA A100-SXM4-80GB", 4095 + 50),
        # 2.4.1 launcher#L1732: 4096.min(max_position_embeddings)
        ("2.4.1", "mistralai/Mistral-7B-v0.1", "NVIDIA A100-SXM4-80GB", 4096),
        # 3.3.7 launcher compute_optimal: H100 900e12 / Config::flop of Llama-3.1-8B, per layer
        # 2*128*4096*(4*32 + 2*8) + 6*4096*14336 = 503,316,480, times 32 layers = 16,106,127,360 -> 55,879
        # (below max_position_embeddings 131072 and vram_maximum's ~256k tokens)
        ("3.3.7", "meta-llama/Llama-3.1-8B", "NVIDIA H100 80GB HBM3", 900 * 10**12 // 16_106_127_360),
        # 3.3.7 on an A100 (312 TFLOPs): 19,371
        ("3.3.7", "meta-llama/Llama-3.1-8B", "NVIDIA A100-SXM4-80GB", 312 * 10**12 // 16_106_127_360),
        # 3.0.0 has no H200 in its card table: compute_optimal is None -> 4096
        ("3.0.0", "meta-llama/Llama-3.1-8B", "NVIDIA H200", 4096),
    ],
)
def test_prefill_default_is_the_launchers(version: str, model: str, gpu: str, expected: int) -> None:
    inp, card = _input(version, model, gpu)
    release = inp.release
    assert release is not None
    assert tgi_memory.prefill_tokens(inp, _facts(release), card, 1.0) == expected


def test_a_given_prefill_budget_wins() -> None:
    inp, card = _input("3.3.7", "meta-llama/Llama-3.1-8B", "NVIDIA H100 80GB HBM3", max_batch_prefill_tokens=2048)
    assert inp.release is not None
    assert tgi_memory.prefill_tokens(inp, _facts(inp.release), card, 1.0) == 2048


def test_attention_and_block_size_follow_the_launcher() -> None:
    facts = _facts(TGI.catalog.release("3.3.7"))
    llama = models.catalogued("meta-llama/Llama-3.1-8B")
    assert llama is not None
    assert tgi_memory.block_size(facts, llama, _card("NVIDIA H100 80GB HBM3")) == 1  # flashinfer
    odd = llama.__class__(**{**llama.__dict__, "head_dim": 80})  # a head dim flashinfer does not take
    assert tgi_memory.attention(facts, odd, _card("NVIDIA H100 80GB HBM3")) == "flashdecoding"
    assert tgi_memory.attention(facts, odd, _card("Tesla T4")) == "paged"  # below compute capability 8
    assert tgi_memory.block_size(facts, odd, _card("Tesla T4")) == 16


def _total_variant(release: EngineRelease, wiggle: float, shape: str) -> EngineRelease:
    facts = _facts(release).model_copy(update={"wiggle_room": wiggle, "wiggle_of": shape})
    return EngineRelease(
        release.engine,
        release.version,
        release.source,
        release.options,
        release.facts.model_copy(update={"tgi_memory": facts}),
    )


def test_the_wiggle_room_cuts_the_total_from_3_0_and_the_free_memory_before() -> None:
    """3.x: KV = fraction × W × total - used, so W moves it by ΔW × total; 2.x: KV = W × (fraction × total - used)
    + (1 - W) × the warm-up batch's KV, so W scales what the warm-up prefill left."""
    release = TGI.catalog.release("3.3.7")
    gpu, model = "NVIDIA A100-SXM4-80GB", "mistralai/Mistral-7B-v0.1"
    total = cuda_total_gib(_card(gpu))
    high = _estimate(_total_variant(release, 0.9, "total"), model, gpu, max_batch_prefill_tokens=4096)
    low = _estimate(_total_variant(release, 0.8, "total"), model, gpu, max_batch_prefill_tokens=4096)
    assert high.kv_cache_gib - low.kv_cache_gib == pytest.approx(0.1 * total, abs=0.02)
    used = 0.9 * total - high.kv_cache_gib  # what the warm-up prefill left used
    free = _estimate(_total_variant(release, 0.9, "free"), model, gpu, max_batch_prefill_tokens=4096)
    warm = 4096 * free.kv_bytes_per_token / GIB
    assert free.kv_cache_gib == pytest.approx(0.9 * (total - used) + 0.1 * warm, abs=0.02)


def test_cuda_memory_fraction_scales_the_budget() -> None:
    gpu, model = "NVIDIA A100-SXM4-80GB", "mistralai/Mistral-7B-v0.1"
    total = cuda_total_gib(_card(gpu))
    for version in ("2.0.0", "3.3.7"):
        wiggle = _facts(TGI.catalog.release(version)).wiggle_room
        whole = _estimate(version, model, gpu, max_batch_prefill_tokens=4096)
        half = _estimate(version, model, gpu, max_batch_prefill_tokens=4096, cuda_memory_fraction=0.5)
        assert whole.kv_cache_gib - half.kv_cache_gib == pytest.approx(wiggle * 0.5 * total, abs=0.02)


def test_the_warm_up_logits_are_counted_where_the_release_keeps_them() -> None:
    """2.0.0 holds logits and log_softmax over every prefill token (2 × tokens × vocab × 2 bytes) at its peak."""
    gpu, model = "NVIDIA A100-SXM4-80GB", "mistralai/Mistral-7B-v0.1"
    release = TGI.catalog.release("2.0.0")
    none = release.facts.model_copy(
        update={"tgi_memory": _facts(release).model_copy(update={"warmup_logits_copies": 0})}
    )
    bare = EngineRelease(release.engine, release.version, release.source, release.options, none)
    kept = _estimate(release, model, gpu, max_batch_prefill_tokens=8192)
    dropped = _estimate(bare, model, gpu, max_batch_prefill_tokens=8192)
    logits = 2 * 8192 * 32000 * 2 / GIB  # Mistral-7B's vocabulary, bf16
    assert dropped.kv_cache_gib - kept.kv_cache_gib == pytest.approx(0.95 * logits, abs=0.02)


def test_the_catalog_is_what_the_builder_reads_from_each_tag() -> None:
    """scripts/catalog/tgi_memory.py on every catalogued tag gives the catalog's facts (skipped without a snapshot
    of github.com/huggingface/text-generation-inference: none is downloaded by a test)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts" / "catalog"))
    import gitsrc
    import tgi_memory as builder

    repo = gitsrc.mirror("huggingface", "text-generation-inference") or gitsrc.CACHE / (
        "huggingface+text-generation-inference.git"
    )
    if not (repo / "HEAD").is_file():
        pytest.skip("no git snapshot of huggingface/text-generation-inference (SERVESPEC_GIT_MIRRORS or the cache)")
    for release in _releases():
        tag = f"v{release.version}"

        def show(path: str, tag: str = tag) -> str | None:
            return gitsrc.show(repo, tag, path)

        assert release.facts.tgi_memory == TgiMemory.model_validate(builder.memory_facts(tag, show)), tag
        assert release.facts.context_default == ContextDefault.model_validate(builder.context_default(tag, show)), tag


def _peak_input(version: str, model: str, tp: int) -> tuple[EstimateInput, TgiMemory]:
    inp, _ = _input(version, model, "NVIDIA A100-SXM4-80GB", tp=tp)
    assert inp.release is not None
    return inp, _facts(inp.release)


def test_the_warm_up_peak_of_a_sharded_head_is_three_logits_tensors_and_its_shard() -> None:
    """2.4.0, Llama-3.1-70B over 2 shards, 10,049 prefill tokens (tests/data/startup_logs/tgi/004): the gathered
    head returns world_out.T; log_softmax in place copies it contiguous and writes a temporary, so 3 bf16
    [10049 × 128256] tensors live at once (2.40 GiB each), and the head's local half (1.20 GiB) stays cached."""
    inp, facts = _peak_input("2.4.0", "meta-llama/Llama-3.1-70B-Instruct", 2)
    one = 10049 * 128256 * 2 / GIB
    layers = 10049 * (4 * 28672 / 2 + 4 * 8192) * 2 / GIB  # gate_up, act, product at intermediate/shard
    roomy = tgi_memory.warmup_peak(inp, facts, 10049, room=100.0)
    assert roomy.logits == pytest.approx(3 * one) and roomy.head_shard == pytest.approx(one / 2)
    assert roomy.layers == pytest.approx(layers)
    assert roomy.held == pytest.approx(layers + 3.5 * one)  # all of it cached when the free memory is read
    # less room than that sum: a cudaMalloc failed and the allocator released its cache: the largest live set
    tight = tgi_memory.warmup_peak(inp, facts, 10049, room=layers + 3.5 * one - 0.1)
    assert tight.held == pytest.approx(3 * one) and "released" in tight.note
    emptied = facts.model_copy(update={"free_read_cached": False})
    assert tgi_memory.warmup_peak(inp, emptied, 10049, room=100.0).held == 0.0


def test_one_shard_or_an_uneven_vocabulary_keeps_the_release_s_single_tensor_count() -> None:
    one = 4096 * 128256 * 2 / GIB
    for version, copies in (("2.0.0", 2), ("2.4.0", 1), ("3.3.7", 0)):
        inp, facts = _peak_input(version, "meta-llama/Llama-3.1-8B", 1)
        peak = tgi_memory.warmup_peak(inp, facts, 4096, room=100.0)
        assert peak.logits == pytest.approx(copies * one) and peak.head_shard == 0.0, version
    # 5 shards do not divide 128,256: TGI loads the whole head on each shard (no gather, a contiguous output)
    inp, facts = _peak_input("2.4.0", "meta-llama/Llama-3.1-8B", 5)
    assert 128256 % 5 and tgi_memory.warmup_peak(inp, facts, 4096, room=100.0).logits == pytest.approx(one)
    inp, facts = _peak_input("2.4.0", "meta-llama/Llama-3.1-8B", 2)
    assert tgi_memory.warmup_peak(inp, facts, 4096, room=100.0).logits == pytest.approx(3 * one)


def test_the_estimate_takes_the_warm_up_peak_from_the_release() -> None:
    """Removing the sharded copies from 2.4.0's facts raises a 2-shard 70B estimate by W × what they held."""
    release = TGI.catalog.release("2.4.0")
    model, gpu = "meta-llama/Llama-3.1-70B-Instruct", "NVIDIA A100-SXM4-80GB"
    inp, _ = _input(release, model, gpu, tp=2, max_batch_prefill_tokens=2048)
    kept = TGI.estimate(inp)
    none = release.facts.model_copy(
        update={"tgi_memory": _facts(release).model_copy(update={"warmup_logits_copies_sharded": 0})}
    )
    bare = EngineRelease(release.engine, release.version, release.source, release.options, none)
    dropped = TGI.estimate(_input(bare, model, gpu, tp=2, max_batch_prefill_tokens=2048)[0])
    assert kept is not None and dropped is not None
    one = 2048 * 128256 * 2 / GIB
    # without sharded copies the single-shard count (1, in place) applies and no shard is cached
    assert dropped.kv_cache_gib - kept.kv_cache_gib == pytest.approx(0.9 * (3.5 * one - one), abs=0.01)
    assert any("logits 3 x" in note for note in kept.notes)


def test_the_warm_up_batch_is_the_router_s_requests() -> None:
    """2.0-2.4.0 send requests of max_input_length, each holding max_total_tokens - 1 tokens of blocks; from 2.4.1
    requests of max_input_tokens if set (else one), holding max_total_tokens - 1 if set, else their prompt."""
    facts = {v: _facts(TGI.catalog.release(v)) for v in ("2.0.0", "2.4.0", "2.4.1", "3.3.7")}
    assert [facts[v].warmup_requests for v in facts] == ["input_steps"] * 2 + ["input_optional"] * 2
    assert all("#L" in facts[v].warmup_requests_source for v in facts)
    # tests/data/startup_logs/tgi/003: 2.0.0, max_input 8000, max_total 8512, 32768 prefill tokens: 5 requests
    # (8000 x 4 + 768), each ceil(8511 / 16) = 532 blocks of 16
    inp, _ = _input("2.0.0", "mistralai/Mistral-7B-v0.1", "NVIDIA A100-SXM4-80GB", max_input_length=8000)
    inp = replace(inp, max_model_len=8512)
    assert tgi_memory.warmup_batch_tokens(inp, facts["2.0.0"], 32768, 16) == 5 * 532 * 16
    # 004: 2.4.0, max_input 9999, 10049 prefill tokens: 2 requests (9999 + 50) of max_total - 1 tokens, block 1
    inp, _ = _input("2.4.0", "meta-llama/Llama-3.1-70B-Instruct", "NVIDIA A100-SXM4-80GB", 2, max_input_tokens=9999)
    inp = replace(inp, max_model_len=10000)
    assert tgi_memory.warmup_batch_tokens(inp, facts["2.4.0"], 10049, 1) == 2 * 9999
    # 3.3.7 without max_input_tokens: one request of the whole budget; with max_total_tokens unset (the KV cache
    # decides it) it holds its prompt only
    inp, _ = _input("3.3.7", "meta-llama/Llama-3.1-8B", "NVIDIA A100-SXM4-80GB")
    inp = replace(inp, max_model_len=16384)  # given: the request holds max_total_tokens - 1
    assert tgi_memory.warmup_batch_tokens(inp, facts["3.3.7"], 8192, 1) == 16383
    assert tgi_memory.warmup_batch_tokens(inp, facts["3.3.7"], 8192, 256) == 64 * 256  # whole blocks
    unset = replace(inp, context_default=TGI.catalog.release("3.3.7").facts.context_default)
    assert tgi_memory.warmup_batch_tokens(unset, facts["3.3.7"], 8192, 1) == 8192


def test_a_warm_up_that_does_not_fit_leaves_no_kv_cache() -> None:
    """The largest live set of the prefill beyond the memory left: TGI's warm-up fails, the estimate fits nothing."""
    inp, facts = _peak_input("2.4.0", "meta-llama/Llama-3.1-70B-Instruct", 2)
    peak = tgi_memory.warmup_peak(inp, facts, 10049, room=5.0)
    assert peak.shortfall == pytest.approx(3 * 10049 * 128256 * 2 / GIB - 5.0)
    plan = TGI.estimate(replace(inp, max_model_len=131072, options={"max_batch_prefill_tokens": 131072}))
    assert plan is not None and plan.kv_tokens <= 0


MI300X = "AMD Instinct MI300X"


def test_every_release_reads_a_rocm_builds_free_memory_like_a_cuda_one() -> None:
    """2.0.0 calls torch.cuda.mem_get_info on every build, 2.0.1-2.0.2 under ``IS_CUDA_SYSTEM or IS_ROCM_SYSTEM``,
    later ones through ``get_free_memory = get_cuda_free_memory`` under ``SYSTEM == "rocm"``; the ROCm image sets
    ``ATTENTION=paged`` from 2.3.1 (Dockerfile_amd), and 3.x's launcher reads the card with nvidia-smi."""
    for release in _releases():
        facts = _facts(release)
        tag = f"/v{release.version}/"
        assert facts.rocm_free_memory, release.version
        assert tag in facts.rocm_source and "mem_get_info" in facts.rocm_source
        image_sets = tuple(int(part) for part in release.version.split(".")) >= (2, 3, 1)
        assert facts.rocm_image_attention == ("paged" if image_sets else None), release.version
        assert ("Dockerfile_amd#L" in facts.rocm_source) == image_sets
        rule = facts.prefill_default
        assert (rule.card_query == "nvidia-smi") == (rule.variant == "compute_optimal"), release.version


def test_an_amd_card_is_sized_only_where_the_release_shows_how_rocm_reads_free_memory() -> None:
    release = TGI.catalog.release("2.0.2")
    plan = _estimate(release, "meta-llama/Meta-Llama-3-8B-Instruct", MI300X, tp=2)
    # 2 shards: 4 of the 8 KV heads each, 32 layers, 2 x 128 x 2 bytes: 64 KiB a token, 1 MiB a 16-token block
    assert plan.kv_bytes_per_token == 32 * 2 * 4 * 128 * 2
    assert any("BLOCK_SIZE 16" in note for note in plan.notes)
    assert any(note.startswith("ROCm build: free memory from torch.cuda.mem_get_info") for note in plan.notes)
    hidden = release.facts.model_copy(
        update={"tgi_memory": _facts(release).model_copy(update={"rocm_free_memory": False})}
    )
    bare = EngineRelease(release.engine, release.version, release.source, release.options, hidden)
    assert TGI.estimate(_input(bare, "meta-llama/Meta-Llama-3-8B-Instruct", MI300X, tp=2)[0]) is None
    assert TGI.estimate(_input(bare, "meta-llama/Meta-Llama-3-8B-Instruct", "NVIDIA H100 80GB HBM3")[0]) is not None


def test_the_rocm_image_attention_and_the_missing_nvidia_smi_on_an_amd_card() -> None:
    facts = _facts(TGI.catalog.release("3.3.7"))
    llama = models.catalogued("meta-llama/Llama-3.1-8B")
    assert llama is not None
    assert tgi_memory.attention(facts, llama, _card("NVIDIA H100 80GB HBM3")) == "flashinfer"
    assert tgi_memory.attention(facts, llama, _card(MI300X)) == "paged"  # ENV ATTENTION=paged of Dockerfile_amd
    assert tgi_memory.block_size(facts, llama, _card(MI300X)) == 16
    # 2.3.0's ROCm image sets none: the launcher's rule decides there too
    older = _facts(TGI.catalog.release("2.3.0"))
    assert tgi_memory.attention(older, llama, _card(MI300X)) == tgi_memory.attention(
        older, llama, _card("NVIDIA H100 80GB HBM3")
    )
    # no nvidia-smi in the ROCm image: compute_type is None, so no optimal and no vram cap -> the fallback 4096
    inp, card = _input("3.3.7", "meta-llama/Llama-3.1-8B", MI300X)
    assert tgi_memory.prefill_tokens(inp, facts, card, 1.0) == 4096
    inp, card = _input("3.3.7", "meta-llama/Llama-3.1-8B", "NVIDIA H100 80GB HBM3")
    assert tgi_memory.prefill_tokens(inp, facts, card, 1.0) == 900 * 10**12 // 16_106_127_360
