"""LOCAL_RESPONSE_NORMALIZATION (NNAPI OperationType 13).

Slots: 0 input (float32 / float16; rank 4 before API 29, rank <= 4 after), 1 radius INT32, 2 bias,
3 alpha, 4 beta (FLOAT32, or FLOAT16 for a float16 input), [5 axis INT32, default -1].
out = x / (bias + alpha * Σ_{|k - c| <= radius} x_k^2)^beta along the axis, computed in float32.
"""

from __future__ import annotations

import numpy as np

from nnconv.runtime.kernels.registry import KernelCall, kernel
from nnconv.runtime.kernels.softmax import softmax_axis
from nnconv.nnapi.enums import OperationType


@kernel(OperationType.LOCAL_RESPONSE_NORMALIZATION)
def local_response_normalization(call: KernelCall) -> list[np.ndarray]:
    x = call.tensor(0)
    if not call.type(0).is_float:
        raise call.fail("LOCAL_RESPONSE_NORMALIZATION takes float tensors only")
    radius = int(call.scalar(1))
    bias, alpha, beta = (np.float32(call.scalar(i)) for i in (2, 3, 4))
    if radius < 0:
        raise call.fail(f"radius {radius} must be non-negative")
    axis = softmax_axis(call, 5, x.ndim)
    xf = np.moveaxis(x.astype(np.float32), axis, -1)
    depth = xf.shape[-1]
    sq = (xf * xf).astype(np.float64)
    # Window sums of squares through a cumulative sum padded with a leading zero.
    csum = np.concatenate([np.zeros(sq.shape[:-1] + (1,)), np.cumsum(sq, axis=-1)], axis=-1)
    idx = np.arange(depth)
    hi = np.minimum(idx + radius, depth - 1) + 1
    lo = np.maximum(idx - radius, 0)
    window = (csum[..., hi] - csum[..., lo]).astype(np.float32)
    y = xf / np.power(bias + alpha * window, beta)
    return [np.ascontiguousarray(np.moveaxis(y, -1, axis)).astype(call.out_operands[0].dtype)]
