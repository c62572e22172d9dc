"""The float unary functions: ABS, EXP, LOG, RSQRT, SQRT, SIN, COS, NEG, FLOOR, CEIL."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.lowering.registry import Rule, lowering_rule
from nnconv.lowering.rules._arith import (F32, I32, I8, FloatOnlyBeyondDelegate, check_common, is_quant, negate,
                                          scalar_tensor, via_float)
from nnconv.nnapi.enums import FuseCode, OperandType, OperationType
from nnconv.rewrite.folds import arithmetic as arithmetic_folds
from nnconv.tflite.schema_enums import BuiltinOperator


# -- unary float functions -------------------------------------------------------------------------
class _UnaryFloat(Rule):
    """TFLite OP(x) -> NNAPI OP(x), float32 (API 29). TFLite's int8 OP (a lookup table) becomes DEQUANTIZE,
    OP, QUANTIZE (`via_float`, API 29; int8 travels as uint8 + 128 below API 30)."""

    nnapi_op: ClassVar[OperationType]
    min_api_level = 29
    quant_api: ClassVar[int | None] = 29  # None: no quantized form
    dtypes = ("float32", "int8")
    constraints = "float32; int8 through float"
    max_rank: ClassVar[int | None] = None

    def check(self, c: CheckContext) -> None:
        allowed = (F32, I8) if self.quant_api is not None else (F32,)
        quant = is_quant(c.input(0))
        # DEQUANTIZE / QUANTIZE take rank <= 4; their int8 operands may travel as uint8 + 128.
        if not check_common(c, 1, allowed, max_rank=4 if quant else self.max_rank, int8_shiftable=True):
            return
        # hand-written: per rule (min_api_level, quant_api), the levels its table of ops shows
        c.require_api(self.min_api_level, self.op.name)
        if is_quant(c.input(0)):
            c.require_api(self.quant_api, f"int8 {self.op.name} (DEQUANTIZE / QUANTIZE)")

    def emit_float(self, c: LowerContext, x: int, out: int) -> None:
        c.emit(self.nnapi_op, [x], [out])

    def lower(self, c: LowerContext) -> None:
        if is_quant(c.input(0)):
            via_float(c, c.input_operand(0), c.output_operand(0), lambda f, g: self.emit_float(c, f, g))
        else:
            self.emit_float(c, c.input_operand(0), c.output_operand(0))


def _unary(op: BuiltinOperator, nn_op: OperationType, doc: str, quant: bool = True) -> type[Rule]:
    attrs = {"__doc__": doc, "nnapi_op": nn_op, "__module__": __name__,
             "nnapi_ops": (nn_op, OperationType.DEQUANTIZE, OperationType.QUANTIZE) if quant else (nn_op,)}
    if not quant:
        attrs.update(quant_api=None, dtypes=("float32",), constraints="float32 only")
    cls = type(op.name.title().replace("_", ""), (_UnaryFloat,), attrs)
    return lowering_rule(op)(cls)


Exp = _unary(BuiltinOperator.EXP, OperationType.EXP, "TFLite EXP(x) -> NNAPI EXP(x), float32 (int8 through "
             "float), API 29.")
Log = _unary(BuiltinOperator.LOG, OperationType.LOG, "TFLite LOG(x) -> NNAPI LOG(x), float32 (int8 through "
             "float), API 29.")
Sqrt = _unary(BuiltinOperator.SQRT, OperationType.SQRT, "TFLite SQRT(x) -> NNAPI SQRT(x), float32 (int8 "
              "through float), API 29.")
Rsqrt = _unary(BuiltinOperator.RSQRT, OperationType.RSQRT, "TFLite RSQRT(x) -> NNAPI RSQRT(x), float32 (int8 "
               "through float), API 29.")
Sin = _unary(BuiltinOperator.SIN, OperationType.SIN, "TFLite SIN(x) -> NNAPI SIN(x), float32, API 29.",
             quant=False)


@lowering_rule(BuiltinOperator.FLOOR)
class Floor(_UnaryFloat):
    """TFLite FLOOR(x) -> NNAPI FLOOR(x), float32 from API 27 (rank <= 4)."""

    nnapi_op = OperationType.FLOOR
    min_api_level = 27
    quant_api = None
    max_rank = 4
    dtypes = ("float32",)
    constraints = "float32; rank <= 4"


@lowering_rule(BuiltinOperator.COS)
class Cos(_UnaryFloat):
    """TFLite COS(x) -> NNAPI SUB(pi/2, x) then SIN (API 29), the delegate's identity cos(x) = sin(pi/2 - x).
    Not bit-exact: pi/2 is rounded to float32 and pi/2 - x rounds once (absolute error ~1e-7 per unit of x)."""

    nnapi_ops = (OperationType.SUB, OperationType.SIN)
    quant_api = None
    dtypes = ("float32",)
    constraints = "float32 only"

    def lower(self, c: LowerContext) -> None:
        x, out = c.input_operand(0), c.output_operand(0)
        t = c.temp_like(out)
        c.emit(OperationType.SUB, [scalar_tensor(c, float(np.float32(np.pi / 2))), x, c.i32(FuseCode.NONE)], [t])
        c.emit(OperationType.SIN, [t], [out])


@lowering_rule(BuiltinOperator.NEG)
class Neg(Rule):
    """TFLite NEG(x) -> NNAPI NEG(x) (API 29; float32 or int32). Below API 29, float32 NEG is
    MUL(x, [-1]) (exact: multiplying by -1 only flips the sign bit)."""

    fold = arithmetic_folds.neg
    nnapi_ops = (OperationType.NEG, OperationType.MUL)
    dtypes = ("float32", "int32")
    constraints = "int32 needs API 29"

    def check(self, c: CheckContext) -> None:
        if check_common(c, 1, (F32, I32), max_rank=None) and c.input(0).type == I32:
            c.require_signature(OperationType.NEG, OperandType.TENSOR_INT32, "int32 NEG")
        if c.api_level < 29 and c.input(0) is not None:
            c.require_rank(c.input(0), 4, 0)  # the MUL form

    def lower(self, c: LowerContext) -> None:
        x, out = c.input_operand(0), c.output_operand(0)
        if c.api_level >= 29:
            c.emit(OperationType.NEG, [x], [out])
        else:
            c.emit(OperationType.MUL, [x, scalar_tensor(c, -1.0), c.i32(FuseCode.NONE)], [out])


@lowering_rule(BuiltinOperator.ABS)
class Abs(Rule):
    """TFLite ABS(x) -> NNAPI ABS(x) (API 29 float32, API 30 int32; int8 through float: DEQUANTIZE, ABS,
    QUANTIZE at API 29, within 1 LSB of TFLite's requantizing int8 kernel).

    Below API 29, float32 ABS is ADD(RELU(x), RELU(MUL(x, -1))): exact, since for every x one of the two
    RELUs is 0 and the other is |x|."""

    fold = arithmetic_folds.abs_
    nnapi_ops = (OperationType.ABS, OperationType.RELU, OperationType.MUL, OperationType.ADD,
                 OperationType.DEQUANTIZE, OperationType.QUANTIZE)
    dtypes = ("float32", "int8", "int32")
    constraints = "rank <= 4 below API 29; int8 needs API 29, int32 API 30"

    def check(self, c: CheckContext) -> None:
        quant = is_quant(c.input(0))
        if not check_common(c, 1, (F32, I8, I32), max_rank=4 if quant else None, int8_shiftable=True):
            return
        if c.input(0).type == I32:
            c.require_signature(OperationType.ABS, OperandType.TENSOR_INT32, "int32 ABS")
        elif quant:
            c.require_operation((OperationType.DEQUANTIZE, OperationType.ABS, OperationType.QUANTIZE),
                                "int8 ABS (DEQUANTIZE / ABS / QUANTIZE)")
        elif c.api_level < 29:
            c.require_rank(c.input(0), 4, 0)

    def lower(self, c: LowerContext) -> None:
        x, out = c.input_operand(0), c.output_operand(0)
        if is_quant(c.input(0)):
            via_float(c, x, out, lambda f, g: c.emit(OperationType.ABS, [f], [g]))
            return
        if c.api_level >= 29:
            c.emit(OperationType.ABS, [x], [out])
            return
        pos, neg = c.temp_like(out), c.temp_like(out)
        c.emit(OperationType.RELU, [x], [pos])
        c.emit(OperationType.RELU, [negate(c, x)], [neg])
        c.emit(OperationType.ADD, [pos, neg, c.i32(FuseCode.NONE)], [out])


@lowering_rule(BuiltinOperator.CEIL)
class Ceil(FloatOnlyBeyondDelegate):
    """TFLite CEIL(x) -> -FLOOR(-x): NEG / FLOOR / NEG from API 29, MUL(-1) / FLOOR / MUL(-1) before.
    Exact: ceil(x) == -floor(-x) in IEEE arithmetic (negation is exact), including the sign of zero."""

    nnapi_ops = (OperationType.NEG, OperationType.FLOOR, OperationType.MUL)

    def lower(self, c: LowerContext) -> None:
        x, out = c.input_operand(0), c.output_operand(0)
        f = c.temp_like(out)
        c.emit(OperationType.FLOOR, [negate(c, x)], [f])
        if c.api_level >= 29:
            c.emit(OperationType.NEG, [f], [out])
        else:
            c.emit(OperationType.MUL, [f, scalar_tensor(c, -1.0), c.i32(FuseCode.NONE)], [out])
