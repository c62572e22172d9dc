"""Offsets in one arena for buffers whose lifetimes are known: the memory plan of a model's pooled arrays.

A run of a model with static shapes asks the buffer pool for the same sizes in the same order, and releases
them at the same points. `plan_offsets` places every request with a finite lifetime in one byte arena so
that requests alive at the same time never share bytes, largest first at the lowest free offset (the
"greedy by size" placement TFLite's arena planner also uses); the arena then stays near the largest set of
bytes alive at once, where a pool of per-size blocks keeps the largest count of each size alive at once.
"""

from __future__ import annotations

from dataclasses import dataclass

# Offsets are multiples of a cache line, so that every array starts aligned for SIMD loads.
ALIGN = 64


@dataclass(frozen=True)
class ArenaPlan:
    offsets: list[int | None]  # per request: its offset in the arena, None when it has no planned bytes
    size: int  # the arena's size in bytes


def _aligned(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def plan_offsets(sizes: list[int], starts: list[int], ends: list[int | None]) -> ArenaPlan:
    """`sizes[k]` bytes alive from event `starts[k]` until event `ends[k]` (None: never released, such a
    request gets no offset). Two requests conflict when their [start, end) intervals overlap."""
    offsets: list[int | None] = [None] * len(sizes)
    placed: list[tuple[int, int, int, int]] = []  # (offset, end offset, start, end) of placed requests
    arena = 0
    for k in sorted(range(len(sizes)), key=lambda j: (-sizes[j], starts[j])):
        end = ends[k]
        if end is None:
            continue
        start, size = starts[k], sizes[k]
        busy = sorted((lo, hi) for lo, hi, s, e in placed if s < end and start < e)
        offset = 0
        for lo, hi in busy:
            if offset + size <= lo:
                break
            offset = max(offset, _aligned(hi))
        offsets[k] = offset
        placed.append((offset, offset + size, start, end))
        arena = max(arena, offset + size)
    return ArenaPlan(offsets, arena)
