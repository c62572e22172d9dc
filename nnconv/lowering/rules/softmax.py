"""SOFTMAX and LOG_SOFTMAX."""

from __future__ import annotations

from nnconv.lowering.common import FLOAT_OR_QUANT8, check_int8
from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.driver_support import NO_FLOAT16_ARMNN
from nnconv.lowering.registry import Rule, lowering_rule
from nnconv.lowering.rules._arith import (check_fixed_output_quant, check_fixed_quant_io, emit_last_axis_op_as_rows,
                                          via_float)
from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.quant_limits import softmax_input_multiplier
from nnconv.tflite.ir import Tensor
from nnconv.tflite.schema_enums import BuiltinOperator, TensorType


def _through_float(x: Tensor, beta: float) -> bool:
    """A quantized input whose scale the reference's fixed-point SOFTMAX refuses (`quant_limits`)."""
    q = x.quantization
    return (x.type != TensorType.FLOAT32 and q.is_quantized and not q.is_per_channel
            and not softmax_input_multiplier(beta, q.scale[0]) > 1.0)


@lowering_rule(BuiltinOperator.SOFTMAX)
class Softmax(Rule):
    """TFLite SOFTMAX(input) with beta, over the last axis -> NNAPI SOFTMAX(input, beta FLOAT32) (the axis
    operand defaults to the last axis and is omitted).

    NNAPI 1.0/1.1 take rank 2 or 4 only; from API 29 rank 1..4. Below API 29 a rank-1 or rank-3 input is
    reshaped to [rows, last axis], normalized, and reshaped back (TFLite's delegate refuses it).
    Quantized output must be scale 1/256 with zero point 0 (uint8) or -128 (int8): the reference computes
    it in fixed point and fails on any other. It also refuses an input scale so small that
    beta * scale * 2^26 <= 1 (`nnapi/quant_limits.py`), which TFLite's lookup-table kernel computes: such a
    SOFTMAX becomes DEQUANTIZE -> float SOFTMAX -> QUANTIZE from API 29 (the lookup table holds
    quantize(softmax(dequantize(q))) too; within 1 LSB).
    int8 is TENSOR_QUANT8_ASYMM_SIGNED from API 30, uint8 + 128 below (zero point -128 becomes 0, as NNAPI
    1.0 requires).
    """

    int8_shiftable = True
    nnapi_ops = (OperationType.SOFTMAX, OperationType.RESHAPE, OperationType.DEQUANTIZE, OperationType.QUANTIZE)
    dtypes = ("float32", "uint8", "int8")
    constraints = "beta > 0; rank 1..4 (reshaped to 2-D below API 29 when not 2 or 4); quantized output 1/256"
    driver_notes = (NO_FLOAT16_ARMNN,)

    def check(self, c: CheckContext) -> None:
        x = check_fixed_quant_io(c, "SOFTMAX", 1 / 256, {TensorType.UINT8: 0, TensorType.INT8: -128})
        if x is None:
            return
        beta = c.options.beta if c.options is not None else 1.0
        if not beta > 0:
            c.refuse(Code.OPTION, f"beta {beta} must be positive")
            return
        check_int8(c)
        if x is not None and _through_float(x, beta):
            scale = x.quantization.scale[0]
            what = (f"quantized SOFTMAX with input scale {scale:g} (beta * scale * 2^26 = "
                    f"{softmax_input_multiplier(beta, scale):.3g} is not above 1, which the reference's "
                    "fixed-point kernel refuses; TFLite's lookup table computes it) through float")
            if c.require_operation((OperationType.DEQUANTIZE, OperationType.SOFTMAX, OperationType.QUANTIZE), what):
                c.note(f"{what}: DEQUANTIZE, SOFTMAX, QUANTIZE (within 1 LSB of TFLite)")

    def lower(self, c: LowerContext) -> None:
        beta = c.options.beta if c.options is not None else 1.0
        x_t = c.input(0)
        if _through_float(x_t, beta):
            via_float(c, c.input_operand(0), c.output_operand(0),
                      lambda f, g: c.emit(OperationType.SOFTMAX, [f, c.f32(beta)], [g]))
            return
        if c.api_level >= 29 or x_t.rank in (2, 4):
            c.emit(OperationType.SOFTMAX, [c.input_operand(0), c.f32(beta)], [c.output_operand(0)])
            return
        emit_last_axis_op_as_rows(c, OperationType.SOFTMAX, [c.f32(beta)])


# TFLite's quantized LOG_SOFTMAX writes onto a fixed output range: log-probabilities in [-16, 0) as scale
# 16/256 with the zero point at the top of the type (its kernel's Prepare refuses any other).
LOG_SOFTMAX_OUTPUT_SCALE = 16 / 256
LOG_SOFTMAX_OUTPUT_ZERO_POINT = {TensorType.INT8: 127, TensorType.UINT8: 255}


@lowering_rule(BuiltinOperator.LOG_SOFTMAX)
class LogSoftmax(Rule):
    """TFLite LOG_SOFTMAX(input) over the last axis -> NNAPI LOG_SOFTMAX(input, beta = 1.0, axis = -1), API 29.

    NNAPI's LOG_SOFTMAX is float only. A quantized one (TFLite: output scale 16/256, zero point 127 for
    int8, 255 for uint8) becomes DEQUANTIZE -> float LOG_SOFTMAX -> QUANTIZE: TFLite's integer kernel
    approximates log(sum(exp)) in fixed point, the float path computes it exactly and rounds once, so the
    two differ by at most 1 LSB (measured: tests/lowering/test_softmax.py sweeps input scales, zero points
    and seeds). int8 travels as TENSOR_QUANT8_ASYMM_SIGNED from API 30, uint8 + 128 below.
    """

    nnapi_ops = (OperationType.LOG_SOFTMAX, OperationType.DEQUANTIZE, OperationType.QUANTIZE)
    min_api_level = 29
    dtypes = ("float32", "uint8", "int8")
    constraints = "API 29; quantized through float (output scale 16/256, zero point 127 int8 / 255 uint8)"

    def check(self, c: CheckContext) -> None:
        c.require_operation(OperationType.LOG_SOFTMAX)
        if not c.require_inputs(1):
            return
        x, out = c.input(0), c.output(0)
        if c.require_dtype(x, FLOAT_OR_QUANT8):
            c.require_dtype(out, (x.type,), "output")
            if x.type != TensorType.FLOAT32 and out is not None and out.type == x.type:
                check_fixed_output_quant(c, "LOG_SOFTMAX", out, LOG_SOFTMAX_OUTPUT_SCALE,
                                         LOG_SOFTMAX_OUTPUT_ZERO_POINT[x.type])
                c.note("quantized LOG_SOFTMAX through float: DEQUANTIZE, LOG_SOFTMAX, QUANTIZE "
                       "(within 1 LSB of TFLite's integer kernel)")
        c.require_rank(x, 4, 1)
        c.require_static_shapes()
        check_int8(c, shiftable=True)  # DEQUANTIZE/QUANTIZE take the uint8 + 128 form below API 30

    def lower(self, c: LowerContext) -> None:
        def log_softmax(x: int, out: int) -> None:
            c.emit(OperationType.LOG_SOFTMAX, [x, c.f32(1.0), c.i32(-1)], [out])
        if c.input(0).type == TensorType.FLOAT32:
            log_softmax(c.input_operand(0), c.output_operand(0))
        else:
            via_float(c, c.input_operand(0), c.output_operand(0), log_softmax)
