"""SGLang's custom all-reduce before its baseline (facts.memory.all_reduce, engines/sglang/all_reduce.py).

Expected values are the arithmetic of the cited sources: SGLang's dispatch_custom_allreduce per release and
aiter's CustomAllreduce.__init__ per aiter tag (scripts/catalog/aiter_all_reduce.py)."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from servespec import engines
from servespec.engines.catalog import EngineRelease, SglangAllReduce
from servespec.engines.sglang import all_reduce
from servespec.knowledge import gpus, models, resolve
from servespec.knowledge.gpus import GpuModel
from servespec.knowledge.memory import GIB, EstimateInput
from servespec.spec.fleet import load_fleet

SGLANG = engines.get("sglang")
MIB = 2**20
FLEET = Path(__file__).resolve().parent.parent / "rules" / "cases" / "_fleet"


def test_every_catalogued_sglang_release_has_the_all_reduce_fact() -> None:
    """A release without it (or whose source the builder could not read) fails here."""
    versions = list(SGLANG.catalog.versions)
    assert len(versions) >= 92
    for version in versions:
        memory = SGLANG.catalog.release(version).facts.memory
        assert memory is not None and memory.all_reduce is not None, f"{version}: no facts.memory.all_reduce"
        fact = memory.all_reduce
        assert f"/v{version}/" in fact.source and "#L" in fact.source
        assert fact.released is not None, f"{version}: no upload time"
        assert "max_size" not in fact.aiter_kwargs  # aiter's own default sizes its buffers
        # SGLang's own class: 8 MiB on CUDA (custom_all_reduce.py _MAX_CAR_SIZE), 8 or 16 MiB on HIP
        assert fact.sglang_max_size_cuda == 8 * MIB and fact.sglang_max_size_hip in (8 * MIB, 16 * MIB)


def _fact(version: str) -> SglangAllReduce:
    memory = SGLANG.catalog.release(version).facts.memory
    assert memory is not None and memory.all_reduce is not None
    return memory.all_reduce


def test_the_dispatch_follows_the_releases() -> None:
    # aiter's CustomAllreduce is ROCm's default from 0.5.5.post3 (custom_all_reduce.py dispatch_custom_allreduce)
    assert _fact("0.5.5.post2").hip == "sglang" and _fact("0.5.5.post3").hip == "aiter"
    assert _fact("0.5.23").hip == "aiter"
    # from 0.5.10 SGLang passes enable_register_for_capturing, which aiter takes from v0.1.11
    assert _fact("0.5.9").aiter_kwargs == () and _fact("0.5.10").aiter_kwargs == ("enable_register_for_capturing",)
    # 0.4.3.post3 on: 16 MiB on ROCm ("crossover is at 16MB buffer size for ROCm")
    assert _fact("0.4.3.post2").sglang_max_size_hip == 8 * MIB and _fact("0.4.3.post3").sglang_max_size_hip == 16 * MIB
    assert _fact("0.5.9").cuda == "sglang" and _fact("0.5.10").cuda == "v2"
    # the quick all-reduce exists from 0.4.9.post4 and allocates nothing unless its quantization is set
    assert _fact("0.4.9.post3").quick_reduce_default is None and _fact("0.5.12").quick_reduce_default == "NONE"


def test_aiter_buffers_per_tag() -> None:
    """v0.1.7: meta_size + 64 MiB, a 64 MiB buffer, 8 MiB rank data; v0.1.10.post2: 128 MiB with input and
    output; v0.1.12: 1 GiB default, meta_size + 2 GiB uncached, a 1 GiB input pool, 8 MiB rank data."""
    tags = {row.tag: row for row in all_reduce.aiter_releases()}
    assert tags["v0.1.7"].bytes() == 2 * 64 * MIB + 8 * MIB
    assert tags["v0.1.10.post2"].bytes() == 3 * 128 * MIB + 8 * MIB
    assert tags["v0.1.12"].bytes() == 3 * 1024 * MIB + 8 * MIB
    assert tags["v0.1.20.post1"].bytes() == tags["v0.1.12"].bytes()
    assert all(row.world_sizes == (2, 4, 6, 8) for row in tags.values())
    assert "enable_register_for_capturing" not in tags["v0.1.10.post3"].parameters
    assert "enable_register_for_capturing" in tags["v0.1.11"].parameters


def test_the_aiter_assumed_is_the_newest_before_the_release_that_takes_its_arguments() -> None:
    assert (found := all_reduce.aiter_for(_fact("0.5.12"))) is not None and found.tag == "v0.1.13.post1"
    assert (found := all_reduce.aiter_for(_fact("0.5.10.post1"))) is not None and found.tag == "v0.1.11.post1"
    assert (found := all_reduce.aiter_for(_fact("0.5.9"))) is not None and found.tag == "v0.1.10.post3"
    # a release passing enable_register_for_capturing before any aiter took it: none
    early = _fact("0.5.12").model_copy(update={"released": "2026-02-01T00:00:00Z"})
    assert all_reduce.aiter_for(early) is None
    assert all_reduce.aiter_for(_fact("0.5.12").model_copy(update={"released": None})) is None


def _estimate(
    version: str,
    gpu: str,
    tp: int,
    release: EngineRelease | None = None,
    env: dict[str, str] | None = None,
    image: str | None = None,
    **options: object,
) -> tuple[float, tuple[str, ...]]:
    """Qwen2.5-7B on ``gpu`` at TP ``tp`` under SGLang ``version`` (``release``: a changed copy of its facts), from
    ``image`` with ``env``: the KV GiB and the notes."""
    model = models.catalogued("Qwen/Qwen2.5-7B-Instruct")
    card = gpus.resolve(gpu)
    assert model is not None and isinstance(card, GpuModel)
    found = SGLANG.estimate(
        EstimateInput(
            engine="sglang",
            release=release or SGLANG.select(version).release,
            model=model,
            gpu=card,
            tensor_parallel=tp,
            max_model_len=4096,
            engine_version=version,
            options={"mem_fraction_static": 0.85, **options},
            image=image,
            env=env or {},
        )
    )
    assert found is not None
    return found.kv_cache_gib, tuple(found.notes)


def _without_fact(version: str) -> EngineRelease:
    release = SGLANG.select(version).release
    assert release is not None and release.facts.memory is not None
    memory = release.facts.memory.model_copy(update={"all_reduce": None})
    return replace(release, facts=release.facts.model_copy(update={"memory": memory}))


@pytest.mark.parametrize(("tp", "version"), [(2, "0.5.12"), (8, "0.5.12"), (4, "0.5.11")])
def test_rocm_estimate_takes_aiters_buffers_off_the_baseline(tp: int, version: str) -> None:
    """The KV pool is mem_fraction_static of the memory left after them: 0.85 x (3 GiB + 8 MiB) less, any tp."""
    with_fact, notes = _estimate(version, "AMD Instinct MI355X", tp)
    without, bare_notes = _estimate(version, "AMD Instinct MI355X", tp, _without_fact(version))
    assert without - with_fact == pytest.approx(0.85 * (3 * 1024 + 8) * MIB / GIB, abs=0.01)  # kv_cache_gib is rounded
    assert any(n.startswith("aiter custom all-reduce 3.01 GiB") for n in notes)
    assert not any("aiter" in n for n in bare_notes if not n.startswith("ROCm:"))


def test_sglangs_own_class_on_rocm_before_aiter() -> None:
    """0.5.5.post2 builds SGLang's own class on ROCm: meta_size + 16 MiB, 16 MiB, 16 MiB."""
    with_fact, notes = _estimate("0.5.5.post2", "AMD Instinct MI355X", 2)
    without, _ = _estimate("0.5.5.post2", "AMD Instinct MI355X", 2, _without_fact("0.5.5.post2"))
    assert without - with_fact == pytest.approx(0.85 * 48 * MIB / GIB, abs=0.01)
    assert any(n.startswith("SGLang custom all-reduce 3 x 16 MiB") for n in notes)


@pytest.mark.parametrize(("gpu", "tp"), [("AMD Instinct MI355X", 1), ("NVIDIA H100 80GB HBM3", 2)])
def test_one_gpu_and_cuda_take_nothing_more(gpu: str, tp: int) -> None:
    with_fact, notes = _estimate("0.5.12", gpu, tp)
    without, _ = _estimate("0.5.12", gpu, tp, _without_fact("0.5.12"))
    assert with_fact == without
    assert not any("all-reduce" in n for n in notes if not n.startswith("ROCm:"))


def test_disable_custom_all_reduce_takes_nothing() -> None:
    """--disable-custom-all-reduce: set_custom_all_reduce(False), the tp group builds none (model_runner.py)."""
    off, notes = _estimate("0.5.12", "AMD Instinct MI355X", 2, disable_custom_all_reduce=True)
    without, _ = _estimate("0.5.12", "AMD Instinct MI355X", 2, _without_fact("0.5.12"))
    on, _ = _estimate("0.5.12", "AMD Instinct MI355X", 2, disable_custom_all_reduce=False)
    assert off == without > on
    assert not any(n.startswith("aiter") for n in notes)


def test_every_release_with_a_quick_all_reduce_has_its_facts() -> None:
    """From 0.4.9.post4 quick_all_reduce.py: FP/INT8/INT6/INT4/NONE, gfx94 and gfx95, groups of 2, 4 and 8, its
    largest input from ROCM_QUICK_REDUCE_MAX_SIZE_BYTES_MB or the kernel's 2 GB; NONE by default."""
    with_quick = 0
    for version in SGLANG.catalog.versions:
        fact = _fact(version)
        if fact.quick_reduce_default is None:
            continue
        with_quick += 1
        assert fact.quick_reduce_default == "NONE"
        assert fact.quick_reduce_regimes == ("FP", "INT8", "INT6", "INT4", "NONE")
        assert fact.quick_reduce_archs == ("gfx94", "gfx95") and fact.quick_reduce_world_sizes == (2, 4, 8)
        assert fact.quick_reduce_max_size_env == "ROCM_QUICK_REDUCE_MAX_SIZE_BYTES_MB"
        assert fact.quick_reduce_default_max_gb == 2
        assert fact.quick_reduce_source is not None and f"/v{version}/" in fact.quick_reduce_source
        assert "quick_all_reduce.py#L" in fact.quick_reduce_source
    assert with_quick >= 40


def _quick(
    version: str, gpu: str, tp: int, env: dict[str, str], image: str | None = None, **options: object
) -> tuple[float, tuple[str, ...]]:
    return _estimate(version, gpu, tp, env=env, image=image, **options)


@pytest.mark.parametrize(("tp", "regime"), [(2, "INT8"), (4, "INT4"), (8, "FP")])
def test_quick_all_reduce_takes_two_stages_of_its_largest_input(tp: int, regime: str) -> None:
    """A regime other than NONE: init_custom_qr with the kernel's 2 GiB, two stages: 0.85 x 4 GiB off the pool."""
    off, notes = _quick("0.5.12", "AMD Instinct MI355X", tp, {})
    on, on_notes = _quick("0.5.12", "AMD Instinct MI355X", tp, {"ROCM_QUICK_REDUCE_QUANTIZATION": regime})
    assert off - on == pytest.approx(0.85 * 4, abs=0.01)
    assert any(n.startswith(f"SGLang quick all-reduce ({regime}) 4.00 GiB") for n in on_notes)
    # unset on a card and group where it would run: the note names the ROCm images' INT8
    assert any("ROCM_QUICK_REDUCE_QUANTIZATION=INT8" in n for n in notes)


def test_quick_all_reduce_size_follows_its_variable() -> None:
    """ROCM_QUICK_REDUCE_MAX_SIZE_BYTES_MB=512: two stages of 512 MiB."""
    off, _ = _quick("0.5.12", "AMD Instinct MI355X", 2, {"ROCM_QUICK_REDUCE_QUANTIZATION": "NONE"})
    env = {"ROCM_QUICK_REDUCE_QUANTIZATION": "INT8", "ROCM_QUICK_REDUCE_MAX_SIZE_BYTES_MB": "512"}
    on, notes = _quick("0.5.12", "AMD Instinct MI355X", 2, env)
    assert off - on == pytest.approx(0.85 * 1.0, abs=0.01)
    assert any("ROCM_QUICK_REDUCE_MAX_SIZE_BYTES_MB=512 MB" in n for n in notes)


@pytest.mark.parametrize(
    ("version", "gpu", "tp", "env", "options"),
    [
        ("0.5.12", "AMD Instinct MI355X", 2, {"ROCM_QUICK_REDUCE_QUANTIZATION": "NONE"}, {}),
        ("0.5.12", "AMD Instinct MI355X", 2, {"ROCM_QUICK_REDUCE_QUANTIZATION": "INT2"}, {}),  # refused: a warning
        ("0.5.12", "AMD Instinct MI355X", 6, {"ROCM_QUICK_REDUCE_QUANTIZATION": "INT8"}, {}),  # not 2, 4 or 8
        ("0.5.12", "AMD Instinct MI355X", 1, {"ROCM_QUICK_REDUCE_QUANTIZATION": "INT8"}, {}),
        ("0.5.12", "AMD Instinct MI210", 2, {"ROCM_QUICK_REDUCE_QUANTIZATION": "INT8"}, {}),  # gfx90a
        ("0.5.12", "NVIDIA H100 80GB HBM3", 2, {"ROCM_QUICK_REDUCE_QUANTIZATION": "INT8"}, {}),
        ("0.4.9.post3", "AMD Instinct MI355X", 2, {"ROCM_QUICK_REDUCE_QUANTIZATION": "INT8"}, {}),  # none yet
        (
            "0.5.12",
            "AMD Instinct MI355X",
            2,
            {"ROCM_QUICK_REDUCE_QUANTIZATION": "INT8"},
            {"disable_custom_all_reduce": True},
        ),
    ],
)
def test_quick_all_reduce_allocates_nothing_where_it_is_not_built(
    version: str, gpu: str, tp: int, env: dict[str, str], options: dict[str, object]
) -> None:
    unset, _ = _quick(version, gpu, tp, {}, **options)
    found, notes = _quick(version, gpu, tp, env, **options)
    assert found == unset
    assert not any(n.startswith("SGLang quick all-reduce") for n in notes)


def test_engine_env_reaches_the_estimate(tmp_path: Path) -> None:
    """A spec's engine.env and engine.image are what the estimate reads (EstimateInput.env, .image)."""
    shutil.copytree(FLEET, tmp_path, dirs_exist_ok=True)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "apiVersion: servespec/v1\nkind: Deployment\nmetadata: {name: app}\ninventory: inventory.yaml\n"
        "model:\n  source: meta-llama/Llama-3.1-8B-Instruct\n  max_model_len: 8192\n"
        'engine: {name: sglang, version: "0.5.12", env: {ROCM_QUICK_REDUCE_QUANTIZATION: INT8},\n'
        '  image: "rocm/sgl-dev:v0.5.12-rocm720-mi35x-20260517"}\n'
        "resources: {gpu_ids: [0]}\nplacement: {hosts: [nvs8]}\n"
    )
    inp = resolve.resolved(load_fleet([spec]).deployments[0]).estimate_input()
    assert inp is not None and inp.env == {"ROCM_QUICK_REDUCE_QUANTIZATION": "INT8"}
    assert inp.image == "rocm/sgl-dev:v0.5.12-rocm720-mi35x-20260517"


def test_an_images_build_date_bounds_its_aiter() -> None:
    """SGLang's ROCm images are rebuilt under a release's name with a newer AITER_COMMIT: a tag's build date
    (rocm/sgl-dev:v0.5.10.post1-rocm720-mi35x-20260430) moves the aiter assumed to the newest tag before that day."""
    built = all_reduce.image_built("rocm/sgl-dev:v0.5.10.post1-rocm720-mi35x-20260430")
    assert built is not None and (built.year, built.month, built.day) == (2026, 4, 30)
    assert all_reduce.image_built("lmsysorg/sglang:v0.5.12") is None
    assert all_reduce.image_built(None) is None
    assert all_reduce.image_built("registry:5000/sglang:v0.5.12-rocm720-mi35x-20261399") is None  # no such day
    fact = _fact("0.5.10.post1")
    assert (found := all_reduce.aiter_for(fact)) is not None and found.tag == "v0.1.11.post1"  # before 2026-04-08
    assert (found := all_reduce.aiter_for(fact, built)) is not None and found.tag == "v0.1.12.post2"
    _, notes = _quick("0.5.10.post1", "AMD Instinct MI355X", 2, {})
    assert any("aiter custom all-reduce 0.38 GiB" in n for n in notes)
    inp_notes = _image_notes("0.5.10.post1", "rocm/sgl-dev:v0.5.10.post1-rocm720-mi35x-20260430")
    assert any(n.startswith("aiter custom all-reduce 3.01 GiB") and "build day 2026-04-30" in n for n in inp_notes)


def _image_notes(version: str, image: str) -> tuple[str, ...]:
    return _quick_image(image, {}, version)[1]


def _quick_image(image: str, env: dict[str, str], version: str = "0.5.12") -> tuple[float, tuple[str, ...]]:
    return _quick(version, "AMD Instinct MI355X", 2, env, image)


def test_sglangs_rocm_images_bring_the_quick_all_reduce() -> None:
    """An SGLang ROCm image from v0.5.9 sets ROCM_QUICK_REDUCE_QUANTIZATION=INT8 in its Dockerfile: 0.85 x 4 GiB off
    the pool unless engine.env says otherwise; an image of an older release or another image: only the note."""
    none = {"ROCM_QUICK_REDUCE_QUANTIZATION": "NONE"}
    for image in ("lmsysorg/sglang:v0.5.12-rocm720-mi35x", "rocm/sgl-dev:v0.5.10.post1-rocm720-mi35x-20260503"):
        on, notes = _quick_image(image, {})
        off, _ = _quick_image(image, none)
        assert off - on == pytest.approx(0.85 * 4, abs=0.01)
        assert any(n.startswith("SGLang quick all-reduce (INT8 (the ROCm image's ENV") for n in notes)
    plain, plain_notes = _quick_image("lmsysorg/sglang:v0.5.12", {})
    off, _ = _quick_image("lmsysorg/sglang:v0.5.12", none)
    assert plain == off and any("ROCM_QUICK_REDUCE_QUANTIZATION=INT8" in n for n in plain_notes)
    old, old_notes = _quick_image("lmsysorg/sglang:v0.5.8-rocm700-mi30x", {}, "0.5.8")
    old_off, _ = _quick_image("lmsysorg/sglang:v0.5.8-rocm700-mi30x", none, "0.5.8")
    assert old == old_off and not any(n.startswith("SGLang quick all-reduce") for n in old_notes)
    assert all_reduce.rocm_image_release("rocm/sgl-dev:v0.5.10.post1-rocm720-mi35x-20260430") == (0, 5, 10, 1)
    assert all_reduce.rocm_image_release("rocm/vllm:rocm6.3") is None
