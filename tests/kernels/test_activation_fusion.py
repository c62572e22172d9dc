"""The executor's activation epilogues (`nnconv.runtime.fusion`): a float32 RELU / RELU1 / RELU6 / PRELU
whose input is the output of an ADD, CONV_2D or DEPTHWISE_CONV_2D read by it alone runs in place on that
output in one step. Parity with TFLite, and the same bits as the two operations run apart (a trace keeps
them apart) on inputs with NaN, +-inf and +-0.0; a second reader, a model output, a trace, relaxed float16
or a kernel override keep them apart."""

from __future__ import annotations

import numpy as np
import pytest

import nnconv
from harness import TfliteBuilder, assert_parity, assert_same_bits, step_names
from nnconv.nnapi.builder import ModelBuilder
from nnconv.nnapi.enums import FuseCode, OperandType, OperationType
from nnconv.nnapi.model import Operand, Operation
from nnconv.runtime.executor import Executor
from nnconv.runtime.trace import Trace
from nnconv.runtime.fused_kernels import clamp_epilogue, with_epilogue
from nnconv.runtime.kernels import KernelCall
from nnconv.runtime.kernels.relu import relu
from nnconv.tflite.options import AddOptions, Conv2DOptions, DepthwiseConv2DOptions
from nnconv.tflite.schema_enums import BuiltinOperator as B
from nnconv.tflite.schema_enums import Padding

SHAPE = (1, 13, 11, 6)
F32 = OperandType.TENSOR_FLOAT32
ACTS = {"RELU": B.RELU, "RELU1": B.RELU_N1_TO_1, "RELU6": B.RELU6, "PRELU": B.PRELU}


def producer_act_model(producer: str, act: str, producer_act: int = 0, second_reader: bool = False,
                       intermediate_is_output: bool = False) -> bytes:
    """x [1, 13, 11, 6] (and w for ADD) -> producer (ADD(x, w), CONV_2D 3x3 SAME 6->6, DEPTHWISE 3x3 SAME)
    -> h -> act (PRELU with a constant per-channel alpha) -> y; optionally h also read by an ADD or also a
    model output."""
    rng = np.random.default_rng(8)
    b = TfliteBuilder()
    x = b.input("x", SHAPE, np.float32)
    h = b.tensor("h", SHAPE, np.float32)
    if producer == "ADD":
        w = b.input("w", SHAPE, np.float32)
        b.op(B.ADD, [x, w], [h], AddOptions(fused_activation_function=producer_act))
    elif producer == "CONV_2D":
        f = b.const("f", rng.standard_normal((6, 3, 3, 6)).astype(np.float32))
        bias = b.const("bias", rng.standard_normal(6).astype(np.float32))
        b.op(B.CONV_2D, [x, f, bias], [h], Conv2DOptions(padding=Padding.SAME, stride_w=1, stride_h=1,
                                                          fused_activation_function=producer_act))
    else:
        f = b.const("f", rng.standard_normal((1, 3, 3, 6)).astype(np.float32))
        bias = b.const("bias", rng.standard_normal(6).astype(np.float32))
        b.op(B.DEPTHWISE_CONV_2D, [x, f, bias], [h],
             DepthwiseConv2DOptions(padding=Padding.SAME, stride_w=1, stride_h=1, depth_multiplier=1,
                                    fused_activation_function=producer_act))
    y = b.tensor("y", SHAPE, np.float32)
    if act == "PRELU":
        alpha = b.const("alpha", rng.uniform(-1.0, 1.0, (1, 1, 6)).astype(np.float32))
        b.op(B.PRELU, [h, alpha], [y])
    else:
        b.op(ACTS[act], [h], [y])
    outputs = [y]
    if second_reader:
        t = b.tensor("t", SHAPE, np.float32)
        b.op(B.ADD, [h, y], [t], AddOptions(fused_activation_function=0))
        outputs = [t]
    if intermediate_is_output:
        outputs.append(h)
    b.output(*outputs)
    return b.finish()


def edge_feed(converted, seed: int = 0) -> dict:
    """Wide values with NaN, +-inf and +-0.0 in x: what the producers make of them reaches the activation."""
    rng = np.random.default_rng(seed)
    feed = {s.name: (rng.standard_normal(s.shape) * 4).astype(np.float32) for s in converted.inputs}
    feed["x"].reshape(-1)[[3, 40, 41, 200, 311, 500]] = [np.nan, np.inf, -np.inf, -0.0, 0.0, -0.0]
    if "w" in feed:
        feed["w"].reshape(-1)[[200, 311, 600, 601]] = [-0.0, -0.0, np.inf, np.inf]  # -0+-0, inf-inf
        feed["x"].reshape(-1)[601] = -np.inf
    return feed


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # NaN through the producers
@pytest.mark.parametrize("act", list(ACTS))
@pytest.mark.parametrize("producer,producer_act", [("ADD", 0), ("CONV_2D", 0), ("DEPTHWISE_CONV_2D", 0),
                                                   ("ADD", 3), ("CONV_2D", 2)],
                         ids=["add", "conv", "depthwise", "add-relu6", "conv-relu1"])
def test_activation_runs_in_its_producers_step(producer, producer_act, act):
    model = producer_act_model(producer, act, producer_act)
    expected = {"RELU1": "RELU1"}.get(act, act)
    converted = assert_parity(model, api_level=30, expect_ops=[producer, expected]).converted
    feed = edge_feed(converted)
    assert step_names(Executor(converted), feed) == [f"{producer}+{expected}"]
    fused = Executor(converted).run(feed)["y"]
    trace = Trace(keep=True)
    apart = Executor(converted, trace=trace).run(feed)["y"]  # a trace turns fusion off
    h = trace.values[converted.model.main.operations[0].outputs[0]]
    assert np.isnan(h).any()  # the edges reach the activation
    assert_same_bits(fused, apart)
    again = Executor(converted)
    for _ in range(2):  # pooled buffers and memos from run to run
        assert_same_bits(again.run(feed)["y"], apart)


@pytest.mark.parametrize("variant", ["second_reader", "intermediate_is_output"])
@pytest.mark.parametrize("act", ["RELU", "PRELU"])
def test_not_fused_when_the_producers_output_is_seen(variant, act):
    converted = assert_parity(producer_act_model("ADD", act, **{variant: True}), api_level=30).converted
    feed = edge_feed(converted)
    names = step_names(Executor(converted), feed)
    assert f"ADD+{act}" not in names and act in names
    fused, apart = Executor(converted).run(feed), Executor(converted, trace=Trace()).run(feed)
    for name in fused:
        assert_same_bits(fused[name], apart[name])


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_trace_relaxed_and_overrides_keep_the_operations_apart():
    converted = nnconv.convert(producer_act_model("CONV_2D", "RELU6"), api_level=30).converted
    feed = edge_feed(converted)
    assert step_names(Executor(converted, trace=Trace()), feed) == ["CONV_2D", "RELU6"]
    assert step_names(Executor(converted, relaxed_fp16=True), feed) == ["CONV_2D", "RELU6"]
    overridden = Executor(converted, kernel_overrides={OperationType.RELU6: relu})
    assert step_names(overridden, feed) == ["CONV_2D", "RELU6"]
    assert overridden.run(feed)["y"].max() > 6  # the override ran as itself


def test_epilogue_never_writes_into_what_the_producer_handed_back_from_its_inputs():
    """A producer returning one of its inputs (or a read-only array) gets the activation on a copy."""
    f32 = Operand(type=OperandType.TENSOR_FLOAT32, dimensions=(4, 5))
    producer_op = Operation(OperationType.ADD, [0, 1, 2], [3])
    step = with_epilogue(lambda call: [call.inputs[0]], producer_op, [f32], clamp_epilogue(FuseCode.RELU))
    x = np.linspace(-3, 3, 20, dtype=np.float32).reshape(4, 5)
    kept = x.copy()
    call = KernelCall(Operation(OperationType.RELU, [3], [4]), [x, x, np.asarray(0, np.int32)],
                      [f32, f32, Operand(type=OperandType.INT32)], [f32], cache={})
    y = step(call)[0]
    np.testing.assert_array_equal(x, kept)
    np.testing.assert_array_equal(y, np.maximum(kept, 0))
    ro = kept.copy()
    ro.flags.writeable = False
    step_ro = with_epilogue(lambda call: [ro], producer_op, [f32], clamp_epilogue(FuseCode.RELU6))
    np.testing.assert_array_equal(step_ro(call)[0], np.clip(kept, 0, 6))


def test_a_filter_folded_into_a_constant_stays_one_to_the_fused_producer():
    """CONV_2D(x, CAST(float16 filter)) then RELU (MediaPipe's pose and full-range face detectors): the
    runner folds the CAST, and the fused step's convolution sees the folded filter as a constant, so its
    memo keeps the converted filter from run to run."""
    rng = np.random.default_rng(9)
    w16 = rng.standard_normal((8, 3, 3, 6)).astype(np.float16)
    mb = ModelBuilder()
    g = mb.main
    x = g.add_tensor(F32, (1, 9, 10, 6), name="x")
    w = g.add_tensor(F32, w16.shape, name="w")
    g.add_operation(OperationType.CAST, [g.add_constant(OperandType.TENSOR_FLOAT16, w16, name="w16")], [w])
    h = g.add_tensor(F32, (1, 9, 10, 8), name="h")
    bias = g.add_constant(F32, rng.standard_normal(8).astype(np.float32), name="bias")
    g.add_operation(OperationType.CONV_2D, [x, w, bias, *(g.add_scalar(v) for v in (1, 1, 1, int(FuseCode.NONE)))],
                    [h])
    y = g.add_tensor(F32, (1, 9, 10, 8), name="y")
    g.add_operation(OperationType.RELU, [h], [y])
    g.set_io([x], [y])
    model = mb.finish()
    feed = [rng.standard_normal((1, 9, 10, 6)).astype(np.float32)]
    ex = Executor(model)
    assert step_names(ex, feed) == ["CONV_2D+RELU"]
    inner = ex.runner._op_caches[(0, 2)]["producer_call"]
    assert inner.is_constant(1) and inner.cache  # the folded filter, and what the kernel derived from it
    assert_same_bits(ex.run(feed)["out_0"], Executor(model, trace=Trace()).run(feed)["out_0"])
