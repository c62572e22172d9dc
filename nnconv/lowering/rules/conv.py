"""Convolutions: CONV_2D (and GROUPED_CONV_2D when the filter depth divides the input depth)."""

from __future__ import annotations

from nnconv.lowering.common import FLOAT, bias_operand, padding_code
from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.registry import Rule, lowering_rule
from nnconv.nnapi.enums import OperationType
from nnconv.tflite.schema_enums import BuiltinOperator


@lowering_rule(BuiltinOperator.CONV_2D)
class Conv2D(Rule):
    """TFLite CONV_2D(input [N,H,W,C], filter [O,KH,KW,C'], bias [O]?) -> NNAPI CONV_2D slots
    (input, filter, bias, padding code, stride_w, stride_h, fuse code[, NCHW=false, dilation_w, dilation_h]).

    Dilation needs the API 29 operand form. When C is a multiple of C' > 1 groups, the op becomes
    GROUPED_CONV_2D (API 29) with num_groups = C / C'. A missing bias becomes a zero constant.
    """

    nnapi_ops = (OperationType.CONV_2D, OperationType.GROUPED_CONV_2D)
    dtypes = ("float32",)
    constraints = "rank-4 input; dilation and grouped filters need API 29; constant filter"

    def check(self, c: CheckContext) -> None:
        if not c.require_inputs(2, 3):
            return
        x, w = c.input(0), c.input(1)
        c.require_dtype(x, FLOAT)
        c.require_dtype(w, FLOAT, "filter")
        c.require_rank(x, 4, 4)
        c.require_rank(w, 4, 4, "filter")
        c.require_static_shapes()
        o = c.options
        if o.dilation_w_factor != 1 or o.dilation_h_factor != 1:
            c.require_api(29, "dilated CONV_2D")
        if x is not None and w is not None and x.rank == 4 and w.rank == 4 and x.shape[3] != w.shape[3]:
            if w.shape[3] and x.shape[3] % w.shape[3] == 0:
                c.require_api(29, "grouped convolution (GROUPED_CONV_2D)")
                if o.dilation_w_factor != 1 or o.dilation_h_factor != 1:
                    c.refuse(Code.OPTION, "dilated grouped convolution: GROUPED_CONV_2D has no dilation")
            else:
                c.refuse(Code.OPERAND_VALUE, f"input depth {x.shape[3]} is not a multiple of filter depth "
                         f"{w.shape[3]}")
        c.check_fused_activation(o.fused_activation_function)

    def lower(self, c: LowerContext) -> None:
        o = c.options
        x, w = c.in_(0), c.in_(1)
        x_t, w_t = c.input(0), c.input(1)
        bias = bias_operand(c, 2, w_t.shape[0], x, w)
        groups = x_t.shape[3] // w_t.shape[3]
        dilated = o.dilation_w_factor != 1 or o.dilation_h_factor != 1
        fused = c.fused_output(o.fused_activation_function)
        args = [x, w, bias, c.i32(padding_code(o.padding)), c.i32(o.stride_w), c.i32(o.stride_h)]
        if groups > 1:
            args += [c.i32(groups), c.i32(fused.code), c.boolean(False)]
            c.emit(OperationType.GROUPED_CONV_2D, args, [fused.operand])
        else:
            args.append(c.i32(fused.code))
            if dilated:
                args += [c.boolean(False), c.i32(o.dilation_w_factor), c.i32(o.dilation_h_factor)]
            c.emit(OperationType.CONV_2D, args, [fused.operand])
        fused.finish()
