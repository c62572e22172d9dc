"""LOGICAL_OR (NNAPI OperationType 63): elementwise a OR b of two TENSOR_BOOL8 tensors, with broadcasting.

Slots: 0 input1, 1 input2 (TENSOR_BOOL8, broadcastable).
"""

from __future__ import annotations

import numpy as np

from nnconv.runtime.kernels._elementwise import broadcast_shape, check_same_type
from nnconv.runtime.kernels.registry import KernelCall, kernel
from nnconv.nnapi.enums import OperandType, OperationType


@kernel(OperationType.LOGICAL_OR)
def logical_or(call: KernelCall) -> list[np.ndarray]:
    if check_same_type(call) is not OperandType.TENSOR_BOOL8:
        raise call.fail(f"input 0 is {call.type(0).name}; the operation takes TENSOR_BOOL8")
    a, b = call.tensor(0), call.tensor(1)
    broadcast_shape(call, a, b, max_rank=None)
    return [np.logical_or(a, b)]
