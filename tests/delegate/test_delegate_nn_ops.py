"""The delegate target on convolution, pooling, activation and arithmetic variants the recordings do not cover:
TRANSPOSE_CONV (with its int8 test of tensor #2), L2_POOL_2D, FULLY_CONNECTED with keep_num_dims / without
bias / hybrid, CONV_2D hybrid / grouped / dilated, dilated DEPTHWISE_CONV_2D, DENSIFY feeding CONV_2D,
HARD_SWISH below API 30, SQUARED_DIFFERENCE, COS and LEAKY_RELU.

(a) verdicts and messages, (b) the NNAPI graph operand for operand, (c) parity on our executor against TFLite.
Expected values are read off `nnapi_delegate.cc` (LiteRT f67457790c9c); the composite lowerings
(`TransformHardSwishIntoSupportedOps`, `TransformSquaredDifferenceIntoSupportedOps`) are recomputed here in
float32 as the C++ writes them."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness import QuantParams, TfliteBuilder, filter_csr, single_op_model
from nnconv.runtime.executor import Executor
from nnconv.tflite.options import (Conv2DOptions, CosOptions, DensifyOptions, DepthwiseConv2DOptions,
                                   FullyConnectedOptions, HardSwishOptions, LeakyReluOptions, Pool2DOptions,
                                   SquaredDifferenceOptions, TransposeConvOptions)
from nnconv.tflite.schema_enums import BuiltinOperator as B
from nnconv.tflite.schema_enums import Padding

from delegate_kit import accepted_levels, assert_verified, graph, run_both, verdict

SEED = 314159


def rng(seed: int = SEED) -> np.random.Generator:
    """A fresh generator per model or input: the same values whatever ran before (pytest-xdist)."""
    return np.random.default_rng(seed)
f32 = np.float32
FLOAT_T = "TENSOR_FLOAT32"
U8 = "TENSOR_QUANT8_ASYMM"
S8 = "TENSOR_QUANT8_ASYMM_SIGNED"
SYMM = "TENSOR_QUANT8_SYMM"
PER_CHANNEL = "TENSOR_QUANT8_SYMM_PER_CHANNEL"
I32 = "TENSOR_INT32"
SAME, VALID = 1, 2  # TfLitePadding, as the delegate passes it to NNAPI


def q(scale, zp=0, dim=0) -> QuantParams:
    return QuantParams(scale, zp, dim)


def s(x) -> float:
    return float(f32(x))


def quantize(w: np.ndarray, scales, axis: int = 0) -> np.ndarray:
    shape = [1] * w.ndim
    shape[axis] = -1
    sc = np.asarray(scales, np.float32).reshape(shape)
    return np.clip(np.round(w / sc), -127, 127).astype(np.int8)


# -- TRANSPOSE_CONV -----------------------------------------------------------------------------------------
W_SCALES = (0.02, 0.03, 0.025, 0.04)


def tconv_model(dtype=np.float32, bias: bool = True, per_channel: bool = True, order: str = "standard") -> bytes:
    """TRANSPOSE_CONV (inputs: output_shape, weights, data[, bias]), stride 2, SAME. `order` lays the tensors
    out so that tensor #2 of the graph is the data input ("standard") or the int32 bias ("bias_at_2")."""
    int8 = dtype == np.int8
    r = rng()
    w = r.standard_normal((4, 3, 2, 3)).astype(np.float32)
    scales = W_SCALES if per_channel else (0.03,)
    wq = q(list(scales), [0] * len(scales), 0) if int8 else None
    wv = quantize(w, scales) if int8 else w
    bv = r.integers(-100, 100, 4).astype(np.int32) if int8 else r.standard_normal(4).astype(np.float32)
    bq = q([0.05 * x for x in scales], [0] * len(scales), 0) if int8 else None
    xq, yq = (q(0.05, 3), q(0.1, -2)) if int8 else (None, None)
    b = TfliteBuilder()
    oshape = b.const("oshape", np.array([2, 6, 8, 4], np.int32))
    if order == "bias_at_2":
        x = b.input("x", (2, 3, 4, 3), dtype, xq)
        bt = b.const("b", bv, quant=bq)
        wt = b.const("w", wv, quant=wq)
    else:
        wt = b.const("w", wv, quant=wq)
        x = b.input("x", (2, 3, 4, 3), dtype, xq)
        bt = b.const("b", bv, quant=bq) if bias else -1
    y = b.tensor("y", (2, 6, 8, 4), dtype, yq)
    ins = [oshape, wt, x] + ([bt] if bias else [])
    b.op(B.TRANSPOSE_CONV, ins, [y], TransposeConvOptions(padding=Padding.SAME, stride_w=2, stride_h=2),
         version=3 if bias else (2 if int8 else 1))
    b.output(y)
    return b.finish()


def test_transpose_conv_verdicts():
    assert accepted_levels(tconv_model()) == [29, 30, 31, 33, 34, 35]
    assert verdict(tconv_model(), 28) == (False, ["Android sdk version less than 29"])
    # no type check at all: int8 is taken below 30 too
    assert accepted_levels(tconv_model(np.int8)) == [29, 30, 31, 33, 34, 35]


def test_transpose_conv_graph():
    """Map adds every input in NNAPI's order: data, weights (per-channel for int8 even with one scale), bias,
    output shape, then padding, strides, activation and NHWC."""
    params = [("INT32", SAME), ("INT32", 2), ("INT32", 2), ("INT32", 0), ("BOOL", False)]
    g = graph(tconv_model(), 29)
    assert g.ops() == [("TRANSPOSE_CONV_2D", [(FLOAT_T, (2, 3, 4, 3), 0.0, 0), (FLOAT_T, (4, 3, 2, 3), 0.0, 0),
                                              (FLOAT_T, (4,), 0.0, 0), (I32, (4,), 0.0, 0)] + params,
                        [(FLOAT_T, (2, 6, 8, 4), 0.0, 0)])]
    assert list(g.input_value(0, 3)) == [2, 6, 8, 4]
    w = (PER_CHANNEL, (4, 3, 2, 3), "per-channel", 0, tuple(s(x) for x in W_SCALES))
    g = graph(tconv_model(np.int8), 29)  # below 30: data and output carried as uint8 (+128)
    assert g.ops() == [("TRANSPOSE_CONV_2D", [(U8, (2, 3, 4, 3), s(0.05), 131), w, (I32, (4,), 0.0, 0),
                                              (I32, (4,), 0.0, 0)] + params, [(U8, (2, 6, 8, 4), s(0.1), 126)])]
    g = graph(tconv_model(np.int8), 30)
    assert g.ops() == [("TRANSPOSE_CONV_2D", [(S8, (2, 3, 4, 3), s(0.05), 3), w, (I32, (4,), 0.0, 0),
                                              (I32, (4,), 0.0, 0)] + params, [(S8, (2, 6, 8, 4), s(0.1), -2)])]


def test_transpose_conv_zero_bias():
    """No bias: `add_zero_bias` with output_shape[3] zeros, float32, or int32 with scale input_scale *
    filter_scale (the legacy per-tensor scales: 0 for per-channel weights)."""
    g = graph(tconv_model(bias=False), 29)
    assert g.op(0)[1][2] == (FLOAT_T, (4,), 0.0, 0) and list(g.input_value(0, 2)) == [0.0] * 4
    g = graph(tconv_model(np.int8, bias=False), 30)
    assert g.op(0)[1][2] == (I32, (4,), 0.0, 0) and list(g.input_value(0, 2)) == [0] * 4
    g = graph(tconv_model(np.int8, bias=False, per_channel=False), 30)
    assert g.op(0)[1][2] == (I32, (4,), s(f32(0.05) * f32(0.03)), 0)


def test_transpose_conv_one_weight_scale_is_forced_per_channel():
    """FORCE_PER_CHANNEL makes one weight scale a per-channel operand of one scale for 4 output channels,
    which Android's runtime refuses (the channel dimension has 4 entries)."""
    g = graph(tconv_model(np.int8, bias=False, per_channel=False), 30)
    assert g.op(0)[1][1] == (PER_CHANNEL, (4, 3, 2, 3), "per-channel", 0, (s(0.03),))
    assert "1 channel scales do not fit dimensions [4, 3, 2, 3]" in g.error


def test_transpose_conv_int8_conversion_reads_tensor_2():
    """NeedInt8Conversion tests `context->tensors[2]` (the literal index) for TRANSPOSE_CONV, not the node's
    data input: with the int32 bias at tensor #2 an int8 TRANSPOSE_CONV at API 29 gets no output conversion.
    Its data input is still uint8 (+128, Map passes INT8_CONVERSION below 30) but its output becomes
    TENSOR_QUANT8_SYMM with zero point -2: Android's runtime refuses the graph."""
    m = tconv_model(np.int8, order="bias_at_2")
    g = graph(m, 29)
    assert g.op(0)[1][0] == (U8, (2, 3, 4, 3), s(0.05), 131)
    assert g.op(0)[2] == [(SYMM, (2, 6, 8, 4), s(0.1), -2)]
    assert "zero point -2" in g.error
    # from API 30 the signed type does not depend on that test
    g = graph(m, 30)
    assert g.op(0)[2] == [(S8, (2, 6, 8, 4), s(0.1), -2)] and not g.error
    # the standard layout (data input at #2) converts the output
    assert graph(tconv_model(np.int8), 29).op(0)[2] == [(U8, (2, 6, 8, 4), s(0.1), 126)]


@pytest.mark.parametrize("api,args", [(29, dict()), (29, dict(bias=False)), (29, dict(dtype=np.int8)),
                                      (30, dict(dtype=np.int8)), (30, dict(dtype=np.int8, bias=False)),
                                      (30, dict(dtype=np.int8, order="bias_at_2")), (33, dict())])
def test_transpose_conv_parity(api, args):
    assert_verified(tconv_model(**args), api)


# -- L2_POOL_2D ---------------------------------------------------------------------------------------------
def l2_pool_model(act=0, version=1) -> bytes:
    return single_op_model(B.L2_POOL_2D, [("x", (2, 7, 6, 3), np.float32)], [("y", (2, 3, 3, 3), np.float32)],
                           Pool2DOptions(padding=Padding.VALID, stride_w=2, stride_h=2, filter_width=2,
                                         filter_height=3, fused_activation_function=act), version=version)


def test_l2_pool_verdicts():
    assert accepted_levels(l2_pool_model()) == [27, 28, 29, 30, 31, 33, 34, 35]
    act = "Before NNAPI 1.2 fused activation for l2_pool may not be supported."
    assert verdict(l2_pool_model(act=1), 27) == (False, [act])
    assert verdict(l2_pool_model(act=1), 28) == (False, [act])
    assert verdict(l2_pool_model(act=1), 29) == (True, [])
    assert verdict(l2_pool_model(version=2), 30) == (False, ["OP Version different from 1"])
    u8 = single_op_model(B.L2_POOL_2D, [("x", (1, 4, 4, 1), np.uint8, q(0.5, 1))], [("y", (1, 2, 2, 1), np.uint8,
                                                                                        q(0.5, 1))],
                         Pool2DOptions(padding=Padding.VALID, stride_w=2, stride_h=2, filter_width=2, filter_height=2))
    assert verdict(u8, 30) == (False, ["Input should be Float"])


def test_l2_pool_graph():
    g = graph(l2_pool_model(act=3), 29)
    assert g.ops() == [("L2_POOL_2D", [(FLOAT_T, (2, 7, 6, 3), 0.0, 0), ("INT32", VALID), ("INT32", 2), ("INT32", 2),
                                       ("INT32", 2), ("INT32", 3), ("INT32", 3)], [(FLOAT_T, (2, 3, 3, 3), 0.0, 0)])]


@pytest.mark.parametrize("api,act", [(27, 0), (29, 1), (30, 3), (34, 0)])
def test_l2_pool_parity(api, act):
    assert_verified(l2_pool_model(act=act), api)


# -- FULLY_CONNECTED ----------------------------------------------------------------------------------------
def fc_model(kind="float", keep=False, bias="const", in_shape=(2, 3, 5), units=4, act=0) -> bytes:
    """kind: float, int8 (per-tensor weights), uint8, hybrid (float input, int8 weights), hybrid_uint8 (legacy
    uint8 weights that hold int8 values); bias: const, none (two inputs) or omitted (-1)."""
    depth = in_shape[-1]
    r = rng()
    w = r.standard_normal((units, depth)).astype(np.float32)
    rows = int(np.prod(in_shape)) // depth
    out_shape = tuple(in_shape[:-1]) + (units,) if keep else (rows, units)
    x_dtype, xq, yq, wv, wq, bv, bq = np.float32, None, None, w, None, r.standard_normal(units).astype(f32), None
    if kind == "int8":
        x_dtype, xq, yq = np.int8, q(0.05, -3), q(0.2, 7)
        wv, wq = quantize(w, (0.02,)), q(0.02)
        bv, bq = r.integers(-200, 200, units).astype(np.int32), q(s(f32(0.05) * f32(0.02)))
    elif kind == "uint8":
        x_dtype, xq, yq = np.uint8, q(0.05, 125), q(0.2, 130)
        wv, wq = (quantize(w, (0.02,)).astype(np.int16) + 128).astype(np.uint8), q(0.02, 128)
        bv, bq = r.integers(-200, 200, units).astype(np.int32), q(s(f32(0.05) * f32(0.02)))
    elif kind == "hybrid":
        wv, wq = quantize(w, (0.02,)), q(0.02)
    elif kind == "hybrid_per_channel":
        scales = [0.02 + 0.005 * k for k in range(units)]
        wv, wq = quantize(w, scales), q(scales, [0] * units, 0)
    b = TfliteBuilder()
    x = b.input("x", in_shape, x_dtype, xq)
    wt = b.const("w", wv, quant=wq)
    ins = [x, wt]
    if bias == "const":
        ins.append(b.const("b", bv, quant=bq))
    elif bias == "omitted":
        ins.append(-1)
    y = b.tensor("y", out_shape, x_dtype, yq)
    version = {"float": 1, "int8": 4, "uint8": 1}.get(kind, 3)
    b.op(B.FULLY_CONNECTED, ins, [y], FullyConnectedOptions(fused_activation_function=act, keep_num_dims=keep),
         version=max(version, 5 if keep else 1) if kind != "float" else (5 if keep else 1))
    b.output(y)
    return b.finish()


def test_fully_connected_verdicts():
    assert accepted_levels(fc_model(keep=True)) == [30, 31, 33, 34, 35]
    assert verdict(fc_model(keep=True), 29) == (False, ["Android sdk version less than 30"])
    hybrid = "Hybrid operators not supported before NNAPI 1.2"
    for kind in ("hybrid", "hybrid_per_channel"):
        assert verdict(fc_model(kind), 28) == (False, [hybrid])
        assert accepted_levels(fc_model(kind)) == [29, 30, 31, 33, 34, 35]
    # int8 before 29: neither float nor uint8
    assert verdict(fc_model("int8"), 28) == (False, ["Input should be Float or UINT8"])
    assert accepted_levels(fc_model("int8", bias="omitted")) == [29, 30, 31, 33, 34, 35]


def test_fully_connected_keep_num_dims_graph():
    """keep_num_dims: FULLY_CONNECTED into a [rows, units] intermediate (the output's type and params), then
    AppendReshape to the output's dims."""
    g = graph(fc_model("int8", keep=True), 30)
    mid = (S8, (6, 4), s(0.2), 7)
    assert g.ops() == [
        ("FULLY_CONNECTED", [(S8, (2, 3, 5), s(0.05), -3), (S8, (4, 5), s(0.02), 0), (I32, (4,), s(0.001), 0),
                             ("INT32", 0)], [mid]),
        ("RESHAPE", [mid, (I32, (3,), 0.0, 0)], [(S8, (2, 3, 4), s(0.2), 7)])]
    assert list(g.input_value(1, 1)) == [2, 3, 4]
    g = graph(fc_model("float", keep=True, in_shape=(3, 2, 2, 5), act=1), 33)
    assert g.op(0)[1][-1] == ("INT32", 1) and g.op(0)[2] == [(FLOAT_T, (12, 4), 0.0, 0)]
    assert g.op(1)[2] == [(FLOAT_T, (3, 2, 2, 4), 0.0, 0)]


@pytest.mark.parametrize("bias", ["none", "omitted"])
def test_fully_connected_zero_bias_graph(bias):
    """No bias (two inputs, or an omitted third): Map's add_zero_bias with weights.dims[0] zeros, float32 for
    a float input, else int32 with scale input_scale * filter_scale (int8 below 30: the unconverted scales)."""
    g = graph(fc_model("float", bias=bias), 27)
    assert g.ops() == [("FULLY_CONNECTED", [(FLOAT_T, (2, 3, 5), 0.0, 0), (FLOAT_T, (4, 5), 0.0, 0),
                                            (FLOAT_T, (4,), 0.0, 0), ("INT32", 0)], [(FLOAT_T, (6, 4), 0.0, 0)])]
    assert list(g.input_value(0, 2)) == [0.0] * 4
    g = graph(fc_model("int8", bias=bias), 29)
    assert g.ops() == [("FULLY_CONNECTED", [(U8, (2, 3, 5), s(0.05), 125), (U8, (4, 5), s(0.02), 128),
                                            (I32, (4,), s(f32(0.05) * f32(0.02)), 0), ("INT32", 0)],
                        [(U8, (6, 4), s(0.2), 135)])]
    g = graph(fc_model("uint8", bias=bias), 28)
    assert g.op(0)[1][2] == (I32, (4,), s(f32(0.05) * f32(0.02)), 0)


def test_fully_connected_int8_weights_converted_below_30():
    """The int8 weights of an int8 FULLY_CONNECTED at API 29 become a uint8 constant (+128 on every value)."""
    m = fc_model("int8")
    g = graph(m, 29)
    from nnconv.tflite.reader import read_model
    w = read_model(m).subgraphs[0].tensors[1].data.reshape(-1)
    np.testing.assert_array_equal(g.input_value(0, 1), (w.astype(np.int16) + 128).astype(np.uint8))


@pytest.mark.parametrize("kind", ["hybrid", "hybrid_per_channel", "hybrid_uint8"])
def test_fully_connected_hybrid_graph(kind):
    """Hybrid (float input, quantized weights) from 29: the weights are TENSOR_QUANT8_SYMM (legacy uint8 read
    as int8), per-channel when they have several scales, and a DEQUANTIZE into a new float32 operand
    (AddDequantizeOperatorsWhereNeeded) replaces them as input 1; the DEQUANTIZE comes first."""
    if kind == "hybrid_uint8":
        m = fc_model("hybrid")
        # the same model with the weights typed uint8 (TFLite's legacy hybrid weights)
        b = TfliteBuilder()
        x = b.input("x", (2, 3, 5), np.float32)
        r = rng()
        wt = b.const("w", quantize(r.standard_normal((4, 5)), (0.02,)).view(np.uint8), quant=q(0.02))
        bt = b.const("b", r.standard_normal(4).astype(f32))
        y = b.tensor("y", (6, 4), np.float32)
        b.op(B.FULLY_CONNECTED, [x, wt, bt], [y], FullyConnectedOptions(), version=3)
        b.output(y)
        m = b.finish()
        w = (SYMM, (4, 5), s(0.02), 0)
    elif kind == "hybrid":
        m, w = fc_model(kind), (SYMM, (4, 5), s(0.02), 0)
    else:
        m = fc_model(kind)
        w = (PER_CHANNEL, (4, 5), "per-channel", 0, tuple(s(0.02 + 0.005 * k) for k in range(4)))
    for api in (29, 30, 33):
        g = graph(m, api)
        assert g.ops() == [("DEQUANTIZE", [w], [(FLOAT_T, (4, 5), 0.0, 0)]),
                           ("FULLY_CONNECTED", [(FLOAT_T, (2, 3, 5), 0.0, 0), (FLOAT_T, (4, 5), 0.0, 0),
                                                (FLOAT_T, (4,), 0.0, 0), ("INT32", 0)], [(FLOAT_T, (6, 4), 0.0, 0)])]
        fc, dq = g.model.main.operations[1], g.model.main.operations[0]
        assert fc.inputs[1] == dq.outputs[0]


@pytest.mark.parametrize("api,args", [
    (30, dict(kind="int8", keep=True)), (33, dict(kind="float", keep=True, in_shape=(3, 2, 2, 5), act=1)),
    (27, dict(bias="none")), (28, dict(kind="uint8", bias="omitted")), (29, dict(kind="int8", bias="none")),
    (30, dict(kind="int8", bias="omitted")), (29, dict(kind="hybrid")), (30, dict(kind="hybrid_per_channel")),
    (33, dict(kind="hybrid", keep=True))])
def test_fully_connected_parity(api, args):
    assert_verified(fc_model(**args), api)


# -- CONV_2D: hybrid, grouped, dilated; DEPTHWISE_CONV_2D dilated -------------------------------------------
def conv_model(kind="float", groups=1, dilation=(1, 1), in_shape=(2, 9, 8, 4), out_ch=6, k=(3, 2),
               padding=Padding.SAME) -> bytes:
    cin = in_shape[3] // groups
    r = rng()
    w = r.standard_normal((out_ch, k[0], k[1], cin)).astype(np.float32)
    wv, wq = w, None
    if kind == "hybrid":
        wv, wq = quantize(w, (0.03,)), q(0.03)
    elif kind == "hybrid_per_channel":
        sc = [0.02 + 0.004 * i for i in range(out_ch)]
        wv, wq = quantize(w, sc), q(sc, [0] * out_ch, 0)
    h = in_shape[1] if padding == Padding.SAME else in_shape[1] - dilation[0] * (k[0] - 1)
    wd = in_shape[2] if padding == Padding.SAME else in_shape[2] - dilation[1] * (k[1] - 1)
    return single_op_model(B.CONV_2D, [("x", in_shape, np.float32), ("w", wv, wq),
                                       ("b", r.standard_normal(out_ch).astype(f32))],
                           [("y", (in_shape[0], h, wd, out_ch), np.float32)],
                           Conv2DOptions(padding=padding, stride_w=1, stride_h=1, fused_activation_function=1,
                                         dilation_w_factor=dilation[1], dilation_h_factor=dilation[0]),
                           version=2 if kind != "float" else 1)


def test_conv_verdicts():
    hybrid = "Hybrid operators not supported before NNAPI 1.2"
    assert verdict(conv_model("hybrid"), 28) == (False, [hybrid])
    assert verdict(conv_model("hybrid_per_channel"), 27) == (
        False, [hybrid, "Per-channel quantized convolution not supported before NNAPI 1.2."])
    assert accepted_levels(conv_model("hybrid")) == [29, 30, 31, 33, 34, 35]
    assert verdict(conv_model(groups=2), 28) == (False, ["Grouped convolution not supported before NNAPI < 1.2"])
    assert accepted_levels(conv_model(groups=2)) == [29, 30, 31, 33, 34, 35]
    assert verdict(conv_model(dilation=(2, 3)), 28) == (False, ["NNAPI supports dilated Conv2D since NNAPI 1.2."])
    assert accepted_levels(conv_model(dilation=(2, 3))) == [29, 30, 31, 33, 34, 35]
    # two inputs: "omitted bias" (a -1 third input passes the count)
    two = single_op_model(B.CONV_2D, [("x", (1, 5, 5, 2), np.float32), ("w", np.ones((3, 1, 1, 2), f32))],
                          [("y", (1, 5, 5, 3), np.float32)],
                          Conv2DOptions(padding=Padding.SAME, stride_w=1, stride_h=1))
    assert verdict(two, 30) == (False, ["Conv2D with omitted bias not supported"])


def test_conv_grouped_graph():
    """Input channels != filter channels: GROUPED_CONV_2D with the group count after the strides."""
    g = graph(conv_model(groups=2), 29)
    assert g.ops() == [("GROUPED_CONV_2D", [(FLOAT_T, (2, 9, 8, 4), 0.0, 0), (FLOAT_T, (6, 3, 2, 2), 0.0, 0),
                                            (FLOAT_T, (6,), 0.0, 0), ("INT32", SAME), ("INT32", 1), ("INT32", 1),
                                            ("INT32", 2), ("INT32", 1)], [(FLOAT_T, (2, 9, 8, 6), 0.0, 0)])]


def test_conv_dilated_graph():
    """Dilation: NHWC (false), then the width and height factors after the activation."""
    g = graph(conv_model(dilation=(2, 3), padding=Padding.VALID), 29)
    assert g.ops() == [("CONV_2D", [(FLOAT_T, (2, 9, 8, 4), 0.0, 0), (FLOAT_T, (6, 3, 2, 4), 0.0, 0),
                                    (FLOAT_T, (6,), 0.0, 0), ("INT32", VALID), ("INT32", 1), ("INT32", 1),
                                    ("INT32", 1), ("BOOL", False), ("INT32", 3), ("INT32", 2)],
                        [(FLOAT_T, (2, 5, 5, 6), 0.0, 0)])]


def test_conv_grouped_and_dilated_is_refused_by_the_runtime():
    """Map appends the dilation operands to GROUPED_CONV_2D too, which has no dilation: 11 inputs (neither the
    implicit signature's 8 or 9 nor the explicit one's 11 with these types), which Android's runtime refuses."""
    g = graph(conv_model(groups=2, dilation=(2, 2)), 29)
    assert g.op_types == ["GROUPED_CONV_2D"]
    assert g.op(0)[1][6:] == [("INT32", 2), ("INT32", 1), ("BOOL", False), ("INT32", 2), ("INT32", 2)]
    assert "GROUPED_CONV_2D" in g.error


@pytest.mark.parametrize("kind", ["hybrid", "hybrid_per_channel"])
def test_conv_hybrid_graph(kind):
    g = graph(conv_model(kind), 29)
    w = (SYMM, (6, 3, 2, 4), s(0.03), 0) if kind == "hybrid" else \
        (PER_CHANNEL, (6, 3, 2, 4), "per-channel", 0, tuple(s(0.02 + 0.004 * i) for i in range(6)))
    assert g.ops() == [("DEQUANTIZE", [w], [(FLOAT_T, (6, 3, 2, 4), 0.0, 0)]),
                       ("CONV_2D", [(FLOAT_T, (2, 9, 8, 4), 0.0, 0), (FLOAT_T, (6, 3, 2, 4), 0.0, 0),
                                    (FLOAT_T, (6,), 0.0, 0), ("INT32", SAME), ("INT32", 1), ("INT32", 1),
                                    ("INT32", 1)], [(FLOAT_T, (2, 9, 8, 6), 0.0, 0)])]


@pytest.mark.parametrize("api,args", [(29, dict(groups=2)), (33, dict(groups=4, in_shape=(1, 6, 5, 8), out_ch=8)),
                                      (29, dict(dilation=(2, 3), padding=Padding.VALID)),
                                      (30, dict(dilation=(2, 1))), (29, dict(kind="hybrid")),
                                      (30, dict(kind="hybrid_per_channel")),
                                      (34, dict(kind="hybrid_per_channel", groups=2))])
def test_conv_parity(api, args):
    assert_verified(conv_model(**args), api)


def depthwise_model(dilation=(2, 3), dtype=np.float32) -> bytes:
    r = rng()
    w = r.standard_normal((1, 3, 2, 6)).astype(np.float32)
    return single_op_model(B.DEPTHWISE_CONV_2D, [("x", (2, 9, 8, 3), np.float32), ("w", w),
                                                 ("b", r.standard_normal(6).astype(f32))],
                           [("y", (2, 9, 8, 6), np.float32)],
                           DepthwiseConv2DOptions(padding=Padding.SAME, stride_w=1, stride_h=1, depth_multiplier=2,
                                                  dilation_w_factor=dilation[1], dilation_h_factor=dilation[0]),
                           version=2)


def test_depthwise_dilated():
    assert verdict(depthwise_model(), 28) == (
        False, ["dilation_width_factor and dilation_height_factor expected to be equal to 1"])
    assert accepted_levels(depthwise_model()) == [29, 30, 31, 33, 34, 35]
    assert accepted_levels(depthwise_model((1, 1))) == [27, 28, 29, 30, 31, 33, 34, 35]
    g = graph(depthwise_model(), 29)
    assert g.ops() == [("DEPTHWISE_CONV_2D", [(FLOAT_T, (2, 9, 8, 3), 0.0, 0), (FLOAT_T, (1, 3, 2, 6), 0.0, 0),
                                              (FLOAT_T, (6,), 0.0, 0), ("INT32", SAME), ("INT32", 1), ("INT32", 1),
                                              ("INT32", 2), ("INT32", 0), ("BOOL", False), ("INT32", 3),
                                              ("INT32", 2)], [(FLOAT_T, (2, 9, 8, 6), 0.0, 0)])]


@pytest.mark.parametrize("api", [29, 30, 35])
def test_depthwise_dilated_parity(api):
    assert_verified(depthwise_model(), api)


# -- DENSIFY feeding CONV_2D --------------------------------------------------------------------------------
_DENSE = rng(7)
DENSE_W = (_DENSE.standard_normal((5, 3, 2, 4)) * (_DENSE.random((5, 3, 2, 4)) < 0.4)).astype(np.float32)


def densify_model(kind="float32") -> tuple[bytes, np.ndarray]:
    """Sparse constant weights -> DENSIFY (-> DEQUANTIZE for float16) -> CONV_2D. Returns the model and the
    dense weights CONV_2D reads (float16-rounded, or int8)."""
    b = TfliteBuilder()
    int8 = kind == "int8"
    xq, wq, yq = (q(0.05, -2), q(0.03), q(0.2, 5)) if int8 else (None, None, None)
    x = b.input("x", (2, 7, 6, 4), np.int8 if int8 else np.float32, xq)
    dense = {"float32": DENSE_W, "float16": DENSE_W.astype(np.float16), "int8": quantize(DENSE_W, (0.03,))}[kind]
    values, sp = filter_csr(dense)
    sparse = b.const("w_sparse", values, shape=dense.shape, sparsity=sp, quant=wq)
    wd = b.tensor("w_dense", dense.shape, dense.dtype, wq)
    b.op(B.DENSIFY, [sparse], [wd], DensifyOptions())
    if kind == "float16":
        w32 = b.tensor("w", dense.shape, np.float32)
        b.op(B.DEQUANTIZE, [wd], [w32])
        wd = w32
    r = rng()
    bias = b.const("b", r.integers(-50, 50, 5).astype(np.int32), quant=q(s(f32(0.05) * f32(0.03)))) if int8 \
        else b.const("b", r.standard_normal(5).astype(f32))
    y = b.tensor("y", (2, 7, 6, 5), np.int8 if int8 else np.float32, yq)
    b.op(B.CONV_2D, [x, wd, bias], [y], Conv2DOptions(padding=Padding.SAME, stride_w=1, stride_h=1),
         version=3 if int8 else 1)
    b.output(y)
    return b.finish(), dense


@pytest.mark.parametrize("kind", ["float32", "float16", "int8"])
def test_densify_verdicts(kind):
    """DENSIFY of a constant is taken from API 30, without a word below (Validate returns false)."""
    m, _ = densify_model(kind)
    assert verdict(m, 29, node=0) == (False, [])
    assert accepted_levels(m, node=0) == [30, 31, 33, 34, 35]


@pytest.mark.parametrize("kind,wtype", [("float32", FLOAT_T), ("float16", FLOAT_T), ("int8", S8)])
def test_densify_into_conv_graph(kind, wtype):
    """DENSIFY (and the DEQUANTIZE of its float16 output) make no operation: CONV_2D reads the densified weights
    as a new constant (DensifyAndDequantizeConstTensor) of the DENSIFY output's dims and params."""
    m, dense = densify_model(kind)
    g = graph(m, 30)
    assert g.nodes == list(range(len(g.nodes))) and g.op_types == ["CONV_2D"]
    w = (wtype, (5, 3, 2, 4), s(0.03), 0) if kind == "int8" else (wtype, (5, 3, 2, 4), 0.0, 0)
    assert g.op(0)[1][1] == w
    want = dense.astype(np.float32) if kind != "int8" else dense
    np.testing.assert_array_equal(g.input_value(0, 1), want.reshape(-1))


@pytest.mark.parametrize("kind", ["float32", "float16", "int8"])
def test_densify_into_conv_parity(kind):
    m, _ = densify_model(kind)
    assert_verified(m, 30)


@pytest.mark.parametrize("kind,nodes,w", [("float32", [1], (FLOAT_T, (5, 3, 2, 4), 0.0, 0)),
                                           ("float16", [2], (FLOAT_T, (5, 3, 2, 4), 0.0, 0)),
                                           ("int8", [1], (U8, (5, 3, 2, 4), s(0.03), 128))])
def test_densify_below_30_conv_reads_its_weights_from_the_cpu(kind, nodes, w):
    """Below API 30 DENSIFY (and a float16 DEQUANTIZE) stay on the CPU: CONV_2D alone is delegated, its dense
    weights a model input (int8 ones converted at each invocation, zero point + 128)."""
    m, _ = densify_model(kind)
    g = graph(m, 29)
    assert g.nodes == nodes and g.op_types == ["CONV_2D"] and g.op(0)[1][1] == w
    assert g.inputs[1] == w
    assert_verified(m, 29, allow_partial=True)


# -- HARD_SWISH below API 30 --------------------------------------------------------------------------------
def hard_swish_model(dtype=np.uint8, xq=(0.05, 100), yq=(0.03, 20), shape=(2, 3, 5)) -> bytes:
    quant = dtype != np.float32
    return single_op_model(B.HARD_SWISH, [("x", shape, dtype, q(*xq) if quant else None)],
                           [("y", shape, dtype, q(*yq) if quant else None)], HardSwishOptions())


def hard_swish_params(scale: float, zp: int) -> dict:
    """TransformHardSwishIntoSupportedOps' intermediate quantization, in float32 as the C++ computes it
    (`zp` already + 128 for int8 carried as uint8)."""
    scale = f32(scale)
    lo, hi = f32((0 - zp) * scale), f32((255 - zp) * scale)

    def params(mn, mx):  # CalculateQuantizationParams (zero point truncated)
        sc = f32((mx - mn) / f32(255))
        zero = 0 if mn > 0 else (255 if mx < 0 else int(f32(f32(0) - mn) / sc))
        return s(sc), zero
    s1_lo = f32(-1) if f32(lo / f32(3)) < f32(-1) else f32(lo / f32(3))
    s1_hi = f32(1) if f32(hi / f32(3)) > f32(1) else f32(hi / f32(3))
    s2_lo, s2_hi = f32(lo / f32(2)), f32(hi / f32(2))
    top = f32(s1_hi * s2_hi) if f32(s1_hi * s2_hi) > f32(s1_lo * s2_lo) else f32(s1_lo * s2_lo)
    return {"s1": params(s1_lo, s1_hi), "s2": (s(scale / f32(2)), zp), "s3": params(f32(0), top),
            "third": s(f32(1) / f32(3) / f32(64)), "half": s(f32(0.5) / f32(64))}


def test_hard_swish_verdicts():
    """No version or level check: taken at every level for float and quantized inputs."""
    for dtype in (np.float32, np.uint8, np.int8):
        assert accepted_levels(hard_swish_model(dtype, (0.05, -20) if dtype == np.int8 else (0.05, 100),
                                                (0.03, -100) if dtype == np.int8 else (0.03, 20))) == \
            [27, 28, 29, 30, 31, 33, 34, 35]


@pytest.mark.parametrize("dtype,xq,yq,api", [(np.uint8, (0.05, 100), (0.03, 20), 27),
                                             (np.uint8, (0.1, 128), (0.05, 30), 29),
                                             (np.int8, (0.05, -28), (0.03, -108), 29)])
def test_hard_swish_below_30_graph(dtype, xq, yq, api):
    """0.5x * relu1(x / 3) + 0.5x as MUL, MUL, MUL, ADD: [1] uint8 constants of value 64 (scale v / 64), and
    intermediates of the computed uint8 params; int8 travels as uint8 (+128) end to end."""
    shift = 128 if dtype == np.int8 else 0
    p = hard_swish_params(xq[0], xq[1] + shift)
    x = (U8, (2, 3, 5), s(xq[0]), xq[1] + shift)
    s1, s2, s3 = (U8, (2, 3, 5)) + p["s1"], (U8, (2, 3, 5)) + p["s2"], (U8, (2, 3, 5)) + p["s3"]
    g = graph(hard_swish_model(dtype, xq, yq), api)
    assert g.ops() == [
        ("MUL", [x, (U8, (1,), p["third"], 0), ("INT32", 2)], [s1]),
        ("MUL", [x, (U8, (1,), p["half"], 0), ("INT32", 0)], [s2]),
        ("MUL", [s1, s2, ("INT32", 0)], [s3]),
        ("ADD", [s2, s3, ("INT32", 0)], [(U8, (2, 3, 5), s(yq[0]), yq[1] + shift)])]
    assert list(g.input_value(0, 1)) == [64] and list(g.input_value(1, 1)) == [64]


def test_hard_swish_float_below_30_graph():
    g = graph(hard_swish_model(np.float32), 28)
    t = (FLOAT_T, (2, 3, 5), 0.0, 0)
    assert g.ops() == [("MUL", [t, (FLOAT_T, (1,), 0.0, 0), ("INT32", 2)], [t]),
                       ("MUL", [t, (FLOAT_T, (1,), 0.0, 0), ("INT32", 0)], [t]),
                       ("MUL", [t, t, ("INT32", 0)], [t]), ("ADD", [t, t, ("INT32", 0)], [t])]
    assert list(g.input_value(0, 1)) == [f32(1) / f32(3)] and list(g.input_value(1, 1)) == [0.5]


def test_hard_swish_native_from_30():
    g = graph(hard_swish_model(np.int8, (0.05, -28), (0.03, -108)), 30)
    assert g.ops() == [("HARD_SWISH", [(S8, (2, 3, 5), s(0.05), -28)], [(S8, (2, 3, 5), s(0.03), -108)])]


@pytest.mark.parametrize("api", [27, 29, 30, 33])
def test_hard_swish_float_parity(api):
    assert_verified(hard_swish_model(np.float32), api)


@pytest.mark.parametrize("dtype,xq,yq", [(np.uint8, (0.05, 100), (0.03, 20)), (np.uint8, (0.1, 128), (0.05, 30)),
                                         (np.int8, (0.02, -68), (0.02, -88))])
def test_hard_swish_quantized_gap_below_30(dtype, xq, yq):
    """The composite rounds at each of its four steps where TFLite's HARD_SWISH rounds once: below 30 it is
    less exact by construction. On every one of the 256 inputs it stays within 1 LSB of TFLite (nnconv's
    tolerance), but is off by one on some, where the native HARD_SWISH from API 30 is exact here."""
    x = (np.arange(256) - (128 if dtype == np.int8 else 0)).astype(dtype).reshape(2, 8, 16)
    m = hard_swish_model(dtype, xq, yq, shape=(2, 8, 16))
    off = {}
    for api in (27, 29, 30):
        if dtype == np.int8 and api == 27:
            continue
        ours, theirs = run_both(m, api, {"x": x})
        d = np.abs(ours["y"].astype(int) - theirs["y"].astype(int))
        off[api] = (int(d.max()), int((d > 0).sum()))
    assert off[29][0] == 1 and off[29][1] > 0
    assert off.get(27, off[29])[0] == 1
    assert off[30] == (0, 0)


# -- SQUARED_DIFFERENCE -------------------------------------------------------------------------------------
def sqdiff_model(dtype=np.float32, iq=(0.05, 100), oq=(0.01, 0), shapes=((2, 3, 5), (3, 5))) -> bytes:
    quant = dtype in (np.uint8, np.int8)
    return single_op_model(B.SQUARED_DIFFERENCE, [("a", shapes[0], dtype, q(*iq) if quant else None),
                                                  ("b", shapes[1], dtype, q(*iq) if quant else None)],
                           [("y", shapes[0], dtype, q(*oq) if quant else None)], SquaredDifferenceOptions(),
                           version=2 if dtype == np.int8 else 1)


def test_squared_difference_verdicts():
    assert verdict(sqdiff_model(), 27) == (False, ["Android sdk version less than 28"])
    assert accepted_levels(sqdiff_model()) == [28, 29, 30, 31, 33, 34, 35]
    assert verdict(sqdiff_model(np.uint8), 28) == (False, ["Input type not in expected list kTfLiteFloat32"])
    assert accepted_levels(sqdiff_model(np.uint8)) == [29, 30, 31, 33, 34, 35]
    int8 = sqdiff_model(np.int8, (0.05, -3), (0.01, -128))
    assert verdict(int8, 29) == (False, ["Input type not in expected list kTfLiteFloat32, kTfLiteUInt8"])
    assert accepted_levels(int8) == [30, 31, 33, 34, 35]
    assert accepted_levels(sqdiff_model(np.int32)) == [30, 31, 33, 34, 35]
    rank5 = sqdiff_model(shapes=((2, 1, 3, 1, 5), (3, 1, 5)))
    assert verdict(rank5, 30) == (False, ["NNAPI does not support input rank greater than 4"])


@pytest.mark.parametrize("dtype,iq,oq,api,diff_type,diff_zp", [
    (np.uint8, (0.05, 100), (0.01, 0), 29, U8, 128), (np.int8, (0.05, -3), (0.01, -128), 30, S8, 0),
    (np.uint8, (0.02, 128), (0.05, 3), 33, U8, 128)])
def test_squared_difference_quantized_graph(dtype, iq, oq, api, diff_type, diff_zp):
    """SUB into a difference quantized over [-sqrt(max), sqrt(max)] (max = (255 or 127 - out_zp) * out_scale,
    scale 2 sqrt(max) / 254, zero point 128 or 0), then MUL of it by itself."""
    top = f32((255 if dtype == np.uint8 else 127) - oq[1]) * f32(oq[0])
    scale = s(f32(2.0) * f32(math.sqrt(top)) / f32(254.0))
    a, b = (diff_type, (2, 3, 5), s(iq[0]), iq[1]), (diff_type, (3, 5), s(iq[0]), iq[1])
    diff = (diff_type, (2, 3, 5), scale, diff_zp)
    g = graph(sqdiff_model(dtype, iq, oq), api)
    assert g.ops() == [("SUB", [a, b, ("INT32", 0)], [diff]),
                       ("MUL", [diff, diff, ("INT32", 0)], [(diff_type, (2, 3, 5), s(oq[0]), oq[1])])]


@pytest.mark.parametrize("dtype,nn", [(np.float32, FLOAT_T), (np.int32, I32)])
def test_squared_difference_graph(dtype, nn):
    g = graph(sqdiff_model(dtype), 30)
    t = (nn, (2, 3, 5), 0.0, 0)
    assert g.ops() == [("SUB", [t, (nn, (3, 5), 0.0, 0), ("INT32", 0)], [t]),
                       ("MUL", [(nn, (2, 3, 5), 0.0, 0), (nn, (2, 3, 5), 0.0, 0), ("INT32", 0)],
                        [(nn, (2, 3, 5), 0.0, 0)])]


def test_squared_difference_scalar_operand_as_tensor():
    """Both inputs are added with SCALAR_AS_TENSOR: a rank-0 one becomes [1]."""
    m = single_op_model(B.SQUARED_DIFFERENCE, [("a", (2, 3), np.float32), ("b", np.array(0.5, f32))],
                        [("y", (2, 3), np.float32)], SquaredDifferenceOptions())
    assert graph(m, 28).op(0)[1][1] == (FLOAT_T, (1,), 0.0, 0)


@pytest.mark.parametrize("api,dtype", [(28, np.float32), (30, np.int32), (33, np.float32)])
def test_squared_difference_parity(api, dtype):
    assert_verified(sqdiff_model(dtype), api)


GRID_A = np.repeat(np.arange(256), 256).reshape(256, 256)
GRID_B = np.tile(np.arange(256), 256).reshape(256, 256)


@pytest.mark.parametrize("iq,oq", [((0.05, 100), (0.01, 0)), ((0.02, 128), (0.05, 0))])
def test_squared_difference_int8_gap(iq, oq):
    """The difference is quantized on its own scale before it is squared: the composite is off by up to 2 LSB
    of TFLite's int8 SQUARED_DIFFERENCE, by construction (asserted over every pair of int8 inputs)."""
    m = sqdiff_model(np.int8, (iq[0], iq[1] - 128), (oq[0], oq[1] - 128), ((256, 256), (256, 256)))
    ours, theirs = run_both(m, 30, {"a": (GRID_A - 128).astype(np.int8), "b": (GRID_B - 128).astype(np.int8)})
    d = np.abs(ours["y"].astype(int) - theirs["y"].astype(int))
    assert d.max() == 2 and (d == 2).sum() > 0


def test_squared_difference_uint8_gap():
    """TFLite has no uint8 SQUARED_DIFFERENCE kernel (its interpreter fails at invoke), yet the delegate takes
    it from API 29: compared with the exact result, quantized, the composite is within 2 LSB."""
    m = sqdiff_model(np.uint8, (0.05, 100), (0.01, 0), ((256, 256), (256, 256)))
    g = graph(m, 29)
    ours = Executor(g.converted).run({"a": GRID_A.astype(np.uint8), "b": GRID_B.astype(np.uint8)})["y"]
    real = ((GRID_A - GRID_B) * 0.05) ** 2
    want = np.clip(np.round(real / 0.01), 0, 255)
    d = np.abs(ours.astype(int) - want)
    assert d.max() == 2 and (d > 0).sum() > 0


# -- COS ----------------------------------------------------------------------------------------------------
def cos_model(shape=(2, 3, 5)) -> bytes:
    return single_op_model(B.COS, [("x", shape, np.float32)], [("y", shape, np.float32)], CosOptions())


def test_cos():
    """cos(x) = sin(pi/2 - x): SUB from a constant of pi/2 of the input's dims (a new tensor), then SIN."""
    assert verdict(cos_model(), 28) == (False, ["Android sdk version less than 29"])
    assert accepted_levels(cos_model()) == [29, 30, 31, 33, 34, 35]
    g = graph(cos_model(), 29)
    t = (FLOAT_T, (2, 3, 5), 0.0, 0)
    assert g.ops() == [("SUB", [t, t, ("INT32", 0)], [t]), ("SIN", [t], [t])]
    np.testing.assert_array_equal(g.input_value(0, 0), np.full(30, f32(math.pi / 2), f32))
    assert g.model.main.input_indexes == [g.model.main.operations[0].inputs[1]]
    u8 = single_op_model(B.COS, [("x", (2, 3), np.uint8, q(0.1, 3))], [("y", (2, 3), np.uint8, q(0.1, 3))])
    assert verdict(u8, 30) == (False, ["Input should be Float"])


@pytest.mark.parametrize("api", [29, 30, 35])
def test_cos_parity(api):
    x = rng().uniform(-4, 4, (2, 3, 5)).astype(np.float32)
    assert_verified(cos_model(), api, {"x": x})


# -- LEAKY_RELU ---------------------------------------------------------------------------------------------
def leaky_model(dtype=np.float32, alpha=0.2, xq=(0.05, 100), yq=(0.03, 90), version: int = 1) -> bytes:
    """Version 1 for float, uint8 and int8 (op_version.cc gives version 2 to int16 only)."""
    quant = dtype != np.float32
    return single_op_model(B.LEAKY_RELU, [("x", (2, 3, 5), dtype, q(*xq) if quant else None)],
                           [("y", (2, 3, 5), dtype, q(*yq) if quant else None)], LeakyReluOptions(alpha=alpha),
                           version=version)


def test_leaky_relu_verdicts():
    assert verdict(leaky_model(), 28) == (False, ["Android sdk version less than 29"])
    for dtype in (np.float32, np.uint8, np.int8):
        assert accepted_levels(leaky_model(dtype)) == [29, 30, 31, 33, 34, 35]
    # ExpectOpVersion(version, 1): a version 2 LEAKY_RELU is refused at every level
    assert accepted_levels(leaky_model(np.int8, xq=(0.05, -28), yq=(0.03, -38), version=2)) == []
    assert verdict(leaky_model(np.int8, xq=(0.05, -28), yq=(0.03, -38), version=2), 30) == (
        False, ["OP Version different from 1"])
    assert verdict(leaky_model(np.int16, xq=(0.05, 0), yq=(0.03, 0)), 30) == (
        False, ["Input type not in expected list kTfLiteFloat32, kTfLiteUInt8, kTfLiteInt8"])


@pytest.mark.parametrize("dtype,api,x,alpha", [
    (np.float32, 29, (FLOAT_T, (2, 3, 5), 0.0, 0), (FLOAT_T, (1,), 0.0, 0)),
    (np.uint8, 29, (U8, (2, 3, 5), s(0.05), 100), (U8, (1,), s(0.2), 0)),
    (np.int8, 29, (U8, (2, 3, 5), s(0.05), 100), (U8, (1,), s(0.2), 0)),
    (np.int8, 30, (S8, (2, 3, 5), s(0.05), -28), (S8, (1,), s(0.2), 0)),
    (np.uint8, 33, (U8, (2, 3, 5), s(0.05), 100), (U8, (1,), s(0.2), 0))])
def test_leaky_relu_graph(dtype, api, x, alpha):
    """PRELU with an alpha the delegate makes: float32 [alpha], or a quantized [1] of scale alpha (int8 from 30,
    else uint8; int8 below 30 is carried as uint8)."""
    shift = -128 if dtype == np.int8 else 0
    m = leaky_model(dtype, 0.2, (0.05, 100 + shift), (0.03, 90 + shift))
    g = graph(m, api)
    y = (x[0], (2, 3, 5), s(0.03), 90 + (shift if x[0] == S8 else 0)) if dtype != np.float32 else x
    assert g.ops() == [("PRELU", [x, alpha], [y])]
    assert list(g.input_value(0, 1)) == ([s(0.2)] if dtype == np.float32 else [1])


@pytest.mark.parametrize("dtype,api", [(np.float32, 29), (np.uint8, 29), (np.int8, 29), (np.int8, 30),
                                       (np.float32, 34), (np.uint8, 33)])
def test_leaky_relu_parity(dtype, api):
    shift = -128 if dtype == np.int8 else 0
    assert_verified(leaky_model(dtype, 0.2, (0.05, 100 + shift), (0.03, 90 + shift)), api)


# -- an omitted input added as a tensor -----------------------------------------------------------------------
@pytest.mark.parametrize("op", [B.CONV_2D, B.FULLY_CONNECTED])
def test_omitted_input_read_as_a_tensor_crashes_the_build(op):
    """A CONV_2D whose bias is given as -1 passes Validate (it counts 3 inputs) and AddOpsAndTensors adds tensor
    -1; a FULLY_CONNECTED whose weights are -1 (and no bias) has Map's zero bias read tensor -1 for its units:
    upstream indexes its tensor array at -1 (undefined behaviour), never the last tensor as Python would.
    (TFLite's own Prepare refuses both models, so only the builder is asked here.)"""
    from nnconv.delegate.build import build_partition
    from nnconv.delegate.graph import DelegateGraph
    from nnconv.delegate.operands import BuildCrash
    from nnconv.delegate.setup import DelegateSetup
    from nnconv.tflite.reader import read_model
    if op == B.CONV_2D:
        m = single_op_model(op, [("x", (1, 5, 4, 2), np.float32), ("w", np.ones((3, 1, 1, 2), f32)), None],
                            [("y", (1, 5, 4, 3), np.float32)],
                            Conv2DOptions(padding=Padding.SAME, stride_w=1, stride_h=1))
    else:
        m = single_op_model(op, [("x", (3, 2), np.float32), None], [("y", (3, 4), np.float32)],
                            FullyConnectedOptions())
    assert verdict(m, 30) == (True, [])
    g = DelegateGraph(read_model(m))
    with pytest.raises(BuildCrash, match=r"omitted \(-1\)"):
        build_partition(g, g.nodes, [0], [len(g.tensors) - 1], DelegateSetup(30))
