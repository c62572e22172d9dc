"""TFLite UNIDIRECTIONAL_SEQUENCE_LSTM and BIDIRECTIONAL_SEQUENCE_LSTM: native NNAPI sequence ops from API 29,
unrolled into single-step LSTMs at API 28."""

from __future__ import annotations

from nnconv.lowering.common import FLOAT
from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.driver_support import MISSING_FROM_ARMNN
from nnconv.lowering.registry import lowering_rule
from nnconv.lowering.rules.recurrent.common import (activation_code, check_activation, check_clips,
                                                    check_float_operands, check_hybrid_weights, check_state_inputs,
                                                    check_static, opt_in, state_in)
from nnconv.lowering.rules.recurrent.lstm import (LSTM_LAYER_NORM_SLOTS, LSTM_STATE_SLOTS, LSTM_WEIGHT_SLOTS, Lstm,
                                                  LstmInput, by_name, check_lstm_weights, emit_quantized_lstm,
                                                  extended_input, lstm_weight, output_matches_state,
                                                  quantized_lstm_operands, write_output)
from nnconv.lowering.rules.recurrent.unroll import (UNROLL_OPS, UnrolledSequence, check_unroll_steps,
                                                    check_unrolled_bidirectional,
                                                    cross_linked_steps, emit_bidirectional_outputs, joined_weight,
                                                    stack_outputs, unroll_inputs, unroll_operand, unrolled_lstm)
from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.nnapi.operations.recurrent import BidirectionalLstmSlot, SequenceLstmSlot, per_gate
from nnconv.nnapi.operations.slots import slot_operands
from nnconv.tflite.options import BidirectionalSequenceLSTMOptions, UnidirectionalSequenceLSTMOptions
from nnconv.tflite.schema_enums import BuiltinOperator, TensorType


@lowering_rule(BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_LSTM)
class UnidirectionalSequenceLstm(UnrolledSequence):
    """TFLite UNIDIRECTIONAL_SEQUENCE_LSTM (20 or 24 inputs) -> NNAPI UNIDIRECTIONAL_SEQUENCE_LSTM.

    Inputs 0..19 map one to one (18/19 the variable states -> zero constants); NNAPI 20 activation,
    21 cell_clip, 22 proj_clip, 23 time_major from the options; TFLite 20..23 layer-norm weights -> NNAPI
    24..27 (omitted operands when absent). One NNAPI output (the sequence output), as in feature level 3;
    the state outputs of feature level 4 are not requested since nothing reads them.

    At API 28 (where TFLite's delegate stops, while NNAPI already has LSTM and STRIDED_SLICE) the sequence
    is unrolled into one NNAPI LSTM per time step sharing the weight operands, each step's output and cell
    state outputs feeding the next (see "unrolling" above); layer normalization still needs API 29.

    Dynamic-range (hybrid) weights, int8 constants beside a float32 input, are dequantized as the LSTM rule
    does (`check_hybrid_weights`: DEQUANTIZE from API 29, or float32 constants with `fold_dynamic_range_weights`;
    beyond TFLite's delegate, which rejects the hybrid sequence op). NNAPI then computes in float where
    TFLite's hybrid kernel quantizes the activations: `verify` compares with TFLite on the dequantized twin.

    Int8 (TFLite's 8x8_16 kernel): NNAPI's sequence op has no quantized form, so from API 30 the sequence
    is unrolled into QUANTIZED_LSTM steps, each mapped as the LSTM rule maps an int8 LSTM (beyond TFLite's
    delegate, which rejects it); without layer norm the bias columns are joined to the whole sequence once,
    before it is sliced into steps.
    """

    options_type = UnidirectionalSequenceLSTMOptions

    nnapi_ops = (OperationType.UNIDIRECTIONAL_SEQUENCE_LSTM, OperationType.LSTM, OperationType.QUANTIZED_LSTM,
                 OperationType.CAST, OperationType.DEQUANTIZE, *UNROLL_OPS)
    dtypes = ("float32", "int8")
    constraints = ("float32 (int8 hybrid weights dequantized: API 29 or folded; unrolled into LSTM steps at API "
                   "28) or int8 8x8_16 (unrolled into QUANTIZED_LSTM steps, API 30); rank-3 input")

    cell_op = OperationType.LSTM
    native_ops = (OperationType.UNIDIRECTIONAL_SEQUENCE_LSTM, OperationType.QUANTIZED_LSTM)

    def check(self, c: CheckContext) -> None:
        # hand-written: the unrolled form's level (LSTM steps as TFLite's NNAPI delegate emits them)
        c.require_api(28, "UNIDIRECTIONAL_SEQUENCE_LSTM (unrolled into LSTM steps below API 29)")
        if not c.require_inputs(20, 24):
            return
        x = c.input(0)
        c.require_rank(x, 3, 3)
        check_unroll_steps(c, always=x is not None and x.type == TensorType.INT8)  # int8 is always unrolled
        Lstm.check_cell_operands(c, x, "UNIDIRECTIONAL_SEQUENCE_LSTM",
                                 "a layer-normalized UNIDIRECTIONAL_SEQUENCE_LSTM")
        o = c.options
        if o is not None:
            check_activation(c, o.fused_activation_function, lstm=True)
            check_clips(c)
            if o.diagonal_recurrent_tensors:
                c.refuse(Code.OPTION, "diagonal recurrent weights have no NNAPI equivalent")

    def lower(self, c: LowerContext) -> None:
        o = c.options
        if c.input(0).type == TensorType.INT8:
            parts = quantized_lstm_operands(c)
            h, cell = (state_in(c, i) for i in LSTM_STATE_SLOTS)
            shape = [int(d) for d in c.input(0).shape]
            x = extended_input(c, parts, c.input_operand(0), shape)
            shape[2] += len(parts.columns)
            outs = []
            for x_t in unroll_operand(c, x, shape, o.time_major):
                h, cell, y_t = emit_quantized_lstm(c, parts, x_t, h, cell)
                outs.append(y_t)
            if output_matches_state(c):
                stack_outputs(c, outs, o.time_major, c.output_operand(0))
            else:
                write_output(c, stack_outputs(c, outs, o.time_major), c.output_operand(0))
            return
        if c.api_level < 29:
            self._lower_unrolled(c)
            return
        s = SequenceLstmSlot
        ins = {s.INPUT: c.input_operand(LstmInput.INPUT), **by_name(s, LSTM_WEIGHT_SLOTS, lambda i: lstm_weight(c, i)),
               **by_name(s, LSTM_STATE_SLOTS, lambda i: state_in(c, i))}
        ins.update({s.ACTIVATION: c.i32(activation_code(o.fused_activation_function)), s.CELL_CLIP: c.f32(o.cell_clip),
                    s.PROJ_CLIP: c.f32(o.proj_clip), s.TIME_MAJOR: c.boolean(o.time_major)})
        ins.update(by_name(s, LSTM_LAYER_NORM_SLOTS, lambda i: opt_in(c, i)))  # omitted operands when absent
        c.emit(OperationType.UNIDIRECTIONAL_SEQUENCE_LSTM, slot_operands(ins), [c.output_operand(0)])

    @staticmethod
    def _lower_unrolled(c: LowerContext) -> None:
        o = c.options
        weights = [lstm_weight(c, i) for i in LSTM_WEIGHT_SLOTS]
        params = [c.i32(activation_code(o.fused_activation_function)), c.f32(o.cell_clip), c.f32(o.proj_clip)]
        xs = unroll_inputs(c, o.time_major)
        h, cell = (state_in(c, i) for i in LSTM_STATE_SLOTS)
        outs = unrolled_lstm(c, xs, weights, h, cell, params, cifg=c.input(LstmInput.INPUT_TO_INPUT_WEIGHTS) is None)
        stack_outputs(c, outs, o.time_major, c.output_operand(0))


# TFLite's BIDIRECTIONAL_SEQUENCE_LSTM inputs are numbered as NNAPI's slots 0..47: one name for both.
_B = BidirectionalLstmSlot
_FW_WEIGHTS = range(_B.FW_INPUT_TO_INPUT_WEIGHTS, _B.FW_PROJECTION_BIAS + 1)
_BW_WEIGHTS = range(_B.BW_INPUT_TO_INPUT_WEIGHTS, _B.BW_PROJECTION_BIAS + 1)
_STATES = (_B.FW_OUTPUT_STATE_IN, _B.FW_CELL_STATE_IN, _B.BW_OUTPUT_STATE_IN, _B.BW_CELL_STATE_IN)
_AUX_WEIGHTS = range(_B.FW_AUX_INPUT_TO_INPUT_WEIGHTS, _B.BW_AUX_INPUT_TO_OUTPUT_WEIGHTS + 1)
# (input-to-gate weights, their aux-input-to-gate weights) per gate, forward then backward
_AUX_PAIRS = [*zip(per_gate(_B, "FW_INPUT_TO_{}_WEIGHTS"), per_gate(_B, "FW_AUX_INPUT_TO_{}_WEIGHTS")),
              *zip(per_gate(_B, "BW_INPUT_TO_{}_WEIGHTS"), per_gate(_B, "BW_AUX_INPUT_TO_{}_WEIGHTS"))]
_TFLITE_INPUTS = int(_B.BW_AUX_INPUT_TO_OUTPUT_WEIGHTS) + 1  # 48: no scalars nor layer norm (options)


@lowering_rule(BuiltinOperator.BIDIRECTIONAL_SEQUENCE_LSTM)
class BidirectionalSequenceLstm(UnrolledSequence):
    """TFLite BIDIRECTIONAL_SEQUENCE_LSTM (48 inputs) -> NNAPI BIDIRECTIONAL_SEQUENCE_LSTM (61 inputs).

    TFLite 0..47 map one to one: input, forward weights 1..17, backward weights 18..34, forward output and
    cell state 35/36 and backward ones 37/38 (variables -> zero constants), aux input 39, forward aux
    weights 40..43, backward aux weights 44..47; then NNAPI 48 activation, 49 cell_clip, 50 proj_clip,
    51 merge_outputs, 52 time_major, and 53..60 layer-norm weights as omitted operands (TFLite's op has
    none). Outputs: forward and (unless merged) backward sequence outputs.

    At API 28 (beyond TFLite's delegate) both directions are unrolled into single-step NNAPI LSTMs, the
    backward chain walking the steps in reverse (and reading the aux input when given without aux
    weights); merged outputs are concatenated on the last axis. With constant aux weights (cross-linking)
    each cell reads the input and aux sequences joined on the last axis against [W | W_aux].
    """

    options_type = BidirectionalSequenceLSTMOptions

    nnapi_ops = (OperationType.BIDIRECTIONAL_SEQUENCE_LSTM, OperationType.LSTM, *UNROLL_OPS)
    dtypes = ("float32",)
    constraints = "float32 (hybrid refused); rank-3 input; unrolled into LSTM steps at API 28"

    cell_op = OperationType.LSTM
    native_ops = (OperationType.BIDIRECTIONAL_SEQUENCE_LSTM,)
    driver_notes = (MISSING_FROM_ARMNN,)

    def check(self, c: CheckContext) -> None:
        if not c.require_inputs(_TFLITE_INPUTS):
            return
        check_unrolled_bidirectional(c, _AUX_PAIRS, "BIDIRECTIONAL_SEQUENCE_LSTM")
        check_unroll_steps(c)
        x = c.input(_B.INPUT)
        c.require_dtype(x, FLOAT)
        c.require_rank(x, 3, 3)
        check_float_operands(c, range(0, _TFLITE_INPUTS), _STATES)
        check_lstm_weights(c, _B.FW_INPUT_TO_INPUT_WEIGHTS)
        check_lstm_weights(c, _B.BW_INPUT_TO_INPUT_WEIGHTS)
        check_state_inputs(c, _STATES)
        aux_w = [c.input(i) is not None for i in _AUX_WEIGHTS]
        if any(aux_w) and c.input(_B.AUX_INPUT) is None:
            c.refuse(Code.MISSING_OPERAND, "aux input weights without an aux input")
        check_static(c)
        o = c.options
        if o is not None:
            check_activation(c, o.fused_activation_function, lstm=True)
            check_clips(c)
            if o.merge_outputs and not o.time_major:
                # Measured: the interpreter's merged output for batch-major input misplaces the forward
                # half for every batch after the first, while NNAPI concatenates correctly.
                c.refuse(Code.OPTION, "merge_outputs with batch-major input: TFLite's kernel lays out the "
                         "merged forward output differently from NNAPI, so parity cannot hold",
                         "use time-major input, or separate outputs and a CONCATENATION")

    def lower(self, c: LowerContext) -> None:
        o = c.options
        if c.api_level < 29:
            params = [c.i32(activation_code(o.fused_activation_function)), c.f32(o.cell_clip),
                      c.f32(o.proj_clip)]
            fw_w = [opt_in(c, i) for i in _FW_WEIGHTS]
            bw_w = [opt_in(c, i) for i in _BW_WEIGHTS]
            if c.input(_B.FW_AUX_INPUT_TO_FORGET_WEIGHTS) is not None:  # cross-linking: joined inputs, [W | W_aux]
                xs = bw_xs = cross_linked_steps(c, o.time_major, _B.AUX_INPUT)
                fw_w[0:4] = [joined_weight(c, w, aux) for w, aux in _AUX_PAIRS[:4]]
                bw_w[0:4] = [joined_weight(c, w, aux) for w, aux in _AUX_PAIRS[4:]]
            else:
                xs = unroll_inputs(c, o.time_major)
                bw_xs = unroll_inputs(c, o.time_major, _B.AUX_INPUT) if c.input(_B.AUX_INPUT) is not None \
                    else xs  # parallel linking
            # each direction's states made just before its steps, which the operands' order follows
            fw = unrolled_lstm(c, xs, fw_w, *(state_in(c, i) for i in _STATES[:2]), params,
                               cifg=c.input(_B.FW_INPUT_TO_INPUT_WEIGHTS) is None)
            bw = unrolled_lstm(c, bw_xs, bw_w, *(state_in(c, i) for i in _STATES[2:]), params,
                               cifg=c.input(_B.BW_INPUT_TO_INPUT_WEIGHTS) is None, reverse=True)
            emit_bidirectional_outputs(c, fw, bw, o.time_major, o.merge_outputs)
            return
        ins = {_B.INPUT: c.input_operand(_B.INPUT), **{i: opt_in(c, i) for i in (*_FW_WEIGHTS, *_BW_WEIGHTS)}}
        ins.update({i: state_in(c, i) for i in _STATES})
        ins.update({i: opt_in(c, i) for i in (_B.AUX_INPUT, *_AUX_WEIGHTS)})
        ins.update({_B.ACTIVATION: c.i32(activation_code(o.fused_activation_function)),
                    _B.CELL_CLIP: c.f32(o.cell_clip), _B.PROJ_CLIP: c.f32(o.proj_clip),
                    _B.MERGE_OUTPUTS: c.boolean(o.merge_outputs), _B.TIME_MAJOR: c.boolean(o.time_major)})
        # TFLite's op has no layer normalization: the eight layer-norm slots are omitted operands
        ins.update({i: c.no_value(OperandType.TENSOR_FLOAT32) for i in _B if i >= _B.FW_INPUT_LAYER_NORM_WEIGHTS})
        outs = [c.output_operand(0)] if o.merge_outputs else [c.output_operand(0), c.output_operand(1)]
        c.emit(OperationType.BIDIRECTIONAL_SEQUENCE_LSTM, slot_operands(ins), outs)
