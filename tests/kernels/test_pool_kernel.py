"""AVERAGE_POOL_2D / MAX_POOL_2D kernels against the definition written out in integers: explicit paddings
(asymmetric, up to the filter size), strides over and under the filter, batch > 1, NCHW, activations,
uint8 / int8 over their whole range; the float64 path of windows over 2**14 elements; float average and
max within tolerance / exactly."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nnconv.nnapi.enums import OperandLifeTime
from nnconv.nnapi.enums import OperandType as T
from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.model import Operand, Operation
from nnconv.nnapi.quantization import quantized_activation_range
from nnconv.runtime.kernels import KERNELS, KernelCall
from nnconv.runtime.buffers import BufferPool

AVG, MAX = OperationType.AVERAGE_POOL_2D, OperationType.MAX_POOL_2D
KINDS = {np.float32: T.TENSOR_FLOAT32, np.uint8: T.TENSOR_QUANT8_ASYMM, np.int8: T.TENSOR_QUANT8_ASYMM_SIGNED}


def run_pool(op, x, pads, stride, filt, act, out_shape, zero_point=0, nchw=False, pool=None, cache=None):
    """Explicit padding slots: pads (top, bottom, left, right), stride (h, w), filter (h, w)."""
    kind = KINDS[x.dtype.type]
    scale = 0.0 if kind is T.TENSOR_FLOAT32 else 0.25
    pt, pb, pl, pr = pads
    scalars = [pl, pr, pt, pb, stride[1], stride[0], filt[1], filt[0], act]
    const = OperandLifeTime.CONSTANT_COPY
    ods = [Operand(type=kind, dimensions=x.shape, scale=scale, zero_point=zero_point)]
    ods += [Operand(type=T.INT32, lifetime=const) for _ in scalars] + [Operand(type=T.BOOL, lifetime=const)]
    arrays = [x] + [np.array(v, np.int32) for v in scalars] + [np.array(nchw)]
    out = Operand(type=kind, dimensions=out_shape, scale=scale, zero_point=zero_point)
    runner = type("Runner", (), {"pool": pool})() if pool is not None else None
    call = KernelCall(Operation(op, list(range(11)), [11]), arrays, ods, [out], runner=runner, cache=cache)
    return KERNELS[op](call)[0], out


def windows(x, pads, stride, filt, fill):
    """[N, OH, OW, FH*FW, C] of the padded input and the in-bounds mask [OH, OW, FH*FW], by loops."""
    n, h, w, c = x.shape
    pt, pb, pl, pr = pads
    xp = np.full((n, h + pt + pb, w + pl + pr, c), fill, dtype=x.dtype)
    xp[:, pt:pt + h, pl:pl + w] = x
    inside = np.zeros(xp.shape[1:3], bool)
    inside[pt:pt + h, pl:pl + w] = True
    oh = (h + pt + pb - filt[0]) // stride[0] + 1
    ow = (w + pl + pr - filt[1]) // stride[1] + 1
    taps = [(i, j) for i in range(filt[0]) for j in range(filt[1])]
    win = np.stack([xp[:, i:i + (oh - 1) * stride[0] + 1:stride[0], j:j + (ow - 1) * stride[1] + 1:stride[1]]
                    for i, j in taps], axis=3)
    mask = np.stack([inside[i:i + (oh - 1) * stride[0] + 1:stride[0], j:j + (ow - 1) * stride[1] + 1:stride[1]]
                     for i, j in taps], axis=2)
    return win, mask


def reference_quantized(op, x, pads, stride, filt, act, out):
    lo, hi = quantized_activation_range(act, out)
    if op is MAX:
        win, _mask = windows(x.astype(np.int64), pads, stride, filt, np.iinfo(np.int64).min)
        return np.clip(win.max(axis=3), lo, hi).astype(x.dtype)
    win, mask = windows(x.astype(np.int64), pads, stride, filt, 0)
    acc = win.sum(axis=3)
    count = mask.sum(axis=2)[None, :, :, None].astype(np.int64)
    half = count // 2
    num = np.where(acc > 0, acc + half, acc - half)  # C: (acc +- count/2) / count, truncating
    avg = np.sign(num) * (np.abs(num) // count)
    return np.clip(avg, lo, hi).astype(x.dtype)


@st.composite
def geometries(draw, max_filter=5):
    fh, fw = draw(st.integers(1, max_filter)), draw(st.integers(1, max_filter))
    pads = tuple(draw(st.integers(0, f - 1)) for f in (fh, fh, fw, fw))  # every window keeps an input pixel
    stride = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    h = draw(st.integers(max(1, fh - pads[0] - pads[1]), 12))
    w = draw(st.integers(max(1, fw - pads[2] - pads[3]), 12))
    return (h, w), pads, stride, (fh, fw)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_quantized_pools_are_the_integer_definition(data):
    (h, w), pads, stride, filt = data.draw(geometries())
    op = data.draw(st.sampled_from([AVG, MAX]))
    dtype = data.draw(st.sampled_from([np.uint8, np.int8]))
    n, c = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 5))
    act = data.draw(st.sampled_from([0, 1, 2, 3]))
    info = np.iinfo(dtype)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    x = rng.integers(info.min, info.max, (n, h, w, c), endpoint=True).astype(dtype)
    zero_point = int(rng.integers(info.min, info.max, endpoint=True))
    oh = (h + pads[0] + pads[1] - filt[0]) // stride[0] + 1
    ow = (w + pads[2] + pads[3] - filt[1]) // stride[1] + 1
    pool, cache = BufferPool(plan=False), {}
    for _ in range(2):  # the second run reuses the memoized counts and pooled buffers
        got, out = run_pool(op, x, pads, stride, filt, act, (n, oh, ow, c), zero_point, pool=pool, cache=cache)
        np.testing.assert_array_equal(got, reference_quantized(op, x, pads, stride, filt, act, out))


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_quantized_average_ties_round_away_from_zero(dtype):
    """Every sum of a 2x2 window (count 4: ties at k + 1/2 and k + 1/4 steps) and of a 3x2 SAME corner
    (counts 2, 3, 4, 6): values chosen so that sums sweep the whole range, both signs for int8."""
    info = np.iinfo(dtype)
    values = np.arange(info.min, info.max + 1)
    x = np.stack([values, np.roll(values, 1), np.roll(values, 7), np.roll(values, 100)], axis=-1)
    x = x.reshape(1, 16, 16, 4).astype(dtype)
    x = np.ascontiguousarray(np.concatenate([x, x[:, :, ::-1]], axis=3))  # [1, 16, 16, 8]
    for pads, filt in (((0, 0, 0, 0), (2, 2)), ((1, 1, 1, 0), (3, 2))):
        oh = (16 + pads[0] + pads[1] - filt[0]) + 1
        ow = (16 + pads[2] + pads[3] - filt[1]) + 1
        got, out = run_pool(AVG, x, pads, (1, 1), filt, 0, (1, oh, ow, 8))
        np.testing.assert_array_equal(got, reference_quantized(AVG, x, pads, (1, 1), filt, 0, out))


def test_quantized_average_over_2_14_elements_uses_float64():
    """A 129 x 129 window (16641 elements): float32's rounding argument stops at 2**14, float64 takes over."""
    rng = np.random.default_rng(11)
    x = rng.integers(-128, 127, (1, 129, 130, 2), endpoint=True).astype(np.int8)
    got, out = run_pool(AVG, x, (0, 0, 0, 0), (1, 1), (129, 129), 0, (1, 1, 2, 2))
    np.testing.assert_array_equal(got, reference_quantized(AVG, x, (0, 0, 0, 0), (1, 1), (129, 129), 0, out))


@settings(max_examples=120, deadline=None)
@given(st.data())
def test_float_pools_match_the_definition(data):
    (h, w), pads, stride, filt = data.draw(geometries())
    n, c = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 5))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    x = rng.standard_normal((n, h, w, c)).astype(np.float32)
    oh = (h + pads[0] + pads[1] - filt[0]) // stride[0] + 1
    ow = (w + pads[2] + pads[3] - filt[1]) // stride[1] + 1
    got_max, _ = run_pool(MAX, x, pads, stride, filt, 0, (n, oh, ow, c))
    win, mask = windows(x, pads, stride, filt, -np.inf)
    np.testing.assert_array_equal(got_max, win.max(axis=3))
    got_avg, _ = run_pool(AVG, x, pads, stride, filt, 0, (n, oh, ow, c))
    win, mask = windows(x.astype(np.float64), pads, stride, filt, 0.0)
    want = win.sum(axis=3) / mask.sum(axis=2)[None, :, :, None]
    np.testing.assert_allclose(got_avg, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("op", [AVG, MAX])
@pytest.mark.parametrize("dtype", [np.float32, np.uint8, np.int8])
def test_nchw_is_nhwc_transposed(op, dtype):
    rng = np.random.default_rng(4)
    x = rng.integers(-128, 127, (2, 9, 8, 3)).astype(dtype) if dtype != np.float32 else \
        rng.standard_normal((2, 9, 8, 3)).astype(dtype)
    nhwc, _ = run_pool(op, x, (1, 1, 0, 1), (2, 2), (3, 3), 1, (2, 5, 4, 3))
    nchw, _ = run_pool(op, np.ascontiguousarray(x.transpose(0, 3, 1, 2)), (1, 1, 0, 1), (2, 2), (3, 3), 1,
                       (2, 3, 5, 4), nchw=True)
    np.testing.assert_array_equal(nchw, nhwc.transpose(0, 3, 1, 2))


@pytest.mark.parametrize("op", [AVG, MAX])
@pytest.mark.parametrize("dtype", [np.float32, np.uint8, np.int8])
@pytest.mark.parametrize("shape,filt,stride", [((2, 7, 7, 3), (7, 7), (1, 1)), ((1, 8, 9, 5), (7, 6), (2, 4)),
                                               ((1, 40, 33, 16), (40, 33), (1, 1))])
def test_one_window_pools(op, dtype, shape, filt, stride):
    """Global pooling (one window, no padding; rows and columns left over by the stride are not read)."""
    rng = np.random.default_rng(12)
    x = rng.standard_normal(shape).astype(dtype) if dtype == np.float32 else \
        rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max, shape, endpoint=True).astype(dtype)
    out_shape = (shape[0], 1, 1, shape[3])
    got, out = run_pool(op, x, (0, 0, 0, 0), stride, filt, 0, out_shape, zero_point=3)
    if dtype != np.float32:
        np.testing.assert_array_equal(got, reference_quantized(op, x, (0, 0, 0, 0), stride, filt, 0, out))
        return
    win, _mask = windows(x.astype(np.float64), (0, 0, 0, 0), stride, filt, 0.0)
    want = win.max(axis=3) if op is MAX else win.mean(axis=3)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
