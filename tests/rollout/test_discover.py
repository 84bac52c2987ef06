"""`deploy discover` end to end on a test host over SSH.

The host has no GPU: STAND-IN ``nvidia-smi``, ``lspci`` and ``numactl`` scripts
(tests/hosts/standin/bin, named as stand-ins) print outputs recorded from real machines, so
the playbook, the transfer and the parsing run for real. The facts file must equal what
the same parsers build from those outputs, and ``deploy validate`` must use it.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from servespec.discover.facts import facts_from_outputs
from servespec.spec.fleet import load_fleet
from tests.conftest import REPO, run_cli
from tests.rollout.conftest import RemoteHost

pytestmark = pytest.mark.slow
SAMPLES = REPO / "tests" / "data" / "facts" / "samples"
STANDINS = REPO / "tests" / "hosts" / "standin" / "bin"


H100_CSV = "index, name, uuid, pci.bus_id, memory.total [MiB], compute_cap, driver_version\n" + "".join(
    f"{i}, NVIDIA H100 80GB HBM3, GPU-standin-{i}, 00000000:{bus}:00.0, 81559 MiB, 9.0, 550.54.15\n"
    for i, bus in enumerate(("18", "2A", "3A", "5D", "9A", "AB", "BA", "DB"))
)
"""Made for this test (not recorded): a query CSV consistent with sample 01's 8-GPU topology."""


def _outputs(folder: Path) -> Path:
    """One host's GPU outputs: sample 01's NVSwitch topo, recorded lspci/numactl, a made CSV, GPU 3 busy."""
    folder.mkdir()
    (folder / "topo.txt").write_text((SAMPLES / "01-topo-h100-nv18-nvswitch" / "output.txt").read_text())
    for kind, name in (("lspci", "lspci.txt"), ("numactl", "numa.txt")):
        found = sorted(p for p in SAMPLES.glob(f"*-{kind}-*") if (p / "output.txt").is_file())
        (folder / name).write_text((found[0] / "output.txt").read_text())
    (folder / "nvidia-smi.csv").write_text(H100_CSV)
    (folder / "gpu-apps.csv").write_text("gpu_bus_id, pid, used_memory [MiB]\n00000000:5D:00.0, 4242, 70000 MiB\n")
    return folder


def test_discover_writes_facts_that_validate_uses(
    tmp_path: Path, inventory: Path, clean_hosts: list[RemoteHost]
) -> None:
    host = clean_hosts[0]
    outputs = _outputs(tmp_path / "outputs")
    host.sh("mkdir -p /usr/local/share/servespec-standin")
    for path in outputs.iterdir():
        subprocess.run(
            ["docker", "cp", str(path), f"{host.container}:/usr/local/share/servespec-standin/{path.name}"], check=True
        )
    for tool in STANDINS.iterdir():
        subprocess.run(["docker", "cp", str(tool), f"{host.container}:/usr/local/bin/{tool.name}"], check=True)
    one_host = tmp_path / "one.yaml"
    one_host.write_text(
        inventory.read_text().split("  host2:")[0]  # keep host1 only
    )
    result = run_cli("discover", "-i", str(one_host), "-o", str(tmp_path / "facts"))
    assert result.exit_code == 0, result.output
    discovered = json.loads((tmp_path / "facts" / "host1.json").read_text())
    expected = json.loads(json.dumps(facts_from_outputs(outputs, "host1")))  # JSON keys are strings
    hardware = discovered["hardware"]
    host_level = {key: hardware.pop(key) for key in ("cpus", "memory_gib", "iommu") if key in hardware}
    assert hardware == expected["hardware"]  # GPU facts: exactly what the parsers make of the stand-ins' outputs
    assert discovered["links"] == expected["links"]
    assert hardware["interconnect"] == "nvswitch" and hardware["gpus"]["count"] == 8
    assert len(discovered["links"]) == 28
    # Host-level facts are the test host's own (real /proc, real Docker-in-Docker, real df).
    assert host_level["cpus"] >= 1 and host_level["memory_gib"] > 0
    runtime = discovered["runtime"]
    assert runtime["docker_version"] and runtime["nvidia_runtime"] is False
    assert runtime["model_cache_free_gib"] > 0
    assert runtime["busy_gpus"] == [3]

    fleet_file = tmp_path / "fleet.yaml"
    fleet_file.write_text("apiVersion: servespec/v1\nkind: Inventory\nhosts:\n  host1: {facts: facts/host1.json}\n")
    validated = run_cli("validate", "--format", "json", str(fleet_file))
    assert '"rule": "REF002"' not in validated.output and '"rule": "SS' not in validated.output, validated.output
    loaded = load_fleet([fleet_file]).inventories[0].hosts["host1"]
    assert loaded.hardware is not None and loaded.hardware.interconnect == "nvswitch"
    assert [list(link) for link in loaded.links] == discovered["links"]
