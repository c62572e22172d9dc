"""16x8 quantization (AI Edge Quantizer's `static_wi8_ai16`: int16 activations with zero point 0, int8 weights,
int64 biases). NNAPI has no int16 activation type, so every op on them is refused; each refusal names int16
and the scheme, and hints at what to do instead (INT16_HINT)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

import nnconv
from harness import QuantParams, TfliteBuilder, nnconv_options, single_op_model
from nnconv.cli import main
from nnconv.lowering.context import INT16_HINT
from nnconv.lowering.diagnostics import Code
from nnconv.parity.tflite_runner import TfliteRunner
from nnconv.tflite.options import (AddOptions, BatchMatMulOptions, ConcatenationOptions, Conv2DOptions,
                                   FullyConnectedOptions, GatherOptions, MulOptions, PadOptions, Pool2DOptions,
                                   ReducerOptions, ReshapeOptions, ResizeBilinearOptions, SoftmaxOptions, SubOptions,
                                   TransposeOptions)
from nnconv.tflite.schema_enums import BuiltinOperator as B, Padding

Q16 = QuantParams(3e-4, 0)  # 16x8: symmetric int16 activations


def model_16x8() -> bytes:
    """float -> QUANTIZE -> CONV_2D (per-channel int8 filter, int64 bias, RELU) -> ADD -> MAX_POOL_2D ->
    RESHAPE -> FULLY_CONNECTED -> TANH -> SOFTMAX -> DEQUANTIZE -> float, all activations int16."""
    rng = np.random.default_rng(16)
    b = TfliteBuilder()
    x = b.input("x", (1, 6, 5, 3), np.float32)
    xq = b.tensor("xq", (1, 6, 5, 3), np.int16, QuantParams(1e-4, 0))
    b.op(B.QUANTIZE, [x], [xq])
    ws = [float(s) for s in rng.uniform(0.005, 0.02, 4)]
    w = b.const("w", rng.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8), quant=QuantParams(ws, [0] * 4, 0))
    bias = b.const("bias", rng.integers(-1000, 1000, 4).astype(np.int64),
                   quant=QuantParams([1e-4 * s for s in ws], [0] * 4))
    c = b.tensor("conv", (1, 6, 5, 4), np.int16, QuantParams(2e-4, 0))
    b.op(B.CONV_2D, [xq, w, bias], [c], Conv2DOptions(padding=Padding.SAME, stride_w=1, stride_h=1,
                                                         fused_activation_function=1))
    a = b.tensor("add", (1, 6, 5, 4), np.int16, Q16)
    b.op(B.ADD, [c, c], [a], AddOptions())
    p = b.tensor("pool", (1, 3, 2, 4), np.int16, Q16)
    b.op(B.MAX_POOL_2D, [a], [p], Pool2DOptions(padding=Padding.VALID, stride_w=2, stride_h=2, filter_width=2,
                                               filter_height=2))
    r = b.tensor("flat", (1, 24), np.int16, Q16)
    b.op(B.RESHAPE, [p, b.const("shape", np.array([1, 24], np.int32))], [r], ReshapeOptions(new_shape=[1, 24]))
    fw = b.const("fc_w", rng.integers(-127, 128, (5, 24)).astype(np.int8), quant=QuantParams(0.01, 0))
    fb = b.const("fc_b", rng.integers(-1000, 1000, 5).astype(np.int64), quant=QuantParams(3e-6, 0))
    f = b.tensor("fc", (1, 5), np.int16, QuantParams(1e-3, 0))
    b.op(B.FULLY_CONNECTED, [r, fw, fb], [f], FullyConnectedOptions())
    t = b.tensor("tanh", (1, 5), np.int16, QuantParams(1 / 32768, 0))
    b.op(B.TANH, [f], [t])
    s = b.tensor("softmax", (1, 5), np.int16, QuantParams(1 / 32768, 0))
    b.op(B.SOFTMAX, [t], [s], SoftmaxOptions(beta=1.0))
    y = b.tensor("y", (1, 5), np.float32)
    b.op(B.DEQUANTIZE, [s], [y])
    b.output(y)
    return b.finish()


def assert_refused_as_int16(model: bytes, level: int) -> list:
    report = nnconv.check_model(model, api_level=level, options=nnconv_options())
    for op in report.ops:
        assert not op.supported, f"{op.op} accepted"
        assert op.min_api_level is None, f"{op.op}: no level takes int16, yet {op.min_api_level} would"
        codes = {d.code for d in op.diagnostics}
        assert codes == {Code.DTYPE}, f"{op.op}: {[d.one_line() for d in op.diagnostics]}"
        assert all("int16 (16x8 quantization)" in d.message for d in op.diagnostics), op.reason
        assert op.hint == INT16_HINT
    return report.ops


def test_16x8_model_every_op_refused_naming_int16():
    model = model_16x8()
    runner = TfliteRunner(model)  # a model TFLite runs
    out = runner.run({runner.input_details()[0]["index"]: np.random.default_rng(0).standard_normal((1, 6, 5, 3))
                      .astype(np.float32)})
    assert all(np.isfinite(v).all() for v in out.values())
    for level in (27, 29, 30, 31):
        ops = assert_refused_as_int16(model, level)
        assert [o.op for o in ops] == ["QUANTIZE", "CONV_2D", "ADD", "MAX_POOL_2D", "RESHAPE", "FULLY_CONNECTED",
                                       "TANH", "SOFTMAX", "DEQUANTIZE"]
    assert "static_wi8_ai8" in INT16_HINT and "dynamic-range" in INT16_HINT


def test_16x8_model_on_the_command_line(tmp_path):
    path = tmp_path / "m16x8.tflite"
    path.write_bytes(model_16x8())
    check = CliRunner().invoke(main, ["check", str(path), "--target", "nnconv", "--fail-on", "refused",
                                      "--format", "json"])
    assert check.exit_code == 1
    ops = json.loads(check.stdout)["ops"]
    assert all(o["diagnostics"][0]["code"] == "NNC020" and "int16 (16x8 quantization)" in o["reason"]
               and "static_wi8_ai8" in o["hint"] for o in ops)
    convert = CliRunner().invoke(main, ["convert", str(path), "--target", "nnconv", "-o", str(tmp_path / "m.nnapi")])
    assert convert.exit_code == 3 and "NNC020" in convert.stderr and "int16 (16x8 quantization)" in convert.stderr


SHAPE = (2, 3, 4, 5)
X16 = ("x", SHAPE, np.int16, Q16)
SINGLE_OPS = {  # name: (op, inputs, output shape, options), the main 16x8 ops left out of model_16x8
    "MUL": (B.MUL, [X16, X16], SHAPE, MulOptions()),
    "SUB": (B.SUB, [X16, X16], SHAPE, SubOptions()),
    "LOGISTIC": (B.LOGISTIC, [X16], SHAPE, None),
    "HARD_SWISH": (B.HARD_SWISH, [X16], SHAPE, None),
    "CONCATENATION": (B.CONCATENATION, [X16, X16], (2, 3, 4, 10), ConcatenationOptions(axis=3)),
    "AVERAGE_POOL_2D": (B.AVERAGE_POOL_2D, [X16], SHAPE, Pool2DOptions(padding=Padding.VALID, stride_w=1,
                                                                       stride_h=1, filter_width=1, filter_height=1)),
    "MEAN": (B.MEAN, [X16, ("axes", np.array([1, 2], np.int32))], (2, 1, 1, 5), ReducerOptions(keep_dims=True)),
    "PAD": (B.PAD, [X16, ("pads", np.array([[0, 0], [1, 1], [0, 0], [0, 0]], np.int32))], (2, 5, 4, 5),
            PadOptions()),
    "TRANSPOSE": (B.TRANSPOSE, [X16, ("perm", np.array([0, 2, 1, 3], np.int32))], (2, 4, 3, 5),
                  TransposeOptions()),
    "GATHER": (B.GATHER, [X16, ("indices", np.array([0, 2], np.int32))], (2, 3, 4, 2), GatherOptions(axis=3)),
    "RESIZE_BILINEAR": (B.RESIZE_BILINEAR, [X16, ("size", np.array([6, 8], np.int32))], (2, 6, 8, 5),
                        ResizeBilinearOptions()),
    "BATCH_MATMUL": (B.BATCH_MATMUL, [("a", (2, 3, 4), np.int16, Q16), ("b", (2, 4, 5), np.int16, Q16)],
                     (2, 3, 5), BatchMatMulOptions()),
}


@pytest.mark.parametrize("name", list(SINGLE_OPS))
def test_single_int16_ops_refused_naming_int16(name):
    op, inputs, out_shape, options = SINGLE_OPS[name]
    model = single_op_model(op, inputs, [("y", out_shape, np.int16, Q16)], options)
    assert_refused_as_int16(model, 30)
