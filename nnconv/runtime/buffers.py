"""Output buffers reused from run to run, so that large tensors do not cost fresh pages on every run.

A model's shapes are static, so every run asks for the same sizes in the same order. Kernels that opt in
take their output (and large scratch) arrays from the runner's `BufferPool` (`KernelCall.empty`); the
runner counts, per pooled block, the operand values that still hold it (views included: a RESHAPE's output
shares its input's block) and gives the block back when the last one is released. Outputs of the model are
never released, so the caller keeps its arrays and the next run takes other blocks. Freshly allocated
multi-megabyte arrays are mapped anew by the C library each time and fault their pages in again: on a
224x224 MobileNetV2 that costs about a quarter of a run. The pool holds at most what the liveness of the
tensors keeps alive at once, per size; a request without a free block of its size takes a free block of
up to twice its size, so that nearby sizes share blocks.

Planned runs: the pool records the first complete run's requests (size, when asked for, when released) and,
from the next run on, serves the k-th request from its place in one arena laid out by
`arena_plan.plan_offsets`, which keeps the pool near the largest set of bytes alive at once (per-size blocks
kept 2-8x the largest live set of tensors on MobileNet/EfficientNet); requests the first run never released
(the model's outputs) get fresh arrays. A run that asks for other sizes than the recorded one (a model whose
shapes or control flow vary) makes the pool fall back to per-size blocks for good; a model with control flow
(more than one subgraph) never plans.
"""

from __future__ import annotations

import math
import weakref

import numpy as np

from nnconv.runtime.arena_plan import plan_offsets


# Smaller arrays come from numpy's allocator: the C library serves them from its heap without faulting
# pages in, and the pool's Python bookkeeping (here and at every hold/drop) would cost more than it saves
# (measured on MobileNetV3-Small's hundreds of small operations).
POOL_MIN_BYTES = 1 << 17
# A run with more pooled requests than this is not planned (the placement is quadratic in the requests).
MAX_PLANNED_REQUESTS = 4096


class BufferPool:
    """Blocks of bytes keyed by size; arrays handed out are views of a block (`arr.base` is the block).
    Arrays under `POOL_MIN_BYTES` are plain numpy arrays, outside the pool."""

    def __init__(self, plan: bool = True) -> None:
        self._free: dict[int, list[np.ndarray]] = {}
        self._owned: weakref.WeakValueDictionary[int, np.ndarray] = weakref.WeakValueDictionary()
        self._refs: dict[int, int] = {}
        # "record": per-size blocks, logging the run's requests; "planned": the arena; "blocks": per-size
        # blocks for good
        self.mode = "record" if plan else "blocks"
        self._sizes: list[int] = []  # recording: bytes of each request, in order
        self._starts: list[int] = []  # recording: event count at each request
        self._ends: list[int | None] = []  # recording: event count at its release (None: still out)
        self._request_of: dict[int, int] = {}  # recording: id(block) -> the request it serves now
        self._events = 0
        self._recorded = False  # the recording run completed
        self._arena: np.ndarray | None = None
        self._planned: list[np.ndarray | None] = []  # planned: per request, its block (None: a fresh array)
        self._next = 0  # planned: the next request's index in this run

    def empty(self, shape: tuple[int, ...], dtype: np.dtype | type) -> np.ndarray:
        dt = np.dtype(dtype)
        nbytes = math.prod(shape) * dt.itemsize
        if nbytes < POOL_MIN_BYTES:
            return np.empty(shape, dtype=dt)
        if self.mode == "planned":
            k = self._next
            if k < len(self._planned) and self._sizes[k] == nbytes:
                self._next = k + 1
                block = self._planned[k]
                return np.empty(shape, dtype=dt) if block is None else block.view(dt).reshape(shape)
            # This run differs from the recorded one: the arena's layout no longer holds. Arrays already
            # served from it stay valid (they keep the arena alive); everything else gets per-size blocks.
            self.mode = "blocks"
            self._planned, self._arena = [], None
        free = self._free.get(nbytes)
        if not free:
            # No free block of this size: the smallest free one of up to twice the size serves instead, so
            # that tensors of nearby sizes share blocks and the pool stays near the largest live set.
            fits = [size for size, blocks in self._free.items() if blocks and nbytes < size <= 2 * nbytes]
            free = self._free[min(fits)] if fits else None
        block = free.pop() if free else np.empty(nbytes, dtype=np.uint8)
        self._owned[id(block)] = block
        if self.mode == "record":
            self._request_of[id(block)] = len(self._sizes)
            self._sizes.append(nbytes)
            self._starts.append(self._events)
            self._ends.append(None)
            self._events += 1
        return block[:nbytes].view(dt).reshape(shape)

    def give(self, arr: np.ndarray) -> None:
        """Returns a kernel's own scratch array (taken with `empty`, not escaping the kernel) to the pool."""
        if self.mode == "planned":
            return  # the plan already knows when this request's bytes are free
        block = self._block_of(arr)
        if block is not None and not self._refs.get(id(block)):
            self._release(block)

    def hold(self, arr: np.ndarray) -> None:
        """An operand value now refers to `arr`."""
        if self.mode == "planned":
            return
        block = self._block_of(arr)
        if block is not None:
            self._refs[id(block)] = self._refs.get(id(block), 0) + 1

    def drop(self, arr: np.ndarray) -> None:
        """An operand value that referred to `arr` was released; its block returns once none is left."""
        if self.mode == "planned":
            return
        block = self._block_of(arr)
        if block is None:
            return
        left = self._refs.get(id(block), 0) - 1
        if left > 0:
            self._refs[id(block)] = left
            return
        self._refs.pop(id(block), None)
        self._release(block)

    def _release(self, block: np.ndarray) -> None:
        self._free.setdefault(block.size, []).append(block)
        k = self._request_of.pop(id(block), None)
        if k is not None:
            self._ends[k] = self._events
            self._events += 1

    def start_run(self) -> None:
        """Blocks still out when a run starts belong to arrays the caller kept (its outputs, which it may
        even pass back as inputs): they leave the pool for good. After a complete recorded run, lays out
        the arena that serves the next runs."""
        self._refs.clear()
        self._request_of.clear()
        if self.mode == "record":
            if self._recorded and len(self._sizes) <= MAX_PLANNED_REQUESTS:
                self._build_plan()
            else:
                self._sizes, self._starts, self._ends, self._events = [], [], [], 0
        self._next = 0
        self._owned = weakref.WeakValueDictionary(
            (id(b), b) for blocks in self._free.values() for b in blocks)

    def finish_run(self) -> None:
        """The runner completed a run: in recording mode, that run's requests make the plan."""
        if self.mode == "record":
            self._recorded = True

    def _build_plan(self) -> None:
        plan = plan_offsets(self._sizes, self._starts, self._ends)
        arena = np.empty(plan.size, dtype=np.uint8)
        # Each request's bytes as an array of its own (frombuffer over a slice): views of it keep it as
        # their base, and it keeps the arena alive.
        memory = memoryview(arena)
        self._planned = [None if off is None else np.frombuffer(memory[off:off + n], dtype=np.uint8)
                         for off, n in zip(plan.offsets, self._sizes)]
        self._arena = arena
        self._free.clear()  # the recording run's blocks: the arena replaces them
        self._starts, self._ends = [], []
        self.mode = "planned"

    def retained_bytes(self) -> int:
        """Bytes of the blocks the pool keeps between runs (the memory a run reuses instead of allocating)."""
        arena = 0 if self._arena is None else self._arena.nbytes
        return arena + sum(b.size for blocks in self._free.values() for b in blocks)

    def _block_of(self, arr: object) -> np.ndarray | None:
        base = getattr(arr, "base", None)
        if base is None or not isinstance(base, np.ndarray):
            return None
        return base if self._owned.get(id(base)) is base else None
