"""Pure parsers of the command outputs `deploy discover` collects (contract §2.3).

Each takes the text a command printed and returns what it establishes; nothing is guessed:
facts an output does not show are left out. Tested on real outputs recorded from public
sources (tests/data/facts/samples/).
"""

from __future__ import annotations

import re
from typing import Any

# Hosts choose what these outputs say: every pattern runs in time linear in its input (no
# pattern may backtrack over a long run: runs are possessive, ``*+`` and ``++``, and no two
# neighbouring runs match the same characters; a number starts where no digit precedes it).
# Loops are bounded by the cells an output holds, never by a count it claims.
_SMI_MEMORY = re.compile(r"(?<!\d)(\d++)MiB\s*+/\s*+(\d++)MiB")
_BUS_ID = re.compile(r"[0-9A-Fa-f:.]+")
_NUMBER = re.compile(r"-?[0-9]{1,18}")


def number(text: str) -> int | None:
    """``text`` as an int when it is a plain ASCII number of at most 18 digits, else None.

    A host may print anything: a 5,000-digit number (int() refuses over 4,300 digits) or a
    Unicode digit such as ``²`` (which isdigit() accepts and int() does not) is unknown, not a crash.
    """
    text = text.strip()
    return int(text) if _NUMBER.fullmatch(text) else None


_ACS_ENABLED_BITS = ("SrcValid+", "ReqRedir+", "CmpltRedir+", "UpstreamFwd+", "P2PRedir+")


def parse_query_csv(text: str) -> list[dict[str, str]]:
    """``nvidia-smi --query-gpu=... --format=csv`` rows, keyed by the header names without units."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return []
    header = [_without_unit(name) for name in lines[0].split(",")]
    rows = []
    for line in lines[1:]:
        values = [value.strip() for value in line.split(",")]
        if len(values) == len(header):
            rows.append(dict(zip(header, values, strict=True)))
    return rows


def _without_unit(name: str) -> str:
    """``memory.total [MiB]`` -> ``memory.total``: from the first ``[`` of a name that ends with ``]``."""
    name = name.strip()
    return name[: name.index("[")].rstrip() if name.endswith("]") and "[" in name else name


def memory_mib(text: str) -> int | None:
    """``81920 MiB`` or ``81920MiB`` -> 81920."""
    match = re.search(r"(?<!\d)(\d++)\s*+MiB", text)
    return number(match.group(1)) if match else None


def _smi_gpu_row(line: str) -> tuple[int, str] | None:
    """(index, name) of a GPU row: ``|   0  NVIDIA H100 80GB HBM3   On  | 00000000:18:00.0 Off |``.

    Split on the table's bars instead of one regular expression: a lazy name group between
    runs of spaces backtracked for seconds on a 3 KB line.
    """
    cells = line.split("|", 3)
    if len(cells) < 3 or cells[0] or not cells[1][:1].isspace() or not cells[1][-1:].isspace():
        return None
    words, bus = cells[1].split(), cells[2].split()
    index = number(words[0]) if words else None
    if len(words) < 3 or index is None or index < 0 or words[-1] not in ("On", "Off"):
        return None
    after_bus = cells[2].lstrip()[len(bus[0]) :] if bus else ""
    if not cells[2][:1].isspace() or not _BUS_ID.fullmatch(bus[0]) or not after_bus[:1].isspace():
        return None
    name = cells[1].strip()[len(words[0]) : -len(words[-1])].strip()
    return index, name


def parse_smi_table(text: str) -> dict[str, Any]:
    """The plain ``nvidia-smi`` table: driver and CUDA versions, and each GPU's index, name, memory."""
    out: dict[str, Any] = {"gpus": []}
    driver = re.search(r"Driver Version:\s*+([\d.]++)", text)
    cuda = re.search(r"CUDA Version:\s*+([\d.]++)", text)
    if driver:
        out["driver_version"] = driver.group(1)
    if cuda:
        out["cuda_version"] = cuda.group(1)
    lines = text.splitlines()
    for position, line in enumerate(lines):
        row = _smi_gpu_row(line)
        if row is None:
            continue
        gpu: dict[str, Any] = {"index": row[0], "name": row[1]}
        for following in lines[position + 1 : position + 3]:
            memory = _SMI_MEMORY.search(following)
            if memory and number(memory.group(2)) is not None:
                gpu["memory_mib"] = number(memory.group(2))
                break
        out["gpus"].append(gpu)
    return out


# NVSwitch "connects multiple NVLinks to provide all-to-all GPU communication at the total NVLink
# speed" (NVIDIA Fabric Manager user guide, Overview:
# https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/), so through a switch
# `topo -m` shows every pair with all of a GPU's links (NV12 on A100, NV18 on H100). Wired
# directly (an NVLink bridge, DGX-1's cube mesh, 4-GPU HGX boards) a GPU splits its links
# among its peers: 4x H100 show NV6 to each of three peers, 6 x 3 = 18
# (https://github.com/NVIDIA/nccl/issues/1617). No GPU has more than 18 NVLinks: Hopper 18,
# Blackwell "up to 18 NVLink 100 GB/s connections" (https://www.nvidia.com/en-us/data-center/nvlink/).
# A GPU whose NV# cells add up to more than that cannot be wired directly: its links meet a switch.
MAX_NVLINKS_PER_GPU = 18
"""The most NVLinks any NVIDIA GPU has (Hopper, Blackwell); more in one GPU's row means NVSwitch."""

INTERCONNECT_RULE = """\
`hardware.interconnect` comes from the GPU pairs of `topo.txt` (`NV#` is "a bonded set of #
NVLinks"):

- `nvswitch`: every pair is `NV#` and some GPU's `NV#` cells add up to more than 18, the most
  NVLinks any GPU has (Hopper; Blackwell "up to 18 NVLink 100 GB/s connections",
  https://www.nvidia.com/en-us/data-center/nvlink/). NVSwitch gives "all-to-all GPU
  communication at the total NVLink speed" (https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/),
  so each pair shows all of a GPU's links (NV12 on 8x A100, NV18 on 8x H100 and GB200 trays),
  which no direct wiring can.
- `nvlink`: any other `NV#` pair: an NVLink bridge (two RTX 3090s: `NV4`), bridged pairs,
  DGX-1's cube mesh, 4-GPU boards wired directly (4x H100: `NV6` to each of three peers, 18
  links in all, https://github.com/NVIDIA/nccl/issues/1617), or a slice of an NVSwitch system
  too small to prove the switch (one NV12 pair reads the same as two A100 PCIe cards with three bridges).
- `pcie`: no `NV#` pair, or a single GPU.

Old drivers' `SOC` is recorded as today's `SYS` (the same path, renamed), and headers whose
names are separated by single spaces parse. With `topo.txt` alone the facts still give
`gpus.count` (without a model: `topo -m` does not name the GPUs).
"""
"""How discover classifies the interconnect, for its docs page."""

_NV_LINKS = re.compile(r"NV([0-9]{1,3})")

# Drivers before the SYS/NODE split (R384-era and older) printed SOC for the same path: "SOC =
# Connection traversing PCIe as well as the SMP link between CPU sockets(e.g. QPI)"; today's
# legend reads "SYS = Connection traversing PCIe as well as the SMP interconnect between NUMA
# nodes (e.g., QPI/UPI)". Links are recorded in today's spelling (contract §2.3).
_RENAMED = {"SOC": "SYS"}


def nvlinks(kind: str) -> int | None:
    """The number of bonded NVLinks of a ``NV#`` cell (``NV12`` -> 12); None for any other path."""
    match = _NV_LINKS.fullmatch(kind.strip().upper())
    return int(match.group(1)) if match else None


def interconnect(count: int, links: list[list[Any]]) -> str | None:
    """``pcie``, ``nvlink`` or ``nvswitch`` from the GPU pairs of ``topo -m``; None when they do not say.

    One GPU has no peer: ``pcie``. No NV# pair: ``pcie``. Every pair NV# and some GPU's NV#
    cells adding up to more than :data:`MAX_NVLINKS_PER_GPU`: ``nvswitch`` (no direct wiring
    has that many links). Any other NV# pair: ``nvlink`` -- a bridge (two RTX 3090s show
    ``NV4``), a mesh, or a slice of an NVSwitch system too small to prove the switch (two
    GPUs of an HGX box show one NV12 pair, the same as two A100 PCIe cards with three bridges).
    """
    if count == 1:
        return "pcie"
    if not links:
        return None
    counts = [nvlinks(str(kind)) for _, _, kind in links]
    if all(n is None for n in counts):
        return "pcie"
    pairs = count * (count - 1) // 2
    if len(links) == pairs and None not in counts:
        per_gpu = [0] * count
        for (i, j, _), n in zip(links, counts, strict=True):
            per_gpu[i] += n or 0
            per_gpu[j] += n or 0
        if max(per_gpu) > MAX_NVLINKS_PER_GPU:
            return "nvswitch"
    return "nvlink"


def _topo_rows(lines: list[str]) -> dict[int, list[str]]:
    rows: dict[int, list[str]] = {}
    for line in lines:
        match = re.match(r"\s*+GPU(\d++)\s++(.*+)", line)
        if match and number(match.group(1)) is not None:
            rows[int(match.group(1))] = [cell for cell in re.split(r"\s+", match.group(2).strip()) if cell]
    return rows


_HEADER_NAMES = (("GPU", "NUMA", "ID"), ("CPU", "Affinity"), ("NUMA", "Affinity"))


def _topo_columns(header: str) -> list[str]:
    """The header's column names, whether tabs, runs of spaces or single spaces separate them.

    Old drivers and pasted copies join names with one space (``GPU0 GPU1 CPU Affinity``,
    https://github.com/NVIDIA/nccl/issues/19): split on any whitespace, then rejoin the
    multi-word names nvidia-smi prints. Device names (GPU0, NIC0, mlx5_0) are one word.
    """
    words = header.split()
    columns: list[str] = []
    position = 0
    while position < len(words):
        name = next((n for n in _HEADER_NAMES if tuple(words[position : position + len(n)]) == n), None)
        columns.append(" ".join(name) if name else words[position])
        position += len(name) if name else 1
    return columns


def _topo_numa(rows: dict[int, list[str]], columns: list[str], count: int) -> list[int] | None:
    """NUMA Affinity per GPU: row cells after the device columns line up with the trailing columns."""
    devices = columns.index("CPU Affinity") if "CPU Affinity" in columns else len(columns)
    trailing = columns[devices:]
    if "NUMA Affinity" not in trailing:  # before the CPU Affinity column, or no such column: not this layout
        return None
    position = devices + trailing.index("NUMA Affinity")
    nodes = []
    for gpu in range(count):
        cells = rows.get(gpu, [])
        node = number(cells[position]) if position < len(cells) else None
        if node is None or node < 0:
            return None
        nodes.append(node)
    return nodes


def parse_topo(text: str) -> dict[str, Any]:
    """``nvidia-smi topo -m``: the link type of every GPU pair, the interconnect, GPU NUMA nodes."""
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    header_index = next((i for i, line in enumerate(lines) if re.match(r"\s*+GPU0\b", line)), None)
    if header_index is None:
        return {}
    columns = _topo_columns(lines[header_index])
    count = len([c for c in columns if re.fullmatch(r"GPU\d+", c)])
    rows = _topo_rows(lines[header_index + 1 :])
    # Over the cells the rows hold: a header may claim a million GPUs (count * count pairs).
    links: list[list[Any]] = [
        [i, j, _RENAMED.get(rows[i][j], rows[i][j])]
        for i in sorted(rows)
        if i < count
        for j in range(i + 1, min(count, len(rows[i])))
    ]
    out: dict[str, Any] = {"gpu_count": count, "links": links}
    kind = interconnect(count, links)
    if kind:
        out["interconnect"] = kind
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
        control = re.search(r"ACSCtl:\s*+(.*+)", line)
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


_NODE_CPUS = re.compile(r"node\s++(\d++)\s++cpus:")


def _numa_node_cpus(line: str) -> tuple[int, list[int]] | None:
    """(node, CPUs) of a ``node 0 cpus: 0 1 2`` line; None for any other line or a CPU that is not a number.

    One line at a time, and the CPU list split rather than matched: ``cpus:\\s*([\\d\\s]*)$``
    tried every split of a long run of spaces between its two runs (seconds on 20 KB).
    """
    match = _NODE_CPUS.match(line)
    node = number(match.group(1)) if match else None
    if match is None or node is None:
        return None
    words = line[match.end() :].split()
    numbers = [number(word) if word.isdigit() else None for word in words]
    if not numbers or None in numbers:
        return None
    return node, [n for n in numbers if n is not None]


def parse_numactl(text: str) -> dict[str, Any]:
    """``numactl --hardware``: node count and each node's CPUs (compressed, ``0-47,96-143``)."""
    out: dict[str, Any] = {}
    available = re.search(r"available:\s*+(\d++)\s++nodes?", text)
    if available and number(available.group(1)) is not None:
        out["nodes"] = number(available.group(1))
    cpus = {}
    for line in text.splitlines():
        found = _numa_node_cpus(line)
        if found is not None:
            cpus[found[0]] = _compress(found[1])
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
    match = re.search(r"^MemTotal:\s++(\d++)\s++kB", text, re.MULTILINE)
    kib = number(match.group(1)) if match else None
    return round(kib / 1024 / 1024, 1) if kib is not None else None


def parse_gpu_numa(text: str) -> list[int] | None:
    """``<bus id> <numa_node>`` lines (sysfs, in GPU index order) -> NUMA node per GPU (-1: none)."""
    nodes = []
    for line in text.splitlines():
        parts = line.split()
        node = number(parts[1]) if len(parts) == 2 else None
        if node is None:
            return None
        nodes.append(node)
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
    free = number(lines[-1][3]) if len(lines) >= 2 and len(lines[-1]) >= 6 else None
    if free is None or free < 0:
        return None
    return round(free / 1024 / 1024, 1)


def _gpu_index_by_bus(gpus_csv: str) -> dict[str, int]:
    """PCI bus id (upper case) -> GPU index, from ``--query-gpu=index,...,pci.bus_id``."""
    return {
        bus: index
        for row in parse_query_csv(gpus_csv)
        if (bus := row.get("pci.bus_id", "").upper())
        and (index := number(row.get("index", ""))) is not None
        and index >= 0
        and index <= 1023
    }


def busy_gpus(apps_csv: str, gpus_csv: str) -> list[int]:
    """Indices of GPUs that run compute processes (``--query-compute-apps`` joined on bus id)."""
    index_of = _gpu_index_by_bus(gpus_csv)
    # A row may lack the column (a header that is not the one asked for): never looked up by force.
    busy = {
        index_of[bus] for row in parse_query_csv(apps_csv) if (bus := row.get("gpu_bus_id", "").upper()) in index_of
    }
    return sorted(busy)


_CONTAINER_ID = re.compile(r"(?<![0-9a-f])[0-9a-f]{64}(?![0-9a-f])")
SERVESPEC_CONTAINER = re.compile(r"servespec-[a-z0-9-]{1,80}")
"""Names of the containers servespec runs engines in (``servespec-<deployment>``, ``...-previous``)."""


def parse_docker_ps(text: str) -> dict[str, str]:
    """``docker ps --no-trunc --format '{{.ID}} {{.Names}}'``: full container id -> its (first) name."""
    names = {}
    for line in text.splitlines():
        words = line.split()
        if len(words) == 2 and _CONTAINER_ID.fullmatch(words[0]):
            names[words[0]] = words[1].split(",")[0]
    return names


def parse_pid_containers(text: str) -> dict[str, str]:
    """``<pid> <container id>`` lines (``-``: the process runs in no container) -> pid -> container id."""
    out = {}
    for line in text.splitlines():
        words = line.split()
        if len(words) == 2 and number(words[0]) is not None and _CONTAINER_ID.fullmatch(words[1]):
            out[words[0]] = words[1]
    return out


def gpu_processes(apps_csv: str, gpus_csv: str, pid_containers: str, docker_ps: str) -> list[dict[str, Any]]:
    """Each (GPU index, servespec container or None) pair of the compute processes, once, sorted.

    A process in a container servespec runs (``servespec-<deployment>``) is that
    deployment's engine; any other process, in a container or not, is ``None``.
    """
    index_of = _gpu_index_by_bus(gpus_csv)
    container_of = parse_pid_containers(pid_containers)
    name_of = parse_docker_ps(docker_ps)
    pairs: set[tuple[int, str]] = set()
    for row in parse_query_csv(apps_csv):
        bus = row.get("gpu_bus_id", "").upper()
        if bus not in index_of:
            continue
        name = name_of.get(container_of.get(row.get("pid", "").strip(), ""), "")
        pairs.add((index_of[bus], name if SERVESPEC_CONTAINER.fullmatch(name) else ""))
    return [{"gpu": gpu, "container": name or None} for gpu, name in sorted(pairs)]
