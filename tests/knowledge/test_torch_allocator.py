"""PyTorch's caching allocator as knowledge/torch_allocator.py replays it (c10/cuda/CUDACachingAllocator.cpp)."""

from __future__ import annotations

import pytest

from servespec.knowledge.torch_allocator import CachingAllocator, held_after, round_size, segment_size

MIB = 1 << 20


def test_requests_round_to_512_bytes_and_segments_by_size() -> None:
    assert round_size(1) == 512 and round_size(513) == 1024
    assert segment_size(round_size(4096)) == 2 * MIB  # small pool
    assert segment_size(round_size(3 * MIB)) == 20 * MIB  # 1-10 MiB: kLargeBuffer
    assert segment_size(round_size(10 * MIB)) == 10 * MIB  # from kMinLargeAlloc: its own size...
    assert segment_size(round_size(10 * MIB + 1)) == 12 * MIB  # ... rounded up to 2 MiB


def test_mid_sized_tensors_share_a_20_mib_segment() -> None:
    assert held_after([("a", 3 * MIB), ("b", 3 * MIB), ("c", 3 * MIB)]) == 20 * MIB
    assert held_after([(str(i), 3 * MIB) for i in range(7)]) == 40 * MIB  # 6 fit in the first (18 MiB + 2 > 1)


def test_a_rest_above_1_mib_is_split_off_but_stays_held() -> None:
    # 12.5 MiB takes a 14 MiB segment; its 1.5 MiB rest is split off, free, but held: no later request here fits
    # it, and empty_cache keeps a segment in use. QwQ-32B's qkv_proj at TP4 (17.5 MiB) keeps a 0.5 MiB rest instead.
    assert held_after([("w", 12 * MIB + MIB // 2), ("gate_up", 135 * MIB + 1)]) == 14 * MIB + 136 * MIB
    assert held_after([("qkv", 7168 // 4 * 5120 * 2)]) == 18 * MIB
    allocator = CachingAllocator()
    allocator.malloc("w", 12 * MIB + MIB // 2)
    allocator.malloc("mid", MIB + 512)  # a 1-10 MiB request takes the 1.5 MiB rest (best fit), no new segment
    assert allocator.held == 14 * MIB


def test_a_rest_of_1_mib_or_less_is_not_split() -> None:
    allocator = CachingAllocator()
    allocator.malloc("a", 11 * MIB + MIB // 2)  # 12 MiB segment, 0.5 MiB rest kept with the block
    allocator.malloc("b", MIB // 2)  # small pool: its own 2 MiB segment
    assert allocator.held == 14 * MIB
    assert [len(s.blocks) for s in allocator.segments] == [1, 2]


def test_empty_cache_returns_only_whole_free_segments_and_frees_merge() -> None:
    events: list[tuple[str, int | None]] = [("t", 32 * MIB), ("keep", 64 * MIB), ("t", None)]
    assert held_after(events) == 64 * MIB
    # a freed 32 MiB segment a later 30 MiB tensor takes: the segment is held, 2 MiB of it free
    assert held_after([*events[:2], ("t", None), ("w", 30 * MIB)]) == 96 * MIB
    allocator = CachingAllocator()
    allocator.malloc("a", 3 * MIB)
    allocator.malloc("b", 3 * MIB)
    allocator.free("a")
    allocator.free("b")
    assert [len(s.blocks) for s in allocator.segments] == [1]  # neighbours merged back into one free block
    allocator.empty_cache()
    assert allocator.held == 0
    with pytest.raises(KeyError):
        allocator.free("a")
