"""LOGICAL_NOT (NNAPI OperationType 62): elementwise NOT of a TENSOR_BOOL8 tensor.

Slots: 0 input (TENSOR_BOOL8).
"""

from __future__ import annotations

import numpy as np

from nnconv.runtime.kernels.registry import KernelCall, kernel
from nnconv.nnapi.enums import OperandType, OperationType


@kernel(OperationType.LOGICAL_NOT)
def logical_not(call: KernelCall) -> list[np.ndarray]:
    if call.type(0) is not OperandType.TENSOR_BOOL8:
        raise call.fail(f"input 0 is {call.type(0).name}; the operation takes TENSOR_BOOL8")
    return [np.logical_not(call.tensor(0))]
