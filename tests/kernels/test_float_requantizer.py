"""The float64 requantization (`FloatRequantizer`, used by `Requantizer` when its error bound holds) equals
bias add + `requantize_accumulator` (the reference's integer pipeline): exhaustively over every accumulator
within small bounds, and on every accumulator next to each output step for large ones.

Multipliers that are exact powers of two put a rounding tie on every other step, which exercises the
negative-SRDHM correction (RDBPOT rounds ties away from zero)."""

from __future__ import annotations

from hypothesis import example, given, settings, strategies as st
import numpy as np

from nnconv.nnapi.enums import FuseCode, OperandType
from nnconv.nnapi.float_requantizer import BOUND_ELEMENTS, FloatRequantizer
from nnconv.nnapi.model import Operand
from nnconv.nnapi.quantization import (Requantizer, quantize_multiplier, quantized_activation_range,
                                      requantize_accumulator)

multipliers = st.one_of(st.floats(2.0 ** -10, 0.99), st.sampled_from([2.0 ** -k for k in range(1, 11)]),
                        st.floats(1.0, 4.0))
channel = st.tuples(multipliers, st.integers(-20000, 20000))
activations = st.sampled_from([FuseCode.NONE, FuseCode.RELU, FuseCode.RELU1, FuseCode.RELU6])
out_types = st.sampled_from([OperandType.TENSOR_QUANT8_ASYMM_SIGNED, OperandType.TENSOR_QUANT8_ASYMM])


def _build(channels: list[tuple[float, int]], t: OperandType, zp: int, act: int, bound: int,
           single_rounding: bool = False):
    lo = -128 if t is OperandType.TENSOR_QUANT8_ASYMM_SIGNED else 0
    out = Operand(type=t, dimensions=[], scale=0.05, zero_point=min(max(zp, lo), lo + 255))
    qm = [quantize_multiplier(m) for m, _ in channels]
    mult = np.array([m for m, _ in qm], dtype=np.int64)
    shift = np.array([s for _, s in qm], dtype=np.int64)
    bias = np.array([b for _, b in channels], dtype=np.int64)
    rq = Requantizer.build(mult, shift, bias, out, act, np.full(len(channels), bound, dtype=np.int64),
                           single_rounding)
    return rq, mult, shift, bias, out


def _check(rq: Requantizer, acc: np.ndarray, mult, shift, bias, out, act) -> None:
    want = requantize_accumulator(acc + bias, mult, shift, out, act)
    for dtype in (np.int64, np.int32, np.float64, np.float32):
        if dtype is np.float32 and np.abs(acc).max() >= 1 << 24:
            continue
        got = rq(acc.astype(dtype))
        assert got.dtype == out.dtype
        np.testing.assert_array_equal(got, want, err_msg=str(dtype))
    _check_bound(rq, acc, want)


def _check_bound(rq: Requantizer, acc: np.ndarray, want: np.ndarray) -> None:
    """The bound form (`FloatRequantizer.bind`, small maps) gives the same bytes block by block, for every
    block height up to its limit (each height its own wide view)."""
    channels = acc.shape[1]
    most = BOUND_ELEMENTS // channels
    assert rq.fast.bind(most + 1) is None
    r0, rows = 0, 1
    while r0 < acc.shape[0]:
        r1 = min(acc.shape[0], r0 + rows)
        bound = rq.fast.bind(r1 - r0)
        for dtype in (np.int64, np.int32, np.float64):
            y = np.empty((r1 - r0, channels), dtype=want.dtype)
            bound(np.ascontiguousarray(acc[r0:r1], dtype=dtype), y)
            np.testing.assert_array_equal(y, want[r0:r1], err_msg=f"rows {r0}:{r1} {dtype}")
        r0, rows = r1, min(most, rows * 3 + 1)


TIE_EXAMPLE = [(0.5, 0), (0.25, -1), (2.0 ** -10, 3)]  # power-of-two multipliers: a rounding tie every other step


def small_bound_cases(max_examples: int):
    """Hypothesis cases (channels, output type, zero point, activation, accumulator bound <= 6000), with the
    tie-heavy example."""
    def wrap(test):
        cases = given(st.lists(channel, min_size=1, max_size=5), out_types, st.integers(-128, 255), activations,
                      st.integers(0, 6000))
        tie = example(channels=TIE_EXAMPLE, t=OperandType.TENSOR_QUANT8_ASYMM_SIGNED, zp=-3, act=FuseCode.NONE,
                      bound=6000)
        return settings(max_examples=max_examples, deadline=None)(cases(tie(test)))
    return wrap


@small_bound_cases(120)
def test_every_accumulator_within_a_small_bound(channels, t, zp, act, bound) -> None:
    rq, mult, shift, bias, out = _build(channels, t, zp, act, bound)
    # every multiplier >= 2^-10 with these biases satisfies the error bound: the fast path is what runs
    assert rq is not None and rq.fast is not None
    acc = np.repeat(np.arange(-bound, bound + 1, dtype=np.int64)[:, None], len(channels), axis=1)
    _check(rq, acc, mult, shift, bias, out, act)


@settings(max_examples=120, deadline=None)
@given(st.lists(channel, min_size=1, max_size=5), out_types, st.integers(-128, 255), activations,
       st.integers(1 << 16, 1 << 26))
def test_every_step_of_a_large_bound(channels, t, zp, act, bound) -> None:
    """Around each output step (where rounding decides), every accumulator within 3 of it."""
    rq, mult, shift, bias, out = _build(channels, t, zp, act, bound)
    if rq is None:  # the integer Requantizer's own bound (x << left within int32) declined
        return
    assert rq.fast is not None
    real = np.array([m * 2.0 ** s for m, s in zip(mult.tolist(), shift.tolist())]) / 2.0 ** 31
    lo = -128 if out.dtype == np.int8 else 0
    steps = np.arange(lo - out.zero_point - 1, lo - out.zero_point + 258, dtype=np.float64)
    centers = np.round(steps[:, None] / real - bias).astype(np.int64)  # acc where the output steps
    acc = (centers[:, None, :] + np.arange(-3, 4)[None, :, None]).reshape(-1, len(channels))
    acc = np.clip(acc, -bound, bound)
    _check(rq, acc, mult, shift, bias, out, act)


def test_declines_when_the_error_bound_fails() -> None:
    """A multiplier of 2^-30 needs the result to 2^-62: float64 cannot, the integer path runs."""
    assert FloatRequantizer.build([1 << 30], [30], [0], [1000], 0, -128, 127, np.int8, True) is None
    assert FloatRequantizer.build([1 << 30], [5], [0], [1000], 0, -128, 127, np.int16, True) is None
    assert FloatRequantizer.build([1 << 30], [5], [0], [1000], 0, -128, 127, np.int8, True) is not None


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(2.0 ** -16, 2.0 ** -10), st.integers(-20000, 20000)), min_size=1, max_size=4),
       out_types, st.integers(-128, 255), activations, st.integers(1 << 12, 1 << 22))
@example(channels=[(2.0 ** -13, 0), (0.0003, -77)], t=OperandType.TENSOR_QUANT8_ASYMM_SIGNED, zp=5,
         act=FuseCode.NONE, bound=1 << 20)
def test_small_multipliers_run_the_verified_path(channels, t, zp, act, bound) -> None:
    """Multipliers below 2^-10 fail the a-priori error bound; the float path then runs only where `verify`
    proved it on every output step. Checked on every step (as above) and exhaustively near zero."""
    rq, mult, shift, bias, out = _build(channels, t, zp, act, bound)
    assert rq is not None
    if rq.fast is None:  # verify declined: the integer pipeline runs, nothing more to check here
        return
    real = np.array([m * 2.0 ** s for m, s in zip(mult.tolist(), shift.tolist())]) / 2.0 ** 31
    lo = -128 if out.dtype == np.int8 else 0
    steps = np.arange(lo - out.zero_point - 1, lo - out.zero_point + 258, dtype=np.float64)
    centers = np.round(steps[:, None] / real - bias).astype(np.int64)
    acc = (centers[:, None, :] + np.arange(-3, 4)[None, :, None]).reshape(-1, len(channels))
    near_zero = np.repeat(np.arange(-3000, 3001, dtype=np.int64)[:, None], len(channels), axis=1)
    acc = np.clip(np.concatenate([acc, near_zero]), -bound, bound)
    _check(rq, acc, mult, shift, bias, out, act)


def test_the_example_with_small_multipliers_is_fast() -> None:
    rq, *_ = _build([(2.0 ** -13, 0), (0.0003, -77)], OperandType.TENSOR_QUANT8_ASYMM_SIGNED, 5, FuseCode.NONE,
                    1 << 20)
    assert rq.fast is not None


def test_verify_rejects_a_shifted_step() -> None:
    """A kappa off by a third of an accumulator step moves some output steps: verify must see it."""
    rq, mult, shift, bias, out = _build([(0.003, 17), (0.01, -5)], OperandType.TENSOR_QUANT8_ASYMM_SIGNED, 0,
                                        FuseCode.NONE, 50000)
    fast = rq.fast

    def reference(acc: np.ndarray) -> np.ndarray:
        return requantize_accumulator(acc + bias, mult, shift, out, FuseCode.NONE)

    bounds = np.full(2, 50000, dtype=np.int64)
    assert fast.verify(reference, bounds, (-128, 127))
    wrong = FloatRequantizer(fast.alpha, fast.kappa + fast.alpha / 3, fast.eps, fast.lo, fast.hi, fast.zp_half,
                             fast.flip)
    assert not wrong.verify(reference, bounds, (-128, 127))


def test_zero_sized_accumulators() -> None:
    rq, *_ = _build([(0.003, 17), (0.01, -5)], OperandType.TENSOR_QUANT8_ASYMM_SIGNED, 0, FuseCode.NONE, 50000)
    assert rq(np.zeros((0, 2), dtype=np.float32)).shape == (0, 2)


def test_requantizers_sharing_the_work_buffers_interleave_and_run_in_threads() -> None:
    """The float64 work buffers are shared by a thread's requantizers (one set per requantizer kept ~31 MB
    alive on MobileNetV2 int8): calls of requantizers of different widths, with and without the
    negative-side correction, interleaved and in two threads at once, each give the reference's values."""
    from concurrent.futures import ThreadPoolExecutor
    from nnconv.nnapi import float_requantizer

    rng = np.random.default_rng(3)
    built = [_build([(0.5, 0), (0.25, -1), (0.01, 7)], OperandType.TENSOR_QUANT8_ASYMM_SIGNED, -3,
                    FuseCode.NONE, 40000),
             _build([(0.003, 100)] * 96, OperandType.TENSOR_QUANT8_ASYMM, 128, FuseCode.RELU6, 40000)]
    for rq, *_ in built:
        assert rq is not None and rq.fast is not None
    cases = [(b, rng.integers(-40000, 40001, (3000, len(b[1])))) for b in built]

    def run_all() -> None:
        for _ in range(3):
            for (rq, mult, shift, bias, out), acc in cases:
                np.testing.assert_array_equal(rq(acc), requantize_accumulator(acc + bias, mult, shift, out,
                                                                              FuseCode.NONE if out.dtype ==
                                                                              np.int8 else FuseCode.RELU6))

    run_all()
    assert not hasattr(built[0][0].fast, "_work")  # no buffers of its own
    with ThreadPoolExecutor(2) as pool:
        for f in [pool.submit(run_all) for _ in range(2)]:
            f.result()
    assert float_requantizer._WORK.buffers[0].size <= float_requantizer.BLOCK_ELEMENTS


@small_bound_cases(80)
def test_single_rounding_is_tflite_fully_connected_rounding(channels, t, zp, act, bound) -> None:
    """`single_rounding` (verify's TFLite arithmetic): the fused and float64 forms equal TFLite's one rounding
    (x * M + 2^(30 - s)) >> (31 - s) + zp on every accumulator of the range, and differ from NNAPI's double
    rounding where a tie sits (the power-of-two multipliers of the example)."""
    rq, mult, shift, bias, out = _build(channels, t, zp, act, bound, single_rounding=True)
    assert rq is not None and rq.fast is not None and rq.threshold is None
    acc = np.repeat(np.arange(-bound, bound + 1, dtype=np.int64)[:, None], len(channels), axis=1)
    x = acc + bias
    total = 31 - shift
    lo_act, hi_act = quantized_activation_range(act, out)
    want = np.clip(((x * mult + (np.int64(1) << (total - 1))) >> total) + out.zero_point, lo_act, hi_act)
    np.testing.assert_array_equal(rq(acc), want)
    np.testing.assert_array_equal(requantize_accumulator(x, mult, shift, out, act, single_rounding=True), want)
    if channels == TIE_EXAMPLE:
        assert (requantize_accumulator(x, mult, shift, out, act) != want).any()
