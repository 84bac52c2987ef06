"""Build a host's facts file (contract §2.3) from the command outputs saved for it."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

from servespec.discover.parsers import (
    acs_state,
    parse_lspci_acs,
    parse_numactl,
    parse_query_csv,
    parse_smi_table,
    parse_topo,
)

OUTPUT_FILES = {
    "nvidia-smi.csv": [
        "nvidia-smi",
        "--query-gpu=index,name,pci.bus_id,memory.total,compute_cap,driver_version",
        "--format=csv",
    ],
    "nvidia-smi.txt": ["nvidia-smi"],
    "topo.txt": ["nvidia-smi", "topo", "-m"],
    "lspci.txt": ["lspci", "-vvv"],
    "numa.txt": ["numactl", "--hardware"],
}
"""The files `--from-outputs` reads, and the command each holds the output of."""


def _read(folder: Path, name: str) -> str | None:
    path = folder / name
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None


def _gpus(folder: Path) -> dict[str, Any]:
    hardware: dict[str, Any] = {}
    csv = _read(folder, "nvidia-smi.csv")
    rows = parse_query_csv(csv) if csv else []
    if rows:
        hardware["gpus"] = {"model": rows[0].get("name", ""), "count": len(rows)}
        if rows[0].get("driver_version"):
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
    numa = _read(folder, "numa.txt")
    if numa:
        cpus = parse_numactl(numa).get("cpus")
        if cpus:
            hardware["numa_cpus"] = cpus
    stamps = [(folder / name).stat().st_mtime for name in OUTPUT_FILES if (folder / name).is_file()]
    collected = datetime.datetime.fromtimestamp(max(stamps), datetime.UTC) if stamps else None
    facts: dict[str, Any] = {"version": 1, "host": host}
    if collected:
        facts["collected_at"] = collected.strftime("%Y-%m-%dT%H:%M:%SZ")
    facts["hardware"] = hardware
    facts["links"] = links
    return facts


def write_facts(outputs: Path, destination: Path) -> list[Path]:
    """One ``<host>.json`` per ``outputs/<host>/`` folder; returns the files written."""
    destination.mkdir(parents=True, exist_ok=True)
    written = []
    for folder in sorted(p for p in outputs.iterdir() if p.is_dir()):
        facts = facts_from_outputs(folder, folder.name)
        path = destination / f"{folder.name}.json"
        path.write_text(json.dumps(facts, indent=2) + "\n", encoding="utf-8")
        written.append(path)
    return written
