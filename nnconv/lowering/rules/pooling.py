"""2-D pooling: AVERAGE_POOL_2D, MAX_POOL_2D, L2_POOL_2D."""

from __future__ import annotations

from nnconv.lowering.common import FLOAT, FLOAT_OR_QUANT8, check_int8, check_padding, padding_code
from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.registry import Rule, lowering_rule
from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.operations.slots import slot_operands
from nnconv.nnapi.operations.window import PoolImplicitSlot
from nnconv.tflite.schema_enums import BuiltinOperator, TensorType


class _Pool(Rule):
    """TFLite <OP>(input [N,H,W,C]) with Pool2DOptions -> NNAPI <OP> in the implicit-padding form
    (`PoolImplicitSlot`: input, padding code, stride_w, stride_h, filter_w, filter_h, fuse code). Padding is neither
    summed nor counted on both sides. The output keeps the input's quantization (NNAPI forces it)."""

    nnapi_op: OperationType
    dtypes = ("float32", "uint8", "int8")
    allowed = FLOAT_OR_QUANT8

    def check(self, c: CheckContext) -> None:
        if not c.require_inputs(1):
            return
        x, out = c.input(0), c.output(0)
        if c.require_dtype(x, self.allowed):
            c.require_dtype(out, (x.type,), "output")
        c.require_rank(x, 4, 4)
        c.require_static_shapes()
        o = c.options
        if min(o.stride_w, o.stride_h, o.filter_width, o.filter_height) < 1:
            c.refuse(Code.OPTION, "strides and filter sizes must be positive")
        if x is not None and x.type in (TensorType.UINT8, TensorType.INT8):
            xq, oq = x.quantization, out.quantization
            if (list(xq.scale), list(xq.zero_point)) != (list(oq.scale), list(oq.zero_point)):
                c.refuse(Code.QUANTIZATION, "NNAPI pooling keeps the input's scale and zero point; the output's "
                         "differ")
        check_int8(c)
        c.check_fused_activation(o.fused_activation_function)
        check_padding(c, o.padding)
        self.check_more(c)

    def check_more(self, c: CheckContext) -> None:
        """Op-specific refusals."""

    def lower(self, c: LowerContext) -> None:
        o = c.options
        fused = c.fused_output(o.fused_activation_function)
        s = PoolImplicitSlot
        args = {s.INPUT: c.input_operand(0), s.PADDING_SCHEME: c.i32(padding_code(o.padding)),
                s.STRIDE_WIDTH: c.i32(o.stride_w),
                s.STRIDE_HEIGHT: c.i32(o.stride_h), s.FILTER_WIDTH: c.i32(o.filter_width),
                s.FILTER_HEIGHT: c.i32(o.filter_height), s.ACTIVATION: c.i32(fused.code)}
        c.emit(self.nnapi_op, slot_operands(args), [fused.operand])
        fused.finish()


@lowering_rule(BuiltinOperator.AVERAGE_POOL_2D)
class AveragePool2D(_Pool):
    int8_shiftable = True
    doc_more = """
    Quantized averages are the integer sum divided with rounding; TFLite's delegate refuses quantized
    windows over 256 elements (the reference's 16-bit accumulators), so this rule does too."""
    nnapi_op = OperationType.AVERAGE_POOL_2D
    constraints = "rank-4 input; output quantization equals the input's; quantized filter_w*filter_h <= 256"

    def check_more(self, c: CheckContext) -> None:
        x, o = c.input(0), c.options
        if x is not None and x.type != TensorType.FLOAT32 and o.filter_width * o.filter_height > 256:
            c.refuse(Code.OPTION, f"quantized average over {o.filter_width}x{o.filter_height} > 256 elements")


@lowering_rule(BuiltinOperator.MAX_POOL_2D)
class MaxPool2D(_Pool):
    int8_shiftable = True
    nnapi_op = OperationType.MAX_POOL_2D
    constraints = "rank-4 input; output quantization equals the input's"


@lowering_rule(BuiltinOperator.L2_POOL_2D)
class L2Pool2D(_Pool):
    doc_more = """
    Float only (NNAPI has no quantized L2 pooling). TFLite's delegate takes a fused activation only from
    API 29; the NNAPI 1.0 operation has the fuse code operand, so this rule does not gate it."""
    nnapi_op = OperationType.L2_POOL_2D
    dtypes = ("float32",)
    allowed = FLOAT
    constraints = "float32; rank-4 input"
