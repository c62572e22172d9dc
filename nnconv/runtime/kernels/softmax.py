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
from nnconv.nnapi.quant_limits import SOFTMAX_SCALED_DIFF_INTEGER_BITS, softmax_input_multiplier
from nnconv.runtime.kernels._fixedpoint import (calculate_input_radius, exp_on_negative_values,
                                                one_over_one_plus_x_for_x_in_0_1, one_over_one_plus_x_int32, rescale,
                                                wrap32)
from nnconv.runtime.kernels.registry import KernelCall, kernel

ACCUMULATION_INTEGER_BITS = 12
# Quantized: rows whose reciprocal is computed one by one in Python integers (`one_over_one_plus_x_int32`,
# ~10 us a row) rather than by the array pipeline (~200 us whatever the row count).
SCALAR_RECIPROCAL_ROWS = 16
# Float: a softmax axis of at most this many values is reduced by passes over the other axes (one per
# value along it) instead of numpy's per-row reduction, whose setup per short row dominated (a 64x64 map
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


def softmax_exp_table(beta: float, in_scale: float) -> tuple[np.ndarray, np.ndarray, int]:
    """The per-element part of the reference pipeline as tables over d = q - max in [-255, 0] (an 8-bit
    input has no other differences): exp of the scaled difference (Q0.31) and its Q12.19 summand (0 below
    diff_min), indexed by d + 255, and diff_min. Built once per operation instead of a dozen int64
    fixed-point passes per element every run."""
    real = softmax_input_multiplier(beta, in_scale)
    mult, left_shift = quantize_multiplier_greater_than_one(real)
    diff_min = -calculate_input_radius(SOFTMAX_SCALED_DIFF_INTEGER_BITS, left_shift)
    diff = np.arange(-255, 1, dtype=np.int64)
    scaled = multiply_by_quantized_multiplier_greater_than_one(diff, mult, left_shift)
    exps = exp_on_negative_values(scaled, SOFTMAX_SCALED_DIFF_INTEGER_BITS)
    terms = np.where(diff >= diff_min, rescale(exps, 0, ACCUMULATION_INTEGER_BITS), 0)
    return exps, terms, diff_min


def softmax_quant8(q: np.ndarray, beta: float, in_scale: float, out_type: OperandType,
                   table: tuple[np.ndarray, np.ndarray, int] | None = None) -> np.ndarray:
    """The reference quantized softmax along the last axis of storage array `q` (`table`: the memoized
    `softmax_exp_table(beta, in_scale)`)."""
    exp_table, term_table, diff_min = softmax_exp_table(beta, in_scale) if table is None else table
    x = q.astype(np.int64)
    diff = x - x.max(axis=-1, keepdims=True)
    valid = diff >= diff_min
    index = diff + 255
    exps = np.take(exp_table, index, mode="wrap")  # 0 <= index <= 255: no bounds check needed
    total = wrap32(np.take(term_table, index, mode="wrap").sum(axis=-1, keepdims=True))
    headroom_plus_one = count_leading_zeros32(total)
    bits_over_unit = ACCUMULATION_INTEGER_BITS - headroom_plus_one
    shifted_sum_minus_one = wrap32(((total << headroom_plus_one) & 0xFFFFFFFF) - (1 << 31))
    if shifted_sum_minus_one.size <= SCALAR_RECIPROCAL_ROWS:
        # one reciprocal per row: in Python integers for a few rows (the array version's fixed cost is
        # ~150 numpy calls)
        shifted_scale = np.array([one_over_one_plus_x_int32(v) for v in shifted_sum_minus_one.ravel().tolist()],
                                 dtype=np.int64).reshape(shifted_sum_minus_one.shape)
    else:
        shifted_scale = one_over_one_plus_x_for_x_in_0_1(shifted_sum_minus_one)
    unsat = rounding_divide_by_pot(saturating_rounding_doubling_high_mul(shifted_scale, exps),
                                   bits_over_unit + 31 - 8)
    lo, hi = qrange(out_type)
    out = np.clip(unsat + lo, lo, hi)
    return np.where(valid, out, lo).astype(np.uint8 if out_type is OperandType.TENSOR_QUANT8_ASYMM else np.int8)


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


