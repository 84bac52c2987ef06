"""Build a host's facts file (contract §2.3) from the command outputs saved for it."""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from servespec import outdir
from servespec.discover.parsers import (
    acs_state,
    busy_gpus,
    gpu_processes,
    memory_mib,
    number,
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
from servespec.knowledge import gpus as gpu_catalog
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
    "nproc.txt": "getconf _NPROCESSORS_ONLN",
    "gpu-app-containers.txt": "one line per compute process of gpu-apps.csv: its pid and the 64-hex id of the"
    " container it runs in, read from /proc/<pid>/cgroup (- when none)",
    "docker-info.json": "docker info --format '{{json .}}'",
    "docker-ps.txt": "docker ps --no-trunc --format '{{.ID}} {{.Names}}'",
    "model-cache-df.txt": "df -Pk /var/lib/servespec/models (or its nearest existing parent)",
}
"""The files `--from-outputs` reads, and what each holds; every one is optional."""


def _read(folder: Path, name: str) -> str | None:
    """A saved output as text; None when absent or not a regular file (never read through a symlink)."""
    # The folder is the caller's choice (a temporary folder may sit under a symlinked /tmp); the file is the host's.
    found = outdir.survey(folder.resolve(), [name])[name]
    return found.data.decode("utf-8", errors="replace") if found.kind == "file" else None


def _gpus(folder: Path) -> dict[str, Any]:
    hardware: dict[str, Any] = {}
    csv = _read(folder, "nvidia-smi.csv")
    rows = [row for row in parse_query_csv(csv) if row.get("name")] if csv else []
    if rows:
        total = rows[0].get("memory.total", "")  # "12288 MiB", or "12288" with --format=csv,nounits
        model = _catalog_name(rows[0]["name"], memory_mib(total) if "MiB" in total else number(total))
        hardware["gpus"] = {"model": model, "count": len(rows)}
        if re.fullmatch(r"\d+(\.\d+){1,2}", rows[0].get("driver_version", "")):
            hardware["driver_version"] = rows[0]["driver_version"]
        return hardware
    table = _read(folder, "nvidia-smi.txt")
    parsed = parse_smi_table(table) if table else {}
    if parsed.get("gpus"):
        first = parsed["gpus"][0]
        hardware["gpus"] = {
            "model": _catalog_name(str(first["name"]), first.get("memory_mib")),
            "count": len(parsed["gpus"]),
        }
    if parsed.get("driver_version"):
        hardware["driver_version"] = parsed["driver_version"]
    return hardware


def _catalog_name(name: str, memory: int | None) -> str:
    """The GPU's name as the facts record it, so that they name a model the rules know: as printed, unless the
    name alone picks no catalogued card (the plain table truncated it, "NVIDIA A100-SXM...", or NVIDIA prints it
    for two memory sizes, "NVIDIA GeForce RTX 3060") and nvidia-smi's memory.total picks one: then that card's
    printed name, or its catalog id where the printed name is shared (left as printed when nothing fits)."""
    if not name.endswith("...") and gpu_catalog.resolve(name) is not None:
        return name
    model = gpu_catalog.resolve(name, memory)
    if model is None:
        return name
    return model.display_name if gpu_catalog.resolve(model.display_name) == model else model.id


def _parse(folder: Path, name: str, parser: Callable[[str], Any]) -> Any:
    """``parser`` applied to the saved output ``name``; None when it was not saved."""
    text = _read(folder, name)
    return parser(text) if text else None


def _known(**facts: Any) -> dict[str, Any]:
    """The facts an output established: None and ``unknown`` mean it did not."""
    return {key: value for key, value in facts.items() if value is not None and value != "unknown"}


def _positive_int(text: str) -> int | None:
    value = number(text)
    return value if value is not None and value > 0 else None


def _topo_gpus(topo: dict[str, Any]) -> dict[str, Any]:
    """``gpus.count`` from ``topo -m`` when no nvidia-smi output named the GPUs (it shows no model)."""
    count = topo.get("gpu_count")
    return {"gpus": {"count": count}} if isinstance(count, int) and 0 < count <= 64 else {}


def facts_from_outputs(folder: Path, host: str) -> dict[str, Any]:
    """The facts file of ``host`` from the outputs in ``folder`` (missing outputs leave facts out)."""
    topo = _parse(folder, "topo.txt", parse_topo) or {}
    cmdline, units = _read(folder, "cmdline.txt"), _read(folder, "iommu.txt")
    named = _gpus(folder)
    if "gpus" not in named:  # nvidia-smi names the GPUs; topo -m alone still counts them
        named |= _topo_gpus(topo)
    hardware = named | _known(
        interconnect=topo.get("interconnect"),
        # sysfs is the kernel's own answer; it wins over topo's NUMA column
        gpu_numa_nodes=_parse(folder, "gpu-numa.txt", parse_gpu_numa) or topo.get("gpu_numa_nodes"),
        pcie_acs=_parse(folder, "lspci.txt", lambda text: acs_state(parse_lspci_acs(text))),
        numa_cpus=_parse(folder, "numa.txt", lambda text: parse_numactl(text).get("cpus") or None),
        iommu=parse_iommu(cmdline, units) if cmdline is not None or units is not None else None,
        cpus=_parse(folder, "nproc.txt", _positive_int),
        memory_gib=_parse(folder, "meminfo.txt", parse_meminfo) or None,
    )
    stamps = [(folder / name).lstat().st_mtime for name in OUTPUT_FILES if _read(folder, name) is not None]
    facts: dict[str, Any] = {"version": 1, "host": host}
    if stamps:
        facts["collected_at"] = datetime.datetime.fromtimestamp(max(stamps), datetime.UTC).strftime(
            "%Y-%m-%dT%H:%M:%SZ"
        )
    facts["hardware"] = hardware
    facts["links"] = topo.get("links", [])
    apps, gpus = _read(folder, "gpu-apps.csv"), _read(folder, "nvidia-smi.csv")
    pids, containers = _read(folder, "gpu-app-containers.txt"), _read(folder, "docker-ps.txt")
    runtime = (_parse(folder, "docker-info.json", parse_docker_info) or {}) | _known(
        model_cache_free_gib=_parse(folder, "model-cache-df.txt", parse_df_free_gib),
        busy_gpus=busy_gpus(apps, gpus) if apps is not None and gpus else None,
        # Without both listings every process would look foreign, servespec's own engines included.
        gpu_processes=gpu_processes(apps, gpus, pids, containers)
        if apps is not None and gpus and pids is not None and containers is not None
        else None,
    )
    if runtime:
        facts["runtime"] = runtime
    return facts


def _owns(name: str, data: bytes) -> bool:
    """A facts file of the same host: discover's to refresh (anything else in its place is refused)."""
    try:
        body = json.loads(data)
    except ValueError:
        return False
    return isinstance(body, dict) and "version" in body and body.get("host") == name.removesuffix(".json")


def write_facts(outputs: Path, destination: Path) -> list[Path]:
    """One ``<host>.json`` per ``outputs/<host>/`` folder; returns the files written.

    Host folders are real directories with plain names; the facts files are written
    without following symlinks and never over a file that is not that host's facts file
    (:class:`~servespec.outdir.OutputError`, nothing written).
    """
    files = {}
    for folder in sorted(p for p in outputs.iterdir() if p.is_dir() and not p.is_symlink()):
        outdir.check_name(folder.name)
        facts = facts_from_outputs(folder, folder.name)
        FactsFile.model_validate(facts)  # a parser bug must not write a file validate then rejects
        files[f"{folder.name}.json"] = (json.dumps(facts, indent=2) + "\n").encode("utf-8")
    return outdir.write_files(destination, files, _owns)
