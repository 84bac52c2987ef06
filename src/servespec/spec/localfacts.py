"""Hardware facts of this machine, for the built-in local inventory (gathered at run time)."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path

from servespec.spec.models import GpuSet, Hardware


def _gpus() -> tuple[str, int, str | None] | None:
    """(model, count, driver) from nvidia-smi, or None when it is absent or fails."""
    if not shutil.which("nvidia-smi"):
        return None
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    rows = [line.split(",") for line in out.strip().splitlines() if "," in line]
    if not rows:
        return None
    return rows[0][0].strip(), len(rows), rows[0][1].strip()


def _memory_gib() -> float | None:
    from servespec.discover.parsers import parse_meminfo

    try:
        return parse_meminfo(Path("/proc/meminfo").read_text())
    except OSError:
        return None


@functools.cache
def local_hardware() -> Hardware:
    """This machine's GPUs (nvidia-smi), CPUs and memory; no GPUs when nvidia-smi is absent."""
    found = _gpus()
    gpus = GpuSet(model=found[0], count=found[1]) if found else GpuSet(count=0)
    return Hardware(
        gpus=gpus,
        driver_version=found[2] if found else None,
        cpus=os.cpu_count() or 1,
        memory_gib=_memory_gib(),
    )
