"""ADD_N, SQUARE, SQUARED_DIFFERENCE, POW, MAXIMUM, MINIMUM."""

from __future__ import annotations

from typing import ClassVar

from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.driver_support import MISSING_FROM_ARMNN
from nnconv.lowering.registry import Rule, family_rule, lowering_rule
from nnconv.lowering.rules._arith import (F32, I32, I8, U8, FloatOnlyBeyondDelegate, check_common, is_quant, negate,
                                          same_quant, scalar_tensor)
from nnconv.nnapi.enums import FuseCode, OperandType, OperationType
from nnconv.rewrite.folds import arithmetic as arithmetic_folds
from nnconv.tflite.schema_enums import BuiltinOperator


@lowering_rule(BuiltinOperator.ADD_N)
class AddN(Rule):
    """TFLite ADD_N(x0, x1, ..., xk) -> a chain of NNAPI ADDs ((x0 + x1) + x2) + ..., TFLite's summation
    order, so float results are identical. One input: ADD(x0, -0.0), an exact copy."""

    nnapi_ops = (OperationType.ADD,)
    dtypes = ("float32", "int32")
    constraints = "rank <= 4; int32 needs API 30"
    beyond_delegate = True

    def check(self, c: CheckContext) -> None:
        if not check_common(c, (1, 64), (F32, I32)):
            return
        if c.input(0).type == I32:
            c.require_signature(OperationType.ADD, OperandType.TENSOR_INT32, "int32 ADD_N (int32 ADD)")

    def lower(self, c: LowerContext) -> None:
        n = len(c.op.inputs)
        out = c.output_operand(0)
        if n == 1:
            x = c.input_operand(0)
            zero = scalar_tensor(c, -0.0) if c.input(0).type == F32 else scalar_tensor(c, 0, OperandType.TENSOR_INT32)
            c.emit(OperationType.ADD, [x, zero, c.i32(FuseCode.NONE)], [out])
            return
        acc = c.input_operand(0)
        for k in range(1, n):
            dst = out if k == n - 1 else c.temp_like(out)
            c.emit(OperationType.ADD, [acc, c.input_operand(k), c.i32(FuseCode.NONE)], [dst])
            acc = dst


@lowering_rule(BuiltinOperator.SQUARE)
class Square(FloatOnlyBeyondDelegate):
    """TFLite SQUARE(x) -> NNAPI MUL(x, x, NONE): the same single float32 rounding of x * x."""

    nnapi_ops = (OperationType.MUL,)

    def lower(self, c: LowerContext) -> None:
        x = c.input_operand(0)
        c.emit(OperationType.MUL, [x, x, c.i32(FuseCode.NONE)], [c.output_operand(0)])


@lowering_rule(BuiltinOperator.SQUARED_DIFFERENCE)
class SquaredDifference(Rule):
    """TFLite SQUARED_DIFFERENCE(x, y) = (x - y)^2 -> NNAPI SUB(x, y) then MUL(d, d).

    float32: API 28 (SUB); at API 27 the difference is ADD(x, MUL(y, -1)), exact since x + (-y) is x - y.
    int32: API 30. int8 (TFLite has no uint8 kernel): DEQUANTIZE both inputs, SUB and MUL in float32, then
    QUANTIZE (API 29). The delegate's all-8-bit form (an 8-bit difference spanning +-sqrt(max output))
    measured 2 LSB off TFLite's integer kernel; the float form rounds the exact square once."""

    int8_shiftable = True
    nnapi_ops = (OperationType.SUB, OperationType.MUL, OperationType.ADD, OperationType.DEQUANTIZE,
                 OperationType.QUANTIZE)
    dtypes = ("float32", "int8", "int32")
    constraints = "rank <= 4; int8 needs API 29, int32 API 30"

    def check(self, c: CheckContext) -> None:
        if not check_common(c, 2, (F32, I8, I32)):
            return
        t = c.input(0).type
        if t == I8:
            c.require_operation((OperationType.DEQUANTIZE, OperationType.QUANTIZE),
                                "quantized SQUARED_DIFFERENCE (DEQUANTIZE / QUANTIZE)")
        elif t == I32:
            c.require_signature((OperationType.SUB, OperationType.MUL), OperandType.TENSOR_INT32,
                                "int32 SQUARED_DIFFERENCE")

    def lower(self, c: LowerContext) -> None:
        x, y, out = c.input_operand(0), c.input_operand(1), c.output_operand(0)
        od = c.info(out)
        dims = list(od.dimensions)
        none = c.i32(FuseCode.NONE)
        if od.type.is_quantized:
            fx = c.temp(OperandType.TENSOR_FLOAT32, list(c.info(x).dimensions))
            fy = c.temp(OperandType.TENSOR_FLOAT32, list(c.info(y).dimensions))
            c.emit(OperationType.DEQUANTIZE, [x], [fx])
            c.emit(OperationType.DEQUANTIZE, [y], [fy])
            d, sq = c.temp(OperandType.TENSOR_FLOAT32, dims), c.temp(OperandType.TENSOR_FLOAT32, dims)
            c.emit(OperationType.SUB, [fx, fy, none], [d])
            c.emit(OperationType.MUL, [d, d, none], [sq])
            c.emit(OperationType.QUANTIZE, [sq], [out])
            return
        d = c.temp(od.type, dims)
        if c.api_level >= 28:
            c.emit(OperationType.SUB, [x, y, none], [d])
        else:
            c.emit(OperationType.ADD, [x, negate(c, y), none], [d])
        c.emit(OperationType.MUL, [d, d, none], [out])


@lowering_rule(BuiltinOperator.POW)
class Pow(Rule):
    """TFLite POW(base, exponent) -> NNAPI POW(base, exponent), float32, API 29 (int32 POW has no NNAPI form)."""

    nnapi_ops = (OperationType.POW,)
    min_api_level = 29
    dtypes = ("float32",)
    constraints = "float32 only"
    driver_notes = (MISSING_FROM_ARMNN,)

    def check(self, c: CheckContext) -> None:
        if check_common(c, 2, (F32,), max_rank=None):
            c.require_operation(OperationType.POW)

    def lower(self, c: LowerContext) -> None:
        c.emit(OperationType.POW, [c.input_operand(0), c.input_operand(1)], [c.output_operand(0)])


class _MinMax(Rule):
    """TFLite <OP>(x, y) -> NNAPI <OP>(x, y) (API 29). Quantized: TFLite compares the stored integers, NNAPI the
    values requantized to the output, which agree only when both inputs and the output share their
    quantization; other cases are refused."""

    int8_shiftable = True
    nnapi_op: ClassVar[OperationType]
    min_api_level = 29
    dtypes = ("float32", "uint8", "int8", "int32")
    constraints = "quantized inputs and output must share scale and zero point"

    def check(self, c: CheckContext) -> None:
        if not check_common(c, 2, (F32, U8, I8, I32), max_rank=None):
            return
        c.require_operation(self.nnapi_op, self.op.name)
        if is_quant(c.input(0)) and not same_quant(c.input(0), c.input(1), c.output(0)):
            c.refuse(Code.QUANTIZATION, f"quantized {self.op.name} needs one scale and zero point for both "
                     "inputs and the output (TFLite compares stored values)")

    def lower(self, c: LowerContext) -> None:
        c.emit(self.nnapi_op, [c.input_operand(0), c.input_operand(1)], [c.output_operand(0)])


Maximum = family_rule(_MinMax, BuiltinOperator.MAXIMUM, nnapi_op=OperationType.MAXIMUM,
                      fold=arithmetic_folds.maximum)


Minimum = family_rule(_MinMax, BuiltinOperator.MINIMUM, nnapi_op=OperationType.MINIMUM,
                      fold=arithmetic_folds.minimum)
