"""CHANNEL_SHUFFLE (NNAPI OperationType 46, API 29).

Slots: 0 input (rank <= 4; float32, float16, quant8 asymm / signed), 1 num_groups INT32, 2 axis INT32.
The axis of size G * K is viewed as [G, K] and transposed to [K, G]; quantization is unchanged.
"""

from __future__ import annotations

import numpy as np

from nnconv.runtime.kernels.registry import KernelCall, kernel
from nnconv.runtime.kernels.softmax import softmax_axis
from nnconv.nnapi.enums import OperationType


@kernel(OperationType.CHANNEL_SHUFFLE)
def channel_shuffle(call: KernelCall) -> list[np.ndarray]:
    x = call.tensor(0)
    groups = int(call.scalar(1))
    axis = softmax_axis(call, 2, x.ndim)
    depth = x.shape[axis]
    if groups < 1 or depth % groups:
        raise call.fail(f"num_groups {groups} does not divide the axis size {depth}")
    xm = np.moveaxis(x, axis, -1)
    y = xm.reshape(xm.shape[:-1] + (groups, depth // groups)).swapaxes(-1, -2).reshape(xm.shape)
    return [np.ascontiguousarray(np.moveaxis(y, -1, axis))]
