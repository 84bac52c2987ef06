"""The GPU catalog: memory and compute capability of NVIDIA and AMD Instinct models, and the names they print.

Facts live in ``data/gpus.yaml`` with their sources: compute capabilities from NVIDIA's
CUDA GPUs table, memory as `nvidia-smi` reports it (linked to real outputs where one was
found, else the datasheet). AMD Instinct cards (``vendor: amd``) carry the LLVM target
(``gfx_arch``) and the major.minor HIP reports for them, which is no CUDA compute capability:
:attr:`GpuModel.cuda_capability` is None for them, so rules resting on NVIDIA facts skip them.
Only facts that rules or the estimate read are loaded; the file's other keys are their
provenance (:data:`PROVENANCE`).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any, Literal

from servespec.knowledge.datafile import load_yaml_data

CUDA_GPUS_URL = "https://developer.nvidia.com/cuda-gpus"
FACTS = frozenset(
    {
        "id",
        "names",
        "memory_mib",
        "memory_mib_other",
        "compute_capability",
        "vendor",
        "gfx_arch",
        "unified_memory",
        "cuda_total_gib",
    }
)
"""The keys of a catalog entry that code reads (as :class:`GpuModel`)."""
PROVENANCE = frozenset({"source", "name_source", "memory_source", "memory_verified", "notes", "cuda_total_source"})
"""The keys that say where an entry's facts come from, for the people who check them; never loaded."""


Vendor = Literal["nvidia", "amd"]
VENDORS: tuple[Vendor, ...] = ("nvidia", "amd")


@dataclass(frozen=True)
class GpuModel:
    """One GPU model from the catalog."""

    id: str
    names: tuple[str, ...]
    memory_mib: int
    compute_capability: tuple[int, int]
    memory_mib_other: tuple[int, ...] = ()
    """Other memory.total values real outputs showed for this model (older drivers, board variants)."""
    vendor: Vendor = "nvidia"
    gfx_arch: str | None = None
    """AMD: the LLVM target the ROCm runtime names the device by (``gcnArchName``: gfx942, gfx950)."""
    unified_memory: bool = False
    """The GPU has no memory of its own: it shares the host's RAM with the CPU (DGX Spark's GB10, Jetson Thor).
    ``memory_mib`` is then the total cudaMemGetInfo reports (nvidia-smi prints none), and the weights and the KV
    cache come out of the host's RAM, which the OS and every other process use too."""
    cuda_total_gib: float | None = None
    """The total the CUDA runtime reports for the card (``torch.cuda.mem_get_info()[1]``, what vLLM's
    ``total_gpu_memory`` and SGLang's and TGI's budgets start from), as public start-up logs of the card print it
    (gpus.yaml ``cuda_total_source``); None where no log was found. It sits 0.1-0.7 GiB below nvidia-smi's
    memory.total by card, not in one proportion (a T4: 14.74 of 15.0 GiB, an H100 SXM: 79.18 of 79.65)."""

    @property
    def cuda_capability(self) -> tuple[int, int] | None:
        """The CUDA compute capability; None on an AMD card, whose ``compute_capability`` is the major.minor HIP
        reports (gfx942 -> 9.4), which NVIDIA's capability thresholds (bfloat16 from 8.0, FP8 kernels) do not
        measure. The engines' own ROCm code compares ``compute_capability`` (what torch returns there)."""
        return self.compute_capability if self.vendor == "nvidia" else None

    @property
    def display_name(self) -> str:
        """The name nvidia-smi prints (the first catalogued spelling)."""
        return self.names[0] if self.names else self.id

    @property
    def memory_gib(self) -> float:
        """Total memory in GiB, as nvidia-smi reports it (a unified-memory GPU: as cudaMemGetInfo reports it)."""
        return self.memory_mib / 1024


def _normalize(name: str) -> str:
    text = name.strip().lower()
    # "NVIDIA-L20" is how Kubernetes GPU feature discovery labels the same card; "AMD Instinct MI300X" is "MI300X"
    text = re.sub(r"^(nvidia[\s_\-]+)?((tesla|geforce)[\s_\-]+)?", "", text)
    text = re.sub(r"^amd[\s_\-]+(instinct[\s_\-]+)?", "", text)
    return re.sub(r"[\s_\-]+", "", text)


def _vendor(entry: dict[str, Any]) -> Vendor:
    vendor = str(entry.get("vendor", "nvidia"))
    for known in VENDORS:
        if vendor == known:
            return known
    raise ValueError(f"gpus.yaml: {entry.get('id')}: unknown vendor {vendor!r}")


def _from_entry(entry: dict[str, Any]) -> GpuModel:
    major, minor = (int(part) for part in str(entry["compute_capability"]).split("."))
    return GpuModel(
        vendor=_vendor(entry),
        gfx_arch=str(entry["gfx_arch"]) if entry.get("gfx_arch") else None,
        id=str(entry["id"]),
        names=tuple(str(n) for n in entry.get("names", [])),
        memory_mib=int(entry["memory_mib"]),
        compute_capability=(major, minor),
        memory_mib_other=tuple(int(m) for m in entry.get("memory_mib_other", [])),
        unified_memory=entry.get("unified_memory") is True,
        cuda_total_gib=float(entry["cuda_total_gib"]) if entry.get("cuda_total_gib") is not None else None,
    )


@functools.cache
def catalog() -> tuple[GpuModel, ...]:
    """Every catalogued GPU, in file order."""
    data = load_yaml_data("gpus.yaml")
    return tuple(_from_entry(entry) for entry in data["gpus"])


@functools.cache
def _index() -> dict[str, tuple[GpuModel, ...]]:
    index: dict[str, tuple[GpuModel, ...]] = {}
    for gpu in catalog():
        for spelling in (gpu.id, *gpu.names):
            key = _normalize(spelling)
            if gpu not in index.get(key, ()):
                index[key] = (*index.get(key, ()), gpu)
    return index


MEMORY_TOLERANCE = 0.01
"""How far a reported memory.total may sit from a catalogued value and still pick that model (1%)."""


def _reports(gpu: GpuModel, memory_mib: int) -> bool:
    return any(abs(memory_mib - m) <= m * MEMORY_TOLERANCE for m in (gpu.memory_mib, *gpu.memory_mib_other))


def named(name: str) -> tuple[GpuModel, ...]:
    """Every catalogued card ``name`` (an id or a spelling nvidia-smi prints) may be, before memory decides.

    Several where NVIDIA prints one name for two memory sizes ("NVIDIA GeForce RTX 3060" is the 12 GB
    and the 8 GB card) or where a name the old table truncated ("NVIDIA A100-SXM...") fits several;
    empty when the name is unknown. Matching follows :func:`resolve`.
    """
    key = _normalize(name)
    if key.endswith("..."):
        prefix = key.rstrip(".")
        found = {gpu.id: gpu for spelling, gpus in _index().items() if spelling.startswith(prefix) for gpu in gpus}
        return tuple(found.values())
    return _index().get(key, ())


def resolve(name: str, memory_mib: int | None = None) -> GpuModel | None:
    """Find a GPU by catalog id or any spelling nvidia-smi prints; None when unknown or ambiguous.

    Case, spaces, hyphens and underscores do not matter, nor a leading "NVIDIA", "Tesla" or
    "GeForce". The old nvidia-smi table truncates long names with "..."; such a prefix
    resolves when exactly one catalogued model starts with it, or, given the memory.total
    nvidia-smi printed beside it (``memory_mib``), exactly one of those reports that memory.
    A name that would fit several models (a bare "H100", or "NVIDIA GeForce RTX 3060" without its memory)
    resolves to nothing rather than a guess.
    """
    candidates = named(name)
    if len(candidates) > 1 and memory_mib is not None:
        candidates = tuple(gpu for gpu in candidates if _reports(gpu, memory_mib))
    return candidates[0] if len(candidates) == 1 else None
