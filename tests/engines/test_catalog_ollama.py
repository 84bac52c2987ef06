"""Ollama release catalogs (scripts/catalog/ollama.py): ENG001 fires exactly where an option does not exist.

The samples were checked against each tag of github.com/ollama/ollama: ``envconfig/config.go``
for the server's environment variables and ``api/types.go`` ``Options``/``Runner`` and
``DefaultOptions()`` for the Modelfile parameters.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from servespec import engines
from servespec.engines.catalog import version_key
from servespec.findings import Finding
from tests.engines.one_option import eng001

OLLAMA = engines.get("ollama")

# option -> (first release with it, or None: present at 0.5.0; first release without it, or None)
HISTORY = {
    "context_length": ("0.5.13", None),  # Uint("OLLAMA_CONTEXT_LENGTH", 2048) appears at v0.5.13
    "new_engine": ("0.5.12", "0.30.0"),
    "auth": ("0.8.0", None),
    "remotes": ("0.12.0", None),
    "vulkan": ("0.12.11", None),
    "intel_gpu": (None, "0.12.11"),
    "tmpdir": (None, "0.5.2"),
    "max_vram": (None, "0.7.0"),
    "num_parallel": (None, None),
    "modelfile.tfs_z": (None, "0.5.2"),
    "modelfile.penalize_newline": (None, "0.5.5"),
    "modelfile.mirostat": (None, "0.7.0"),  # Options.Mirostat dropped at v0.7.0
    "modelfile.use_mlock": (None, "0.7.0"),
    "modelfile.draft_num_predict": ("0.30.0", None),
    "modelfile.num_ctx": (None, None),
}


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split("-")[0].split("."))


def _eng001(tmp_path: Path, version: str, option: str) -> list[Finding]:
    found = eng001(tmp_path, "ollama", version, "{source: 'qwen2.5:7b', quantization: gguf, gguf_type: Q4_K_M}", option)
    return [f for f in found if f"'{option}'" in f.message]


def test_every_release_from_0_5_0_is_catalogued_and_resolves_exactly() -> None:
    versions = OLLAMA.catalog.versions
    upto = [v for v in versions if version_key(v) <= version_key("0.32.15")]  # later releases: scripts/catalog/refresh
    assert versions[0] == "0.5.0" and upto[-1] == "0.32.15" and len(upto) == 143
    minors = {".".join(v.split(".")[:2]) for v in versions}
    assert {"0.5", "0.6", "0.9", "0.12", "0.24", "0.30", "0.32"} <= minors
    for version in versions:  # 0.33.0-rc2 is catalogued too; Catalog.versions lists pre-releases only alone
        selection = OLLAMA.select(version)
        assert selection.relation == "exact" and selection.release is not None, version
        assert not selection.release.partial


@pytest.mark.parametrize("option", sorted(HISTORY))
def test_an_option_exists_exactly_in_the_releases_that_have_it(option: str) -> None:
    added, removed = HISTORY[option]
    catalogued = {release.version for release in OLLAMA.releases}
    assert {added, removed} - {None} <= catalogued  # both sides of each change are catalogued
    for release in OLLAMA.releases:
        v = _key(release.version)
        present = (added is None or v >= _key(added)) and (removed is None or v < _key(removed))
        assert (option in release.options) == present, (option, release.version)


@pytest.mark.parametrize(
    ("option", "before", "since"),
    [("context_length", "0.5.12", "0.5.13"), ("auth", "0.7.1", "0.8.0"), ("remotes", "0.11.11", "0.12.0")],
)
def test_eng001_fires_before_an_option_was_added_and_not_after(
    tmp_path: Path, option: str, before: str, since: str
) -> None:
    found = _eng001(tmp_path, before, option)
    assert len(found) == 1 and f"added in {since}" in found[0].message
    assert not _eng001(tmp_path, since, option)


@pytest.mark.parametrize(
    ("option", "last", "gone"),
    [("modelfile.mirostat", "0.6.8", "0.7.0"), ("intel_gpu", "0.12.10", "0.12.11"), ("new_engine", "0.24.0", "0.30.0")],
)
def test_eng001_says_removed_in_after_an_option_went(tmp_path: Path, option: str, last: str, gone: str) -> None:
    assert not _eng001(tmp_path, last, option)
    found = _eng001(tmp_path, gone, option)
    assert len(found) == 1 and f"removed in {gone}" in found[0].message
    later = _eng001(tmp_path, "0.32.15", option)
    assert len(later) == 1 and f"removed in {gone}" in later[0].message


@pytest.mark.parametrize(
    ("version", "context_length", "num_parallel"),
    [("0.5.13", 2048, 0), ("0.6.7", 4096, 0), ("0.10.0", 4096, 1), ("0.15.5", 0, 1), ("0.32.15", 0, 1)],
)
def test_default_context_and_parallelism_per_release(version: str, context_length: int, num_parallel: int) -> None:
    # Uint("OLLAMA_CONTEXT_LENGTH", N) and Uint("OLLAMA_NUM_PARALLEL", N) at each tag
    release = OLLAMA.select(version).release
    assert release is not None
    assert release.default("context_length") == context_length
    assert release.default("num_parallel") == num_parallel


def test_env_names_types_defaults_and_image_cuda() -> None:
    release = OLLAMA.select("0.32.15").release
    assert release is not None
    assert release.options["num_parallel"].env == "OLLAMA_NUM_PARALLEL"
    assert release.options["cuda_visible_devices"].env == "CUDA_VISIBLE_DEVICES"
    assert release.options["kv_cache_type"].choices == ("f16", "q8_0", "q4_0")  # SupportsKVCacheType
    assert release.options["modelfile.temperature"].default == 0.8  # DefaultOptions
    assert release.options["modelfile.stop"].type == "list"
    assert release.facts.image_cuda is not None and release.facts.image_cuda.value == "12.8"
    first = OLLAMA.select("0.5.0").release
    assert first is not None and first.options["debug"].type == "bool"  # Bool("OLLAMA_DEBUG") until 0.7
    assert release.options["debug"].type == "int"  # LogLevel(): 0 INFO, 1 DEBUG, 2 TRACE
