"""TANH (NNAPI OperationType 28): hyperbolic tangent.

Slots: 0 input (rank <= 4). Types: TENSOR_FLOAT32, TENSOR_FLOAT16 (float32 math), TENSOR_QUANT8_ASYMM
(output scale 1/128, zero point 128) and TENSOR_QUANT8_ASYMM_SIGNED (1/128, 0): the reference rescales the
centered input to Q4.27, evaluates gemmlowp's fixed-point tanh and rounds the Q0.31 result to 1/128 steps;
inputs beyond the input radius saturate.
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.operations.activations import TANH_OUTPUT
from nnconv.nnapi.quantization import rounding_divide_by_pot
from nnconv.runtime.kernels._activation import check_rank, fixed_quant_output, rescaled_q4
from nnconv.runtime.kernels._elementwise import FLOAT_TYPES
from nnconv.runtime.kernels._fixedpoint import fixed_tanh
from nnconv.runtime.kernels._quant8_table import via_quant8_table
from nnconv.runtime.kernels.registry import KernelCall, kernel


@kernel(OperationType.TANH)
def tanh(call: KernelCall) -> list[np.ndarray]:
    x = call.tensor(0)
    check_rank(call, x)
    t = call.type(0)
    out = call.out_operands[0]
    if t in FLOAT_TYPES:
        return [np.tanh(x.astype(np.float32)).astype(out.dtype)]
    zp, lo, hi = fixed_quant_output(call, TANH_OUTPUT)

    def quantized(c: KernelCall) -> np.ndarray:
        # The reference fixed-point pipeline, run once per 8-bit value by via_quant8_table.
        centered, q4, inside = rescaled_q4(c)
        y = np.clip(rounding_divide_by_pot(fixed_tanh(q4, 4), 24) + zp, lo, hi)
        y = np.where(inside, y, np.where(centered > 0, hi, lo))
        return y.astype(out.dtype)

    return [via_quant8_table(call, quantized)]
