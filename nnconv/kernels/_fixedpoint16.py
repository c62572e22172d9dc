"""gemmlowp's fixed-point arithmetic on 16-bit raw values (`FixedPoint<int16_t, N>`), vectorized.

The quantized LSTMs (QUANTIZED_16BIT_LSTM, QUANTIZED_LSTM) run their gates through gemmlowp's `logistic`
and `tanh` on int16 values. A value with `n` integer bits is a raw int16 r meaning r / 2^(15 - n).
Differences from the 32-bit functions of `_fixedpoint.py`, all as gemmlowp specializes int16: products are
the int16 SaturatingRoundingDoublingHighMul; constants are the int32 encodings rounding-divided by 2^16;
the last addition of exp's Taylor polynomial saturates; raw additions wrap at 16 bits.
Values are carried in int64 arrays holding int16 values.
"""

from __future__ import annotations

import numpy as np

from nnconv.kernels.common import rounding_divide_by_pot

I16_MIN, I16_MAX = -(1 << 15), (1 << 15) - 1
ONE_Q0 = I16_MAX


def wrap16(x: np.ndarray) -> np.ndarray:
    return ((np.asarray(x, dtype=np.int64) + (1 << 15)) & 0xFFFF) - (1 << 15)


def c16(raw32: int) -> int:
    """A gemmlowp constant given by its int32 encoding, as the int16 encoding (`RescaleConstantInitializer`)."""
    return int(rounding_divide_by_pot(np.int64(raw32), 16))


def mul(a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    """int16 SaturatingRoundingDoublingHighMul: the fixed-point product (integer bits add up)."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    ab = a * b
    nudge = np.where(ab >= 0, 1 << 14, 1 - (1 << 14))
    s = ab + nudge
    q = np.where(s >= 0, s >> 15, -((-s) >> 15))  # C++ division truncates toward zero
    return np.where((a == I16_MIN) & (b == I16_MIN), I16_MAX, q)


def saturating_rounding_multiply_by_pot(x: np.ndarray, exponent: int) -> np.ndarray:
    x = np.asarray(x, dtype=np.int64)
    if exponent == 0:
        return x
    if exponent < 0:
        return rounding_divide_by_pot(x, -exponent)
    threshold = (1 << (15 - exponent)) - 1
    y = np.where(x > threshold, I16_MAX, x << exponent)
    return np.where(x < -threshold, I16_MIN, y)


def rescale(x: np.ndarray, src_integer_bits: int, dst_integer_bits: int) -> np.ndarray:
    return saturating_rounding_multiply_by_pot(x, src_integer_bits - dst_integer_bits)


def saturating_add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.clip(np.asarray(a, dtype=np.int64) + b, I16_MIN, I16_MAX)


def rounding_half_sum(a: np.ndarray, b: int) -> np.ndarray:
    s = np.asarray(a, dtype=np.int64) + b
    t = s + np.where(s >= 0, 1, -1)
    return np.where(t >= 0, t // 2, -((-t) // 2))


def _exp_quarter(a: np.ndarray) -> np.ndarray:
    """exp(a) for a (Q0.15) in [-1/4, 0)."""
    constant_term = c16(1895147668)
    one_third = c16(715827883)
    x = wrap16(a + (1 << 12))  # a + 1/8
    x2 = mul(x, x)
    x3 = mul(x2, x)
    x4 = mul(x2, x2)
    x4_over_4 = saturating_rounding_multiply_by_pot(x4, -2)
    poly = saturating_rounding_multiply_by_pot(wrap16(mul(wrap16(x4_over_4 + x3), one_third) + x2), -1)
    return saturating_add(constant_term, mul(constant_term, wrap16(x + poly)))


_EXP_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535),
               (3, 720401), (4, 242))


def exp_on_negative_values(a: np.ndarray, integer_bits: int) -> np.ndarray:
    """exp(a) as Q0.15 for a <= 0 with `integer_bits` integer bits."""
    a = np.asarray(a, dtype=np.int64)
    frac_bits = 15 - integer_bits
    one_quarter = 1 << (frac_bits - 2)
    mask = one_quarter - 1
    a_mod = wrap16((a & mask) - one_quarter)
    result = _exp_quarter(rescale(a_mod, integer_bits, 0))
    remainder = wrap16(a_mod - a)
    for exponent, multiplier in _EXP_BARREL:
        if integer_bits > exponent:
            shift = frac_bits + exponent
            result = np.where((remainder & (1 << shift)) != 0, mul(result, c16(multiplier)), result)
    if integer_bits > 5:
        clamp = -(1 << (20 - integer_bits))  # -32 in the input format
        result = np.where(a < clamp, 0, result)
    return np.where(a == 0, ONE_Q0, result)


def _newton(a: np.ndarray) -> np.ndarray:
    half_denominator = rounding_half_sum(a, ONE_Q0)
    x = wrap16(c16(1515870810) + mul(half_denominator, c16(-1010580540)))
    one_q2 = 1 << 13
    for _ in range(3):
        hx = mul(half_denominator, x)
        x = wrap16(x + rescale(mul(x, wrap16(one_q2 - hx)), 4, 2))
    return x


def one_over_one_plus_x_for_x_in_0_1(a: np.ndarray) -> np.ndarray:
    return rescale(_newton(a), 1, 0)


def one_minus_x_over_one_plus_x_for_x_in_0_1(a: np.ndarray) -> np.ndarray:
    return rescale(wrap16(_newton(a) - (1 << 13)), 2, 0)


def tanh(a: np.ndarray, integer_bits: int) -> np.ndarray:
    """Q0.15 tanh of raw int16 values with `integer_bits` integer bits."""
    a = np.asarray(a, dtype=np.int64)
    negative = a < 0
    n = np.where(negative, a, wrap16(-a))
    t = one_minus_x_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(n, integer_bits + 1))
    return np.where(a == 0, 0, np.where(negative, wrap16(-t), t))


def logistic(a: np.ndarray, integer_bits: int) -> np.ndarray:
    """Q0.15 logistic of raw int16 values with `integer_bits` integer bits."""
    a = np.asarray(a, dtype=np.int64)
    positive = a > 0
    abs_input = np.where(positive, a, wrap16(-a))
    if_positive = one_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(wrap16(-abs_input), integer_bits))
    if_negative = wrap16(ONE_Q0 - if_positive)
    return np.where(a == 0, 1 << 14, np.where(positive, if_positive, if_negative))
