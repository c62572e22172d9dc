"""TFLite sparse tensors (`SparsityParameters`) to dense arrays, at conversion time.

TFLite stores a sparse constant as a tree walked in `traversal_order` over the "expanded" dimensions:
the tensor's own dimensions (each blocked one divided by its block size) followed by one dimension per
entry of `block_map`, of the block's size. Each level is DENSE (`dense_size` children per parent: child
position = parent position * dense_size + i) or SPARSE_CSR (the children of parent p are entries
`array_segments[p]` .. `array_segments[p + 1]` of `array_indices`, which hold their coordinates). The
positions reached at the last level index the stored values. NNAPI has no sparse operands, so nnconv
densifies such constants (as TFLite's NNAPI delegate does for DENSIFY) with the walk below, done level by
level on whole arrays of positions rather than node by node.
"""

from __future__ import annotations

import numpy as np

from nnconv.tflite.ir import Sparsity

DENSE = 0
SPARSE_CSR = 1


class SparsityError(ValueError):
    """The sparsity metadata does not describe the tensor (indices or segments out of range)."""


def densify(values: np.ndarray, shape: tuple[int, ...], sparsity: Sparsity) -> np.ndarray:
    """The dense array of `shape` that a sparse TFLite constant stands for."""
    rank = len(shape)
    order = list(sparsity.traversal_order)
    block_map = list(sparsity.block_map)
    levels = sparsity.dim_metadata
    n_expanded = rank + len(block_map)
    if sorted(order) != list(range(n_expanded)) or len(levels) != n_expanded:
        raise SparsityError(f"traversal order {order} does not cover {n_expanded} dimensions")
    values = np.asarray(values).reshape(-1)
    pos = np.zeros(1, dtype=np.int64)
    coords = np.zeros((1, n_expanded), dtype=np.int64)
    sizes = [0] * n_expanded
    for level, dm in enumerate(levels):
        dim = order[level]
        if dm.format == DENSE:
            n = int(dm.dense_size)
            if n <= 0:
                raise SparsityError(f"dense level {level} has size {n}")
            sizes[dim] = n
            child = np.arange(n, dtype=np.int64)
            pos = (pos[:, None] * n + child).reshape(-1)
            coords = np.repeat(coords, n, axis=0)
            coords[:, dim] = np.tile(child, len(coords) // n)
        elif dm.format == SPARSE_CSR:
            segs = np.asarray(dm.array_segments, dtype=np.int64)
            idx = np.asarray(dm.array_indices, dtype=np.int64)
            if pos.size and (pos.max() + 1 >= segs.size):
                raise SparsityError(f"level {level}: {segs.size} segments for {pos.max() + 1} parents")
            starts, ends = segs[pos], segs[pos + 1]
            counts = ends - starts
            if (counts < 0).any() or (ends > idx.size).any():
                raise SparsityError(f"level {level}: segments are not increasing or exceed the indices")
            total = int(counts.sum())
            offsets = np.repeat(starts - (np.cumsum(counts) - counts), counts) + np.arange(total)
            coords = np.repeat(coords, counts, axis=0)
            coords[:, dim] = idx[offsets]
            pos = offsets
        else:
            raise SparsityError(f"level {level} has unknown format {dm.format}")
    if pos.size and pos.max() >= values.size:
        raise SparsityError(f"the walk reaches value {int(pos.max())}, but only {values.size} are stored")
    dense_coords = []
    for d in range(rank):
        c = coords[:, d]
        if d in block_map:
            b = rank + block_map.index(d)
            block = int(levels[order.index(b)].dense_size)
            c = c * block + coords[:, b]
        if c.size and (c.min() < 0 or c.max() >= shape[d]):
            raise SparsityError(f"a coordinate of dimension {d} lies outside its extent {shape[d]}")
        dense_coords.append(c)
    out = np.zeros(shape, dtype=values.dtype)
    out[tuple(dense_coords)] = values[pos]
    return out
