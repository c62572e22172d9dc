"""CUMSUM lowering: a FULLY_CONNECTED with a constant triangular matrix (TRANSPOSE around it for an axis that is
not the last); parity with TFLite for every exclusive / reverse combination, and refusals."""

from __future__ import annotations

import numpy as np
import pytest

from harness import assert_parity, assert_refused, single_op_model
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.rules.cumsum import MAX_CUMSUM_LENGTH, cumsum_matrix
from nnconv.tflite.options import CumsumOptions
from nnconv.tflite.schema_enums import BuiltinOperator


def cumsum_model(shape, axis, exclusive=False, reverse=False, dtype=np.float32, const_axis=True):
    axis_in = ("axis", np.asarray(axis, np.int32)) if const_axis else ("axis", (), np.int32)
    return single_op_model(BuiltinOperator.CUMSUM, [("x", shape, dtype), axis_in], [("y", shape, dtype)],
                           CumsumOptions(exclusive=exclusive, reverse=reverse))


def test_cumsum_matrix_is_the_running_sum():
    x = np.arange(1, 6, dtype=np.float32)
    for exclusive in (False, True):
        for reverse in (False, True):
            want = np.cumsum(x[::-1])[::-1] if reverse else np.cumsum(x)
            if exclusive:
                want = want - x
            np.testing.assert_array_equal(cumsum_matrix(5, exclusive, reverse) @ x, want)


@pytest.mark.parametrize("exclusive", [False, True], ids=["inclusive", "exclusive"])
@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize("shape,axis,api,ops", [
    ((2, 7), 1, 27, ["FULLY_CONNECTED"]),
    ((9,), 0, 27, ["RESHAPE", "FULLY_CONNECTED", "RESHAPE"]),
    ((2, 7, 3), -1, 27, ["FULLY_CONNECTED", "RESHAPE"]),
    ((2, 7, 3), 1, 28, ["TRANSPOSE", "FULLY_CONNECTED", "RESHAPE", "TRANSPOSE"]),
    ((4, 3, 5, 2), 0, 30, ["TRANSPOSE", "FULLY_CONNECTED", "RESHAPE", "TRANSPOSE"]),
], ids=["2d-last", "rank1", "3d-last", "3d-middle", "4d-first"])
def test_cumsum_parity(shape, axis, api, ops, exclusive, reverse):
    m = cumsum_model(shape, axis, exclusive, reverse)
    for seed in range(2):
        assert_parity(m, api_level=api, seed=seed, expect_ops=ops)


def test_cumsum_refusals():
    assert_refused(cumsum_model((2, 7, 3), 1), 27, Code.API_LEVEL, min_api_level=28)
    assert_refused(cumsum_model((2, 7), 1, dtype=np.int32), 30, Code.DTYPE)
    assert_refused(cumsum_model((2, 7), 1, const_axis=False), 30, Code.NON_CONSTANT)
    assert_refused(cumsum_model((2, MAX_CUMSUM_LENGTH + 1), 1), 30, Code.OPERAND_VALUE)
