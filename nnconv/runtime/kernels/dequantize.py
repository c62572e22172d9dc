"""DEQUANTIZE (NNAPI OperationType 6): quantized -> float, x = scale * (q - zp).

Slots: 0 input (rank <= 4): TENSOR_QUANT8_ASYMM, TENSOR_QUANT8_ASYMM_SIGNED, TENSOR_QUANT8_SYMM, or
TENSOR_QUANT8_SYMM_PER_CHANNEL (one scale per index of the channel dimension). Output TENSOR_FLOAT32 or
TENSOR_FLOAT16: the product is computed in float32 and rounded once to the output type.
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.nnapi.quantization import dequantize
from nnconv.runtime.kernels._activation import check_rank
from nnconv.runtime.kernels._elementwise import FLOAT_TYPES
from nnconv.runtime.kernels._quant8_table import via_quant8_table
from nnconv.runtime.kernels.registry import KernelCall, kernel

_INPUTS = (OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED,
           OperandType.TENSOR_QUANT8_SYMM, OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL)


@kernel(OperationType.DEQUANTIZE)
def dequantize_(call: KernelCall) -> list[np.ndarray]:
    x = call.tensor(0)
    check_rank(call, x)
    od, out = call.in_operands[0], call.out_operands[0]
    if od.type not in _INPUTS:
        raise call.fail(f"input 0 has unsupported type {od.type.name}")
    if out.type not in FLOAT_TYPES:
        raise call.fail(f"output is {out.type.name}; DEQUANTIZE produces TENSOR_FLOAT32 or TENSOR_FLOAT16")
    if od.type is OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL and od.channel_quant is None:
        raise call.fail("input 0 is per-channel but has no channel quantization parameters")
    if od.type is OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL:
        return [dequantize(x, od).astype(out.dtype)]
    # per-tensor: 256 possible values, so one gather from a memoized table of the same arithmetic
    return [via_quant8_table(call, _dequantize_per_tensor)]


def _dequantize_per_tensor(call: KernelCall) -> np.ndarray:
    return dequantize(call.tensor(0), call.in_operands[0]).astype(call.out_operands[0].dtype)
