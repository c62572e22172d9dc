"""TFLite SVDF -> NNAPI SVDF."""

from __future__ import annotations

from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.driver_support import MISSING_FROM_ARMNN
from nnconv.lowering.registry import Rule, lowering_rule
from nnconv.lowering.rules.recurrent.common import activation_code, check_state_cell, opt_in, state_in, unread
from nnconv.nnapi.enums import OperationType
from nnconv.tflite.options import SVDFOptions
from nnconv.tflite.schema_enums import BuiltinOperator


# -- SVDF, LSH_PROJECTION ---------------------------------------------------------------------------
@lowering_rule(BuiltinOperator.SVDF)
class Svdf(Rule):
    """TFLite SVDF(input, weights_feature, weights_time, bias?, activation state) -> NNAPI SVDF slots 0..4
    (an omitted bias stays omitted; the variable state -> a zero constant) + 5 rank, 6 activation.
    NNAPI outputs: state_out (an unread temporary) and output. From a zero state both runtimes compute the
    same first output (they differ only in when the state history is shifted, which nothing reads here)."""

    options_type = SVDFOptions

    nnapi_ops = (OperationType.SVDF,)
    min_api_level = 28
    dtypes = ("float32",)
    constraints = "float32 weights (hybrid refused); rank-2 input; API 28 as the delegate"
    driver_notes = (MISSING_FROM_ARMNN,)

    def check(self, c: CheckContext) -> None:
        c.require_api(28, "SVDF (as TFLite's NNAPI delegate)")  # hand-written: the delegate's level, not the spec's
        if not check_state_cell(c, 2):
            return
        o = c.options
        if o is not None:
            wf = c.input(1)
            if o.rank < 1 or (wf is not None and wf.rank == 2 and wf.shape[0] % o.rank):
                c.refuse(Code.OPTION, f"rank {o.rank} does not divide the number of filters")

    def lower(self, c: LowerContext) -> None:
        o = c.options
        out = c.output_operand(0)
        state_t = c.input(4)
        ins = [c.input_operand(0), c.input_operand(1), c.input_operand(2), opt_in(c, 3), state_in(c, 4), c.i32(o.rank),
               c.i32(activation_code(o.fused_activation_function))]
        c.emit(OperationType.SVDF, ins, [unread(c, out, tuple(state_t.shape), "state_out"), out])
