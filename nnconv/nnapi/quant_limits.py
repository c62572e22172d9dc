"""The fixed-point multipliers NNAPI's reference CPU derives from quantization parameters, and their limits.

The reference implementation turns some real-valued rescaling factors into fixed-point multipliers with
helpers that only accept a range (`QuantizeMultiplierGreaterThanOne`, `QuantizeMultiplierSmallerThanOne`);
parameters outside it make the operation fail whatever the input values, while TFLite's own kernels (which
use a lookup table or the general `QuantizeMultiplier`) run them. This module is the one place each
multiplier is computed: the operation validators (`nnapi/operations`) refuse what prepare would, the
kernels (`runtime/kernels`) quantize the same value, and the lowering rules test the limits at check time
to choose an exact alternative lowering (DEQUANTIZE -> float op -> QUANTIZE) instead.
"""

from __future__ import annotations

import math

import numpy as np

from nnconv.nnapi.quantization import quantize_multiplier

SOFTMAX_SCALED_DIFF_INTEGER_BITS = 5
SIGMOID_INPUT_INTEGER_BITS = 4  # LOGISTIC and TANH evaluate their input in Q4.27
ADD_LEFT_SHIFT = 20  # the reference ADD/SUB scales both inputs up by 2^20 before rescaling them


def _f32(x: float) -> float:
    return float(np.float32(x))


def softmax_input_multiplier(beta: float, input_scale: float) -> float:
    """SOFTMAX's beta * input_scale * 2^26 (capped at 2^31 - 1), which must be greater than 1: the real
    multiplier of the quantized input differences, quantized with QuantizeMultiplierGreaterThanOne."""
    real = _f32(beta) * _f32(input_scale) * (1 << (31 - SOFTMAX_SCALED_DIFF_INTEGER_BITS))
    return min(real, (1 << 31) - 1.0)


def sigmoid_input_multiplier(input_scale: float) -> float:
    """LOGISTIC's and TANH's input_scale * 2^27, which must be greater than 1: the real multiplier moving a
    quantized input to Q4.27."""
    return _f32(input_scale) * float(1 << (31 - SIGMOID_INPUT_INTEGER_BITS))


def calculate_input_radius(input_integer_bits: int, input_left_shift: int, total_signed_bits: int = 31) -> int:
    """`CalculateInputRadius`: the largest |input| whose rescaled value the reference takes as still fitting
    its fixed-point input (beyond it the function's extreme value is returned without evaluating)."""
    max_rescaled = (1.0 * ((1 << input_integer_bits) - 1) * float(1 << (total_signed_bits - input_integer_bits))
                    / float(1 << input_left_shift))
    return int(math.floor(max_rescaled))


def sigmoid_saturation_radius(input_scale: float) -> int:
    """The |q - zero point| from which the reference's quantized LOGISTIC and TANH return their extreme
    output instead of evaluating: `CalculateInputRadius` of the Q4.27 rescaling's left shift. It counts the
    shift only, not the multiplier, so it is small for large scales (1 for scales in (4, 8): sigmoid(4.1) is
    not yet 1) and 0 from scale 8 on (the reference then saturates even q = zero point, whose sigmoid is
    0.5)."""
    _multiplier, left_shift = quantize_multiplier(sigmoid_input_multiplier(input_scale))
    return calculate_input_radius(SIGMOID_INPUT_INTEGER_BITS, left_shift)


def add_output_multiplier(scale1: float, scale2: float, output_scale: float) -> float:
    """2 * max(s1, s2) / (2^20 * s_out): the real multiplier of a quantized ADD / SUB's sum (must be < 1)."""
    twice_max = 2.0 * float(max(np.float32(scale1), np.float32(scale2)))
    return twice_max / float(np.float32((1 << ADD_LEFT_SHIFT) * np.float32(output_scale)))


def mul_output_multiplier(scale1: float, scale2: float, output_scale: float) -> float:
    """Quantized MUL's input1_scale * input2_scale / output_scale (the product rounded to float32 first, as
    the C++ `float * float` stored in a double), which must lie in (0, 1)."""
    product = float(np.float32(np.float32(scale1) * np.float32(scale2)))
    return product / float(np.float32(output_scale))


def hard_swish_output_multiplier(input_scale: float, output_scale: float) -> tuple[int, int]:
    """(Q31 multiplier, exponent) of hires_input_scale / output_scale, hires_input_scale = input_scale / 128
    (computed in float, as the reference does, before QuantizeMultiplier widens it); prepare refuses a
    positive exponent."""
    hires_input_scale = np.float32(1.0 / 128.0) * np.float32(input_scale)
    return quantize_multiplier(float(hires_input_scale / np.float32(output_scale)))
