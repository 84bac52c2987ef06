"""The ``mm_encoder_profile`` fact of every catalogued vLLM release (scripts/catalog/vllm_mm_profile.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from servespec import engines
from servespec.engines.catalog import version_key
from tests.engines.test_catalog_vllm import _script, _unpacked_sdists

VLLM = engines.get("vllm")
VERSIONS = VLLM.catalog.versions


@pytest.mark.parametrize("version", VERSIONS)
def test_every_v1_release_says_how_it_profiles_the_multimodal_encoder(version: str) -> None:
    """Every V1 release (0.8.0 on) runs the encoder on dummy items in ``profile_run`` and holds the outputs through the
    language model's dummy run; items per batch by ``cdiv`` up to 0.9.2, ``//`` from 0.10.0; one item per prompt by
    default in 0.8.0-0.8.3 (``limit_per_prompt.get(modality, 1)``), 999 on V1 from 0.8.4; ``--skip-mm-profiling``
    from 0.10.1. V0 releases carry no fact. Each value cites the release's own lines."""
    release = VLLM.catalog.release(version)
    fact = release.facts.mm_encoder_profile
    engine = release.facts.default_engine
    if engine is None or engine.value != "v1":
        assert fact is None, version
        return
    assert fact is not None, version
    key = version_key(version)
    urls = fact.source.split("; ")
    assert len(urls) == 3 and all(f"/blob/v{version}/" in u and "#L" in u for u in urls), fact.source
    assert fact.runs_encoder and fact.holds_outputs, version
    assert fact.items_division == ("ceil" if key < (0, 10) else "floor"), version
    assert fact.default_limit == (1 if key < (0, 8, 4) else 999), version
    assert fact.skip_option == (None if key < (0, 10, 1) else "skip_mm_profiling"), version
    if fact.skip_option:
        assert release.option(fact.skip_option) is not None, version


def test_the_reader_follows_the_default_limit_and_the_encoder_runner(tmp_path: Path) -> None:
    """A made-up release: the default limit behind ``self.get_default_limit_per_prompt()`` (0.8.4's shape) and the
    encoder pass in ``profile_encoder_cache`` of gpu/mm/encoder_runner.py (0.34's); without a readable division the
    fact is not given."""
    reader = _script("vllm_mm_profile")
    root = tmp_path / "vllm"
    (root / "v1" / "worker" / "gpu" / "mm").mkdir(parents=True)
    (root / "multimodal").mkdir()
    (root / "v1" / "worker" / "gpu" / "model_runner.py").write_text(
        "class R:\n"
        "    def profile_run(self):\n"
        "        if self.model_config.multimodal_config.skip_mm_profiling:\n"
        "            return\n"
        "        self.encoder_runner.profile_encoder_cache(x, budget)\n"
        "        self._dummy_run(1)\n"
    )
    (root / "v1" / "worker" / "gpu" / "mm" / "encoder_runner.py").write_text(
        "class E:\n"
        "    def profile_encoder_cache(self, x, budget):\n"
        "        out = self.model.embed_multimodal(**x)\n"
        "        self.encoder_cache.encoder_outputs.update(enumerate(out))\n"
    )
    (root / "config.py").write_text(
        "class M:\n"
        "    def get_default_limit_per_prompt(self):\n"
        "        return 999 if envs.VLLM_USE_V1 else 1\n"
        "    def get_limit_per_prompt(self, modality):\n"
        "        default = self.get_default_limit_per_prompt()\n"
        "        return self.limit_per_prompt.get(modality, default)\n"
    )
    assert reader.mm_encoder_profile("9.9.9", tmp_path, {"skip_mm_profiling"}) is None  # no division to read
    (root / "multimodal" / "encoder_budget.py").write_text(
        "def items(budget, per_item):\n    max_encoder_items_per_batch = budget // per_item\n"
    )
    found = reader.mm_encoder_profile("9.9.9", tmp_path, {"skip_mm_profiling"})
    assert found is not None
    assert (found["runs_encoder"], found["holds_outputs"], found["items_division"]) == (True, True, "floor")
    assert (found["default_limit"], found["skip_option"]) == (999, "skip_mm_profiling")
    assert "encoder_runner.py#L3 (profile_run's encoder pass)" in found["source"]
    assert "skip_option" not in reader.mm_encoder_profile("9.9.9", tmp_path, set())  # the release lacks the option


@pytest.mark.slow
def test_the_reader_reproduces_the_catalogued_facts_from_the_cached_sources() -> None:
    """scripts/catalog/vllm_mm_profile.py re-run on every release whose sdist is unpacked here gives the catalogued
    fact (skipped where none is cached)."""
    reader = _script("vllm_mm_profile")
    for version, src, facts in _unpacked_sdists():
        if facts["default_engine"]["value"] != "v1":
            continue
        options = set(VLLM.catalog.release(version).options)
        assert reader.mm_encoder_profile(version, src, options) == facts["mm_encoder_profile"], version
