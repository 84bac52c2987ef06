"""GPU catalog: names resolve from nvidia-smi spellings; facts are complete."""

from __future__ import annotations

import pytest

from servespec.knowledge.gpus import catalog, resolve


@pytest.mark.parametrize(
    ("printed", "gpu_id", "capability"),
    [
        ("NVIDIA A100-SXM4-80GB", "A100-SXM4-80GB", (8, 0)),
        ("A100-SXM4-40GB", "A100-SXM4-40GB", (8, 0)),
        ("NVIDIA A100 80GB PCIe", "A100-PCIE-80GB", (8, 0)),
        ("Tesla T4", "T4", (7, 5)),
        ("Tesla V100-SXM2-32GB", "V100-SXM2-32GB", (7, 0)),
        ("NVIDIA H100 80GB HBM3", "H100-SXM5-80GB", (9, 0)),
        ("NVIDIA H100 PCIe", "H100-PCIE-80GB", (9, 0)),
        ("NVIDIA H200", "H200-SXM-141GB", (9, 0)),
        ("NVIDIA GeForce RTX 4090", "RTX-4090", (8, 9)),
        ("NVIDIA L4", "L4", (8, 9)),
        ("NVIDIA L40S", "L40S", (8, 9)),
        ("NVIDIA A10G", "A10G", (8, 6)),
        ("NVIDIA RTX 6000 Ada Generation", "RTX-6000-Ada", (8, 9)),
        ("NVIDIA B200", "B200", (10, 0)),
        ("nvidia l4", "L4", (8, 9)),
    ],
)
def test_nvidia_smi_names_resolve(printed: str, gpu_id: str, capability: tuple[int, int]) -> None:
    gpu = resolve(printed)
    assert gpu is not None, printed
    assert gpu.id == gpu_id
    assert gpu.compute_capability == capability


def test_unknown_name_is_none() -> None:
    assert resolve("NVIDIA Z9000") is None


def test_truncated_table_name_resolves_only_when_unique() -> None:
    assert resolve("NVIDIA GeForce RTX 508...") is not None  # only the RTX 5080 starts so
    # RTX 5090 and RTX 5090 D both print 32607 MiB: neither name nor memory tells the truncated row apart
    assert resolve("NVIDIA GeForce RTX 509...") is None
    assert resolve("NVIDIA GeForce RTX 509...", 32607) is None
    assert resolve("NVIDIA A100-SXM...") is None  # 40GB and 80GB both match
    # RTX 4090, RTX 4090 D (both 24564 MiB) and the 16 GB RTX 4090 Laptop GPU: the memory picks only the laptop part
    assert resolve("NVIDIA GeForce RTX 409...") is None
    assert resolve("NVIDIA GeForce RTX 409...", 24564) is None
    assert resolve("NVIDIA GeForce RTX 409...", 16376).id == "RTX-4090-Laptop"  # type: ignore[union-attr]


def test_catalog_size_and_fields() -> None:
    gpus = catalog()
    assert len(gpus) >= 30
    for gpu in gpus:
        assert gpu.memory_mib > 1000 and gpu.compute_capability >= (6, 0), gpu.id


def test_catalog_keeps_only_facts_code_reads_and_their_sources() -> None:
    from servespec.knowledge.datafile import load_yaml_data
    from servespec.knowledge.gpus import FACTS, PROVENANCE

    for entry in load_yaml_data("gpus.yaml")["gpus"]:
        assert set(entry) <= FACTS | PROVENANCE, (entry["id"], set(entry) - FACTS - PROVENANCE)
        assert str(entry["source"]).startswith("http") and entry["memory_source"], entry["id"]


def test_verified_memory_differs_from_marketing_size() -> None:
    # nvidia-smi reports less than the datasheet for most parts (real outputs in gpus.yaml).
    assert resolve("NVIDIA L4").memory_mib == 23034  # type: ignore[union-attr]
    assert resolve("NVIDIA H100 80GB HBM3").memory_mib == 81559  # type: ignore[union-attr]
