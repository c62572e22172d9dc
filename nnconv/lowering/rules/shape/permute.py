"""Ops that reorder elements along axes: TRANSPOSE, REVERSE_V2."""

from __future__ import annotations

import numpy as np

from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.driver_support import FEATURE_LEVEL_6_ARMNN, NO_FLOAT16_ARMNN
from nnconv.lowering.registry import Rule, lowering_rule
from nnconv.lowering.rules._shape_common import (BASIC, BASIC_I32, FS, FSI, check_data_movement, const_ints,
                                                 require_const_ints)
from nnconv.lowering.rules.shape.pad import gather_chain
from nnconv.nnapi.enums import OperationType
from nnconv.rewrite.folds import shape as shape_folds
from nnconv.tflite.schema_enums import BuiltinOperator


@lowering_rule(BuiltinOperator.TRANSPOSE)
class Transpose(Rule):
    """TFLite TRANSPOSE(input, perm) -> NNAPI TRANSPOSE(input, perm TENSOR_INT32) (API 28)."""

    int8_shiftable = True
    fold = shape_folds.transpose
    nnapi_ops = (OperationType.TRANSPOSE, OperationType.CAST)
    stored_values_from = 0
    min_api_level = 28
    dtypes = FS
    constraints = "constant perm; rank <= 4"
    driver_notes = (NO_FLOAT16_ARMNN,)

    def check(self, c: CheckContext) -> None:
        c.require_operation(OperationType.TRANSPOSE)
        if not c.require_inputs(2):
            return
        x = check_data_movement(c, BASIC, bitcast=True)
        perm = require_const_ints(c, 1, "perm")
        if x is not None and perm is not None and sorted(p % max(x.rank, 1) for p in perm) != list(range(x.rank)):
            c.refuse(Code.OPERAND_VALUE, f"perm {perm} is not a permutation of {x.rank} dimensions")

    def lower(self, c: LowerContext) -> None:
        rank = c.input(0).rank
        perm = [p % rank for p in const_ints(c, c.input(1))]
        c.emit(OperationType.TRANSPOSE, [c.input_operand(0), c.i32_vector(perm)], [c.output_operand()])


@lowering_rule(BuiltinOperator.REVERSE_V2)
class ReverseV2(Rule):
    """TFLite REVERSE_V2(input, axis) -> NNAPI REVERSE(input, axis TENSOR_INT32 [1]) per reversed axis from
    feature level 7 (API 34). Below (from API 29, beyond the delegate): GATHER(input, axis, [n-1..0]) per
    axis, exact since reversing only reorders elements. Several axes chain one op per axis."""

    int8_shiftable = True
    nnapi_ops = (OperationType.REVERSE, OperationType.GATHER, OperationType.CAST)
    stored_values_from = 0
    min_api_level = 29
    dtypes = FSI
    constraints = "constant axes; rank <= 4; GATHER below API 34"
    driver_notes = (FEATURE_LEVEL_6_ARMNN,)

    def check(self, c: CheckContext) -> None:
        c.require_operation(OperationType.GATHER, "REVERSE_V2 (GATHER below API 34)")
        if not c.require_inputs(2):
            return
        x = check_data_movement(c, BASIC_I32, bitcast=True)
        axes = require_const_ints(c, 1, "axis")
        if x is not None and axes is not None and (not axes or any(not -x.rank <= a < x.rank for a in axes)):
            c.refuse(Code.OPERAND_VALUE, f"axis {axes} must name axes of a rank-{x.rank} tensor")

    def lower(self, c: LowerContext) -> None:
        x = c.input(0)
        axes = sorted({a % x.rank for a in const_ints(c, c.input(1))})
        if c.api_level < 34:
            gather_chain(c, [(a, np.arange(x.shape[a] - 1, -1, -1, dtype=np.int32)) for a in axes])
            return
        src = c.input_operand(0)
        for k, a in enumerate(axes):
            dst = c.output_operand() if k == len(axes) - 1 else c.temp_like(src)
            c.emit(OperationType.REVERSE, [src, c.i32_vector([a])], [dst])
            src = dst
