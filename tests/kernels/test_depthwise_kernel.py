"""DEPTHWISE_CONV_2D kernel beyond the CTS vectors: the int64 accumulator branch of very large filters,
cross-checked against CONV_2D (a one-channel depthwise convolution is a one-channel convolution)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nnconv.runtime.kernels import KERNELS, KernelCall
from nnconv.runtime.kernels._depthwise_float import ROW_BLOCK_BYTES
from nnconv.nnapi.enums import OperandType as T
from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.model import Operand, Operation

RNG = np.random.default_rng(9)


def _call(op, x, w, b, scalars, out_shape):
    ods = [Operand(type=T.TENSOR_QUANT8_ASYMM, dimensions=x.shape, scale=0.5, zero_point=0),
           Operand(type=T.TENSOR_QUANT8_ASYMM, dimensions=w.shape, scale=0.5, zero_point=255),
           Operand(type=T.TENSOR_INT32, dimensions=b.shape, scale=0.25, zero_point=0)]
    ods += [Operand(type=T.INT32, dimensions=()) for _ in scalars]
    out = Operand(type=T.TENSOR_QUANT8_ASYMM, dimensions=out_shape, scale=2.0**20, zero_point=7)
    arrays = [x, w, b] + [np.array(s, np.int32) for s in scalars]
    call = KernelCall(Operation(op, list(range(len(arrays))), []), arrays, ods, [out])
    return KERNELS[op](call)[0]


def test_depthwise_huge_filter_uses_exact_int64_accumulation():
    # 183 x 183 = 33489 taps of 255 * 255: the sum exceeds int32, so the kernel must widen.
    k = 183
    x = np.full((1, k, k, 1), 255, np.uint8)
    w = np.zeros((1, k, k, 1), np.uint8)  # (0 - 255) * (255 - 0) per tap
    x[0, 0, 0, 0] = RNG.integers(0, 255)
    b = np.zeros(1, np.int32)
    valid = [2, 1, 1, 0]  # VALID, strides 1, activation NONE
    dw = _call(OperationType.DEPTHWISE_CONV_2D, x, w, b, valid[:3] + [1, 0], (1, 1, 1, 1))
    conv = _call(OperationType.CONV_2D, x, w, b, valid, (1, 1, 1, 1))
    acc = int(x.astype(np.int64).sum()) * -255
    assert acc < -(2**31)
    np.testing.assert_array_equal(dw, conv)
    assert dw.reshape(()) != 7  # the large negative accumulator moved the output off the zero point


def _float_call(x, w, b, scalars, out_shape):
    ods = [Operand(type=T.TENSOR_FLOAT32, dimensions=x.shape), Operand(type=T.TENSOR_FLOAT32, dimensions=w.shape),
           Operand(type=T.TENSOR_FLOAT32, dimensions=b.shape)]
    ods += [Operand(type=T.INT32, dimensions=()) for _ in scalars]
    out = Operand(type=T.TENSOR_FLOAT32, dimensions=out_shape)
    arrays = [x, w, b] + [np.array(s, np.int32) for s in scalars]
    call = KernelCall(Operation(OperationType.DEPTHWISE_CONV_2D, list(range(len(arrays))), []), arrays, ods, [out])
    return KERNELS[OperationType.DEPTHWISE_CONV_2D](call)[0]


def _direct_depthwise(x, w, b, stride, dilation, pad, multiplier, activation_hi):
    """The definition, tap by tap in row-major order on a zero-padded input; `pad` is one amount for all
    sides or (top, bottom, left, right), `stride` and `dilation` one for both axes or (h, w)."""
    n, h, wd, c = x.shape
    _one, kh, kw, oc = w.shape
    pt, pb, pl, pr = (pad,) * 4 if isinstance(pad, int) else pad
    sh, sw = (stride, stride) if isinstance(stride, int) else stride
    dh, dw = (dilation, dilation) if isinstance(dilation, int) else dilation
    xp = np.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)))
    xp = np.repeat(xp, multiplier, axis=3)  # output channel c*M + m reads input channel c
    oh = (h + pt + pb - (kh - 1) * dh - 1) // sh + 1
    ow = (wd + pl + pr - (kw - 1) * dw - 1) // sw + 1
    acc = np.zeros((n, oh, ow, oc), np.float32)
    for ky in range(kh):
        for kx in range(kw):
            y0, x0 = ky * dh, kx * dw
            acc += xp[:, y0:y0 + (oh - 1) * sh + 1:sh, x0:x0 + (ow - 1) * sw + 1:sw] * w[0, ky, kx]
    return np.clip(acc + b, 0, activation_hi)


@pytest.mark.parametrize("channels,multiplier,kernel,stride,dilation", [
    pytest.param(8, 1, 3, 1, 1, id="narrow-rows"),
    pytest.param(24, 1, 3, 1, 2, id="rows-dilated"),
    pytest.param(5, 1, 3, 2, 1, id="narrow-taps-stride2"),
    pytest.param(72, 1, 3, 2, 1, id="wide-einsum-stride2"),
    pytest.param(96, 1, 5, 1, 1, id="wide-einsum-5x5"),
    pytest.param(4, 2, 3, 2, 1, id="narrow-multiplier2-stride2"),
    pytest.param(40, 2, 3, 1, 2, id="wide-multiplier2-dilated"),
])
def test_float_depthwise_paths_match_the_definition(channels, multiplier, kernel, stride, dilation):
    # Every float path (row runs for stride 1 and multiplier 1, einsum over the im2col view for >= 64 output
    # channels, per-tap passes below) sums the taps in row-major order from 0: the result equals the
    # tap-by-tap definition bit for bit.
    x = RNG.standard_normal((2, 13, 11, channels)).astype(np.float32)
    w = RNG.standard_normal((1, kernel, kernel, channels * multiplier)).astype(np.float32)
    b = RNG.standard_normal(channels * multiplier).astype(np.float32)
    pad = (kernel - 1) * dilation // 2
    want = _direct_depthwise(x, w, b, stride, dilation, pad, multiplier, 6.0)
    # explicit padding: pads l/r/t/b, strides w/h, multiplier, RELU6, NHWC, dilations w/h
    got = _float_call(x, w, b, [pad, pad, pad, pad, stride, stride, multiplier, 3, 0, dilation, dilation], want.shape)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("channels,kernel,stride,dilation", [
    pytest.param(32, 5, 2, 1, id="5x5-stride2"),
    pytest.param(24, 3, 3, 1, id="3x3-stride3"),
    pytest.param(16, 3, 2, 2, id="stride2-dilated"),
    pytest.param(8, (3, 5), (2, 1), (1, 2), id="stride-h-only-dilated-w"),
    pytest.param(40, (5, 3), (1, 2), 1, id="stride-w-only"),
    pytest.param(3, 5, 2, 1, id="3-channels"),
])
def test_float_depthwise_strided_row_runs_match_the_definition(channels, kernel, stride, dilation):
    # Strided maps of more than 64 output pixels run as row runs over a copy of the taps' columns: still
    # the taps summed in row-major order from 0, so the tap-by-tap definition bit for bit.
    kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
    sh, sw = (stride, stride) if isinstance(stride, int) else stride
    dh, dw = (dilation, dilation) if isinstance(dilation, int) else dilation
    x = RNG.standard_normal((2, 29, 27, channels)).astype(np.float32)
    w = RNG.standard_normal((1, kh, kw, channels)).astype(np.float32)
    b = RNG.standard_normal(channels).astype(np.float32)
    span_h, span_w = (kh - 1) * dh, (kw - 1) * dw
    pad = (span_h // 2, span_h - span_h // 2, span_w // 2, span_w - span_w // 2)
    want = _direct_depthwise(x, w, b, (sh, sw), (dh, dw), pad, 1, 6.0)
    assert want.shape[1] * want.shape[2] > 64  # the strided row-run path
    # explicit padding: pads l/r/t/b, strides w/h, multiplier 1, RELU6, NHWC, dilations w/h
    got = _float_call(x, w, b, [pad[2], pad[3], pad[0], pad[1], sw, sh, 1, 3, 0, dw, dh], want.shape)
    np.testing.assert_array_equal(got, want)
    # NCHW: the kernel works on the transposed view; same values
    got_nchw = _float_call(np.ascontiguousarray(x.transpose(0, 3, 1, 2)), w, b,
                           [pad[2], pad[3], pad[0], pad[1], sw, sh, 1, 3, 1, dw, dh],
                           (want.shape[0], channels) + want.shape[1:3])
    np.testing.assert_array_equal(got_nchw.transpose(0, 2, 3, 1), want)


def _random_case(h: int, w: int, channels: int, kh: int, kw: int, stride, dilation, pads, seed: int):
    """(x, filter, bias, the definition's RELU6 output) of a random multiplier-1 float case, or None when the
    filter does not fit the padded input. `pads` top, bottom, left, right."""
    pt, pb, pl, pr = pads
    if h + pt + pb < (kh - 1) * dilation[0] + 1 or w + pl + pr < (kw - 1) * dilation[1] + 1:
        return None
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, h, w, channels)).astype(np.float32)
    f = rng.standard_normal((1, kh, kw, channels)).astype(np.float32)
    b = rng.standard_normal(channels).astype(np.float32)
    return x, f, b, _direct_depthwise(x, f, b, stride, dilation, (pt, pb, pl, pr), 1, 6.0)


@settings(max_examples=60, deadline=None)
@given(h=st.integers(6, 30), w=st.integers(6, 30), channels=st.sampled_from([1, 3, 8, 20]),
       kh=st.integers(1, 7), kw=st.integers(1, 7), stride=st.tuples(st.integers(1, 3), st.integers(2, 3)),
       dilation=st.tuples(st.integers(1, 2), st.integers(1, 3)), pads=st.tuples(*[st.integers(0, 6)] * 4),
       seed=st.integers(0, 2**16))
def test_float_depthwise_strided_row_runs_any_geometry_match_the_definition(h, w, channels, kh, kw, stride,
                                                                            dilation, pads, seed):
    # Strided along W with more than 64 output pixels (row runs over the taps' copied columns), any padding,
    # including tap columns whose every pixel is padding and rows the windows never reach: the definition
    # bit for bit (each output's taps summed in row-major order from 0).
    case = _random_case(h, w, channels, kh, kw, stride, dilation, pads, seed)
    if case is None:
        return  # the filter does not fit the padded input (refused elsewhere)
    x, f, b, want = case
    pt, pb, pl, pr = pads
    if want.shape[1] * want.shape[2] <= 64:
        return  # the im2col / per-tap paths (the test above)
    # explicit padding: pads l/r/t/b, strides w/h, multiplier 1, RELU6, NHWC, dilations w/h
    got = _float_call(x, f, b, [pl, pr, pt, pb, stride[1], stride[0], 1, 3, 0, dilation[1], dilation[0]],
                      want.shape)
    np.testing.assert_array_equal(got, want)


def test_float16_depthwise_strided_row_runs_compute_in_float32():
    # TENSOR_FLOAT16 operands: the same float32 row runs, rounded to float16 once at the end.
    x = RNG.standard_normal((1, 20, 22, 12)).astype(np.float16)
    w = RNG.standard_normal((1, 5, 5, 12)).astype(np.float16)
    b = RNG.standard_normal(12).astype(np.float16)
    want = _direct_depthwise(x.astype(np.float32), w.astype(np.float32), b.astype(np.float32), 2, 1,
                             (1, 2, 1, 2), 1, 6.0).astype(np.float16)
    ods = [Operand(type=T.TENSOR_FLOAT16, dimensions=a.shape) for a in (x, w, b)]
    scalars = [1, 2, 1, 2, 2, 2, 1, 3, 0]  # pads l/r/t/b, strides w/h, multiplier 1, RELU6, NHWC
    ods += [Operand(type=T.INT32, dimensions=()) for _ in scalars]
    call = KernelCall(Operation(OperationType.DEPTHWISE_CONV_2D, list(range(12)), []),
                      [x, w, b] + [np.array(s, np.int32) for s in scalars], ods,
                      [Operand(type=T.TENSOR_FLOAT16, dimensions=want.shape)])
    got = KERNELS[OperationType.DEPTHWISE_CONV_2D](call)[0]
    assert got.dtype == np.float16 and want.shape[1] * want.shape[2] > 64
    np.testing.assert_array_equal(got, want)


def test_float_depthwise_nchw_unpadded_input_matches_nhwc():
    # VALID padding hands the row-run path the unpadded input itself; in NCHW that is a transposed view
    # whose rows are not contiguous runs, which the path must copy rather than misread.
    x = RNG.standard_normal((2, 9, 8, 6)).astype(np.float32)
    w = RNG.standard_normal((1, 3, 3, 6)).astype(np.float32)
    b = RNG.standard_normal(6).astype(np.float32)
    want = _direct_depthwise(x, w, b, 1, 1, 0, 1, np.inf)
    # implicit padding: VALID (2), strides 1/1, multiplier 1, RELU (1), NCHW
    got = _float_call(np.ascontiguousarray(x.transpose(0, 3, 1, 2)), w, b, [2, 1, 1, 1, 1, 1], (2, 6, 7, 6))
    np.testing.assert_array_equal(got.transpose(0, 2, 3, 1), want)


@settings(max_examples=80, deadline=None)
@given(h=st.integers(1, 12), w=st.integers(1, 12), channels=st.sampled_from([1, 3, 8, 64, 70]),
       kh=st.integers(1, 5), kw=st.integers(1, 5), stride=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)), pads=st.tuples(*[st.integers(0, 4)] * 4),
       seed=st.integers(0, 2**16))
def test_float_depthwise_any_geometry_matches_the_definition(h, w, channels, kh, kw, stride, dilation, pads, seed):
    # Multiplier 1 (row runs at stride 1, the im2col einsum or per-tap passes otherwise): any padding,
    # stride and dilation gives the tap-by-tap definition, padded taps included. Within float rounding,
    # not bit for bit: on a short reduction (one channel, a few pixels) einsum may split the taps' sum
    # over several accumulators.
    case = _random_case(h, w, channels, kh, kw, stride, dilation, pads, seed)
    if case is None:
        return  # the filter does not fit the padded input (refused elsewhere)
    x, f, b, want = case
    pt, pb, pl, pr = pads
    # explicit padding: pads l/r/t/b, strides w/h, multiplier 1, RELU6, NHWC, dilations w/h
    got = _float_call(x, f, b, [pl, pr, pt, pb, stride[1], stride[0], 1, 3, 0, dilation[1], dilation[0]],
                      want.shape)
    # a reordered float32 sum of KH*KW + 1 terms differs by at most ~(KH*KW + 1) roundings of the sum of
    # the terms' magnitudes (the clamp only shrinks differences)
    magnitude = _direct_depthwise(np.abs(x), np.abs(f), np.abs(b), stride, dilation, (pt, pb, pl, pr), 1, np.inf)
    bound = (kh * kw + 1) * np.finfo(np.float32).eps * magnitude
    assert np.all(np.abs(got - want) <= bound)


@pytest.mark.parametrize("kernel,dilation,activation,stride,size", [
    pytest.param(3, 1, 3, 1, (13, 11), id="3x3-relu6"),
    pytest.param(5, 2, 0, 1, (13, 11), id="5x5-dilated"),
    pytest.param(3, 3, 1, 1, (13, 11), id="3x3-dilated3-relu"),
    # strided maps of more than 64 output pixels: row runs over the taps' copied columns
    pytest.param(7, 1, 0, 2, (23, 21), id="7x7-stride2"),
    pytest.param(3, 2, 3, 2, (22, 19), id="3x3-stride2-dilated-relu6"),
    pytest.param(5, 1, 1, 3, (31, 28), id="5x5-stride3-relu"),
    # more rows than one block of int32 sums (ROW_BLOCK_BYTES): the requantization runs per block
    pytest.param(3, 1, 3, 1, (100, 60), id="3x3-two-blocks"),
    pytest.param(7, 1, 0, 2, (200, 120), id="7x7-stride2-two-blocks"),
])
@pytest.mark.parametrize("t,zp", [(T.TENSOR_QUANT8_ASYMM_SIGNED, -5), (T.TENSOR_QUANT8_ASYMM, 131)],
                         ids=["int8", "uint8"])
def test_quant_depthwise_row_runs_equal_the_integer_definition(kernel, dilation, activation, stride, size, t, zp):
    # Multiplier 1 (int32 row runs): bit for bit the exact integer sums of the definition, then the
    # reference requantization, with a per-channel filter. Strided: the column copy centers the 8-bit
    # values itself (int8 and uint8 storage, an off-centre zero point).
    from nnconv.nnapi.model import SymmPerChannelQuantParams
    from nnconv.nnapi.quantization import conv_multipliers, requantize_accumulator
    c, (h, wd) = 24, size
    info = np.iinfo(np.int8 if t is T.TENSOR_QUANT8_ASYMM_SIGNED else np.uint8)
    x = RNG.integers(info.min, info.max + 1, (2, h, wd, c)).astype(info.dtype)
    w = RNG.integers(-127, 128, (1, kernel, kernel, c)).astype(np.int8)
    b = RNG.integers(-3000, 3000, c).astype(np.int32)
    scales = RNG.uniform(0.002, 0.02, c).astype(np.float32)
    pad = (kernel - 1) * dilation // 2
    span = (kernel - 1) * dilation
    oh, ow = (h + 2 * pad - span - 1) // stride + 1, (wd + 2 * pad - span - 1) // stride + 1
    assert stride == 1 or oh * ow > 64  # strided: the row-run path
    if min(size) >= 60:
        assert oh * ow * c * 4 > ROW_BLOCK_BYTES  # several blocks
    xin = Operand(type=t, dimensions=x.shape, scale=0.05, zero_point=zp)
    out = Operand(type=t, dimensions=(2, oh, ow, c), scale=0.08, zero_point=3 if info.min < 0 else 120)
    ods = [xin, Operand(type=T.TENSOR_QUANT8_SYMM_PER_CHANNEL, dimensions=w.shape, scale=0.0, zero_point=0,
                        channel_quant=SymmPerChannelQuantParams(scales=list(scales), channel_dim=3)),
           Operand(type=T.TENSOR_INT32, dimensions=b.shape, scale=0.0, zero_point=0)]
    # explicit padding l/r/t/b, strides w/h, multiplier, activation, NCHW (BOOL), dilations w/h
    scalars = [pad, pad, pad, pad, stride, stride, 1, activation, 0, dilation, dilation]
    ods += [Operand(type=T.BOOL if i == 8 else T.INT32, dimensions=()) for i in range(len(scalars))]
    arrays = [x, w, b] + [np.array(s, np.bool_ if i == 8 else np.int32) for i, s in enumerate(scalars)]
    call = KernelCall(Operation(OperationType.DEPTHWISE_CONV_2D, list(range(len(arrays))), []), arrays, ods, [out])
    got = KERNELS[OperationType.DEPTHWISE_CONV_2D](call)[0]
    xp = np.pad(x.astype(np.int64) - zp, ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    acc = np.zeros(got.shape, np.int64)
    for ky in range(kernel):
        for kx in range(kernel):
            y0, x0 = ky * dilation, kx * dilation
            acc += xp[:, y0:y0 + (oh - 1) * stride + 1:stride, x0:x0 + (ow - 1) * stride + 1:stride] * w[0, ky, kx]
    m, sh = conv_multipliers(0.05, scales, 0.08)
    np.testing.assert_array_equal(got, requantize_accumulator(acc + b, m, sh, out, activation))
