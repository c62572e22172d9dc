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
"""

from __future__ import annotations

import math
import weakref

import numpy as np


# Smaller arrays come from numpy's allocator: the C library serves them from its heap without faulting
# pages in, and the pool's Python bookkeeping (here and at every hold/drop) would cost more than it saves
# (measured on MobileNetV3-Small's hundreds of small operations).
POOL_MIN_BYTES = 1 << 17


class BufferPool:
    """Blocks of bytes keyed by size; arrays handed out are views of a block (`arr.base` is the block).
    Arrays under `POOL_MIN_BYTES` are plain numpy arrays, outside the pool."""

    def __init__(self) -> None:
        self._free: dict[int, list[np.ndarray]] = {}
        self._owned: weakref.WeakValueDictionary[int, np.ndarray] = weakref.WeakValueDictionary()
        self._refs: dict[int, int] = {}

    def empty(self, shape: tuple[int, ...], dtype: np.dtype | type) -> np.ndarray:
        dt = np.dtype(dtype)
        nbytes = math.prod(shape) * dt.itemsize
        if nbytes < POOL_MIN_BYTES:
            return np.empty(shape, dtype=dt)
        free = self._free.get(nbytes)
        if not free:
            # No free block of this size: the smallest free one of up to twice the size serves instead, so
            # that tensors of nearby sizes share blocks and the pool stays near the largest live set.
            fits = [size for size, blocks in self._free.items() if blocks and nbytes < size <= 2 * nbytes]
            free = self._free[min(fits)] if fits else None
        block = free.pop() if free else np.empty(nbytes, dtype=np.uint8)
        self._owned[id(block)] = block
        return block[:nbytes].view(dt).reshape(shape)

    def give(self, arr: np.ndarray) -> None:
        """Returns a kernel's own scratch array (taken with `empty`, not escaping the kernel) to the pool."""
        block = self._block_of(arr)
        if block is not None and not self._refs.get(id(block)):
            self._free.setdefault(block.size, []).append(block)

    def hold(self, arr: np.ndarray) -> None:
        """An operand value now refers to `arr`."""
        block = self._block_of(arr)
        if block is not None:
            self._refs[id(block)] = self._refs.get(id(block), 0) + 1

    def drop(self, arr: np.ndarray) -> None:
        """An operand value that referred to `arr` was released; its block returns once none is left."""
        block = self._block_of(arr)
        if block is None:
            return
        left = self._refs.get(id(block), 0) - 1
        if left > 0:
            self._refs[id(block)] = left
            return
        self._refs.pop(id(block), None)
        self._free.setdefault(block.size, []).append(block)

    def start_run(self) -> None:
        """Blocks still out when a run starts belong to arrays the caller kept (its outputs, which it may
        even pass back as inputs): they leave the pool for good."""
        self._refs.clear()
        self._owned = weakref.WeakValueDictionary(
            (id(b), b) for blocks in self._free.values() for b in blocks)

    def retained_bytes(self) -> int:
        """Bytes of the blocks the pool keeps between runs (the memory a run reuses instead of allocating)."""
        return sum(b.size for blocks in self._free.values() for b in blocks)

    def _block_of(self, arr: object) -> np.ndarray | None:
        base = getattr(arr, "base", None)
        if base is None or not isinstance(base, np.ndarray):
            return None
        return base if self._owned.get(id(base)) is base else None
