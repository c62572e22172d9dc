"""BATCH_MATMUL lowering: parity with TFLite and refusals."""

from __future__ import annotations

import numpy as np
import pytest

from harness import QuantParams, assert_parity, assert_refused, single_op_model
from nnconv.lowering.diagnostics import Code
from nnconv.tflite.options import BatchMatMulOptions
from nnconv.tflite.schema_enums import BuiltinOperator

RNG = np.random.default_rng(23)


def bmm_model(x_shape, y_shape, out_shape, adj_x=False, adj_y=False, dtype=np.float32, q=(None, None, None),
              const_y=False):
    def spec(name, shape, qp):
        return (name, shape, dtype) + ((qp,) if qp else ())
    y = spec("y", y_shape, q[1])
    if const_y:
        y = ("y", RNG.integers(-127, 128, y_shape).astype(dtype), q[1]) if q[1] else \
            ("y", RNG.standard_normal(y_shape).astype(dtype))
    return single_op_model(BuiltinOperator.BATCH_MATMUL, [spec("x", x_shape, q[0]), y],
                           [spec("out", out_shape, q[2])], BatchMatMulOptions(adj_x=adj_x, adj_y=adj_y))


CASES = [
    pytest.param((3, 5), (5, 4), (3, 4), False, False, id="rank2"),
    pytest.param((2, 3, 5), (2, 5, 7), (2, 3, 7), False, False, id="rank3"),
    pytest.param((2, 3, 5, 4), (2, 3, 6, 5), (2, 3, 4, 6), True, True, id="rank4-adj-both"),
    pytest.param((2, 5, 3), (2, 5, 6), (2, 3, 6), True, False, id="adj-x"),
]


@pytest.mark.parametrize("x_shape,y_shape,out_shape,adj_x,adj_y", CASES)
def test_batch_matmul_float_parity(x_shape, y_shape, out_shape, adj_x, adj_y):
    m = bmm_model(x_shape, y_shape, out_shape, adj_x, adj_y)
    assert_parity(m, api_level=33, expect_ops=["BATCH_MATMUL"])


@pytest.mark.parametrize("x_shape,y_shape,out_shape,adj_x,adj_y", CASES)
def test_batch_matmul_int8_parity(x_shape, y_shape, out_shape, adj_x, adj_y):
    q = (QuantParams(0.05, -3), QuantParams(0.04, 0), QuantParams(0.3, 4))
    m = bmm_model(x_shape, y_shape, out_shape, adj_x, adj_y, dtype=np.int8, q=q, const_y=True)
    assert_parity(m, api_level=33, expect_ops=["BATCH_MATMUL"])


@pytest.mark.parametrize("api", [27, 30, 33])
@pytest.mark.parametrize("x_shape,y_shape,out_shape,adj_y", [
    pytest.param((3, 5), (5, 4), (3, 4), False, id="rank2"),
    pytest.param((2, 3, 5), (5, 7), (2, 3, 7), False, id="broadcast-rank3"),
    pytest.param((2, 3, 4, 5), (1, 6, 5), (2, 3, 4, 6), True, id="broadcast-rank4-adj-y"),
])
def test_batch_matmul_constant_rhs_as_fully_connected(api, x_shape, y_shape, out_shape, adj_y):
    m = bmm_model(x_shape, y_shape, out_shape, adj_y=adj_y, const_y=True)
    same_batch = x_shape[:-2] == y_shape[:-2]
    expected = ["BATCH_MATMUL"] if api >= 33 and same_batch else \
        (["FULLY_CONNECTED"] if len(out_shape) == 2 else ["FULLY_CONNECTED", "RESHAPE"])
    assert_parity(m, api_level=api, expect_ops=expected)


@pytest.mark.parametrize("api", [27, 29, 30])
def test_batch_matmul_int8_constant_rhs_as_fully_connected(api):
    q = (QuantParams(0.05, -3), QuantParams(0.04, 0), QuantParams(0.3, 4))
    m = bmm_model((2, 3, 7), (7, 5), (2, 3, 5), dtype=np.int8, q=q, const_y=True)
    assert_parity(m, api_level=api, expect_ops=["FULLY_CONNECTED", "RESHAPE"])


def test_batch_matmul_refusals():
    m = bmm_model((3, 5), (5, 4), (3, 4), dtype=np.int32)  # int32: only NNAPI's BATCH_MATMUL
    assert_refused(m, 31, Code.API_LEVEL, min_api_level=33)
    assert_refused(bmm_model((3, 5), (5, 4), (3, 4), adj_x=True, const_y=True), 31, Code.API_LEVEL,
                   min_api_level=33)
    assert_refused(bmm_model((2, 3, 5), (1, 5, 4), (2, 3, 4)), 33, Code.OPERAND_VALUE)
    hybrid = single_op_model(BuiltinOperator.BATCH_MATMUL,
                             [("x", (3, 5), np.float32), ("y", np.ones((5, 4), np.int8), QuantParams(0.1, 0))],
                             [("out", (3, 4), np.float32)], BatchMatMulOptions())
    assert_refused(hybrid, 33, Code.DTYPE)
