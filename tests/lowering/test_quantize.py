"""QUANTIZE / DEQUANTIZE lowering: float <-> uint8 / int8 at API 27..30, requantization, constant folding of
DEQUANTIZE (float16 and integer weights), and refusals."""

from __future__ import annotations

import numpy as np
import pytest

from harness import QuantParams, TfliteBuilder, assert_parity, assert_refused, single_op_model
from nnconv.lowering.diagnostics import Code
from nnconv.tflite.options import AddOptions
from nnconv.tflite.schema_enums import BuiltinOperator as B

SHAPE = (2, 5, 7, 3)
Q = {np.uint8: QuantParams(0.02, 128), np.int8: QuantParams(0.02, -5)}


def quantize_model(src, dst, q_in=None, q_out=None):
    q_in = q_in if q_in is not None else Q.get(src)
    q_out = q_out if q_out is not None else Q[dst]
    return single_op_model(B.QUANTIZE, [("x", SHAPE, src, q_in)], [("y", SHAPE, dst, q_out)])


def wide(feed):
    return {k: (v * np.float32(3)).astype(v.dtype) if v.dtype == np.float32 else v for k, v in feed.items()}


@pytest.mark.parametrize("dst", [np.uint8, np.int8], ids=["u8", "i8"])
def test_quantize_float(dst):
    m = quantize_model(np.float32, dst)
    assert_parity(m, api_level=29, input_fn=wide, expect_ops=["QUANTIZE"])
    assert_parity(m, api_level=30, input_fn=wide, expect_ops=["QUANTIZE"])
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)


@pytest.mark.parametrize("src, dst", [(np.uint8, np.uint8), (np.int8, np.int8), (np.uint8, np.int8),
                                      (np.int8, np.uint8)], ids=["u8-u8", "i8-i8", "u8-i8", "i8-u8"])
def test_requantize(src, dst):
    q_out = QuantParams(0.03, 100 if dst is np.uint8 else 20)
    m = quantize_model(src, dst, q_out=q_out)
    assert_parity(m, api_level=27, expect_ops=["ADD"])  # int8 carried as uint8 + 128: one operand type
    mixed = src is not dst
    assert_parity(m, api_level=30, expect_ops=["DEQUANTIZE", "QUANTIZE"] if mixed else ["ADD"])


def test_requantize_zero_point_shift_is_exact():
    # uint8 (s, zp) -> int8 (s, zp - 128): a pure zero-point shift.
    m = quantize_model(np.uint8, np.int8, q_in=QuantParams(0.02, 128), q_out=QuantParams(0.02, 0))
    assert_parity(m, api_level=27, expect_ops=["ADD"])


def test_quantize_int16_refused():
    m = single_op_model(B.QUANTIZE, [("x", SHAPE, np.float32)], [("y", SHAPE, np.int16, QuantParams(0.01, 0))])
    assert_refused(m, 30, Code.DTYPE)


@pytest.mark.parametrize("src", [np.uint8, np.int8], ids=["u8", "i8"])
def test_dequantize(src):
    m = single_op_model(B.DEQUANTIZE, [("x", SHAPE, src, Q[src])], [("y", SHAPE, np.float32)])
    assert_parity(m, api_level=27, expect_ops=["DEQUANTIZE"])
    assert_parity(m, api_level=30, expect_ops=["DEQUANTIZE"])


def test_dequantize_float16_activation_is_a_cast():
    m = single_op_model(B.DEQUANTIZE, [("x", SHAPE, np.float16)], [("y", SHAPE, np.float32)])
    assert_parity(m, api_level=29, expect_ops=["CAST"])
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)


def dequantized_weights_model(weights, quant=None):
    """y = x + DEQUANTIZE(weights): the DEQUANTIZE of a constant folds away."""
    b = TfliteBuilder()
    x = b.input("x", weights.shape, np.float32)
    w = b.const("w", weights, quant=quant)
    wf = b.tensor("w_float", weights.shape, np.float32)
    b.op(B.DEQUANTIZE, [w], [wf])
    y = b.tensor("y", weights.shape, np.float32)
    b.op(B.ADD, [x, wf], [y], AddOptions())
    b.output(y)
    return b.finish()


def test_dequantize_constant_float16_folds():
    w = np.random.default_rng(1).standard_normal((3, 4, 5)).astype(np.float16)
    assert_parity(dequantized_weights_model(w), api_level=27, expect_ops=["ADD"])


@pytest.mark.parametrize("per_channel", [False, True], ids=["per-tensor", "per-channel"])
def test_dequantize_constant_int8_folds(per_channel):
    w = np.random.default_rng(2).integers(-128, 128, (3, 4, 5)).astype(np.int8)
    q = QuantParams([0.1, 0.02, 0.3, 0.05], [0, 0, 0, 0], 1) if per_channel else QuantParams(0.1, 3)
    assert_parity(dequantized_weights_model(w, q), api_level=27, expect_ops=["ADD"])


def test_dequantize_constant_into_model_output_refused():
    w = np.ones((2, 3), np.float16)
    b = TfliteBuilder()
    c = b.const("w", w)
    y = b.tensor("y", (2, 3), np.float32)
    b.op(B.DEQUANTIZE, [c], [y])
    b.output(y)
    assert_refused(b.finish(), 30, Code.OPERAND_VALUE)


def test_float16_weights_feed_a_convolution():
    # The usual float16 model: DEQUANTIZE(fp16 filter / bias) -> CONV_2D; only the convolution is emitted.
    from nnconv.tflite.options import Conv2DOptions
    from nnconv.tflite.schema_enums import Padding
    rng = np.random.default_rng(0)
    b = TfliteBuilder()
    x = b.input("x", (1, 6, 5, 3), np.float32)
    w16 = b.const("w16", rng.standard_normal((4, 3, 3, 3)).astype(np.float16))
    b16 = b.const("b16", rng.standard_normal(4).astype(np.float16))
    w, bias = b.tensor("w", (4, 3, 3, 3), np.float32), b.tensor("b", (4,), np.float32)
    b.op(B.DEQUANTIZE, [w16], [w])
    b.op(B.DEQUANTIZE, [b16], [bias])
    y = b.tensor("y", (1, 6, 5, 4), np.float32)
    b.op(B.CONV_2D, [x, w, bias], [y], Conv2DOptions(padding=Padding.SAME, stride_w=1, stride_h=1))
    b.output(y)
    assert_parity(b.finish(), api_level=27, expect_ops=["CONV_2D"])
