"""SGLang's memory facts per release (facts.memory, scripts/catalog/sglang_memory.py) and the
default ``mem_fraction_static`` engines/sglang/memory.py computes from them.

Each expected number below is the arithmetic of the release's own source, at the line cited."""

from __future__ import annotations

from dataclasses import replace

import pytest

from servespec import engines
from servespec.engines.catalog import EngineRelease, SglangMemory
from servespec.engines.sglang import memory as sglang_memory
from servespec.knowledge import gpus, models
from servespec.knowledge.gpus import GpuModel
from servespec.knowledge.memory import EstimateInput

SGLANG = engines.get("sglang")
KTRANSFORMERS = engines.get("ktransformers")

REQUIRED = {
    # what engines/sglang/memory.py reads of each variant
    "parallel_table": ("parallel", "by_parallel"),
    "reserved_by_gpu": ("parallel", "rows"),
    "reserved_formula": (
        "constant_mib",
        "activation_min_tokens",
        "mib_per_token",
        "mib_per_graph_bs",
        "parallel_divisor",
        "parallel_mib",
        "floor_above_mib",
        "floor_mib",
        "defaults_by_gpu",
        "tp_split",
    ),
}


def _releases() -> list[EngineRelease]:
    return [SGLANG.catalog.release(v) for v in SGLANG.catalog.versions] + [
        KTRANSFORMERS.catalog.release(v) for v in KTRANSFORMERS.catalog.versions
    ]


def test_every_catalogued_release_has_the_memory_facts_the_arithmetic_reads() -> None:
    """memory-facts: a release without them (or with a variant lacking a constant) fails here."""
    releases = _releases()
    assert len(releases) >= 95  # 92 SGLang releases, 3 KTransformers (sglang-kt) releases
    for release in releases:
        memory = release.facts.memory
        assert memory is not None, f"{release.engine} {release.version}: no facts.memory"
        fraction = memory.fraction_default
        for name in REQUIRED[fraction.variant]:
            assert getattr(fraction, name) is not None, f"{release.version}: {fraction.variant} lacks {name}"
        assert f"{release.version}" in fraction.source and "#L" in fraction.source
        assert memory.pool_baseline.value == "total_minus_reserved" and "#L" in memory.pool_baseline.source
        if memory.multimodal is not None:
            assert "#L" in memory.multimodal.source
        if fraction.variant == "reserved_formula":
            rows = fraction.defaults_by_gpu or ()
            assert rows[-1][0] is None and all(r[0] is not None for r in rows[:-1])


def test_the_variants_follow_the_releases() -> None:
    """The shape changes where the source changed (scripts/catalog/sglang_memory.py raises on an unknown one)."""
    variant = {v: SGLANG.catalog.release(v).facts.memory.fraction_default.variant for v in SGLANG.catalog.versions}  # type: ignore[union-attr]
    assert variant["0.4.0"] == variant["0.4.7"] == "parallel_table"
    assert variant["0.4.7.post1"] == variant["0.5.2"] == "reserved_by_gpu"
    assert variant["0.5.3"] == variant["0.5.23"] == "reserved_formula"


def _fraction(version: str, gpu: str, tp: int = 1, model: str = "Qwen/Qwen2.5-7B-Instruct", **options: int) -> float:
    release = SGLANG.catalog.release(version)
    memory = release.facts.memory
    assert isinstance(memory, SglangMemory)
    found = models.catalogued(model)
    card = gpus.resolve(gpu)
    assert found is not None and isinstance(card, GpuModel)
    inp = EstimateInput(
        engine="sglang", release=release, model=found, gpu=card, tensor_parallel=tp, options=dict(options)
    )
    return round(sglang_memory.default_fraction(inp, card, memory) * sglang_memory.multimodal_cut(inp, memory), 3)


H100 = 81559  # gpus.resolve("NVIDIA H100 80GB HBM3").memory_mib
H200 = 143771
RTX4090 = 24564


@pytest.mark.parametrize(
    ("version", "gpu", "tp", "expected"),
    [
        # v0.4.0 python/sglang/srt/server_args.py#L158-L168: tp >= 4 -> 0.85, tp 1 -> 0.88
        ("0.4.0", "NVIDIA H100 80GB HBM3", 4, 0.85),
        ("0.4.0", "NVIDIA H100 80GB HBM3", 1, 0.88),
        # v0.4.5.post2: the table alone, also on an H200
        ("0.4.5.post2", "NVIDIA H200", 1, 0.88),
        # v0.4.6 server_args.py#L224-L238: above 81920 MiB, (gpu_mem - 1024 * 13) / gpu_mem
        ("0.4.6", "NVIDIA H200", 1, round((H200 - 13 * 1024) / H200, 3)),
        # v0.4.7 server_args.py: 0.88 above 81920, then above 96 GiB
        # min(f + 48 GiB (1 - f) / gpu_mem, (gpu_mem - 18 GiB) / gpu_mem)
        ("0.4.7", "NVIDIA H200", 1, round(min(0.88 + 48 * 1024 * 0.12 / H200, (H200 - 18 * 1024) / H200), 3)),
        # v0.4.8 server_args.py: H100 row (< 90 GiB): reserved (9.5 + parallel / 2) * 1024
        ("0.4.8", "NVIDIA H100 80GB HBM3", 1, round((H100 - (9.5 + 1 / 2) * 1024) / H100, 3)),
        ("0.4.8", "NVIDIA H100 80GB HBM3", 4, round((H100 - (9.5 + 4 / 2) * 1024) / H100, 3)),
        # v0.5.4 server_args.py (handle_gpu_memory_settings): < 35 GiB: chunk 2048, max_bs 16 (tp < 4);
        # reserved 512 + 2048 * 1.5 + 16 * 2 + 1 / 8 * 1024
        ("0.5.4", "NVIDIA GeForce RTX 4090", 1, round((RTX4090 - (512 + 2048 * 1.5 + 16 * 2 + 128)) / RTX4090, 3)),
        # v0.5.9: max_bs 24 below tp 4 on the same row
        ("0.5.9", "NVIDIA GeForce RTX 4090", 1, round((RTX4090 - (512 + 2048 * 1.5 + 24 * 2 + 128)) / RTX4090, 3)),
        # v0.5.23 arg_groups/memory_hook.py#L90-L117: < 35 GiB: chunk 4096, max_bs 48; L309-L313
        ("0.5.23", "NVIDIA GeForce RTX 4090", 1, round((RTX4090 - (512 + 4096 * 1.5 + 48 * 2 + 128)) / RTX4090, 3)),
        # v0.5.23 memory_hook.py L314-L315: above 60 GiB at least 10 GiB; H100 tp 4: 512 + 8192 * 1.5 + 512 * 2 + 512
        ("0.5.23", "NVIDIA H100 80GB HBM3", 4, round((H100 - (512 + 8192 * 1.5 + 512 * 2 + 512)) / H100, 3)),
        ("0.5.23", "NVIDIA H100 80GB HBM3", 1, round((H100 - max(512 + 8192 * 1.5 + 256 * 2 + 128, 10240)) / H100, 3)),
    ],
)
def test_default_fraction_is_the_releases_own(version: str, gpu: str, tp: int, expected: float) -> None:
    assert _fraction(version, gpu, tp) == pytest.approx(expected, abs=1e-9)


def test_the_same_spec_gets_each_releases_fraction() -> None:
    """One spec (Qwen2.5-7B, one RTX 4090) on 0.4.0, 0.5.4 and 0.5.23: three different defaults."""
    found = {v: _fraction(v, "NVIDIA GeForce RTX 4090") for v in ("0.4.0", "0.5.4", "0.5.23")}
    assert found["0.4.0"] == 0.88
    assert found["0.5.4"] == 0.848  # (24564 - 3744) / 24564
    assert found["0.5.23"] == 0.72  # (24564 - 6880) / 24564
    assert len(set(found.values())) == 3


def test_a_given_chunked_prefill_size_changes_the_reserve() -> None:
    """memory_hook.py L309-L310: the activation term reads the chunked_prefill_size in effect."""
    assert _fraction("0.5.23", "NVIDIA GeForce RTX 4090", chunked_prefill_size=8192) == round(
        (RTX4090 - (512 + 8192 * 1.5 + 48 * 2 + 128)) / RTX4090, 3
    )


def test_multimodal_cut_per_release() -> None:
    """0.4.9 server_args.py: ``mem_fraction_static *= 0.90`` for a multimodal model; 0.4.8 none;
    0.5.23 memory_hook.py L436-L462 ``adjust_mem_fraction_for_vlm``: 0.95 × a factor of the ViT's size."""
    text = models.catalogued("Qwen/Qwen2.5-7B-Instruct")
    card = gpus.resolve("NVIDIA H100 80GB HBM3")
    assert text is not None and isinstance(card, GpuModel)
    # a ViT-L/14-sized tower (24 layers, hidden 1024: 12 * 24 * 1024**2 parameters): the dynamic factor is 1
    vision = replace(text, vision_params=12 * 24 * 1024**2)
    cuts = {}
    for version in ("0.4.8", "0.4.9", "0.5.23"):
        release = SGLANG.catalog.release(version)
        memory = release.facts.memory
        assert memory is not None
        inp = EstimateInput(engine="sglang", release=release, model=vision, gpu=card)
        plain = EstimateInput(engine="sglang", release=release, model=text, gpu=card)
        assert sglang_memory.multimodal_cut(plain, memory) == 1.0
        cuts[version] = sglang_memory.multimodal_cut(inp, memory)
    assert cuts == {"0.4.8": 1.0, "0.4.9": 0.9, "0.5.23": pytest.approx(0.95)}
    # twice the baseline complexity: 1 - 0.1 * (2 - 1) = 0.9 -> 0.95 * 0.9
    bigger = EstimateInput(
        engine="sglang",
        release=SGLANG.catalog.release("0.5.23"),
        model=replace(text, vision_params=2 * 12 * 24 * 1024**2),
        gpu=card,
    )
    memory = SGLANG.catalog.release("0.5.23").facts.memory
    assert memory is not None
    assert sglang_memory.multimodal_cut(bigger, memory) == pytest.approx(0.95 * 0.9)


def test_the_estimate_reports_the_releases_fraction() -> None:
    """End to end: the estimate's note names the fraction the release computes."""
    model = models.catalogued("Qwen/Qwen2.5-7B-Instruct")
    card = gpus.resolve("NVIDIA GeForce RTX 4090")
    assert model is not None and card is not None
    notes = {}
    for version in ("0.4.0", "0.5.23"):
        found = SGLANG.estimate(
            EstimateInput(
                engine="sglang",
                release=SGLANG.select(version).release,
                model=model,
                gpu=card,
                max_model_len=4096,
                engine_version=version,
            )
        )
        assert found is not None
        notes[version] = found.notes
    assert "mem_fraction_static 0.88" in notes["0.4.0"]
    assert "mem_fraction_static 0.72" in notes["0.5.23"]
