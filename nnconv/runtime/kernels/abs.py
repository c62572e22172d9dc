"""ABS (NNAPI OperationType 38): elementwise absolute value.

Slots: 0 input. Types: TENSOR_FLOAT32, TENSOR_FLOAT16 (computed in float32), TENSOR_INT32 (feature level 4;
|INT32_MIN| wraps to INT32_MIN as C's abs does in practice).
"""

from __future__ import annotations

import numpy as np

from nnconv.runtime.kernels._elementwise import float_unary
from nnconv.runtime.kernels.registry import KernelCall, kernel
from nnconv.nnapi.enums import OperandType, OperationType


@kernel(OperationType.ABS)
def abs_(call: KernelCall) -> list[np.ndarray]:
    if call.type(0) is OperandType.TENSOR_INT32:
        return [np.abs(call.tensor(0).astype(np.int32))]
    return [float_unary(call, np.abs)]
