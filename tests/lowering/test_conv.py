"""CONV_2D lowering: parity with TFLite and refusals."""

from __future__ import annotations

import struct

import numpy as np
import pytest

import nnconv
from nnconv.runtime.executor import Executor

from harness import QuantParams, TfliteBuilder, assert_parity, assert_refused, nnconv_options, single_op_model
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.convert import ConversionOptions
from nnconv.parity.tflite_runner import TfliteRunner
from nnconv.tflite.options import Conv2DOptions, DepthwiseConv2DOptions, TransposeConvOptions
from nnconv.tflite.schema_enums import BuiltinOperator, Padding

RNG = np.random.default_rng(7)


def conv_model(in_shape, filt_shape, out_shape, padding, stride=(1, 1), dilation=(1, 1), act=0, bias=True):
    w = RNG.standard_normal(filt_shape).astype(np.float32)
    inputs = [("x", in_shape, np.float32), ("w", w)]
    if bias:  # TFLite's CONV_2D takes a missing bias as two inputs, not an omitted (-1) third one
        inputs.append(("b", RNG.standard_normal(filt_shape[0]).astype(np.float32)))
    opts = Conv2DOptions(padding=padding, stride_w=stride[1], stride_h=stride[0], fused_activation_function=act,
                         dilation_w_factor=dilation[1], dilation_h_factor=dilation[0])
    return single_op_model(BuiltinOperator.CONV_2D, inputs, [("y", out_shape, np.float32)], opts)


@pytest.mark.parametrize("api", [27, 30])
@pytest.mark.parametrize("case", [
    pytest.param(((2, 9, 7, 3), (5, 3, 2, 3), (2, 9, 7, 5), Padding.SAME, (1, 1), 0), id="same-s1"),
    pytest.param(((1, 9, 7, 3), (4, 3, 3, 3), (1, 5, 4, 4), Padding.SAME, (2, 2), 3), id="same-s2-relu6"),
    pytest.param(((1, 9, 7, 3), (4, 2, 3, 3), (1, 4, 3, 4), Padding.VALID, (2, 2), 1), id="valid-s2-relu"),
    pytest.param(((1, 6, 5, 2), (3, 1, 1, 2), (1, 6, 5, 3), Padding.VALID, (1, 1), 2), id="1x1-relu1"),
    pytest.param(((1, 6, 5, 2), (3, 3, 3, 2), (1, 6, 5, 3), Padding.SAME, (1, 1), 4), id="tanh-act"),
    # 1x1 with >= 4x the input's channels: the bias rides in the matmul (a ones column), in place or strided
    pytest.param(((2, 6, 5, 3), (16, 1, 1, 3), (2, 6, 5, 16), Padding.VALID, (1, 1), 3), id="1x1-expand-relu6"),
    pytest.param(((1, 7, 6, 4), (20, 1, 1, 4), (1, 4, 3, 20), Padding.SAME, (2, 2), 0), id="1x1-s2-expand"),
    # 1x1 on a few pixels (squeeze-and-excitation): one matmul
    pytest.param(((2, 1, 1, 24), (6, 1, 1, 24), (2, 1, 1, 6), Padding.SAME, (1, 1), 1), id="1x1-one-pixel-relu"),
    pytest.param(((1, 2, 3, 8), (40, 1, 1, 8), (1, 2, 3, 40), Padding.VALID, (1, 1), 3), id="1x1-few-pixels-relu6"),
])
def test_conv2d_parity(api, case):
    in_shape, f_shape, out_shape, padding, stride, act = case
    assert_parity(conv_model(in_shape, f_shape, out_shape, padding, stride, act=act), api_level=api)


@pytest.mark.parametrize("quant", [False, True], ids=["float", "int8"])
def test_conv2d_im2col_in_several_blocks_parity(monkeypatch, quant):
    """A KxK convolution whose im2col rows exceed IM2COL_BLOCK_BYTES runs in several blocks of output rows
    (here 2 rows of 9 per block, the last one short), with the same results."""
    from nnconv.runtime.kernels import conv_2d
    monkeypatch.setattr(conv_2d, "IM2COL_BLOCK_BYTES", 2 * 7 * (3 * 3 * 5 + 1) * 8)
    if quant:
        m = quant_conv_model(np.int8, (2, 9, 7, 5), (6, 3, 3, 5), (2, 9, 7, 6), act=1, per_channel=True)
    else:
        m = conv_model((2, 9, 7, 5), (6, 3, 3, 5), (2, 9, 7, 6), Padding.SAME, act=3)
    assert_parity(m, api_level=30, expect_ops=["CONV_2D"])


def test_conv2d_dilation_parity_and_refusal():
    m = conv_model((1, 11, 9, 3), (4, 3, 3, 3), (1, 11, 9, 4), Padding.SAME, dilation=(2, 3))
    assert_parity(m, api_level=29, expect_ops=["CONV_2D"])
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)


def test_conv2d_without_bias_gets_zero_bias():
    # TFLite's float CONV_2D kernel refuses a bias-less node, so the reference is the same filter with an
    # explicit zero bias, itself checked against TFLite.
    w = RNG.standard_normal((2, 3, 3, 3)).astype(np.float32)
    opts = Conv2DOptions(padding=Padding.SAME, stride_w=1, stride_h=1)
    out = [("y", (1, 5, 6, 2), np.float32)]
    no_bias = single_op_model(BuiltinOperator.CONV_2D, [("x", (1, 5, 6, 3), np.float32), ("w", w)], out, opts)
    zero_bias = single_op_model(BuiltinOperator.CONV_2D, [("x", (1, 5, 6, 3), np.float32), ("w", w),
                                                          ("b", np.zeros(2, np.float32))], out, opts)
    assert_parity(zero_bias, api_level=27)
    conv = nnconv.convert(no_bias, api_level=27, options=nnconv_options()).converted
    bias = conv.model.main.operands[conv.model.main.operations[0].inputs[2]]
    assert bias.is_constant and bias.type.name == "TENSOR_FLOAT32"
    x = {"x": RNG.uniform(-1, 1, (1, 5, 6, 3)).astype(np.float32)}
    got = Executor(conv).run(x)["y"]
    ref = Executor(nnconv.convert(zero_bias, api_level=27, options=nnconv_options()).converted).run(x)["y"]
    np.testing.assert_array_equal(got, ref)


def test_grouped_conv_parity():
    # Input depth 6, filter depth 2: three groups -> GROUPED_CONV_2D.
    m = conv_model((1, 7, 5, 6), (9, 3, 3, 2), (1, 7, 5, 9), Padding.SAME)
    assert_parity(m, api_level=29, expect_ops=["GROUPED_CONV_2D"])
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)


def test_conv2d_sign_bit_activation_refused():
    m = conv_model((1, 5, 6, 3), (2, 3, 3, 3), (1, 5, 6, 2), Padding.SAME, act=5)
    assert_refused(m, 30, Code.OPTION)


@pytest.mark.parametrize("kw", [{"stride": (0, 1)}, {"stride": (1, -1)}, {"dilation": (0, 1)}],
                         ids=["stride-h-0", "stride-w-negative", "dilation-0"])
def test_non_positive_stride_or_dilation_refused(kw):
    assert_refused(conv_model((1, 5, 6, 3), (2, 3, 3, 3), (1, 3, 4, 2), Padding.VALID, **kw), 30, Code.OPTION)
    assert_refused(dw_model(np.float32, (1, 5, 6, 3), 2, (3, 3), (1, 3, 4, 6), Padding.VALID, **kw), 30, Code.OPTION)


def test_unknown_padding_refused():
    # Padding has only SAME (0) and VALID (1); another value used to be lowered as VALID.
    assert_refused(conv_model((1, 5, 6, 3), (2, 3, 3, 3), (1, 3, 4, 2), 2), 30, Code.OPTION)
    assert_refused(dw_model(np.float32, (1, 5, 6, 3), 2, (3, 3), (1, 3, 4, 6), padding=2), 30, Code.OPTION)
    assert_refused(tconv_model(np.float32, (1, 4, 3, 3), (2, 3, 3, 3), (1, 8, 6, 2), 2, (2, 2)), 30, Code.OPTION)


# -- quantized CONV_2D ------------------------------------------------------------------------------
def quant_conv_model(dtype, in_shape, filt_shape, out_shape, padding=Padding.SAME, stride=(1, 1), act=0,
                     per_channel=False, out_scale=0.25, dilation=(1, 1), in_zp=None):
    """uint8 (asymmetric filter) or int8 (per-tensor or per-channel symmetric filter) CONV_2D."""
    in_q = QuantParams(0.05, in_zp if in_zp is not None else 131 if dtype == np.uint8 else -3)
    out_q = QuantParams(out_scale, 120 if dtype == np.uint8 else 5)
    o = filt_shape[0]
    if dtype == np.uint8:
        w = RNG.integers(0, 256, filt_shape).astype(np.uint8)
        w_q = QuantParams(0.02, 127)
        b_scale = [0.05 * 0.02] * o
    elif per_channel:
        w = RNG.integers(-127, 128, filt_shape).astype(np.int8)
        scales = list(RNG.uniform(0.005, 0.03, o))
        w_q = QuantParams(scales, [0] * o, quantized_dimension=0)
        b_scale = [0.05 * s for s in scales]
    else:
        w = RNG.integers(-127, 128, filt_shape).astype(np.int8)
        w_q = QuantParams(0.02, 0)
        b_scale = [0.05 * 0.02] * o
    b = RNG.integers(-2000, 2000, o).astype(np.int32)
    b_q = QuantParams(b_scale if per_channel else b_scale[0], [0] * o if per_channel else 0)
    opts = Conv2DOptions(padding=padding, stride_w=stride[1], stride_h=stride[0], fused_activation_function=act,
                         dilation_w_factor=dilation[1], dilation_h_factor=dilation[0])
    return single_op_model(BuiltinOperator.CONV_2D, [("x", in_shape, dtype, in_q), ("w", w, w_q), ("b", b, b_q)],
                           [("y", out_shape, dtype, out_q)], opts)


@pytest.mark.parametrize("api", [27, 29, 30])
@pytest.mark.parametrize("act", [0, 1, 3])
def test_conv2d_uint8_parity(api, act):
    m = quant_conv_model(np.uint8, (2, 9, 7, 3), (5, 3, 2, 3), (2, 5, 4, 5), stride=(2, 2), act=act)
    assert_parity(m, api_level=api, expect_ops=["CONV_2D"])


@pytest.mark.parametrize("api", [27, 29, 30])
def test_conv2d_int8_per_tensor_parity(api):
    # API 27/29: carried as uint8 + 128 (NNAPI 1.0 runs it); API 30: TENSOR_QUANT8_ASYMM_SIGNED.
    m = quant_conv_model(np.int8, (1, 8, 6, 3), (4, 3, 3, 3), (1, 8, 6, 4), act=1)
    assert_parity(m, api_level=api, expect_ops=["CONV_2D"])


@pytest.mark.parametrize("api", [29, 30])
def test_conv2d_int8_per_channel_parity(api):
    m = quant_conv_model(np.int8, (2, 7, 9, 3), (6, 3, 3, 3), (2, 4, 5, 6), stride=(2, 2), per_channel=True)
    result = assert_parity(m, api_level=api, expect_ops=["CONV_2D"])
    ops = result.converted.model.main
    filt = ops.operands[ops.operations[0].inputs[1]]
    assert filt.type.name == "TENSOR_QUANT8_SYMM_PER_CHANNEL"
    assert ops.operands[ops.operations[0].inputs[0]].type.name == (
        "TENSOR_QUANT8_ASYMM_SIGNED" if api >= 30 else "TENSOR_QUANT8_ASYMM")


def test_conv2d_int8_dilated_per_channel_parity():
    m = quant_conv_model(np.int8, (1, 11, 9, 2), (3, 3, 3, 2), (1, 11, 9, 3), per_channel=True, dilation=(2, 3))
    assert_parity(m, api_level=30, expect_ops=["CONV_2D"])


def test_conv2d_per_channel_refused_below_29():
    m = quant_conv_model(np.int8, (1, 7, 9, 3), (6, 3, 3, 3), (1, 7, 9, 6), per_channel=True)
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)


@pytest.mark.parametrize("dtype,per_channel", [(np.int8, True), (np.uint8, False)])
@pytest.mark.parametrize("case", [
    pytest.param(((2, 6, 5, 8), (48, 1, 1, 8), (2, 6, 5, 48), (1, 1), 0), id="1x1-expand-none"),
    pytest.param(((1, 7, 6, 4), (24, 1, 1, 4), (1, 4, 3, 24), (2, 2), 3), id="1x1-s2-expand-relu6"),
    pytest.param(((1, 7, 6, 3), (40, 2, 2, 3), (1, 7, 6, 40), (1, 1), 1), id="2x2-same-relu"),
])
def test_conv2d_quant_narrow_input_parity(dtype, per_channel, case):
    # K + 1 <= O / 4 and <= 32: the float64 GEMM with the requantization's multiply-add in the filter
    in_shape, filt_shape, out_shape, stride, act = case
    m = quant_conv_model(dtype, in_shape, filt_shape, out_shape, stride=stride, act=act, per_channel=per_channel)
    assert_parity(m, api_level=30, expect_ops=["CONV_2D"])


@pytest.mark.parametrize("dtype,per_channel", [(np.int8, True), (np.uint8, False)])
@pytest.mark.parametrize("case", [
    pytest.param(((1, 9, 11, 3), (8, 3, 3, 3), (1, 5, 6, 8), (2, 2), 3, 0.25), id="rgb-stem-s2-relu6"),
    pytest.param(((2, 7, 5, 3), (5, 3, 3, 3), (2, 7, 5, 5), (1, 1), 0, 0.25), id="rgb-stem-none"),
    # sum|w| * max|x| beyond 2^24: float32 runs of the reduction summed in float64
    pytest.param(((1, 5, 7, 263), (6, 3, 3, 263), (1, 5, 7, 6), (1, 1), 0, 2.0), id="3x3x263-float32-runs"),
    pytest.param(((2, 4, 3, 2311), (7, 1, 1, 2311), (2, 4, 3, 7), (1, 1), 1, 2.0), id="1x1x2311-float32-runs"),
])
def test_conv2d_quant_stem_and_long_reduction_parity(dtype, per_channel, case):
    # a KxK filter over 3 channels: tap-major im2col rows (and the scaled filter where exact); a reduction
    # float32 cannot sum exactly: exact float32 runs summed in float64
    in_shape, filt_shape, out_shape, stride, act, out_scale = case
    m = quant_conv_model(dtype, in_shape, filt_shape, out_shape, stride=stride, act=act, per_channel=per_channel,
                         out_scale=out_scale)
    assert_parity(m, api_level=30, expect_ops=["CONV_2D"])


@pytest.mark.parametrize("dtype,per_channel", [(np.int8, True), (np.uint8, False)])
@pytest.mark.parametrize("in_shape,filt_shape,out_shape,act", [
    ((1, 1, 1, 37), (11, 1, 1, 37), (1, 1, 1, 11), 1),
    ((2, 3, 5, 19), (7, 1, 1, 19), (2, 3, 5, 7), 0),
], ids=["pooled-map-relu", "30-pixels"])
def test_conv2d_quant_small_pointwise_parity(dtype, per_channel, in_shape, filt_shape, out_shape, act):
    # 1x1 on at most 64 pixels: one matmul and the requantizer, outside the blocked path
    m = quant_conv_model(dtype, in_shape, filt_shape, out_shape, act=act, per_channel=per_channel)
    assert_parity(m, api_level=30, expect_ops=["CONV_2D"])


@pytest.mark.parametrize("in_zp", [-128, 127])
def test_conv2d_int8_zero_point_at_the_range_end_parity(in_zp):
    # 3x3 over 263 channels: the centered sums need float64, the raw ones (zero point folded) float32 runs
    m = quant_conv_model(np.int8, (1, 6, 5, 263), (7, 3, 3, 263), (1, 6, 5, 7), act=3, per_channel=True,
                         out_scale=0.05, in_zp=in_zp)
    assert_parity(m, api_level=30, expect_ops=["CONV_2D"])


def test_conv2d_uint8_scale_restriction_below_29():
    # input_scale * filter_scale (0.05 * 0.02 = 1e-3) >= output_scale 5e-4: NNAPI 1.0/1.1 forbid it.
    m = quant_conv_model(np.uint8, (1, 5, 4, 2), (2, 1, 1, 2), (1, 5, 4, 2), out_scale=5e-4)
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)
    assert_parity(m, api_level=29)


def test_conv2d_quantized_filter_dtype_mismatch_refused():
    w = RNG.integers(0, 255, (2, 3, 3, 2)).astype(np.uint8)
    m = single_op_model(BuiltinOperator.CONV_2D,
                        [("x", (1, 5, 4, 2), np.int8, QuantParams(0.05, 0)), ("w", w, QuantParams(0.02, 128)),
                         ("b", np.zeros(2, np.int32), QuantParams(0.001, 0))],
                        [("y", (1, 5, 4, 2), np.int8, QuantParams(0.1, 0))],
                        Conv2DOptions(padding=Padding.SAME, stride_w=1, stride_h=1))
    assert_refused(m, 30, Code.DTYPE)


# -- dynamic-range (hybrid) weights -----------------------------------------------------------------
def hybrid_model(op, in_shape, w_q, out_shape, options, per_channel=True):
    """Float input, int8 symmetric weights (per-channel on `dim` when per_channel), float bias."""
    shape, dim = w_q
    w = RNG.integers(-127, 128, shape).astype(np.int8)
    n = shape[dim]
    q = (QuantParams(list(RNG.uniform(0.002, 0.01, n)), [0] * n, quantized_dimension=dim) if per_channel
         else QuantParams(0.005, 0))
    b = RNG.standard_normal(n).astype(np.float32) * 0.1
    return single_op_model(op, [("x", in_shape, np.float32), ("w", w, q), ("b", b)],
                           [("y", out_shape, np.float32)], options), w, q, b


def _float_twin(op, in_shape, w, q, b, out_shape, options):
    """The same op with the weights dequantized to float32 (what NNAPI computes for a hybrid op)."""
    scales = np.asarray(q.scale, np.float32)
    if scales.size > 1:
        shape = [1] * w.ndim
        shape[q.quantized_dimension] = -1
        scales = scales.reshape(shape)
    wf = (w.astype(np.float32) * scales).astype(np.float32)
    return single_op_model(op, [("x", in_shape, np.float32), ("w", wf), ("b", b)],
                           [("y", out_shape, np.float32)], options)


HYBRID_CASES = [
    pytest.param(BuiltinOperator.CONV_2D, (2, 7, 5, 3), ((4, 3, 3, 3), 0), (2, 7, 5, 4),
                 Conv2DOptions(padding=Padding.SAME, stride_w=1, stride_h=1), id="conv"),
    pytest.param(BuiltinOperator.DEPTHWISE_CONV_2D, (1, 7, 5, 3), ((1, 3, 3, 6), 3), (1, 4, 3, 6),
                 DepthwiseConv2DOptions(padding=Padding.SAME, stride_w=2, stride_h=2, depth_multiplier=2),
                 id="depthwise"),
]


@pytest.mark.parametrize("op,in_shape,w_q,out_shape,options", HYBRID_CASES)
def test_hybrid_dequantize_at_29_and_fold_at_27(op, in_shape, w_q, out_shape, options):
    m, w, q, b = hybrid_model(op, in_shape, w_q, out_shape, options)
    twin = _float_twin(op, in_shape, w, q, b, out_shape, options)
    assert_parity(twin, api_level=27)  # the float computation NNAPI runs, checked against TFLite
    x = {"x": RNG.uniform(-1, 1, in_shape).astype(np.float32)}
    ref = Executor(nnconv.convert(twin, api_level=27, options=nnconv_options()).converted).run(x)["y"]
    name = op.name
    at29 = nnconv.convert(m, api_level=29, options=nnconv_options()).converted
    assert [o.type.name for o in at29.model.main.operations] == ["DEQUANTIZE", name]
    np.testing.assert_allclose(Executor(at29).run(x)["y"], ref, rtol=0, atol=1e-6)
    folded = nnconv.convert(m, api_level=27, options=nnconv_options(ConversionOptions(fold_dynamic_range_weights=True)))
    assert [o.type.name for o in folded.converted.model.main.operations] == [name]
    np.testing.assert_allclose(Executor(folded.converted).run(x)["y"], ref, rtol=0, atol=1e-6)
    # TFLite's own hybrid kernel quantizes the activations on the fly: agreement to within that error.
    tfl = TfliteRunner(m)
    idx = tfl.input_details()[0]["index"]
    expected = next(iter(tfl.run({idx: x["x"]}).values()))
    assert np.max(np.abs(expected - ref)) <= 0.02 * np.max(np.abs(ref))


@pytest.mark.parametrize("op,in_shape,w_q,out_shape,options", HYBRID_CASES)
def test_hybrid_refused_below_29_without_folding(op, in_shape, w_q, out_shape, options):
    m, *_ = hybrid_model(op, in_shape, w_q, out_shape, options)
    diags = assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)
    assert any("--fold-weights" in d.hint for d in diags)


# -- DEPTHWISE_CONV_2D ------------------------------------------------------------------------------
def dw_model(dtype, in_shape, mult, k, out_shape, padding=Padding.SAME, stride=(1, 1), dilation=(1, 1), act=0,
             per_channel=False):
    c = in_shape[3]
    oc = c * mult
    opts = DepthwiseConv2DOptions(padding=padding, stride_w=stride[1], stride_h=stride[0], depth_multiplier=mult,
                                  fused_activation_function=act, dilation_w_factor=dilation[1],
                                  dilation_h_factor=dilation[0])
    fshape = (1, k[0], k[1], oc)
    if dtype == np.float32:
        ins = [("x", in_shape, np.float32), ("w", RNG.standard_normal(fshape).astype(np.float32)),
               ("b", RNG.standard_normal(oc).astype(np.float32))]
        return single_op_model(BuiltinOperator.DEPTHWISE_CONV_2D, ins, [("y", out_shape, np.float32)], opts)
    if dtype == np.uint8:
        w, w_q, b_s = RNG.integers(0, 256, fshape).astype(np.uint8), QuantParams(0.03, 130), 0.05 * 0.03
    elif per_channel:
        scales = list(RNG.uniform(0.01, 0.04, oc))
        w, w_q = RNG.integers(-127, 128, fshape).astype(np.int8), QuantParams(scales, [0] * oc, 3)
        b_s = [0.05 * s for s in scales]
    else:
        w, w_q, b_s = RNG.integers(-127, 128, fshape).astype(np.int8), QuantParams(0.03, 0), 0.05 * 0.03
    b_q = QuantParams(b_s, [0] * oc) if per_channel else QuantParams(b_s, 0)
    zp = 128 if dtype == np.uint8 else 0
    ins = [("x", in_shape, dtype, QuantParams(0.05, zp + 3)), ("w", w, w_q),
           ("b", RNG.integers(-500, 500, oc).astype(np.int32), b_q)]
    return single_op_model(BuiltinOperator.DEPTHWISE_CONV_2D, ins, [("y", out_shape, dtype, QuantParams(0.1, zp - 2))],
                           opts)


@pytest.mark.parametrize("api", [27, 30])
@pytest.mark.parametrize("case", [
    pytest.param(((2, 9, 7, 3), 1, (3, 3), (2, 9, 7, 3), Padding.SAME, (1, 1), 0), id="m1-same"),
    pytest.param(((1, 9, 7, 2), 3, (3, 2), (1, 4, 3, 6), Padding.VALID, (2, 2), 3), id="m3-valid-s2-relu6"),
    pytest.param(((1, 8, 6, 4), 2, (2, 3), (1, 4, 3, 8), Padding.SAME, (2, 2), 1), id="m2-same-s2-relu"),
])
def test_depthwise_float_parity(api, case):
    in_shape, mult, k, out_shape, padding, stride, act = case
    m = dw_model(np.float32, in_shape, mult, k, out_shape, padding, stride, act=act)
    assert_parity(m, api_level=api, expect_ops=["DEPTHWISE_CONV_2D"])


@pytest.mark.parametrize("case", [
    pytest.param(((2, 12, 10, 16), (3, 3), Padding.SAME, (1, 1), (1, 1), 3), id="s1-same-relu6-batch2"),
    pytest.param(((1, 11, 9, 8), (5, 5), Padding.SAME, (1, 1), (2, 3), 1), id="s1-5x5-dilated-relu"),
    pytest.param(((1, 9, 8, 72), (3, 3), Padding.VALID, (1, 1), (1, 1), 0), id="s1-valid-wide"),
    pytest.param(((1, 12, 12, 96), (3, 3), Padding.SAME, (2, 2), (1, 1), 3), id="s2-same-wide-relu6"),
    pytest.param(((2, 14, 13, 72), (5, 5), Padding.SAME, (2, 2), (1, 1), 0), id="s2-5x5-batch2"),
    pytest.param(((1, 9, 12, 64), (2, 4), Padding.VALID, (1, 2), (1, 1), 1), id="s1x2-valid-even-kernel"),
    pytest.param(((1, 13, 11, 4), (5, 5), Padding.SAME, (2, 2), (1, 1), 0), id="s2-5x5-odd-narrow"),
    # more than 64 output pixels: strided row runs over the taps' copied columns
    pytest.param(((1, 24, 21, 32), (5, 5), Padding.SAME, (2, 2), (1, 1), 0), id="s2-5x5-rows"),
    pytest.param(((2, 23, 25, 24), (3, 3), Padding.VALID, (2, 2), (2, 2), 3), id="s2-dilated-rows-batch2-relu6"),
    pytest.param(((1, 31, 29, 8), (5, 5), Padding.SAME, (3, 3), (1, 1), 1), id="s3-5x5-rows-relu"),
    pytest.param(((1, 20, 9, 16), (3, 3), Padding.SAME, (2, 1), (1, 1), 0), id="s2x1-rows"),
    pytest.param(((1, 9, 21, 64), (4, 3), Padding.SAME, (1, 2), (1, 1), 0), id="s1x2-rows-even-kernel"),
])
def test_depthwise_float_multiplier1_parity(case):
    # multiplier 1 is the common case with its own float paths (row runs at stride 1, and at any stride on
    # maps of more than 64 output pixels)
    in_shape, k, padding, stride, dilation, act = case
    valid = padding == Padding.VALID
    oh = (in_shape[1] - (k[0] - 1) * dilation[0] - 1) // stride[0] + 1 if valid else -(-in_shape[1] // stride[0])
    ow = (in_shape[2] - (k[1] - 1) * dilation[1] - 1) // stride[1] + 1 if valid else -(-in_shape[2] // stride[1])
    m = dw_model(np.float32, in_shape, 1, k, (in_shape[0], oh, ow, in_shape[3]), padding, stride, dilation, act)
    assert_parity(m, api_level=30, expect_ops=["DEPTHWISE_CONV_2D"])


@pytest.mark.parametrize("dtype,per_channel", [(np.int8, True), (np.int8, False), (np.uint8, False)])
@pytest.mark.parametrize("case", [
    pytest.param(((2, 12, 10, 16), (3, 3), Padding.SAME, (1, 1), 3), id="same-relu6-batch2"),
    pytest.param(((1, 11, 9, 8), (5, 5), Padding.SAME, (2, 3), 0), id="5x5-dilated-none"),
    pytest.param(((1, 9, 8, 72), (3, 3), Padding.VALID, (1, 1), 1), id="valid-wide-relu"),
    # strided, more than 64 output pixels: row runs over the taps' copied columns
    pytest.param(((2, 23, 21, 11), (7, 7), Padding.SAME, (1, 1), 0, (2, 2)), id="s2-7x7-batch2"),
    pytest.param(((1, 25, 22, 32), (3, 3), Padding.VALID, (1, 2), 3, (2, 2)), id="s2-valid-dilated-relu6"),
])
def test_depthwise_quant_row_runs_parity(dtype, per_channel, case):
    # quantized multiplier 1: int32 row runs, then the requantization per block of rows
    in_shape, k, padding, dilation, act, *strides = case
    stride = strides[0] if strides else (1, 1)
    if padding == Padding.VALID:
        oh = (in_shape[1] - (k[0] - 1) * dilation[0] - 1) // stride[0] + 1
        ow = (in_shape[2] - (k[1] - 1) * dilation[1] - 1) // stride[1] + 1
    else:
        oh, ow = -(-in_shape[1] // stride[0]), -(-in_shape[2] // stride[1])
    m = dw_model(dtype, in_shape, 1, k, (in_shape[0], oh, ow, in_shape[3]), padding, stride, dilation, act,
                 per_channel=per_channel)
    assert_parity(m, api_level=30, expect_ops=["DEPTHWISE_CONV_2D"])


def test_depthwise_dilation_needs_29():
    m = dw_model(np.float32, (1, 11, 9, 3), 2, (3, 3), (1, 11, 9, 6), dilation=(2, 3))
    assert_parity(m, api_level=29, expect_ops=["DEPTHWISE_CONV_2D"])
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)


@pytest.mark.parametrize("api", [27, 29])
def test_depthwise_uint8_parity(api):
    m = dw_model(np.uint8, (2, 7, 9, 3), 2, (3, 3), (2, 4, 5, 6), stride=(2, 2), act=1)
    assert_parity(m, api_level=api)


@pytest.mark.parametrize("api,per_channel", [(27, False), (30, False), (29, True), (30, True)])
def test_depthwise_int8_parity(api, per_channel):
    m = dw_model(np.int8, (1, 7, 9, 4), 2, (3, 3), (1, 7, 9, 8), per_channel=per_channel)
    assert_parity(m, api_level=api)


def test_depthwise_per_channel_refused_below_29():
    m = dw_model(np.int8, (1, 7, 9, 4), 1, (3, 3), (1, 7, 9, 4), per_channel=True)
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)


def test_depthwise_bad_filter_refused():
    # Filter depth 5 is not a multiple of the input depth 3.
    opts = DepthwiseConv2DOptions(padding=Padding.SAME, stride_w=1, stride_h=1, depth_multiplier=1)
    m = single_op_model(BuiltinOperator.DEPTHWISE_CONV_2D,
                        [("x", (1, 5, 4, 3), np.float32), ("w", np.ones((1, 3, 3, 5), np.float32)),
                         ("b", np.zeros(5, np.float32))], [("y", (1, 5, 4, 5), np.float32)], opts)
    assert_refused(m, 30, Code.OPERAND_VALUE)


# -- TRANSPOSE_CONV ---------------------------------------------------------------------------------
def tconv_model(dtype, in_shape, filt_shape, out_shape, padding, stride, bias=True, per_channel=False):
    o = filt_shape[0]
    opts = TransposeConvOptions(padding=padding, stride_w=stride[1], stride_h=stride[0])
    shape = ("shape", np.asarray(out_shape, np.int32))
    if dtype == np.float32:
        ins = [shape, ("w", RNG.standard_normal(filt_shape).astype(np.float32)), ("x", in_shape, np.float32)]
        if bias:
            ins.append(("b", RNG.standard_normal(o).astype(np.float32)))
        return single_op_model(BuiltinOperator.TRANSPOSE_CONV, ins, [("y", out_shape, np.float32)], opts,
                               version=3)
    if dtype == np.uint8:
        w, w_q, b_s = RNG.integers(0, 256, filt_shape).astype(np.uint8), QuantParams(0.02, 125), [0.001] * o
    elif per_channel:
        scales = list(RNG.uniform(0.01, 0.03, o))
        w, w_q = RNG.integers(-127, 128, filt_shape).astype(np.int8), QuantParams(scales, [0] * o, 0)
        b_s = [0.05 * s for s in scales]
    else:
        w, w_q, b_s = RNG.integers(-127, 128, filt_shape).astype(np.int8), QuantParams(0.02, 0), [0.001] * o
    zp = 128 if dtype == np.uint8 else 0
    ins = [shape, ("w", w, w_q), ("x", in_shape, dtype, QuantParams(0.05, zp + 1))]
    if bias:
        b_q = QuantParams(b_s, [0] * o) if per_channel else QuantParams(b_s[0], 0)
        ins.append(("b", RNG.integers(-300, 300, o).astype(np.int32), b_q))
    return single_op_model(BuiltinOperator.TRANSPOSE_CONV, ins, [("y", out_shape, dtype, QuantParams(0.2, zp))],
                           opts, version=3)


@pytest.mark.parametrize("case", [
    pytest.param(((2, 4, 3, 3), (5, 3, 3, 3), (2, 8, 6, 5), Padding.SAME, (2, 2)), id="same-s2"),
    pytest.param(((1, 4, 5, 2), (3, 3, 2, 2), (1, 9, 10, 3), Padding.VALID, (2, 2)), id="valid-s2"),
    pytest.param(((1, 3, 5, 2), (4, 2, 3, 2), (1, 9, 10, 4), Padding.SAME, (3, 2)), id="same-s3x2"),
    pytest.param(((1, 5, 4, 3), (2, 3, 3, 3), (1, 5, 4, 2), Padding.SAME, (1, 1)), id="same-s1"),
])
def test_transpose_conv_float_parity(case):
    in_shape, f_shape, out_shape, padding, stride = case
    assert_parity(tconv_model(np.float32, in_shape, f_shape, out_shape, padding, stride), api_level=29,
                  expect_ops=["TRANSPOSE_CONV_2D"])


def test_transpose_conv_without_bias_and_refused_below_29():
    m = tconv_model(np.float32, (1, 4, 3, 3), (2, 3, 3, 3), (1, 8, 6, 2), Padding.SAME, (2, 2), bias=False)
    assert_parity(m, api_level=29)
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)


# the tap-scatter kernel's paths: exact tiling (stride == filter, selfie segmentation), gaps (stride >
# filter), overlaps with a negative SAME tail (odd output), batch > 1
SCATTER_CASES = [
    pytest.param(((1, 6, 5, 4), (1, 2, 2, 4), (1, 12, 10, 1), Padding.SAME, (2, 2)), id="tiling-2x2-s2"),
    pytest.param(((2, 3, 4, 2), (3, 2, 2, 2), (2, 6, 8, 3), Padding.VALID, (2, 2)), id="tiling-valid-batch2"),
    pytest.param(((1, 3, 4, 2), (2, 1, 2, 2), (1, 9, 12, 2), Padding.VALID, (3, 3)), id="gaps-s3"),
    pytest.param(((2, 4, 3, 3), (2, 3, 3, 3), (2, 7, 5, 2), Padding.SAME, (2, 2)), id="overlap-odd-out"),
    pytest.param(((1, 3, 3, 2), (2, 3, 2, 2), (1, 5, 3, 2), Padding.SAME, (2, 1)), id="overlap-s2x1"),
]


@pytest.mark.parametrize("case", SCATTER_CASES)
def test_transpose_conv_float_parity_scatter_paths(case):
    in_shape, f_shape, out_shape, padding, stride = case
    assert_parity(tconv_model(np.float32, in_shape, f_shape, out_shape, padding, stride), api_level=29,
                  expect_ops=["TRANSPOSE_CONV_2D"])


@pytest.mark.parametrize("dtype,per_channel", [(np.uint8, False), (np.int8, False), (np.int8, True)])
@pytest.mark.parametrize("case", SCATTER_CASES)
def test_transpose_conv_quantized_parity_scatter_paths(dtype, per_channel, case):
    in_shape, f_shape, out_shape, padding, stride = case
    m = tconv_model(dtype, in_shape, f_shape, out_shape, padding, stride, per_channel=per_channel)
    assert_parity(m, api_level=30, expect_ops=["TRANSPOSE_CONV_2D"])


@pytest.mark.parametrize("dtype,per_channel,api", [(np.uint8, False, 29), (np.int8, False, 29),
                                                   (np.int8, True, 29), (np.int8, True, 30)])
def test_transpose_conv_quantized_parity(dtype, per_channel, api):
    m = tconv_model(dtype, (1, 4, 3, 3), (4, 3, 3, 3), (1, 8, 6, 4), Padding.SAME, (2, 2),
                    per_channel=per_channel)
    assert_parity(m, api_level=api, expect_ops=["TRANSPOSE_CONV_2D"])


def test_transpose_conv_non_constant_output_shape_refused():
    opts = TransposeConvOptions(padding=Padding.SAME, stride_w=2, stride_h=2)
    m = single_op_model(BuiltinOperator.TRANSPOSE_CONV,
                        [("shape", (4,), np.int32), ("w", np.ones((2, 3, 3, 3), np.float32)),
                         ("x", (1, 4, 3, 3), np.float32)], [("y", (1, 8, 6, 2), np.float32)], opts)
    assert_refused(m, 30, Code.NON_CONSTANT)


# -- MediaPipe Convolution2DTransposeBias ------------------------------------------------------------
def _mediapipe_model(w, b, in_shape, out_shape, padding_code, stride, custom_options=None):
    bld = TfliteBuilder()
    x = bld.input("x", in_shape, np.float32)
    wi, bi = bld.const("w", w), bld.const("b", b)
    y = bld.tensor("y", out_shape, np.float32)
    raw = struct.pack("<iii", padding_code, stride[1], stride[0]) if custom_options is None else custom_options
    bld.op(BuiltinOperator.CUSTOM, [x, wi, bi], [y], custom_code="Convolution2DTransposeBias", custom_options=raw)
    bld.output(y)
    return bld.finish()


@pytest.mark.parametrize("padding,code,in_shape,out_shape", [
    (Padding.SAME, 1, (1, 4, 2, 3), (1, 8, 4, 2)),
    (Padding.VALID, 2, (2, 3, 4, 3), (2, 7, 9, 2)),
])
def test_mediapipe_transpose_conv_bias(padding, code, in_shape, out_shape):
    # TFLite cannot run the custom op; its builtin TRANSPOSE_CONV with the same weights is the reference.
    w = RNG.standard_normal((2, 3, 3, 3)).astype(np.float32)
    b = RNG.standard_normal(2).astype(np.float32)
    builtin = single_op_model(BuiltinOperator.TRANSPOSE_CONV,
                              [("shape", np.asarray(out_shape, np.int32)), ("w", w), ("x", in_shape, np.float32),
                               ("b", b)], [("y", out_shape, np.float32)],
                              TransposeConvOptions(padding=padding, stride_w=2, stride_h=2), version=3)
    assert_parity(builtin, api_level=29)
    custom = _mediapipe_model(w, b, in_shape, out_shape, code, (2, 2))
    conv = nnconv.convert(custom, api_level=29, options=nnconv_options()).converted
    assert [o.type.name for o in conv.model.main.operations] == ["TRANSPOSE_CONV_2D"]
    x = {"x": RNG.uniform(-1, 1, in_shape).astype(np.float32)}
    ref = Executor(nnconv.convert(builtin, api_level=29, options=nnconv_options()).converted).run(x)["y"]
    np.testing.assert_array_equal(Executor(conv).run(x)["y"], ref)
    assert_refused(custom, 28, Code.API_LEVEL, min_api_level=29)


def test_mediapipe_transpose_conv_odd_size():
    # K=1, stride 2, SAME: MediaPipe's output is 2 * (in - 1) + 1, not in * 2 (TFLite reference: an explicit
    # output_shape of that size).
    w = RNG.standard_normal((2, 1, 1, 3)).astype(np.float32)
    b = RNG.standard_normal(2).astype(np.float32)
    builtin = single_op_model(BuiltinOperator.TRANSPOSE_CONV,
                              [("shape", np.asarray((1, 7, 5, 2), np.int32)), ("w", w), ("x", (1, 4, 3, 3), np.float32),
                               ("b", b)], [("y", (1, 7, 5, 2), np.float32)],
                              TransposeConvOptions(padding=Padding.SAME, stride_w=2, stride_h=2), version=3)
    assert_parity(builtin, api_level=29)
    custom = _mediapipe_model(w, b, (1, 4, 3, 3), (1, 7, 5, 2), 1, (2, 2))
    x = {"x": RNG.uniform(-1, 1, (1, 4, 3, 3)).astype(np.float32)}
    ref = Executor(nnconv.convert(builtin, api_level=29, options=nnconv_options()).converted).run(x)["y"]
    conv = nnconv.convert(custom, api_level=29, options=nnconv_options()).converted
    np.testing.assert_array_equal(Executor(conv).run(x)["y"], ref)


def test_mediapipe_transpose_conv_refusals():
    w = np.ones((2, 3, 3, 3), np.float32)
    m = _mediapipe_model(w, np.zeros(2, np.float32), (1, 4, 3, 3), (1, 8, 6, 2), 1, (2, 2), custom_options=b"\x01")
    assert_refused(m, 30, Code.OPTION)
    # 6 is TFLite's SAME width for 3 inputs at stride 2; MediaPipe's kernel makes 2 * 2 + 3 - 2 = 5.
    m = _mediapipe_model(w, np.zeros(2, np.float32), (1, 4, 3, 3), (1, 8, 6, 2), 1, (2, 2))
    assert_refused(m, 30, Code.OPERAND_VALUE)


@pytest.mark.parametrize("api", [27, 30])
def test_quantized_conv_fused_tanh_is_what_tflite_computes(api):
    # TFLite's kernels apply no TANH/SIGMOID fused into CONV_2D; the lowering matches that at every level.
    m = quant_conv_model(np.uint8, (1, 6, 5, 2), (3, 3, 3, 2), (1, 6, 5, 3), act=4)
    assert_parity(m, api_level=api, expect_ops=["CONV_2D"])


def test_transpose_conv_hybrid_weights():
    w = RNG.integers(-127, 128, (3, 3, 3, 2)).astype(np.int8)
    scales = list(RNG.uniform(0.005, 0.02, 3))
    b = (RNG.standard_normal(3) * 0.1).astype(np.float32)
    opts = TransposeConvOptions(padding=Padding.SAME, stride_w=2, stride_h=2)
    shape = ("shape", np.asarray((1, 8, 6, 3), np.int32))
    out = [("y", (1, 8, 6, 3), np.float32)]
    m = single_op_model(BuiltinOperator.TRANSPOSE_CONV,
                        [shape, ("w", w, QuantParams(scales, [0] * 3, 0)), ("x", (1, 4, 3, 2), np.float32), ("b", b)],
                        out, opts, version=3)
    wf = (w.astype(np.float32) * np.asarray(scales, np.float32).reshape(3, 1, 1, 1)).astype(np.float32)
    twin = single_op_model(BuiltinOperator.TRANSPOSE_CONV,
                           [shape, ("w", wf), ("x", (1, 4, 3, 2), np.float32), ("b", b)], out, opts, version=3)
    assert_parity(twin, api_level=29)
    x = {"x": RNG.uniform(-1, 1, (1, 4, 3, 2)).astype(np.float32)}
    ref = Executor(nnconv.convert(twin, api_level=29, options=nnconv_options()).converted).run(x)["y"]
    at29 = nnconv.convert(m, api_level=29, options=nnconv_options()).converted
    assert [o.type.name for o in at29.model.main.operations] == ["DEQUANTIZE", "TRANSPOSE_CONV_2D"]
    np.testing.assert_allclose(Executor(at29).run(x)["y"], ref, rtol=0, atol=1e-6)
    folded = nnconv.convert(m, api_level=29,
                            options=nnconv_options(ConversionOptions(fold_dynamic_range_weights=True))).converted
    assert [o.type.name for o in folded.model.main.operations] == ["TRANSPOSE_CONV_2D"]
    np.testing.assert_allclose(Executor(folded).run(x)["y"], ref, rtol=0, atol=1e-6)


@pytest.mark.parametrize("act", [1, 3])
def test_transpose_conv_fused_activation(act):
    w = RNG.standard_normal((2, 3, 3, 3)).astype(np.float32)
    m = single_op_model(BuiltinOperator.TRANSPOSE_CONV,
                        [("shape", np.asarray((1, 8, 6, 2), np.int32)), ("w", w), ("x", (1, 4, 3, 3), np.float32),
                         ("b", RNG.standard_normal(2).astype(np.float32))], [("y", (1, 8, 6, 2), np.float32)],
                        TransposeConvOptions(padding=Padding.SAME, stride_w=2, stride_h=2,
                                             fused_activation_function=act), version=4)
    assert_parity(m, api_level=29, expect_ops=["TRANSPOSE_CONV_2D"])
