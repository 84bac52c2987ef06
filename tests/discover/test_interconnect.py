"""How `topo -m` links become an interconnect, and what `topo -m` alone records.

The samples (tests/data/facts/samples, README there) carry the expectations for whole outputs;
these tests name the cases issue 11 lists: an NVLink bridge, one GPU, old drivers, topo alone.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from servespec.discover.facts import facts_from_outputs, write_facts
from servespec.discover.parsers import MAX_NVLINKS_PER_GPU, interconnect, nvlinks, parse_topo
from servespec.spec.models import FactsFile, Inventory
from tests.conftest import REPO

SAMPLES = REPO / "tests" / "data" / "facts" / "samples"


def _sample(name: str) -> str:
    return (SAMPLES / name / "output.txt").read_text()


def _all_pairs(count: int, kind: str) -> list[list[Any]]:
    return [[i, j, kind] for i in range(count) for j in range(i + 1, count)]


@pytest.mark.parametrize(
    ("count", "links", "expected"),
    [
        # Two RTX 3090s with their bridge: GA102 has four NVLinks, "Two RTX 3090 GPUs can be
        # connected together ... using NVLink" (GA102 whitepaper, quoted in
        # https://github.com/huggingface/transformers/issues/9371): NV4, one pair, no switch.
        (2, [[0, 1, "NV4"]], "nvlink"),
        (2, [[0, 1, "NV12"]], "nvlink"),  # A100/H100 PCIe pairs with three bridges
        (4, _all_pairs(4, "NV4"), "nvlink"),  # 4x A100 SXM board: 3 x 4 = 12 links, direct
        (4, _all_pairs(4, "NV6"), "nvlink"),  # 4x H100 board: 3 x 6 = 18 links, direct
        (4, _all_pairs(4, "NV18"), "nvswitch"),  # GB200 tray: 3 x 18 links cannot be direct
        (8, _all_pairs(8, "NV12"), "nvswitch"),  # HGX A100
        (8, _all_pairs(8, "NV18"), "nvswitch"),  # HGX H100
        (16, _all_pairs(16, "NV6"), "nvswitch"),  # DGX-2: 15 x 6 V100 links
        (2, [[0, 1, "SYS"]], "pcie"),
        (1, [], "pcie"),  # one GPU: no peer, nothing but PCIe
        (0, [], None),
        (3, [], None),  # rows missing: the output does not say
    ],
)
def test_interconnect(count: int, links: list[list[Any]], expected: str | None) -> None:
    assert interconnect(count, links) == expected


def test_a_switch_is_only_claimed_beyond_the_links_one_gpu_has() -> None:
    at_limit = _all_pairs(4, f"NV{MAX_NVLINKS_PER_GPU // 3}")
    assert interconnect(4, at_limit) == "nvlink"
    # Not every pair NVLinked: a mesh (DGX-1) or bridges, whatever the counts.
    partial = [*_all_pairs(3, "NV18"), [0, 3, "SYS"], [1, 3, "SYS"], [2, 3, "SYS"]]
    assert interconnect(4, partial) == "nvlink"


@pytest.mark.parametrize(("cell", "links"), [("NV4", 4), ("nv12", 12), (" NV18 ", 18), ("NV", None), ("SYS", None)])
def test_nvlinks(cell: str, links: int | None) -> None:
    assert nvlinks(cell) == links


def test_two_bridged_gpus_were_nvswitch_before() -> None:
    """The 2-GPU NV12 sample: every pair NV#, which the old rule called nvswitch."""
    assert parse_topo(_sample("09-topo-2gpu-nv12-empty-affinity"))["interconnect"] == "nvlink"


def test_k80_single_space_header_counts_its_gpus() -> None:
    parsed = parse_topo(_sample("22-topo-k80x6-soc-single-space-header"))
    assert parsed["gpu_count"] == 6
    assert parsed["links"][:2] == [[0, 1, "PIX"], [0, 2, "SYS"]]  # SOC, today's SYS
    assert parsed["interconnect"] == "pcie"


def test_soc_is_recorded_as_sys() -> None:
    links = parse_topo(_sample("23-topo-k40x4-soc-tabs"))["links"]
    assert {kind for _, _, kind in links} == {"PHB", "SYS"}


def test_one_gpu_host_is_pcie_with_its_count() -> None:
    parsed = parse_topo(_sample("25-topo-teslap4-one-gpu"))
    assert (parsed["gpu_count"], parsed["links"], parsed["interconnect"]) == (1, [], "pcie")
    assert "gpu_numa_nodes" not in parsed  # NUMA Affinity N/A


@pytest.mark.parametrize(
    ("sample", "count", "kind"),
    [
        ("22-topo-k80x6-soc-single-space-header", 6, "pcie"),
        ("25-topo-teslap4-one-gpu", 1, "pcie"),
        ("04-topo-h100x4-nv6-numa8", 4, "nvlink"),
        ("01-topo-h100-nv18-nvswitch", 8, "nvswitch"),
    ],
)
def test_topo_alone_records_the_gpu_count(tmp_path: Path, sample: str, count: int, kind: str) -> None:
    shutil.copy(SAMPLES / sample / "output.txt", tmp_path / "topo.txt")
    facts = facts_from_outputs(tmp_path, "gpu-01")
    assert facts["hardware"]["gpus"] == {"count": count}
    assert facts["hardware"]["interconnect"] == kind
    FactsFile.model_validate(facts)


def test_topo_count_does_not_override_nvidia_smi(tmp_path: Path) -> None:
    shutil.copy(SAMPLES / "04-topo-h100x4-nv6-numa8" / "output.txt", tmp_path / "topo.txt")
    csv = "index, name, pci.bus_id, memory.total [MiB], compute_cap, driver_version\n"
    csv += "0, NVIDIA H100 80GB HBM3, 00000000:18:00.0, 81559 MiB, 9.0, 550.54.15\n"
    (tmp_path / "nvidia-smi.csv").write_text(csv)
    facts = facts_from_outputs(tmp_path, "gpu-01")
    assert facts["hardware"]["gpus"] == {"model": "NVIDIA H100 80GB HBM3", "count": 1}


def test_discover_writes_a_topo_only_facts_file(tmp_path: Path) -> None:
    outputs = tmp_path / "outputs" / "gpu-01"
    outputs.mkdir(parents=True)
    shutil.copy(SAMPLES / "22-topo-k80x6-soc-single-space-header" / "output.txt", outputs / "topo.txt")
    written = write_facts(tmp_path / "outputs", tmp_path / "facts")
    body = json.loads(written[0].read_text())
    assert body["hardware"] == {"gpus": {"count": 6}, "interconnect": "pcie"}


def test_an_inventory_still_names_the_gpu_model() -> None:
    host = {"address": "10.0.0.1", "hardware": {"gpus": {"count": 8}}}
    with pytest.raises(ValueError, match="give the GPU model"):
        Inventory.model_validate({"apiVersion": "servespec/v1", "kind": "Inventory", "hosts": {"gpu-01": host}})
