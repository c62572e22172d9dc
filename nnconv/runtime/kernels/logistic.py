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
from nnconv.runtime.kernels._activation import q4_activation
from nnconv.runtime.kernels._float_activation import apply_float_activation
from nnconv.runtime.kernels._fixedpoint import fixed_logistic
from nnconv.runtime.kernels.registry import KernelCall, kernel


def _float32(call: KernelCall, x: np.ndarray) -> np.ndarray:
    y = float32_logistic(x, call.empty(x.shape, np.float32))
    out_dtype = call.out_operands[0].dtype
    return y if out_dtype == np.float32 else y.astype(out_dtype)


@kernel(OperationType.LOGISTIC)
def logistic(call: KernelCall) -> list[np.ndarray]:
    return q4_activation(call, _float32, LOGISTIC_OUTPUT,
                         lambda q4: rounding_divide_by_pot(fixed_logistic(q4, 4), 23))  # Q0.31 -> 1/256 steps


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
    1e-5 + 1e-4 x max |expected|); at the extremes it agrees with it: -0.0 below -88.7 (x / inf, x * 0), NaN at
    -inf (-inf / inf, -inf * 0), inf at inf."""
    x = call.tensor(0)
    y = call.empty(x.shape, np.float32)
    np.negative(x, out=y)
    with np.errstate(over="ignore", invalid="ignore"):
        np.exp(y, out=y)
        y += np.float32(1.0)
        np.divide(x, y, out=y)
    return [apply_float_activation(y, int(call.scalar(1)))]
