"""Comparisons (EQUAL, NOT_EQUAL, LESS, LESS_EQUAL, GREATER, GREATER_EQUAL), logical ops (LOGICAL_AND,
LOGICAL_OR, LOGICAL_NOT), SELECT and SELECT_V2. All need API 29 (NNAPI feature level 3).

Comparisons broadcast like TFLite. Quantized inputs may carry different scales: NNAPI compares real values
(float32 `(q - zp) * scale`), TFLite rescales both to a common integer scale; the two agree except for
real values closer than float32 resolution.

NNAPI SELECT does not broadcast, so SELECT_V2 first broadcasts each operand whose shape differs from the
output's with an exact identity operation against a constant covering the missing extents:
bool: LOGICAL_OR(x, false); float32: ADD(x, -0.0) (x + -0.0 == x for every x, signed zeros and NaN
included); quantized: ADD(x, zero point) with x's own quantization on all three operands (the reference
ADD is then exact: both multipliers are 1/2 and the output multiplier 2); int32: MAXIMUM(x, INT32_MIN).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from nnconv.lowering.common import check_int8
from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.driver_support import MISSING_FROM_ARMNN
from nnconv.lowering.registry import Rule, family_rule, lowering_rule
from nnconv.lowering.rules._arith import (BOOL, F32, I32, I8, U8, broadcast_shape, check_common, is_quant, nnapi_dims,
                                          same_quant)
from nnconv.nnapi.enums import FuseCode, OperandType, OperationType
from nnconv.rewrite.folds import arithmetic as arithmetic_folds
from nnconv.tflite.schema_enums import BuiltinOperator

INT32_MIN = -(1 << 31)


class _Compare(Rule):
    """TFLite <OP>(x, y) -> NNAPI <OP>(x, y), output TENSOR_BOOL8 (API 29)."""

    int8_shiftable = True
    nnapi_op: ClassVar[OperationType]
    min_api_level = 29
    dtypes = ("float32", "uint8", "int8", "int32", "bool")
    constraints = "inputs of one type"

    def check(self, c: CheckContext) -> None:
        if not check_common(c, 2, (F32, U8, I8, I32, BOOL), max_rank=None, same_type=False):
            return
        if c.input(0).type != c.input(1).type:
            c.refuse(Code.DTYPE, "both inputs must have the same element type")
        c.require_dtype(c.output(0), (BOOL,), "output")
        c.require_operation(self.nnapi_op, self.op.name)

    def lower(self, c: LowerContext) -> None:
        c.emit(self.nnapi_op, [c.input_operand(0), c.input_operand(1)], [c.output_operand(0)])


# The comparisons: one NNAPI operation of the same name each, and the constant fold of each.
COMPARISONS = tuple(family_rule(_Compare, op, nnapi_op=OperationType[op.name], fold=fold) for op, fold in (
    (BuiltinOperator.EQUAL, arithmetic_folds.equal), (BuiltinOperator.NOT_EQUAL, arithmetic_folds.not_equal),
    (BuiltinOperator.LESS, arithmetic_folds.less), (BuiltinOperator.LESS_EQUAL, arithmetic_folds.less_equal),
    (BuiltinOperator.GREATER, arithmetic_folds.greater),
    (BuiltinOperator.GREATER_EQUAL, arithmetic_folds.greater_equal)))


class _Logical(Rule):
    """TFLite <OP> on bool tensors -> NNAPI <OP> (API 29), broadcasting alike."""

    nnapi_op: ClassVar[OperationType]
    arity: ClassVar[int] = 2
    min_api_level = 29
    dtypes = ("bool",)
    constraints = "bool only"

    def check(self, c: CheckContext) -> None:
        if check_common(c, self.arity, (BOOL,), max_rank=None):
            c.require_operation(self.nnapi_op, self.op.name)

    def lower(self, c: LowerContext) -> None:
        c.emit(self.nnapi_op, [c.input_operand(k) for k in range(self.arity)], [c.output_operand(0)])


LogicalAnd = family_rule(_Logical, BuiltinOperator.LOGICAL_AND, nnapi_op=OperationType.LOGICAL_AND,
                         fold=arithmetic_folds.logical_and)


LogicalOr = family_rule(_Logical, BuiltinOperator.LOGICAL_OR, nnapi_op=OperationType.LOGICAL_OR,
                        fold=arithmetic_folds.logical_or)


LogicalNot = family_rule(_Logical, BuiltinOperator.LOGICAL_NOT, nnapi_op=OperationType.LOGICAL_NOT,
                         fold=arithmetic_folds.logical_not, arity=1)


def broadcast_to(c: LowerContext, operand: int, dims: tuple[int, ...], target: tuple[int, ...]) -> int:
    """`operand` (of shape `dims`) broadcast to `target` by an exact identity op (module docstring). The
    constant has the target extent only on the axes `operand` lacks, 1 elsewhere."""
    if tuple(dims) == tuple(target):
        return operand
    od = c.info(operand)
    aligned = (1,) * (len(target) - len(dims)) + tuple(dims)
    const_dims = tuple(t if a == 1 else 1 for a, t in zip(aligned, target))
    out = c.temp(od.type, list(target), od.scale, od.zero_point)
    if od.type is OperandType.TENSOR_BOOL8:
        c.emit(OperationType.LOGICAL_OR, [operand, c.constant(od.type, np.zeros(const_dims, np.bool_))], [out])
    elif od.type is OperandType.TENSOR_INT32:
        lowest = c.constant(od.type, np.full(const_dims, INT32_MIN, np.int32))
        c.emit(OperationType.MAXIMUM, [operand, lowest], [out])
    elif od.type.is_quantized:
        zeros = c.constant(od.type, np.full(const_dims, od.zero_point, od.dtype), scale=od.scale,
                           zero_point=od.zero_point)
        c.emit(OperationType.ADD, [operand, zeros, c.i32(FuseCode.NONE)], [out])
    else:
        zeros = c.constant(od.type, np.full(const_dims, -0.0, np.float32))
        c.emit(OperationType.ADD, [operand, zeros, c.i32(FuseCode.NONE)], [out])
    return out


class _Select(Rule):
    """Shared checks of SELECT / SELECT_V2: bool condition, two values of one type (float32, uint8, int8,
    int32); quantized values and output share one quantization (TFLite copies stored values, NNAPI would
    requantize)."""

    min_api_level = 29
    dtypes = ("bool", "float32", "uint8", "int8", "int32")

    def check_values(self, c: CheckContext) -> bool:
        """Records the shared problems; False when shape checks would be meaningless."""
        if not c.require_inputs(3):
            return False
        cond, x, y, out = c.input(0), c.input(1), c.input(2), c.output(0)
        ok = c.require_dtype(cond, (BOOL,), "condition")
        for t, what in ((x, "input 1"), (y, "input 2"), (out, "output")):
            ok &= c.require_dtype(t, (F32, U8, I8, I32), what)
            if t is not None and t.type in (U8, I8) and t.quantization.is_per_channel:
                c.refuse(Code.QUANTIZATION, f"{what} is quantized per channel")
                ok = False
        if ok and not (x.type == y.type == out.type):
            c.refuse(Code.DTYPE, "both values and the output must share one element type")
            ok = False
        if ok and is_quant(x) and not same_quant(x, y, out):
            c.refuse(Code.QUANTIZATION, f"quantized {self.op.name} needs one scale and zero point for both "
                     "values and the output")
        c.require_static_shapes()
        check_int8(c, shiftable=True)  # SELECT's int8 values are carried as uint8 + 128 below API 30
        c.require_operation(OperationType.SELECT, self.op.name)
        return ok


@lowering_rule(BuiltinOperator.SELECT)
class Select(_Select):
    """TFLite SELECT(condition, x, y) -> NNAPI SELECT(condition, x, y) (API 29). The condition must have
    x's shape: TFLite's rank-1 condition selecting whole rows has no NNAPI form."""

    int8_shiftable = True
    fold = arithmetic_folds.select
    nnapi_ops = (OperationType.SELECT,)
    constraints = "condition with the values' shape"
    driver_notes = (MISSING_FROM_ARMNN,)

    def check(self, c: CheckContext) -> None:
        if not self.check_values(c):
            return
        cond, x, y = c.input(0), c.input(1), c.input(2)
        if tuple(cond.shape) != tuple(x.shape) or tuple(x.shape) != tuple(y.shape):
            c.refuse(Code.OPERAND_VALUE, f"condition {list(cond.shape)} and values {list(x.shape)}, "
                     f"{list(y.shape)} must have one shape (use SELECT_V2 semantics for broadcasting)")

    def lower(self, c: LowerContext) -> None:
        c.emit(OperationType.SELECT, [c.input_operand(0), c.input_operand(1), c.input_operand(2)],
               [c.output_operand(0)])


@lowering_rule(BuiltinOperator.SELECT_V2)
class SelectV2(_Select):
    """TFLite SELECT_V2(condition, x, y) with broadcasting -> NNAPI SELECT (API 29) after broadcasting each
    operand whose shape differs from the output's (see the module docstring for the exact identities)."""

    fold = arithmetic_folds.select
    nnapi_ops = (OperationType.SELECT, OperationType.LOGICAL_OR, OperationType.ADD, OperationType.MAXIMUM)
    constraints = "rank <= 4 when operands need broadcasting"
    beyond_delegate = True
    driver_notes = (MISSING_FROM_ARMNN,)

    def check(self, c: CheckContext) -> None:
        if not self.check_values(c):
            return
        shapes = [nnapi_dims(t) for t in (c.input(0), c.input(1), c.input(2))]
        try:
            target = broadcast_shape(*shapes)
        except ValueError:
            c.refuse(Code.OPERAND_VALUE, f"shapes {[list(s) for s in shapes]} do not broadcast")
            return
        if any(s != target for s in shapes):
            for t, what in ((c.input(1), "input 1"), (c.input(2), "input 2"), (c.output(0), "output")):
                c.require_rank(t, 4, 0, what)

    def lower(self, c: LowerContext) -> None:
        tensors = (c.input(0), c.input(1), c.input(2))
        target = broadcast_shape(*[nnapi_dims(t) for t in tensors])
        args = [broadcast_to(c, c.input_operand(k), nnapi_dims(t), target) for k, t in enumerate(tensors)]
        c.emit(OperationType.SELECT, args, [c.output_operand(0)])
