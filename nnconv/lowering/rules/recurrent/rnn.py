"""TFLite RNN, UNIDIRECTIONAL_SEQUENCE_RNN and BIDIRECTIONAL_SEQUENCE_RNN -> NNAPI RNN and its sequence ops
(unrolled into single-step RNNs at API 28)."""

from __future__ import annotations

from nnconv.lowering.common import FLOAT
from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.driver_support import MISSING_FROM_ARMNN
from nnconv.lowering.registry import Rule, lowering_rule
from nnconv.lowering.rules.recurrent.common import (activation_code, check_activation, check_float_operands,
                                                    check_state_cell, check_state_inputs, check_static, opt_in,
                                                    state_in, unread)
from nnconv.lowering.rules.recurrent.unroll import (UNROLL_OPS, UnrolledSequence, check_unroll_steps,
                                                    check_unrolled_bidirectional,
                                                    cross_linked_steps, emit_bidirectional_outputs, joined_weight,
                                                    stack_outputs, unroll_inputs, unrolled_rnn)
from nnconv.nnapi.enums import OperationType
from nnconv.tflite.options import BidirectionalSequenceRNNOptions, RNNOptions, SequenceRNNOptions
from nnconv.tflite.schema_enums import BuiltinOperator


# -- RNN family -------------------------------------------------------------------------------------
@lowering_rule(BuiltinOperator.RNN)
class Rnn(Rule):
    """TFLite RNN(input, weights, recurrent weights, bias, hidden state) -> NNAPI RNN slots 0..4 (the
    variable hidden state -> a zero constant) + 5 activation. NNAPI outputs: hidden_state_out (an unread
    temporary) and output (TFLite's output 0)."""

    options_type = RNNOptions

    nnapi_ops = (OperationType.RNN,)
    dtypes = ("float32",)
    constraints = "float32 weights (hybrid refused); rank-2 input; state from zero (variables)"
    driver_notes = (MISSING_FROM_ARMNN,)

    def check(self, c: CheckContext) -> None:
        check_state_cell(c, 2)

    def lower(self, c: LowerContext) -> None:
        out = c.output_operand(0)
        act = c.i32(activation_code(c.options.fused_activation_function))
        ins = [c.input_operand(0), c.input_operand(1), c.input_operand(2), c.input_operand(3), state_in(c, 4), act]
        c.emit(OperationType.RNN, ins, [unread(c, out, tuple(c.output(0).shape), "h_out"), out])


@lowering_rule(BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_RNN)
class UnidirectionalSequenceRnn(UnrolledSequence):
    """TFLite UNIDIRECTIONAL_SEQUENCE_RNN(input, weights, recurrent weights, bias, hidden state) -> NNAPI
    slots 0..4 (the variable hidden state -> a zero constant), 5 activation, 6 time_major (INT32).
    One output (the feature level 3 form). At API 28 (beyond TFLite's delegate) the sequence is unrolled
    into one NNAPI RNN per time step, each step's hidden state output feeding the next (see "unrolling")."""

    options_type = SequenceRNNOptions

    nnapi_ops = (OperationType.UNIDIRECTIONAL_SEQUENCE_RNN, OperationType.RNN, *UNROLL_OPS)
    dtypes = ("float32",)
    constraints = "float32 (hybrid refused); rank-3 input; unrolled into RNN steps at API 28"

    cell_op = OperationType.RNN
    native_ops = (OperationType.UNIDIRECTIONAL_SEQUENCE_RNN,)
    driver_notes = (MISSING_FROM_ARMNN,)

    def check(self, c: CheckContext) -> None:
        # hand-written: the unrolled form's level (RNN steps, as TFLite's NNAPI delegate lowers the sequence)
        c.require_api(28, "UNIDIRECTIONAL_SEQUENCE_RNN (unrolled into RNN steps below API 29)")
        check_state_cell(c, 3)
        check_unroll_steps(c)

    def lower(self, c: LowerContext) -> None:
        o = c.options
        act = c.i32(activation_code(o.fused_activation_function))
        if c.api_level < 29:
            outs = unrolled_rnn(c, unroll_inputs(c, o.time_major), [c.input_operand(1), c.input_operand(2),
                                                                    c.input_operand(3)],
                                state_in(c, 4), act)
            stack_outputs(c, outs, o.time_major, c.output_operand(0))
            return
        ins = [c.input_operand(0), c.input_operand(1), c.input_operand(2), c.input_operand(3), state_in(c, 4), act,
               c.i32(int(o.time_major))]
        c.emit(OperationType.UNIDIRECTIONAL_SEQUENCE_RNN, ins, [c.output_operand(0)])


@lowering_rule(BuiltinOperator.BIDIRECTIONAL_SEQUENCE_RNN)
class BidirectionalSequenceRnn(UnrolledSequence):
    """TFLite BIDIRECTIONAL_SEQUENCE_RNN (12 inputs) -> NNAPI BIDIRECTIONAL_SEQUENCE_RNN (15 inputs).

    TFLite 0..11 map one to one: input, forward weights/recurrent/bias/hidden state 1..4, backward ones
    5..8 (variable hidden states -> zero constants), aux input 9, forward and backward aux weights 10, 11;
    then NNAPI 12 activation, 13 time_major, 14 merge_outputs. Outputs: forward and (unless merged)
    backward. TFLite's NNAPI delegate does not lower this op; NNAPI has it from API 29. At API 28 both
    directions are unrolled into single-step NNAPI RNNs, as BIDIRECTIONAL_SEQUENCE_LSTM's.
    """

    options_type = BidirectionalSequenceRNNOptions

    nnapi_ops = (OperationType.BIDIRECTIONAL_SEQUENCE_RNN, OperationType.RNN, *UNROLL_OPS)
    dtypes = ("float32",)
    constraints = "float32; rank-3 input; unrolled into RNN steps at API 28"
    beyond_delegate = True

    cell_op = OperationType.RNN
    native_ops = (OperationType.BIDIRECTIONAL_SEQUENCE_RNN,)
    driver_notes = (MISSING_FROM_ARMNN,)

    def check(self, c: CheckContext) -> None:
        if not c.require_inputs(12):
            return
        check_unrolled_bidirectional(c, [(1, 10), (5, 11)], "BIDIRECTIONAL_SEQUENCE_RNN")
        check_unroll_steps(c)
        x = c.input(0)
        c.require_dtype(x, FLOAT)
        c.require_rank(x, 3, 3)
        check_float_operands(c, range(12), (4, 8))
        check_state_inputs(c, (4, 8))
        if (c.input(10) is None) != (c.input(11) is None):
            c.refuse(Code.MISSING_OPERAND, "forward and backward aux weights must be both given or both omitted")
        if c.input(10) is not None and c.input(9) is None:
            c.refuse(Code.MISSING_OPERAND, "aux weights without an aux input")
        o = c.options
        if o is not None and c.input(9) is not None and c.input(10) is None and not o.time_major:
            # Measured: with batch-major input, the interpreter's backward cell does not read the aux input
            # the way it does time-major (and as NNAPI specifies), so parity cannot hold.
            c.refuse(Code.OPTION, "an aux input without aux weights (backward cell reads the aux input) with "
                     "batch-major input: TFLite's kernel differs from NNAPI here", "use time-major input")
        check_static(c)
        if c.options is not None:
            check_activation(c, c.options.fused_activation_function)

    def lower(self, c: LowerContext) -> None:
        o = c.options
        if c.api_level < 29:
            act = c.i32(activation_code(o.fused_activation_function))
            fw_w = [c.input_operand(1), c.input_operand(2), c.input_operand(3)]
            bw_w = [c.input_operand(5), c.input_operand(6), c.input_operand(7)]
            if c.input(10) is not None:  # cross-linking: joined inputs and [W | W_aux] weights
                xs = bw_xs = cross_linked_steps(c, o.time_major, 9)
                fw_w[0], bw_w[0] = joined_weight(c, 1, 10), joined_weight(c, 5, 11)
            else:
                xs = unroll_inputs(c, o.time_major)
                bw_xs = unroll_inputs(c, o.time_major, 9) if c.input(9) is not None else xs  # parallel
            fw = unrolled_rnn(c, xs, fw_w, state_in(c, 4), act)
            bw = unrolled_rnn(c, bw_xs, bw_w, state_in(c, 8), act, reverse=True)
            emit_bidirectional_outputs(c, fw, bw, o.time_major, o.merge_outputs)
            return
        ins = [c.input_operand(i) for i in range(4)] + [state_in(c, 4)] + [c.input_operand(i) for i in range(5, 8)]
        ins += [state_in(c, 8)] + [opt_in(c, i) for i in (9, 10, 11)]
        ins += [c.i32(activation_code(o.fused_activation_function)), c.boolean(o.time_major),
                c.boolean(o.merge_outputs)]
        outs = [c.output_operand(0)] if o.merge_outputs else [c.output_operand(0), c.output_operand(1)]
        c.emit(OperationType.BIDIRECTIONAL_SEQUENCE_RNN, ins, outs)
