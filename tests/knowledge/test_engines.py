"""Engine catalogs: well-formed, sourced, and consistent with the profiles."""

from __future__ import annotations

import pytest

from servespec.engines import get
from servespec.engines.catalog import EngineRelease, version_key
from servespec.engines.images import image_policy
from servespec.spec.models import ENGINE_NAMES as ENGINES

ALL_RELEASES = [(e, r) for e in ENGINES for r in get(e).releases]


@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_has_a_profile_and_a_release(engine: str) -> None:
    prof = get(engine).profile
    assert get(engine).releases, engine
    assert prof.parallelism.source.startswith("http")
    assert prof.health_path.startswith("/")


@pytest.mark.parametrize(("engine", "release"), ALL_RELEASES, ids=[f"{e}-{r.version}" for e, r in ALL_RELEASES])
def test_release_is_sourced_and_complete(engine: str, release: EngineRelease) -> None:
    assert release.source.startswith("https://github.com/")
    # openllm serve before 0.6.25 has three options, repo, port and verbose (src/openllm/__main__.py)
    # lms load and lms server start have 18 options (src/subcommands/load.ts, server.ts at 07b7252)
    assert len(release.options) >= {"openllm": 3, "lmstudio": 18}.get(engine, 30)
    for option in release.options.values():
        assert option.type in {"int", "float", "str", "bool", "list", "dict"}, option.key
        if option.type == "bool" and option.flag:
            assert option.bool_form in {"flag", "negatable", "value"}, option.key


@pytest.mark.parametrize(("engine", "release"), ALL_RELEASES, ids=[f"{e}-{r.version}" for e, r in ALL_RELEASES])
def test_spec_fields_map_to_real_options(engine: str, release: EngineRelease) -> None:
    prof = get(engine).profile
    for field, option in prof.spec_options.items():
        if option in ("model", "model_tag") and engine in ("vllm", "tensorrt-llm"):
            continue  # positional model argument
        newer = [r for r in get(engine).releases if version_key(r.version) > version_key(release.version)]
        if release.option(option) is None and any(r.option(option) is not None for r in newer):
            continue  # added later (TGI --api-key 2.3.0, OLLAMA_CONTEXT_LENGTH 0.5.13)
        assert release.option(option) is not None, f"{engine} {release.version}: {field} -> {option}"
    for option in (prof.batch_option, prof.memory_fraction_option):
        if option and not (release.option(option) is None and any(r.option(option) for r in newer)):
            assert release.option(option) is not None, f"{engine} {release.version}: {option}"


def test_version_selection() -> None:
    assert get("vllm").select("0.11.0").relation == "exact"
    between = get("vllm").select("0.20.1.post9")  # not a release: the nearest earlier catalogued one is used
    earlier = [v for v in get("vllm").catalog.versions if version_key(v) < version_key("0.20.1.post9")]
    assert between.relation == "between" and between.release and between.release.version == earlier[-1]
    assert get("vllm").select("0.5.4").relation == "exact"  # 0.4.1-0.5.5 catalogued from their sdists
    assert get("vllm").select("0.3.3").relation == "older"  # before the first catalogued release (0.4.1)
    assert get("vllm").select("v99.0").relation == "newer"
    assert version_key("b11312") == (11312,)


def test_removed_option_is_recorded() -> None:
    release = get("vllm").select("0.11.0").release
    assert release is not None
    assert release.option("num_scheduler_steps") is None
    removed = release.removed("num-scheduler-steps")
    assert removed is not None and removed.removed_in == "0.10.1"


def test_option_lookup_by_flag_spelling() -> None:
    release = get("vllm").select("0.11.0").release
    assert release is not None
    option = release.option("-tp")
    assert option is not None and option.key == "tensor_parallel_size"


def test_quantization_capabilities_follow_the_engine() -> None:
    trt = get("tensorrt-llm").select("1.2.1").release
    vllm = get("vllm").select("0.11.0").release
    tgi = get("tgi").select("3.3.7").release
    assert trt and vllm and tgi
    assert get("tensorrt-llm").quantization_support(trt, "fp8")[1] == (8, 9)
    assert get("vllm").quantization_support(vllm, "fp8")[1] == (8, 0)  # Marlin weight-only below 8.9
    assert get("tgi").quantization_support(tgi, "gguf")[0] is False


def test_image_cuda_versions() -> None:
    tgi = get("tgi").select("3.3.7").release
    assert tgi is not None and image_policy(get("tgi"), "3.3.7", None, tgi).cuda == (12, 4)
