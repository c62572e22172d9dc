"""TRANSPOSE_CONV_2D kernel against its definition (every input pixel scatters x . filter into
out[h*s - pad + k]) written out tap by tap in integers: explicit paddings cropping any side, strides under,
equal to and over the filter (overlapping, tiling and gapped taps), batch > 1, NCHW, uint8 / int8 with
any zero points (bit-exact through the reference requantization), and float within tolerance."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from nnconv.nnapi.enums import OperandLifeTime
from nnconv.nnapi.enums import OperandType as T
from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.model import Operand, Operation
from nnconv.nnapi.quantization import conv_multipliers, requantize_accumulator
from nnconv.runtime.kernels import KERNELS, KernelCall
from nnconv.runtime.buffers import BufferPool

OP = OperationType.TRANSPOSE_CONV_2D
SCALES = (0.05, 0.02, 0.3)  # input, filter, output


def run_tconv(x, w, b, pads, stride, act, kind, zps=(0, 0, 0), nchw=False, pool=None, cache=None):
    """Explicit padding form: pads (top, bottom, left, right), stride (h, w)."""
    const = OperandLifeTime.CONSTANT_COPY
    quant = kind is not T.TENSOR_FLOAT32
    s_in, s_w, s_out = SCALES if quant else (0.0, 0.0, 0.0)
    pt, pb, pl, pr = pads
    scalars = [pl, pr, pt, pb, stride[1], stride[0], act]
    ods = [Operand(type=kind, dimensions=x.shape, scale=s_in, zero_point=zps[0]),
           Operand(type=kind, dimensions=w.shape, scale=s_w, zero_point=zps[1], lifetime=const),
           Operand(type=T.TENSOR_INT32 if quant else kind, dimensions=b.shape, scale=s_in * s_w, lifetime=const)]
    ods += [Operand(type=T.INT32, lifetime=const) for _ in scalars] + [Operand(type=T.BOOL, lifetime=const)]
    arrays = [x, w, b] + [np.array(v, np.int32) for v in scalars] + [np.array(nchw)]
    n, h, wd = (x.shape[0], x.shape[2], x.shape[3]) if nchw else x.shape[:3]
    o, kh, kw, _c = w.shape
    oh, ow = h * stride[0] + kh - stride[0] - pt - pb, wd * stride[1] + kw - stride[1] - pl - pr
    out = Operand(type=kind, dimensions=(n, o, oh, ow) if nchw else (n, oh, ow, o), scale=s_out, zero_point=zps[2])
    runner = type("Runner", (), {"pool": pool})() if pool is not None else None
    call = KernelCall(Operation(OP, list(range(11)), [11]), arrays, ods, [out], runner=runner, cache=cache)
    return KERNELS[OP](call)[0], out


def scatter(x, w, pads, stride):
    """The definition in the input's dtype (int64 or float64): [N, OH, OW, O] before bias."""
    n, h, wd, c = x.shape
    o, kh, kw, _c = w.shape
    pt, pb, pl, pr = pads
    full = np.zeros((n, (h - 1) * stride[0] + kh, (wd - 1) * stride[1] + kw, o), x.dtype)
    for i in range(h):
        for j in range(wd):
            contrib = np.einsum("nc,oyxc->nyxo", x[:, i, j], w)
            full[:, i * stride[0]:i * stride[0] + kh, j * stride[1]:j * stride[1] + kw] += contrib
    oh, ow = full.shape[1] - pt - pb, full.shape[2] - pl - pr
    return full[:, pt:pt + oh, pl:pl + ow]


@st.composite
def geometries(draw):
    kh, kw = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    stride = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    h, w = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    full_h, full_w = (h - 1) * stride[0] + kh, (w - 1) * stride[1] + kw
    pt, pl = draw(st.integers(0, full_h - 1)), draw(st.integers(0, full_w - 1))
    pb, pr = draw(st.integers(0, full_h - 1 - pt)), draw(st.integers(0, full_w - 1 - pl))
    return (h, w), (kh, kw), stride, (pt, pb, pl, pr)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_quantized_is_the_scatter_definition_bit_exact(data):
    (h, w), (kh, kw), stride, pads = data.draw(geometries())
    dtype = data.draw(st.sampled_from([np.uint8, np.int8]))
    kind = T.TENSOR_QUANT8_ASYMM if dtype == np.uint8 else T.TENSOR_QUANT8_ASYMM_SIGNED
    n, c, o = data.draw(st.integers(1, 2)), data.draw(st.integers(1, 5)), data.draw(st.integers(1, 4))
    act = data.draw(st.sampled_from([0, 1, 3]))
    info = np.iinfo(dtype)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    x = rng.integers(info.min, info.max, (n, h, w, c), endpoint=True).astype(dtype)
    wt = rng.integers(info.min, info.max, (o, kh, kw, c), endpoint=True).astype(dtype)
    b = rng.integers(-5000, 5000, o).astype(np.int32)
    zps = tuple(int(v) for v in rng.integers(info.min, info.max, 3, endpoint=True))
    pool, cache = BufferPool(plan=False), {}
    for _ in range(2):  # memoized filter and pooled buffers on the second run
        got, out = run_tconv(x, wt, b, pads, stride, act, kind, zps, pool=pool, cache=cache)
        acc = scatter(x.astype(np.int64) - zps[0], wt.astype(np.int64) - zps[1], pads, stride) + b
        m, sh = conv_multipliers(SCALES[0], np.array([SCALES[1]]), SCALES[2])
        np.testing.assert_array_equal(got, requantize_accumulator(acc, m, sh, out, act))


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_float_is_the_scatter_definition(data):
    (h, w), (kh, kw), stride, pads = data.draw(geometries())
    n, c, o = data.draw(st.integers(1, 2)), data.draw(st.integers(1, 6)), data.draw(st.integers(1, 4))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    x = rng.standard_normal((n, h, w, c)).astype(np.float32)
    wt = rng.standard_normal((o, kh, kw, c)).astype(np.float32)
    b = rng.standard_normal(o).astype(np.float32)
    got, _ = run_tconv(x, wt, b, pads, stride, 0, T.TENSOR_FLOAT32)
    want = scatter(x.astype(np.float64), wt.astype(np.float64), pads, stride) + b
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    nchw, _ = run_tconv(np.ascontiguousarray(x.transpose(0, 3, 1, 2)), wt, b, pads, stride, 0, T.TENSOR_FLOAT32,
                        nchw=True)
    # BLAS may round the NCHW input's (copied, differently aligned) pixels in another order: a few ulp
    np.testing.assert_allclose(nchw, got.transpose(0, 3, 1, 2), rtol=1e-6, atol=1e-6)
