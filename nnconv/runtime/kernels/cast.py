"""CAST (NNAPI OperationType 45): converts a tensor to another element type.

Slots: 0 input. Conversions among TENSOR_FLOAT16, TENSOR_FLOAT32, TENSOR_INT32 and TENSOR_QUANT8_ASYMM, as
the reference implements them: on stored values (quantization parameters are ignored: a QUANT8_ASYMM
input is read as its raw integers), floats to integers truncate toward zero, and values going to
QUANT8_ASYMM are first clamped to [0, 255]. Any other type casts only to itself (a copy).
"""

from __future__ import annotations

import numpy as np

from nnconv.runtime.kernels.registry import KernelCall, kernel
from nnconv.nnapi.enums import OperandType, OperationType

_NUMERIC = (OperandType.TENSOR_FLOAT16, OperandType.TENSOR_FLOAT32, OperandType.TENSOR_INT32,
            OperandType.TENSOR_QUANT8_ASYMM)


@kernel(OperationType.CAST)
def cast(call: KernelCall) -> list[np.ndarray]:
    x = call.tensor(0)
    t_in, t_out = call.type(0), call.out_type(0)
    out = call.out_operands[0]
    if t_in in _NUMERIC and t_out in _NUMERIC:
        if t_out is OperandType.TENSOR_QUANT8_ASYMM:
            v = np.clip(x.astype(np.float64) if x.dtype.kind == "f" else x, 0, 255)
            return [np.trunc(v).astype(np.uint8) if v.dtype.kind == "f" else v.astype(np.uint8)]
        if t_out is OperandType.TENSOR_INT32 and x.dtype.kind == "f":
            with np.errstate(invalid="ignore"):
                return [np.trunc(x.astype(np.float64)).astype(np.int32)]
        return [x.astype(out.dtype)]
    if t_in is t_out:
        return [x.copy()]
    raise call.fail(f"cannot cast {t_in.name} to {t_out.name}")
