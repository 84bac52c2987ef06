"""The discovery parsers on real outputs recorded from public sources (tests/data/facts/samples)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from servespec.discover.parsers import (
    acs_state,
    parse_lspci_acs,
    parse_numactl,
    parse_query_csv,
    parse_smi_table,
    parse_topo,
)
from tests.conftest import REPO

SAMPLES = sorted((REPO / "tests" / "data" / "facts" / "samples").glob("*/source.yaml"))


def _load(path: Path) -> tuple[dict[str, Any], str]:
    return YAML(typ="safe").load(path.read_text()), (path.parent / "output.txt").read_text()


def test_enough_samples_with_links() -> None:
    assert len(SAMPLES) >= 10
    for path in SAMPLES:
        source, _ = _load(path)
        assert str(source["url"]).startswith("https://"), path


def _check_topo(expected: dict[str, Any], text: str) -> None:
    parsed = parse_topo(text)
    assert parsed["gpu_count"] == expected["gpu_count"]
    assert parsed["links"] == [list(link) for link in expected["links"]]
    assert parsed.get("interconnect") == expected["interconnect"]
    if "gpu_numa_nodes" in expected:
        numa = expected["gpu_numa_nodes"]
        if all(node is None for node in numa):
            # Empty affinity cells: the parser records nothing rather than guessing.
            assert "gpu_numa_nodes" not in parsed
        else:
            assert parsed.get("gpu_numa_nodes") == numa


def _check_table(expected: dict[str, Any], text: str) -> None:
    parsed = parse_smi_table(text)
    gpus = [{k: g[k] for k in ("index", "name", "memory_mib") if k in g} for g in parsed["gpus"]]
    assert gpus == [{k: g[k] for k in ("index", "name", "memory_mib") if k in g} for g in expected["gpus"]]
    if "driver_version" in expected:
        assert parsed.get("driver_version") == expected["driver_version"]


def _check_csv(expected: dict[str, Any], text: str) -> None:
    rows = parse_query_csv(text)
    assert len(rows) == len(expected["rows"])
    for row, want in zip(rows, expected["rows"], strict=True):
        for key, value in want.items():
            name = key.split(" [")[0]
            assert row[name] == str(value), (key, row)


def _check_lspci(expected: dict[str, Any], text: str) -> None:
    devices = parse_lspci_acs(text)
    states = ["enabled" if enabled else "disabled" for _, enabled, _ in devices]
    assert states == [entry[1] for entry in expected["acs"]]
    assert acs_state(devices) == ("enabled" if "enabled" in states else "disabled")


def _check_numactl(expected: dict[str, Any], text: str) -> None:
    parsed = parse_numactl(text)
    assert parsed["nodes"] == expected["nodes"]


CHECKS = {
    "topo": _check_topo,
    "nvidia-smi": _check_table,
    "csv": _check_csv,
    "lspci": _check_lspci,
    "numactl": _check_numactl,
}


@pytest.mark.parametrize("path", SAMPLES, ids=[p.parent.name for p in SAMPLES])
def test_sample_parses_as_recorded(path: Path) -> None:
    source, text = _load(path)
    CHECKS[source["kind"]](source["expected"], text)
