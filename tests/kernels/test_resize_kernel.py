"""RESIZE_BILINEAR kernel beyond the TFLite parity tests (tests/lowering/test_resize.py): the quantized path
against the reference's four-term float32 sum written out directly (bit-exact), the separable float path
against it within the float tolerance and with the same inf / NaN outputs, NCHW and float16, and the
per-operation memo of the geometry."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nnconv.nnapi.enums import OperandLifeTime
from nnconv.nnapi.enums import OperandType as T
from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.model import Operand, Operation
from nnconv.runtime.buffers import BufferPool
from nnconv.runtime.kernels import KERNELS, KernelCall
from nnconv.runtime.kernels._resize import resize_scale


def _axis(out_size, in_size, align, half):
    scale = resize_scale(in_size, out_size, align)
    pos = np.arange(out_size, dtype=np.float32)
    src = ((pos + np.float32(0.5)) * scale - np.float32(0.5)) if half else pos * scale
    src = src.astype(np.float32)
    lo = np.maximum(np.floor(src).astype(np.int64), 0)
    hi = np.minimum(np.ceil(src).astype(np.int64), in_size - 1)
    return lo, hi, (src - lo.astype(np.float32)).astype(np.float32)


def reference_sum(x, out_h, out_w, align, half):
    """The reference's per-output float32 expression as C++ evaluates it (TFLite's
    `reference_ops::ResizeBilinear<T>`, which NNAPI's ResizeImageOps.cpp calls for every type): the four
    products (A*wy0)*wx0, (B*wy1)*wx0, (C*wy0)*wx1, (D*wy1)*wx1 summed left to right."""
    y0, y1, fy = _axis(out_h, x.shape[1], align, half)
    x0, x1, fx = _axis(out_w, x.shape[2], align, half)
    xf = x.astype(np.float32)
    fy, fx = fy[None, :, None, None], fx[None, None, :, None]
    one = np.float32(1)
    with np.errstate(invalid="ignore", over="ignore"):
        total = xf[:, y0][:, :, x0] * (one - fy) * (one - fx) + xf[:, y1][:, :, x0] * fy * (one - fx)
        total = total + xf[:, y0][:, :, x1] * (one - fy) * fx
        return (total + xf[:, y1][:, :, x1] * fy * fx).astype(np.float32)


def reference_quantized(x, out_h, out_w, align, half):
    """static_cast<T>(sum + 0.5f): the rounding offset added in float32, then a conversion toward zero (an
    int8 sum of -2.7 gives -2, an exact -3 gives -2; uint8 sums are never negative: half up)."""
    lo, hi = (0, 255) if x.dtype == np.uint8 else (-128, 127)
    y = reference_sum(x, out_h, out_w, align, half)
    return np.clip(np.trunc(y + np.float32(0.5)), lo, hi).astype(x.dtype)


def test_int8_rounds_as_static_cast_of_the_offset_sum():
    """Issue 35 (item 6): a constant int8 region of -3 resizes to -2 on NNAPI's reference CPU (-3 + 0.5
    converted toward zero); TFLite's int8 kernel keeps -3, nnconv's kernel used to round to nearest."""
    x = np.full((1, 2, 2, 1), -3, np.int8)
    x[0, 0, 0, 0] = 4
    got = run_kernel(x, 4, 4)
    assert got[0, 3, 3, 0] == -2 and got[0, 0, 0, 0] == 4
    # 4 at (0, 0) weighs 0.5 into (0, 1): (4 - 3) / 2 = 0.5 -> 1.0 -> 1; (1, 1): 0.25 * 4 - 0.75 * 3 = -1.25 -> -0
    assert got[0, 0, 1, 0] == 1 and got[0, 1, 1, 0] == 0


def run_kernel(x, out_h, out_w, align=False, half=False, nchw=False, zero_point=0, pool=None, cache=None):
    kind = {np.dtype(np.float32): T.TENSOR_FLOAT32, np.dtype(np.float16): T.TENSOR_FLOAT16,
            np.dtype(np.uint8): T.TENSOR_QUANT8_ASYMM, np.dtype(np.int8): T.TENSOR_QUANT8_ASYMM_SIGNED}[x.dtype]
    scale = 0.5 if kind in (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED) else 0.0
    scalars = [np.array(out_w, np.int32), np.array(out_h, np.int32), np.array(nchw), np.array(align),
               np.array(half)]
    const = OperandLifeTime.CONSTANT_COPY
    ods = [Operand(type=kind, dimensions=x.shape, scale=scale, zero_point=zero_point),
           Operand(type=T.INT32, lifetime=const), Operand(type=T.INT32, lifetime=const),
           Operand(type=T.BOOL, lifetime=const), Operand(type=T.BOOL, lifetime=const),
           Operand(type=T.BOOL, lifetime=const)]
    n, c = x.shape[0], (x.shape[1] if nchw else x.shape[3])
    out_shape = (n, c, out_h, out_w) if nchw else (n, out_h, out_w, c)
    out = Operand(type=kind, dimensions=out_shape, scale=scale, zero_point=zero_point)
    runner = None
    if pool is not None:
        runner = type("Runner", (), {"pool": pool})()
    call = KernelCall(Operation(OperationType.RESIZE_BILINEAR, list(range(6)), [6]), [x, *scalars], ods, [out],
                      runner=runner, cache=cache)
    y = KERNELS[OperationType.RESIZE_BILINEAR](call)[0]
    assert y.shape == out_shape and y.dtype == x.dtype
    return y


FLAGS = st.sampled_from([(False, False), (True, False), (False, True)])


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_quantized_is_the_reference_sum_bit_exact(data):
    """Quantized outputs keep the reference's float32 sum operation for operation: random sizes (up, down,
    one axis only, 1-pixel axes), batch > 1, every flag, uint8 and int8 over their whole range."""
    dtype = data.draw(st.sampled_from([np.uint8, np.int8]))
    n, h, w, c = (data.draw(st.integers(1, hi)) for hi in (3, 9, 9, 5))
    out_h, out_w = data.draw(st.integers(1, 19)), data.draw(st.integers(1, 19))
    align, half = data.draw(FLAGS)
    info = np.iinfo(dtype)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    x = rng.integers(info.min, info.max, (n, h, w, c), endpoint=True).astype(dtype)
    zero_point = int(rng.integers(info.min, info.max, endpoint=True))  # the zero point does not enter
    got = run_kernel(x, out_h, out_w, align, half, zero_point=zero_point)
    np.testing.assert_array_equal(got, reference_quantized(x, out_h, out_w, align, half))


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("align,half", [(False, False), (True, False), (False, True)])
def test_quantized_non_dyadic_scales_exhaustive_pairs(dtype, align, half):
    """Every ordered pair of extreme and middle values on two neighbours, resized by non-dyadic factors
    (7x6 -> 9x13, 3x5, 7x4): the weights are inexact in float32, where a reordered sum could round differently."""
    info = np.iinfo(dtype)
    values = np.array([info.min, info.min + 1, -1 if info.min < 0 else 1, 0, 37, 100, info.max - 1, info.max])
    a, b = np.meshgrid(values, values, indexing="ij")
    pairs = np.stack([a.ravel(), b.ravel()], axis=-1).astype(dtype)  # [64, 2]
    x = np.tile(pairs[:, None, :, None], (1, 7, 3, 1))  # [64, 7, 6, 1]: a, b, a, b, ... along W
    for out_h, out_w in ((9, 13), (3, 5), (7, 4)):
        got = run_kernel(x, out_h, out_w, align, half)
        np.testing.assert_array_equal(got, reference_quantized(x, out_h, out_w, align, half))


@settings(max_examples=120, deadline=None)
@given(st.data())
def test_float_separable_within_tolerance_of_the_reference_sum(data):
    n, h, w, c = (data.draw(st.integers(1, hi)) for hi in (3, 12, 12, 6))
    out_h, out_w = data.draw(st.integers(1, 25)), data.draw(st.integers(1, 25))
    align, half = data.draw(FLAGS)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    x = (rng.standard_normal((n, h, w, c)) * 10.0 ** rng.integers(-3, 4)).astype(np.float32)
    got = run_kernel(x, out_h, out_w, align, half)
    want = reference_sum(x, out_h, out_w, align, half)
    value_range = float(np.abs(x).max())
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6 * value_range + 1e-30)


@pytest.mark.parametrize("align,half", [(False, False), (True, False), (False, True)])
@pytest.mark.parametrize("out_h,out_w", [(12, 15), (3, 4), (6, 10), (1, 1)])
def test_float_inf_and_nan_reach_the_same_outputs(align, half, out_h, out_w):
    """inf / NaN inputs: the outputs that are NaN, +inf and -inf are those of the reference's sum (an
    inf under a zero or negative border weight is NaN in both)."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 6, 5, 3)).astype(np.float32)
    flat = x.reshape(-1)
    spots = rng.choice(flat.size, 12, replace=False)
    flat[spots[:4]], flat[spots[4:8]], flat[spots[8:]] = np.inf, -np.inf, np.nan
    got = run_kernel(x, out_h, out_w, align, half)
    want = reference_sum(x, out_h, out_w, align, half)
    for mask in (np.isnan, np.isposinf, np.isneginf):
        np.testing.assert_array_equal(mask(got), mask(want))
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.uint8, np.int8])
@pytest.mark.parametrize("align,half", [(False, False), (True, False), (False, True)])
def test_nchw_is_nhwc_transposed(dtype, align, half):
    rng = np.random.default_rng(5)
    x = rng.uniform(-100, 100, (2, 5, 7, 3))
    if np.dtype(dtype).kind != "f":
        x = np.clip(x, 0 if dtype == np.uint8 else -128, 127)
    x = x.astype(dtype)
    nhwc = run_kernel(x, 9, 4, align, half)
    nchw = run_kernel(np.ascontiguousarray(x.transpose(0, 3, 1, 2)), 9, 4, align, half, nchw=True)
    np.testing.assert_array_equal(nchw, nhwc.transpose(0, 3, 1, 2))


def test_float16_is_computed_in_float32():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((1, 4, 6, 2)).astype(np.float16)
    got = run_kernel(x, 7, 11, half=True)
    want = reference_sum(x.astype(np.float32), 7, 11, False, True).astype(np.float16)
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=1e-3, atol=1e-3)


def test_memoized_geometry_and_pooled_buffers_across_runs():
    """The same operation run again (the runner's memo cache, pooled scratch) and then on another batch
    size gives the reference's values each time: the memo is keyed by the input shape."""
    pool, cache = BufferPool(), {}
    rng = np.random.default_rng(7)
    for shape in ((1, 8, 8, 4), (1, 8, 8, 4), (3, 8, 8, 4), (1, 8, 8, 4)):
        x = rng.integers(0, 255, shape, endpoint=True).astype(np.uint8)
        got = run_kernel(x, 16, 12, half=True, pool=pool, cache=cache)
        np.testing.assert_array_equal(got, reference_quantized(x, 16, 12, False, True))
        xf = rng.standard_normal(shape).astype(np.float32)
        got = run_kernel(xf, 16, 12, half=True, pool=pool, cache=cache)
        np.testing.assert_allclose(got, reference_sum(xf, 16, 12, False, True), rtol=1e-6, atol=1e-6)
