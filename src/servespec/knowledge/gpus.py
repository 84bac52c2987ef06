"""The GPU catalog: memory and compute capability of NVIDIA models, and the names nvidia-smi prints.

Facts live in ``data/gpus.yaml`` with their sources: compute capabilities from NVIDIA's
CUDA GPUs table, memory as `nvidia-smi` reports it (linked to real outputs where one was
found, else the datasheet). Only facts that rules or the estimate read are loaded; the
file's other keys are their provenance (:data:`PROVENANCE`).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from servespec.knowledge.datafile import load_yaml_data

CUDA_GPUS_URL = "https://developer.nvidia.com/cuda-gpus"
FACTS = frozenset({"id", "names", "memory_mib", "compute_capability"})
"""The keys of a catalog entry that code reads (as :class:`GpuModel`)."""
PROVENANCE = frozenset({"source", "memory_source", "memory_verified", "memory_mib_other", "notes"})
"""The keys that say where an entry's facts come from, for the people who check them; never loaded."""


@dataclass(frozen=True)
class GpuModel:
    """One GPU model from the catalog."""

    id: str
    names: tuple[str, ...]
    memory_mib: int
    compute_capability: tuple[int, int]

    @property
    def display_name(self) -> str:
        """The name nvidia-smi prints (the first catalogued spelling)."""
        return self.names[0] if self.names else self.id

    @property
    def memory_gib(self) -> float:
        """Total memory in GiB, as nvidia-smi reports it."""
        return self.memory_mib / 1024


def _normalize(name: str) -> str:
    text = name.strip().lower()
    text = re.sub(r"^(nvidia\s+)?(tesla\s+|geforce\s+)?", "", text)
    return re.sub(r"[\s_\-]+", "", text)


def _from_entry(entry: dict[str, Any]) -> GpuModel:
    major, minor = (int(part) for part in str(entry["compute_capability"]).split("."))
    return GpuModel(
        id=str(entry["id"]),
        names=tuple(str(n) for n in entry.get("names", [])),
        memory_mib=int(entry["memory_mib"]),
        compute_capability=(major, minor),
    )


@functools.cache
def catalog() -> tuple[GpuModel, ...]:
    """Every catalogued GPU, in file order."""
    data = load_yaml_data("gpus.yaml")
    return tuple(_from_entry(entry) for entry in data["gpus"])


@functools.cache
def _index() -> dict[str, GpuModel]:
    index: dict[str, GpuModel] = {}
    for gpu in catalog():
        for spelling in (gpu.id, *gpu.names):
            index.setdefault(_normalize(spelling), gpu)
    return index


def resolve(name: str) -> GpuModel | None:
    """Find a GPU by catalog id or any spelling nvidia-smi prints; None when unknown.

    The old nvidia-smi table truncates long names with "..."; such a prefix resolves
    when exactly one catalogued model starts with it.
    """
    key = _normalize(name)
    if key.endswith("..."):
        prefix = key.rstrip(".")
        matches = {gpu.id: gpu for spelling, gpu in _index().items() if spelling.startswith(prefix)}
        return next(iter(matches.values())) if len(matches) == 1 else None
    return _index().get(key)
