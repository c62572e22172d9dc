"""The executor's swish fusion (`nnconv.runtime.fusion`): a float32 MUL(x, LOGISTIC(x)) runs as one step,
within the float tolerance of TFLite and within an ulp or so of the unfused pair, and only when nothing can
see the LOGISTIC's output: a trace (per-op parity), relaxed float16, a kernel override, a second reader or a
model output keep the two operations apart."""

from __future__ import annotations

import numpy as np
import pytest

import nnconv
from harness import TfliteBuilder, assert_parity
from nnconv.nnapi.enums import OperationType
from nnconv.runtime.executor import Executor, Trace
from nnconv.runtime.kernels.logistic import logistic
from nnconv.tflite.options import AddOptions, MulOptions
from nnconv.tflite.schema_enums import BuiltinOperator as B


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


def step_names(executor: Executor, feed: dict) -> list[str]:
    """The names the executor's profile hook reports for one run (the fused step is LOGISTIC+MUL)."""
    names: list[str] = []
    executor.runner.profile = lambda index, name, seconds: names.append(name)
    executor.run(feed)
    executor.runner.profile = None
    return names


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
