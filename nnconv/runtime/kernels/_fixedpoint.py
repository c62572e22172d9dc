"""gemmlowp's fixed-point arithmetic and transcendental functions (`FixedPoint<int32_t, N>` and
`FixedPoint<int16_t, N>`), vectorized over int64 arrays holding int32 or int16 raw values.

The quantized LOGISTIC and TANH of the reference CPU evaluate `gemmlowp::logistic` / `gemmlowp::tanh` on a
Q4.27 input; softmax-style kernels need `exp_on_negative_values` and `one_over_one_plus_x_for_x_in_0_1`;
the quantized LSTMs (QUANTIZED_16BIT_LSTM, QUANTIZED_LSTM) run their gates through the int16 forms.
A value with `m` integer bits is a raw r meaning r / 2^(bits - 1 - m). Products are
SaturatingRoundingDoublingHighMul (integer bits add up); `rescale` changes the integer bits with a
saturating / rounding shift. Additions are plain additions that wrap at the raw width, as in gemmlowp.

The int16 specialization differs from the int32 one in three places, all as gemmlowp specializes it: the
constants are the int32 encodings rounding-divided by 2^16 (`RescaleConstantInitializer`), the product is
the int16 SaturatingRoundingDoublingHighMul, and the last addition of exp's Taylor polynomial saturates
(`AddSaturatingIf16Bit`). One `FixedPoint` class holds both; `FP32` and `FP16` are its two instances.

Written from the semantics of gemmlowp `fixedpoint/fixedpoint.h`; the numeric constants are the
fixed-point encodings given there (each is round(value * 2^fractional_bits)).
"""

from __future__ import annotations


import numpy as np

from nnconv.nnapi.quantization import rounding_divide_by_pot, saturating_rounding_doubling_high_mul as _srdhm32

# (exponent, int32 Q0.31 encoding of exp(-2^exponent)) of gemmlowp's barrel shifter.
_EXP_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535),
               (3, 720401), (4, 242))
# int32 encodings of the constants of exp's Taylor polynomial and of the reciprocal's Newton-Raphson start.
_EXP_MINUS_ONE_EIGHTH = 1895147668  # exp(-1/8), Q0.31
_ONE_THIRD = 715827883  # 1/3, Q0.31
_NEWTON_48_OVER_17 = 1515870810  # 48/17, Q2.29
_NEWTON_MINUS_32_OVER_17 = -1010580540  # -32/17, Q2.29


class FixedPoint:
    """gemmlowp fixed-point arithmetic on `bits`-wide raw values (32 or 16)."""

    def __init__(self, bits: int) -> None:
        if bits not in (16, 32):
            raise ValueError(f"gemmlowp fixed point has 16- or 32-bit raw values, not {bits}")
        self.bits = bits
        self.min = -(1 << (bits - 1))
        self.max = (1 << (bits - 1)) - 1
        self.one_q0 = self.max  # "1" with 0 integer bits is the largest raw value

    def wrap(self, x: np.ndarray) -> np.ndarray:
        """Two's-complement wrap-around of int64 values to the raw width."""
        half = 1 << (self.bits - 1)
        return ((np.asarray(x, dtype=np.int64) + half) & ((1 << self.bits) - 1)) - half

    def constant(self, raw32: int) -> int:
        """A gemmlowp constant given by its int32 encoding, in this width (`RescaleConstantInitializer`)."""
        return raw32 if self.bits == 32 else int(rounding_divide_by_pot(np.int64(raw32), 32 - self.bits))

    def mul(self, a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
        """SaturatingRoundingDoublingHighMul: the fixed-point product (integer bits add up)."""
        if self.bits == 32:
            return _srdhm32(a, b)  # the shared (optimized) int32 helper
        a = np.asarray(a, dtype=np.int64)
        b = np.asarray(b, dtype=np.int64)
        ab = a * b
        half = 1 << (self.bits - 2)
        s = ab + np.where(ab >= 0, half, 1 - half)
        shift = self.bits - 1
        q = np.where(s >= 0, s >> shift, -((-s) >> shift))  # C++ division truncates toward zero
        return np.where((a == self.min) & (b == self.min), self.max, q)

    def saturating_rounding_multiply_by_pot(self, x: np.ndarray, exponent: int) -> np.ndarray:
        """x * 2^exponent: a saturating left shift for exponent > 0, a rounding right shift for exponent < 0."""
        x = np.asarray(x, dtype=np.int64)
        if exponent == 0:
            return x
        if exponent < 0:
            return rounding_divide_by_pot(x, -exponent)
        threshold = (1 << (self.bits - 1 - exponent)) - 1
        y = np.where(x > threshold, self.max, x << exponent)
        return np.where(x < -threshold, self.min, y)

    def rescale(self, x: np.ndarray, src_integer_bits: int, dst_integer_bits: int) -> np.ndarray:
        """The same real value with `dst_integer_bits` integer bits instead of `src_integer_bits`."""
        return self.saturating_rounding_multiply_by_pot(x, src_integer_bits - dst_integer_bits)

    def saturating_add(self, a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
        return np.clip(np.asarray(a, dtype=np.int64) + b, self.min, self.max)

    def _exp_quarter(self, a: np.ndarray) -> np.ndarray:
        """exp(a) for a (Q0) in [-1/4, 0): a 4th-order Taylor expansion around -1/8."""
        constant_term = self.constant(_EXP_MINUS_ONE_EIGHTH)
        x = self.wrap(np.asarray(a, dtype=np.int64) + (1 << (self.bits - 4)))  # x = a + 1/8
        x2 = self.mul(x, x)
        x3 = self.mul(x2, x)
        x4 = self.mul(x2, x2)
        x4_over_4 = self.saturating_rounding_multiply_by_pot(x4, -2)
        poly = self.saturating_rounding_multiply_by_pot(
            self.wrap(self.mul(self.wrap(x4_over_4 + x3), self.constant(_ONE_THIRD)) + x2), -1)
        product = self.mul(constant_term, self.wrap(x + poly))
        if self.bits == 16:  # AddSaturatingIf16Bit
            return self.saturating_add(constant_term, product)
        return self.wrap(constant_term + product)

    def exp_on_negative_values(self, a: np.ndarray, integer_bits: int) -> np.ndarray:
        """exp(a) as Q0 for a <= 0 given with `integer_bits` integer bits."""
        a = np.asarray(a, dtype=np.int64)
        frac_bits = self.bits - 1 - integer_bits
        one_quarter = 1 << (frac_bits - 2)
        a_mod_quarter_minus_one_quarter = self.wrap((a & (one_quarter - 1)) - one_quarter)
        result = self._exp_quarter(self.rescale(a_mod_quarter_minus_one_quarter, integer_bits, 0))
        remainder = self.wrap(a_mod_quarter_minus_one_quarter - a)
        for exponent, multiplier in _EXP_BARREL:
            if integer_bits > exponent:
                shift = frac_bits + exponent
                result = np.where((remainder & (1 << shift)) != 0, self.mul(result, self.constant(multiplier)),
                                  result)
        if integer_bits > 5:
            clamp = -(1 << (frac_bits + 5))  # -32 in the input format
            result = np.where(a < clamp, 0, result)
        return np.where(a == 0, self.one_q0, result)

    def _newton_reciprocal_half_denominator(self, a: np.ndarray) -> np.ndarray:
        """x ~ 1 / half_denominator (Q2) by three Newton-Raphson steps, half_denominator = (a + 1) / 2."""
        half_denominator = rounding_half_sum(a, self.one_q0)
        x = self.wrap(self.constant(_NEWTON_48_OVER_17)
                      + self.mul(half_denominator, self.constant(_NEWTON_MINUS_32_OVER_17)))
        one_q2 = 1 << (self.bits - 3)
        for _ in range(3):
            one_minus = self.wrap(one_q2 - self.mul(half_denominator, x))
            x = self.wrap(x + self.rescale(self.mul(x, one_minus), 4, 2))
        return x

    def one_minus_x_over_one_plus_x_for_x_in_0_1(self, a: np.ndarray) -> np.ndarray:
        """(1 - a) / (1 + a) as Q0 for a (Q0) in (0, 1)."""
        x = self._newton_reciprocal_half_denominator(a)
        return self.rescale(self.wrap(x - (1 << (self.bits - 3))), 2, 0)

    def one_over_one_plus_x_for_x_in_0_1(self, a: np.ndarray) -> np.ndarray:
        """1 / (1 + a) as Q0 for a (Q0) in (0, 1)."""
        # ExactMulByPot<-1> turns Q2 into Q1 with the same raw value.
        return self.rescale(self._newton_reciprocal_half_denominator(a), 1, 0)

    def tanh(self, a: np.ndarray, integer_bits: int) -> np.ndarray:
        """gemmlowp `tanh`: Q0 tanh of raw values with `integer_bits` integer bits."""
        a = np.asarray(a, dtype=np.int64)
        negative = a < 0
        n = np.where(negative, a, self.wrap(-a))
        t = self.one_minus_x_over_one_plus_x_for_x_in_0_1(self.exp_on_negative_values(n, integer_bits + 1))
        return np.where(a == 0, 0, np.where(negative, self.wrap(-t), t))

    def logistic(self, a: np.ndarray, integer_bits: int) -> np.ndarray:
        """gemmlowp `logistic`: Q0 logistic of raw values with `integer_bits` integer bits."""
        a = np.asarray(a, dtype=np.int64)
        positive = a > 0
        abs_input = np.where(positive, a, self.wrap(-a))
        if_positive = self.one_over_one_plus_x_for_x_in_0_1(
            self.exp_on_negative_values(self.wrap(-abs_input), integer_bits))
        if_negative = self.wrap(self.one_q0 - if_positive)
        return np.where(a == 0, 1 << (self.bits - 2), np.where(positive, if_positive, if_negative))


FP32 = FixedPoint(32)
FP16 = FixedPoint(16)
I16_MIN, I16_MAX = FP16.min, FP16.max

# The int32 functions under the names the 8-bit kernels use.
wrap32 = FP32.wrap
saturating_rounding_multiply_by_pot = FP32.saturating_rounding_multiply_by_pot
rescale = FP32.rescale
exp_on_negative_values = FP32.exp_on_negative_values
one_over_one_plus_x_for_x_in_0_1 = FP32.one_over_one_plus_x_for_x_in_0_1
fixed_tanh = FP32.tanh
fixed_logistic = FP32.logistic


def rounding_half_sum(a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    """(a + b) / 2 rounded to nearest, halves away from zero (C++ division truncates)."""
    s = np.asarray(a, dtype=np.int64) + np.int64(b)
    t = s + np.where(s >= 0, 1, -1)
    return np.where(t >= 0, t // 2, -((-t) // 2))


def one_over_one_plus_x_int32(a: int) -> int:
    """`one_over_one_plus_x_for_x_in_0_1` of one int32 value in Python integers: the same gemmlowp steps
    (RoundingHalfSum, three Newton-Raphson iterations in Q2, the saturating rescales) without ~150 numpy
    calls on one-element arrays (~200 us: a quantized SOFTMAX over one row of class scores paid it on
    every run). Tested equal to the array version."""
    int_min, int_max = -(1 << 31), (1 << 31) - 1

    def wrap(v: int) -> int:
        return ((v + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)

    def mul(u: int, v: int) -> int:  # SaturatingRoundingDoublingHighMul (see saturating_rounding_doubling_high_mul)
        return int_max if u == v == int_min else (u * v + (1 << 30)) >> 31

    def shift_left(v: int, exponent: int) -> int:  # SaturatingRoundingMultiplyByPOT, exponent > 0
        threshold = (1 << (31 - exponent)) - 1
        return int_max if v > threshold else int_min if v < -threshold else v << exponent

    s = a + int_max  # RoundingHalfSum(a, 1.0): halves away from zero, as C++ truncation after the nudge
    t = s + (1 if s >= 0 else -1)
    half_denominator = t // 2 if t >= 0 else -((-t) // 2)
    x = wrap(_NEWTON_48_OVER_17 + mul(half_denominator, _NEWTON_MINUS_32_OVER_17))
    one_q2 = 1 << 29
    for _ in range(3):
        one_minus = wrap(one_q2 - mul(half_denominator, x))
        x = wrap(x + shift_left(mul(x, one_minus), 2))
    return shift_left(x, 1)


# `one_over_normalized_sum` was compared with the general steps on every value of its domain [0, 2^31) (an
# exhaustive offline check, 7 minutes, session 15: all equal), which also recorded the intermediates: each
# fits int32 (no wrap can act) and each product the Newton step shifts left by 2 stays within 14,861,479 in
# magnitude, far inside the +-(2^29 - 1) beyond which that shift saturates; only the final doubling
# saturates (a = 0: 1 / (1 + 0) is 1.0, INT32_MAX in Q0).


def one_over_normalized_sum(a: np.ndarray) -> np.ndarray:
    """`one_over_one_plus_x_for_x_in_0_1(a)` for int64 arrays of values in [0, 2^31) (a quantized SOFTMAX's
    shifted sum minus one), in place on three int64 arrays: the same integer steps without the wraps and
    saturations that cannot act on this domain (see the note above), ~30 passes instead of ~80
    (4,096 rows: ~400 -> ~100 us). RoundingHalfSum(a, INT32_MAX) is (a + 2^31) >> 1 for a >= 0; each
    SaturatingRoundingDoublingHighMul is (u * v + 2^30) >> 31 (no operand is INT32_MIN)."""
    half_denominator = a + np.int64(1 << 31)
    half_denominator >>= 1
    x = half_denominator * np.int64(_NEWTON_MINUS_32_OVER_17)
    x += np.int64(1 << 30)
    x >>= 31
    x += np.int64(_NEWTON_48_OVER_17)
    t = np.empty_like(x)
    for _ in range(3):
        np.multiply(half_denominator, x, out=t)
        t += np.int64(1 << 30)
        t >>= 31
        np.subtract(np.int64(1 << 29), t, out=t)  # one_minus
        t *= x
        t += np.int64(1 << 30)
        t >>= 31
        t <<= 2
        x += t
    x <<= 1
    np.minimum(x, np.int64((1 << 31) - 1), out=x)  # the saturating doubling: only 1.0 reaches past INT32_MAX
    return x
