"""SGLang's hybrid SWA pool per release (facts.memory.hybrid_swa, scripts/catalog/sglang_memory.py) and the
estimate engines/sglang/swa.py makes from it.

Expected numbers are the release's own arithmetic: v0.5.23 model_executor/pool_configurator.py
``HybridSWAPoolConfigurator`` (``full = memory / (F * n_full + ratio * S * n_swa)``, ``swa = full * ratio``,
page-aligned), v0.5.1 model_executor/model_runner.py ``set_num_token_hybrid`` (the same with every layer's
bytes alike)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from servespec import engines
from servespec.engines.catalog import SglangHybridSwa
from servespec.findings import Severity
from servespec.knowledge import gpus, models, resolve
from servespec.knowledge.memory import EstimateInput, GpuEstimate
from servespec.rules.runner import check_fleet
from servespec.spec.fleet import load_fleet

SGLANG = engines.get("sglang")
KTRANSFORMERS = engines.get("ktransformers")
GIB = 1024**3


def _fact(version: str) -> SglangHybridSwa:
    memory = SGLANG.catalog.release(version).facts.memory
    assert memory is not None and memory.hybrid_swa is not None
    return memory.hybrid_swa


def test_every_catalogued_release_has_the_hybrid_swa_fact() -> None:
    """hybrid-swa: a release without it (or a hybrid one without its ratio or arithmetic) fails here."""
    releases = [SGLANG.catalog.release(v) for v in SGLANG.catalog.versions]
    releases += [KTRANSFORMERS.catalog.release(v) for v in KTRANSFORMERS.catalog.versions]
    assert len(releases) >= 95
    for release in releases:
        memory = release.facts.memory
        assert memory is not None and memory.hybrid_swa is not None, f"{release.version}: no hybrid_swa"
        fact = memory.hybrid_swa
        assert "#L" in fact.source, f"{release.version}: uncited"
        if fact.selection != "none":
            assert fact.arithmetic is not None, f"{release.version}: no arithmetic"
            assert fact.ratio_default is not None or fact.chunked_ratio_option, f"{release.version}: no ratio"
        if fact.ratio_option is not None:
            assert fact.disable_option == "disable_hybrid_swa_memory", f"{release.version}: no disable option"


def test_which_models_get_the_pool_follows_the_releases() -> None:
    assert _fact("0.4.8").selection == "none"
    assert _fact("0.4.9").architectures == () and _fact("0.4.9").chunked_ratio_option == "hybrid_kvcache_ratio"
    # 0.4.9.post3-0.5.6: any model class with a sliding window (gpt-oss's from 0.5.1)
    assert _fact("0.4.9.post3").selection == "sliding_model"
    assert "GptOssForCausalLM" not in _fact("0.4.9.post3").architectures
    assert {"GptOssForCausalLM", "Gemma3ForConditionalGeneration"} <= set(_fact("0.5.1").architectures)
    # 0.5.7 drops the sliding-window rule: only MiMo-V2 (and Llama 4 with --hybrid-kvcache-ratio)
    assert _fact("0.5.7").architectures == ("MiMoV2FlashForCausalLM", "MiMoV2MTP")
    # 0.5.8 on: an allowlist, without Gemma 2/3; Gemma 4 from 0.5.11
    assert {"GptOssForCausalLM", "Llama4ForConditionalGeneration"} <= set(_fact("0.5.8").architectures)
    assert not any(a.startswith(("Gemma2", "Gemma3")) for a in _fact("0.5.23").architectures)
    assert "Gemma4ForConditionalGeneration" not in _fact("0.5.10").architectures
    assert "Gemma4ForConditionalGeneration" in _fact("0.5.11").architectures
    assert _fact("0.5.8").arithmetic == "layer_count" and _fact("0.5.9").arithmetic == "layer_bytes"
    assert {_fact(v).ratio_default for v in ("0.4.9.post3", "0.5.8", "0.5.23")} == {0.8}


def _estimate(
    model: str, version: str, gpu: str = "NVIDIA H100 80GB HBM3", tp: int = 1, **options: object
) -> GpuEstimate:
    found = models.catalogued(model)
    card = gpus.resolve(gpu)
    assert found is not None and card is not None
    plan = SGLANG.estimate(
        EstimateInput(
            engine="sglang",
            release=SGLANG.select(version).release,
            model=found,
            gpu=card,
            tensor_parallel=tp,
            max_model_len=131072,
            options=dict(options),
            engine_version=version,
        )
    )
    assert plan is not None
    return plan


# gpt-oss-120b: 18 sliding (window 128) and 18 full layers, 8 KV heads of 64, bf16: 2048 bytes per layer and token
GPT_OSS_LAYER = 2 * 8 * 64 * 2


def test_gpt_oss_120b_with_the_pool_and_without() -> None:
    """0.5.8 (allowlist) against 0.5.7 (no pool for gpt-oss): the same KV memory, 36 / (0.8 × 18 + 18) times the
    tokens, and one 131072-token sequence needs the full layers only (plus a 128-token window)."""
    pooled = _estimate("openai/gpt-oss-120b", "0.5.8", mem_fraction_static=0.9)
    single = _estimate("openai/gpt-oss-120b", "0.5.7", mem_fraction_static=0.9)
    assert pooled.kv_cache_gib == single.kv_cache_gib > 0
    memory = pooled.kv_cache_bytes
    max_total = int(memory // (36 * GPT_OSS_LAYER))
    assert single.kv_tokens == max_total
    assert pooled.kv_tokens == int(max_total * 36 / (0.8 * 18 + 18))
    assert pooled.kv_tokens > single.kv_tokens * 1.1
    assert pooled.one_sequence_gib == round((18 * GPT_OSS_LAYER * 131072 + 18 * GPT_OSS_LAYER * 128) / GIB, 3)
    assert single.one_sequence_gib == round(36 * GPT_OSS_LAYER * 131072 / GIB, 3)
    assert any("hybrid SWA pool" in n for n in pooled.notes)
    assert not any("hybrid SWA pool" in n for n in single.notes)


def test_the_ratio_option_and_the_disable_option_change_the_answer() -> None:
    default = _estimate("openai/gpt-oss-120b", "0.5.23", mem_fraction_static=0.9)
    half = _estimate("openai/gpt-oss-120b", "0.5.23", mem_fraction_static=0.9, swa_full_tokens_ratio=0.5)
    off = _estimate("openai/gpt-oss-120b", "0.5.23", mem_fraction_static=0.9, disable_hybrid_swa_memory=True)
    memory = default.kv_cache_bytes
    assert default.kv_tokens == int(memory / (18 * GPT_OSS_LAYER + 0.8 * 18 * GPT_OSS_LAYER))
    assert half.kv_tokens == int(memory / (18 * GPT_OSS_LAYER + 0.5 * 18 * GPT_OSS_LAYER))
    assert off.kv_tokens == int(memory // (36 * GPT_OSS_LAYER))
    assert half.kv_tokens > default.kv_tokens > off.kv_tokens


def test_page_size_aligns_both_pools() -> None:
    paged = _estimate("openai/gpt-oss-120b", "0.5.23", mem_fraction_static=0.9, page_size=64)
    plain = _estimate("openai/gpt-oss-120b", "0.5.23", mem_fraction_static=0.9)
    assert paged.kv_tokens % 64 == 0 and plain.kv_tokens - 64 < paged.kv_tokens <= plain.kv_tokens


def test_gemma_3_has_the_pool_on_0_5_1_and_not_on_0_5_8() -> None:
    """Gemma 3 27B: 52 sliding and 10 full layers. 0.5.1 sizes them in two pools (its model class returns a
    window); 0.5.8's allowlist leaves it out, so every layer caches every token again."""
    pooled = _estimate("google/gemma-3-27b-it", "0.5.1", mem_fraction_static=0.9)
    single = _estimate("google/gemma-3-27b-it", "0.5.8", mem_fraction_static=0.9)
    layer = 2 * 16 * 128 * 2
    max_total = int(pooled.kv_cache_bytes // (62 * layer))
    assert pooled.kv_tokens == int(max_total * 62 / (0.8 * 52 + 10))
    assert single.kv_tokens == int(single.kv_cache_bytes // (62 * layer))
    assert pooled.one_sequence_gib < single.one_sequence_gib / 5


def test_llama_4_takes_the_pool_on_0_5_1_only_with_hybrid_kvcache_ratio() -> None:
    """0.5.1 model_config.py ``is_hybrid_model``: Llama 4 with ``--hybrid-kvcache-ratio r`` > 0 and a context above
    its chunk; model_runner.py ``set_num_token_hybrid``: ``t = (1 - r) + r * chunk / context_len``."""
    model = "meta-llama/Llama-4-Scout-17B-16E-Instruct"
    plain = _estimate(model, "0.5.1", tp=8, mem_fraction_static=0.9)
    opted = _estimate(model, "0.5.1", tp=8, mem_fraction_static=0.9, hybrid_kvcache_ratio=1.0)
    assert not any("hybrid SWA pool" in n for n in plain.notes)
    ratio = 8192 / 131072
    layer = 2 * 1 * 128 * 2  # 8 KV heads over 8 ranks
    max_total = int(opted.kv_cache_bytes // (48 * layer))
    assert opted.kv_tokens == int(max_total * 48 / (ratio * 36 + 12))
    assert opted.kv_tokens > 3 * plain.kv_tokens
    # 0.5.8 on: Llama 4 is on the allowlist, the default ratio applies without any option
    listed = _estimate(model, "0.5.8", tp=8, mem_fraction_static=0.9)
    assert listed.kv_tokens == int(int(listed.kv_cache_bytes // (48 * layer)) * 48 / (0.8 * 36 + 12))


FLEET = Path(__file__).resolve().parents[1] / "rules" / "cases" / "_fleet"
GPT_OSS_CONFIG = Path(__file__).resolve().parents[1] / "data" / "hybrid" / "openai--gpt-oss-120b.config.json"


def _gpt_oss_spec(tmp_path: Path, version: str) -> Path:
    """gpt-oss-120b (its config.json) at 131072 tokens on one H100, mem_fraction_static 0.855."""
    shutil.copytree(FLEET, tmp_path, dirs_exist_ok=True)
    shutil.copy(GPT_OSS_CONFIG, tmp_path / "config.json")
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "apiVersion: servespec/v1\nkind: Deployment\nmetadata: {name: app}\ninventory: inventory.yaml\n"
        "model:\n  source: openai/gpt-oss-120b\n  config: config.json\n  max_model_len: 131072\n"
        f'engine: {{name: sglang, version: "{version}", options: {{mem_fraction_static: 0.855}}}}\n'
        "resources: {gpu_ids: [0]}\nplacement: {hosts: [nvs8]}\n"
    )
    return spec


@pytest.mark.parametrize(("version", "pooled"), [("0.5.7", False), ("0.5.8", True), ("0.5.23", True)])
def test_mem002_reads_the_pool_of_the_release(tmp_path: Path, version: str, pooled: bool) -> None:
    """One 131072-token sequence needs 9.00 GiB with every layer at full length and 4.50 GiB with the hybrid pool
    (18 full layers, 18 windows of 128); about 6.4 GiB is left. Without the pool (0.5.7) SGLang caps max_req_len:
    a MEM002 warning, never an error; with it nothing is reported."""
    spec = _gpt_oss_spec(tmp_path, version)
    fleet = load_fleet([spec])
    known = resolve.resolved(fleet.deployments[0])
    plan = known.estimate_on(known.hosts[0])
    assert plan is not None
    findings = [f for f in check_fleet(fleet) if f.rule in ("MEM001", "MEM002")]
    if pooled:
        assert plan.one_sequence_gib < plan.kv_cache_gib < 9.0, plan
        assert findings == []
    else:
        assert plan.kv_cache_gib < plan.one_sequence_gib, plan
        assert [(f.rule, f.severity) for f in findings] == [("MEM002", Severity.WARNING)]
