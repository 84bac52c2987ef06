"""SGLang's release catalogs (scripts/catalog/sglang.py): every release resolves to itself and
ENG001 fires exactly on the releases that lack an option.

The sampled changes were cross-checked against the released sources: the flag's string in
``python/sglang/srt/server_args.py`` of each sdist on PyPI (first and last release that
spells it), e.g. https://github.com/sgl-project/sglang/blob/v0.4.1.post2/python/sglang/srt/server_args.py
has no ``--disable-disk-cache`` and v0.4.1.post1 has; --cuda-graph-max-bs is in every release
up to 0.5.19 and in none from 0.5.20 (the 23 flags that release removed).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from servespec import engines
from servespec.engines.catalog import version_key
from tests.engines.one_option import eng001

SGLANG = engines.get("sglang")

# option key -> (first release that has it, first release without it again or None)
SAMPLED = {
    "ep_size": ("0.4.0.post1", None),
    "speculative_algorithm": ("0.4.1.post4", None),
    "cuda_graph_bs": ("0.4.1.post5", "0.5.20"),
    "enable_flashinfer_mla": ("0.4.3", "0.4.7.post1"),
    "enable_deepep_moe": ("0.4.4.post2", "0.5.4.post1"),
    "collect_tokens_histogram": ("0.4.6.post5", "0.5.20"),
    "disable_disk_cache": ("0.4.0", "0.4.1.post2"),
    "disable_mla": ("0.4.0", "0.4.5.post2"),
    "cuda_graph_max_bs": ("0.4.0", "0.5.20"),
}

# Releases this catalog must hold (PyPI's final releases from 0.4.0 that have been extracted);
# the newest of each minor line and the 0.5.x line at least.
REQUIRED = ("0.4.0", "0.4.1.post7", "0.4.3.post4", "0.4.7.post1", "0.4.10.post2", "0.5.1", "0.5.9", "0.5.20", "0.5.23")

QWEN = "{source: Qwen/Qwen2.5-7B-Instruct}"


def _unknown(tmp_path: Path, version: str, key: str) -> list[str]:
    return [f.message for f in eng001(tmp_path, "sglang", version, QWEN, key) if key in f.message]


def test_the_required_releases_are_catalogued() -> None:
    assert set(REQUIRED) <= set(SGLANG.catalog.versions)


def test_every_catalogued_release_resolves_exactly() -> None:
    for version in SGLANG.catalog.versions:
        selection = SGLANG.select(version)
        assert selection.relation == "exact" and selection.release is not None, version
        assert selection.release.version == version


def test_post_releases_sort_after_their_release() -> None:
    assert version_key("0.4.1") < version_key("0.4.1.post1") < version_key("0.4.1.post7") < version_key("0.4.2")
    assert SGLANG.select("0.4.1.post3").release.version == "0.4.1.post3"  # type: ignore[union-attr]


@pytest.mark.parametrize("key", sorted(SAMPLED))
def test_an_option_exists_exactly_where_the_source_has_it(key: str) -> None:
    first, gone = SAMPLED[key]
    has = [
        version_key(r.version) >= version_key(first) and (gone is None or version_key(r.version) < version_key(gone))
        for r in SGLANG.releases
    ]
    assert [r.option(key) is not None for r in SGLANG.releases] == has
    if gone:
        removed = SGLANG.select(gone).release.removed(key)  # type: ignore[union-attr]
        assert removed is not None and removed.removed_in == gone


def _around(first: str, gone: str | None) -> list[str]:
    """The releases on both sides of each change, and the oldest and newest."""
    versions = list(SGLANG.catalog.versions)
    picked = {versions[0], versions[-1]}
    for edge in (first, gone):
        if edge in versions:
            index = versions.index(edge)
            picked |= set(versions[max(index - 1, 0) : index + 1])
    return sorted(picked, key=version_key)


@pytest.mark.parametrize(
    "key", ["disable_disk_cache", "enable_flashinfer_mla", "cuda_graph_max_bs", "speculative_algorithm", "ep_size"]
)
def test_eng001_fires_exactly_where_the_option_does_not_exist(tmp_path: Path, key: str) -> None:
    first, gone = SAMPLED[key]
    for version in _around(first, gone):
        found = _unknown(tmp_path, version, key)
        present = version_key(version) >= version_key(first) and (
            gone is None or version_key(version) < version_key(gone)
        )
        assert bool(found) != present, (version, found)
        if found and gone and version_key(version) >= version_key(gone):
            assert f"(removed in {gone})" in found[0], found[0]
        if found and version_key(version) < version_key(first):
            assert f"(added in {first})" in found[0], found[0]


def test_removed_options_name_the_first_release_without_them() -> None:
    releases = SGLANG.releases
    versions = [r.version for r in releases]
    for index, release in enumerate(releases):
        for key, removed in release.facts.removed_options.items():
            assert key not in release.options, (release.version, key)
            if removed.removed_in in versions and versions.index(removed.removed_in) > 0:
                gone = versions.index(removed.removed_in)
                assert gone <= index and key in releases[gone - 1].options, (release.version, key)
                assert all(key not in r.options for r in releases[gone : index + 1]), (release.version, key)


def test_quantization_methods_are_choices_of_the_release() -> None:
    for release in SGLANG.releases:
        methods = release.facts.quantization_methods
        option = release.options.get("quantization")
        if methods and option and option.choices:
            assert set(methods) <= set(option.choices), release.version
