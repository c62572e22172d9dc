"""The float RELU / RELU1 / RELU6 and PRELU kernels against the reference CPU's expressions, bit for bit:
std::min(std::max(lo, x), hi) (NaN -> lo, -0.0 -> +0.0 when lo is 0) and x >= 0 ? x : x * alpha, on
edge values (NaN, +-inf, +-0.0, subnormals), float32 and float16, alpha shapes that broadcast in every
way NNAPI allows, and maps large enough to take the tiled-row path. Parity with TFLite itself is in
tests/lowering/test_activations.py."""

from __future__ import annotations

import numpy as np
import pytest

from harness import assert_same_bits
from nnconv.nnapi.enums import OperandType as T, OperationType as Op
from nnconv.nnapi.model import Operand, Operation
from nnconv.runtime.kernels import KERNELS, KernelCall
from nnconv.runtime.kernels import prelu as prelu_kernel
from nnconv.runtime.buffers import BufferPool

EDGES = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 1e-38, -1e-38, 0.5, -0.5, 1.0, -1.0,
         6.0, -6.0, 6.5, 3e38, -3e38, 7.0, -1.5]
FLOAT_T = {np.float32: T.TENSOR_FLOAT32, np.float16: T.TENSOR_FLOAT16}


class _Runner:
    """The part of a runner a kernel reads: a buffer pool (so the pooled output path is the one tested)."""

    def __init__(self) -> None:
        self.pool = BufferPool()


def run(op: Op, arrays: list[np.ndarray], dtype, runner: _Runner | None = None) -> np.ndarray:
    t = FLOAT_T[dtype]
    ods = [Operand(type=t, dimensions=a.shape) for a in arrays]
    out_shape = np.broadcast_shapes(*(a.shape for a in arrays))
    call = KernelCall(Operation(op, list(range(len(arrays))), [len(arrays)]), list(arrays), ods,
                      [Operand(type=t, dimensions=out_shape)], runner=runner, cache={})
    return KERNELS[op](call)[0]


def with_edges(shape, dtype, seed=0) -> np.ndarray:
    x = (np.random.default_rng(seed).standard_normal(shape) * 8).astype(dtype)
    flat = x.reshape(-1)
    with np.errstate(over="ignore"):  # 3e38 is inf in float16
        edges = np.asarray(EDGES, dtype)
    flat[:min(len(edges), flat.size)] = edges[:flat.size]
    return x


def reference_clamp(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """std::min(std::max(lo, x), hi), std::max(a, b) being (a < b) ? b : a and std::min(a, b) (b < a) ? b : a."""
    lo_t, hi_t = x.dtype.type(lo), x.dtype.type(hi)
    m = np.where(lo_t < x, x, lo_t)
    return np.where(hi_t < m, hi_t, m)


CLAMPS = {Op.RELU: (0.0, np.inf), Op.RELU1: (-1.0, 1.0), Op.RELU6: (0.0, 6.0)}


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["f32", "f16"])
@pytest.mark.parametrize("op", list(CLAMPS), ids=lambda o: o.name)
@pytest.mark.parametrize("shape", [(3, 7), (1, 9, 11, 5), (0, 4)], ids=["rank2", "nhwc-odd", "empty"])
def test_float_clamps_match_the_reference_expression(op, dtype, shape):
    x = with_edges(shape, dtype)
    want = reference_clamp(x, *CLAMPS[op])
    assert_same_bits(run(op, [x], dtype), want)
    assert_same_bits(run(op, [x], dtype, _Runner()), want)  # pooled output
    assert np.array_equal(x, with_edges(shape, dtype), equal_nan=True)  # the input is left alone


def test_float_clamp_fixes_nan_and_negative_zero_anywhere_in_a_large_map():
    x = (np.random.default_rng(4).standard_normal((1, 64, 64, 24)) * 8).astype(np.float32)
    x.reshape(-1)[[5000, 77_777, 98_303]] = [np.nan, -0.0, -np.nan]
    for op, (lo, hi) in CLAMPS.items():
        assert_same_bits(run(op, [x], np.float32, _Runner()), reference_clamp(x, lo, hi))


def reference_prelu(x: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """x >= 0 ? x : x * alpha, in float32 for float16 operands (each product exact there)."""
    xf = np.broadcast_to(x.astype(np.float32), np.broadcast_shapes(x.shape, alpha.shape))
    af = np.broadcast_to(alpha.astype(np.float32), xf.shape)
    out = np.empty(xf.shape, np.float32)
    for i, (v, a) in enumerate(zip(xf.reshape(-1), af.reshape(-1))):
        with np.errstate(all="ignore"):
            out.reshape(-1)[i] = v if v >= 0 else v * a
    return out.astype(x.dtype)


PRELU_SHAPES = [
    pytest.param((1, 40, 33, 16), (1, 1, 16), id="nhwc-channel-alpha-tiled-rows"),
    pytest.param((2, 5, 7, 3), (7, 1), id="alpha-along-width"),
    pytest.param((3, 37, 29), (29,), id="rank3-alpha-rank1"),
    pytest.param((1, 8, 8, 4), (1,), id="leaky-one-alpha"),
    pytest.param((4, 300), (4, 300), id="alpha-full-shape"),
    pytest.param((1, 3, 1, 2), (1, 1, 5, 1), id="output-larger-than-x"),
    pytest.param((0, 6), (6,), id="empty"),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["f32", "f16"])
@pytest.mark.parametrize("x_shape,alpha_shape", PRELU_SHAPES)
def test_prelu_matches_the_reference_expression(x_shape, alpha_shape, dtype):
    x = with_edges(x_shape, dtype, seed=1)
    alpha = np.random.default_rng(2).uniform(-1.5, 1.5, alpha_shape).astype(dtype)
    alpha.reshape(-1)[:4] = [0.0, -0.0, -0.5, 0.25][:alpha.size]
    want = reference_prelu(x, alpha)
    assert_same_bits(run(Op.PRELU, [x, alpha], dtype), want)
    assert_same_bits(run(Op.PRELU, [x, alpha], dtype, _Runner()), want)


@pytest.mark.parametrize("alpha_value", [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-40])
def test_prelu_non_finite_and_zero_alpha(alpha_value):
    """A factor of 1 keeps x >= 0 exact whatever alpha is (x * inf or x * NaN are never computed there)."""
    x = with_edges((1, 20, 20, 8), np.float32, seed=3)
    alpha = np.full((1, 1, 8), 0.3, np.float32)
    alpha[..., 3] = alpha_value
    assert_same_bits(run(Op.PRELU, [x, alpha], np.float32), reference_prelu(x, alpha))


def test_prelu_negative_zero_stays_with_a_negative_alpha():
    """-0.0 >= 0 holds, so the reference returns x, -0.0, where -0.0 * alpha would be +0.0."""
    x = np.tile(np.asarray([-0.0, 0.0, -1.0], np.float32), (1, 30, 30, 1))
    y = run(Op.PRELU, [x, np.asarray([-0.5, -2.0, -0.25], np.float32)], np.float32)
    np.testing.assert_array_equal(np.signbit(y), np.broadcast_to([True, False, False], y.shape))


def test_prelu_memo_follows_the_input_shape():
    """The tiled alpha row is kept per input shape: a second shape through the same call gets its own."""
    alpha = np.linspace(-1, 1, 6, dtype=np.float32)
    ods = [Operand(type=T.TENSOR_FLOAT32, dimensions=(0, 6)), Operand(type=T.TENSOR_FLOAT32, dimensions=(6,))]
    call = KernelCall(Operation(Op.PRELU, [0, 1], [2]), [], ods, [Operand(type=T.TENSOR_FLOAT32, dimensions=())],
                      cache={})
    for shape in [(5, 400, 6), (3, 6), (5, 400, 6)]:
        x = with_edges(shape, np.float32, seed=len(shape))
        call.inputs = [x, alpha]
        assert_same_bits(KERNELS[Op.PRELU](call)[0], reference_prelu(x, alpha))


ALPHA_REGIMES = {
    "at-most-one-with-negatives": ((-1.5, 1.0), np.maximum),
    "in-zero-one": ((1e-3, 1.0), np.maximum),
    "at-least-one": ((1.0, 9.0), np.minimum),
    "mixed": ((-1.5, 1.5), None),
}


@pytest.mark.parametrize("in_place", [False, True], ids=["fresh", "in-place"])
@pytest.mark.parametrize("regime", list(ALPHA_REGIMES))
def test_prelu_two_pass_form_keeps_the_reference_bits(regime, in_place):
    """max(x * alpha, x) (min for alpha >= 1) where every alpha allows it, the factor form elsewhere: every
    edge value of x meets every channel (-0.0 with negative alphas, +-inf, NaN, subnormals), in a fresh
    output and in place (a fused step's epilogue)."""
    (lo, hi), select = ALPHA_REGIMES[regime]
    alpha = np.random.default_rng(5).uniform(lo, hi, (1, 1, 24)).astype(np.float32)
    alpha[..., 0] = hi if regime != "mixed" else 0.0  # 1 itself, or a zero that forces the factor form
    x = with_edges((1, 40, 33, 24), np.float32, seed=6)
    x[0, :len(EDGES), 0, :] = np.asarray(EDGES, np.float32)[:, None]
    assert prelu_kernel._factor_rows(x.shape, alpha).select is select
    want = reference_prelu(x, alpha)
    call = KernelCall(Operation(Op.PRELU, [0, 1], [2]), [x, alpha],
                      [Operand(type=T.TENSOR_FLOAT32, dimensions=a.shape) for a in (x, alpha)],
                      [Operand(type=T.TENSOR_FLOAT32, dimensions=x.shape)], runner=_Runner(), cache={})
    y = x.copy()
    with np.errstate(all="ignore"):
        got = prelu_kernel.float32_prelu(call, y, alpha, y if in_place else np.empty_like(x))
    assert_same_bits(got, want)


def test_prelu_two_pass_form_needs_finite_non_zero_alphas():
    shape = (1, 8, 8, 4)
    for bad in (0.0, -0.0, np.inf, -np.inf, np.nan):
        assert prelu_kernel._factor_rows(shape, np.asarray([0.5, bad, 0.25, -0.5], np.float32)).select is None
    assert prelu_kernel._factor_rows(shape, np.asarray([2.0, np.inf, 1.0, 3.0], np.float32)).select is None
