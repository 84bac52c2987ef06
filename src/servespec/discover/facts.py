"""Build a host's facts file (contract §2.3) from the command outputs saved for it."""

from __future__ import annotations

import datetime
import json
import re
from pathlib import Path
from typing import Any

from servespec.discover.parsers import (
    acs_state,
    busy_gpus,
    parse_df_free_gib,
    parse_docker_info,
    parse_gpu_numa,
    parse_iommu,
    parse_lspci_acs,
    parse_meminfo,
    parse_numactl,
    parse_query_csv,
    parse_smi_table,
    parse_topo,
)
from servespec.spec.models import FactsFile

OUTPUT_FILES = {
    "nvidia-smi.csv": "nvidia-smi --query-gpu=index,name,uuid,pci.bus_id,memory.total,compute_cap,driver_version"
    " --format=csv",
    "nvidia-smi.txt": "nvidia-smi",
    "topo.txt": "nvidia-smi topo -m",
    "gpu-apps.csv": "nvidia-smi --query-compute-apps=gpu_bus_id,pid,used_memory --format=csv",
    "lspci.txt": "lspci -vvv",
    "numa.txt": "numactl --hardware",
    "gpu-numa.txt": "one line per GPU: its pci.bus_id and /sys/bus/pci/devices/<bus>/numa_node",
    "cmdline.txt": "cat /proc/cmdline",
    "iommu.txt": "ls /sys/class/iommu (the word none when empty)",
    "meminfo.txt": "cat /proc/meminfo",
    "nproc.txt": "nproc --all",
    "docker-info.json": "docker info --format '{{json .}}'",
    "model-cache-df.txt": "df -Pk /var/lib/servespec/models",
}
"""The files `--from-outputs` reads, and what each holds; every one is optional."""


def _read(folder: Path, name: str) -> str | None:
    path = folder / name
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None


def _gpus(folder: Path) -> dict[str, Any]:
    hardware: dict[str, Any] = {}
    csv = _read(folder, "nvidia-smi.csv")
    rows = [row for row in parse_query_csv(csv) if row.get("name")] if csv else []
    if rows:
        hardware["gpus"] = {"model": rows[0]["name"], "count": len(rows)}
        if re.fullmatch(r"\d+(\.\d+){1,2}", rows[0].get("driver_version", "")):
            hardware["driver_version"] = rows[0]["driver_version"]
        return hardware
    table = _read(folder, "nvidia-smi.txt")
    parsed = parse_smi_table(table) if table else {}
    if parsed.get("gpus"):
        hardware["gpus"] = {"model": parsed["gpus"][0]["name"], "count": len(parsed["gpus"])}
    if parsed.get("driver_version"):
        hardware["driver_version"] = parsed["driver_version"]
    return hardware


def facts_from_outputs(folder: Path, host: str) -> dict[str, Any]:
    """The facts file of ``host`` from the outputs in ``folder`` (missing outputs leave facts out)."""
    hardware = _gpus(folder)
    links: list[list[Any]] = []
    topo = _read(folder, "topo.txt")
    if topo:
        parsed = parse_topo(topo)
        links = parsed.get("links", [])
        for key in ("interconnect", "gpu_numa_nodes"):
            if key in parsed:
                hardware[key] = parsed[key]
    lspci = _read(folder, "lspci.txt")
    if lspci:
        state = acs_state(parse_lspci_acs(lspci))
        if state != "unknown":
            hardware["pcie_acs"] = state
    gpu_numa = _read(folder, "gpu-numa.txt")
    nodes = parse_gpu_numa(gpu_numa) if gpu_numa else None
    if nodes:  # sysfs is the kernel's own answer; it wins over topo's NUMA column
        hardware["gpu_numa_nodes"] = nodes
    hardware.update(_host_level(folder))
    stamps = [(folder / name).stat().st_mtime for name in OUTPUT_FILES if (folder / name).is_file()]
    collected = datetime.datetime.fromtimestamp(max(stamps), datetime.UTC) if stamps else None
    facts: dict[str, Any] = {"version": 1, "host": host}
    if collected:
        facts["collected_at"] = collected.strftime("%Y-%m-%dT%H:%M:%SZ")
    facts["hardware"] = hardware
    facts["links"] = links
    runtime = _runtime(folder)
    if runtime:
        facts["runtime"] = runtime
    return facts


def _host_level(folder: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    numa = _read(folder, "numa.txt")
    if numa:
        cpus = parse_numactl(numa).get("cpus")
        if cpus:
            out["numa_cpus"] = cpus
    cmdline, units = _read(folder, "cmdline.txt"), _read(folder, "iommu.txt")
    if cmdline is not None or units is not None:
        iommu = parse_iommu(cmdline, units)
        if iommu != "unknown":
            out["iommu"] = iommu
    nproc = (_read(folder, "nproc.txt") or "").strip()
    if nproc.isdigit() and int(nproc) > 0:
        out["cpus"] = int(nproc)
    meminfo = _read(folder, "meminfo.txt")
    memory = parse_meminfo(meminfo) if meminfo else None
    if memory:
        out["memory_gib"] = memory
    return out


def _runtime(folder: Path) -> dict[str, Any]:
    runtime: dict[str, Any] = {}
    docker = _read(folder, "docker-info.json")
    if docker:
        runtime.update(parse_docker_info(docker))
    df = _read(folder, "model-cache-df.txt")
    free = parse_df_free_gib(df) if df else None
    if free is not None:
        runtime["model_cache_free_gib"] = free
    apps, gpus = _read(folder, "gpu-apps.csv"), _read(folder, "nvidia-smi.csv")
    if apps is not None and gpus:
        runtime["busy_gpus"] = busy_gpus(apps, gpus)
    return runtime


def write_facts(outputs: Path, destination: Path) -> list[Path]:
    """One ``<host>.json`` per ``outputs/<host>/`` folder; returns the files written."""
    destination.mkdir(parents=True, exist_ok=True)
    written = []
    for folder in sorted(p for p in outputs.iterdir() if p.is_dir()):
        facts = facts_from_outputs(folder, folder.name)
        FactsFile.model_validate(facts)  # a parser bug must not write a file validate then rejects
        path = destination / f"{folder.name}.json"
        path.write_text(json.dumps(facts, indent=2) + "\n", encoding="utf-8")
        written.append(path)
    return written
