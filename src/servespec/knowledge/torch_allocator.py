"""PyTorch's CUDA caching allocator: the device memory it holds for a sequence of allocations and frees.

An engine that reads the GPU's free memory (``torch.cuda.mem_get_info``) before and after building its model sees the
segments the allocator took from the driver, not the tensors' bytes: every tensor is rounded up to 512 bytes, tensors
of up to 1 MiB share 2 MiB segments, tensors between 1 and 10 MiB take (or share) 20 MiB segments, larger ones a
segment of their size rounded up to 2 MiB; a block is split off the segment's rest only when the rest is above 1 MiB
(large pool) or at least 512 bytes (small pool), and a later request takes the smallest free block that holds it.
``torch.cuda.empty_cache()`` returns only segments with nothing allocated in them. Source: PyTorch
c10/cuda/CUDACachingAllocator.cpp (``kMinBlockSize``, ``kSmallSize``, ``kSmallBuffer``, ``kLargeBuffer``,
``kMinLargeAlloc``, ``kRoundLarge``; ``round_size``, ``get_allocation_size``, ``should_split``, ``get_free_block``;
constants unchanged across the PyTorch releases SGLang pins; newer trees keep them in c10/core/AllocatorConfig.h;
ROCm builds hipify the same file). Not modelled: the
``PYTORCH_CUDA_ALLOC_CONF`` options (``expandable_segments``, ``max_split_size_mb``, ``roundup_power2_divisions``;
all off by default), other streams."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

MIN_BLOCK = 512
"""``kMinBlockSize``: every request is rounded up to a multiple of 512 bytes."""
SMALL_SIZE = 1 << 20
"""``kSmallSize``: requests of up to 1 MiB use the small pool."""
SMALL_BUFFER = 2 << 20
"""``kSmallBuffer``: the small pool's segments are 2 MiB."""
LARGE_BUFFER = 20 << 20
"""``kLargeBuffer``: requests between 1 and 10 MiB get a 20 MiB segment."""
MIN_LARGE_ALLOC = 10 << 20
"""``kMinLargeAlloc``: from 10 MiB a request gets a segment of its own size..."""
ROUND_LARGE = 2 << 20
"""``kRoundLarge``: ... rounded up to 2 MiB."""
SOURCE = (
    "https://github.com/pytorch/pytorch/blob/main/c10/cuda/CUDACachingAllocator.cpp (kMinBlockSize 512, "
    "kSmallSize 1 MiB, kSmallBuffer 2 MiB, kLargeBuffer 20 MiB, kMinLargeAlloc 10 MiB, kRoundLarge 2 MiB; "
    "round_size, get_allocation_size, should_split, get_free_block best fit; emptyCache frees whole segments)"
)


def round_size(size: int) -> int:
    """``round_size``: the block a request of ``size`` bytes takes."""
    return max(MIN_BLOCK, -(-size // MIN_BLOCK) * MIN_BLOCK)


def segment_size(size: int) -> int:
    """``get_allocation_size``: the segment a rounded request that no free block holds makes the allocator take."""
    if size <= SMALL_SIZE:
        return SMALL_BUFFER
    if size < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return -(-size // ROUND_LARGE) * ROUND_LARGE


@dataclass
class _Block:
    size: int
    owner: str | None  # None: free


@dataclass
class _Segment:
    small: bool
    blocks: list[_Block] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(b.size for b in self.blocks)


@dataclass
class CachingAllocator:
    """One device's caching allocator, replayed: :meth:`malloc` and :meth:`free` by tensor name, then
    :meth:`empty_cache` and :attr:`held` (the bytes the driver sees taken)."""

    segments: list[_Segment] = field(default_factory=list)

    def malloc(self, name: str, size: int) -> None:
        want = round_size(size)
        small = want <= SMALL_SIZE
        found: tuple[int, _Segment, int] | None = None
        for segment in self.segments:
            if segment.small != small:
                continue
            for index, block in enumerate(segment.blocks):
                if block.owner is None and block.size >= want and (found is None or block.size < found[0]):
                    found = (block.size, segment, index)
        if found is None:
            segment = _Segment(small, [_Block(segment_size(want), None)])
            self.segments.append(segment)
            found = (segment.blocks[0].size, segment, 0)
        _, segment, index = found
        block = segment.blocks[index]
        rest = block.size - want
        if (rest >= MIN_BLOCK) if small else (rest > SMALL_SIZE):
            block.size = want
            segment.blocks.insert(index + 1, _Block(rest, None))
        block.owner = name

    def free(self, name: str) -> None:
        for segment in self.segments:
            for block in segment.blocks:
                if block.owner == name:
                    block.owner = None
                    merged: list[_Block] = []
                    for each in segment.blocks:
                        if merged and merged[-1].owner is None and each.owner is None:
                            merged[-1].size += each.size
                        else:
                            merged.append(each)
                    segment.blocks = merged
                    return
        raise KeyError(name)

    def empty_cache(self) -> None:
        self.segments = [s for s in self.segments if any(b.owner is not None for b in s.blocks)]

    @property
    def held(self) -> int:
        return sum(s.size for s in self.segments)


def held_after(events: Iterable[tuple[str, int | None]]) -> int:
    """Bytes the allocator holds after ``events`` (``(name, bytes)`` allocates, ``(name, None)`` frees) and an
    ``empty_cache()``."""
    allocator = CachingAllocator()
    for name, size in events:
        if size is None:
            allocator.free(name)
        else:
            allocator.malloc(name, size)
    allocator.empty_cache()
    return allocator.held
