"""PACK (NNAPI OperationType 103, feature level 6).

Slots: 0 axis (INT32 scalar in [-(rank+1), rank]), 1..n inputs (same type and shape: float32/float16/
int32/quant8 asymm/signed). Output: the inputs stacked along a new axis.
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.quantization import requantize_to
from nnconv.runtime.kernels._spatial import normalize_axis
from nnconv.runtime.kernels.registry import KernelCall, kernel


@kernel(OperationType.PACK)
def pack(call: KernelCall) -> list[np.ndarray]:
    xs = [call.tensor(i) for i in range(1, call.num_inputs)]
    if not xs:
        raise call.fail("needs at least one input tensor")
    if any(x.shape != xs[0].shape for x in xs):
        raise call.fail("all inputs must have the same shape")
    axis = normalize_axis(int(call.scalar(0)), xs[0].ndim + 1, call.fail)
    out = call.out_operands[0]
    parts = [requantize_to(x, call.in_operands[i + 1], out) for i, x in enumerate(xs)]
    return [np.stack(parts, axis=axis)]
