"""The custom all-reduce buffers SGLang's tensor-parallel group allocates before its baseline is measured.

``init_torch_distributed`` builds the tensor-parallel group (``initialize_model_parallel``) and only then
reads the memory that ``mem_fraction_static`` is taken of, so the group's custom all-reduce buffers come
off that memory first. On ROCm the release's ``dispatch_custom_allreduce`` returns aiter's
``CustomAllreduce`` by default (``facts.memory.all_reduce.hip``) and passes it no ``max_size``: the buffers
are aiter's default (``aiter_all_reduce.json``, read from ROCm/aiter's tags by
scripts/catalog/aiter_all_reduce.py): from aiter v0.1.12 an uncached meta buffer of ``meta_size + 2 x 1 GiB``,
a 1 GiB input pool and 8 MiB of rank data, about 3 GiB per GPU whatever the group's size. Which aiter runs
is the ROCm image's (its ``AITER_COMMIT``), not the SGLang release's: the estimate assumes the newest aiter
tag published before the release that accepts what the release passes, and says so; for an image whose tag
carries its build date (SGLang's ROCm images are rebuilt under one release's name: ``rocm/sgl-dev:
v0.5.10.post1-rocm720-mi35x-20260430``), the newest tag published before that day instead.

The same group builds SGLang's quick all-reduce on ROCm (``QuickAllReduce``, facts.memory.all_reduce
``quick_reduce_*``, read from the release's quick_all_reduce.py): it allocates nothing while
``ROCM_QUICK_REDUCE_QUANTIZATION`` is ``NONE`` (the release's default); set to another of its values
(``FP``, ``INT8``, ``INT6``, ``INT4``) on a gfx94x/gfx95x card in a group of 2, 4 or 8, it calls
``init_custom_qr(rank, world_size, qr_max_size)`` with ``qr_max_size`` from
``ROCM_QUICK_REDUCE_MAX_SIZE_BYTES_MB`` (MB; 0 or unset: the kernel's 2 GB, as the release's comment states),
and the kernel allocates two stages of that size uncached (:data:`QUICK_REDUCE_STAGES`): 4 GiB per GPU by
default. SGLang's ROCm images set ``ROCM_QUICK_REDUCE_QUANTIZATION=INT8`` in their Dockerfile
(:data:`ROCM_IMAGE_NOTE`); the estimate reads the variable from ``engine.env``.

What RCCL allocates for its communicators (SGLang's ``PyNcclCommunicator`` warms one up with an all-reduce
inside the same set-up) is RCCL's own and is not modelled here beyond the NCCL allowance every engine
shares (``knowledge.memory.nccl_gib``). On CUDA SGLang's own buffers are small (3 x 8 MiB for its original
class; the v2 class's are allocated in C++) and are left to that NCCL allowance too."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from importlib.resources import files

from servespec.engines.catalog import SglangAllReduce
from servespec.engines.layout import flag
from servespec.engines.versions import version_key
from servespec.knowledge.memory import GIB, EstimateInput

QUICK_REDUCE_STAGES = 2
"""The quick all-reduce kernel's buffer is two stages of its largest input (plus a few KiB of flags):
``DeviceComms::init`` allocates ``2 * kMaxProblemSize`` with ``hipExtMallocWithFlags(..., hipDeviceMallocUncached)``,
``kMaxProblemSize`` ``int32 max + 1`` (2 GiB) unless ``init_custom_qr`` passes ``qr_max_size``
(sgl-kernel/csrc/allreduce/quick_all_reduce.cuh, the port of vLLM's csrc/quickreduce/quick_reduce.h that
sgl_kernel.allreduce.init_custom_qr calls; vLLM PR 19744 and SGLang PR 6619: "the default maximum input size of
quickreduce is 2GB"). The C++ is not in the Python artefact the catalog builder reads, so this is a constant."""

ROCM_IMAGE_NOTE = (
    "SGLang's ROCm images set ROCM_QUICK_REDUCE_QUANTIZATION=INT8 (docker/rocm.Dockerfile, 'Performance environment "
    "variable'): there the quick all-reduce takes {gib:.2f} GiB more per GPU before the baseline; name the image in "
    "engine.image, or set the variable in engine.env (INT8, or NONE), to have it counted"
)
"""Where neither ``engine.env`` sets the quick all-reduce's variable nor ``engine.image`` names one of SGLang's ROCm
images (:data:`ROCM_IMAGE_SINCE` on), on a card and group where it would run."""

ROCM_IMAGE_QUICK_REDUCE = "INT8"
ROCM_IMAGE_SINCE = (0, 5, 9)
"""SGLang's ROCm images (``lmsysorg/sglang:v0.5.12-rocm720-mi35x``, ``lmsysorg/sglang-rocm:...``,
``rocm/sgl-dev:v0.5.10.post1-rocm720-mi35x-20260430``: built from sgl-project/sglang docker/rocm.Dockerfile) set
``ENV ROCM_QUICK_REDUCE_QUANTIZATION=INT8`` (next to ``NCCL_MIN_NCHANNELS=112``) in the versions of that Dockerfile
read here: those whose usage lines name v0.5.9 (AITER v0.1.10.post3), v0.5.10.post1 (AITER_COMMIT 32e1e6d7 of
2026-05-18; d9e5ef7c of 2026-07-29) and the newest (v0.5.17). The earliest of them bounds where the estimate takes
it as the image's default: an image of an older release gets the note only. (Before 2026-02, sgl-project/sglang
PR 19091, the ROCm 7.2 images lacked the amdsmi package the quick all-reduce's set-up needs.) An image's file is
not what the catalog builder reads (the Python artefact), so this is a constant with its provenance."""

_ROCM_IMAGE = re.compile(r"^(?:[^/@]+/)*(?:sglang[\w.-]*|sgl-dev):v?([0-9][\w.]*)-rocm\d")


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


_BUILD_DATE = re.compile(r":[^:@/]*-(20\d\d)(\d\d)(\d\d)(?:$|[^0-9])")


def image_built(image: str | None) -> datetime | None:
    """The day an image's tag says it was built (``...-rocm720-mi35x-20260430``: 2026-04-30, 00:00 UTC); None
    when the tag carries no date."""
    found = _BUILD_DATE.search(image or "")
    if found is None:
        return None
    try:
        return datetime(int(found.group(1)), int(found.group(2)), int(found.group(3)), tzinfo=UTC)
    except ValueError:
        return None


def aiter_for(fact: SglangAllReduce, built: datetime | None = None) -> AiterAllReduce | None:
    """The newest aiter tag published before the SGLang release (or, given, the day its image was built) that
    accepts every keyword the release passes."""
    if fact.released is None and built is None:
        return None
    cutoff = built if built is not None else datetime.fromisoformat(str(fact.released))
    fits = [r for r in aiter_releases() if r.date <= cutoff and all(k in r.parameters for k in fact.aiter_kwargs)]
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
    built = image_built(inp.image)
    aiter = aiter_for(fact, built)
    if aiter is None:
        return 0.0, "aiter custom all-reduce: no aiter release known before this SGLang release; not modelled"
    if group not in aiter.world_sizes:
        return 0.0, None
    gib = aiter.bytes() / GIB
    before = f"the image's build day {built:%Y-%m-%d} (its tag)" if built is not None else "this release"
    return gib, (
        f"aiter custom all-reduce {gib:.2f} GiB before loading (aiter {aiter.tag} assumed: the newest tag before "
        f"{before}; the ROCm image pins its own; default max_size {aiter.default_max_size / 2**20:.0f} MiB, "
        f"{aiter.source})"
    )


def quick_reduce_gib(inp: EstimateInput, fact: SglangAllReduce | None) -> tuple[float, str | None]:
    """GiB per GPU SGLang's quick all-reduce allocates before the baseline on ROCm, and a note saying how.

    ``QuickAllReduce`` is built where the custom all-reduce is (``--disable-custom-all-reduce`` off, a group of
    more than one GPU), on a card whose ``gcnArchName`` has one of ``quick_reduce_archs``, in a group of
    ``quick_reduce_world_sizes`` (more than two GPUs only when all are linked to each other: taken as so on the
    XGMI platforms gfx94x/gfx95x cards come on), and allocates only when ``ROCM_QUICK_REDUCE_QUANTIZATION``
    names a regime other than ``NONE``."""
    group = inp.moe_group or inp.tensor_parallel
    gpu = inp.gpu
    if gpu is None or gpu.vendor != "amd" or fact is None or fact.quick_reduce_default is None or group < 2:
        return 0.0, None
    if flag(inp.options.get("disable_custom_all_reduce")):
        return 0.0, None
    arch = gpu.gfx_arch or ""
    if not any(prefix in arch for prefix in fact.quick_reduce_archs) or group not in fact.quick_reduce_world_sizes:
        return 0.0, None
    stated = inp.env.get("ROCM_QUICK_REDUCE_QUANTIZATION")
    image = rocm_image_release(inp.image)
    from_image = stated is None and image is not None and image >= ROCM_IMAGE_SINCE
    regime = (ROCM_IMAGE_QUICK_REDUCE if from_image else fact.quick_reduce_default) if stated is None else stated
    regime = regime.strip()
    limit_mb = _whole_mb(inp.env.get(fact.quick_reduce_max_size_env or "", "0"))
    size = limit_mb * 2**20 if limit_mb > 0 else (fact.quick_reduce_default_max_gb or 0) * GIB
    gib = QUICK_REDUCE_STAGES * size / GIB
    if regime == "NONE" or regime not in fact.quick_reduce_regimes:
        return 0.0, ROCM_IMAGE_NOTE.format(gib=gib) if stated is None else None
    where = f"{fact.quick_reduce_max_size_env}={limit_mb} MB" if limit_mb > 0 else "the kernel's default"
    origin = " (the ROCm image's ENV, docker/rocm.Dockerfile; engine.env overrides it)" if from_image else ""
    return gib, (
        f"SGLang quick all-reduce ({regime}{origin}) {gib:.2f} GiB before loading: {QUICK_REDUCE_STAGES} stages of "
        f"{size / GIB:.2f} GiB ({where}; {fact.quick_reduce_source})"
    )


def rocm_image_release(image: str | None) -> tuple[int, ...] | None:
    """The SGLang release an image of SGLang's ROCm builds carries in its tag (``v0.5.10.post1-rocm720-mi35x``:
    (0, 5, 10, 1)); None for any other image."""
    found = _ROCM_IMAGE.match(image or "")
    return version_key(found.group(1)) or None if found else None


def _whole_mb(value: str) -> int:
    """``int(os.environ.get(..., 0))`` as the release reads it; a value it could not read counts as unset."""
    try:
        return int(value)
    except ValueError:
        return 0
