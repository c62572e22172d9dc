"""Slicing lowerings: STRIDED_SLICE (all TFLite masks), SLICE, SPLIT, SPLIT_V."""

from __future__ import annotations

import numpy as np
import pytest

from harness import assert_parity, assert_refused, single_op_model
from nnconv.lowering.diagnostics import Code
from nnconv.tflite.options import SliceOptions, SplitOptions, SplitVOptions, StridedSliceOptions as SSO
from nnconv.tflite.schema_enums import BuiltinOperator as B
from shape_models import io, op_model

I32 = np.int32
LEVELS = [("float32", 28), ("float32", 30), ("uint8", 29), ("int8", 29), ("int8", 30)]


def ss_model(dtype, x_shape, out_shape, begin, end, strides, opts):
    consts = [np.array(begin, I32), np.array(end, I32), np.array(strides, I32)]
    # TFLite reads the `offset` option from version 5 on (older versions crash its interpreter).
    return op_model(B.STRIDED_SLICE, x_shape, out_shape, dtype, consts, opts, version=5 if opts.offset else 1)


SS_CASES = [
    pytest.param([0, 1, 2, 0], [2, 5, 7, 3], [1, 2, 2, 1], SSO(), (2, 2, 3, 3), ["STRIDED_SLICE"], id="strided"),
    pytest.param([1, -1, 0, 0], [0, -6, 0, 0], [1, -1, 1, 1], SSO(end_mask=1 | 4 | 8), (1, 5, 7, 3),
                 ["STRIDED_SLICE"], id="neg-stride-masks"),
    pytest.param([0, 2, 0, 1], [0, 0, 0, 0], [1, 1, 1, 1], SSO(begin_mask=1, end_mask=13, shrink_axis_mask=2 | 8),
                 (2, 7), ["STRIDED_SLICE"], id="shrink"),
    pytest.param([-1, 0, 0, 0], [0, 5, 7, 3], [1, 1, 1, 1], SSO(shrink_axis_mask=1), (5, 7, 3),
                 ["STRIDED_SLICE"], id="shrink-negative"),
    pytest.param([0, 1, 0], [1, 3, 0], [1, 1, 1], SSO(ellipsis_mask=4, end_mask=4), (1, 2, 7, 3),
                 ["STRIDED_SLICE"], id="ellipsis-last"),
]


@pytest.mark.parametrize("dtype,api", LEVELS)
@pytest.mark.parametrize("begin,end,strides,opts,out,ops", SS_CASES)
def test_strided_slice_parity(dtype, api, begin, end, strides, opts, out, ops):
    m = ss_model(dtype, (2, 5, 7, 3), out, begin, end, strides, opts)
    assert_parity(m, api_level=api, expect_ops=ops)


def test_strided_slice_offset_parity():
    # TFLite's `offset` (end relative to begin) needs op version 5 and a full-rank spec.
    m = ss_model("float32", (2, 5, 7, 3), (2, 2, 7, 3), [0, 1, 0, 0], [2, 2, 7, 3], [1, 1, 1, 1], SSO(offset=True))
    assert_parity(m, api_level=28, expect_ops=["STRIDED_SLICE"])


def test_strided_slice_ellipsis_first_expands():
    # begin [0, 1] with an ellipsis first: the ellipsis covers the first three axes; the last is sliced 1:4.
    # (out shape (2, 5, 7, 2)) - this also checks that the computed output shape is verified.
    m = ss_model("float32", (2, 5, 7, 3), (2, 5, 7, 2), [0, 1], [0, 3], [1, 1], SSO(ellipsis_mask=1))
    assert_parity(m, api_level=28, expect_ops=["STRIDED_SLICE"])


def test_strided_slice_new_axis_becomes_reshape():
    m = ss_model("float32", (2, 5, 7), (2, 1, 2, 7), [0, 0, 1], [0, 0, 4], [1, 1, 2],
                 SSO(new_axis_mask=2, begin_mask=1, end_mask=5))
    assert_parity(m, api_level=28, expect_ops=["STRIDED_SLICE", "RESHAPE"])


def test_strided_slice_new_axis_rank5_refused():
    m = ss_model("float32", (2, 5, 7, 3), (2, 1, 2, 7, 3), [0, 0, 1], [0, 0, 4], [1, 1, 2],
                 SSO(new_axis_mask=2, begin_mask=1, end_mask=3))
    assert_refused(m, 30, Code.RANK)


@pytest.mark.parametrize("case,code", [
    (dict(begin=[0, 0], end=[0, 0], strides=[1, 0], out=(2, 5)), Code.OPERAND_VALUE),  # zero stride
    (dict(begin=[0, 3], end=[2, 3], strides=[1, 1], out=(2, 0)), Code.OPERAND_VALUE),  # empty
], ids=["zero-stride", "empty"])
def test_strided_slice_refusals(case, code):
    m = ss_model("float32", (2, 5), case["out"], case["begin"], case["end"], case["strides"], SSO())
    assert_refused(m, 30, code)


def test_strided_slice_declared_shape_overruled_as_tflite_does():
    """Declared [2, 4] for a slice giving [2, 5]: TFLite's Prepare resizes the output and runs it."""
    m = ss_model("float32", (2, 5), (2, 4), [0, 0], [2, 5], [1, 1], SSO())
    assert list(assert_parity(m, api_level=30).converted.outputs[0].shape) == [2, 5]


def test_strided_slice_api_and_dtype_refusals():
    m = ss_model("float32", (2, 5), (2, 3), [0, 1], [2, 4], [1, 1], SSO())
    assert_refused(m, 27, Code.API_LEVEL, min_api_level=28)
    mi = single_op_model(B.STRIDED_SLICE, [("x", (2, 5), np.int16), ("b", np.array([0, 1], I32)),
                                           ("e", np.array([2, 4], I32)), ("s", np.array([1, 1], I32))],
                         [("y", (2, 3), np.int16)], SSO())
    assert_refused(mi, 30, Code.DTYPE)


# NNAPI's STRIDED_SLICE has no int32 or bool8 form: int32 takes SLICE or GATHERs (+ RESHAPE of int32 from
# API 33 where the rank changes), bool a uint8 detour (SELECT, STRIDED_SLICE, NOT_EQUAL).
INT_BOOL_CASES = [
    pytest.param((2, 5, 7, 3), [0, 1, 2, 0], [2, 5, 7, 3], [1, 2, 2, 1], SSO(), (2, 2, 3, 3),
                 ["GATHER", "GATHER"], id="strided"),
    pytest.param((2, 5, 7, 3), [1, -1, 0, 0], [0, -6, 0, 0], [1, -1, 1, 1], SSO(end_mask=1 | 4 | 8), (1, 5, 7, 3),
                 ["GATHER", "GATHER"], id="neg-stride-masks"),
    pytest.param((2, 5, 7, 3), [0, 1, 2, 0], [2, 4, 7, 3], [1, 1, 1, 1], SSO(), (2, 3, 5, 3), ["SLICE"],
                 id="box"),
    pytest.param((3,), [1], [2], [1], SSO(shrink_axis_mask=1), (), ["SLICE"], id="element-of-a-vector"),
    pytest.param((3,), [-1], [0], [1], SSO(shrink_axis_mask=1), (), ["SLICE"], id="last-element"),
    pytest.param((2, 5, 7), [1, 0, 0], [0, 5, 7], [1, 2, 1], SSO(shrink_axis_mask=1, end_mask=6), (3, 7),
                 ["GATHER", "GATHER", "RESHAPE"], id="shrink-changes-rank"),
]


@pytest.mark.parametrize("x_shape,begin,end,strides,opts,out,ops", INT_BOOL_CASES)
def test_strided_slice_int32_parity(x_shape, begin, end, strides, opts, out, ops):
    m = ss_model("int32", x_shape, out, begin, end, strides, opts)
    api = 33 if "RESHAPE" in ops else 29
    assert_parity(m, api_level=api, expect_ops=ops)
    if api == 33:
        assert_refused(m, 31, Code.API_LEVEL, min_api_level=33)
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=api)


@pytest.mark.parametrize("x_shape,begin,end,strides,opts,out,ops", INT_BOOL_CASES)
def test_strided_slice_bool_parity(x_shape, begin, end, strides, opts, out, ops):
    m = ss_model("bool", x_shape, out, begin, end, strides, opts)
    for seed in range(3):
        assert_parity(m, api_level=29, seed=seed, expect_ops=["SELECT", "STRIDED_SLICE", "NOT_EQUAL"])
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)


def test_strided_slice_bool_new_axis_reshapes_the_uint8():
    """NNAPI's RESHAPE has no bool8 either: the new axis is inserted on the uint8 detour."""
    m = ss_model("bool", (2, 5, 7), (2, 1, 2, 7), [0, 0, 1], [0, 0, 4], [1, 1, 2],
                 SSO(new_axis_mask=2, begin_mask=1, end_mask=5))
    assert_parity(m, api_level=29, expect_ops=["SELECT", "STRIDED_SLICE", "RESHAPE", "NOT_EQUAL"])


@pytest.mark.parametrize("dtype,api", [("float32", 29), ("uint8", 29), ("int8", 29), ("int8", 30), ("int32", 29)])
def test_slice_parity(dtype, api):
    m = op_model(B.SLICE, (2, 5, 7, 3), (1, 3, 6, 2), dtype,
                 [np.array([1, 2, 1, 0], I32), np.array([-1, 3, -1, 2], I32)], SliceOptions())
    assert_parity(m, api_level=api, expect_ops=["SLICE"])


@pytest.mark.parametrize("dtype", ["float32", "uint8", "int8"])
def test_slice_is_a_strided_slice_at_28(dtype):
    m = op_model(B.SLICE, (2, 5, 7, 3), (1, 3, 6, 2), dtype,
                 [np.array([1, 2, 1, 0], I32), np.array([-1, 3, -1, 2], I32)], SliceOptions())
    assert_parity(m, api_level=28, expect_ops=["STRIDED_SLICE"])


def test_slice_refusals():
    m = op_model(B.SLICE, (2, 5), (1, 3), consts=[np.array([1, 2], I32), np.array([1, 3], I32)])
    assert_refused(m, 27, Code.API_LEVEL, min_api_level=28)
    mi = op_model(B.SLICE, (2, 5), (1, 3), "int32", consts=[np.array([1, 2], I32), np.array([1, 3], I32)])
    assert_refused(mi, 28, Code.API_LEVEL, min_api_level=29)
    bad = op_model(B.SLICE, (2, 5), (1, 4), consts=[np.array([1, 2], I32), np.array([1, 4], I32)])
    assert_refused(bad, 30, Code.OPERAND_VALUE)


@pytest.mark.parametrize("dtype,api", [("float32", 29), ("uint8", 29), ("int8", 29), ("int8", 30), ("int32", 29)])
@pytest.mark.parametrize("axis", [1, -1])
def test_split_parity(dtype, api, axis):
    out = (2, 2, 6) if axis == 1 else (2, 6, 2)
    x_shape = (2, 6, 6)
    m = single_op_model(B.SPLIT, [("a", np.array(axis, I32)), io("x", x_shape, dtype)],
                        [io(f"y{k}", out, dtype) for k in range(3)], SplitOptions(num_splits=3))
    assert_parity(m, api_level=api, expect_ops=["SPLIT"])


@pytest.mark.parametrize("dtype", ["float32", "uint8", "int8"])
def test_split_is_strided_slices_at_28(dtype):
    m = single_op_model(B.SPLIT, [("a", np.array(-1, I32)), io("x", (2, 5, 6), dtype)],
                        [io(f"y{k}", (2, 5, 2), dtype) for k in range(3)], SplitOptions(num_splits=3))
    assert_parity(m, api_level=28, expect_ops=["STRIDED_SLICE"] * 3)


def test_split_refusals():
    m = single_op_model(B.SPLIT, [("a", np.array(1, I32)), ("x", (2, 6), np.float32)],
                        [(f"y{k}", (2, 3), np.float32) for k in range(2)], SplitOptions(num_splits=2))
    assert_refused(m, 27, Code.API_LEVEL, min_api_level=28)
    dyn = single_op_model(B.SPLIT, [("a", (), I32), ("x", (2, 6), np.float32)],
                          [(f"y{k}", (2, 3), np.float32) for k in range(2)], SplitOptions(num_splits=2))
    assert_refused(dyn, 30, Code.NON_CONSTANT)


@pytest.mark.parametrize("dtype,api", [("float32", 29), ("uint8", 29), ("int8", 29), ("int8", 30), ("int32", 29)])
def test_split_v_parity(dtype, api):
    m = single_op_model(B.SPLIT_V, [io("x", (2, 7, 3), dtype), ("s", np.array([2, -1, 1], I32)),
                                    ("a", np.array(1, I32))],
                        [io("y0", (2, 2, 3), dtype), io("y1", (2, 4, 3), dtype), io("y2", (2, 1, 3), dtype)],
                        SplitVOptions(num_splits=3))
    assert_parity(m, api_level=api, expect_ops=["SLICE"] * 3)
    if dtype == "int32":
        assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)
    else:
        assert_parity(m, api_level=28, expect_ops=["STRIDED_SLICE"] * 3)


def test_strided_slice_shrink_with_begin_mask_takes_the_first_element():
    # TFLite honours begin_mask on a shrunk axis (start 0) and ignores end there.
    m = ss_model("float32", (2, 5, 7), (5, 7), [1, 0, 0], [0, 0, 0], [1, 1, 1],
                 SSO(begin_mask=1 | 2 | 4, end_mask=2 | 4, shrink_axis_mask=1))
    assert_parity(m, api_level=28, expect_ops=["STRIDED_SLICE"])
