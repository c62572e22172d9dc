"""Comparison, logical and select lowering: parity with TFLite (float32, uint8, int8, int32, bool,
broadcasting) and refusals."""

from __future__ import annotations

import numpy as np
import pytest

from harness import QuantParams, assert_bit_exact, assert_parity, assert_refused, single_op_model
from nnconv.lowering.diagnostics import Code
from nnconv.tflite.schema_enums import BuiltinOperator as B

COMPARISONS = [B.EQUAL, B.NOT_EQUAL, B.LESS, B.LESS_EQUAL, B.GREATER, B.GREATER_EQUAL]
QX = {np.uint8: QuantParams(0.05, 128), np.int8: QuantParams(0.05, 0)}
QY = {np.uint8: QuantParams(0.1, 125), np.int8: QuantParams(0.1, 3)}


def compare_model(op, dtype=np.float32, y_shape=(7, 1)):
    return single_op_model(op, [("x", (2, 5, 7, 3), dtype, QX.get(dtype)), ("y", y_shape, dtype, QY.get(dtype))],
                           [("z", (2, 5, 7, 3), np.bool_)])


def coarse(feed):
    """Float / int inputs on a coarse grid so that equal values occur and EQUAL / LESS_EQUAL are exercised."""
    return {k: (np.round(v * 2) / 2).astype(v.dtype) if v.dtype == np.float32 else v for k, v in feed.items()}


@pytest.mark.parametrize("dtype", [np.float32, np.uint8, np.int8, np.int32], ids=["f32", "u8", "i8", "i32"])
@pytest.mark.parametrize("op", COMPARISONS, ids=lambda o: o.name)
def test_comparison_parity(op, dtype):
    m = compare_model(op, dtype)
    assert_parity(m, api_level=29, input_fn=coarse, expect_ops=[op.name])
    if dtype is np.int8:
        assert_parity(m, api_level=30, input_fn=coarse)


def test_comparison_bool_and_level():
    m = compare_model(B.EQUAL, np.bool_)
    assert_parity(m, api_level=29)
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)


def test_comparison_int64_refused():
    assert_refused(compare_model(B.LESS, np.int64), 30, Code.DTYPE)


@pytest.mark.parametrize("op", [B.LOGICAL_AND, B.LOGICAL_OR], ids=lambda o: o.name)
def test_logical_binary(op):
    m = single_op_model(op, [("x", (2, 5, 3), np.bool_), ("y", (5, 1), np.bool_)], [("z", (2, 5, 3), np.bool_)])
    assert_parity(m, api_level=29, expect_ops=[op.name])
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)


def test_logical_not():
    m = single_op_model(B.LOGICAL_NOT, [("x", (2, 5, 3), np.bool_)], [("z", (2, 5, 3), np.bool_)])
    assert_parity(m, api_level=29, expect_ops=["LOGICAL_NOT"])


def select_model(op, dtype=np.float32, shapes=((2, 5, 3), (2, 5, 3), (2, 5, 3)), out=(2, 5, 3), q=None):
    qs = q or ([QuantParams(0.1, 7)] * 3 if dtype in (np.uint8, np.int8) else [None] * 3)
    return single_op_model(op, [("c", shapes[0], np.bool_), ("x", shapes[1], dtype, qs[0]),
                                ("y", shapes[2], dtype, qs[1])], [("z", out, dtype, qs[2])])


@pytest.mark.parametrize("dtype", [np.float32, np.uint8, np.int8, np.int32], ids=["f32", "u8", "i8", "i32"])
def test_select_parity(dtype):
    m = select_model(B.SELECT, dtype)
    assert_parity(m, api_level=29, expect_ops=["SELECT"])
    assert_parity(m, api_level=30, expect_ops=["SELECT"])
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)


def test_select_rank1_condition_refused():
    m = select_model(B.SELECT, shapes=((2,), (2, 5, 3), (2, 5, 3)))
    assert_refused(m, 30, Code.OPERAND_VALUE)


def test_select_mixed_quantization_refused():
    m = select_model(B.SELECT, np.uint8, q=[QuantParams(0.1, 7), QuantParams(0.2, 7), QuantParams(0.1, 7)])
    assert_refused(m, 30, Code.QUANTIZATION)


BROADCASTS = {
    "cond": (((5, 1), (2, 5, 3), (2, 5, 3)), ["LOGICAL_OR", "SELECT"]),
    "x": (((2, 5, 3), (3,), (2, 5, 3)), None),
    "all": (((5, 1), (1, 3), (2, 1, 1)), None),
}


@pytest.mark.parametrize("dtype", [np.float32, np.uint8, np.int8, np.int32], ids=["f32", "u8", "i8", "i32"])
@pytest.mark.parametrize("case", list(BROADCASTS))
def test_select_v2_broadcasting(case, dtype):
    shapes, ops = BROADCASTS[case]
    m = select_model(B.SELECT_V2, dtype, shapes=shapes, out=(2, 5, 3))
    assert_parity(m, api_level=29, expect_ops=ops)
    assert_parity(m, api_level=30)


def test_select_v2_same_shapes_is_one_select():
    assert_parity(select_model(B.SELECT_V2), api_level=29, expect_ops=["SELECT"])


def test_select_v2_float_negative_zero_preserved():
    # ADD(x, -0.0) is the exact identity used for broadcasting: -0.0 must stay -0.0.
    m = select_model(B.SELECT_V2, shapes=((2, 5, 3), (3,), (2, 5, 3)))

    def zeros(feed):
        feed = dict(feed)
        feed["x"] = np.asarray([-0.0, 0.0, -0.0], np.float32)
        feed["c"] = np.ones((2, 5, 3), np.bool_)
        return feed
    result = assert_parity(m, api_level=29, input_fn=zeros)
    from nnconv.runtime.executor import Executor
    feed = zeros({"c": None, "y": np.zeros((2, 5, 3), np.float32)})
    out = Executor(result.converted).run(feed)["z"]
    assert np.array_equal(np.signbit(out), np.broadcast_to(np.signbit(feed["x"]), out.shape))


def test_select_v2_float_broadcast_is_bit_exact():
    rng = np.random.default_rng(14)
    m = select_model(B.SELECT_V2, shapes=((5, 1), (1, 3), (2, 1, 1)), out=(2, 5, 3))
    feed = {"c": rng.integers(0, 2, (5, 1)).astype(np.bool_), "x": rng.standard_normal((1, 3)).astype(np.float32),
            "y": rng.standard_normal((2, 1, 1)).astype(np.float32)}
    assert_bit_exact(m, 29, feed)
