"""CONV_2D lowering: parity with TFLite and refusals."""

from __future__ import annotations

import numpy as np
import pytest

from harness import assert_parity, assert_refused, single_op_model
from nnconv.lowering.diagnostics import Code
from nnconv.tflite.options import Conv2DOptions
from nnconv.tflite.schema_enums import BuiltinOperator, Padding

RNG = np.random.default_rng(7)


def conv_model(in_shape, filt_shape, out_shape, padding, stride=(1, 1), dilation=(1, 1), act=0, bias=True):
    w = RNG.standard_normal(filt_shape).astype(np.float32)
    inputs = [("x", in_shape, np.float32), ("w", w)]
    inputs.append(("b", RNG.standard_normal(filt_shape[0]).astype(np.float32)) if bias else None)
    opts = Conv2DOptions(padding=padding, stride_w=stride[1], stride_h=stride[0], fused_activation_function=act,
                         dilation_w_factor=dilation[1], dilation_h_factor=dilation[0])
    return single_op_model(BuiltinOperator.CONV_2D, inputs, [("y", out_shape, np.float32)], opts)


@pytest.mark.parametrize("api", [27, 30])
@pytest.mark.parametrize("case", [
    pytest.param(((2, 9, 7, 3), (5, 3, 2, 3), (2, 9, 7, 5), Padding.SAME, (1, 1), 0), id="same-s1"),
    pytest.param(((1, 9, 7, 3), (4, 3, 3, 3), (1, 5, 4, 4), Padding.SAME, (2, 2), 3), id="same-s2-relu6"),
    pytest.param(((1, 9, 7, 3), (4, 2, 3, 3), (1, 4, 3, 4), Padding.VALID, (2, 2), 1), id="valid-s2-relu"),
    pytest.param(((1, 6, 5, 2), (3, 1, 1, 2), (1, 6, 5, 3), Padding.VALID, (1, 1), 2), id="1x1-relu1"),
    pytest.param(((1, 6, 5, 2), (3, 3, 3, 2), (1, 6, 5, 3), Padding.SAME, (1, 1), 4), id="tanh-act"),
])
def test_conv2d_parity(api, case):
    in_shape, f_shape, out_shape, padding, stride, act = case
    assert_parity(conv_model(in_shape, f_shape, out_shape, padding, stride, act=act), api_level=api)


def test_conv2d_dilation_parity_and_refusal():
    m = conv_model((1, 11, 9, 3), (4, 3, 3, 3), (1, 11, 9, 4), Padding.SAME, dilation=(2, 3))
    assert_parity(m, api_level=29, expect_ops=["CONV_2D"])
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)


def test_conv2d_without_bias_gets_zero_bias():
    assert_parity(conv_model((1, 5, 6, 3), (2, 3, 3, 3), (1, 5, 6, 2), Padding.SAME, bias=False), api_level=27)


def test_grouped_conv_parity():
    # Input depth 6, filter depth 2: three groups -> GROUPED_CONV_2D.
    m = conv_model((1, 7, 5, 6), (9, 3, 3, 2), (1, 7, 5, 9), Padding.SAME)
    assert_parity(m, api_level=29, expect_ops=["GROUPED_CONV_2D"])
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)


def test_conv2d_sign_bit_activation_refused():
    m = conv_model((1, 5, 6, 3), (2, 3, 3, 3), (1, 5, 6, 2), Padding.SAME, act=5)
    assert_refused(m, 30, Code.OPTION)
