"""Integer-style division and sign (beyond the delegate): FLOOR_DIV, FLOOR_MOD, SIGN, ROUND."""

from __future__ import annotations

import numpy as np

from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.lowering.registry import Rule, lowering_rule
from nnconv.lowering.rules._arith import F32, I32, check_common, scalar_tensor
from nnconv.nnapi.enums import FuseCode, OperandType, OperationType
from nnconv.tflite.schema_enums import BuiltinOperator


# -- integer-style division and sign (beyond the delegate) -------------------------------------------
@lowering_rule(BuiltinOperator.FLOOR_DIV)
class FloorDiv(Rule):
    """TFLite FLOOR_DIV(x, y) = floor(x / y).

    float32 (API 28): FLOOR(DIV(x, y)), exact: TFLite computes `std::floor(x / y)` the same way.
    int32 (API 30): NNAPI's int32 DIV, which already floors (TFLite's int32 kernel computes the floor of
    the exact quotient); a zero divisor makes TFLite fail and NNAPI return 0."""

    nnapi_ops = (OperationType.DIV, OperationType.FLOOR)
    min_api_level = 28
    dtypes = ("float32", "int32")
    constraints = "rank <= 4; float32 API 28, int32 API 30"
    beyond_delegate = True

    def check(self, c: CheckContext) -> None:
        if not check_common(c, 2, (F32, I32)):
            return
        if c.input(0).type == F32:
            c.require_api(28, "float32 FLOOR_DIV (DIV)")
        else:
            c.require_api(30, "int32 FLOOR_DIV (int32 DIV)")

    def lower(self, c: LowerContext) -> None:
        x, y, out = c.in_(0), c.in_(1), c.out(0)
        none = c.i32(FuseCode.NONE)
        if c.input(0).type == I32:
            c.emit(OperationType.DIV, [x, y, none], [out])
            return
        q = c.temp_like(out)
        c.emit(OperationType.DIV, [x, y, none], [q])
        c.emit(OperationType.FLOOR, [q], [out])


@lowering_rule(BuiltinOperator.FLOOR_MOD)
class FloorMod(Rule):
    """TFLite FLOOR_MOD(x, y) for int32 (API 30): SUB(x, MUL(DIV(x, y), y)) with NNAPI's flooring int32 DIV,
    exactly TFLite's result (x - floor(x / y) * y, the remainder with the divisor's sign). The float form is
    refused: x - floor(x / y) * y rounds where TFLite's fmod does not."""

    nnapi_ops = (OperationType.DIV, OperationType.MUL, OperationType.SUB)
    min_api_level = 30
    dtypes = ("int32",)
    constraints = "int32 only; rank <= 4"
    beyond_delegate = True

    def check(self, c: CheckContext) -> None:
        if check_common(c, 2, (I32,)):
            c.require_api(30, "int32 FLOOR_MOD (int32 DIV / MUL / SUB)")

    def lower(self, c: LowerContext) -> None:
        x, y, out = c.in_(0), c.in_(1), c.out(0)
        none = c.i32(FuseCode.NONE)
        q, p = c.temp_like(out), c.temp_like(out)
        c.emit(OperationType.DIV, [x, y, none], [q])
        c.emit(OperationType.MUL, [q, y, none], [p])
        c.emit(OperationType.SUB, [x, p, none], [out])


@lowering_rule(BuiltinOperator.SIGN)
class Sign(Rule):
    """TFLite SIGN(x) = (x > 0) - (x < 0) for float32 / int32 (API 29), as
    SELECT(GREATER(x, 0), 1, SELECT(LESS(x, 0), -1, 0)) with constants of x's shape: exact, NaN gives 0
    like TFLite."""

    nnapi_ops = (OperationType.GREATER, OperationType.LESS, OperationType.SELECT)
    min_api_level = 29
    dtypes = ("float32", "int32")
    constraints = "float32 / int32"
    beyond_delegate = True

    def check(self, c: CheckContext) -> None:
        if check_common(c, 1, (F32, I32), max_rank=None):
            c.require_api(29, "SIGN (comparisons and SELECT)")

    def lower(self, c: LowerContext) -> None:
        x, out = c.in_(0), c.out(0)
        od = c.info(out)
        dims = tuple(od.dimensions)

        def full(v: float) -> int:
            return c.constant(od.type, np.full(dims, v, dtype=od.dtype))
        zero = c.constant(od.type, np.zeros(1, od.dtype))
        pos = c.temp(OperandType.TENSOR_BOOL8, list(dims))
        neg = c.temp(OperandType.TENSOR_BOOL8, list(dims))
        c.emit(OperationType.GREATER, [x, zero], [pos])
        c.emit(OperationType.LESS, [x, zero], [neg])
        low = c.temp_like(out)
        c.emit(OperationType.SELECT, [neg, full(-1), full(0)], [low])
        c.emit(OperationType.SELECT, [pos, full(1), low], [out])


@lowering_rule(BuiltinOperator.ROUND)
class Round(Rule):
    """TFLite ROUND(x): to nearest, ties to even (float32), API 29, exactly:
    with a = ABS(x), r = SUB(ADD(a, 2^23), 2^23): for a < 2^23 the sum lies in [2^23, 2^24), where float32's
    spacing is 1, so the IEEE addition itself rounds a to an integer with ties to even, and the subtraction
    is exact; the sign comes back with SELECT(LESS(x, 0), NEG(r), r). From 2^23 every float32 is an
    integer, so y = SELECT(LESS(a, 2^23), signed r, x), which also keeps NaN and inf."""

    nnapi_ops = (OperationType.ABS, OperationType.ADD, OperationType.SUB, OperationType.NEG, OperationType.LESS,
                 OperationType.SELECT)
    min_api_level = 29
    dtypes = ("float32",)
    constraints = "float32; rank <= 4"
    beyond_delegate = True

    TWO_23 = 2.0 ** 23

    def check(self, c: CheckContext) -> None:
        if check_common(c, 1, (F32,)):
            c.require_api(29, "ROUND (ABS / NEG / LESS / SELECT)")

    def lower(self, c: LowerContext) -> None:
        x, out = c.in_(0), c.out(0)
        dims = list(c.info(out).dimensions)
        none = c.i32(FuseCode.NONE)
        magic = scalar_tensor(c, self.TWO_23)
        a, shifted, r, neg_r, signed = (c.temp_like(out) for _ in range(5))
        negative, small = c.temp(OperandType.TENSOR_BOOL8, dims), c.temp(OperandType.TENSOR_BOOL8, dims)
        c.emit(OperationType.ABS, [x], [a])
        c.emit(OperationType.ADD, [a, magic, none], [shifted])
        c.emit(OperationType.SUB, [shifted, magic, none], [r])
        c.emit(OperationType.NEG, [r], [neg_r])
        c.emit(OperationType.LESS, [x, scalar_tensor(c, 0.0)], [negative])
        c.emit(OperationType.SELECT, [negative, neg_r, r], [signed])
        c.emit(OperationType.LESS, [a, magic], [small])
        c.emit(OperationType.SELECT, [small, signed, x], [out])
