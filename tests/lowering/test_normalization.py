"""L2_NORMALIZATION / LOCAL_RESPONSE_NORMALIZATION lowering: parity with TFLite and refusals."""

from __future__ import annotations

import numpy as np
import pytest

from harness import QuantParams, assert_parity, assert_refused, single_op_model
from nnconv.lowering.diagnostics import Code
from nnconv.tflite.options import L2NormOptions, LocalResponseNormalizationOptions
from nnconv.tflite.schema_enums import BuiltinOperator

L2 = BuiltinOperator.L2_NORMALIZATION
OUT_Q = {np.uint8: QuantParams(1 / 128, 128), np.int8: QuantParams(1 / 128, 0)}


def l2_model(dtype, shape, act=0, in_q=None, out_q=None):
    ins = [("x", shape, dtype) + ((in_q,) if in_q else ())]
    outs = [("y", shape, dtype) + ((out_q,) if out_q else ())]
    return single_op_model(L2, ins, outs, L2NormOptions(fused_activation_function=act))


@pytest.mark.parametrize("api,shape", [(27, (2, 3, 5, 7)), (29, (3, 6)), (29, (2, 5, 4)), (30, (2, 3, 5, 7))])
def test_l2norm_float_parity(api, shape):
    assert_parity(l2_model(np.float32, shape), api_level=api, expect_ops=["L2_NORMALIZATION"])


@pytest.mark.parametrize("dtype,api", [(np.uint8, 29), (np.uint8, 30), (np.int8, 29), (np.int8, 30)])
@pytest.mark.parametrize("shape", [(2, 3, 4, 9), (5, 13)])
def test_l2norm_quantized_parity(dtype, api, shape):
    in_q = QuantParams(0.04, 128 if dtype == np.uint8 else 0)
    m = l2_model(dtype, shape, in_q=in_q, out_q=OUT_Q[dtype])
    result = assert_parity(m, api_level=api, expect_ops=["L2_NORMALIZATION"])
    main = result.converted.model.main
    od = main.operands[main.operations[0].outputs[0]]
    # int8 below API 30 travels as uint8 + 128: NNAPI's forced uint8 output zero point 128.
    assert od.zero_point == (0 if dtype == np.int8 and api >= 30 else 128)


@pytest.mark.parametrize("shape", [(3, 6), (2, 5, 4), (7,)])
def test_l2norm_other_ranks_reshaped_below_29(shape):
    assert_parity(l2_model(np.float32, shape), api_level=27, expect_ops=["RESHAPE", "L2_NORMALIZATION", "RESHAPE"])


def test_l2norm_refusals():
    q = QuantParams(0.04, 128)
    assert_refused(l2_model(np.uint8, (1, 2, 3, 4), in_q=q, out_q=OUT_Q[np.uint8]), 28, Code.API_LEVEL,
                   min_api_level=29)
    assert_refused(l2_model(np.uint8, (1, 2, 3, 4), in_q=q, out_q=QuantParams(1 / 64, 128)), 30, Code.QUANTIZATION)
    assert_refused(l2_model(np.float32, (1, 2, 3, 4), act=1), 30, Code.OPTION)


def lrn_model(shape, radius, bias, alpha, beta, dtype=np.float32):
    opts = LocalResponseNormalizationOptions(radius=radius, bias=bias, alpha=alpha, beta=beta)
    return single_op_model(BuiltinOperator.LOCAL_RESPONSE_NORMALIZATION, [("x", shape, dtype)],
                           [("y", shape, dtype)], opts)


@pytest.mark.parametrize("api", [27, 30])
@pytest.mark.parametrize("radius,bias,alpha,beta", [(1, 1.0, 0.5, 0.75), (3, 2.0, 0.1, 0.5), (0, 0.5, 1.0, 1.0)])
def test_lrn_parity(api, radius, bias, alpha, beta):
    assert_parity(lrn_model((2, 3, 5, 7), radius, bias, alpha, beta), api_level=api,
                  expect_ops=["LOCAL_RESPONSE_NORMALIZATION"])


def test_lrn_refusals():
    assert_refused(lrn_model((3, 5, 7), 1, 1.0, 0.5, 0.75), 30, Code.RANK)
    assert_refused(lrn_model((1, 3, 5, 7), 1, 1.0, 0.5, 0.75, dtype=np.uint8), 30, Code.DTYPE)
    assert_refused(lrn_model((1, 3, 5, 7), -1, 1.0, 0.5, 0.75), 30, Code.OPTION)
