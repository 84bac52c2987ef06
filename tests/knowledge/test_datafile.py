"""The JSON cache of catalog data files: same data, and any cache problem falls back to YAML."""

from __future__ import annotations

from pathlib import Path

import pytest

from servespec.knowledge.datafile import load_yaml_data


def test_cache_is_written_and_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    first = load_yaml_data("gpus.yaml")
    cached = list((tmp_path / "servespec" / "catalogs").glob("gpus.yaml.*.json"))
    assert len(cached) == 1
    assert load_yaml_data("gpus.yaml") == first


def test_corrupt_cache_falls_back_to_yaml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    expected = load_yaml_data("gpus.yaml")
    (cached,) = (tmp_path / "servespec" / "catalogs").glob("gpus.yaml.*.json")
    cached.write_text("{not json")
    assert load_yaml_data("gpus.yaml") == expected


def test_unwritable_cache_still_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # a file, so the cache folder cannot be made
    assert load_yaml_data("gpus.yaml")["gpus"]
