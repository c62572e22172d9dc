"""MEAN (NNAPI OperationType 31, API 28).

Slots: 0 input (float32/float16/quant8 asymm/signed, rank <= 4), 1 axes (TENSOR_INT32 1-D), 2 keep_dims
(INT32 scalar, > 0 keeps). Quantized: the reference (TFLite `Mean<uint8_t, int32_t>`) sums the stored
values in int32 and divides by the element count with C++ integer division (truncation toward zero); the
output keeps the input's scale and zero point, so an output declared with other parameters is requantized.
Float32 over a run of adjacent axes (the global average pool of NHWC, axes 1 and 2) sums as a BLAS product
with a vector of ones (see `_float32_mean_over_run`).
"""

from __future__ import annotations

import math

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.quantization import is_quant8, requantize_to
from nnconv.runtime.kernels._reduction import finish_reduction, reduction_axes
from nnconv.runtime.kernels.registry import KernelCall, kernel


@kernel(OperationType.MEAN)
def mean(call: KernelCall) -> list[np.ndarray]:
    x = call.tensor(0)
    # the axes and keep_dims operands are constants in every model we emit: read once per operation
    axes, keep = call.memo(("mean", x.ndim), (1, 2),
                           lambda: (reduction_axes(call, x.ndim), int(call.scalar(2)) > 0))
    src, out = call.in_operands[0], call.out_operands[0]
    count = math.prod(x.shape[a] for a in axes)
    if count == 0:
        raise call.fail("cannot average over an empty dimension")
    if is_quant8(src.type):
        # Widened while summing, without a copy: int32 like the reference while no sum can overflow it
        # (|stored value| <= 255), int64 beyond (where the reference's int32 would overflow).
        wide = np.int32 if count < (1 << 23) else np.int64
        total = x.sum(axis=axes, keepdims=True, dtype=wide)
        q = np.where(total >= 0, total // count, -((-total) // count))  # C++ truncating division
        y = requantize_to(q.astype(src.dtype), src, out)
    elif x.dtype == np.float32 and axes and axes[-1] - axes[0] == len(axes) - 1:
        ones = call.memo(("mean-ones", count), (), lambda: np.ones(count, dtype=np.float32))
        y = _float32_mean_over_run(x, axes, ones).astype(out.dtype, copy=False)
    else:
        y = x.astype(np.float32, copy=False).mean(axis=axes, keepdims=True).astype(out.dtype)
    return [finish_reduction(y, x.shape, axes, keep)]


def _float32_mean_over_run(x: np.ndarray, axes: tuple[int, ...], ones: np.ndarray) -> np.ndarray:
    """The mean over the adjacent `axes` of a float32 tensor, keeping dims: the tensor viewed as
    (before, reduced, after) and summed as `ones` (float32, one per reduced element) @ view, one BLAS
    matrix-vector product per leading index.

    numpy's own mean over axes that are not innermost adds the tensor one short row at a time (about 1 ns
    per element, after a float32 copy); the product reads it once at memory speed (2-7x faster on
    EfficientNet's squeeze-excite pools). Its float32 sum is blocked, so it is at least as close to the
    exact mean as the plain running sum of TFLite's kernel (measured: 1e-8..5e-8 from the float64 mean where
    numpy's is 4e-8..1e-7), well inside the float parity tolerance (1e-5 + 1e-4 x max |expected|)."""
    count = ones.size
    before = math.prod(x.shape[:axes[0]])
    after = math.prod(x.shape[axes[-1] + 1:])
    view = np.ascontiguousarray(x).reshape(before, count, after)
    total = np.matmul(ones, view)  # (before, after)
    total /= np.float32(count)
    return total.reshape([1 if k in axes else d for k, d in enumerate(x.shape)])
