"""LOGISTIC (NNAPI OperationType 14): 1 / (1 + exp(-x)).

Slots: 0 input (rank <= 4). Types: TENSOR_FLOAT32, TENSOR_FLOAT16 (float32 math), TENSOR_QUANT8_ASYMM
(output scale 1/256, zero point 0) and TENSOR_QUANT8_ASYMM_SIGNED (1/256, -128): the reference rescales
the centered input to Q4.27, evaluates gemmlowp's fixed-point logistic and rounds the Q0.31 result to
8 bits; inputs beyond the input radius saturate.
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.operations.activations import LOGISTIC_OUTPUT
from nnconv.nnapi.quantization import rounding_divide_by_pot
from nnconv.runtime.kernels._activation import check_rank, fixed_quant_output, rescaled_q4
from nnconv.runtime.kernels._elementwise import FLOAT_TYPES
from nnconv.runtime.kernels._float_activation import apply_float_activation
from nnconv.runtime.kernels._fixedpoint import fixed_logistic
from nnconv.runtime.kernels._quant8_table import via_quant8_table
from nnconv.runtime.kernels.registry import KernelCall, kernel


@kernel(OperationType.LOGISTIC)
def logistic(call: KernelCall) -> list[np.ndarray]:
    x = call.tensor(0)
    check_rank(call, x)
    t = call.type(0)
    out = call.out_operands[0]
    if t in FLOAT_TYPES:
        y = float32_logistic(x, call.empty(x.shape, np.float32))
        return [y if out.dtype == np.float32 else y.astype(out.dtype)]
    zp, lo, hi = fixed_quant_output(call, LOGISTIC_OUTPUT)

    def quantized(c: KernelCall) -> np.ndarray:
        # The reference fixed-point pipeline, run once per 8-bit value by via_quant8_table.
        centered, q4, inside = rescaled_q4(c)
        y = rounding_divide_by_pot(fixed_logistic(q4, 4), 23) + zp  # Q0.31 -> 1/256 steps
        y = np.clip(y, lo, hi)  # 1.0 (256) is not representable: it becomes the top value
        y = np.where(inside, y, np.where(centered > 0, hi, lo))
        return y.astype(out.dtype)

    return [via_quant8_table(call, quantized)]


def float32_logistic(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-x)) in float32 into `y` (x's shape), each step in place: the exp dominates, and fresh
    temporaries per step (multi-megabyte on EfficientNet's maps) would cost as much again."""
    np.negative(x, out=y, dtype=np.float32)
    with np.errstate(over="ignore"):
        np.exp(y, out=y)
    y += np.float32(1.0)
    return np.divide(np.float32(1.0), y, out=y)


def float32_swish(call: KernelCall) -> list[np.ndarray]:
    """The executor's fusion of a float32 `MUL(x, LOGISTIC(x))` (`nnconv.runtime.fusion`), not a registered
    kernel. Slots: 0 x, 1 the MUL's fused activation (INT32 FuseCode). Output: the MUL's.

    x / (1 + exp(-x)), in place in one pooled buffer: one rounding where the pair rounds the logistic and
    then the product, so within an ulp or so of the unfused pair (far inside the float parity tolerance,
    1e-5 + 1e-4 x range); at the extremes it agrees with it: -0.0 below -88.7 (x / inf, x * 0), NaN at
    -inf (-inf / inf, -inf * 0), inf at inf."""
    x = call.tensor(0)
    y = call.empty(x.shape, np.float32)
    np.negative(x, out=y)
    with np.errstate(over="ignore", invalid="ignore"):
        np.exp(y, out=y)
        y += np.float32(1.0)
        np.divide(x, y, out=y)
    return [apply_float_activation(y, int(call.scalar(1)))]
