"""Quantization parameters the NNAPI reference refuses when it prepares an operation (nnconv/nnapi/
quant_limits.py) are known at check time: SOFTMAX, LOGISTIC and TANH with an input scale too small for
their fixed-point kernels go through float from API 29 (within 1 LSB of TFLite, which uses lookup tables)
and are refused below, so `convert` never writes a model its executor refuses."""

from __future__ import annotations

import numpy as np
import pytest

from harness import QuantParams, assert_parity, assert_refused, single_op_model
from nnconv.pipeline import check_model
from nnconv.lowering.diagnostics import Code
from nnconv.tflite.options import SoftmaxOptions
from nnconv.tflite.schema_enums import BuiltinOperator as B

TINY = 2.0 ** -28  # below SOFTMAX's 2^-26 / beta and the sigmoids' 2^-27
OUT = {(B.SOFTMAX, np.int8): QuantParams(1 / 256, -128), (B.SOFTMAX, np.uint8): QuantParams(1 / 256, 0),
       (B.LOGISTIC, np.int8): QuantParams(1 / 256, -128), (B.LOGISTIC, np.uint8): QuantParams(1 / 256, 0),
       (B.TANH, np.int8): QuantParams(1 / 128, 0), (B.TANH, np.uint8): QuantParams(1 / 128, 128)}


def tiny_scale_model(opcode: B, dtype: type, scale: float = TINY) -> bytes:
    zp = 3 if dtype is np.int8 else 130
    options = SoftmaxOptions(beta=1.0) if opcode == B.SOFTMAX else None
    return single_op_model(opcode, [("x", (2, 7), dtype, QuantParams(scale, zp))],
                           [("y", (2, 7), dtype, OUT[(opcode, dtype)])], options)


@pytest.mark.parametrize("opcode", [B.SOFTMAX, B.LOGISTIC, B.TANH], ids=lambda o: o.name)
@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["int8", "uint8"])
@pytest.mark.parametrize("api", [29, 30])
def test_tiny_input_scale_goes_through_float(opcode, dtype, api):
    m = tiny_scale_model(opcode, dtype)
    op = opcode.name
    assert_parity(m, api_level=api, expect_ops=["DEQUANTIZE", op, "QUANTIZE"])
    (report,) = check_model(m, api).ops
    assert report.notes and "through float" in report.notes[0]


@pytest.mark.parametrize("opcode", [B.SOFTMAX, B.LOGISTIC], ids=lambda o: o.name)
def test_tiny_input_scale_refused_below_29(opcode):
    assert_refused(tiny_scale_model(opcode, np.uint8), 28, Code.API_LEVEL, min_api_level=29)


@pytest.mark.parametrize("opcode", [B.SOFTMAX, B.LOGISTIC, B.TANH], ids=lambda o: o.name)
def test_ordinary_scale_keeps_the_integer_kernel(opcode):
    m = tiny_scale_model(opcode, np.int8, scale=0.05)
    assert_parity(m, api_level=30, expect_ops=[opcode.name])
    assert not check_model(m, 30).ops[0].notes
