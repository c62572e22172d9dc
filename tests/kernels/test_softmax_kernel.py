"""SOFTMAX kernel paths beyond the lowering's parity tests: the float reduction by passes over many short
rows, and the quantized reciprocal of a few rows in Python integers (both against the general forms)."""

from __future__ import annotations

import numpy as np
import pytest

from nnconv.nnapi.enums import OperandType as T
from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.model import Operand, Operation
from nnconv.runtime.kernels import KERNELS, KernelCall
from nnconv.runtime.kernels import softmax as softmax_module
from nnconv.runtime.kernels._fixedpoint import (one_over_normalized_sum, one_over_one_plus_x_for_x_in_0_1,
                                                one_over_one_plus_x_int32)

RNG = np.random.default_rng(11)


def _softmax(x, beta=1.0, axis=-1, t=T.TENSOR_FLOAT32, in_q=(0.0, 0)):
    out_q = (0.0, 0) if t is T.TENSOR_FLOAT32 else (1 / 256, -128 if t is T.TENSOR_QUANT8_ASYMM_SIGNED else 0)
    ods = [Operand(type=t, dimensions=x.shape, scale=in_q[0], zero_point=in_q[1]),
           Operand(type=T.FLOAT32, dimensions=()), Operand(type=T.INT32, dimensions=())]
    call = KernelCall(Operation(OperationType.SOFTMAX, [0, 1, 2], []),
                      [x, np.array(beta, np.float32), np.array(axis, np.int32)], ods,
                      [Operand(type=t, dimensions=x.shape, scale=out_q[0], zero_point=out_q[1])])
    return KERNELS[OperationType.SOFTMAX](call)[0]


@pytest.mark.parametrize("shape,axis", [((1, 64, 64, 5), -1), ((2, 9, 40, 3), 1), ((1, 48, 21), -1),
                                        ((3, 10), -1), ((1, 1000), -1)])
def test_float_softmax_matches_the_definition(shape, axis):
    # many short rows (passes over the rows), a few rows or a long axis (numpy's reductions): the
    # definition within float32 rounding of a sum of at most C terms
    x = (RNG.standard_normal(shape) * 4).astype(np.float32)
    got = _softmax(x, beta=0.7, axis=axis)
    xd = x.astype(np.float64) * 0.7
    e = np.exp(xd - xd.max(axis=axis, keepdims=True))
    want = e / e.sum(axis=axis, keepdims=True)
    np.testing.assert_allclose(got, want, rtol=shape[axis] * 4e-7, atol=1e-7)


def test_float_softmax_short_rows_keep_nan_and_infinity():
    x = RNG.standard_normal((1, 40, 40, 4)).astype(np.float32)
    x[0, 0, 0, 1] = np.nan
    x[0, 0, 1, 2] = np.inf
    x[0, 0, 2, :] = -np.inf
    got = _softmax(x)
    assert np.isnan(got[0, 0, 0]).all()  # a NaN input: the row's max and sum are NaN
    assert np.isnan(got[0, 0, 1, 2])  # inf - inf
    assert np.isnan(got[0, 0, 2]).all()  # -inf - (-inf)
    np.testing.assert_allclose(got[0, 1:].sum(axis=-1), 1.0, rtol=1e-6)


def test_scalar_reciprocal_equals_the_array_version():
    values = np.concatenate([RNG.integers(-(1 << 31), (1 << 31) - 1, 20000),
                             [0, 1, -1, (1 << 31) - 1, -(1 << 31), 1 << 30, (1 << 30) - 1, -(1 << 30)]])
    want = one_over_one_plus_x_for_x_in_0_1(values.astype(np.int64))
    np.testing.assert_array_equal([one_over_one_plus_x_int32(int(v)) for v in values], want)


def test_normalized_sum_reciprocal_equals_the_general_steps():
    """`one_over_normalized_sum` drops the wraps and saturations that cannot act on [0, 2^31) (checked there
    exhaustively offline, see its docstring); here every power of two and its neighbours and 300,000 random
    values of the domain, against the general gemmlowp steps."""
    powers = np.array([1 << k for k in range(31)], dtype=np.int64)
    edges = np.concatenate([powers - 1, powers, powers + 1, [(1 << 31) - 1, (1 << 31) - 2]])
    values = np.concatenate([edges[(edges >= 0) & (edges < 1 << 31)], RNG.integers(0, 1 << 31, 300_000)])
    np.testing.assert_array_equal(one_over_normalized_sum(values.astype(np.int64)),
                                  one_over_one_plus_x_for_x_in_0_1(values.astype(np.int64)))


@pytest.mark.parametrize("t", [T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED])
def test_quant_softmax_few_rows_equal_the_array_pipeline(monkeypatch, t):
    info = np.iinfo(np.uint8 if t is T.TENSOR_QUANT8_ASYMM else np.int8)
    x = RNG.integers(info.min, info.max + 1, (6, 10)).astype(info.dtype)
    scalar = _softmax(x, beta=1.3, t=t, in_q=(0.07, 3))  # 6 rows: the reciprocals one by one
    monkeypatch.setattr(softmax_module, "SCALAR_RECIPROCAL_ROWS", 0)
    np.testing.assert_array_equal(scalar, _softmax(x, beta=1.3, t=t, in_q=(0.07, 3)))


def _reference_quant_softmax(q, beta, in_scale, lo, hi):
    """The reference pipeline written out element by element on the array helpers: the mask below
    diff_min, the Q12.19 sum, the reciprocal and the output shift, with no table and no shortcut."""
    from nnconv.nnapi.quant_limits import (SOFTMAX_SCALED_DIFF_INTEGER_BITS, calculate_input_radius,
                                           softmax_input_multiplier)
    from nnconv.nnapi.quantization import (multiply_by_quantized_multiplier_greater_than_one,
                                           quantize_multiplier_greater_than_one, rounding_divide_by_pot,
                                           saturating_rounding_doubling_high_mul)
    from nnconv.runtime.kernels._fixedpoint import exp_on_negative_values, rescale, wrap32
    mult, shift = quantize_multiplier_greater_than_one(softmax_input_multiplier(beta, in_scale))
    diff_min = -calculate_input_radius(SOFTMAX_SCALED_DIFF_INTEGER_BITS, shift)
    x = q.astype(np.int64)
    diff = x - x.max(axis=-1, keepdims=True)
    valid = diff >= diff_min
    exps = exp_on_negative_values(multiply_by_quantized_multiplier_greater_than_one(diff, mult, shift),
                                  SOFTMAX_SCALED_DIFF_INTEGER_BITS)
    total = wrap32(np.where(valid, rescale(exps, 0, 12), 0).sum(axis=-1, keepdims=True))
    headroom = softmax_module.count_leading_zeros32(total)
    scale = one_over_one_plus_x_for_x_in_0_1(wrap32(((total << headroom) & 0xFFFFFFFF) - (1 << 31)))
    out = rounding_divide_by_pot(saturating_rounding_doubling_high_mul(scale, exps), 12 - headroom + 23) + lo
    return np.where(valid, np.clip(out, lo, hi), lo)


@pytest.mark.parametrize("t", [T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED])
@pytest.mark.parametrize("shape,beta,in_scale", [
    ((1, 10), 1.0, 0.1),  # a classifier head: one row, Python reciprocal
    ((3, 1000), 1.0, 0.05),  # long rows
    ((1, 64, 64, 3), 1.0, 0.1),  # many short rows: max and sum by passes over the rows
    ((1, 40, 40, 5), 8.0, 0.9),  # a steep softmax: diff_min is -3, most differences fall below it
    ((40, 7), 0.3, 0.02),  # more rows than the scalar path takes, shorter than the pass threshold
    ((1, 5000), 1.0, 0.1),  # 5000 ties: the Q12.19 sum wraps negative as the reference's int32 does
], ids=["head", "long-rows", "short-rows", "steep", "medium", "wrapped-sum"])
def test_quant_softmax_equals_the_reference_pipeline(t, shape, beta, in_scale):
    info = np.iinfo(np.uint8 if t is T.TENSOR_QUANT8_ASYMM else np.int8)
    x = RNG.integers(info.min, info.max + 1, shape).astype(info.dtype)
    x.reshape(-1, shape[-1])[0] = info.max  # a row of ties at the top
    got = _softmax(x, beta=beta, t=t, in_q=(in_scale, 3))
    np.testing.assert_array_equal(got, _reference_quant_softmax(x, beta, np.float32(in_scale), info.min, info.max))
