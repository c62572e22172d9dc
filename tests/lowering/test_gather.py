"""GATHER and GATHER_ND lowerings."""

from __future__ import annotations

import numpy as np
import pytest

from harness import assert_parity, assert_refused, single_op_model
from nnconv.lowering.diagnostics import Code
from nnconv.tflite.options import GatherNdOptions, GatherOptions
from nnconv.tflite.schema_enums import BuiltinOperator as B
from shape_models import io

I32 = np.int32
LEVELS = [("float32", 29), ("uint8", 29), ("int8", 29), ("int8", 30), ("int32", 29)]


@pytest.mark.parametrize("dtype,api", LEVELS)
@pytest.mark.parametrize("axis,idx,out", [
    (0, np.array([1, 0, 1], I32), (3, 5, 7)),
    (1, np.array([[4, 0], [2, 2]], I32), (2, 2, 2, 7)),
    (-1, np.array([6, 1, 3], I32), (2, 5, 3)),
], ids=["axis0", "axis1-2d-indices", "axis-last"])
def test_gather_constant_indices_parity(dtype, api, axis, idx, out):
    m = single_op_model(B.GATHER, [io("x", (2, 5, 7), dtype), ("i", idx)], [io("y", out, dtype)],
                        GatherOptions(axis=axis))
    assert_parity(m, api_level=api, expect_ops=["GATHER"])


def test_gather_runtime_indices_parity():
    m = single_op_model(B.GATHER, [("x", (2, 9, 3), np.float32), ("i", (4,), I32)], [("y", (2, 4, 3), np.float32)],
                        GatherOptions(axis=1))
    assert_parity(m, api_level=29, expect_ops=["GATHER"])  # random indices lie in [0, 8)


@pytest.mark.parametrize("dtype,api", LEVELS[:4] + [("int32", 33)])
def test_gather_scalar_index_becomes_gather_reshape(dtype, api):
    m = single_op_model(B.GATHER, [io("x", (8, 2, 5), dtype), ("i", (), I32)], [io("y", (2, 5), dtype)],
                        GatherOptions(axis=0))
    assert_parity(m, api_level=api, expect_ops=["GATHER", "RESHAPE"])


def test_gather_int64_constant_indices_are_narrowed():
    m = single_op_model(B.GATHER, [("x", (5, 3), np.float32), ("i", np.array([4, 0], np.int64))],
                        [("y", (2, 3), np.float32)], GatherOptions(axis=0))
    assert_parity(m, api_level=29, expect_ops=["GATHER"])


def test_index_runs():
    from nnconv.lowering.rules.gather import index_runs
    assert index_runs([2, 1, 0, 5, 7]) == [(2, 3, -1), (5, 2, 2)]
    assert index_runs([3, 3, 4]) == [(3, 1, 1), (3, 2, 1)]
    assert index_runs([0]) == [(0, 1, 1)]


@pytest.mark.parametrize("dtype", ["float32", "uint8", "int8"])
@pytest.mark.parametrize("axis,idx,out,ops", [
    (-1, np.array([6, 5, 4, 3, 2, 1, 0], I32), (2, 5, 7), ["STRIDED_SLICE"]),
    (1, np.array([4, 0, 2, 2], I32), (2, 4, 7), ["STRIDED_SLICE"] * 3 + ["CONCATENATION"]),
    (0, np.array(1, I32), (5, 7), ["STRIDED_SLICE"]),
], ids=["reverse-run", "three-runs", "scalar"])
def test_gather_constant_indices_as_strided_slices_at_28(dtype, axis, idx, out, ops):
    m = single_op_model(B.GATHER, [io("x", (2, 5, 7), dtype), ("i", idx)], [io("y", out, dtype)],
                        GatherOptions(axis=axis))
    assert_parity(m, api_level=28, expect_ops=ops)


def test_gather_refusals():
    m = single_op_model(B.GATHER, [("x", (5, 3), np.float32), ("i", np.array([4, 0], I32))],
                        [("y", (2, 3), np.float32)], GatherOptions(axis=0))
    assert_refused(m, 27, Code.API_LEVEL, min_api_level=28)
    runtime = single_op_model(B.GATHER, [("x", (5, 3), np.float32), ("i", (2,), I32)],
                              [("y", (2, 3), np.float32)], GatherOptions(axis=0))
    assert_refused(runtime, 28, Code.API_LEVEL, min_api_level=29)
    scattered = np.array([k // 2 if k % 2 == 0 else 19 - k // 2 for k in range(20)], I32)  # 10 runs
    many = single_op_model(B.GATHER, [("x", (20, 3), np.float32), ("i", scattered)],
                           [("y", (20, 3), np.float32)], GatherOptions(axis=0))
    assert_refused(many, 28, Code.API_LEVEL, min_api_level=29)
    scalar_i32 = single_op_model(B.GATHER, [("x", (5, 3), I32), ("i", (), I32)], [("y", (3,), I32)],
                                 GatherOptions(axis=0))
    assert_refused(scalar_i32, 30, Code.API_LEVEL, min_api_level=33)
    batch = single_op_model(B.GATHER, [("x", (2, 5), np.float32), ("i", np.array([[1], [0]], I32))],
                            [("y", (2, 1), np.float32)], GatherOptions(axis=1, batch_dims=1))
    assert_refused(batch, 30, Code.OPTION)
    # non-constant int64 indices lower as int32 (tests/rewrite/test_int64_indices.py); read otherwise, refused


@pytest.mark.parametrize("dtype,api", LEVELS[:4])
@pytest.mark.parametrize("idx,out,ops", [
    (np.array([[1, 4], [0, 2], [1, 0]], I32), (3, 7), ["RESHAPE", "GATHER"]),
    (np.array([[[1], [0]], [[0], [1]]], I32), (2, 2, 5, 7), ["GATHER"]),
    (np.array([[1, 4, 6], [0, 0, 0]], I32), (2,), ["RESHAPE", "GATHER"]),
], ids=["k2", "k1", "k3-elements"])
def test_gather_nd_composite_parity(dtype, api, idx, out, ops):
    m = single_op_model(B.GATHER_ND, [io("x", (2, 5, 7), dtype), ("i", idx)], [io("y", out, dtype)],
                        GatherNdOptions())
    assert_parity(m, api_level=api, expect_ops=ops)


def test_gather_nd_refusals():
    runtime = single_op_model(B.GATHER_ND, [("x", (2, 5), np.float32), ("i", (3, 2), I32)],
                              [("y", (3,), np.float32)], GatherNdOptions())
    assert_refused(runtime, 30, Code.NON_CONSTANT)
    oob = single_op_model(B.GATHER_ND, [("x", (2, 5), np.float32), ("i", np.array([[2, 0]], I32))],
                          [("y", (1,), np.float32)], GatherNdOptions())
    assert_refused(oob, 30, Code.OPERAND_VALUE)
    ok = single_op_model(B.GATHER_ND, [("x", (2, 5), np.float32), ("i", np.array([[1, 0]], I32))],
                         [("y", (1,), np.float32)], GatherNdOptions())
    assert_refused(ok, 28, Code.API_LEVEL, min_api_level=29)
