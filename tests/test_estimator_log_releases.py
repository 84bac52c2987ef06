"""A vLLM log whose build the catalogue lacks (a development or release-candidate build, an uncatalogued release) is
estimated under the catalogued releases on either side of it and answered only when they give one figure
(tests/vllm_logs.py ``_candidate_releases``); and a data-parallel + expert-parallel log is laid out as vLLM lays it."""

from __future__ import annotations

from pathlib import Path

from ruamel.yaml import YAML

from tests.vllm_logs import LOGS, OTHER_LOGS, _release_choices, _release_spread, compare, compare_other

LOG = "039"
"""An answered single-GPU log on 0.19.0 whose figure moves between 0.16.0 and 0.17.0 (the sampler warm-up's
Triton top-k/top-p kernel, ``profile_sampler_triton_rows``) and stays between 0.19.0 and 0.19.1."""


def _as_build(tmp_path: Path, stem: str, version: str) -> Path:
    source = next(LOGS.glob(f"{stem}-*.yaml"))
    yaml = YAML()
    data = yaml.load(source.read_text())
    data["vllm_version"] = version
    out = tmp_path / source.name
    with out.open("w") as handle:
        yaml.dump(data, handle)
    return out


def test_build_between_agreeing_releases_is_answered_and_labelled(tmp_path: Path) -> None:
    stated = compare(next(LOGS.glob(f"{LOG}-*.yaml")))
    assert not stated.skipped and not stated.assumed
    dev = compare(_as_build(tmp_path, LOG, "0.19.1rc0.dev3+g0123abc"))
    assert dev.predicted == stated.predicted
    assert dev.assumed == (
        "release 0.19.1rc0.dev3+g0123abc not catalogued: it lies between 0.19.0 and 0.19.1, and the figure is the "
        "same under both (their facts stand in for the build's)",
    )


def test_build_between_disagreeing_releases_reports_the_spread(tmp_path: Path) -> None:
    dev = compare(_as_build(tmp_path, LOG, "0.17.0rc1.dev10"))
    assert dev.predicted is None
    assert dev.skipped.startswith(
        "release 0.17.0rc1.dev10 not catalogued, and the catalogued releases on either side of it disagree: 0.16.0: "
    )
    assert ", 0.17.0: " in dev.skipped


def test_dp8_ep_failed_starts_are_caught() -> None:
    """Qwen3-Coder-480B-FP8 with -dp=8 --enable-expert-parallel on a 0.10.1 development build (vllm-project/recipes
    PR 12): each rank holds the whole attention and embeddings, 20 of the 160 experts and its own KV cache, which is
    short of one 262,144-token request (62.00 GiB logged) at 0.9 and at 0.95: both predicted not to start. The
    estimate's KV memory per rank stays within 10 % above the logged 48.66 / 55.65 GiB (the MoE layer's workspace
    over the gathered D x batched tokens and the NCCL buffers of the DP and EP groups are not modelled)."""
    for stem, logged in (("158", 48.66), ("159", 55.65)):
        row = compare(next(LOGS.glob(f"{stem}-*.yaml")))
        assert row.fits is False, stem
        assert row.logged_kv_gib == logged
        assert logged < row.kv_gib < logged * 1.1, (stem, row.kv_gib)
        assert any("between 0.10.0 and 0.10.1" in label for label in row.assumed)


def test_other_engines_builds_between_releases_take_both() -> None:
    """The same rule for the other engines' logs: SGLang 0.5.10rc0 lies between the catalogued 0.5.9 and 0.5.10, and
    is answered under both, labelled as such."""
    assert _release_choices("sglang", {"engine_version": "0.5.10rc0"}) == ["0.5.9", "0.5.10"]
    assert _release_choices("sglang", {"engine_version": "0.5.10"}) == []
    row = compare_other(next(OTHER_LOGS.glob("sglang/006-*.yaml")))
    assert row.predicted is not None and not row.skipped
    assert any("lies between 0.5.9 and 0.5.10" in label for label in row.assumed)
    said = _release_spread("sglang", [10, 12], "KV tokens", ["0.5.9", "0.5.10"])
    assert said == (
        "sglang release not catalogued, and the catalogued releases on either side of it (0.5.9 and 0.5.10) "
        "disagree: 10 to 12 KV tokens"
    )
