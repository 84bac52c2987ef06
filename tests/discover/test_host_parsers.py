"""Parsers of the host-level outputs (memory, CPUs, IOMMU, Docker, disk, busy GPUs).

The files under tests/data/facts/local were recorded on the development machine (its README);
the expected values below were read off those files by hand, not produced by the parsers.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from servespec.discover.facts import facts_from_outputs
from servespec.discover.parsers import busy_gpus, parse_df_free_gib, parse_docker_info, parse_iommu, parse_meminfo
from servespec.spec.models import FactsFile
from tests.conftest import REPO

LOCAL = REPO / "tests" / "data" / "facts" / "local"


def _text(name: str) -> str:
    return (LOCAL / name).read_text()


def test_recorded_meminfo() -> None:
    assert parse_meminfo(_text("meminfo.txt")) == 23.5  # MemTotal: 24684092 kB


def test_recorded_docker_info() -> None:
    assert parse_docker_info(_text("docker-info.json")) == {
        "docker_version": "20.10.24+dfsg1",
        "nvidia_runtime": False,  # runtimes: io.containerd.runc.v2, io.containerd.runtime.v1.linux, runc
        "cdi": False,  # Docker 20.10 has no CDISpecDirs at all
    }


def test_docker_info_with_nvidia_runtime_and_cdi() -> None:
    text = '{"ServerVersion": "28.0.1", "Runtimes": {"nvidia": {"path": "nvidia-container-runtime"}, "runc": {}},'
    text += ' "CDISpecDirs": ["/etc/cdi", "/var/run/cdi"]}'
    assert parse_docker_info(text) == {"docker_version": "28.0.1", "nvidia_runtime": True, "cdi": True}
    assert parse_docker_info("not json") == {}


def test_recorded_df() -> None:
    assert parse_df_free_gib(_text("model-cache-df.txt")) == 62.3  # Available 65279988 KiB
    assert parse_df_free_gib("df: /nope: No such file or directory\n") is None


@pytest.mark.parametrize(
    ("cmdline", "units", "state"),
    [
        (None, "none\n", "off"),  # the recorded VM: empty /sys/class/iommu
        ("BOOT_IMAGE=/vmlinuz intel_iommu=on iommu=pt", "dmar0\ndmar1\n", "passthrough"),
        ("BOOT_IMAGE=/vmlinuz intel_iommu=on", "dmar0\n", "on"),
        ("BOOT_IMAGE=/vmlinuz", "ivhd0\n", "on"),  # AMD: on by default when the unit exists
        ("BOOT_IMAGE=/vmlinuz amd_iommu=off", None, "off"),
        ("BOOT_IMAGE=/vmlinuz iommu.passthrough=1", None, "passthrough"),
        ("BOOT_IMAGE=/vmlinuz quiet", None, "unknown"),
    ],
)
def test_iommu(cmdline: str | None, units: str | None, state: str) -> None:
    assert parse_iommu(cmdline, units) == state


def test_recorded_cmdline_without_listing_is_unknown() -> None:
    assert parse_iommu(_text("cmdline.txt"), None) == "unknown"


def test_busy_gpus_join_on_bus_id() -> None:
    gpus = (
        "index, name, uuid, pci.bus_id, memory.total [MiB], compute_cap, driver_version\n"
        "0, NVIDIA A10, GPU-a, 00000000:17:00.0, 23028 MiB, 8.6, 535.129.03\n"
        "1, NVIDIA A10, GPU-b, 00000000:65:00.0, 23028 MiB, 8.6, 535.129.03\n"
    )
    apps = "gpu_bus_id, pid, used_memory [MiB]\n00000000:65:00.0, 4242, 20112 MiB\n"
    assert busy_gpus(apps, gpus) == [1]
    assert busy_gpus("gpu_bus_id, pid, used_memory [MiB]\n", gpus) == []


def test_recorded_host_outputs_make_a_valid_facts_file(tmp_path: Path) -> None:
    folder = tmp_path / "dev"
    shutil.copytree(LOCAL, folder)
    facts = facts_from_outputs(folder, "dev")
    assert facts["hardware"] == {"iommu": "off", "cpus": int(_text("nproc.txt")), "memory_gib": 23.5}
    assert facts["runtime"] == {
        "docker_version": "20.10.24+dfsg1",
        "nvidia_runtime": False,
        "cdi": False,
        "model_cache_free_gib": 62.3,
    }
    FactsFile.model_validate(facts)


def test_csv_without_names_sets_no_gpus(tmp_path: Path) -> None:
    """A recorded CSV of other columns (sample 18: timestamps, no name) must not invent a GPU model."""
    folder = tmp_path / "h"
    folder.mkdir()
    sample = REPO / "tests" / "data" / "facts" / "samples" / "18-csv-a10-timestamp-loop" / "output.txt"
    (folder / "nvidia-smi.csv").write_text(sample.read_text())
    facts = facts_from_outputs(folder, "h")
    assert "gpus" not in facts["hardware"]
    FactsFile.model_validate(facts)
