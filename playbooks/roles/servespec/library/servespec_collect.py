#!/usr/bin/python
# servespec: collect the host outputs `deploy discover` parses (read-only).

from __future__ import annotations

DOCUMENTATION = r"""
module: servespec_collect
short_description: Run the commands and read the files servespec parses into a host's facts file
description:
  - Runs nvidia-smi (CSV query, table, topo -m, compute apps), lspci -vvv, numactl --hardware,
    docker info, docker ps and df on the model cache when they exist, and reads /proc/cmdline,
    /proc/meminfo, /sys/class/iommu, each GPU's /sys/bus/pci/devices/<bus>/numa_node and the
    container id in each GPU compute process's /proc/<pid>/cgroup.
  - Returns the outputs verbatim; a missing command gives no output. Parsing happens on the controller.
options:
  model_cache:
    description: Host folder engines cache model weights in; its free space is reported.
    type: path
    default: /var/lib/servespec/models
author: servespec
"""

import os
import re
import shutil
import subprocess

from ansible.module_utils.basic import AnsibleModule

GPU_QUERY = "index,name,uuid,pci.bus_id,memory.total,compute_cap,driver_version"

COMMANDS = {
    "nvidia-smi.csv": ["nvidia-smi", "--query-gpu=" + GPU_QUERY, "--format=csv"],
    "nvidia-smi.txt": ["nvidia-smi"],
    "topo.txt": ["nvidia-smi", "topo", "-m"],
    "gpu-apps.csv": ["nvidia-smi", "--query-compute-apps=gpu_bus_id,pid,used_memory", "--format=csv"],
    "lspci.txt": ["lspci", "-vvv"],
    "numa.txt": ["numactl", "--hardware"],
    "docker-info.json": ["docker", "info", "--format", "{{json .}}"],
    "docker-ps.txt": ["docker", "ps", "--no-trunc", "--format", "{{.ID}} {{.Names}}"],
}
EMPTY_IS_AN_ANSWER = {"docker-ps.txt"}
"""Outputs kept when empty: no running container is a fact, not a missing output."""
CONTAINER_ID = re.compile(r"(?<![0-9a-f])[0-9a-f]{64}(?![0-9a-f])")


def _run(argv, empty_ok=False):
    if not shutil.which(argv[0]):
        return None
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 and (empty_ok or done.stdout.strip()) else None


def _read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def _sysfs_bus(bus_id):
    # nvidia-smi prints 00000000:3B:00.0; sysfs names it 0000:3b:00.0.
    domain, _, rest = bus_id.strip().partition(":")
    return f"{int(domain, 16):04x}:{rest}".lower() if rest else None


def _gpu_numa(csv_text):
    lines = [line for line in csv_text.splitlines() if line.strip()]
    header = [name.strip() for name in lines[0].split(",")] if lines else []
    if "pci.bus_id" not in header:
        return None
    column = header.index("pci.bus_id")
    out = []
    for line in lines[1:]:
        values = [value.strip() for value in line.split(",")]
        bus = _sysfs_bus(values[column]) if len(values) == len(header) else None
        node = _read(f"/sys/bus/pci/devices/{bus}/numa_node") if bus else None
        out.append(f"{values[column]} {node.strip() if node else 'unknown'}")
    return "\n".join(out) + "\n"


def _pid_containers(apps_csv):
    """'<pid> <container id>' for each compute process ('-': in no container), from /proc/<pid>/cgroup."""
    lines = [line for line in apps_csv.splitlines() if line.strip()]
    header = [name.strip() for name in lines[0].split(",")] if lines else []
    if "pid" not in header:
        return None
    column = header.index("pid")
    out = []
    for line in lines[1:]:
        values = [value.strip() for value in line.split(",")]
        pid = values[column] if len(values) == len(header) and values[column].isdigit() else None
        if pid is None:
            continue
        found = CONTAINER_ID.search(_read(f"/proc/{pid}/cgroup") or "")
        out.append(f"{pid} {found.group(0) if found else '-'}")
    return "".join(line + "\n" for line in out)


def _existing_parent(path):
    while path and not os.path.exists(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return path or "/"


def _add_gpu_outputs(outputs):
    """The outputs read for the GPUs nvidia-smi listed: their NUMA nodes, their processes' containers."""
    if "nvidia-smi.csv" in outputs:
        numa = _gpu_numa(outputs["nvidia-smi.csv"])
        if numa:
            outputs["gpu-numa.txt"] = numa
    if "gpu-apps.csv" in outputs:
        containers = _pid_containers(outputs["gpu-apps.csv"])
        if containers is not None:
            outputs["gpu-app-containers.txt"] = containers


def main():
    module = AnsibleModule(
        argument_spec={"model_cache": {"type": "path", "default": "/var/lib/servespec/models"}},
        supports_check_mode=True,
    )
    outputs = {}
    for name, argv in COMMANDS.items():
        text = _run(argv, empty_ok=name in EMPTY_IS_AN_ANSWER)
        if text is not None:
            outputs[name] = text
    for name, path in (("cmdline.txt", "/proc/cmdline"), ("meminfo.txt", "/proc/meminfo")):
        text = _read(path)
        if text:
            outputs[name] = text
    if os.path.isdir("/sys/class/iommu"):
        # One line per IOMMU unit; an empty listing (kept as a marker) means none is active.
        outputs["iommu.txt"] = "".join(entry + "\n" for entry in sorted(os.listdir("/sys/class/iommu"))) or "none\n"
    outputs["nproc.txt"] = f"{os.cpu_count() or 0}\n"
    _add_gpu_outputs(outputs)
    df = _run(["df", "-Pk", _existing_parent(module.params["model_cache"])])
    if df:
        outputs["model-cache-df.txt"] = df
    # module_utils' servespec_result(OUTPUTS, ...), spelled out: this module imports nothing of servespec's
    # (tests/discover/test_collect_commands.py loads it alone); test_result_keys.py runs it.
    module.exit_json(changed=False, servespec_result={"kind": "host_outputs", "outputs": outputs})


if __name__ == "__main__":
    main()
