"""Shared parts of the activation kernels (RELU/RELU1/RELU6 clamps, quantized LOGISTIC/TANH input rescaling).

Not a kernel module; imported by relu.py, relu1.py, relu6.py, logistic.py, tanh.py.
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import FuseCode, OperandType
from nnconv.nnapi.quantization import (is_quant8, multiply_by_quantized_multiplier_greater_than_one, qrange,
                                       quantize_multiplier_greater_than_one, quantized_activation_range)
from nnconv.nnapi.quant_limits import SIGMOID_INPUT_INTEGER_BITS, sigmoid_input_multiplier
from nnconv.runtime.kernels._elementwise import FLOAT_TYPES
from nnconv.runtime.kernels._fixedpoint import calculate_input_radius
from nnconv.runtime.kernels.registry import KernelCall


def check_rank(call: KernelCall, x: np.ndarray, max_rank: int = 4) -> None:
    """Rejects an input of rank above `max_rank` (NNAPI's activations take rank <= 4)."""
    if x.ndim > max_rank:
        raise call.fail(f"input 0 has rank {x.ndim}; the operation takes rank <= {max_rank}")


def relu_family(call: KernelCall, code: FuseCode) -> list[np.ndarray]:
    """RELU / RELU1 / RELU6: a float clamp, or a clamp of the quantized storage values at the bounds
    quantized with the input's scale and zero point (the output carries the input's quantization)."""
    x = call.tensor(0)
    check_rank(call, x)
    t = call.type(0)
    out = call.out_operands[0]
    if t in FLOAT_TYPES:
        lo, hi = {FuseCode.RELU: (0.0, np.inf), FuseCode.RELU1: (-1.0, 1.0), FuseCode.RELU6: (0.0, 6.0)}[code]
        xf = x.astype(np.float32)
        # The reference's std::min(std::max(lo, x), hi): NaN compares false, so it becomes lo.
        y = np.where(np.float32(lo) < xf, xf, np.float32(lo))
        return [np.where(np.float32(hi) < y, np.float32(hi), y).astype(out.dtype)]
    if is_quant8(t):
        od = call.in_operands[0]
        if out.type is not t or out.scale != od.scale or out.zero_point != od.zero_point:
            raise call.fail("the quantized output must have the input's type, scale and zero point")
        lo, hi = quantized_activation_range(code, od)
        return [np.clip(x, lo, hi).astype(out.dtype)]
    raise call.fail(f"input 0 has unsupported type {t.name}")


def rescaled_q4(call: KernelCall) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(centered input, its Q4.27 rescaling, mask of |centered| < radius) for quantized LOGISTIC / TANH.

    input_real_multiplier = input_scale * 2^27 must exceed 1 (`QuantizeMultiplierGreaterThanOne`);
    inputs beyond `CalculateInputRadius` saturate the function and skip the fixed-point evaluation."""
    od = call.in_operands[0]
    real = sigmoid_input_multiplier(od.scale)
    if not real > 1.0:
        raise call.fail(f"input scale {od.scale:g} is too small for the fixed-point evaluation")
    m, left_shift = quantize_multiplier_greater_than_one(real)
    radius = calculate_input_radius(SIGMOID_INPUT_INTEGER_BITS, left_shift)
    centered = call.tensor(0).astype(np.int64) - od.zero_point
    inside = (centered > -radius) & (centered < radius)
    # Values outside the radius are replaced by 0 before rescaling so nothing overflows; they are masked.
    q4 = multiply_by_quantized_multiplier_greater_than_one(np.where(inside, centered, 0), m, left_shift)
    return centered, q4, inside


def fixed_quant_output(call: KernelCall, prescribed: dict[OperandType, tuple[float, int]]) -> tuple[int, int, int]:
    """For quantized LOGISTIC / TANH: the output's (zero point, lowest, highest storage value) after checking
    it has the (scale, zero point) the operation prescribes for the input's type (`prescribed`, from
    nnapi/operations/activations.py)."""
    t = call.type(0)
    if t not in prescribed:
        raise call.fail(f"input 0 has unsupported type {t.name}")
    scale, zero_point = prescribed[t]
    check_fixed_output(call, scale, zero_point)
    lo, hi = qrange(t)
    return zero_point, lo, hi


def check_fixed_output(call: KernelCall, scale: float, zero_point: int) -> None:
    """Rejects a quantized output whose (scale, zero point) is not the fixed one the operation prescribes."""
    out = call.out_operands[0]
    if np.float32(out.scale) != np.float32(scale) or out.zero_point != zero_point:
        raise call.fail(f"the quantized output must have scale {scale:g} and zero point {zero_point}, "
                        f"got {out.scale:g} and {out.zero_point}")
