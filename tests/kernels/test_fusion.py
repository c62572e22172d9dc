"""The executor's fusions (`nnconv.runtime.fusion`). Swish: a float32 MUL(x, LOGISTIC(x)) runs as one step,
within the float tolerance of TFLite and within an ulp or so of the unfused pair. Byte functions: a chain of
elementwise operations on one quant8 tensor (a quant8 swish, a LOGISTIC through float) as one table lookup
with the chain's bits. Scaled filter: CONV_2D
(MUL(x, per-channel gate)) runs as the convolution of x with the filter scaled along its input channels.
Gate: the LOGISTIC or constant MUL making such a gate runs inside the step that reads it. Affine:
ADD(MUL(x, constant), constant) runs as one step with the same bits.
All only when nothing can see the absorbed operations' outputs: a trace (per-op parity), relaxed float16, a
kernel override, a second reader or a model output keep the two operations apart."""

from __future__ import annotations

import numpy as np
import pytest

import nnconv
from harness import TfliteBuilder, assert_parity, step_names
from nnconv.nnapi.enums import OperationType
from nnconv.runtime.executor import Executor
from nnconv.runtime.trace import Trace
from nnconv.runtime.kernels.logistic import logistic
from nnconv.tflite.builder import QuantParams
from nnconv.tflite.options import AddOptions, Conv2DOptions, MulOptions
from nnconv.tflite.reader import read_model
from nnconv.tflite.schema_enums import BuiltinOperator as B
from nnconv.tflite.schema_enums import Padding


def swish_model(shape, x_first: bool = True, act: int = 0, logistic_is_output: bool = False,
                second_reader: bool = False, other_operand: bool = False) -> bytes:
    """x -> LOGISTIC -> s; z = MUL(x, s) (or MUL(s, x)), optionally with s also a model output, also read
    by an ADD, or the MUL taking another input instead of x."""
    b = TfliteBuilder()
    x = b.input("x", shape, np.float32)
    s = b.tensor("s", shape, np.float32)
    b.op(B.LOGISTIC, [x], [s])
    other = b.input("w", shape, np.float32) if other_operand else x
    z = b.tensor("z", shape, np.float32)
    b.op(B.MUL, [other, s] if x_first else [s, other], [z], MulOptions(fused_activation_function=act))
    outputs = [z]
    if second_reader:
        t = b.tensor("t", shape, np.float32)
        b.op(B.ADD, [s, z], [t], AddOptions(fused_activation_function=0))
        outputs = [t]
    if logistic_is_output:
        outputs.append(s)
    b.output(*outputs)
    return b.finish()


def feed_for(converted, scale: float = 6.0) -> dict:
    rng = np.random.default_rng(11)
    return {s.name: (rng.standard_normal(s.shape) * scale).astype(np.float32) for s in converted.inputs}


@pytest.mark.parametrize("shape", [(1, 9, 7, 5), (3, 4, 6), (2, 17)], ids=["nhwc", "rank3-batch3", "rank2"])
@pytest.mark.parametrize("x_first", [True, False], ids=["mul-x-s", "mul-s-x"])
@pytest.mark.parametrize("act", [0, 1, 3], ids=["none", "relu", "relu6"])
def test_fused_swish_parity_with_tflite(shape, x_first, act):
    model = swish_model(shape, x_first, act)
    converted = assert_parity(model, api_level=30, expect_ops=["LOGISTIC", "MUL"]).converted
    assert step_names(Executor(converted), feed_for(converted)) == ["LOGISTIC+MUL"]


def test_fused_swish_matches_the_unfused_pair_at_every_extreme():
    converted = nnconv.convert(swish_model((4, 64)), api_level=30).converted
    x = np.random.default_rng(3).standard_normal((4, 64)).astype(np.float32) * 30
    x[0, :12] = [np.inf, -np.inf, np.nan, 0.0, -0.0, 88.0, -88.0, -89.0, -103.0, 1e-30, -1e-30, 17.0]
    fused = Executor(converted).run({"x": x})["z"]
    apart = Executor(converted, kernel_overrides={OperationType.LOGISTIC: logistic}).run({"x": x})["z"]
    np.testing.assert_array_equal(np.isnan(fused), np.isnan(apart))
    np.testing.assert_array_equal(np.signbit(fused), np.signbit(apart))
    # one rounding instead of two: at most a couple of ulps apart
    np.testing.assert_array_max_ulp(np.nan_to_num(fused), np.nan_to_num(apart), maxulp=2)


@pytest.mark.parametrize("variant", ["logistic_is_output", "second_reader", "other_operand"])
def test_not_fused_when_the_logistic_output_is_seen_or_x_is_not_the_operand(variant):
    model = swish_model((2, 5, 3), **{variant: True})
    converted = assert_parity(model, api_level=30).converted
    assert "LOGISTIC+MUL" not in step_names(Executor(converted), feed_for(converted))


def test_trace_relaxed_and_overrides_see_both_operations():
    converted = nnconv.convert(swish_model((2, 5, 3)), api_level=30).converted
    feed = feed_for(converted)
    trace = Trace(keep=True)
    traced = Executor(converted, trace=trace)
    assert step_names(traced, feed) == ["LOGISTIC", "MUL"]
    logistic_out = converted.model.main.operations[0].outputs[0]
    np.testing.assert_allclose(trace.values[logistic_out], 1 / (1 + np.exp(-feed["x"].astype(np.float64))),
                               rtol=1e-6)
    assert step_names(Executor(converted, relaxed_fp16=True), feed) == ["LOGISTIC", "MUL"]
    overridden = Executor(converted, kernel_overrides={OperationType.MUL: lambda call: [np.zeros((2, 5, 3),
                                                                                                 np.float32)]})
    assert step_names(overridden, feed) == ["LOGISTIC", "MUL"]


def quant8_swish_model(shape, dtype, x_first: bool = True, act: int = 0, second_reader: bool = False,
                       x_scale: float = 0.07, gate_of_other_input: bool = False) -> bytes:
    """x (quant8 `dtype`, off-centre zero point) -> LOGISTIC -> s (scale 1/256, the type's minimum as zero
    point, as TFLite requires) -> MUL(x, s) or MUL(s, x) with `act` -> z; optionally s also read by an ADD, or
    the LOGISTIC of another input."""
    b = TfliteBuilder()
    shift = 0 if dtype == np.int8 else 128
    x = b.input("x", shape, dtype, quant=QuantParams(x_scale, -17 + shift))
    s = b.tensor("s", shape, dtype, quant=QuantParams(1 / 256, -128 + shift))
    b.op(B.LOGISTIC, [b.input("g", shape, dtype, quant=QuantParams(x_scale, shift)) if gate_of_other_input else x],
         [s])
    z = b.tensor("z", shape, dtype, quant=QuantParams(0.04, -90 + shift))
    b.op(B.MUL, [x, s] if x_first else [s, x], [z], MulOptions(fused_activation_function=act))
    if second_reader:
        t = b.tensor("t", shape, dtype, quant=QuantParams(0.05, -60 + shift))
        b.op(B.ADD, [s, z], [t], AddOptions(fused_activation_function=0))
        z = t
    b.output(z)
    return b.finish()


SWISH_OPS = ["LOGISTIC", "MUL"]
# an input scale of 8.6 (EfficientNet-B0 int8's): the LOGISTIC goes through float (its lowering's DEQUANTIZE,
# LOGISTIC, QUANTIZE), and the whole chain is still a function of x's byte
THROUGH_FLOAT_OPS = ["DEQUANTIZE", "LOGISTIC", "QUANTIZE", "MUL"]


@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["int8", "uint8"])
@pytest.mark.parametrize("x_first,act,x_scale,ops", [(True, 0, 0.07, SWISH_OPS), (False, 1, 0.07, SWISH_OPS),
                                                     (True, 3, 0.07, SWISH_OPS), (False, 0, 8.6, THROUGH_FLOAT_OPS)],
                         ids=["mul-x-s", "mul-s-x-relu", "relu6", "through-float"])
def test_quant8_chain_one_gather_same_bits(dtype, x_first, act, x_scale, ops):
    """A chain of elementwise operations on one quant8 tensor (a swish MUL(x, LOGISTIC(x)), with or without
    the LOGISTIC through float) runs as one table step: TFLite's results within 1 LSB, and exactly the
    operations' bits run apart, on every input byte (twice: the second run reads the memoized table)."""
    shape = (2, 16, 16)  # 512 values: every byte twice
    model = quant8_swish_model(shape, dtype, x_first, act, x_scale=x_scale)
    converted = assert_parity(model, api_level=30, expect_ops=ops).converted
    info = np.iinfo(dtype)
    every = np.resize(np.arange(info.min, info.max + 1), int(np.prod(shape)))
    feed = {"x": np.roll(every, 91).reshape(shape).astype(dtype)}
    fused_ex, apart_ex = Executor(converted), Executor(converted, trace=Trace())
    assert step_names(fused_ex, feed) == ["+".join(ops)]
    for _ in range(2):
        np.testing.assert_array_equal(fused_ex.run(feed)["z"], apart_ex.run(feed)["z"])
    assert_parity(model, api_level=30, inputs=feed)


@pytest.mark.parametrize("variant", ["second_reader", "gate_of_other_input"])
def test_quant8_chain_not_fused_when_a_value_is_read_outside_or_another_input_enters(variant):
    """The gate also read by an ADD, or the LOGISTIC of another input: not a function of x's byte alone."""
    converted = assert_parity(quant8_swish_model((3, 7), np.int8, **{variant: True}), api_level=30).converted
    feed = {name: np.arange(-60, -39, dtype=np.int8).reshape(3, 7) for name in ("x", "g")}
    feed = {s.name: feed[s.name] for s in converted.inputs}
    assert not [n for n in step_names(Executor(converted), feed) if "LOGISTIC+" in n]


def scaled_conv_model(x_shape, gate_shape, filter_shape, gate_first: bool = False, padding=Padding.SAME,
                      stride: int = 1, dilation: int = 1, mul_act: int = 0, product_is_output: bool = False) -> bytes:
    """x, g -> MUL(x, g) (or MUL(g, x)) -> h -> CONV_2D(h, constant filter and bias, RELU6) -> y."""
    rng = np.random.default_rng(2)
    b = TfliteBuilder()
    x = b.input("x", x_shape, np.float32)
    g = b.input("g", gate_shape, np.float32)
    h = b.tensor("h", x_shape, np.float32)
    b.op(B.MUL, [g, x] if gate_first else [x, g], [h], MulOptions(fused_activation_function=mul_act))
    w = b.const("w", rng.standard_normal(filter_shape).astype(np.float32))
    bias = b.const("bias", rng.standard_normal(filter_shape[0]).astype(np.float32))
    n, ih, iw, _ = x_shape
    o, kh, kw, _ = filter_shape
    if padding == Padding.SAME:
        oh, ow = -(-ih // stride), -(-iw // stride)
    else:
        oh = (ih - dilation * (kh - 1) - 1) // stride + 1
        ow = (iw - dilation * (kw - 1) - 1) // stride + 1
    y = b.tensor("y", (n, oh, ow, o), np.float32)
    b.op(B.CONV_2D, [h, w, bias], [y], Conv2DOptions(padding=padding, stride_w=stride, stride_h=stride,
                                                      fused_activation_function=3, dilation_w_factor=dilation,
                                                      dilation_h_factor=dilation))
    b.output(y, h) if product_is_output else b.output(y)
    return b.finish()


SCALED = [
    pytest.param((1, 12, 12, 8), (1, 1, 1, 8), (4, 1, 1, 8), {}, id="1x1"),
    pytest.param((2, 12, 12, 6), (1, 1, 1, 6), (4, 3, 3, 6), {"stride": 2}, id="3x3-same-stride2-batch2"),
    pytest.param((1, 13, 13, 5), (1, 1, 1, 5), (3, 3, 3, 5), {"padding": Padding.VALID, "dilation": 2},
                 id="3x3-valid-dilation2"),
    pytest.param((1, 10, 10, 8), (8,), (5, 1, 1, 8), {"gate_first": True}, id="rank1-gate-first"),
]


@pytest.mark.parametrize("x_shape,gate_shape,filter_shape,kw", SCALED)
def test_scaled_filter_conv_parity_with_tflite(x_shape, gate_shape, filter_shape, kw):
    model = scaled_conv_model(x_shape, gate_shape, filter_shape, **kw)
    converted = assert_parity(model, api_level=30, expect_ops=["MUL", "CONV_2D"]).converted
    feed = feed_for(converted, scale=1.0)
    assert step_names(Executor(converted), feed) == ["MUL+CONV_2D"]
    fused = Executor(converted).run(feed)["y"]
    apart = Executor(converted, trace=Trace()).run(feed)["y"]  # a trace turns fusion off
    np.testing.assert_allclose(fused, apart, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kw,x_shape,filter_shape", [
    ({"product_is_output": True}, (1, 12, 12, 8), (4, 1, 1, 8)),
    ({"mul_act": 1}, (1, 12, 12, 8), (4, 1, 1, 8)),  # a RELU between scale and filter does not commute
    ({}, (1, 2, 2, 8), (16, 1, 1, 8)),  # a filter larger than the map: scaling it would cost more
], ids=["product-is-output", "mul-relu", "filter-larger-than-map"])
def test_scaled_filter_conv_not_fused(kw, x_shape, filter_shape):
    model = scaled_conv_model(x_shape, (1, 1, 1, x_shape[-1]), filter_shape, **kw)
    converted = assert_parity(model, api_level=30).converted
    assert "MUL+CONV_2D" not in step_names(Executor(converted), feed_for(converted, scale=1.0))


def gated_model(gate_op: str, with_conv: bool, mul_act: int = 0, gate_also_output: bool = False,
                const_first: bool = False) -> bytes:
    """x [1, 12, 12, 8], g [1, 1, 1, 8] -> gate = LOGISTIC(g) or MUL(g, 1/6) -> h = MUL(x, gate) ->
    CONV_2D 1x1 (RELU6) -> y, or h as the output."""
    rng = np.random.default_rng(4)
    b = TfliteBuilder()
    x = b.input("x", (1, 12, 12, 8), np.float32)
    g = b.input("g", (1, 1, 1, 8), np.float32)
    gate = b.tensor("gate", (1, 1, 1, 8), np.float32)
    if gate_op == "logistic":
        b.op(B.LOGISTIC, [g], [gate])
    else:
        sixth = b.const("sixth", np.array([1 / 6], np.float32))
        b.op(B.MUL, [sixth, g] if const_first else [g, sixth], [gate], MulOptions(fused_activation_function=0))
    h = b.tensor("h", (1, 12, 12, 8), np.float32)
    b.op(B.MUL, [x, gate], [h], MulOptions(fused_activation_function=mul_act))
    outputs = [h]
    if with_conv:
        w = b.const("w", rng.standard_normal((4, 1, 1, 8)).astype(np.float32))
        bias = b.const("bias", rng.standard_normal(4).astype(np.float32))
        y = b.tensor("y", (1, 12, 12, 4), np.float32)
        b.op(B.CONV_2D, [h, w, bias], [y], Conv2DOptions(padding=Padding.SAME, stride_w=1, stride_h=1,
                                                          fused_activation_function=3))
        outputs = [y]
    if gate_also_output:
        outputs.append(gate)
    b.output(*outputs)
    return b.finish()


@pytest.mark.parametrize("gate_op,with_conv,kw,expected", [
    ("logistic", True, {}, ["GATE+MUL+CONV_2D"]),
    ("logistic", False, {"mul_act": 1}, ["GATE+MUL"]),
    ("sixth", True, {}, ["GATE+MUL+CONV_2D"]),
    ("sixth", False, {"const_first": True, "mul_act": 3}, ["GATE+MUL"]),
    ("logistic", True, {"gate_also_output": True}, ["LOGISTIC", "MUL+CONV_2D"]),
    ("sixth", False, {"gate_also_output": True}, ["MUL", "MUL"]),
], ids=["logistic-conv", "logistic-relu", "sixth-conv", "sixth-first-relu6", "gate-seen-conv", "gate-seen"])
def test_gate_absorbed_into_the_step_that_reads_it(gate_op, with_conv, kw, expected):
    converted = assert_parity(gated_model(gate_op, with_conv, **kw), api_level=30).converted
    feed = feed_for(converted, scale=1.0)
    assert step_names(Executor(converted), feed) == expected
    fused = Executor(converted).run(feed)
    apart = Executor(converted, trace=Trace()).run(feed)
    for name in fused:
        np.testing.assert_allclose(fused[name], apart[name], rtol=1e-5, atol=1e-6)


def affine_model(scale_shape, shift_shape, consts_first: bool = False, act: int = 1,
                 product_is_output: bool = False, shift_is_input: bool = False) -> bytes:
    """x [2, 6, 5, 8] -> MUL(x, constant scale) -> ADD(., shift) with `act` -> y; shift a constant unless
    `shift_is_input`."""
    rng = np.random.default_rng(6)
    b = TfliteBuilder()
    x = b.input("x", (2, 6, 5, 8), np.float32)
    scale = b.const("scale", rng.standard_normal(scale_shape).astype(np.float32))
    shift = (b.input("shift", shift_shape, np.float32) if shift_is_input
             else b.const("shift", rng.standard_normal(shift_shape).astype(np.float32)))
    h = b.tensor("h", (2, 6, 5, 8), np.float32)
    b.op(B.MUL, [scale, x] if consts_first else [x, scale], [h], MulOptions(fused_activation_function=0))
    y = b.tensor("y", (2, 6, 5, 8), np.float32)
    b.op(B.ADD, [shift, h] if consts_first else [h, shift], [y], AddOptions(fused_activation_function=act))
    b.output(y, h) if product_is_output else b.output(y)
    return b.finish()


@pytest.mark.parametrize("scale_shape,shift_shape,kw,fused", [
    ((8,), (8,), {}, True),
    ((1, 1, 1, 8), (8,), {"consts_first": True, "act": 3}, True),
    ((1,), (1,), {"act": 0}, True),  # a MobileNet's input scaling
    ((8,), (8,), {"product_is_output": True}, False),
    ((8,), (8,), {"shift_is_input": True}, False),
], ids=["per-channel-relu", "constants-first-relu6", "scalars", "product-is-output", "shift-not-constant"])
def test_affine_mul_add_one_step_same_bits(scale_shape, shift_shape, kw, fused):
    converted = assert_parity(affine_model(scale_shape, shift_shape, **kw), api_level=30).converted
    feed = feed_for(converted, scale=2.0)
    assert ("MUL+ADD" in step_names(Executor(converted), feed)) == fused
    together = Executor(converted).run(feed)
    apart = Executor(converted, trace=Trace()).run(feed)
    for name in together:
        np.testing.assert_array_equal(together[name], apart[name])


def quant8_affine_model(shape, scale_shape, shift_shape, dtype, consts_first: bool = False, act: int = 1,
                        product_is_output: bool = False, seed: int = 7) -> bytes:
    """x `shape` (quant8 `dtype`) -> MUL(x, constant scale) -> ADD(., constant shift) with `act` -> y, every
    tensor quantized with its own scale and an off-centre zero point (a TFLite int8 batch normalization)."""
    rng = np.random.default_rng(seed)
    lo, hi = (-128, 127) if dtype == np.int8 else (0, 255)
    b = TfliteBuilder()

    def q(scale: float, zp: int) -> QuantParams:
        return QuantParams(scale, zp if dtype == np.int8 else zp + 128)

    x = b.input("x", shape, dtype, quant=q(0.05, -9))
    scale = b.const("scale", rng.integers(lo, hi + 1, scale_shape).astype(dtype), quant=q(0.02, 3))
    shift = b.const("shift", rng.integers(lo, hi + 1, shift_shape).astype(dtype), quant=q(0.04, -20))
    h = b.tensor("h", shape, dtype, quant=q(0.03, 11))
    b.op(B.MUL, [scale, x] if consts_first else [x, scale], [h], MulOptions(fused_activation_function=0))
    y = b.tensor("y", shape, dtype, quant=q(0.06, -5))
    b.op(B.ADD, [shift, h] if consts_first else [h, shift], [y], AddOptions(fused_activation_function=act))
    b.output(y, h) if product_is_output else b.output(y)
    return b.finish()


@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["int8", "uint8"])
@pytest.mark.parametrize("shape,scale_shape,shift_shape,kw,fused", [
    ((1, 5, 7, 13), (13,), (13,), {}, True),
    ((2, 3, 300), (1, 1, 300), (300,), {"consts_first": True, "act": 3}, True),  # > 256 channels: uint32 indexes
    ((1, 9, 11, 3), (1,), (3,), {"act": 0}, True),
    ((4, 6), (1,), (1,), {"act": 2}, True),  # one value each: a 256-entry table
    ((1, 5, 7, 13), (13,), (13,), {"product_is_output": True}, False),
    ((1, 5, 7, 13), (7, 1), (13,), {}, False),  # a scale varying along another axis
], ids=["per-channel-relu", "wide-consts-first-relu6", "scalar-scale", "scalars-relu1", "product-is-output",
        "not-per-channel"])
def test_quant8_affine_one_gather_same_bits(dtype, shape, scale_shape, shift_shape, kw, fused):
    """The fused table gives TFLite's results within 1 LSB and exactly the unfused MUL and ADD kernels'
    bits, on every input byte in every channel."""
    converted = assert_parity(quant8_affine_model(shape, scale_shape, shift_shape, dtype, **kw),
                              api_level=30).converted
    info = np.iinfo(dtype)
    # every byte value in every position's channel, tiled over the input
    every = np.resize(np.arange(info.min, info.max + 1, dtype=np.int64), int(np.prod(shape)))
    feeds = [{converted.inputs[0].name: every.reshape(shape).astype(dtype)},
             {converted.inputs[0].name: np.roll(every, 37).reshape(shape).astype(dtype)}]
    fused_ex, apart_ex = Executor(converted), Executor(converted, trace=Trace())
    assert ("MUL+ADD" in step_names(Executor(converted), feeds[0])) == fused
    for feed in feeds * 2:  # the second round reads the memoized table and the pooled buffers
        together, apart = fused_ex.run(feed), apart_ex.run(feed)
        for name in together:
            np.testing.assert_array_equal(together[name], apart[name])


def test_quant8_affine_every_byte_every_channel_against_the_kernels():
    """Exhaustive: 256 rows holding every byte in each of 40 channels, int8, against the MUL then ADD
    kernels run apart (a trace)."""
    shape = (1, 256, 1, 40)
    converted, _ = nnconv.convert(read_model(quant8_affine_model(shape, (40,), (40,), np.int8, act=0, seed=3)),
                                  api_level=30)
    grid = (np.arange(256)[:, None] + np.arange(40)[None] * 7) % 256 - 128
    feed = {converted.inputs[0].name: grid.reshape(shape).astype(np.int8)}
    assert "MUL+ADD" in step_names(Executor(converted), feed)
    together = Executor(converted).run(feed)
    apart = Executor(converted, trace=Trace()).run(feed)
    for name in together:
        np.testing.assert_array_equal(together[name], apart[name])


# -- the byte operations' kernels (`OperationSpec.byte_op`) -------------------------------------------------
def _byte_op_call(op: OperationType, in_type, out_type):
    """A call of `op` on the 256 byte values of a quant8 type (or their dequantized float32 values) as the
    byte table makes it: a 1-D input whatever the operands declare ([2, 3] here), one-value constants for
    a second input, no activation."""
    from nnconv.nnapi.enums import OperandType as T
    from nnconv.nnapi.model import Operand, Operation
    from nnconv.runtime.kernels import KernelCall
    q = {"scale": 0.05, "zero_point": 3 if in_type is T.TENSOR_QUANT8_ASYMM_SIGNED else 131}
    x_od = Operand(in_type, (2, 3), **(q if in_type is not T.TENSOR_FLOAT32 else {}))
    out_od = Operand(out_type, (2, 3), **({"scale": 0.1, "zero_point": x_od.zero_point}
                                          if out_type is not T.TENSOR_FLOAT32 else {}))
    if op in (OperationType.LOGISTIC, OperationType.TANH) and out_type is not T.TENSOR_FLOAT32:
        # the prescribed outputs
        fixed = {OperationType.LOGISTIC: (1 / 256, 0 if out_type is T.TENSOR_QUANT8_ASYMM else -128),
                 OperationType.TANH: (1 / 128, 128 if out_type is T.TENSOR_QUANT8_ASYMM else 0)}[op]
        out_od = Operand(out_type, (2, 3), scale=fixed[0], zero_point=fixed[1])
    x = np.arange(256, dtype=np.uint8).view(x_od.dtype)
    if in_type is T.TENSOR_FLOAT32:
        x = np.linspace(-8, 8, 256, dtype=np.float32)
    inputs, ods = [x], [x_od]
    if op in (OperationType.ADD, OperationType.SUB, OperationType.MUL, OperationType.MAXIMUM,
              OperationType.MINIMUM):
        inputs.append(x[:1].copy())
        ods.append(x_od)
    if op in (OperationType.ADD, OperationType.SUB, OperationType.MUL):
        inputs.append(np.array(0, np.int32))
        ods.append(Operand(T.INT32))
    return KernelCall(operation=Operation(op, list(range(len(inputs))), [len(inputs)]), inputs=inputs,
                      in_operands=ods, out_operands=[out_od])


def test_every_byte_op_kernel_runs_on_the_256_bytes_whatever_its_declared_dimensions():
    # A chain of byte operations fills its table by calling their kernels on the 256 byte values as a 1-D
    # array (`fused_kernels.byte_function`), whatever the operands declare: a kernel that checked its input
    # against its declared dimensions would break the fused step. Declaring `byte_op` in an operation's spec
    # promises this.
    from nnconv.nnapi.enums import OperandType as T
    from nnconv.nnapi.operations import operations_where
    from nnconv.runtime.kernels import KERNELS
    byte_ops = operations_where(lambda spec: spec.byte_op)
    assert {OperationType.LOGISTIC, OperationType.MUL, OperationType.QUANTIZE} <= byte_ops
    for op in sorted(byte_ops):
        for t in (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED):
            in_type, out_type = {OperationType.DEQUANTIZE: (t, T.TENSOR_FLOAT32),
                                 OperationType.QUANTIZE: (T.TENSOR_FLOAT32, t)}.get(op, (t, t))
            if op in (OperationType.FLOOR, OperationType.EXP, OperationType.ABS, OperationType.NEG):
                in_type = out_type = T.TENSOR_FLOAT32  # float only (they sit between DEQUANTIZE and QUANTIZE)
            out = KERNELS[op](_byte_op_call(op, in_type, out_type))
            assert np.asarray(out[0]).size == 256, op.name
