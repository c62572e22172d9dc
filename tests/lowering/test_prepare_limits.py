"""Quantization parameters the NNAPI reference refuses when it prepares an operation (nnconv/nnapi/
quant_limits.py) are known at check time: SOFTMAX, LOGISTIC and TANH with an input scale too small for
their fixed-point kernels go through float from API 29 (within 1 LSB of TFLite, which uses lookup tables)
and are refused below, so `convert` never writes a model its executor refuses. LOGISTIC and TANH with an
input scale so large that the reference saturates where TFLite's table does not (up to 128 LSB) go through
float the same way."""

from __future__ import annotations

import numpy as np
import pytest

from harness import QuantParams, assert_parity, assert_refused, nnconv_options, single_op_model
from nnconv.pipeline import check_model
from nnconv.lowering.diagnostics import Code
from nnconv.tflite.options import SoftmaxOptions
from nnconv.tflite.schema_enums import BuiltinOperator as B

TINY = 2.0 ** -28  # below SOFTMAX's 2^-26 / beta and the sigmoids' 2^-27
OUT = {(B.SOFTMAX, np.int8): QuantParams(1 / 256, -128), (B.SOFTMAX, np.uint8): QuantParams(1 / 256, 0),
       (B.LOGISTIC, np.int8): QuantParams(1 / 256, -128), (B.LOGISTIC, np.uint8): QuantParams(1 / 256, 0),
       (B.TANH, np.int8): QuantParams(1 / 128, 0), (B.TANH, np.uint8): QuantParams(1 / 128, 128)}


def tiny_scale_model(opcode: B, dtype: type, scale: float = TINY, shape: tuple[int, ...] = (2, 7)) -> bytes:
    zp = 3 if dtype is np.int8 else 130
    options = SoftmaxOptions(beta=1.0) if opcode == B.SOFTMAX else None
    return single_op_model(opcode, [("x", shape, dtype, QuantParams(scale, zp))],
                           [("y", shape, dtype, OUT[(opcode, dtype)])], options)


@pytest.mark.parametrize("opcode", [B.SOFTMAX, B.LOGISTIC, B.TANH], ids=lambda o: o.name)
@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["int8", "uint8"])
@pytest.mark.parametrize("api", [29, 30])
def test_tiny_input_scale_goes_through_float(opcode, dtype, api):
    m = tiny_scale_model(opcode, dtype)
    op = opcode.name
    assert_parity(m, api_level=api, expect_ops=["DEQUANTIZE", op, "QUANTIZE"])
    (report,) = check_model(m, api, options=nnconv_options()).ops
    assert report.notes and "through float" in report.notes[0]


@pytest.mark.parametrize("opcode", [B.SOFTMAX, B.LOGISTIC], ids=lambda o: o.name)
def test_tiny_input_scale_refused_below_29(opcode):
    assert_refused(tiny_scale_model(opcode, np.uint8), 28, Code.API_LEVEL, min_api_level=29)


@pytest.mark.parametrize("opcode,scale", [(B.SOFTMAX, 0.05), (B.LOGISTIC, 0.05), (B.TANH, 0.05), (B.LOGISTIC, 3.9),
                                          (B.TANH, 7.9)], ids=lambda v: getattr(v, "name", str(v)))
def test_ordinary_scale_keeps_the_integer_kernel(opcode, scale):
    m = tiny_scale_model(opcode, np.int8, scale=scale, shape=(2, 128))
    assert_parity(m, api_level=30, expect_ops=[opcode.name], inputs=every_byte(np.int8, (2, 128)))
    assert not check_model(m, 30, options=nnconv_options()).ops[0].notes


def every_byte(dtype: type, shape: tuple[int, ...]) -> dict:
    info = np.iinfo(dtype)
    return {"x": np.resize(np.arange(info.min, info.max + 1), shape).astype(dtype)}


@pytest.mark.parametrize("opcode,scale", [(B.LOGISTIC, 4.1), (B.LOGISTIC, 8.6), (B.TANH, 8.0), (B.LOGISTIC, 40.0),
                                          (B.TANH, 1000.0)], ids=lambda v: getattr(v, "name", str(v)))
@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["int8", "uint8"])
def test_large_input_scale_goes_through_float(opcode, scale, dtype):
    """On every input byte: the reference's quantized kernel returns the extreme output from its saturation
    radius on (1 for scales in (4, 8), where sigmoid(4.1) is 252/256, not 255; 0 from 8 on, where even
    sigmoid(0) = 0.5 becomes 0: 128 LSB); through float the result is TFLite's table."""
    m = tiny_scale_model(opcode, dtype, scale=scale, shape=(2, 128))
    assert_parity(m, api_level=30, expect_ops=["DEQUANTIZE", opcode.name, "QUANTIZE"],
                  inputs=every_byte(dtype, (2, 128)))
    (report,) = check_model(m, 30, options=nnconv_options()).ops
    assert report.notes and "not yet extreme" in report.notes[0]


def test_large_input_scale_refused_below_29():
    assert_refused(tiny_scale_model(B.LOGISTIC, np.uint8, scale=8.6), 28, Code.API_LEVEL, min_api_level=29)
