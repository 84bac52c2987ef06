"""Parameter counts and weight bytes of a checkpoint, from its safetensors headers only.

A ``.safetensors`` file starts with an 8-byte little-endian header length N, then N bytes
of JSON: ``{tensor name: {"dtype": ..., "shape": [...], "data_offsets": [begin, end]}}``
plus an optional ``__metadata__`` map (https://github.com/huggingface/safetensors, "Format").
Only those N + 8 bytes are read, never the tensor data, so a 400 GB checkpoint costs a few
megabytes of reading. The shards are the files ``model.safetensors.index.json`` maps tensors
to, else every ``*.safetensors`` file of the folder.
"""

from __future__ import annotations

import json
import math
import os
import stat
import struct
from dataclasses import dataclass, field
from pathlib import Path

from servespec.text import printable

MAX_HEADER_BYTES = 100 * 1024 * 1024
"""The safetensors format's own limit on the header (safetensors/src/tensor.rs, MAX_HEADER_SIZE)."""
MAX_SHARDS = 4096
"""More shards than any published checkpoint has (DeepSeek-V3 has 163)."""
INDEX = "model.safetensors.index.json"
MAX_RANK = 16
"""More dimensions than any tensor has (safetensors itself sets no limit; a header could list millions)."""
MAX_ELEMENTS = 2**53
"""Largest size one dimension may give (a header's JSON integers are otherwise unbounded)."""

BITS = {
    "BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6,
    "I16": 16, "U16": 16, "F16": 16, "BF16": 16, "I32": 32, "U32": 32, "F32": 32, "I64": 64, "U64": 64, "F64": 64,
    "C64": 64,
}  # fmt: skip
"""Bits per element of each safetensors dtype (safetensors/src/tensor.rs, ``Dtype``)."""


class HeaderError(ValueError):
    """A shard whose header cannot be read; the message names no path and quotes nothing of the file."""


@dataclass(frozen=True)
class Weights:
    """What a checkpoint's headers say: elements per dtype and the bytes the tensors take."""

    params_by_dtype: dict[str, int] = field(default_factory=dict)
    bytes: int = 0
    shards: int = 0

    @property
    def params(self) -> int:
        """Elements over all tensors (packed formats count packed elements, not logical weights)."""
        return sum(self.params_by_dtype.values())


def _read_exactly(descriptor: int, count: int) -> bytes:
    chunks, left = [], count
    while left > 0:
        chunk = os.read(descriptor, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_header(path: Path) -> tuple[dict[str, object], int]:
    """The JSON header of one safetensors file and the bytes of its data section; raises OSError or
    :class:`HeaderError`."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    descriptor = os.open(path, flags)  # a FIFO must not hang the run: opened non-blocking, then checked
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise HeaderError("is not a regular file")
        prefix = _read_exactly(descriptor, 8)
        if len(prefix) < 8:
            raise HeaderError("is shorter than a safetensors header")
        (length,) = struct.unpack("<Q", prefix)
        if length > MAX_HEADER_BYTES or length + 8 > info.st_size:
            raise HeaderError("has a header length larger than the format allows or the file holds")
        raw = _read_exactly(descriptor, length)
    finally:
        os.close(descriptor)
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise HeaderError("has a header that is not JSON") from None
    if not isinstance(header, dict):
        raise HeaderError("has a header that is not a JSON object")
    return header, info.st_size - 8 - length


def _elements(shape: object) -> int:
    """Elements of a tensor ``shape``: a list of whole sizes, at most :data:`MAX_RANK` of them."""
    if not isinstance(shape, list) or len(shape) > MAX_RANK:
        raise HeaderError("has a tensor shape that is not a list of sizes")
    if not all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d <= MAX_ELEMENTS for d in shape):
        raise HeaderError("has a tensor shape that is not a list of sizes")
    return math.prod(shape)


def _add(weights: dict[str, int], header: dict[str, object], data_bytes: int) -> int:
    """Count one header's tensors into ``weights``; returns the bytes they take.

    Every tensor's data lies in the file (safetensors validates ``data_offsets`` against the
    data section and the shape against the offsets): a header that claims more is refused, so
    no count exceeds what the file can hold.
    """
    total = 0
    for name, tensor in header.items():
        if name == "__metadata__":
            continue
        if not isinstance(tensor, dict):
            raise HeaderError("has a tensor entry that is not an object")
        dtype, offsets = tensor.get("dtype"), tensor.get("data_offsets")
        if not isinstance(dtype, str) or dtype not in BITS:
            raise HeaderError("has a tensor of an unknown dtype")
        elements = _elements(tensor.get("shape"))
        if not (
            isinstance(offsets, list)
            and len(offsets) == 2
            and all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)
            and 0 <= offsets[0] <= offsets[1] <= data_bytes
        ):
            raise HeaderError("has tensor data offsets that are not [begin, end] inside the file")
        if elements * BITS[dtype] > 8 * (offsets[1] - offsets[0]):
            raise HeaderError("has a tensor shape larger than its data")
        weights[dtype] = weights.get(dtype, 0) + elements
        total += offsets[1] - offsets[0]
    return total


def shard_names(folder: Path) -> list[str]:
    """The shard file names of a checkpoint folder (from its index when it has one), sorted."""
    index = folder / INDEX
    if index.is_file():
        from servespec.spec.paths import MAX_REFERENCED_BYTES, read_bounded

        raw = read_bounded(index, 16 * MAX_REFERENCED_BYTES)
        try:
            data = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise HeaderError(f"{INDEX} is not JSON") from None
        mapped = data.get("weight_map") if isinstance(data, dict) else None
        if not isinstance(mapped, dict) or not all(isinstance(v, str) for v in mapped.values()):
            raise HeaderError(f"{INDEX} has no weight_map of file names")
        names = sorted(set(mapped.values()))
        if any("/" in n or "\\" in n or n in ("", ".", "..") for n in names):
            raise HeaderError(f"{INDEX} names a shard outside the model folder")
        return names
    return sorted(p.name for p in folder.glob("*.safetensors"))


def checkpoint_weights(folder: Path) -> Weights | None:
    """Elements per dtype and tensor bytes of the checkpoint in ``folder``; None when it has no safetensors.

    Raises OSError (a shard that cannot be read) or :class:`HeaderError`.
    """
    names = shard_names(folder)
    if not names:
        return None
    if len(names) > MAX_SHARDS:
        raise HeaderError(f"the checkpoint has more than {MAX_SHARDS} shards")
    counts: dict[str, int] = {}
    total = 0
    for name in names:
        try:
            total += _add(counts, *read_header(folder / name))
        except HeaderError as err:
            raise HeaderError(f"shard {printable(name[:80])} {err}") from None
    return Weights(dict(sorted(counts.items())), total, len(names))


def bytes_of(params_by_dtype: dict[str, int]) -> int:
    """Bytes that ``params_by_dtype`` elements take (the Hub's safetensors summary has counts only)."""
    return sum(count * BITS.get(dtype.upper(), 16) // 8 for dtype, count in params_by_dtype.items())
