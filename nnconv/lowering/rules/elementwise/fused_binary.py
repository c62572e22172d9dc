"""Binary arithmetic with a fused activation: ADD, SUB, MUL, DIV."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.driver_support import NO_INT32_MUL_ARMNN
from nnconv.lowering.registry import Rule, lowering_rule
from nnconv.lowering.rules._arith import F32, I32, I8, U8, check_common, is_quant, quant_params
from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.rewrite.folds import arithmetic as arithmetic_folds
from nnconv.tflite.schema_enums import ActivationFunctionType, BuiltinOperator, TensorType


# Fused activations that clamp (RELU, RELU_N1_TO_1, RELU6); the others compute nothing in TFLite's kernels.
_CLAMPING_ACTIVATIONS = (ActivationFunctionType.RELU, ActivationFunctionType.RELU_N1_TO_1,
                         ActivationFunctionType.RELU6)


# -- binary arithmetic with a fused activation -----------------------------------------------------
class _FusedBinary(Rule):
    """TFLite OP(x, y) with fused activation -> NNAPI OP(input1 = x, input2 = y, fuse code). The RELU family
    maps to the same FuseCode; TANH / SIGMOID become NONE, because TFLite's arithmetic kernels ignore them
    (`LowerContext.fused_output`): the NNAPI graph computes what the interpreter computes. SIGN_BIT is
    refused, as for every op with a fused activation (`CheckContext.check_fused_activation`).
    `pot_scale_int16` (ADD / SUB) concerns int16 tensors only, which `check_common` refuses."""

    nnapi_op: ClassVar[OperationType]
    float_api: ClassVar[int] = 27
    quant_api: ClassVar[int | None] = 27  # None: no quantized form
    int32_api: ClassVar[int | None] = 30
    int8_shiftable: ClassVar[bool | None] = None  # None: the delegate's list decides

    def check(self, c: CheckContext) -> None:
        allowed = [F32]
        if self.quant_api is not None:
            allowed += [U8, I8]
        if self.int32_api is not None:
            allowed.append(I32)
        if not check_common(c, 2, allowed, int8_shiftable=self.int8_shiftable):
            return
        x = c.input(0)
        name = self.op.name
        act = c.options.fused_activation_function
        # hand-written: per rule (float_api, quant_api, int32_api), the levels its table of ops shows
        if x.type == F32:
            c.require_api(self.float_api, f"float32 {name}")
        elif is_quant(x):
            c.require_api(self.quant_api, f"quantized {name}")
            self.check_quant(c)
        else:  # int32
            c.require_api(self.int32_api, f"int32 {name}")
            if act in _CLAMPING_ACTIVATIONS:
                c.refuse(Code.OPTION, f"int32 {name} takes no fused activation in NNAPI")
        c.check_fused_activation(act)

    def check_quant(self, c: CheckContext) -> None:
        """Extra constraints of the quantized form (none by default)."""

    def lower(self, c: LowerContext) -> None:
        x, y = c.input_operand(0), c.input_operand(1)
        fused = c.fused_output(c.options.fused_activation_function)
        c.emit(self.nnapi_op, [x, y, c.i32(fused.code)], [fused.operand])
        fused.finish()


@lowering_rule(BuiltinOperator.ADD)
class Add(_FusedBinary):
    """TFLite ADD(x, y) -> NNAPI ADD(x, y, fuse code). Quantized inputs may each have their own scale and
    zero point; NNAPI's reference pipeline (left shift 20, per-input multipliers) is TFLite's."""

    int8_shiftable = True
    fold = arithmetic_folds.add
    nnapi_op = OperationType.ADD
    dtypes = ("float32", "uint8", "int8", "int32")
    constraints = "rank <= 4; int32 needs API 30 and no fused activation"


@lowering_rule(BuiltinOperator.SUB)
class Sub(_FusedBinary):
    """TFLite SUB(x, y) -> NNAPI SUB(x, y, fuse code) (API 28 float, 29 quantized, 30 int32)."""

    int8_shiftable = True
    fold = arithmetic_folds.sub
    nnapi_op = OperationType.SUB
    min_api_level = 28
    float_api = 28
    quant_api = 29
    dtypes = ("float32", "uint8", "int8", "int32")
    constraints = "rank <= 4; API 28 float, 29 quantized, 30 int32 (no fused activation)"


def _quant_binary_via_float(c: LowerContext, op: OperationType) -> None:
    """Quantized OP(x, y) evaluated in float32: DEQUANTIZE both inputs, OP with the fused activation, then
    QUANTIZE into the output (API 29). The float result is rounded once, so it lies within 1 LSB of TFLite's
    integer pipeline."""
    x, y = c.input_operand(0), c.input_operand(1)
    fused = c.fused_output(c.options.fused_activation_function)
    fx = c.temp(OperandType.TENSOR_FLOAT32, list(c.info(x).dimensions))
    fy = c.temp(OperandType.TENSOR_FLOAT32, list(c.info(y).dimensions))
    fz = c.temp(OperandType.TENSOR_FLOAT32, list(c.info(fused.operand).dimensions))
    c.emit(OperationType.DEQUANTIZE, [x], [fx])
    c.emit(OperationType.DEQUANTIZE, [y], [fy])
    c.emit(op, [fx, fy, c.i32(fused.code)], [fz])
    c.emit(OperationType.QUANTIZE, [fz], [fused.operand])
    fused.finish()


def _mul_scales_ok(c: CheckContext) -> bool:
    s1, s2, so = (quant_params(t)[0] for t in (c.input(0), c.input(1), c.output(0)))
    return float(np.float32(so)) > float(np.float32(np.float32(s1) * np.float32(s2)))


@lowering_rule(BuiltinOperator.MUL)
class Mul(_FusedBinary):
    """TFLite MUL(x, y) -> NNAPI MUL(x, y, fuse code). Quantized: NNAPI requires
    output_scale > input1_scale * input2_scale (its multiplier must be below 1); when a model breaks that,
    the product is computed in float32 between DEQUANTIZE and QUANTIZE instead (API 29)."""

    int8_shiftable = True
    fold = arithmetic_folds.mul
    nnapi_op = OperationType.MUL
    nnapi_ops = (OperationType.MUL, OperationType.DEQUANTIZE, OperationType.QUANTIZE)
    dtypes = ("float32", "uint8", "int8", "int32")
    constraints = "rank <= 4; quantized with output scale <= product of input scales needs API 29; int32 API 30"
    driver_notes = (NO_INT32_MUL_ARMNN,)

    def check_quant(self, c: CheckContext) -> None:
        if not _mul_scales_ok(c):
            c.require_operation((OperationType.DEQUANTIZE, OperationType.MUL, OperationType.QUANTIZE),
                                "quantized MUL with output scale <= product of input scales (float form)",
                                "raise --api-level to 29, or requantize the model's output range")

    def lower(self, c: LowerContext) -> None:
        if is_quant(c.input(0)) and not _mul_scales_ok(c):
            _quant_binary_via_float(c, OperationType.MUL)
        else:
            super().lower(c)


@lowering_rule(BuiltinOperator.DIV)
class Div(_FusedBinary):
    """TFLite DIV(x, y) -> NNAPI DIV(x, y, fuse code), float32 from API 28.

    int32 is refused: TFLite truncates the quotient toward zero while NNAPI's int32 DIV floors it.
    Quantized DIV (uint8, int8, broadcast or not) is refused: NNAPI has none, and TFLite's kernel
    (reference_ops::Div: a fixed-point reciprocal of y - zp, then MultiplyByQuantizedMultiplierSmallerThanOneExp
    with shift output_shift - reciprocal_shift - headroom(x - zp)) shifts by 32 or more, or by a negative
    amount, for small dividends: undefined in C++, and on x86 those outputs come out saturated (0.1 / 2.04
    gives the maximum instead of 0.05). Measured on int8 over all 65,280 (x, y) pairs for three scale sets:
    DEQUANTIZE / DIV / QUANTIZE is within 1 LSB of TFLite on every pair where its shifts are defined, and up
    to 132 LSB off on 128-169 of the 256-298 pairs where they are not; no NNAPI form reproduces those."""

    fold = arithmetic_folds.div
    nnapi_op = OperationType.DIV
    min_api_level = 28
    float_api = 28
    quant_api = None
    int32_api = None
    dtypes = ("float32",)
    constraints = "float32 only; rank <= 4"

    def check(self, c: CheckContext) -> None:
        x = c.input(0)
        if x is not None and x.type in (U8, I8):
            c.refuse(Code.DTYPE, f"quantized DIV ({TensorType(x.type).name.lower()}): NNAPI has none, and TFLite's "
                     "integer kernel shifts by 32 or more (undefined in C++, saturated outputs on x86) for small "
                     "dividends, which no NNAPI form reproduces; a float DIV is within 1 LSB of it elsewhere",
                     hint="keep the DIV in float when quantizing (leave it out of the quantization recipe), or "
                     "divide by a constant as a MUL by its reciprocal: nnconv lowers both")
            return
        super().check(c)
