"""Quantized ops TFLite's CPU kernels refuse when preparing them and NNAPI takes (warning NNW101):

- a RELU6 / RELU_N1_TO_1 bound that overflows int32 at the output scale (AI Edge Quantizer's static-int8
  MobileNetV2: a DEPTHWISE_CONV_2D calibrated on zeros; "no_integer_overflow_from_quantization"): check
  lowers it with the warning, run clamps to the type's range, and verify says in one line that TFLite
  refuses the model;
- a per-tensor op whose bias scale is not input_scale * filter_scale within 0.02 of the output scale
  ("scale_diff / output_scale <= 0.02"): nnconv gives the bias the product's scale, as NNAPI requires.

Each warning is checked against TFLite itself, on both sides of its threshold."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

import nnconv
from harness import QuantParams, nnconv_options, single_op_model
from nnconv.cli import main
from nnconv.errors import NnconvError
from nnconv.lowering.diagnostics import Code, Verdict
from nnconv.parity.tflite_runner import TfliteRunner
from nnconv.runtime.executor import Executor
from nnconv.tflite.options import (Conv2DOptions, DepthwiseConv2DOptions, FullyConnectedOptions,
                                   TransposeConvOptions)
from nnconv.tflite.schema_enums import ActivationFunctionType as Act, BuiltinOperator as B, Padding

TINY = 1e-9  # 6 / 1e-9 = 6e9 > 2^31


def depthwise(act: int, out_scale: float = TINY) -> bytes:
    """Per-channel int8 DEPTHWISE_CONV_2D, bias scale input * filter scale, output zero point -128 (a RELU6
    output as the quantizer calibrates it). The input scale is tiny too, as after a layer calibrated on
    zeros, so that the requantization multiplier stays below 1 (TFLite's kernels wrap int32 above it)."""
    rng = np.random.default_rng(9)
    scales = list(rng.uniform(0.01, 0.04, 4))
    in_scale = 1e-9
    ins = [("x", (1, 5, 6, 4), np.int8, QuantParams(in_scale, 3)),
           ("w", rng.integers(-127, 128, (1, 3, 3, 4)).astype(np.int8), QuantParams(scales, [0] * 4, 3)),
           ("b", rng.integers(-500, 500, 4).astype(np.int32),
            QuantParams([float(np.float32(in_scale) * np.float32(s)) for s in scales], [0] * 4))]
    opts = DepthwiseConv2DOptions(padding=Padding.SAME, stride_w=1, stride_h=1, depth_multiplier=1,
                                  fused_activation_function=act)
    return single_op_model(B.DEPTHWISE_CONV_2D, ins, [("y", (1, 5, 6, 4), np.int8, QuantParams(out_scale, -128))],
                           opts)


def tflite_refuses(model: bytes, check: str = "no_integer_overflow_from_quantization") -> bool:
    try:
        TfliteRunner(model)
    except NnconvError as e:
        assert check in str(e)
        return True
    return False


def warnings(model: bytes, level: int = 30) -> list:
    report = nnconv.check_model(model, api_level=level, options=nnconv_options())
    return [d for d in report.diagnostics if d.code is Code.TFLITE_REFUSES]


def test_depthwise_relu6_is_lowered_with_a_warning_and_runs():
    model = depthwise(Act.RELU6)
    assert tflite_refuses(model)
    report = nnconv.check_model(model, api_level=30, options=nnconv_options())
    (op,) = report.ops
    assert op.status is Verdict.DRIVER_WARNING and op.supported
    (d,) = op.diagnostics
    assert d.code is Code.TFLITE_REFUSES and not d.is_error
    assert "RELU6" in d.message and "no_integer_overflow_from_quantization" in d.message and "verify" in d.hint
    # NNAPI clamps RELU6 to [zero point, type max] = [-128, 127]: 6 / 1e-9 lies far beyond 127. TFLite runs
    # the same op without the fused activation, which it accepts: that is what NNAPI computes.
    x = np.random.default_rng(1).integers(-128, 128, (1, 5, 6, 4)).astype(np.int8)
    ours = Executor(nnconv.convert(model, api_level=30, options=nnconv_options()).converted).run({"x": x})["y"]
    plain = depthwise(Act.NONE)
    runner = TfliteRunner(plain)
    theirs = runner.run({runner.input_details()[0]["index"]: x})
    theirs = next(iter(theirs.values())) if isinstance(theirs, dict) else theirs[0]
    assert np.array_equal(ours, theirs)
    assert np.count_nonzero(ours == 127) and np.count_nonzero(ours == -128)  # both ends reached


@pytest.mark.parametrize("act,scale,refused", [(Act.RELU6, 2.79e-9, True), (Act.RELU6, 2.80e-9, False),
                                               (Act.RELU_N1_TO_1, 4.6e-10, True), (Act.RELU_N1_TO_1, 4.7e-10, False),
                                               (Act.RELU, 1e-20, False), (Act.NONE, 1e-20, False)])
def test_warning_exactly_where_tflite_refuses(act, scale, refused):
    # the thresholds: 6 / 2^31 = 2.794e-9 and 1 / 2^31 = 4.66e-10; RELU quantizes only 0 and never overflows
    model = depthwise(act, scale)
    assert tflite_refuses(model) is refused
    assert bool(warnings(model)) is refused


@pytest.mark.parametrize("target", ["nnconv", "delegate"])
def test_verify_says_in_one_line_that_tflite_refuses(tmp_path, target):
    """nnconv's own model runs, and TFLite's interpreter rejects the file; the delegate target knows before
    converting that TFLite prepares the node on its CPU kernels first and cannot (cpu_prepare_failed)."""
    path = tmp_path / "dw.tflite"
    path.write_bytes(depthwise(Act.RELU6))
    result = CliRunner().invoke(main, ["verify", str(path), "--target", target])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output
    if target == "nnconv":
        assert lines[0].startswith("nnconv: error: the TFLite interpreter rejected the model: ")
        assert "no_integer_overflow_from_quantization was not true. Node number 0 (DEPTHWISE_CONV_2D)" in lines[0]
    else:
        assert lines[0].startswith("nnconv: error: TFLite cannot prepare this model: fused RELU6 on output 'y'")
        assert "no_integer_overflow_from_quantization" in lines[0]
        assert lines[0].endswith("Node number 0 (DEPTHWISE_CONV_2D) failed to prepare.")


def per_tensor_op(op: str, dtype, bias_factor: float | None) -> bytes:
    """A per-tensor quantized `op` (output scale 0.002) whose bias scale is `bias_factor` x input_scale *
    filter_scale (None: a bias without quantization parameters, which TFLite reads as scale 0)."""
    rng = np.random.default_rng(12)
    zp, lo = (128, 0) if dtype == np.uint8 else (0, -127)
    w_scale = 0.02
    bias_q = QuantParams(0.05 * w_scale * bias_factor, 0) if bias_factor is not None else None
    bias = ("b", rng.integers(-100, 100, 3).astype(np.int32)) + ((bias_q,) if bias_q else ())
    x = ("x", (1, 4, 5, 3), dtype, QuantParams(0.05, zp))
    y_q = QuantParams(0.002, zp)

    def w(shape):
        return ("w", rng.integers(lo, 128, shape).astype(dtype), QuantParams(w_scale, zp))
    same = dict(padding=Padding.SAME, stride_w=1, stride_h=1)
    if op == "FULLY_CONNECTED":
        return single_op_model(B.FULLY_CONNECTED, [("x", (2, 6), dtype, QuantParams(0.05, zp)), w((3, 6)), bias],
                               [("y", (2, 3), dtype, y_q)], FullyConnectedOptions())
    if op == "CONV_2D":
        return single_op_model(B.CONV_2D, [x, w((3, 3, 3, 3)), bias], [("y", (1, 4, 5, 3), dtype, y_q)],
                               Conv2DOptions(**same))
    if op == "DEPTHWISE_CONV_2D":
        return single_op_model(B.DEPTHWISE_CONV_2D, [x, w((1, 3, 3, 3)), bias], [("y", (1, 4, 5, 3), dtype, y_q)],
                               DepthwiseConv2DOptions(depth_multiplier=1, **same))
    return single_op_model(B.TRANSPOSE_CONV, [("shape", np.array([1, 8, 10, 3], np.int32)), w((3, 3, 3, 3)), x, bias],
                           [("y", (1, 8, 10, 3), dtype, y_q)], TransposeConvOptions(padding=Padding.SAME, stride_w=2,
                                                                                     stride_h=2))


@pytest.mark.parametrize("op", ["FULLY_CONNECTED", "CONV_2D", "DEPTHWISE_CONV_2D", "TRANSPOSE_CONV"])
@pytest.mark.parametrize("dtype", [np.uint8, np.int8], ids=["uint8", "int8"])
@pytest.mark.parametrize("bias_factor", [1.0, 1.5, None], ids=["product", "x1.5", "unquantized"])
def test_bias_scale_warning_exactly_where_tflite_refuses(op, dtype, bias_factor):
    # TFLite checks uint8 convolutions and every per-tensor FULLY_CONNECTED; 1.5x the product is off by
    # 0.05 * 0.02 * 0.5 / 0.002 = 0.25 of the output scale, over its 0.02
    model = per_tensor_op(op, dtype, bias_factor)
    refused = tflite_refuses(model, "scale_diff / output_scale <= 0.02")
    assert refused is (bias_factor != 1.0 and (dtype == np.uint8 or op == "FULLY_CONNECTED"))
    found = warnings(model)
    assert bool(found) is refused
    if refused:
        assert "input_scale * filter_scale" in found[0].message and "bias" in found[0].hint
        assert nnconv.check_model(model, api_level=30, options=nnconv_options()).ops[0].supported
