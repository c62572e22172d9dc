"""TANH (NNAPI OperationType 28): hyperbolic tangent.

Slots: 0 input (rank <= 4). Types: TENSOR_FLOAT32, TENSOR_FLOAT16 (float32 math), TENSOR_QUANT8_ASYMM
(output scale 1/128, zero point 128) and TENSOR_QUANT8_ASYMM_SIGNED (1/128, 0): the reference rescales the
centered input to Q4.27, evaluates gemmlowp's fixed-point tanh and rounds the Q0.31 result to 1/128 steps;
inputs beyond the input radius saturate.
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.nnapi.quantization import rounding_divide_by_pot
from nnconv.runtime.kernels._activation import check_fixed_output, check_rank, rescaled_q4, validate_q4_activation
from nnconv.runtime.kernels._elementwise import FLOAT_TYPES
from nnconv.runtime.kernels._fixedpoint import fixed_tanh
from nnconv.runtime.kernels._quant8_table import via_quant8_table
from nnconv.runtime.kernels.registry import KernelCall, kernel
from nnconv.runtime.kernels.validation import OperationView, validator


@kernel(OperationType.TANH)
def tanh(call: KernelCall) -> list[np.ndarray]:
    x = call.tensor(0)
    check_rank(call, x)
    t = call.type(0)
    out = call.out_operands[0]
    if t in FLOAT_TYPES:
        return [np.tanh(x.astype(np.float32)).astype(out.dtype)]
    if t is OperandType.TENSOR_QUANT8_ASYMM:
        check_fixed_output(call, 1.0 / 128, 128)
        lo, hi, zp = 0, 255, 128
    elif t is OperandType.TENSOR_QUANT8_ASYMM_SIGNED:
        check_fixed_output(call, 1.0 / 128, 0)
        lo, hi, zp = -128, 127, 0
    else:
        raise call.fail(f"input 0 has unsupported type {t.name}")

    def quantized(c: KernelCall) -> np.ndarray:
        # The reference fixed-point pipeline, run once per 8-bit value by via_quant8_table.
        centered, q4, inside = rescaled_q4(c)
        y = np.clip(rounding_divide_by_pot(fixed_tanh(q4, 4), 24) + zp, lo, hi)
        y = np.where(inside, y, np.where(centered > 0, hi, lo))
        return y.astype(out.dtype)

    return [via_quant8_table(call, quantized)]


@validator(OperationType.TANH)
def validate_tanh(view: OperationView, feature_level: int) -> int:
    # Quantized TANH arrived with feature level 3 (Android 10); float TANH is in the first one.
    needed = 3 if view.input(0) is not None and view.input(0).type.is_quantized else 1
    return max(needed, validate_q4_activation(view, {OperandType.TENSOR_QUANT8_ASYMM: (1.0 / 128, 128),
                                         OperandType.TENSOR_QUANT8_ASYMM_SIGNED: (1.0 / 128, 0)}))
