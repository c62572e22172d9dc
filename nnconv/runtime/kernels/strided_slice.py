"""STRIDED_SLICE (NNAPI OperationType 35, API 28).

Slots: 0 input (float32/float16/quant8 asymm/signed, rank <= 4), 1 begin, 2 end, 3 strides (TENSOR_INT32
[rank]), 4 begin_mask, 5 end_mask, 6 shrink_axis_mask (INT32 bit masks). A set begin/end bit means "from
the start / to the end" in the stride's direction; negative begin/end count from the end and are clamped
into the extent; a shrink bit removes the axis (NNAPI has no
ellipsis or new-axis masks). A zero stride fails, and so does a shrunk axis whose
range is not exactly one element with a positive stride (as the reference's prepare checks; the validator
refuses it where begin / end / strides are constants).
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.quantization import requantize_to
from nnconv.runtime.kernels.registry import KernelCall, kernel


def axis_indices(call: KernelCall, dim: int, begin: int, end: int, stride: int, begin_full: bool,
                 end_full: bool, shrink: bool) -> np.ndarray:
    """The input indices one axis of a strided slice keeps."""
    if stride == 0:
        raise call.fail("strides must be non-zero")
    lo, hi = (0, dim) if stride > 0 else (-1, dim - 1)
    if begin_full:
        start = 0 if stride > 0 else dim - 1
    else:
        start = min(max(begin + dim if begin < 0 else begin, lo), hi)
    if end_full:
        stop = dim if stride > 0 else -1
    else:
        stop = min(max(end + dim if end < 0 else end, lo), hi)
    idx = np.arange(start, stop, stride)
    if shrink and (stride < 0 or idx.size != 1):
        # The spec and the reference's prepare require a shrunk axis to select exactly one element with a
        # positive stride; end is not ignored there as in TFLite (nnapi/operations/tensors.py).
        raise call.fail(f"a shrunk axis must be sliced to exactly one element with a positive stride (begin x, "
                        f"end x + 1); begin {begin}, end {end}, stride {stride} select {idx.size} of its {dim}")
    return idx


@kernel(OperationType.STRIDED_SLICE)
def strided_slice(call: KernelCall) -> list[np.ndarray]:
    x = call.tensor(0)
    rank = x.ndim
    begin, end, strides = (call.tensor(k).reshape(-1) for k in (1, 2, 3))
    if not len(begin) == len(end) == len(strides) == rank:
        raise call.fail(f"begin/end/strides must have {rank} entries")
    bm, em, sm = (int(call.scalar(k)) for k in (4, 5, 6))
    y = x
    for a in range(rank):  # one vectorized gather per axis (rank <= 4)
        idx = axis_indices(call, x.shape[a], int(begin[a]), int(end[a]), int(strides[a]), bool(bm >> a & 1),
                           bool(em >> a & 1), bool(sm >> a & 1))
        y = np.take(y, idx, axis=a)
    shape = [d for a, d in enumerate(y.shape) if not sm >> a & 1]
    y = y.reshape(shape or [1])
    return [requantize_to(np.ascontiguousarray(y), call.in_operands[0], call.out_operands[0])]
