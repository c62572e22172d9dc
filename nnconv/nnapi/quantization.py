"""NNAPI's quantization arithmetic, in one place: the storage ranges of the quantized operand types, the
reference integer arithmetic (TFLite's `common.h` / gemmlowp fixed-point primitives that the Android reference
CPU implementation calls, vectorized over int64 numpy arrays), (de)quantization, and every requantization:
accumulators to an output (`requantize_accumulator`, `Requantizer`), stored values from one operand's
(scale, zero point) to another's (`requantize_to`).

The runtime kernels compute with it; the lowering uses the same multipliers where a rule reproduces TFLite's
integer arithmetic with NNAPI operations, so both agree on every rounding by construction.
"""

from __future__ import annotations

import math

import numpy as np

from nnconv.errors import ExecutionError
from nnconv.nnapi.float_requantizer import FloatRequantizer
from nnconv.nnapi.enums import FuseCode, OperandType
from nnconv.nnapi.model import Operand


INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1

QUANT8_TYPES = (OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED)


def qrange(t: OperandType) -> tuple[int, int]:
    """Storage range of a quantized operand type."""
    if t is OperandType.TENSOR_QUANT8_ASYMM:
        return 0, 255
    if t in (OperandType.TENSOR_QUANT8_ASYMM_SIGNED, OperandType.TENSOR_QUANT8_SYMM,
             OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL):
        return -128, 127
    if t is OperandType.TENSOR_QUANT16_SYMM:
        return -32768, 32767
    if t is OperandType.TENSOR_QUANT16_ASYMM:
        return 0, 65535
    if t is OperandType.TENSOR_INT32:
        return INT32_MIN, INT32_MAX
    raise ValueError(f"{t.name} is not an integer type")


def is_quant8(t: OperandType) -> bool:
    return t in QUANT8_TYPES


def round_half_away(x: np.ndarray | float) -> np.ndarray:
    """C's `std::round`: halves away from zero (numpy's `round` rounds halves to even). Exact: `|x| + 0.5`
    would itself round (0.49999997f + 0.5 is 1.0f), while `|x| - floor(|x|)` is always representable."""
    a = np.abs(x)
    f = np.floor(a)
    return np.copysign(f + (a - f >= 0.5), x)


def quantized_activation_range(code: int, out: Operand) -> tuple[int, int]:
    """`CalculateActivationRangeQuantized`: bounds quantized with the output's scale and zero point.

    `quantize(f) = zp + round(f / scale)`, the division in float32, round half away from zero.
    """
    lo, hi = qrange(out.type)
    scale = np.float32(out.scale)
    zp = out.zero_point

    def q(f: float) -> int:
        return zp + int(round_half_away(np.float32(f) / scale))

    if code == FuseCode.NONE:
        return lo, hi
    if code == FuseCode.RELU:
        return max(lo, q(0.0)), hi
    if code == FuseCode.RELU6:
        return max(lo, q(0.0)), min(hi, q(6.0))
    if code == FuseCode.RELU1:
        return max(lo, q(-1.0)), min(hi, q(1.0))
    raise ExecutionError(f"invalid fused activation code {code}")


def quantize_multiplier(m: float) -> tuple[int, int]:
    """`QuantizeMultiplier`: m = q * 2^shift with q in [0.5, 1) as a Q31 int; returns (q_fixed, shift)."""
    if m == 0.0:
        return 0, 0
    if not math.isfinite(m):  # a zero or absurd scale in a hand-made .nnapi file: the op cannot run
        raise ExecutionError(f"requantization multiplier {m} is not finite (an operand scale of 0?)")
    q, shift = math.frexp(m)
    q_fixed = int(round_half_away(q * (1 << 31)))
    if q_fixed == (1 << 31):
        q_fixed //= 2
        shift += 1
    if shift < -31:
        shift = 0
        q_fixed = 0
    return q_fixed, shift


def quantize_multiplier_smaller_than_one_exp(m: float) -> tuple[int, int]:
    """(multiplier, left_shift <= 0) for 0 < m < 1."""
    if not 0.0 < m < 1.0:
        raise ExecutionError(f"multiplier {m} is not in (0, 1)")
    return quantize_multiplier(m)


def quantize_multiplier_greater_than_one(m: float) -> tuple[int, int]:
    """(multiplier, left_shift >= 0) for m > 1."""
    if not m > 1.0:
        raise ExecutionError(f"multiplier {m} is not greater than 1")
    return quantize_multiplier(m)


def _inplace(a: np.ndarray | np.integer) -> bool:
    """True when `a` is a freshly computed array that in-place ufuncs may overwrite (0-d results are scalars)."""
    return isinstance(a, np.ndarray) and a.ndim > 0


def saturating_rounding_doubling_high_mul(a: np.ndarray, b: int | np.ndarray) -> np.ndarray:
    """gemmlowp `SaturatingRoundingDoublingHighMul` on int64 arrays holding int32 values.

    The reference adds a nudge of 2^30 (ab >= 0) or 1 - 2^30 (ab < 0) and divides by 2^31 truncating toward
    zero. For ab < 0 that sum is negative and truncation is `(s + 2^31 - 1) >> 31`, which simplifies to the
    same `(ab + 2^30) >> 31` as the non-negative case: one add and one arithmetic shift for every ab."""
    a = np.asarray(a, dtype=np.int64)
    b64 = np.asarray(b, dtype=np.int64)
    ab = np.multiply(a, b64)
    if _inplace(ab):
        ab += np.int64(1 << 30)
        ab >>= np.int64(31)
        res = ab
    else:
        res = (ab + np.int64(1 << 30)) >> np.int64(31)
    if b64.size and b64.min() == INT32_MIN:  # the only overflow, INT32_MIN * INT32_MIN, saturates
        res = np.where((a == INT32_MIN) & (b64 == INT32_MIN), np.int64(INT32_MAX), res)
    return res


def _rounding_divide_by_pot_masked(x: np.ndarray, e: np.ndarray) -> np.ndarray:
    """The reference's own mask/threshold formulation, for exponents the shift form does not cover."""
    mask = (np.int64(1) << e) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> e) + (remainder > threshold)


def rounding_divide_by_pot(x: np.ndarray, exponent: int | np.ndarray) -> np.ndarray:
    """gemmlowp `RoundingDivideByPOT`: x / 2^exponent rounded to nearest, ties away from zero.

    The reference compares the remainder `x & mask` with `(mask >> 1) + (x < 0)`; equivalently (e >= 1)
    `(x + 2^(e-1) - 1 + (x >= 0)) >> e`: floor division after a nudge of 2^(e-1) for x >= 0 and
    2^(e-1) - 1 for x < 0. With e = 0 both nudges are 0 (`mask >> 1` is 0 and the `x >= 0` term is masked)."""
    x = np.asarray(x, dtype=np.int64)
    e = np.asarray(exponent, dtype=np.int64)
    if e.size == 0 or e.min() < 0 or e.max() > 62:
        return _rounding_divide_by_pot_masked(x, e)
    if e.ndim == 0:
        ei = int(e)
        if ei == 0:
            return x.copy() if isinstance(x, np.ndarray) else x
        r = x + np.int64((1 << (ei - 1)) - 1)
        if _inplace(r):
            r += x >= 0
            r >>= np.int64(ei)
            return r
        return (r + (x >= 0)) >> np.int64(ei)
    r = x + (((np.int64(1) << e) - 1) >> 1)
    pos = (x >= 0) if e.min() > 0 else (x >= 0) & (e > 0)
    if _inplace(r) and r.shape == np.broadcast_shapes(r.shape, pos.shape, e.shape):
        r += pos
        r >>= e
        return r
    return (r + pos) >> e


def multiply_by_quantized_multiplier(x: np.ndarray, multiplier: int | np.ndarray,
                                     shift: int | np.ndarray) -> np.ndarray:
    """TFLite `MultiplyByQuantizedMultiplier` (double rounding): x * multiplier * 2^shift."""
    shift = np.asarray(shift, dtype=np.int64)
    left = np.maximum(shift, 0)
    right = np.maximum(-shift, 0)
    x = np.asarray(x, dtype=np.int64)
    if left.any():
        x = x * (np.int64(1) << left)
    # Saturate to int32 like the C++ int32 arithmetic would wrap; real inputs never reach this.
    x = np.clip(x, INT32_MIN, INT32_MAX)
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(x, multiplier), right)


def multiply_by_quantized_multiplier_single_rounding(x: np.ndarray, multiplier: int | np.ndarray,
                                                     shift: int | np.ndarray) -> np.ndarray:
    """TFLite's single-rounding `MultiplyByQuantizedMultiplier` (its FULLY_CONNECTED kernels):
    (x * multiplier + 2^(30 - shift)) >> (31 - shift), one rounding half up."""
    total = 31 - np.asarray(shift, dtype=np.int64)
    x = np.asarray(x, dtype=np.int64)
    return (x * np.asarray(multiplier, dtype=np.int64) + (np.int64(1) << (total - 1))) >> total


def multiply_by_quantized_multiplier_smaller_than_one_exp(x: np.ndarray, multiplier: int,
                                                          left_shift: int) -> np.ndarray:
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(x, multiplier), -left_shift)


def multiply_by_quantized_multiplier_greater_than_one(x: np.ndarray, multiplier: int,
                                                      left_shift: int) -> np.ndarray:
    x = np.asarray(x, dtype=np.int64) * (np.int64(1) << np.int64(left_shift))
    return saturating_rounding_doubling_high_mul(np.clip(x, INT32_MIN, INT32_MAX), multiplier)


def dequantize(q: np.ndarray, operand: Operand) -> np.ndarray:
    """Real values of a quantized array, in float32 (`scale * (q - zp)`)."""
    if operand.type is OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL and operand.channel_quant is not None:
        cq = operand.channel_quant
        shape = [1] * q.ndim
        shape[cq.channel_dim] = -1
        scales = np.asarray(cq.scales, dtype=np.float32).reshape(shape)
        return q.astype(np.float32) * scales
    return (np.float32(operand.scale) * (q.astype(np.int32) - operand.zero_point)).astype(np.float32)


def quantize(x: np.ndarray, operand: Operand) -> np.ndarray:
    """`clamp(zp + round(x / scale))` in float32 with halves away from zero, as the reference QUANTIZE (and
    quantized RSQRT, whose formula Elementwise.cpp shares with Quantize.cpp).

    The clamp is the reference's std::max<float>(lo, std::min<float>(hi, v)): std::min returns its first
    argument when the comparison with NaN is false, so a NaN input gives the type's maximum, as TFLite's
    QUANTIZE does too. np.fmin(v, hi) is that (it returns the operand that is not NaN); np.clip would carry
    the NaN into a cast whose result numpy leaves undefined (0 on x86)."""
    lo, hi = qrange(operand.type)
    q = round_half_away(np.asarray(x, dtype=np.float32) / np.float32(operand.scale)) + operand.zero_point
    return np.maximum(np.fmin(q, hi), lo).astype(operand.dtype)


def max_abs_offset(t: OperandType, zero_point: int) -> int:
    """The largest |q - zero_point| a quantized operand of type `t` can hold."""
    lo, hi = qrange(t)
    return max(zero_point - lo, hi - zero_point)


def conv_multipliers(in_scale: float, filter_scales: np.ndarray, out_scale: float,
                     float32_product: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Per-output-channel (multiplier, shift) of a quantized convolution, as `GetQuantizedConvolutionMultipler`:
    the input*filter product is rounded to float32 before the division in double. Vectorized
    `quantize_multiplier` (np.frexp equals math.frexp; q * 2^31 is exact in double).

    TFLite (`PopulateConvolutionQuantizationParams`) forms the whole product in double instead
    (`float32_product=False`): the two multipliers differ by up to a float32 rounding (~6e-8 relative,
    hundreds of units of the 31-bit multiplier), which moves an accumulator across a rounding tie now and
    then: 1 LSB on a few outputs per layer, up to ~10 LSB after ResNet50's 54 convolutions."""
    fs = np.atleast_1d(np.asarray(filter_scales, dtype=np.float32))
    if float32_product:
        real = (np.float32(in_scale) * fs).astype(np.float64) / float(np.float32(out_scale))
    else:
        real = float(np.float32(in_scale)) * fs.astype(np.float64) / float(np.float32(out_scale))
    if not np.isfinite(real).all():
        pairs = [quantize_multiplier(float(r)) for r in real]  # raises like the scalar path
        return np.asarray([m for m, _ in pairs], dtype=np.int64), np.asarray([e for _, e in pairs], dtype=np.int64)
    q, shift = np.frexp(real)
    q_fixed = round_half_away(q * float(1 << 31)).astype(np.int64)
    shift = shift.astype(np.int64)
    carry = q_fixed == (1 << 31)
    q_fixed[carry] //= 2
    shift[carry] += 1
    tiny = shift < -31
    q_fixed[tiny] = 0
    shift[tiny] = 0
    return q_fixed, shift


def wrap_int32(x: np.ndarray) -> np.ndarray:
    """Integer values modulo 2^32 in [-2^31, 2^31) (int64): C's int32 wrap-around of an exact sum."""
    x = np.asarray(x, dtype=np.int64)
    return ((x - INT32_MIN) & np.int64(0xFFFFFFFF)) + INT32_MIN


def requantize_accumulator(acc: np.ndarray, multipliers: np.ndarray, shifts: np.ndarray, out: Operand,
                           activation: int, single_rounding: bool = False) -> np.ndarray:
    """int32 accumulators -> output storage: MBQM per channel (last axis), + zero point, activation clamp
    (`single_rounding`: TFLite's FULLY_CONNECTED rounding, for `verify`).

    `acc` holds the exact sum (products + bias, as int64); the reference kernels (TFLite's and Android's
    alike) add products and bias in an int32 accumulator, whose overflow wraps (two's complement), so the
    sum is taken modulo 2^32 here first. It overflows only where the bias nears the int32 limits: an input
    scale so small (1.5e-8, a classifier on random weights) that the quantizer's int32 bias saturates."""
    mbqm = multiply_by_quantized_multiplier_single_rounding if single_rounding else multiply_by_quantized_multiplier
    y = mbqm(wrap_int32(acc), multipliers, shifts) + out.zero_point
    lo, hi = quantized_activation_range(activation, out)
    return np.clip(y, lo, hi).astype(out.dtype)


# Rows of int64 work per requantization block: about half of a typical L2 cache.
REQUANTIZE_BLOCK_BYTES = 1 << 19


class Requantizer:
    """`requantize_accumulator(acc + bias, multipliers, shifts, out, activation)` with its per-channel
    constants computed once (kernels keep it in `KernelCall.memo`), for accumulators (bias excluded) with
    |acc| <= `acc_bound` per output channel (last axis).

    With x = acc + b, M' = M << left and e = right shift, the reference's double rounding
    RDBPOT(SRDHM(x << left, M), e) + zp equals ONE floor division by 2^(31+e):
        floor((acc*M' + K) / 2^(31+e)),  K = b*M' + 2^30 + 2^(30+e)*[e > 0] + zp*2^(31+e),
    minus 2^31 in the numerator where SRDHM's result is negative (e > 0 only): nested floor divisions by
    integers merge, SRDHM is `floor((x*M + 2^30) / 2^31)` (see `saturating_rounding_doubling_high_mul`) and
    RDBPOT adds 2^(e-1) (x >= 0) or 2^(e-1) - 1 (x < 0) before flooring (see `rounding_divide_by_pot`).
    `build` declines (returns None) unless the bound proves the rewrite exact: x << left stays inside int32
    (so the reference's clamp never fires and SRDHM cannot saturate), M >= 0, e <= 31, and the int64
    numerator cannot overflow. Per element that is one multiply, one add, one shift and one clamp into the
    output dtype (plus four cheap passes for the negative-SRDHM correction when the activation can pass
    values below the zero point), instead of a dozen int64 temporaries. Where float64 provably gives the
    same integers (`FloatRequantizer`: an a-priori error bound, else a check of every output step against
    the reference), the same formula runs in float64 instead: cheaper passes, no int64 cast."""

    def __init__(self, mult: np.ndarray, offset: np.ndarray, threshold: np.ndarray | None, shift: np.ndarray,
                 lo: int, hi: int, dtype: np.dtype, fast: FloatRequantizer | None = None) -> None:
        self.mult, self.offset, self.threshold, self.shift = mult, offset, threshold, shift
        self.lo, self.hi, self.dtype = lo, hi, dtype
        self.fast = fast  # the same arithmetic in float64 where it is provably exact (`FloatRequantizer`)

    @classmethod
    def build(cls, multipliers: np.ndarray, shifts: np.ndarray, bias: np.ndarray | None, out: Operand,
              activation: int, acc_bound: np.ndarray, single_rounding: bool = False) -> "Requantizer | None":
        """`single_rounding`: TFLite's floor((x*M' + 2^(30+e)) / 2^(31+e)) + zp instead (K without the
        SRDHM's 2^30, no correction), for `verify`'s TFLite-arithmetic run."""
        n = max(np.size(multipliers), np.size(shifts), np.size(acc_bound), 1 if bias is None else np.size(bias))
        ms = np.broadcast_to(np.asarray(multipliers, dtype=np.int64), (n,)).tolist()
        ss = np.broadcast_to(np.asarray(shifts, dtype=np.int64), (n,)).tolist()
        bs = [0] * n if bias is None else np.broadcast_to(np.asarray(bias, dtype=np.int64), (n,)).tolist()
        bounds = np.broadcast_to(np.asarray(acc_bound, dtype=np.int64), (n,)).tolist()
        zp = int(out.zero_point)
        mult, offset, threshold, shift, rights = [], [], [], [], []
        corrected = False  # any channel with a right shift, hence a negative-SRDHM correction
        for m, s, b, bound in zip(ms, ss, bs, bounds):
            left, right = max(s, 0), max(-s, 0)
            if m < 0 or right > 31 or ((bound + abs(b)) << left) > INT32_MAX:
                return None
            mp = m << left
            rounding = (1 << (30 + right)) if single_rounding else (1 << 30) + ((1 << (30 + right)) if right else 0)
            k = b * mp + rounding + zp * (1 << (31 + right))
            # Without a right shift there is no correction: a threshold below every reachable numerator.
            thr = k - b * mp - (1 << 30) if right else -(bound * mp + abs(k) + 1)
            # |numerator| and |numerator - threshold| (the correction's sign test) must fit int64
            if bound * mp + abs(k) + abs(thr) + (1 << 31) >= 1 << 63:
                return None
            mult.append(mp)
            offset.append(k)
            threshold.append(thr)
            corrected = corrected or (right > 0 and not single_rounding)
            shift.append(31 + right)
            rights.append(right)
        lo, hi = quantized_activation_range(activation, out)
        thr = np.asarray(threshold, dtype=np.int64)
        sh = np.asarray(shift, dtype=np.int64)
        # The correction only lowers results whose SRDHM value is negative, which land at or below the zero
        # point with or without it; when the activation's lower bound is >= the zero point (RELU, RELU6)
        # the clamp maps both to the bound, so the correction cannot change an output and is skipped.
        skip = not corrected or lo >= zp
        bias64 = 0 if bias is None else np.asarray(bias, dtype=np.int64)

        def reference(acc: np.ndarray) -> np.ndarray:
            return requantize_accumulator(acc + bias64, multipliers, shifts, out, activation, single_rounding)

        fast = FloatRequantizer.build(mult, rights, bs, bounds, zp, lo, hi, out.dtype, not skip, reference,
                                      single_rounding)
        return cls(np.asarray(mult, dtype=np.int64), np.asarray(offset, dtype=np.int64), None if skip else thr,
                   np.int64(sh[0]) if (sh == sh[0]).all() else sh, lo, hi, out.dtype, fast)

    def __call__(self, acc: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Output storage values of integer-valued accumulators (int32/int64, or float holding exact ints),
        written into `out` when given (same shape, the output dtype).

        Large accumulators go through in blocks of rows sized to stay in the CPU cache: the int64 steps
        then make one pass over memory in total instead of one per step (5x faster on a 112x112x96 map)."""
        y = np.empty(acc.shape, dtype=self.dtype) if out is None else out
        channels = acc.shape[-1] if acc.ndim else 1
        rows = acc.size // max(channels, 1)
        if (self.fast is not None and acc.ndim and channels == self.mult.shape[0]
                and (y.ndim == 2 or y.flags.c_contiguous)):
            self.fast(acc.reshape(rows, channels), y.reshape(rows, channels))
            return y
        block = max(1, REQUANTIZE_BLOCK_BYTES // (8 * max(channels, 1)))
        if rows <= block:
            self._block(acc.reshape(rows, channels), y.reshape(rows, channels), None)
            return y
        a2, y2 = acc.reshape(rows, channels), y.reshape(rows, channels)
        scratch = np.empty((block, channels), dtype=np.int64)
        for r0 in range(0, rows, block):
            self._block(a2[r0:r0 + block], y2[r0:r0 + block], scratch)
        return y

    def _block(self, acc: np.ndarray, y: np.ndarray, scratch: np.ndarray | None) -> None:
        # float accumulators hold exact integers with |acc| <= bound < 2^31 (checked in build): the cast
        # to int64 is exact
        t = acc.astype(np.int64) if scratch is None else scratch[:acc.shape[0]]
        if scratch is not None:
            np.copyto(t, acc, casting="unsafe")
        t *= self.mult
        t += self.offset
        if self.threshold is not None:
            # numerator - 2^31 where t < threshold: (t - threshold) >> 63 is -1 exactly there (no overflow:
            # `build` bounds |t - threshold| below 2^63), and -1 & -2^31 == -2^31. Cheaper than a masked subtract.
            corr = t - self.threshold
            corr >>= np.int64(63)
            corr &= np.int64(-(1 << 31))
            t += corr
        t >>= self.shift
        np.clip(t, self.lo, self.hi, out=y, casting="unsafe")


def requantize_to(q: np.ndarray, src: Operand, dst: Operand) -> np.ndarray:
    """Moves quant8 storage values from `src`'s (scale, zero point) to `dst`'s the way the reference
    CONCATENATION does (in float: `round(q*s - zp_in*s) + zp_out` with `s = s_in * (1/s_out)`, clamped).
    Values pass through unchanged when both operands share their parameters or are not quantized."""
    if not (is_quant8(src.type) and is_quant8(dst.type)):
        return q.astype(dst.dtype) if q.dtype != dst.dtype else q
    if src.scale == dst.scale and src.zero_point == dst.zero_point and src.type is dst.type:
        return q
    s = np.float32(src.scale) * (np.float32(1.0) / np.float32(dst.scale))
    v = q.astype(np.float32) * s - np.float32(src.zero_point) * s
    lo, hi = qrange(dst.type)
    return np.clip(round_half_away(v) + dst.zero_point, lo, hi).astype(dst.dtype)
