"""The custom all-reduce buffers SGLang's tensor-parallel group allocates before its baseline is measured.

``init_torch_distributed`` builds the tensor-parallel group (``initialize_model_parallel``) and only then
reads the memory that ``mem_fraction_static`` is taken of, so the group's custom all-reduce buffers come
off that memory first. On ROCm the release's ``dispatch_custom_allreduce`` returns aiter's
``CustomAllreduce`` by default (``facts.memory.all_reduce.hip``) and passes it no ``max_size``: the buffers
are aiter's default (``aiter_all_reduce.json``, read from ROCm/aiter's tags by
scripts/catalog/aiter_all_reduce.py): from aiter v0.1.12 an uncached meta buffer of ``meta_size + 2 x 1 GiB``,
a 1 GiB input pool and 8 MiB of rank data, about 3 GiB per GPU whatever the group's size. Which aiter runs
is the ROCm image's (its ``AITER_COMMIT``), not the SGLang release's: the estimate assumes the newest aiter
tag published before the release that accepts what the release passes, and says so.

What RCCL allocates for its communicators (SGLang's ``PyNcclCommunicator`` warms one up with an all-reduce
inside the same set-up) is RCCL's own and is not modelled here beyond the NCCL allowance every engine
shares (``knowledge.memory.nccl_gib``). The quick all-reduce allocates nothing by default
(``ROCM_QUICK_REDUCE_QUANTIZATION`` defaults to ``NONE``). On CUDA SGLang's own buffers are small (3 x 8 MiB
for its original class; the v2 class's are allocated in C++) and are left to that NCCL allowance too."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from importlib.resources import files

from servespec.engines.catalog import SglangAllReduce
from servespec.engines.layout import flag
from servespec.knowledge.memory import GIB, EstimateInput


@dataclass(frozen=True)
class AiterAllReduce:
    """One aiter tag's ``CustomAllreduce.__init__`` buffers (scripts/catalog/aiter_all_reduce.py)."""

    tag: str
    date: datetime
    default_max_size: int
    meta_multiple: int
    full_buffers: int
    rank_data: int | None
    """Bytes; None: ``max_size`` bytes."""
    parameters: tuple[str, ...]
    world_sizes: tuple[int, ...]
    source: str

    def bytes(self) -> int:
        """What one GPU of the group allocates (the few KiB of ``meta_size`` left out)."""
        size = self.default_max_size
        return (self.meta_multiple + self.full_buffers) * size + (self.rank_data or size)


@cache
def aiter_releases() -> tuple[AiterAllReduce, ...]:
    """aiter's tags with a custom all-reduce, oldest first."""
    data = json.loads(files(__package__).joinpath("aiter_all_reduce.json").read_text())
    rows = [
        AiterAllReduce(
            tag=row["tag"],
            date=datetime.fromisoformat(row["date"]),
            default_max_size=row["default_max_size"],
            meta_multiple=row["meta_multiple"],
            full_buffers=row["full_buffers"],
            rank_data=row["rank_data"],
            parameters=tuple(row["parameters"]),
            world_sizes=tuple(row["world_sizes"]),
            source=row["source"],
        )
        for row in data["releases"]
    ]
    return tuple(sorted(rows, key=lambda row: row.date))


def aiter_for(fact: SglangAllReduce) -> AiterAllReduce | None:
    """The newest aiter tag published before the SGLang release that accepts every keyword it passes."""
    if fact.released is None:
        return None
    released = datetime.fromisoformat(fact.released)
    fits = [r for r in aiter_releases() if r.date <= released and all(k in r.parameters for k in fact.aiter_kwargs)]
    return fits[-1] if fits else None


def rocm_gib(inp: EstimateInput, fact: SglangAllReduce | None) -> tuple[float, str | None]:
    """GiB per GPU the custom all-reduce takes before SGLang's baseline on ROCm, and a note saying how."""
    group = inp.moe_group or inp.tensor_parallel  # SGLang's tp group: all ranks with --enable-dp-attention
    if inp.gpu is None or inp.gpu.vendor != "amd" or fact is None or group < 2:
        return 0.0, None
    if flag(inp.options.get("disable_custom_all_reduce")):
        return 0.0, None  # set_custom_all_reduce(False): the group builds no custom all-reduce (model_runner.py)
    if fact.hip == "sglang":
        size = fact.sglang_max_size_hip
        return 3 * size / GIB, f"SGLang custom all-reduce 3 x {size / 2**20:.0f} MiB before loading ({fact.source})"
    aiter = aiter_for(fact)
    if aiter is None:
        return 0.0, "aiter custom all-reduce: no aiter release known before this SGLang release; not modelled"
    if group not in aiter.world_sizes:
        return 0.0, None
    gib = aiter.bytes() / GIB
    return gib, (
        f"aiter custom all-reduce {gib:.2f} GiB before loading (aiter {aiter.tag} assumed: the newest tag before "
        f"this release; the ROCm image pins its own; default max_size {aiter.default_max_size / 2**20:.0f} MiB, "
        f"{aiter.source})"
    )
