"""QUANTIZE (NNAPI OperationType 72): float -> quant8, q = clamp(zp + round(x / scale)).

Slots: 0 input (TENSOR_FLOAT32 or TENSOR_FLOAT16). Output TENSOR_QUANT8_ASYMM or TENSOR_QUANT8_ASYMM_SIGNED.
The division is in float32 and rounds halves away from zero (`std::round`), as in the reference.
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.quantization import is_quant8, quantize
from nnconv.runtime.kernels._elementwise import FLOAT_TYPES
from nnconv.runtime.kernels.registry import KernelCall, kernel


@kernel(OperationType.QUANTIZE)
def quantize_(call: KernelCall) -> list[np.ndarray]:
    if call.type(0) not in FLOAT_TYPES:
        raise call.fail(f"input 0 is {call.type(0).name}; QUANTIZE takes TENSOR_FLOAT32 or TENSOR_FLOAT16")
    out = call.out_operands[0]
    if not is_quant8(out.type):
        raise call.fail(f"output is {out.type.name}; QUANTIZE produces quant8 asymmetric tensors")
    return [quantize(call.tensor(0).astype(np.float32), out)]
