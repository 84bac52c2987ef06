"""TGI release catalogs (scripts/catalog/tgi.py): ENG001 fires exactly where a launcher option does not exist.

The samples were checked against the launcher's clap ``Args`` at each tag
(``git show v<version>:launcher/src/main.rs`` of github.com/huggingface/text-generation-inference).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from servespec import engines
from servespec.engines.catalog import version_key
from servespec.findings import Finding
from tests.engines.one_option import eng001

TGI = engines.get("tgi")

# option -> (first release with it, or None: present from 2.0.0; first release without it, or None)
HISTORY = {
    "max_client_batch_size": ("2.0.1", None),  # Args gains it at v2.0.1
    "lora_adapters": ("2.1.0", None),
    "otlp_service_name": ("2.1.0", None),
    "disable_usage_stats": ("2.2.0", "2.3.0"),  # 2.3.0 replaces both with --usage-stats
    "disable_crash_reports": ("2.2.0", "2.3.0"),
    "usage_stats": ("2.3.0", None),
    "api_key": ("2.3.0", None),
    "kv_cache_dtype": ("2.4.0", None),
    "payload_limit": ("2.4.1", None),
    "enable_prefill_logprobs": ("3.0.0", None),
    "graceful_termination_timeout": ("3.2.2", None),
    "prometheus_port": ("3.3.0", None),
    "enable_cuda_graphs": (None, "2.0.0"),  # 1.4.5's flag, --cuda-graphs from 2.0.0
    "max_input_tokens": (None, None),
}

QWEN = "{source: Qwen/Qwen2.5-7B-Instruct}"


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split("."))


def _eng001(tmp_path: Path, version: str, option: str) -> list[Finding]:
    return [f for f in eng001(tmp_path, "tgi", version, QWEN, option) if f"'{option}'" in f.message]


def test_every_release_from_2_0_0_to_3_3_7_is_catalogued_and_resolves_exactly() -> None:
    versions = TGI.catalog.versions
    upto = [v for v in versions if version_key(v) <= version_key("3.3.7")]  # later releases: scripts/catalog/refresh
    assert versions[0] == "2.0.0" and upto[-1] == "3.3.7" and len(upto) == 29
    for version in versions:
        selection = TGI.select(version)
        assert selection.relation == "exact" and selection.release is not None
        assert selection.release.version == version and not selection.release.partial


@pytest.mark.parametrize("option", sorted(HISTORY))
def test_an_option_exists_exactly_in_the_releases_that_have_it(option: str) -> None:
    added, removed = HISTORY[option]
    catalogued = {release.version for release in TGI.releases}
    assert {added, removed} - {None} <= catalogued  # both sides of each change are catalogued
    for release in TGI.releases:
        v = _key(release.version)
        present = (added is None or v >= _key(added)) and (removed is None or v < _key(removed))
        assert (option in release.options) == present, (option, release.version)


@pytest.mark.parametrize(
    ("option", "before", "since", "words"),
    [
        ("max_client_batch_size", "2.0.0", "2.0.1", "added in 2.0.1"),
        ("kv_cache_dtype", "2.3.1", "2.4.0", "added in 2.4.0"),
        ("prometheus_port", "3.2.3", "3.3.0", "added in 3.3.0"),
        ("graceful_termination_timeout", "3.2.1", "3.2.2", "added in 3.2.2"),
    ],
)
def test_eng001_fires_before_an_option_was_added_and_not_after(
    tmp_path: Path, option: str, before: str, since: str, words: str
) -> None:
    found = _eng001(tmp_path, before, option)
    assert len(found) == 1 and words in found[0].message and found[0].severity.value == "error"
    assert not _eng001(tmp_path, since, option)


@pytest.mark.parametrize(
    ("option", "last", "gone"),
    [("disable_usage_stats", "2.2.0", "2.3.0"), ("disable_crash_reports", "2.2.0", "3.3.7")],
)
def test_eng001_says_removed_in_after_an_option_went(tmp_path: Path, option: str, last: str, gone: str) -> None:
    assert not _eng001(tmp_path, last, option)
    found = _eng001(tmp_path, gone, option)
    assert len(found) == 1 and "removed in 2.3.0" in found[0].message


def test_enable_cuda_graphs_is_removed_in_2_0_0_everywhere(tmp_path: Path) -> None:
    for version in ("2.0.0", "2.4.1", "3.3.7"):
        found = _eng001(tmp_path, version, "enable_cuda_graphs")
        assert len(found) == 1 and "removed in 2.0.0" in found[0].message, version
        release = TGI.select(version).release
        assert release is not None and release.removed("enable_cuda_graphs") is not None


def test_quantize_choices_and_facts_follow_the_quantization_enum() -> None:
    first, last = TGI.select("2.0.0").release, TGI.select("3.3.7").release
    assert first is not None and last is not None
    # v2.0.0's Quantization enum: awq eetq gptq bitsandbytes(-nf4/-fp4) fp8; exl2/marlin/compressed-tensors later
    for release in (first, last):
        quantize = release.options["quantize"]
        assert quantize.choices is not None and set(quantize.choices) == set(release.facts.quantization_methods)
    assert "marlin" not in first.facts.quantization_methods and "marlin" in last.facts.quantization_methods
    assert first.facts.image_cuda is not None and first.facts.image_cuda.value == "12.1"  # nvidia/cuda:12.1.0-base
    assert last.facts.image_cuda is not None and last.facts.image_cuda.value == "12.4"


def test_launcher_types_defaults_and_spellings() -> None:
    before, release = TGI.select("3.2.3").release, TGI.select("3.3.7").release
    assert before is not None and release is not None
    port, sharded, env = before.option("-p"), release.options["sharded"], release.options["env"]
    assert port is not None and port.key == "port" and port.default == 3000 and port.env == "PORT"
    # 3.3.0 declares `prometheus_port` with `short` too: both fields claim -p
    assert release.options["prometheus_port"].aliases == ("-p",) == release.options["port"].aliases
    assert (sharded.type, sharded.bool_form) == ("bool", "value")  # Option<bool>: --sharded true|false
    assert (env.flag, env.aliases, env.env) == ("--env", ("-e",), None)  # `long, short, action`, no env
    assert release.options["validation_workers"].min == 1  # the launcher refuses 0
    assert release.options["max_input_length"].deprecated  # "Legacy version of [`Args::max_input_tokens`]"
