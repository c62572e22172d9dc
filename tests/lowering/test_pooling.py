"""AVERAGE_POOL_2D / MAX_POOL_2D / L2_POOL_2D lowering: parity with TFLite and refusals."""

from __future__ import annotations

import numpy as np
import pytest

from harness import QuantParams, assert_parity, assert_refused, single_op_model
from nnconv.lowering.diagnostics import Code
from nnconv.tflite.options import Pool2DOptions
from nnconv.tflite.schema_enums import BuiltinOperator, Padding

OPS = {"avg": BuiltinOperator.AVERAGE_POOL_2D, "max": BuiltinOperator.MAX_POOL_2D, "l2": BuiltinOperator.L2_POOL_2D}

CASES = [
    pytest.param(((2, 9, 7, 3), (3, 3), (2, 2), Padding.SAME, (2, 5, 4, 3), 0), id="3x3-s2-same"),
    pytest.param(((1, 8, 11, 2), (2, 3), (2, 3), Padding.VALID, (1, 4, 3, 2), 1), id="2x3-s2x3-valid-relu"),
    pytest.param(((1, 6, 5, 4), (3, 2), (1, 1), Padding.SAME, (1, 6, 5, 4), 3), id="3x2-s1-same-relu6"),
    pytest.param(((3, 7, 7, 1), (7, 7), (1, 1), Padding.VALID, (3, 1, 1, 1), 2), id="global-relu1"),
]


def pool_model(op, dtype, in_shape, filt, stride, padding, out_shape, act=0, q=None):
    opts = Pool2DOptions(padding=padding, stride_w=stride[1], stride_h=stride[0], filter_width=filt[1],
                         filter_height=filt[0], fused_activation_function=act)
    spec = (dtype, q) if q is not None else (dtype,)
    return single_op_model(OPS[op], [("x", in_shape, *spec)], [("y", out_shape, *spec)], opts)


@pytest.mark.parametrize("op", ["avg", "max", "l2"])
@pytest.mark.parametrize("api", [27, 30])
@pytest.mark.parametrize("case", CASES)
def test_pool_float_parity(op, api, case):
    in_shape, filt, stride, padding, out_shape, act = case
    m = pool_model(op, np.float32, in_shape, filt, stride, padding, out_shape, act)
    assert_parity(m, api_level=api, expect_ops=[OPS[op].name])


@pytest.mark.parametrize("op", ["avg", "max"])
@pytest.mark.parametrize("dtype,api", [(np.uint8, 27), (np.uint8, 30), (np.int8, 27), (np.int8, 29), (np.int8, 30)])
@pytest.mark.parametrize("case", CASES[:3])
def test_pool_quantized_parity(op, dtype, api, case):
    in_shape, filt, stride, padding, out_shape, act = case
    q = QuantParams(0.05, 120 if dtype == np.uint8 else -9)
    m = pool_model(op, dtype, in_shape, filt, stride, padding, out_shape, act, q)
    result = assert_parity(m, api_level=api, expect_ops=[OPS[op].name])
    od = result.converted.model.main.operands[result.converted.model.main.operations[0].inputs[0]]
    assert od.type.name == ("TENSOR_QUANT8_ASYMM_SIGNED" if dtype == np.int8 and api >= 30 else "TENSOR_QUANT8_ASYMM")


ODD_CASES = [
    pytest.param(((2, 13, 13, 5), (3, 3), (1, 1), Padding.SAME, (2, 13, 13, 5), 0), id="3x3-s1-same-nasnet"),
    pytest.param(((1, 9, 10, 3), (3, 3), (2, 2), Padding.VALID, (1, 4, 4, 3), 0), id="3x3-s2-valid"),
    pytest.param(((1, 7, 9, 4), (2, 2), (2, 2), Padding.SAME, (1, 4, 5, 4), 1), id="2x2-s2-same-tail-pad"),
    pytest.param(((2, 10, 7, 2), (1, 1), (3, 2), Padding.VALID, (2, 4, 4, 2), 0), id="1x1-s3x2-stride-over-filter"),
    pytest.param(((1, 5, 12, 3), (1, 5), (1, 2), Padding.SAME, (1, 5, 6, 3), 3), id="1x5-row-only"),
]


@pytest.mark.parametrize("op", ["avg", "max", "l2"])
@pytest.mark.parametrize("case", ODD_CASES)
def test_pool_float_parity_odd_geometry(op, case):
    """The separable window reduction: either axis first, strides over the filter, SAME tails."""
    in_shape, filt, stride, padding, out_shape, act = case
    assert_parity(pool_model(op, np.float32, in_shape, filt, stride, padding, out_shape, act), api_level=30,
                  expect_ops=[OPS[op].name])


@pytest.mark.parametrize("op", ["avg", "max"])
@pytest.mark.parametrize("dtype,zero_point", [(np.uint8, 0), (np.uint8, 255), (np.int8, -128), (np.int8, 127),
                                              (np.int8, 5)])
@pytest.mark.parametrize("case", ODD_CASES)
def test_pool_quantized_parity_odd_geometry(op, dtype, zero_point, case):
    in_shape, filt, stride, padding, out_shape, act = case
    m = pool_model(op, dtype, in_shape, filt, stride, padding, out_shape, act, QuantParams(0.1, zero_point))
    assert_parity(m, api_level=30, expect_ops=[OPS[op].name])


@pytest.mark.parametrize("op", sorted(OPS))
def test_unknown_padding_refused(op):
    # Padding has only SAME (0) and VALID (1); another value used to be lowered as VALID.
    assert_refused(pool_model(op, np.float32, (1, 5, 6, 3), (3, 3), (1, 1), 2, (1, 3, 4, 3)), 30, Code.OPTION)


def test_l2_pool_quantized_refused():
    q = QuantParams(0.05, 128)
    m = pool_model("l2", np.uint8, (1, 4, 4, 1), (2, 2), (2, 2), Padding.VALID, (1, 2, 2, 1), q=q)
    assert_refused(m, 30, Code.DTYPE)


def test_quantized_avg_pool_large_window_refused():
    q = QuantParams(0.05, 128)
    m = pool_model("avg", np.uint8, (1, 17, 17, 1), (17, 17), (1, 1), Padding.VALID, (1, 1, 1, 1), q=q)
    assert_refused(m, 30, Code.OPTION)


def test_pool_requantizing_output_refused():
    opts = Pool2DOptions(padding=Padding.VALID, stride_w=2, stride_h=2, filter_width=2, filter_height=2)
    m = single_op_model(BuiltinOperator.MAX_POOL_2D, [("x", (1, 4, 4, 1), np.uint8, QuantParams(0.05, 128))],
                        [("y", (1, 2, 2, 1), np.uint8, QuantParams(0.1, 128))], opts)
    assert_refused(m, 30, Code.QUANTIZATION)


def test_pool_rank3_refused():
    opts = Pool2DOptions(padding=Padding.VALID, stride_w=1, stride_h=1, filter_width=2, filter_height=2)
    m = single_op_model(BuiltinOperator.MAX_POOL_2D, [("x", (4, 4, 2), np.float32)], [("y", (3, 3, 2), np.float32)],
                        opts)
    assert_refused(m, 30, Code.RANK)
