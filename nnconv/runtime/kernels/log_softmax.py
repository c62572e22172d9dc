"""LOG_SOFTMAX (NNAPI OperationType 64, API 29).

Slots: 0 input (float32 / float16), 1 beta (FLOAT32; FLOAT16 for float16), 2 axis INT32.
out = (x - max) * beta - log(sum(exp((x - max) * beta))) along the axis; float16 computed in float32.
"""

from __future__ import annotations

import numpy as np

from nnconv.runtime.kernels.registry import KernelCall, kernel
from nnconv.runtime.kernels.softmax import softmax_axis
from nnconv.nnapi.enums import OperationType


@kernel(OperationType.LOG_SOFTMAX)
def log_softmax(call: KernelCall) -> list[np.ndarray]:
    x = call.tensor(0)
    if not call.type(0).is_float:
        raise call.fail("LOG_SOFTMAX takes float tensors only")
    beta = np.float32(call.scalar(1))
    axis = softmax_axis(call, 2, x.ndim)
    xf = x.astype(np.float32)
    z = (xf - xf.max(axis=axis, keepdims=True)) * beta
    y = z - np.log(np.exp(z).sum(axis=axis, keepdims=True))
    return [y.astype(call.out_operands[0].dtype)]
