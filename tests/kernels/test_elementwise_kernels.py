"""Elementwise, activation and (de)quantize kernels beyond the CTS vectors: the gemmlowp fixed-point
functions, rounding corner cases, the quantized pipelines against the real-valued result, CAST clamping,
int32 DIV, and RANDOM_MULTINOMIAL's distribution."""

from __future__ import annotations

import numpy as np
import pytest

from nnconv.errors import ExecutionError
from nnconv.nnapi.enums import OperandType as T, OperationType as Op
from nnconv.nnapi.model import Operand, Operation
from nnconv.nnapi.quantization import round_half_away
from nnconv.runtime.kernels import KERNELS, KernelCall, _quant8_table
from nnconv.runtime.kernels._fixedpoint import exp_on_negative_values, fixed_logistic, fixed_tanh


def run(op, inputs, out_type, out_q=(0.0, 0), in_q=None, out_shape=()):
    """Runs one kernel: `inputs` are (array, OperandType) pairs (scalars as 0-d arrays)."""
    in_q = in_q or [(0.0, 0)] * len(inputs)
    ods = [Operand(type=t, dimensions=np.shape(a), scale=q[0], zero_point=q[1]) for (a, t), q in zip(inputs, in_q)]
    out = Operand(type=out_type, dimensions=out_shape, scale=out_q[0], zero_point=out_q[1])
    call = KernelCall(Operation(op, list(range(len(inputs))), [len(inputs)]), [np.asarray(a) for a, _ in inputs],
                      ods, [out])
    return KERNELS[op](call)[0]


def i32(v):
    return (np.asarray(v, np.int32), T.INT32)


# -- fixed point --------------------------------------------------------------------------------------
def test_fixed_point_logistic_and_tanh_track_float():
    x = np.linspace(-15.9, 15.9, 2001)
    raw = np.round(x * 2 ** 27).astype(np.int64)  # Q4.27
    assert np.abs(fixed_logistic(raw, 4) / 2 ** 31 - 1 / (1 + np.exp(-x))).max() < 1e-7
    assert np.abs(fixed_tanh(raw, 4) / 2 ** 31 - np.tanh(x)).max() < 2e-7


def test_fixed_point_special_values():
    assert fixed_logistic(np.array([0]), 4)[0] == 1 << 30  # exactly 1/2
    assert fixed_tanh(np.array([0]), 4)[0] == 0
    assert exp_on_negative_values(np.array([0]), 5)[0] == (1 << 31) - 1  # "1" in Q0.31
    # exp(-1) from a Q5.26 input of -1.0; the polynomial and barrel shifter are good to ~1e-7
    assert abs(exp_on_negative_values(np.array([-(1 << 26)]), 5)[0] / 2 ** 31 - np.exp(-1)) < 3e-7


def test_round_half_away_is_exact():
    x = np.array([0.5, -0.5, 1.5, -2.5, 0.49999997, -0.49999997, 2.4999998], np.float32)
    assert round_half_away(x).tolist() == [1, -1, 2, -3, 0, -0, 2]


# -- quantized arithmetic ----------------------------------------------------------------------------
@pytest.mark.parametrize("op, fn", [(Op.ADD, np.add), (Op.SUB, np.subtract), (Op.MUL, np.multiply)])
@pytest.mark.parametrize("t, dt", [(T.TENSOR_QUANT8_ASYMM, np.uint8), (T.TENSOR_QUANT8_ASYMM_SIGNED, np.int8)])
def test_quantized_arithmetic_within_one_step_of_real(op, fn, t, dt):
    info = np.iinfo(dt)
    a = np.arange(info.min, info.max + 1).astype(dt).reshape(16, 16)
    b = np.arange(info.min, info.max + 1, 17).astype(dt)[:16]
    qa, qb, qo = (0.05, 7), (0.03, -5 if dt is np.int8 else 130), (0.2 if op is Op.MUL else 0.09, 3)
    got = run(op, [(a, t), (b, t), i32(0)], t, qo, [qa, qb, (0, 0)])
    real = fn(qa[0] * (a.astype(np.float64) - qa[1]), qb[0] * (b.astype(np.float64) - qb[1]))
    want = np.clip(np.round(real / qo[0]) + qo[1], info.min, info.max)
    assert np.abs(got.astype(np.int64) - want).max() <= 1


def test_quantized_mul_needs_output_scale_above_product():
    a = np.zeros((2,), np.uint8)
    with pytest.raises(ExecutionError):
        run(Op.MUL, [(a, T.TENSOR_QUANT8_ASYMM), (a, T.TENSOR_QUANT8_ASYMM), i32(0)], T.TENSOR_QUANT8_ASYMM,
            (0.001, 0), [(0.1, 0), (0.1, 0), (0, 0)])


def test_add_fused_relu6_quantized_clamps_at_quantized_six():
    a = np.array([255], np.uint8)
    got = run(Op.ADD, [(a, T.TENSOR_QUANT8_ASYMM), (a, T.TENSOR_QUANT8_ASYMM), i32(3)], T.TENSOR_QUANT8_ASYMM,
              (0.1, 0), [(0.1, 0), (0.1, 0), (0, 0)])
    assert got.tolist() == [60]


def test_int32_div_floors_and_survives_zero():
    a = np.array([7, -7, 7, -7, 5], np.int32)
    b = np.array([2, 2, -2, -2, 0], np.int32)
    got = run(Op.DIV, [(a, T.TENSOR_INT32), (b, T.TENSOR_INT32), i32(0)], T.TENSOR_INT32)
    assert got.tolist() == [3, -4, -4, 3, 0]


def test_int32_activation_other_than_none_fails():
    a = np.ones(3, np.int32)
    with pytest.raises(ExecutionError):
        run(Op.ADD, [(a, T.TENSOR_INT32), (a, T.TENSOR_INT32), i32(1)], T.TENSOR_INT32)


@pytest.mark.parametrize("op", [Op.ADD, Op.SUB, Op.MUL, Op.DIV])
def test_broadcast_mismatch_fails(op):
    # the float kernels let numpy find the mismatch and then name both shapes
    with pytest.raises(ExecutionError, match=r"\[2, 3\] and \[4\] are not broadcastable"):
        run(op, [(np.ones((2, 3), np.float32), T.TENSOR_FLOAT32), (np.ones((4,), np.float32), T.TENSOR_FLOAT32),
                 i32(0)], T.TENSOR_FLOAT32)
    with pytest.raises(ExecutionError, match="rank <= 4"):
        run(op, [(np.ones((1, 1, 1, 1, 2), np.float32), T.TENSOR_FLOAT32), (np.ones((2,), np.float32),
                                                                             T.TENSOR_FLOAT32), i32(0)],
            T.TENSOR_FLOAT32)


# -- activations -------------------------------------------------------------------------------------
def test_quantized_logistic_and_tanh_follow_the_real_function():
    q = np.arange(256).astype(np.uint8)
    x = 0.1 * (q.astype(np.float64) - 128)
    lg = run(Op.LOGISTIC, [(q, T.TENSOR_QUANT8_ASYMM)], T.TENSOR_QUANT8_ASYMM, (1 / 256, 0), [(0.1, 128)])
    assert np.abs(lg - np.clip(np.round(256 / (1 + np.exp(-x))), 0, 255)).max() <= 1
    th = run(Op.TANH, [(q, T.TENSOR_QUANT8_ASYMM)], T.TENSOR_QUANT8_ASYMM, (1 / 128, 128), [(0.1, 128)])
    assert np.abs(th - np.clip(np.round(128 * np.tanh(x)) + 128, 0, 255)).max() <= 1


def test_logistic_rejects_other_output_quantization():
    q = np.arange(4).astype(np.uint8)
    with pytest.raises(ExecutionError):
        run(Op.LOGISTIC, [(q, T.TENSOR_QUANT8_ASYMM)], T.TENSOR_QUANT8_ASYMM, (1 / 128, 0), [(0.1, 0)])


@pytest.mark.parametrize("t, dt", [(T.TENSOR_QUANT8_ASYMM, np.uint8), (T.TENSOR_QUANT8_ASYMM_SIGNED, np.int8)])
def test_quantized_hard_swish_within_one_step(t, dt):
    info = np.iinfo(dt)
    q = np.arange(info.min, info.max + 1).astype(dt)
    qi, qo = (0.05, 0 if dt is np.int8 else 128), (0.03, -60 if dt is np.int8 else 70)
    got = run(Op.HARD_SWISH, [(q, t)], t, qo, [qi])
    x = qi[0] * (q.astype(np.float64) - qi[1])
    want = np.clip(np.round(x * np.clip(x + 3, 0, 6) / 6 / qo[0]) + qo[1], info.min, info.max)
    assert np.abs(got.astype(np.int64) - want).max() <= 1


def test_quantized_prelu_within_one_step():
    x = np.arange(256).astype(np.uint8).reshape(2, 8, 16)
    alpha = np.linspace(0, 255, 16).astype(np.uint8)
    qx, qa, qo = (0.05, 120), (0.01, 50), (0.04, 100)
    got = run(Op.PRELU, [(x, T.TENSOR_QUANT8_ASYMM), (alpha, T.TENSOR_QUANT8_ASYMM)], T.TENSOR_QUANT8_ASYMM, qo,
              [qx, qa])
    xr, ar = qx[0] * (x.astype(np.float64) - qx[1]), qa[0] * (alpha.astype(np.float64) - qa[1])
    want = np.clip(np.round(np.where(xr >= 0, xr, xr * ar) / qo[0]) + qo[1], 0, 255)
    assert np.abs(got.astype(np.int64) - want).max() <= 1


# -- comparisons, CAST, QUANTIZE -----------------------------------------------------------------------
def test_quantized_comparison_uses_real_values():
    a = np.array([10, 20], np.uint8)  # real 1.0, 2.0
    b = np.array([5, 12], np.uint8)  # real 1.0, 2.4
    got = run(Op.LESS, [(a, T.TENSOR_QUANT8_ASYMM), (b, T.TENSOR_QUANT8_ASYMM)], T.TENSOR_BOOL8,
              in_q=[(0.1, 0), (0.2, 0)])
    assert got.tolist() == [False, True]
    eq = run(Op.EQUAL, [(a, T.TENSOR_QUANT8_ASYMM), (b, T.TENSOR_QUANT8_ASYMM)], T.TENSOR_BOOL8,
             in_q=[(0.1, 0), (0.2, 0)])
    assert eq.tolist() == [True, False]


def test_cast_clamps_to_uint8_and_truncates():
    x = np.array([-3.7, 2.9, 255.5, 1000.0], np.float32)
    assert run(Op.CAST, [(x, T.TENSOR_FLOAT32)], T.TENSOR_QUANT8_ASYMM, (1.0, 0)).tolist() == [0, 2, 255, 255]
    assert run(Op.CAST, [(x, T.TENSOR_FLOAT32)], T.TENSOR_INT32).tolist() == [-3, 2, 255, 1000]
    q = np.array([0, 200], np.uint8)  # quantization parameters are ignored
    assert run(Op.CAST, [(q, T.TENSOR_QUANT8_ASYMM)], T.TENSOR_FLOAT32, in_q=[(0.5, 100)]).tolist() == [0, 200]


def test_quantize_rounds_halves_away_from_zero():
    x = np.array([0.25, -0.25, 0.75, 0.2499999], np.float32)
    got = run(Op.QUANTIZE, [(x, T.TENSOR_FLOAT32)], T.TENSOR_QUANT8_ASYMM_SIGNED, (0.5, 0))
    assert got.tolist() == [1, -1, 2, 0]


def test_dequantize_per_channel_to_float16():
    from nnconv.nnapi.model import SymmPerChannelQuantParams
    q = np.array([[1, -2, 3], [4, 5, -6]], np.int8)
    od = Operand(type=T.TENSOR_QUANT8_SYMM_PER_CHANNEL, dimensions=q.shape,
                 channel_quant=SymmPerChannelQuantParams(1, (0.5, 0.25, 2.0)))
    out = Operand(type=T.TENSOR_FLOAT16, dimensions=q.shape)
    got = KERNELS[Op.DEQUANTIZE](KernelCall(Operation(Op.DEQUANTIZE, [0], [1]), [q], [od], [out]))[0]
    assert got.dtype == np.float16
    assert got.tolist() == [[0.5, -0.5, 6.0], [2.0, 1.25, -12.0]]


# -- RANDOM_MULTINOMIAL --------------------------------------------------------------------------------
def multinomial(logits, samples, seeds=(1, 2)):
    return run(Op.RANDOM_MULTINOMIAL, [(logits, T.TENSOR_FLOAT32), i32(samples),
                                       (np.asarray(seeds, np.int32), T.TENSOR_INT32)], T.TENSOR_INT32)


def test_multinomial_frequencies_match_softmax():
    logits = np.log(np.array([[0.1, 0.2, 0.3, 0.4], [0.7, 0.1, 0.1, 0.1]], np.float32))
    got = multinomial(logits, 20000)
    assert got.shape == (2, 20000) and got.dtype == np.int32
    for row, p in zip(got, np.exp(logits)):
        freq = np.bincount(row, minlength=4) / row.size
        assert np.abs(freq - p).max() < 0.025


def test_multinomial_is_seeded_and_skips_non_finite_logits():
    logits = np.array([[0.0, -np.inf, 1.0, np.nan]], np.float32)
    a, b = multinomial(logits, 500, (3, 4)), multinomial(logits, 500, (3, 4))
    assert np.array_equal(a, b)
    assert set(np.unique(a)) <= {0, 2}
    assert not np.array_equal(a, multinomial(logits, 500, (5, 6)))


def test_nan_handling_follows_std_min_max():
    nan = np.float32(np.nan)
    x = np.array([nan, -2.0, 3.0], np.float32)
    assert run(Op.RELU, [(x, T.TENSOR_FLOAT32)], T.TENSOR_FLOAT32).tolist() == [0.0, 0.0, 3.0]
    a, b = np.array([nan, 1.0], np.float32), np.array([1.0, nan], np.float32)
    mx = run(Op.MAXIMUM, [(a, T.TENSOR_FLOAT32), (b, T.TENSOR_FLOAT32)], T.TENSOR_FLOAT32)
    mn = run(Op.MINIMUM, [(a, T.TENSOR_FLOAT32), (b, T.TENSOR_FLOAT32)], T.TENSOR_FLOAT32)
    assert np.isnan(mx[0]) and mx[1] == 1.0  # (a < b) ? b : a
    assert np.isnan(mn[0]) and mn[1] == 1.0  # (b < a) ? b : a


# -- binary quant8 kernels through the 256 x 256 table ---------------------------------------------------
@pytest.mark.parametrize("op", [Op.ADD, Op.SUB, Op.MUL])
@pytest.mark.parametrize("t, dt", [(T.TENSOR_QUANT8_ASYMM, np.uint8), (T.TENSOR_QUANT8_ASYMM_SIGNED, np.int8)])
@pytest.mark.parametrize("activation", [0, 1, 3], ids=["none", "relu", "relu6"])
def test_quantized_binary_table_equals_direct_computation(monkeypatch, op, t, dt, activation):
    # Every pair of byte values (both extremes, the zero points, saturation of the output, rounding ties of
    # the reference's fixed-point steps fall among them) in a broadcast over a [1, 256, 256] x [256, 1]
    # input, plus a second operand order: the table path must give the direct path's bytes exactly.
    info = np.iinfo(dt)
    values = np.arange(info.min, info.max + 1).astype(dt)
    a = np.broadcast_to(values[:, None], (256, 256)).reshape(1, 256, 256).copy()
    b = values[:, None].copy()  # broadcasts along the last axis: every (a, b) pair occurs
    qa, qb = (0.05, 7), (0.03, -5 if dt is np.int8 else 130)
    qo = (0.2, 3) if op is Op.MUL else (0.09, -2 if dt is np.int8 else 120)
    args = [(a, t), (b, t), i32(activation)]
    q = [qa, qb, (0.0, 0)]
    monkeypatch.setattr(_quant8_table, "PAIR_TABLE_MIN_ELEMENTS", 1 << 30)  # direct
    direct = run(op, args, t, qo, q, (1, 256, 256))
    monkeypatch.setattr(_quant8_table, "PAIR_TABLE_MIN_ELEMENTS", 1)  # through the table
    table = run(op, args, t, qo, q, (1, 256, 256))
    assert table.dtype == direct.dtype == dt
    np.testing.assert_array_equal(table, direct)
    assert len(np.unique(direct)) > 20  # the pairs cover a real range of outputs, not one saturated value
    swapped = run(op, [(b, t), (a, t), i32(activation)], t, qo, [qb, qa, (0.0, 0)], (1, 256, 256))
    monkeypatch.setattr(_quant8_table, "PAIR_TABLE_MIN_ELEMENTS", 1 << 30)
    np.testing.assert_array_equal(swapped, run(op, [(b, t), (a, t), i32(activation)], t, qo, [qb, qa, (0.0, 0)],
                                               (1, 256, 256)))
