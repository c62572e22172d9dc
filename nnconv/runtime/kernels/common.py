"""Helpers shared by kernels: fused activations, padding, and the reference integer arithmetic.

The integer helpers reproduce TFLite's `common.h` / gemmlowp fixed-point primitives that the Android
reference CPU implementation calls, vectorized over int64 numpy arrays.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Callable

import numpy as np

from nnconv.errors import ExecutionError
from nnconv.nnapi.enums import FuseCode, OperandType, PaddingCode
from nnconv.nnapi.model import Operand

if TYPE_CHECKING:
    from nnconv.runtime.kernels.registry import KernelCall

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1

QUANT8_TYPES = (OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED)


# -- dtype ranges -----------------------------------------------------------------------------------
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


# -- fused activations ------------------------------------------------------------------------------
def float_activation_range(code: int) -> tuple[float, float]:
    if code == FuseCode.NONE:
        return -np.inf, np.inf
    if code == FuseCode.RELU:
        return 0.0, np.inf
    if code == FuseCode.RELU1:
        return -1.0, 1.0
    if code == FuseCode.RELU6:
        return 0.0, 6.0
    raise ExecutionError(f"invalid fused activation code {code}")


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


def apply_float_activation(x: np.ndarray, code: int) -> np.ndarray:
    lo, hi = float_activation_range(code)
    if code == FuseCode.NONE:
        return x
    return np.clip(x, lo, hi, out=x if x.flags.writeable else None)


def add_bias_and_activate(dest: np.ndarray, bias: np.ndarray | None, code: int) -> None:
    """The float epilogue of a convolution block, in place: + bias (per output channel), then the fused
    activation's clamp."""
    if bias is not None:
        dest += bias
    apply_float_activation(dest, code)


# -- rounding ---------------------------------------------------------------------------------------
def round_half_away(x: np.ndarray | float) -> np.ndarray:
    """C's `std::round`: halves away from zero (numpy's `round` rounds halves to even). Exact: `|x| + 0.5`
    would itself round (0.49999997f + 0.5 is 1.0f), while `|x| - floor(|x|)` is always representable."""
    a = np.abs(x)
    f = np.floor(a)
    return np.copysign(f + (a - f >= 0.5), x)


# -- padding ----------------------------------------------------------------------------------------
def implicit_padding(in_size: int, stride: int, filter_size: int, dilation: int, scheme: int) -> tuple[int, int]:
    """(head, tail) padding of one spatial axis for an implicit padding scheme.

    SAME: out = ceil(in / stride); the total padding is split with the smaller half first.
    """
    if scheme == PaddingCode.VALID:
        return 0, 0
    if scheme != PaddingCode.SAME:
        raise ExecutionError(f"invalid padding scheme {scheme}")
    eff = (filter_size - 1) * dilation + 1
    out = (in_size + stride - 1) // stride
    need = max((out - 1) * stride + eff - in_size, 0)
    return need // 2, need - need // 2


def conv_output_size(in_size: int, filter_size: int, stride: int, dilation: int, head: int, tail: int) -> int:
    eff = (filter_size - 1) * dilation + 1
    return (in_size - eff + stride + head + tail) // stride


# -- reference integer arithmetic -------------------------------------------------------------------
def quantize_multiplier(m: float) -> tuple[int, int]:
    """`QuantizeMultiplier`: m = q * 2^shift with q in [0.5, 1) as a Q31 int; returns (q_fixed, shift)."""
    if m == 0.0:
        return 0, 0
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


def multiply_by_quantized_multiplier_smaller_than_one_exp(x: np.ndarray, multiplier: int,
                                                          left_shift: int) -> np.ndarray:
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(x, multiplier), -left_shift)


def multiply_by_quantized_multiplier_greater_than_one(x: np.ndarray, multiplier: int,
                                                      left_shift: int) -> np.ndarray:
    x = np.asarray(x, dtype=np.int64) * (np.int64(1) << np.int64(left_shift))
    return saturating_rounding_doubling_high_mul(np.clip(x, INT32_MIN, INT32_MAX), multiplier)


# -- (de)quantization -------------------------------------------------------------------------------
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
    """`clamp(zp + round(x / scale))` in float32 with halves away from zero, as the reference QUANTIZE."""
    lo, hi = qrange(operand.type)
    q = round_half_away(np.asarray(x, dtype=np.float32) / np.float32(operand.scale)) + operand.zero_point
    return np.clip(q, lo, hi).astype(operand.dtype)


def float_compute_dtype(t: OperandType) -> type:
    """Float kernels compute float16 operands in float32 and cast back, like the reference CPU."""
    return np.float32


# -- convolution helpers ----------------------------------------------------------------------------
def extract_patches(x: np.ndarray, kh: int, kw: int, stride_h: int, stride_w: int, dil_h: int, dil_w: int,
                    out_h: int, out_w: int) -> np.ndarray:
    """A zero-copy [N, OH, OW, KH, KW, C] view of the (already padded) NHWC input: the im2col windows."""
    n, _h, _w, c = x.shape
    s = x.strides
    return np.lib.stride_tricks.as_strided(
        x, shape=(n, out_h, out_w, kh, kw, c),
        strides=(s[0], s[1] * stride_h, s[2] * stride_w, s[1] * dil_h, s[2] * dil_w, s[3]),
        writeable=False)


def pad_spatial(x: np.ndarray, top: int, bottom: int, left: int, right: int, value: float | int = 0) -> np.ndarray:
    """Pads H and W of an NHWC array (negative amounts crop). Writes the interior once and only the border
    strips with `value` (np.pad costs a Python-level setup of ~50 us per call and fills everything)."""
    if top == bottom == left == right == 0:
        return x
    x = x[:, max(-top, 0): x.shape[1] - max(-bottom, 0), max(-left, 0): x.shape[2] - max(-right, 0), :]
    t, b, l, r = max(top, 0), max(bottom, 0), max(left, 0), max(right, 0)
    n, h, w, c = x.shape
    out = np.empty((n, h + t + b, w + l + r, c), dtype=x.dtype)
    out[:, :t] = value
    out[:, t + h:] = value
    out[:, t:t + h, :l] = value
    out[:, t:t + h, l + w:] = value
    out[:, t:t + h, l:l + w] = x
    return out


def max_abs_offset(t: OperandType, zero_point: int) -> int:
    """The largest |q - zero_point| a quantized operand of type `t` can hold."""
    lo, hi = qrange(t)
    return max(zero_point - lo, hi - zero_point)


def exact_matmul_dtype(bound: int | np.integer) -> type:
    """The float dtype whose BLAS products are exact for an integer matmul whose every output satisfies
    sum_k |a_k * b_k| <= bound: each product and every partial sum (in any summation order, with or without
    FMA) is then an integer of magnitude <= bound, exactly representable below 2^24 (float32, twice the
    speed of float64) or 2^53 (float64)."""
    return np.float32 if bound < (1 << 24) else np.float64


def conv_multipliers(in_scale: float, filter_scales: np.ndarray, out_scale: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-output-channel (multiplier, shift) of a quantized convolution, as `GetQuantizedConvolutionMultipler`:
    the input*filter product is rounded to float32 before the division in double. Vectorized
    `quantize_multiplier` (np.frexp equals math.frexp; q * 2^31 is exact in double)."""
    fs = np.atleast_1d(np.asarray(filter_scales, dtype=np.float32))
    real = (np.float32(in_scale) * fs).astype(np.float64) / float(np.float32(out_scale))
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


def exact_int_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer matrix product through float BLAS: exact while every partial sum stays below 2^53 (float64),
    which 8-bit operands guarantee for any reduction shorter than 2^37 elements. When
    max|a| * max|b| * K < 2^24 bounds every partial sum, float32 BLAS is exact too, at twice the speed.
    The float result holds exact integers, so it converts to int64 without rounding."""
    bound = int(np.abs(a).max(initial=0)) * int(np.abs(b).max(initial=0)) * (a.shape[-1] if a.ndim else 1)
    dtype = exact_matmul_dtype(bound)
    return (a.astype(dtype) @ b.astype(dtype)).astype(np.int64)


def nchw_to_nhwc(x: np.ndarray) -> np.ndarray:
    return np.transpose(x, (0, 2, 3, 1))


def nhwc_to_nchw(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.transpose(x, (0, 3, 1, 2)))


def requantize_accumulator(acc: np.ndarray, multipliers: np.ndarray, shifts: np.ndarray, out: Operand,
                           activation: int) -> np.ndarray:
    """int32 accumulators -> output storage: MBQM per channel (last axis), + zero point, activation clamp."""
    y = multiply_by_quantized_multiplier(acc, multipliers, shifts) + out.zero_point
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
    values below the zero point), instead of a dozen int64 temporaries."""

    def __init__(self, mult: np.ndarray, offset: np.ndarray, threshold: np.ndarray | None, shift: np.ndarray,
                 lo: int, hi: int, dtype: np.dtype) -> None:
        self.mult, self.offset, self.threshold, self.shift = mult, offset, threshold, shift
        self.lo, self.hi, self.dtype = lo, hi, dtype

    @classmethod
    def build(cls, multipliers: np.ndarray, shifts: np.ndarray, bias: np.ndarray | None, out: Operand,
              activation: int, acc_bound: np.ndarray) -> "Requantizer | None":
        n = max(np.size(multipliers), np.size(shifts), np.size(acc_bound), 1 if bias is None else np.size(bias))
        ms = np.broadcast_to(np.asarray(multipliers, dtype=np.int64), (n,)).tolist()
        ss = np.broadcast_to(np.asarray(shifts, dtype=np.int64), (n,)).tolist()
        bs = [0] * n if bias is None else np.broadcast_to(np.asarray(bias, dtype=np.int64), (n,)).tolist()
        bounds = np.broadcast_to(np.asarray(acc_bound, dtype=np.int64), (n,)).tolist()
        zp = int(out.zero_point)
        mult, offset, threshold, shift = [], [], [], []
        corrected = False  # any channel with a right shift, hence a negative-SRDHM correction
        for m, s, b, bound in zip(ms, ss, bs, bounds):
            left, right = max(s, 0), max(-s, 0)
            if m < 0 or right > 31 or ((bound + abs(b)) << left) > INT32_MAX:
                return None
            mp = m << left
            k = b * mp + (1 << 30) + zp * (1 << (31 + right)) + ((1 << (30 + right)) if right else 0)
            # Without a right shift there is no correction: a threshold below every reachable numerator.
            thr = k - b * mp - (1 << 30) if right else -(bound * mp + abs(k) + 1)
            # |numerator| and |numerator - threshold| (the correction's sign test) must fit int64
            if bound * mp + abs(k) + abs(thr) + (1 << 31) >= 1 << 63:
                return None
            mult.append(mp)
            offset.append(k)
            threshold.append(thr)
            corrected = corrected or right > 0
            shift.append(31 + right)
        lo, hi = quantized_activation_range(activation, out)
        thr = np.asarray(threshold, dtype=np.int64)
        sh = np.asarray(shift, dtype=np.int64)
        # The correction only lowers results whose SRDHM value is negative, which land at or below the zero
        # point with or without it; when the activation's lower bound is >= the zero point (RELU, RELU6)
        # the clamp maps both to the bound, so the correction cannot change an output and is skipped.
        skip = not corrected or lo >= zp
        return cls(np.asarray(mult, dtype=np.int64), np.asarray(offset, dtype=np.int64), None if skip else thr,
                   np.int64(sh[0]) if (sh == sh[0]).all() else sh, lo, hi, out.dtype)

    def __call__(self, acc: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Output storage values of integer-valued accumulators (int32/int64, or float holding exact ints),
        written into `out` when given (same shape, the output dtype).

        Large accumulators go through in blocks of rows sized to stay in the CPU cache: the int64 steps
        then make one pass over memory in total instead of one per step (5x faster on a 112x112x96 map)."""
        y = np.empty(acc.shape, dtype=self.dtype) if out is None else out
        channels = acc.shape[-1] if acc.ndim else 1
        rows = acc.size // max(channels, 1)
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


# -- data movement helpers --------------------------------------------------------------------------
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


def normalize_axis(axis: int, rank: int, fail: Callable[[str], Exception]) -> int:
    """An axis in [-rank, rank) as a non-negative index; anything else raises `fail(message)`."""
    if not -rank <= axis < rank:
        raise fail(f"axis {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0


# -- 8-bit lookup tables ----------------------------------------------------------------------------
def via_quant8_table(call: "KernelCall", compute: Callable[["KernelCall"], np.ndarray]) -> np.ndarray:
    """Applies an elementwise quant8 -> quant8 kernel through a 256-entry table.

    An 8-bit input has only 256 possible values, so `compute` (the kernel's own fixed-point arithmetic) is
    run once on all of them, with input 0 replaced, and each run is then one gather: the same bits, without
    redoing the integer pipeline per element. The table depends only on the operands' static quantization
    parameters, so it is memoized per operation."""
    x = call.tensor(0)
    signed = x.dtype == np.int8

    def make() -> np.ndarray:
        domain = (np.arange(-128, 128) if signed else np.arange(256)).astype(x.dtype)
        return np.asarray(compute(dataclasses.replace(call, inputs=[domain, *call.inputs[1:]], cache=None)))

    table = call.memo(("quant8_table", compute.__name__), (), make)
    return table[x.view(np.uint8) ^ np.uint8(0x80) if signed else x]
