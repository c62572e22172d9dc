"""ADD (NNAPI OperationType 0): elementwise sum with broadcasting.

Slots: 0 input1, 1 input2 (same type, broadcastable, rank <= 4), 2 fused activation (INT32 FuseCode).
Types: TENSOR_FLOAT32, TENSOR_FLOAT16 (computed in float32), TENSOR_QUANT8_ASYMM and
TENSOR_QUANT8_ASYMM_SIGNED (each input keeps its own scale / zero point; the reference left-shift-20
pipeline), TENSOR_INT32 (wrap-around, activation NONE only).
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.nnapi.quantization import is_quant8, tflite_requantize
from nnconv.runtime.kernels._elementwise import (FLOAT_TYPES, activation_code, check_same_type, float_binary,
                                                 int32_binary, quant_add)
from nnconv.runtime.kernels._quant8_table import via_quant8_pair_table
from nnconv.runtime.kernels._prepared_binary import prepared_float32_binary
from nnconv.runtime.kernels._prepared_quant_binary import prepared_quant8_binary
from nnconv.runtime.kernels.registry import KernelCall, kernel


@kernel(OperationType.ADD)
def add(call: KernelCall) -> list[np.ndarray]:
    if call.tflite_requantize and is_quant8(call.type(0)):  # verify's TFLite-arithmetic rerun only
        return [tflite_requantize(call.tensor(0), call.in_operands[0], call.out_operands[0])]
    y = prepared_float32_binary(call, np.add, 2)  # under the executor: the prepared float32 path
    if y is None:
        y = prepared_quant8_binary(call, "add")  # and the quant8 one, for outputs no table serves
    if y is not None:
        return [y]
    t = check_same_type(call)
    act = activation_code(call, 2)
    if t in FLOAT_TYPES:
        return [float_binary(call, np.add, act)]
    if is_quant8(t):
        return [via_quant8_pair_table(call, lambda c: quant_add(c, act), ("add", act))]
    if t is OperandType.TENSOR_INT32:
        return [int32_binary(call, np.add, act)]
    raise call.fail(f"input 0 has unsupported type {t.name}")
