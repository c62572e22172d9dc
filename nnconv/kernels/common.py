"""Helpers shared by kernels: fused activations, padding, and the reference integer arithmetic.

The integer helpers reproduce TFLite's `common.h` / gemmlowp fixed-point primitives that the Android
reference CPU implementation calls, vectorized over int64 numpy arrays.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from nnconv.errors import ExecutionError
from nnconv.nnapi.enums import FuseCode, OperandType, PaddingCode
from nnconv.nnapi.model import Operand

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


def saturating_rounding_doubling_high_mul(a: np.ndarray, b: int | np.ndarray) -> np.ndarray:
    """gemmlowp `SaturatingRoundingDoublingHighMul` on int64 arrays holding int32 values."""
    a = np.asarray(a, dtype=np.int64)
    b64 = np.asarray(b, dtype=np.int64)
    overflow = (a == INT32_MIN) & (b64 == INT32_MIN)
    ab = a * b64
    nudge = np.where(ab >= 0, np.int64(1 << 30), np.int64(1 - (1 << 30)))
    # C++ integer division truncates toward zero.
    s = ab + nudge
    res = np.where(s >= 0, s >> 31, -((-s) >> 31))
    return np.where(overflow, np.int64(INT32_MAX), res)


def rounding_divide_by_pot(x: np.ndarray, exponent: int | np.ndarray) -> np.ndarray:
    """gemmlowp `RoundingDivideByPOT`: x / 2^exponent rounded to nearest, ties away from zero."""
    x = np.asarray(x, dtype=np.int64)
    e = np.asarray(exponent, dtype=np.int64)
    mask = (np.int64(1) << e) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> e) + (remainder > threshold)


def multiply_by_quantized_multiplier(x: np.ndarray, multiplier: int | np.ndarray,
                                     shift: int | np.ndarray) -> np.ndarray:
    """TFLite `MultiplyByQuantizedMultiplier` (double rounding): x * multiplier * 2^shift."""
    shift = np.asarray(shift, dtype=np.int64)
    left = np.maximum(shift, 0)
    right = np.maximum(-shift, 0)
    x = np.asarray(x, dtype=np.int64) * (np.int64(1) << left)
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
    """Pads H and W of an NHWC array (negative amounts crop)."""
    if top == bottom == left == right == 0:
        return x
    x = x[:, max(-top, 0): x.shape[1] - max(-bottom, 0), max(-left, 0): x.shape[2] - max(-right, 0), :]
    return np.pad(x, ((0, 0), (max(top, 0), max(bottom, 0)), (max(left, 0), max(right, 0)), (0, 0)),
                  constant_values=value)


def conv_multipliers(in_scale: float, filter_scales: np.ndarray, out_scale: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-output-channel (multiplier, shift) of a quantized convolution, as `GetQuantizedConvolutionMultipler`:
    the input*filter product is rounded to float32 before the division in double."""
    mults, shifts = [], []
    for fs in np.atleast_1d(filter_scales):
        product = float(np.float32(np.float32(in_scale) * np.float32(fs)))
        m, s = quantize_multiplier(product / float(np.float32(out_scale)))
        mults.append(m)
        shifts.append(s)
    return np.asarray(mults, dtype=np.int64), np.asarray(shifts, dtype=np.int64)


def exact_int_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer matrix product through float64 BLAS: exact while every partial sum stays below 2^53, which
    8-bit operands guarantee for any reduction shorter than 2^37 elements."""
    return np.rint(a.astype(np.float64) @ b.astype(np.float64)).astype(np.int64)


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
