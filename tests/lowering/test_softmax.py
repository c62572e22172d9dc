"""SOFTMAX / LOG_SOFTMAX lowering: parity with TFLite and refusals."""

from __future__ import annotations

import numpy as np
import pytest

from harness import QuantParams, assert_parity, assert_refused, single_op_model
from nnconv.lowering.diagnostics import Code
from nnconv.parity.tflite_runner import BUILTIN_KERNELS, REFERENCE_KERNELS
from nnconv.tflite.options import LogSoftmaxOptions, SoftmaxOptions
from nnconv.tflite.schema_enums import BuiltinOperator

OUT_Q = {np.uint8: QuantParams(1 / 256, 0), np.int8: QuantParams(1 / 256, -128)}


def softmax_model(dtype, shape, beta=1.0, in_q=None, out_q=None):
    ins = [("x", shape, dtype) + ((in_q,) if in_q else ())]
    outs = [("y", shape, dtype) + ((out_q,) if out_q else ())]
    return single_op_model(BuiltinOperator.SOFTMAX, ins, outs, SoftmaxOptions(beta=beta))


@pytest.mark.parametrize("api,shape", [(27, (3, 7)), (27, (2, 3, 4, 5)), (29, (9,)), (29, (2, 5, 6)),
                                       (30, (4, 11))])
@pytest.mark.parametrize("beta", [1.0, 0.3, 2.5])
def test_softmax_float_parity(api, shape, beta):
    assert_parity(softmax_model(np.float32, shape, beta), api_level=api, expect_ops=["SOFTMAX"])


@pytest.mark.parametrize("dtype,api", [(np.uint8, 27), (np.uint8, 30), (np.int8, 27), (np.int8, 29), (np.int8, 30)])
@pytest.mark.parametrize("beta,in_scale", [(1.0, 0.1), (0.5, 0.05), (2.0, 0.02)])
def test_softmax_quantized_parity(dtype, api, beta, in_scale):
    in_q = QuantParams(in_scale, 128 if dtype == np.uint8 else 3)
    m = softmax_model(dtype, (3, 2, 17), beta, in_q, OUT_Q[dtype]) if api >= 29 else \
        softmax_model(dtype, (6, 17), beta, in_q, OUT_Q[dtype])
    assert_parity(m, api_level=api, expect_ops=["SOFTMAX"])


@pytest.mark.parametrize("shape", [(9,), (2, 5, 6)])
def test_softmax_other_ranks_reshaped_below_29(shape):
    assert_parity(softmax_model(np.float32, shape), api_level=27, expect_ops=["RESHAPE", "SOFTMAX", "RESHAPE"])
    q = QuantParams(0.1, 128)
    assert_parity(softmax_model(np.uint8, shape, 1.0, q, OUT_Q[np.uint8]), api_level=28,
                  expect_ops=["RESHAPE", "SOFTMAX", "RESHAPE"])


def test_softmax_refusals():
    q = QuantParams(0.1, 128)
    assert_refused(softmax_model(np.uint8, (2, 6), 1.0, q, QuantParams(1 / 128, 0)), 30, Code.QUANTIZATION)
    assert_refused(softmax_model(np.int32, (2, 6)), 30, Code.DTYPE)
    assert_refused(softmax_model(np.float32, (2, 6), beta=0.0), 30, Code.OPTION)


def log_softmax_model(shape, dtype=np.float32):
    return single_op_model(BuiltinOperator.LOG_SOFTMAX, [("x", shape, dtype)], [("y", shape, dtype)],
                           LogSoftmaxOptions())


@pytest.mark.parametrize("shape", [(3, 7), (2, 3, 5), (2, 3, 4, 6), (10,)])
def test_log_softmax_parity(shape):
    assert_parity(log_softmax_model(shape), api_level=29, expect_ops=["LOG_SOFTMAX"])


LOG_SOFTMAX_OUT_Q = {np.int8: QuantParams(16 / 256, 127), np.uint8: QuantParams(16 / 256, 255)}


def quantized_log_softmax_model(dtype, shape, in_q, out_q=None):
    return single_op_model(BuiltinOperator.LOG_SOFTMAX, [("x", shape, dtype, in_q)],
                           [("y", shape, dtype, out_q or LOG_SOFTMAX_OUT_Q[dtype])], LogSoftmaxOptions())


@pytest.mark.parametrize("dtype,api", [(np.int8, 29), (np.int8, 30), (np.uint8, 29), (np.uint8, 30)])
@pytest.mark.parametrize("in_scale,zp_offset", [(0.004, 0), (0.05, 20), (0.2, -40), (1.5, 7)])
@pytest.mark.parametrize("kernels", [BUILTIN_KERNELS, REFERENCE_KERNELS])
def test_log_softmax_quantized_through_float(dtype, api, in_scale, zp_offset, kernels):
    """TensorFlow's int8 LOG_SOFTMAX (output 16/256, zero point 127): DEQUANTIZE -> LOG_SOFTMAX -> QUANTIZE.
    Measured against both of TFLite's kernel sets over input scales 0.002..2, zero points and shapes,
    8 seeds each: 0 LSB apart; the policy allows 1."""
    zp = (0 if dtype == np.int8 else 128) + zp_offset
    m = quantized_log_softmax_model(dtype, (3, 2, 17), QuantParams(in_scale, zp))
    for seed in range(3):
        assert_parity(m, api_level=api, seed=seed, expect_ops=["DEQUANTIZE", "LOG_SOFTMAX", "QUANTIZE"],
                      kernels=kernels)


def test_log_softmax_refusals():
    assert_refused(log_softmax_model((3, 7)), 28, Code.API_LEVEL, min_api_level=29)
    assert_refused(log_softmax_model((3, 7), np.int32), 30, Code.DTYPE)
    q = QuantParams(0.1, 0)
    assert_refused(quantized_log_softmax_model(np.int8, (3, 7), q, QuantParams(1 / 256, -128)), 30,
                   Code.QUANTIZATION)
    assert_refused(quantized_log_softmax_model(np.int8, (3, 7), q), 28, Code.API_LEVEL, min_api_level=29)


# -- what the NNAPI runtime refuses at prepare time is known at check time ---------------------------------------
@pytest.mark.parametrize("dtype,api", [(np.uint8, 27), (np.int8, 29), (np.int8, 30), (np.int8, 33)])
def test_softmax_tiny_input_scale_is_known_at_check_time(dtype, api, tmp_path):
    """A TensorFlow-converted int8 classifier whose SOFTMAX input scale is tiny: beta * scale * 2^26 = 0.526,
    which the reference CPU's prepare refuses (QuantizeMultiplierGreaterThanOne) while TFLite computes it.
    From API 29 the rule takes the exact alternative, DEQUANTIZE -> float SOFTMAX -> QUANTIZE, and says so;
    below, `check` refuses it with the reason and lowest level 29 and `convert` exits 3 instead of writing a
    model that `run` then refuses (tests/lowering/test_prepare_limits.py covers LOGISTIC and TANH)."""
    import json

    from click.testing import CliRunner

    from nnconv.cli import main
    tiny = softmax_model(dtype, (1, 10), 1.0, QuantParams(7.84e-9, 0), OUT_Q[dtype])
    path = tmp_path / "tiny_softmax.tflite"
    path.write_bytes(tiny)
    result = CliRunner().invoke(main, ["convert", str(path), "--target", "nnconv", "-o", str(tmp_path / "m.nnapi"),
                                       "--api-level", str(api)])
    check = CliRunner().invoke(main, ["check", str(path), "--target", "nnconv", "--api-level", str(api),
                                      "--format", "json"])
    op = json.loads(check.output)["ops"][0]
    if api < 29:
        assert result.exit_code == 3, result.output
        assert not (tmp_path / "m.nnapi").exists()
        assert op["status"] == "refused_level" and op["min_api_level"] == 29
        assert "through float" in op["reason"]
        return
    assert result.exit_code == 0, result.output
    assert op["status"] == "lowered" and any("through float" in n for n in op["notes"])
    assert_parity(tiny, api_level=api, expect_ops=["DEQUANTIZE", "SOFTMAX", "QUANTIZE"])
