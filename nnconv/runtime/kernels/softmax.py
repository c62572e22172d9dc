"""SOFTMAX (NNAPI OperationType 25).

Slots: 0 input (rank 1..4), 1 beta (FLOAT32 scalar; FLOAT16 for a float16 input), [2 axis INT32, default -1].
Float: exp((x - max) * beta) / sum along the axis (float16 computed in float32).
Quant8 asymm (output scale 1/256, zero point 0) and asymm signed (1/256, -128): the reference fixed-point
pipeline: d = q - max; if d >= diff_min, exp of the Q5.26 value MBQM_GreaterThanOne(d, M, ls) is summed
in Q12.19; the reciprocal of the sum comes from `one_over_one_plus_x_for_x_in_0_1` after counting leading
zeros; out = RDBPOT(scale * exp, bits_over_unit + 23) (+ output minimum for the signed type), clamped;
elements below diff_min give the type minimum.
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.nnapi.quantization import (is_quant8, multiply_by_quantized_multiplier_greater_than_one, qrange,
                                       quantize_multiplier_greater_than_one, rounding_divide_by_pot,
                                       saturating_rounding_doubling_high_mul)
from nnconv.nnapi.quant_limits import (SOFTMAX_SCALED_DIFF_INTEGER_BITS, calculate_input_radius,
                                       softmax_input_multiplier)
from nnconv.runtime.kernels._fixedpoint import (exp_on_negative_values, one_over_normalized_sum,
                                                one_over_one_plus_x_for_x_in_0_1, one_over_one_plus_x_int32, rescale,
                                                wrap32)
from nnconv.runtime.kernels.registry import KernelCall, kernel

ACCUMULATION_INTEGER_BITS = 12
# Quantized: rows whose reciprocal and shift are computed one by one in Python integers
# (`one_over_one_plus_x_int32`, ~10 us a row) rather than by the array pipeline (~200 us whatever the row count).
SCALAR_RECIPROCAL_ROWS = 16
# A softmax axis of at most this many values is reduced by passes over the other axes (one per value along
# it) instead of numpy's per-row reduction, whose setup per short row dominated (a 64x64 map
# of 5 classes: max and sum ~300 us, the passes ~20 us).
SHORT_AXIS = 32


def softmax_axis(call: KernelCall, slot: int, ndim: int) -> int:
    """The axis scalar in `slot` (default -1 when omitted), validated and made non-negative."""
    axis = int(call.opt_scalar(slot, -1)) if call.num_inputs > slot else -1
    if not -ndim <= axis < ndim:
        raise call.fail(f"axis {axis} is out of range for rank {ndim}")
    return axis % ndim


def count_leading_zeros32(x: np.ndarray) -> np.ndarray:
    """Leading zero bits of positive int32 values held in int64 (float64 frexp is exact below 2^53)."""
    _m, e = np.frexp(np.asarray(x, dtype=np.float64))
    return np.where(x > 0, 32 - e, 32).astype(np.int64)


def softmax_exp_table(beta: float, in_scale: float) -> tuple[np.ndarray, np.ndarray]:
    """The per-element part of the reference pipeline as tables over d = q - max in [-255, 0] (an 8-bit
    input has no other differences), indexed by d + 255: exp of the scaled difference (Q0.31) and its
    Q12.19 summand. Both are 0 below diff_min, where the reference writes the type's minimum: a zero exp
    gives exactly that minimum through the output arithmetic, so no separate mask is needed. Built once
    per operation instead of a dozen int64 fixed-point passes per element every run."""
    real = softmax_input_multiplier(beta, in_scale)
    mult, left_shift = quantize_multiplier_greater_than_one(real)
    diff_min = -calculate_input_radius(SOFTMAX_SCALED_DIFF_INTEGER_BITS, left_shift)
    diff = np.arange(-255, 1, dtype=np.int64)
    scaled = multiply_by_quantized_multiplier_greater_than_one(diff, mult, left_shift)
    exps = np.where(diff >= diff_min, exp_on_negative_values(scaled, SOFTMAX_SCALED_DIFF_INTEGER_BITS), 0)
    return exps, rescale(exps, 0, ACCUMULATION_INTEGER_BITS)


def softmax_quant8(q: np.ndarray, beta: float, in_scale: float, out_type: OperandType,
                   table: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """The reference quantized softmax along the last axis of storage array `q` (`table`: the memoized
    `softmax_exp_table(beta, in_scale)`)."""
    exp_table, term_table = softmax_exp_table(beta, in_scale) if table is None else table
    x = q.astype(np.int64)
    n = x.shape[-1]
    short = 0 < n <= SHORT_AXIS and x.size >= SHORT_AXIS * n  # many short rows: passes over the rows
    index = x - _reduce_last_axis(x, np.maximum, short)
    index += 255  # 0..255: take needs no bounds check ("wrap")
    exps = np.take(exp_table, index, mode="wrap")
    # the Q12.19 sum wraps as int32 does; integer sums do not depend on the order
    total = wrap32(_reduce_last_axis(np.take(term_table, index, mode="wrap"), np.add, short))
    if total.size <= SCALAR_RECIPROCAL_ROWS:
        scale, exponent = _row_factors_scalar(total)
    else:
        headroom_plus_one = count_leading_zeros32(total)
        shifted_sum_minus_one = wrap32(((total << headroom_plus_one) & 0xFFFFFFFF) - (1 << 31))
        # a positive sum normalizes into [0, 2^31), where the steps need no wraps or saturations
        scale = one_over_normalized_sum(shifted_sum_minus_one) if shifted_sum_minus_one.min() >= 0 else \
            one_over_one_plus_x_for_x_in_0_1(shifted_sum_minus_one)
        exponent = ACCUMULATION_INTEGER_BITS - headroom_plus_one + 31 - 8  # bits over unit + 23
    if not scale.size or scale.min() >= 0:
        # exps >= 0 as well, so every product is non-negative (< 2^62) and the reference's two roundings are
        # plain nudges: SaturatingRoundingDoublingHighMul (ab + 2^30) >> 31 (no saturation without
        # INT32_MIN), RoundingDivideByPOT (v + 2^(e-1)) >> e (e >= 3); five passes instead of the general
        # forms' sign handling
        out = exps * scale
        out += 1 << 30
        out >>= 31
        out += np.left_shift(1, exponent - 1)
        out >>= exponent
    else:  # a wrapped (non-positive) sum: the general forms
        out = rounding_divide_by_pot(saturating_rounding_doubling_high_mul(scale, exps), exponent)
    lo, hi = qrange(out_type)
    out += lo
    np.minimum(out, hi, out=out)  # the reference's clamp (np.clip's wrapper costs more on small rows)
    np.maximum(out, lo, out=out)
    return out.astype(np.uint8 if out_type is OperandType.TENSOR_QUANT8_ASYMM else np.int8)


def _row_factors_scalar(total: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row: the reciprocal of the Q12.19 sum (Q0.31) and the output's right shift, in Python integers
    (~10 us a row, against ~150 numpy calls for the array version's reciprocal), shaped like `total`."""
    scales, exponents = [], []
    for t in total.ravel().tolist():
        headroom_plus_one = 32 - t.bit_length() if t > 0 else 32
        shifted = ((t << headroom_plus_one) & 0xFFFFFFFF) - (1 << 31)  # in int32 range: no wrap needed
        scales.append(one_over_one_plus_x_int32(shifted))
        exponents.append(ACCUMULATION_INTEGER_BITS - headroom_plus_one + 31 - 8)
    return (np.array(scales, np.int64).reshape(total.shape), np.array(exponents, np.int64).reshape(total.shape))


@kernel(OperationType.SOFTMAX)
def softmax(call: KernelCall) -> list[np.ndarray]:
    x = call.tensor(0)
    beta = float(call.scalar(1))
    if x.ndim < 1 or x.ndim > 4:
        raise call.fail(f"input rank {x.ndim} is outside 1..4")
    if beta <= 0:
        raise call.fail(f"beta {beta} must be positive")
    axis = softmax_axis(call, 2, x.ndim)
    out = call.out_operands[0]
    last = axis == x.ndim - 1
    xm = x if last else np.moveaxis(x, axis, -1)
    if is_quant8(call.type(0)):
        lo, _hi = qrange(out.type)
        if not (np.float32(out.scale) == np.float32(1.0 / 256) and out.zero_point == lo):
            raise call.fail(f"quantized output must have scale 1/256 and zero point {lo}, "
                            f"got {out.scale} and {out.zero_point}")
        in_scale = call.in_operands[0].scale
        table = call.memo(("softmax_exp_table", beta), (), lambda: softmax_exp_table(beta, in_scale))
        y = softmax_quant8(xm, beta, in_scale, out.type, table)
    else:
        with np.errstate(all="ignore"):  # inf - inf and the like: the reference's NaN
            y = float_softmax(xm, beta).astype(out.dtype, copy=False)
    return [y if last else np.ascontiguousarray(np.moveaxis(y, -1, axis))]


def float_softmax(x: np.ndarray, beta: float) -> np.ndarray:
    """exp((x - max) * beta) / sum along the last axis, in float32, into one fresh array. Many short rows
    (<= SHORT_AXIS values each, at least SHORT_AXIS rows) are reduced by one pass over all rows per value,
    in order (the sum then runs sequentially, as the reference's loop does); otherwise by numpy's
    reductions."""
    y = x.astype(np.float32)  # a copy: the work array, then the result
    n = y.shape[-1]
    short = 0 < n <= SHORT_AXIS and y.size >= SHORT_AXIS * n  # many short rows
    top = _reduce_last_axis(y, np.maximum, short)
    np.subtract(y, top, out=y)
    np.multiply(y, np.float32(beta), out=y)
    np.exp(y, out=y)
    total = _reduce_last_axis(y, np.add, short)
    np.divide(y, total, out=y)
    return y


def _reduce_last_axis(y: np.ndarray, ufunc: np.ufunc, short: bool) -> np.ndarray:
    """ufunc's reduction of y's last axis, kept as an axis of length 1: by one pass over all rows per value
    along the axis, in order, when `short`; else numpy's reduction."""
    if not short:
        return ufunc.reduce(y, axis=-1, keepdims=True)
    acc = y[..., 0].copy()
    for k in range(1, y.shape[-1]):
        ufunc(acc, y[..., k], out=acc)
    return acc[..., None]


