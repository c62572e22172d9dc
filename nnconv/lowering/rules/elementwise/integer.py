"""Integer-style division and sign (beyond the delegate): FLOOR_DIV, FLOOR_MOD, SIGN, ROUND."""

from __future__ import annotations

import numpy as np

from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.lowering.registry import Rule, lowering_rule
from nnconv.lowering.rules._arith import F32, I32, I8, check_common, scalar_tensor
from nnconv.nnapi.enums import FuseCode, OperandType, OperationType
from nnconv.rewrite.folds import arithmetic as arithmetic_folds
from nnconv.tflite.schema_enums import BuiltinOperator


# -- integer-style division and sign (beyond the delegate) -------------------------------------------
@lowering_rule(BuiltinOperator.FLOOR_DIV)
class FloorDiv(Rule):
    """TFLite FLOOR_DIV(x, y) = floor(x / y).

    float32 (API 28): FLOOR(DIV(x, y)), exact: TFLite computes `std::floor(x / y)` the same way.
    int32 (API 30): NNAPI's int32 DIV, which already floors (TFLite's int32 kernel computes the floor of
    the exact quotient); a zero divisor makes TFLite fail and NNAPI return 0."""

    fold = arithmetic_folds.floor_div
    nnapi_ops = (OperationType.DIV, OperationType.FLOOR)
    min_api_level = 28
    dtypes = ("float32", "int32")
    constraints = "rank <= 4; float32 API 28, int32 API 30"
    beyond_delegate = True

    def check(self, c: CheckContext) -> None:
        if not check_common(c, 2, (F32, I32)):
            return
        if c.input(0).type == F32:
            c.require_operation((OperationType.DIV, OperationType.FLOOR), "float32 FLOOR_DIV (DIV)")
        else:
            c.require_signature(OperationType.DIV, OperandType.TENSOR_INT32, "int32 FLOOR_DIV (int32 DIV)")

    def lower(self, c: LowerContext) -> None:
        x, y, out = c.input_operand(0), c.input_operand(1), c.output_operand(0)
        none = c.i32(FuseCode.NONE)
        if c.input(0).type == I32:
            c.emit(OperationType.DIV, [x, y, none], [out])
            return
        q = c.temp_like(out)
        c.emit(OperationType.DIV, [x, y, none], [q])
        c.emit(OperationType.FLOOR, [q], [out])


@lowering_rule(BuiltinOperator.FLOOR_MOD)
class FloorMod(Rule):
    """TFLite FLOOR_MOD(x, y): the remainder with the divisor's sign.

    int32 (API 30): SUB(x, MUL(DIV(x, y), y)) with NNAPI's flooring int32 DIV, exactly TFLite's result.

    float32 (API 29): NNAPI has no fmod. With n = FLOOR(x / y), the remainder x - n * y is computed without
    rounding the product: y splits exactly into y_hi + y_lo of 12 significant bits each (Veltkamp:
    c = 4097 * y, y_hi = c - (c - y), y_lo = y - y_hi), so for |n| < 2^12 both n * y_hi and n * y_lo are
    exact, d = x - n * y_hi is exact (Sterbenz: the two lie within a factor 2), and r = d - n * y_lo rounds
    once, keeping the sign of the true remainder. TFLite's sign rule then applies as in its kernel: where r
    and y have opposite signs (r * y < 0) r += y (which may round to y itself, as TFLite's does), and
    where else |r| >= |y| (the rounded quotient fell on the other side of an integer) r -= y.
    Tolerance: for |x / y| < 4096 the result is TFLite's exact fmod within one rounding (ulp of the result); beyond, n * y_hi rounds and the error grows to |x| * 2^-24,
    still in [0, |y|) with y's sign (measured over random and quantized-grid inputs with |x / y| <= 4000: at
    most 1e-7 * |y| from TFLite). Near a multiple of y both sides agree on which side of the
    discontinuity the remainder falls (the case a quantized model hits, its values lying on grids). The
    int8 form TensorFlow emits for a float model is DEQUANTIZE -> float FLOOR_MOD -> QUANTIZE, each op
    lowered on its own.

    int8 FLOOR_MOD itself (API 29): TFLite's kernel ignores the quantization and takes the integer floor
    modulo of the stored values (its remainder lies between 0 and y, so it fits int8), which the output
    stores as they are. The stored values reach float32 exactly through a same-type CAST to scale 1 (which
    carries stored values; zero point 128 where int8 travels as uint8 + 128 below API 30) and DEQUANTIZE;
    there, with |x| <= 128 and 1 <= |y| <= 128, x / y is an integer or lies at least 1/128 from one while
    its rounding error stays below 128 * 2^-24, so FLOOR(x / y) is the exact floor quotient, and
    x - n * y is exact: the float form is exact. QUANTIZE to scale 1 and a same-type CAST into the output
    store the remainders (a zero divisor makes TFLite's kernel fail; NNAPI's result there is unspecified)."""

    fold = arithmetic_folds.floor_mod
    nnapi_ops = (OperationType.DIV, OperationType.MUL, OperationType.SUB, OperationType.FLOOR, OperationType.ADD,
                 OperationType.ABS, OperationType.LESS, OperationType.GREATER_EQUAL, OperationType.SELECT,
                 OperationType.CAST, OperationType.DEQUANTIZE, OperationType.QUANTIZE)
    min_api_level = 29
    dtypes = ("float32", "int32", "int8 (stored values, as TFLite)")
    constraints = ("rank <= 4; float32 API 29 (one rounding for |x / y| < 4096), int32 API 30 (exact), int8 API 29 "
                   "(exact)")
    beyond_delegate = True

    def check(self, c: CheckContext) -> None:
        if not check_common(c, 2, (F32, I32, I8), int8_shiftable=True):
            return
        if c.input(0).type == I32:
            c.require_signature((OperationType.DIV, OperationType.MUL, OperationType.SUB), OperandType.TENSOR_INT32,
                                "int32 FLOOR_MOD (int32 DIV / MUL / SUB)")
        elif c.input(0).type == I8:
            c.require_operation((OperationType.CAST, OperationType.DEQUANTIZE, OperationType.QUANTIZE),
                                "int8 FLOOR_MOD (stored values through float: CAST, DEQUANTIZE, QUANTIZE)")
        else:
            c.require_operation((OperationType.FLOOR, OperationType.DIV, OperationType.LESS, OperationType.SELECT),
                                "float32 FLOOR_MOD (FLOOR / DIV, sign fixed with LESS / SELECT)")

    def lower(self, c: LowerContext) -> None:
        x, y, out = c.input_operand(0), c.input_operand(1), c.output_operand(0)
        none = c.i32(FuseCode.NONE)
        if c.input(0).type == I8:
            _lower_int8_floor_mod(c, x, y, out)
            return
        if c.input(0).type == I32:
            q, p = c.temp_like(out), c.temp_like(out)
            c.emit(OperationType.DIV, [x, y, none], [q])
            c.emit(OperationType.MUL, [q, y, none], [p])
            c.emit(OperationType.SUB, [x, p, none], [out])
            return
        dims = list(c.info(out).dimensions)
        q, n, hi_prod, d, lo_prod, r, ry, r_plus, r1, r_minus, abs_r = (c.temp_like(out) for _ in range(11))
        scaled, gap, y_hi, y_lo, abs_y = (c.temp_like(y) for _ in range(5))
        opposite, too_big = c.temp(OperandType.TENSOR_BOOL8, dims), c.temp(OperandType.TENSOR_BOOL8, dims)
        c.emit(OperationType.DIV, [x, y, none], [q])
        c.emit(OperationType.FLOOR, [q], [n])
        # y = y_hi + y_lo exactly, 12 significant bits each (Veltkamp's split with 2^12 + 1)
        c.emit(OperationType.MUL, [y, scalar_tensor(c, 4097.0), none], [scaled])
        c.emit(OperationType.SUB, [scaled, y, none], [gap])
        c.emit(OperationType.SUB, [scaled, gap, none], [y_hi])
        c.emit(OperationType.SUB, [y, y_hi, none], [y_lo])
        # r = (x - n * y_hi) - n * y_lo: exact products, an exact first difference, one rounding
        c.emit(OperationType.MUL, [n, y_hi, none], [hi_prod])
        c.emit(OperationType.SUB, [x, hi_prod, none], [d])
        c.emit(OperationType.MUL, [n, y_lo, none], [lo_prod])
        c.emit(OperationType.SUB, [d, lo_prod, none], [r])
        # TFLite's sign rule: a remainder of the other sign than y moves up by one divisor (r + y may round
        # to y itself, which TFLite returns too); one of y's sign but a whole divisor or more from zero (the
        # rounded quotient fell on the other side of an integer) moves down by one
        c.emit(OperationType.MUL, [r, y, none], [ry])
        c.emit(OperationType.LESS, [ry, scalar_tensor(c, 0.0)], [opposite])
        c.emit(OperationType.ABS, [r], [abs_r])
        c.emit(OperationType.ABS, [y], [abs_y])
        c.emit(OperationType.GREATER_EQUAL, [abs_r, abs_y], [too_big])
        c.emit(OperationType.SUB, [r, y, none], [r_minus])
        c.emit(OperationType.SELECT, [too_big, r_minus, r], [r1])
        c.emit(OperationType.ADD, [r, y, none], [r_plus])
        c.emit(OperationType.SELECT, [opposite, r_plus, r1], [out])


def _unit_scale_like(c: LowerContext, operand: int) -> int:
    """A temporary of `operand`'s int8 type and shape at scale 1, whose real values are the stored int8
    values (zero point 128 where int8 travels as uint8 + 128, below API 30)."""
    od = c.info(operand)
    zero = 128 if od.type is OperandType.TENSOR_QUANT8_ASYMM else 0
    return c.temp(od.type, od.dimensions, scale=1.0, zero_point=zero)


def _stored_as_float(c: LowerContext, operand: int) -> int:
    """float32 holding an int8 operand's stored values: a same-type CAST to scale 1, DEQUANTIZE."""
    unit = _unit_scale_like(c, operand)
    c.emit(OperationType.CAST, [operand], [unit])
    f = c.temp(OperandType.TENSOR_FLOAT32, c.info(operand).dimensions)
    c.emit(OperationType.DEQUANTIZE, [unit], [f])
    return f


def _lower_int8_floor_mod(c: LowerContext, x: int, y: int, out: int) -> None:
    """x - FLOOR(x / y) * y on the stored values, in float32 (exact: FloorMod's docstring)."""
    none = c.i32(FuseCode.NONE)
    xf, yf = _stored_as_float(c, x), _stored_as_float(c, y)
    q, n, p, r = (c.temp(OperandType.TENSOR_FLOAT32, c.info(out).dimensions) for _ in range(4))
    c.emit(OperationType.DIV, [xf, yf, none], [q])
    c.emit(OperationType.FLOOR, [q], [n])
    c.emit(OperationType.MUL, [n, yf, none], [p])
    c.emit(OperationType.SUB, [xf, p, none], [r])
    unit = _unit_scale_like(c, out)
    c.emit(OperationType.QUANTIZE, [r], [unit])
    c.emit(OperationType.CAST, [unit], [out])


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
            c.require_operation((OperationType.LESS, OperationType.GREATER, OperationType.SELECT),
                                "SIGN (comparisons and SELECT)")

    def lower(self, c: LowerContext) -> None:
        x, out = c.input_operand(0), c.output_operand(0)
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
            c.require_operation((OperationType.ABS, OperationType.NEG, OperationType.LESS, OperationType.SELECT),
                                "ROUND (ABS / NEG / LESS / SELECT)")

    def lower(self, c: LowerContext) -> None:
        x, out = c.input_operand(0), c.output_operand(0)
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
