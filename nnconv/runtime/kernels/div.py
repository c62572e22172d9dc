"""DIV (NNAPI OperationType 30): elementwise quotient input1 / input2 with broadcasting.

Slots: 0 input1, 1 input2 (same type, broadcastable, rank <= 4), 2 fused activation (INT32 FuseCode).
Types: TENSOR_FLOAT32, TENSOR_FLOAT16 (computed in float32; IEEE results for division by zero),
TENSOR_INT32 (floor division as the reference implements it; division by zero gives 0, which the spec
leaves undefined but must not crash). No quantized types.
"""

from __future__ import annotations

import numpy as np

from nnconv.runtime.kernels._elementwise import (FLOAT_TYPES, activation_code, check_same_type, float_binary,
                                                  int32_binary)
from nnconv.runtime.kernels._prepared_binary import prepared_float32_binary
from nnconv.runtime.kernels.registry import KernelCall, kernel
from nnconv.nnapi.enums import OperandType, OperationType


def _floor_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    zero = b == 0
    q = np.floor_divide(a, np.where(zero, 1, b))
    return np.where(zero, 0, q)


@kernel(OperationType.DIV)
def div(call: KernelCall) -> list[np.ndarray]:
    y = prepared_float32_binary(call, np.divide, 2)  # under the executor: the prepared float32 path
    if y is not None:
        return [y]
    t = check_same_type(call)
    act = activation_code(call, 2)
    if t in FLOAT_TYPES:
        return [float_binary(call, np.divide, act)]
    if t is OperandType.TENSOR_INT32:
        return [int32_binary(call, _floor_div, act)]
    raise call.fail(f"input 0 has unsupported type {t.name}")
