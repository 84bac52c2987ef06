"""Pure parsers of the command outputs `deploy discover` collects (contract §2.3).

Each takes the text a command printed and returns what it establishes; nothing is guessed:
facts an output does not show are left out. Tested on real outputs recorded from public
sources (tests/data/facts/samples/).
"""

from __future__ import annotations

import re
from typing import Any

_SMI_GPU_ROW = re.compile(r"^\|\s+(\d+)\s+(.+?)\s+(?:On|Off)\s+\|\s+([0-9A-Fa-f:.]+)\s")
_SMI_MEMORY = re.compile(r"(\d+)MiB\s*/\s*(\d+)MiB")
_ACS_ENABLED_BITS = ("SrcValid+", "ReqRedir+", "CmpltRedir+", "UpstreamFwd+", "P2PRedir+")


def parse_query_csv(text: str) -> list[dict[str, str]]:
    """``nvidia-smi --query-gpu=... --format=csv`` rows, keyed by the header names without units."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return []
    header = [re.sub(r"\s*\[.*?\]\s*$", "", name.strip()) for name in lines[0].split(",")]
    rows = []
    for line in lines[1:]:
        values = [value.strip() for value in line.split(",")]
        if len(values) == len(header):
            rows.append(dict(zip(header, values, strict=True)))
    return rows


def memory_mib(text: str) -> int | None:
    """``81920 MiB`` or ``81920MiB`` -> 81920."""
    match = re.search(r"(\d+)\s*MiB", text)
    return int(match.group(1)) if match else None


def parse_smi_table(text: str) -> dict[str, Any]:
    """The plain ``nvidia-smi`` table: driver and CUDA versions, and each GPU's index, name, memory."""
    out: dict[str, Any] = {"gpus": []}
    driver = re.search(r"Driver Version:\s*([\d.]+)", text)
    cuda = re.search(r"CUDA Version:\s*([\d.]+)", text)
    if driver:
        out["driver_version"] = driver.group(1)
    if cuda:
        out["cuda_version"] = cuda.group(1)
    lines = text.splitlines()
    for number, line in enumerate(lines):
        match = _SMI_GPU_ROW.match(line)
        if not match:
            continue
        gpu: dict[str, Any] = {"index": int(match.group(1)), "name": match.group(2).strip()}
        for following in lines[number + 1 : number + 3]:
            memory = _SMI_MEMORY.search(following)
            if memory:
                gpu["memory_mib"] = int(memory.group(2))
                break
        out["gpus"].append(gpu)
    return out


def _interconnect(kinds: list[str]) -> str | None:
    if not kinds:
        return None
    nv = [kind.upper().startswith("NV") for kind in kinds]
    if all(nv):
        return "nvswitch"
    return "nvlink" if any(nv) else "pcie"


def _topo_rows(lines: list[str]) -> dict[int, list[str]]:
    rows: dict[int, list[str]] = {}
    for line in lines:
        match = re.match(r"^\s*GPU(\d+)\s+(.*)$", line)
        if match:
            rows[int(match.group(1))] = [cell for cell in re.split(r"\s+", match.group(2).strip()) if cell]
    return rows


def _topo_numa(rows: dict[int, list[str]], columns: list[str], count: int) -> list[int] | None:
    """NUMA Affinity per GPU: row cells after the device columns line up with the trailing columns."""
    devices = columns.index("CPU Affinity") if "CPU Affinity" in columns else len(columns)
    trailing = columns[devices:]
    position = devices + trailing.index("NUMA Affinity")
    nodes = []
    for gpu in range(count):
        cells = rows.get(gpu, [])
        if position >= len(cells) or not cells[position].isdigit():
            return None
        nodes.append(int(cells[position]))
    return nodes


def parse_topo(text: str) -> dict[str, Any]:
    """``nvidia-smi topo -m``: the link type of every GPU pair, the interconnect, GPU NUMA nodes."""
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    header_index = next((i for i, line in enumerate(lines) if re.match(r"^\s*GPU0\b", line)), None)
    if header_index is None:
        return {}
    columns = re.split(r"\t+|\s{2,}", lines[header_index].strip())
    count = len([c for c in columns if re.fullmatch(r"GPU\d+", c)])
    rows = _topo_rows(lines[header_index + 1 :])
    links: list[list[Any]] = [
        [i, j, rows[i][j]] for i in range(count) for j in range(i + 1, count) if i in rows and j < len(rows[i])
    ]
    out: dict[str, Any] = {"gpu_count": count, "links": links}
    interconnect = _interconnect([str(kind) for _, _, kind in links])
    if interconnect:
        out["interconnect"] = interconnect
    if "NUMA Affinity" in columns:
        nodes = _topo_numa(rows, columns, count)
        if nodes is not None:
            out["gpu_numa_nodes"] = nodes
    return out


def parse_lspci_acs(text: str) -> list[tuple[str, bool, str]]:
    """(device, ACS redirection enabled, ACSCtl text) for every device ``lspci -vvv`` shows ACS control for."""
    found = []
    device = ""
    for line in text.splitlines():
        header = re.match(
            r"^([0-9a-fA-F]{2,4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d|[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d)\s", line
        )
        if header:
            device = header.group(1)
        control = re.search(r"ACSCtl:\s*(.*)$", line)
        if control:
            bits = control.group(1).strip()
            found.append((device, any(bit in bits for bit in _ACS_ENABLED_BITS), bits))
    return found


def acs_state(devices: list[tuple[str, bool, str]]) -> str:
    """``enabled`` when any device redirects peer-to-peer traffic, ``disabled`` when none does."""
    if not devices:
        return "unknown"
    return "enabled" if any(enabled for _, enabled, _ in devices) else "disabled"


def _compress(cpus: list[int]) -> str:
    ranges: list[str] = []
    start = previous = None
    for cpu in sorted(cpus):
        if start is None:
            start = previous = cpu
        elif previous is not None and cpu == previous + 1:
            previous = cpu
        else:
            ranges.append(f"{start}-{previous}" if start != previous else str(start))
            start = previous = cpu
    if start is not None:
        ranges.append(f"{start}-{previous}" if start != previous else str(start))
    return ",".join(ranges)


def parse_numactl(text: str) -> dict[str, Any]:
    """``numactl --hardware``: node count and each node's CPUs (compressed, ``0-47,96-143``)."""
    out: dict[str, Any] = {}
    available = re.search(r"available:\s*(\d+)\s+nodes?", text)
    if available:
        out["nodes"] = int(available.group(1))
    cpus = {}
    for match in re.finditer(r"^node\s+(\d+)\s+cpus:\s*([\d\s]*)$", text, re.MULTILINE):
        numbers = [int(n) for n in match.group(2).split()]
        if numbers:
            cpus[int(match.group(1))] = _compress(numbers)
    if cpus:
        out["cpus"] = cpus
    return out


def parse_iommu(cmdline: str | None, units: str | None) -> str:
    """IOMMU state from the kernel command line and the ``/sys/class/iommu`` listing.

    The listing shows whether an IOMMU is active (``none`` when empty); the command line
    tells passthrough (``iommu=pt``, ``iommu.passthrough=1``) from translation, see the
    kernel's admin-guide/kernel-parameters. Without a listing only explicit flags count.
    """
    words = set((cmdline or "").split())
    passthrough = bool(words & {"iommu=pt", "iommu.passthrough=1"})
    disabled = bool(words & {"iommu=off", "intel_iommu=off", "amd_iommu=off"})
    if units is not None:
        if units.strip() in ("", "none"):
            return "off"
        return "passthrough" if passthrough else "on"
    if disabled:
        return "off"
    if passthrough:
        return "passthrough"
    if words & {"intel_iommu=on", "amd_iommu=on", "amd_iommu=force_enable"}:
        return "on"
    return "unknown"


def parse_meminfo(text: str) -> float | None:
    """``MemTotal`` of ``/proc/meminfo`` in GiB (one decimal)."""
    match = re.search(r"^MemTotal:\s+(\d+)\s+kB", text, re.MULTILINE)
    return round(int(match.group(1)) / 1024 / 1024, 1) if match else None


def parse_gpu_numa(text: str) -> list[int] | None:
    """``<bus id> <numa_node>`` lines (sysfs, in GPU index order) -> NUMA node per GPU (-1: none)."""
    nodes = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) != 2 or not re.fullmatch(r"-?\d+", parts[1]):
            return None
        nodes.append(int(parts[1]))
    return nodes or None


def parse_docker_info(text: str) -> dict[str, Any]:
    """``docker info --format '{{json .}}'``: server version, NVIDIA runtime, CDI spec dirs."""
    import json

    try:
        info = json.loads(text)
    except ValueError:
        return {}
    if not isinstance(info, dict):
        return {}
    out: dict[str, Any] = {}
    if isinstance(info.get("ServerVersion"), str) and info["ServerVersion"]:
        out["docker_version"] = info["ServerVersion"]
    runtimes = info.get("Runtimes")
    if isinstance(runtimes, dict):
        out["nvidia_runtime"] = "nvidia" in runtimes
    # Engine API SystemInfo: "An empty list indicates that CDI device injection is disabled."
    # (https://docs.docker.com/reference/api/engine/version/v1.57/schemas/SystemInfo/)
    out["cdi"] = bool(info.get("CDISpecDirs"))
    return out


def parse_df_free_gib(text: str) -> float | None:
    """Free space of ``df -Pk PATH`` (1 KiB blocks, POSIX format) in GiB (one decimal)."""
    lines = [line.split() for line in text.strip().splitlines()]
    if len(lines) < 2 or len(lines[-1]) < 6 or not lines[-1][3].isdigit():
        return None
    return round(int(lines[-1][3]) / 1024 / 1024, 1)


def busy_gpus(apps_csv: str, gpus_csv: str) -> list[int]:
    """Indices of GPUs that run compute processes (``--query-compute-apps`` joined on bus id)."""
    index_of = {
        row.get("pci.bus_id", "").upper(): int(row["index"])
        for row in parse_query_csv(gpus_csv)
        if row.get("index", "").isdigit()
    }
    busy = {
        index_of[row["gpu_bus_id"].upper()]
        for row in parse_query_csv(apps_csv)
        if row.get("gpu_bus_id", "").upper() in index_of
    }
    return sorted(busy)
