"""SELECT (NNAPI OperationType 84): condition ? input1 : input2, elementwise (no broadcasting).

Slots: 0 condition (TENSOR_BOOL8), 1 input1, 2 input2 (same type and shape as each other and as the
condition). Types: TENSOR_FLOAT32, TENSOR_FLOAT16, TENSOR_INT32, TENSOR_QUANT8_ASYMM,
TENSOR_QUANT8_ASYMM_SIGNED (quantized inputs are requantized to the output's scale and zero point).
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.nnapi.quantization import is_quant8
from nnconv.runtime.kernels._elementwise import FLOAT_TYPES, check_same_type, requantize_ref
from nnconv.runtime.kernels.registry import KernelCall, kernel


@kernel(OperationType.SELECT)
def select(call: KernelCall) -> list[np.ndarray]:
    if call.type(0) is not OperandType.TENSOR_BOOL8:
        raise call.fail(f"input 0 is {call.type(0).name}; the condition must be TENSOR_BOOL8")
    t = check_same_type(call, (1, 2))
    cond, a, b = call.tensor(0), call.tensor(1), call.tensor(2)
    if cond.shape != a.shape or a.shape != b.shape:
        raise call.fail(f"condition {list(cond.shape)} and inputs {list(a.shape)}, {list(b.shape)} must have "
                        "the same shape")
    out = call.out_operands[0]
    if is_quant8(t):
        a, b = requantize_ref(call, 1), requantize_ref(call, 2)
    elif t not in FLOAT_TYPES and t is not OperandType.TENSOR_INT32:
        raise call.fail(f"input 1 has unsupported type {t.name}")
    return [np.where(cond, a, b).astype(out.dtype)]
