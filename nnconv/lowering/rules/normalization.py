"""L2_NORMALIZATION and LOCAL_RESPONSE_NORMALIZATION."""

from __future__ import annotations

from nnconv.lowering.common import FLOAT, FLOAT_OR_QUANT8, check_int8
from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.driver_support import NO_FLOAT16_ARMNN
from nnconv.lowering.registry import Rule, lowering_rule
from nnconv.lowering.rules._arith import check_fixed_quant_io, emit_last_axis_op_as_rows
from nnconv.nnapi.enums import OperationType
from nnconv.tflite.schema_enums import BuiltinOperator, TensorType


@lowering_rule(BuiltinOperator.L2_NORMALIZATION)
class L2Normalization(Rule):
    """TFLite L2_NORMALIZATION(input) over the last axis -> NNAPI L2_NORMALIZATION(input) (the axis operand
    defaults to the last axis, so it is never emitted).

    NNAPI 1.0/1.1 take float32 rank-4 input only: below API 29 other ranks are reshaped to
    [1, 1, rows, last axis] and back (TFLite's delegate refuses them). From API 29 any rank 1..4 and uint8
    (output scale 1/128, zero point 128). int8 (output 1/128, zero point 0) is TENSOR_QUANT8_ASYMM_SIGNED
    from API 30, uint8 + 128 at API 29 (the forced output zero point 0 becomes 128). A fused activation
    must be NONE (TFLite's kernel accepts no other either).
    """

    int8_shiftable = True
    nnapi_ops = (OperationType.L2_NORMALIZATION, OperationType.RESHAPE)
    dtypes = ("float32", "uint8", "int8")
    constraints = "fused activation NONE; quantized needs API 29, output scale 1/128; rank 1..4"
    driver_notes = (NO_FLOAT16_ARMNN,)

    def check(self, c: CheckContext) -> None:
        if check_fixed_quant_io(c, "L2_NORMALIZATION", 1 / 128, {TensorType.UINT8: 128, TensorType.INT8: 0},
                                quant_api=29) is None:
            return
        act = c.options.fused_activation_function if c.options is not None else 0
        if act != 0:
            c.refuse(Code.OPTION, "L2_NORMALIZATION takes no fused activation in NNAPI")
        check_int8(c)

    def lower(self, c: LowerContext) -> None:
        x_t = c.input(0)
        if c.api_level >= 29 or x_t.rank == 4:
            c.emit(OperationType.L2_NORMALIZATION, [c.input_operand(0)], [c.output_operand(0)])
            return
        emit_last_axis_op_as_rows(c, OperationType.L2_NORMALIZATION, [], leading=(1, 1))


@lowering_rule(BuiltinOperator.LOCAL_RESPONSE_NORMALIZATION)
class LocalResponseNormalization(Rule):
    """TFLite LOCAL_RESPONSE_NORMALIZATION(input [N,H,W,C]) with (radius, bias, alpha, beta) -> NNAPI
    LOCAL_RESPONSE_NORMALIZATION(input, radius INT32, bias, alpha, beta FLOAT32) over the last axis (the
    default, so the axis operand is omitted). Float32 only; rank 4 (TFLite's kernel requires it)."""

    nnapi_ops = (OperationType.LOCAL_RESPONSE_NORMALIZATION,)
    dtypes = ("float32",)
    constraints = "float32; rank 4"
    driver_notes = (NO_FLOAT16_ARMNN,)

    def check(self, c: CheckContext) -> None:
        if not c.require_inputs(1):
            return
        x = c.input(0)
        c.require_dtype(x, FLOAT)
        c.require_rank(x, 4, 4)
        c.require_static_shapes()
        if c.options is not None and c.options.radius < 0:
            c.refuse(Code.OPTION, f"negative radius {c.options.radius}")

    def lower(self, c: LowerContext) -> None:
        o = c.options
        c.emit(OperationType.LOCAL_RESPONSE_NORMALIZATION,
               [c.input_operand(0), c.i32(o.radius), c.f32(o.bias), c.f32(o.alpha),
                c.f32(o.beta)], [c.output_operand(0)])
