"""The executor releases each intermediate after the last STEP that reads it. A fused step
(`nnconv.runtime.fusion`) reads its absorbed operations' inputs at its own, later place, so a value whose
last reader in the NNAPI graph is an absorbed operation, or an operation between the absorbed ones and the
step, must stay until the step. Released at its last graph reader instead, it was gone when the step read it:
`convert` exited 0 and `run` stopped with "QUANTIZE reads operand N (...), which has no value" on a
TensorFlow int8 `x - mean` (a SUB output feeding a DEQUANTIZE chain and an ABS) and on an AI Edge Quantizer
LayerNorm (its `moments/mean` feeding a DEQUANTIZE chain and the SUB of `x - mean`)."""

from __future__ import annotations

import numpy as np
import pytest

from harness import TfliteBuilder, assert_parity, nnconv_options, step_names
from nnconv.parity import random_inputs
from nnconv.runtime.executor import Executor
from nnconv.runtime.trace import Trace
from nnconv.tflite.builder import QuantParams
from nnconv.tflite.options import (AddOptions, Conv2DOptions, MulOptions, ReducerOptions, SubOptions)
from nnconv.tflite.schema_enums import BuiltinOperator as B
from nnconv.tflite.schema_enums import Padding

SHAPE = (1, 4, 6, 8)


def _mean(b: TfliteBuilder, x: int, q: QuantParams) -> int:
    m = b.tensor("moments/mean", (*SHAPE[:-1], 1), np.int8, quant=q)
    b.op(B.MEAN, [x, b.const("axes", np.array([3], np.int32))], [m], ReducerOptions(keep_dims=True))
    return m


def x_minus_mean_model() -> bytes:
    """TensorFlow's int8 `x - mean`: d = SUB(x, MEAN(x)); d -> DEQUANTIZE -> MUL(d, d) -> QUANTIZE (a float
    detour) and ABS(d) (int8, which the lowering also sends through float): two byte chains read d, both
    fused into table steps placed after d's last reader in the graph."""
    b = TfliteBuilder()
    q = QuantParams(0.05, -3)
    x = b.input("x", SHAPE, np.int8, quant=q)
    d = b.tensor("d", SHAPE, np.int8, quant=QuantParams(0.06, 2))
    b.op(B.SUB, [x, _mean(b, x, q)], [d], SubOptions())
    df = b.tensor("d_float", SHAPE, np.float32)
    b.op(B.DEQUANTIZE, [d], [df])
    a = b.tensor("abs", SHAPE, np.int8, quant=QuantParams(0.06, -128))
    b.op(B.ABS, [d], [a])
    sq = b.tensor("square", SHAPE, np.float32)
    b.op(B.MUL, [df, df], [sq], MulOptions())
    # MEAN's int8 result may differ from TFLite's by 1 LSB (so may d): the output scale keeps the square's
    # slope (2|d| * 0.06 <= 0.94 per LSB of d) below 1 LSB of its own per LSB of d
    out = b.tensor("square_q", SHAPE, np.int8, quant=QuantParams(1.0, -128))
    b.op(B.QUANTIZE, [sq], [out])
    b.output(out, a)
    return b.finish()


def layer_norm_mean_model() -> bytes:
    """AI Edge Quantizer's LayerNorm, around `moments/mean`: m = MEAN(x) int8 is read by a DEQUANTIZE whose
    float ops end in a QUANTIZE (one byte chain of m) and, after that DEQUANTIZE, by the int8 SUB of
    `x - mean`, its last reader in the graph; then y = ADD(x - mean, QUANTIZE(m*m + 0.5)). (MEAN's and
    SUB's int8 results may differ from TFLite's by 1 LSB: the scales keep each path's slope below 1 LSB of
    the next tensor per LSB, and y's scale takes the sum of the two within 1 LSB.)"""
    b = TfliteBuilder()
    q = QuantParams(0.05, -3)
    x = b.input("x", SHAPE, np.int8, quant=q)
    m = _mean(b, x, q)
    mf = b.tensor("mean_float", m_shape := (*SHAPE[:-1], 1), np.float32)
    b.op(B.DEQUANTIZE, [m], [mf])
    d = b.tensor("centered", SHAPE, np.int8, quant=QuantParams(0.06, 2))
    b.op(B.SUB, [x, m], [d], SubOptions())
    sq = b.tensor("mean_sq", m_shape, np.float32)
    b.op(B.MUL, [mf, mf], [sq], MulOptions())
    eps = b.tensor("mean_sq_eps", m_shape, np.float32)
    b.op(B.ADD, [sq, b.const("eps", np.array([0.5], np.float32))], [eps], AddOptions())
    e = b.tensor("mean_sq_eps_q", m_shape, np.int8, quant=QuantParams(0.7, -128))
    b.op(B.QUANTIZE, [eps], [e])
    y = b.tensor("y", SHAPE, np.int8, quant=QuantParams(0.8, 5))
    b.op(B.ADD, [d, e], [y], AddOptions())
    b.output(y)
    return b.finish()


def scaled_conv_with_other_reader_model() -> bytes:
    """Float: x = RELU(input); CONV_2D(MUL(x, LOGISTIC(gate))) runs as one step at the CONV_2D that reads x,
    and ABS(x), between the MUL and the CONV_2D, is x's last reader in the graph."""
    b = TfliteBuilder()
    shape = (1, 5, 7, 3)
    x = b.tensor("x", shape, np.float32)
    b.op(B.RELU, [b.input("input", shape, np.float32)], [x])
    g = b.tensor("gate", (1, 1, 1, 3), np.float32)
    b.op(B.LOGISTIC, [b.input("g", (1, 1, 1, 3), np.float32)], [g])
    h = b.tensor("scaled", shape, np.float32)
    b.op(B.MUL, [x, g], [h], MulOptions())
    a = b.tensor("abs", shape, np.float32)
    b.op(B.ABS, [x], [a])
    w = np.random.default_rng(5).standard_normal((4, 1, 1, 3)).astype(np.float32)
    y = b.tensor("y", (1, 5, 7, 4), np.float32)
    b.op(B.CONV_2D, [h, b.const("w", w), b.const("bias", np.zeros(4, np.float32))], [y],
         Conv2DOptions(padding=Padding.SAME, stride_w=1, stride_h=1))
    b.output(y, a)
    return b.finish()


@pytest.mark.parametrize("build,fused", [
    (x_minus_mean_model, {"DEQUANTIZE+ABS+QUANTIZE", "DEQUANTIZE+MUL+QUANTIZE"}),
    (layer_norm_mean_model, {"DEQUANTIZE+MUL+ADD+QUANTIZE"}),
    (scaled_conv_with_other_reader_model, {"GATE+MUL+CONV_2D"}),
], ids=["x-minus-mean", "layer-norm-mean", "scaled-conv"])
@pytest.mark.parametrize("seed", [0, 1])
def test_fused_step_reads_a_value_whose_last_graph_reader_comes_before_it(build, fused, seed):
    """Converted and run: TFLite's results (quantized within 1 LSB), with the fusions in place, and the
    fused run equal to the traced one (every operation apart) on two runs (the second on the buffer arena
    planned from the first): quantized bit for bit, float within the scaled filter's rounding (each product
    rounds once where the pair rounds twice, as in test_fusion.py)."""
    model = build()
    converted = assert_parity(model, api_level=30, seed=seed).converted
    feed = random_inputs(converted.inputs, seed)
    fused_ex = Executor(converted)
    assert fused <= set(step_names(fused_ex, feed))
    apart = Executor(converted, trace=Trace()).run(feed)
    for _ in range(2):
        got = fused_ex.run(feed)
        for name, want in apart.items():
            if want.dtype == np.float32:
                np.testing.assert_allclose(got[name], want, rtol=1e-5, atol=1e-5)
            else:
                np.testing.assert_array_equal(got[name], want)


def test_the_plan_is_checked_when_it_is_made(monkeypatch):
    """Every value a step reads must be held when it runs: with values released too early (here after
    their FIRST reading step, as the graph's last readers released them before), the plan of the first run
    is refused as nnconv's bug (exit 4), before any kernel runs, instead of a value missing mid-run."""
    import nnconv
    from nnconv.errors import EXIT_INTERNAL, InternalError
    from nnconv.runtime import executor as executor_module

    def first_reads(steps):
        first: dict[int, int] = {}
        for k, inputs in steps:
            for i in inputs:
                first.setdefault(i, k)
        return first

    converted = nnconv.convert(x_minus_mean_model(), api_level=30, options=nnconv_options()).converted
    feed = random_inputs(converted.inputs, 0)
    Executor(converted).run(feed)
    monkeypatch.setattr(executor_module, "last_reads", first_reads)
    ran = []
    ex = Executor(converted)
    ex.runner.profile = lambda index, name, seconds: ran.append(name)
    with pytest.raises(InternalError) as e:
        ex.run(feed)
    assert e.value.exit_code == EXIT_INTERNAL and not ran
    assert "has DEQUANTIZE+MUL+QUANTIZE (operation 7) read operand 4 (d), which no earlier step holds" in str(e.value)
