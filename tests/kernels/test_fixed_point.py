"""The vectorized fixed-point helpers of nnconv/nnapi/quantization.py equal a plain scalar transcription of the
reference formulas (gemmlowp / TFLite `common.h`), on edge values and on hypothesis-drawn inputs.

The scalar references below follow the C++ definitions literally (nudge, truncating division, mask and
threshold), so the shift-based rewrites in quantization.py are checked against the formulas they replace.
"""

from __future__ import annotations

from hypothesis import example, given, settings, strategies as st
import numpy as np

from nnconv.nnapi.enums import FuseCode, OperandType
from nnconv.nnapi.model import Operand
from nnconv.nnapi.quantization import (INT32_MAX, INT32_MIN, Requantizer, multiply_by_quantized_multiplier,
                                       quantize_multiplier, requantize_accumulator, rounding_divide_by_pot,
                                       saturating_rounding_doubling_high_mul)

int32s = st.integers(INT32_MIN, INT32_MAX)
EDGE32 = [INT32_MIN, INT32_MIN + 1, -(1 << 30) - 1, -(1 << 30), -3, -2, -1, 0, 1, 2, 3, 1 << 30, INT32_MAX - 1,
          INT32_MAX]


def trunc_div(a: int, b: int) -> int:
    """C++ integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def ref_srdhm(a: int, b: int) -> int:
    if a == b == INT32_MIN:
        return INT32_MAX
    ab = a * b
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    return trunc_div(ab + nudge, 1 << 31)


def ref_rdbpot(x: int, exponent: int) -> int:
    mask = (1 << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> exponent) + (1 if remainder > threshold else 0)


def ref_mbqm(x: int, multiplier: int, shift: int) -> int:
    left = max(shift, 0)
    right = max(-shift, 0)
    v = min(max(x * (1 << left), INT32_MIN), INT32_MAX)
    return ref_rdbpot(ref_srdhm(v, multiplier), right)


def test_srdhm_edges() -> None:
    a = np.array([[v] for v in EDGE32], dtype=np.int64)
    b = np.array(EDGE32, dtype=np.int64)
    got = saturating_rounding_doubling_high_mul(a, b)
    want = np.array([[ref_srdhm(x, y) for y in EDGE32] for x in EDGE32], dtype=np.int64)
    np.testing.assert_array_equal(got, want)
    assert saturating_rounding_doubling_high_mul(np.int64(INT32_MIN), INT32_MIN) == INT32_MAX


@settings(max_examples=300, deadline=None)
@given(st.lists(int32s, min_size=1, max_size=20), int32s)
def test_srdhm_matches_reference(xs: list[int], b: int) -> None:
    got = saturating_rounding_doubling_high_mul(np.array(xs, dtype=np.int64), b)
    np.testing.assert_array_equal(got, [ref_srdhm(x, b) for x in xs])


def test_rdbpot_negative_values_and_ties() -> None:
    # ties (x = +-k.5 * 2^e) round away from zero; exponent 0 is the identity
    xs = [-9, -8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, INT32_MIN, INT32_MAX]
    for e in range(0, 32):
        got = rounding_divide_by_pot(np.array(xs, dtype=np.int64), e)
        np.testing.assert_array_equal(got, [ref_rdbpot(x, e) for x in xs], err_msg=f"exponent {e}")
    assert list(rounding_divide_by_pot(np.array([-3, -1, 1, 3]), 1)) == [-2, -1, 1, 2]
    assert rounding_divide_by_pot(np.int64(-6), 2) == -2  # -1.5 -> -2
    assert rounding_divide_by_pot(np.int64(-5), 2) == -1  # -1.25 -> -1


@settings(max_examples=300, deadline=None)
@given(st.lists(int32s, min_size=1, max_size=16), st.lists(st.integers(0, 31), min_size=1, max_size=16))
def test_rdbpot_matches_reference(xs: list[int], es: list[int]) -> None:
    n = min(len(xs), len(es))
    x = np.array(xs[:n], dtype=np.int64)
    # per-element exponents (the per-channel case) and one scalar exponent
    np.testing.assert_array_equal(rounding_divide_by_pot(x, np.array(es[:n])),
                                  [ref_rdbpot(a, e) for a, e in zip(xs[:n], es[:n])])
    np.testing.assert_array_equal(rounding_divide_by_pot(x, es[0]), [ref_rdbpot(a, es[0]) for a in xs[:n]])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.integers(-(1 << 33), 1 << 33) | int32s, min_size=1, max_size=12),
       st.lists(st.tuples(int32s, st.integers(-31, 29)), min_size=1, max_size=12))
def test_mbqm_matches_reference(xs: list[int], ms: list[tuple[int, int]]) -> None:
    """Positive and negative shifts, per channel (broadcast over the last axis) and scalar; accumulators
    beyond int32 are clamped after the left shift (shifts stop at 29 so x << left fits int64, as in C++
    where x is an int32 to begin with)."""
    x = np.array(xs, dtype=np.int64)[:, None]
    mult = np.array([m for m, _ in ms], dtype=np.int64)
    shift = np.array([s for _, s in ms], dtype=np.int64)
    want = [[ref_mbqm(a, m, s) for m, s in ms] for a in xs]
    np.testing.assert_array_equal(multiply_by_quantized_multiplier(x, mult, shift), want)
    m0, s0 = ms[0]
    np.testing.assert_array_equal(multiply_by_quantized_multiplier(x[:, 0], m0, s0), [row[0] for row in want])


def test_mbqm_edges() -> None:
    xs = np.array(EDGE32, dtype=np.int64)[:, None]
    pairs = [(m, s) for m in (0, 1, 1 << 30, INT32_MAX, INT32_MIN, -(1 << 30)) for s in (-31, -1, 0, 1, 31)]
    got = multiply_by_quantized_multiplier(xs, np.array([m for m, _ in pairs]), np.array([s for _, s in pairs]))
    np.testing.assert_array_equal(got, [[ref_mbqm(x, m, s) for m, s in pairs] for x in EDGE32])


def _operand(t: OperandType, scale: float, zp: int) -> Operand:
    return Operand(type=t, dimensions=[], scale=scale, zero_point=zp)


@settings(max_examples=600, deadline=None)
@given(st.lists(st.tuples(st.floats(1e-6, 30.0), st.integers(-5000, 5000)), min_size=1, max_size=6),
       st.integers(-128, 127), st.sampled_from([FuseCode.NONE, FuseCode.RELU, FuseCode.RELU1, FuseCode.RELU6]),
       st.integers(0, 2**31 - 1), st.integers(0, 2**32 - 1), st.booleans())
# a left-shift channel (multiplier 1.0) beside a right-shift one, no activation: the correction's sign
# test must never fire for the channel without a right shift
@example(channels=[(1.0, 0), (0.25, 0)], zp=0, act=FuseCode.NONE, bound=0, seed=0, as_float=False)
@example(channels=[(0.001, -7), (3.0, 100)], zp=-128, act=FuseCode.RELU1, bound=2**20, seed=1, as_float=True)
def test_requantizer_equals_requantize_accumulator(channels: list[tuple[float, int]], zp: int, act: int,
                                                   bound: int, seed: int, as_float: bool) -> None:
    """The precomputed fused requantization equals bias add + `requantize_accumulator` for every
    accumulator within the bound it was built for (or declines to build)."""
    out = _operand(OperandType.TENSOR_QUANT8_ASYMM_SIGNED, 0.05, zp)
    qm = [quantize_multiplier(m) for m, _ in channels]
    mult = np.array([m for m, _ in qm], dtype=np.int64)
    shift = np.array([s for _, s in qm], dtype=np.int64)
    bias = np.array([b for _, b in channels], dtype=np.int64)
    bounds = np.full(len(channels), bound, dtype=np.int64)
    rq = Requantizer.build(mult, shift, bias, out, act, bounds)
    rng = np.random.default_rng(seed)
    acc = rng.integers(-bound, bound + 1, size=(7, len(channels)), dtype=np.int64)
    acc[0] = bound
    acc[1] = -bound
    want = requantize_accumulator(acc + bias, mult, shift, out, act)
    if rq is None:
        assert (bound + int(np.abs(bias).max())) << max(int(shift.max()), 0) > INT32_MAX
        return
    got = rq(acc.astype(np.float32) if as_float and bound < 1 << 24 else acc)
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, want)
