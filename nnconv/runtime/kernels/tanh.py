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
from nnconv.runtime.kernels._activation import q4_activation
from nnconv.runtime.kernels._fixedpoint import fixed_tanh
from nnconv.runtime.kernels.registry import KernelCall, kernel


@kernel(OperationType.TANH)
def tanh(call: KernelCall) -> list[np.ndarray]:
    return q4_activation(call, lambda c, x: np.tanh(x.astype(np.float32)).astype(c.out_operands[0].dtype),
                         TANH_OUTPUT, lambda q4: rounding_divide_by_pot(fixed_tanh(q4, 4), 24))
