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


MAX_DENSE_BYTES = 1 << 31  # a dense weight tensor larger than this is not a model we can hold in memory


def densify(values: np.ndarray, shape: tuple[int, ...], sparsity: Sparsity) -> np.ndarray:
    """The dense array of `shape` that a sparse TFLite constant stands for."""
    values = np.asarray(values).reshape(-1)
    pos, dense_coords = sparse_positions(values.size, shape, sparsity, values.dtype.itemsize)
    out = np.zeros(shape, dtype=values.dtype)
    out[tuple(dense_coords)] = values[pos]
    return out


def sparse_positions(n_values: int, shape: tuple[int, ...], sparsity: Sparsity, itemsize: int = 1
                     ) -> tuple[np.ndarray, list[np.ndarray]]:
    """Walks the metadata: (index of each reached stored value, its coordinate along each dense dimension).
    Raises SparsityError when the metadata does not describe `shape` (the reader's validation calls this,
    so a lowering never densifies an inconsistent tensor). The walk's work is bounded by the stored values
    and the CSR vectors (the file's own size), never by what the dense levels claim."""
    rank = len(shape)
    order = list(sparsity.traversal_order)
    block_map = list(sparsity.block_map)
    levels = sparsity.dim_metadata
    n_expanded = rank + len(block_map)
    if rank == 0:  # a scalar has no dimension to walk (and the walk below would reach one value as a vector)
        raise SparsityError("a sparse tensor needs at least one dimension")
    if sorted(order) != list(range(n_expanded)) or len(levels) != n_expanded:
        raise SparsityError(f"traversal order {order} does not cover {n_expanded} dimensions")
    if any(d < 0 for d in shape) or int(np.prod(shape, dtype=np.float64)) * itemsize > MAX_DENSE_BYTES:
        raise SparsityError(f"dense shape {list(shape)} is negative or over {MAX_DENSE_BYTES} bytes")
    # No level may hold more nodes than the stored values or the parents a CSR level has segments for.
    max_nodes = max([n_values] + [len(dm.array_segments) for dm in levels]) + 1
    pos = np.zeros(1, dtype=np.int64)
    coords = np.zeros((1, n_expanded), dtype=np.int64)
    for level, dm in enumerate(levels):
        dim = order[level]
        if dm.format == DENSE:
            n = int(dm.dense_size)
            if n <= 0 or pos.size * n > max_nodes:
                raise SparsityError(f"dense level {level} of size {n} describes more entries than are stored")
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
    if pos.size and pos.max() >= n_values:
        raise SparsityError(f"the walk reaches value {int(pos.max())}, but only {n_values} are stored")
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
    return pos, dense_coords
