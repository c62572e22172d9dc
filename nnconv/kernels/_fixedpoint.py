"""gemmlowp's 32-bit fixed-point transcendental functions, vectorized over int64 arrays holding int32 values.

The quantized LOGISTIC and TANH of the reference CPU evaluate `gemmlowp::logistic` / `gemmlowp::tanh` on a
Q4.27 input; softmax-style kernels need `exp_on_negative_values` and `one_over_one_plus_x_for_x_in_0_1`.
A value with `m` integer bits is a raw int32 r meaning r / 2^(31 - m). Products are
SaturatingRoundingDoublingHighMul (integer bits add up); `rescale` changes the integer bits with a
saturating / rounding shift. Additions are plain int32 additions (wrap-around), as in gemmlowp.

Written from the semantics of gemmlowp `fixedpoint/fixedpoint.h`; the numeric constants are the
fixed-point encodings given there (each is round(value * 2^fractional_bits)).
"""

from __future__ import annotations

import math

import numpy as np

from nnconv.kernels.common import INT32_MAX, INT32_MIN, rounding_divide_by_pot
from nnconv.kernels.common import saturating_rounding_doubling_high_mul as srdhm

ONE_Q0 = INT32_MAX  # "1" with 0 integer bits is the largest raw value
ONE_Q2 = 1 << 29


def wrap32(x: np.ndarray) -> np.ndarray:
    """Two's-complement int32 wrap-around of int64 values."""
    return ((np.asarray(x, dtype=np.int64) + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def saturating_rounding_multiply_by_pot(x: np.ndarray, exponent: int) -> np.ndarray:
    """x * 2^exponent: a saturating left shift for exponent > 0, a rounding right shift for exponent < 0."""
    x = np.asarray(x, dtype=np.int64)
    if exponent == 0:
        return x
    if exponent < 0:
        return rounding_divide_by_pot(x, -exponent)
    threshold = (1 << (31 - exponent)) - 1
    y = x << exponent
    y = np.where(x > threshold, INT32_MAX, y)
    return np.where(x < -threshold, INT32_MIN, y)


def rescale(x: np.ndarray, src_integer_bits: int, dst_integer_bits: int) -> np.ndarray:
    return saturating_rounding_multiply_by_pot(x, src_integer_bits - dst_integer_bits)


def rounding_half_sum(a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    """(a + b) / 2 rounded to nearest, halves away from zero (C++ division truncates)."""
    s = np.asarray(a, dtype=np.int64) + np.int64(b)
    t = s + np.where(s >= 0, 1, -1)
    return np.where(t >= 0, t // 2, -((-t) // 2))


def calculate_input_radius(input_integer_bits: int, input_left_shift: int, total_signed_bits: int = 31) -> int:
    """`CalculateInputRadius`: the largest |input| whose rescaled value still fits the fixed-point input."""
    max_rescaled = (1.0 * ((1 << input_integer_bits) - 1) * float(1 << (total_signed_bits - input_integer_bits))
                    / float(1 << input_left_shift))
    return int(math.floor(max_rescaled))


def exp_on_interval_between_negative_one_quarter_and_0_excl(a: np.ndarray) -> np.ndarray:
    """exp(a) for a (Q0.31) in [-1/4, 0): a 4th-order Taylor expansion around -1/8."""
    constant_term = 1895147668  # exp(-1/8)
    constant_1_over_3 = 715827883
    x = wrap32(np.asarray(a, dtype=np.int64) + (1 << 28))  # x = a + 1/8
    x2 = srdhm(x, x)
    x3 = srdhm(x2, x)
    x4 = srdhm(x2, x2)
    x4_over_4 = saturating_rounding_multiply_by_pot(x4, -2)
    poly = saturating_rounding_multiply_by_pot(wrap32(srdhm(wrap32(x4_over_4 + x3), constant_1_over_3) + x2), -1)
    return wrap32(constant_term + srdhm(constant_term, wrap32(x + poly)))


# (exponent, Q0.31 encoding of exp(-2^exponent)) of gemmlowp's barrel shifter.
_EXP_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535),
               (3, 720401), (4, 242))


def exp_on_negative_values(a: np.ndarray, integer_bits: int) -> np.ndarray:
    """exp(a) as Q0.31 for a <= 0 given with `integer_bits` integer bits."""
    a = np.asarray(a, dtype=np.int64)
    frac_bits = 31 - integer_bits
    one_quarter = 1 << (frac_bits - 2)
    mask = one_quarter - 1
    a_mod_quarter_minus_one_quarter = wrap32((a & mask) - one_quarter)
    result = exp_on_interval_between_negative_one_quarter_and_0_excl(
        rescale(a_mod_quarter_minus_one_quarter, integer_bits, 0))
    remainder = wrap32(a_mod_quarter_minus_one_quarter - a)
    for exponent, multiplier in _EXP_BARREL:
        if integer_bits > exponent:
            shift = frac_bits + exponent
            result = np.where((remainder & (1 << shift)) != 0, srdhm(result, multiplier), result)
    if integer_bits > 5:
        clamp = -(1 << (36 - integer_bits))  # -32 in the input format
        result = np.where(a < clamp, 0, result)
    return np.where(a == 0, ONE_Q0, result)


def _newton_reciprocal_half_denominator(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """x ~ 1 / half_denominator (Q2.29) by three Newton-Raphson steps, half_denominator = (a + 1) / 2."""
    half_denominator = rounding_half_sum(a, ONE_Q0)
    x = wrap32(1515870810 + srdhm(half_denominator, -1010580540))  # 48/17 - 32/17 * d
    for _ in range(3):
        half_denominator_times_x = srdhm(half_denominator, x)
        one_minus = wrap32(ONE_Q2 - half_denominator_times_x)
        x = wrap32(x + rescale(srdhm(x, one_minus), 4, 2))
    return half_denominator, x


def one_minus_x_over_one_plus_x_for_x_in_0_1(a: np.ndarray) -> np.ndarray:
    """(1 - a) / (1 + a) as Q0.31 for a (Q0.31) in (0, 1)."""
    _, x = _newton_reciprocal_half_denominator(a)
    return rescale(wrap32(x - ONE_Q2), 2, 0)


def one_over_one_plus_x_for_x_in_0_1(a: np.ndarray) -> np.ndarray:
    """1 / (1 + a) as Q0.31 for a (Q0.31) in (0, 1)."""
    _, x = _newton_reciprocal_half_denominator(a)
    return rescale(x, 1, 0)  # ExactMulByPot<-1> turns Q2 into Q1 with the same raw value


def fixed_tanh(a: np.ndarray, integer_bits: int) -> np.ndarray:
    """gemmlowp `tanh`: Q0.31 tanh of a raw value with `integer_bits` integer bits."""
    a = np.asarray(a, dtype=np.int64)
    negative = a < 0
    n = np.where(negative, a, wrap32(-a))
    t = one_minus_x_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(n, integer_bits + 1))
    return np.where(a == 0, 0, np.where(negative, wrap32(-t), t))


def fixed_logistic(a: np.ndarray, integer_bits: int) -> np.ndarray:
    """gemmlowp `logistic`: Q0.31 logistic of a raw value with `integer_bits` integer bits."""
    a = np.asarray(a, dtype=np.int64)
    positive = a > 0
    abs_input = np.where(positive, a, wrap32(-a))
    if_positive = one_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(wrap32(-abs_input), integer_bits))
    if_negative = wrap32(ONE_Q0 - if_positive)
    return np.where(a == 0, 1 << 30, np.where(positive, if_positive, if_negative))
