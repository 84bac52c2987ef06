"""The catalogued releases a build the catalogue lacks lies between (``Catalog.candidates``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from servespec.engines import get
from servespec.engines.catalog import Catalog

VLLM = get("vllm").catalog


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("0.10.1.dev101+gbda9d0535", ("0.10.0", "0.10.1")),  # a development build precedes its release
        ("0.10.1rc1", ("0.10.0", "0.10.1")),
        ("0.15.0rc2.dev46+gc4e744dbd", ("0.14.1", "0.15.0")),
        ("0.10.1", ("0.10.1",)),
        ("v0.10.1", ("0.10.1",)),
        ("0.10.1+cu126", ("0.10.1",)),  # a local label on a catalogued release is that release
        ("0.8.3rc2.dev224+g49c0d11ec", ("0.8.2", "0.8.3")),
    ],
)
def test_vllm_candidates(version: str, expected: tuple[str, ...]) -> None:
    assert VLLM.candidates(version) == expected


def test_candidates_by_names_alone(tmp_path: Path) -> None:
    """Between, above every release (the newest only: unbounded) and below every release (none), on a catalogue of
    names (no file is read unless a version is catalogued exactly)."""
    for name in ("1.0.0", "1.1.0", "1.1.0.post1", "2.0.0"):
        (tmp_path / f"{name}.json").write_text("{}")
    catalog = Catalog("x", tmp_path)  # type: ignore[arg-type]
    assert catalog.candidates("1.1.0.dev3") == ("1.0.0", "1.1.0")
    assert catalog.candidates("1.1.1") == ("1.1.0.post1", "2.0.0")  # an uncatalogued release
    assert catalog.candidates("1.2.0rc1") == ("1.1.0.post1", "2.0.0")
    assert catalog.candidates("2.1.0.dev1") == ("2.0.0",)
    assert catalog.candidates("0.9.0") == ()
    assert catalog.candidates("not-a-version") == ()
