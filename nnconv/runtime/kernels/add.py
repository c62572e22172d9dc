"""ADD (NNAPI OperationType 0): elementwise sum with broadcasting.

Slots: 0 input1, 1 input2 (same type, broadcastable, rank <= 4), 2 fused activation (INT32 FuseCode).
Types: TENSOR_FLOAT32, TENSOR_FLOAT16 (computed in float32), TENSOR_QUANT8_ASYMM and
TENSOR_QUANT8_ASYMM_SIGNED (each input keeps its own scale / zero point; the reference left-shift-20
pipeline), TENSOR_INT32 (wrap-around, activation NONE only).
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.quantization import is_quant8, tflite_requantize
from nnconv.runtime.kernels._binary_kernels import arithmetic_kernel
from nnconv.runtime.kernels._elementwise import quant_add
from nnconv.runtime.kernels.registry import KernelCall


def _tflite_requantize(call: KernelCall) -> list[np.ndarray] | None:
    """verify's TFLite-arithmetic rerun only: an ADD(x, 0) that stands for a TFLite requantizing QUANTIZE,
    computed with TFLite's one multiplier (`ExecutionOptions.tflite_requantize`); None otherwise."""
    if call.tflite_requantize and is_quant8(call.type(0)):
        return [tflite_requantize(call.tensor(0), call.in_operands[0], call.out_operands[0])]
    return None


add = arithmetic_kernel(OperationType.ADD, np.add, "add", quant_add, first=_tflite_requantize)
