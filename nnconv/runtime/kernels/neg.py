"""NEG (NNAPI OperationType 67): elementwise negation.

Slots: 0 input. Types: TENSOR_FLOAT32, TENSOR_FLOAT16, TENSOR_INT32 (-INT32_MIN wraps to INT32_MIN).
"""

from __future__ import annotations

import numpy as np

from nnconv.runtime.kernels._elementwise import float_unary
from nnconv.runtime.kernels.registry import KernelCall, kernel
from nnconv.nnapi.enums import OperandType, OperationType


@kernel(OperationType.NEG)
def neg(call: KernelCall) -> list[np.ndarray]:
    if call.type(0) is OperandType.TENSOR_INT32:
        return [np.negative(call.tensor(0).astype(np.int32))]
    return [float_unary(call, np.negative)]
