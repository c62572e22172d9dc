"""TFLite LSTM -> NNAPI LSTM (float32, hybrid weights) or QUANTIZED_LSTM (int8), and the LSTM weight checks
the sequence LSTMs share."""

from __future__ import annotations

from enum import IntEnum
from typing import Callable, Iterable, NamedTuple

import numpy as np

from nnconv.lowering.common import FLOAT
from nnconv.lowering.context import CheckContext, LowerContext, dtype_description, dtype_hint
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.registry import Rule, lowering_rule
from nnconv.lowering.rules._weights import weights_operand
from nnconv.lowering.rules.recurrent.common import (activation_code, check_activation, check_clips,
                                                    check_float_operands, check_hybrid_weights, check_state_inputs,
                                                    check_static, dim, opt_in, state_in, unread)
from nnconv.lowering.rules.recurrent.int8_lstm_bias import MAX_WIDE_COLUMNS, bias_columns, wide_columns_needed
from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.nnapi.operations.recurrent import LstmSlot, QuantizedLstmSlot, cell_shift, per_gate
from nnconv.nnapi.operations.slots import slot_operands
from nnconv.tflite.options import LSTMOptions
from nnconv.tflite.ir import Quantization, Tensor
from nnconv.tflite.schema_enums import BuiltinOperator, TensorType


# -- LSTM family ------------------------------------------------------------------------------------
# TFLite's LSTM inputs (lstm_shared.h) are numbered as NNAPI LSTM's slots 0..19 followed by the four
# layer-norm weights, as QUANTIZED_LSTM's slots 0..23 are: one name for a TFLite input and the NNAPI slot it
# fills (`by_name`).
LstmInput = IntEnum("LstmInput", list(QuantizedLstmSlot.__members__)[:24], start=0,  # type: ignore[misc]
                    module=__name__)
_I = LstmInput
LSTM_WEIGHT_SLOTS = range(_I.INPUT_TO_INPUT_WEIGHTS, _I.PROJECTION_BIAS + 1)
LSTM_STATE_SLOTS = (_I.OUTPUT_STATE_IN, _I.CELL_STATE_IN)
LSTM_LAYER_NORM_SLOTS = range(_I.INPUT_LAYER_NORM_WEIGHTS, _I.OUTPUT_LAYER_NORM_WEIGHTS + 1)
# the weight matrices and peepholes a dynamic-range LSTM quantizes
LSTM_HYBRID_SLOTS = (*range(_I.INPUT_TO_INPUT_WEIGHTS, _I.CELL_TO_OUTPUT_WEIGHTS + 1), _I.PROJECTION_WEIGHTS)


_PEEPHOLES = (_I.CELL_TO_INPUT_WEIGHTS, _I.CELL_TO_FORGET_WEIGHTS, _I.CELL_TO_OUTPUT_WEIGHTS)
_GATE_BIASES = (_I.INPUT_GATE_BIAS, _I.FORGET_GATE_BIAS, _I.CELL_BIAS, _I.OUTPUT_GATE_BIAS)
# the int8 weight matrices of the int8 LSTM: input-to-gate, recurrent-to-gate, projection
_INT8_WEIGHTS = (*range(_I.INPUT_TO_INPUT_WEIGHTS, _I.RECURRENT_TO_OUTPUT_WEIGHTS + 1), _I.PROJECTION_WEIGHTS)


def by_name(slots: type[IntEnum], inputs: Iterable[int], operand: Callable[[int], int]) -> dict[IntEnum, int]:
    """{the NNAPI slot of `slots` named as TFLite input i: operand(i)} for each of `inputs` (`LstmInput`
    values), made in their order."""
    return {slots[_I(i).name]: operand(i) for i in inputs}


def lstm_weight(c: LowerContext, i: int) -> int:
    """Weight slot i: omitted, float32, or hybrid int8 / uint8 dequantized to float32 (_weights policy)."""
    if c.input(i) is None:
        return c.no_value(OperandType.TENSOR_FLOAT32)
    return weights_operand(c, i) if i in LSTM_HYBRID_SLOTS else c.input_operand(i)


def check_lstm_weights(c: CheckContext, first: int) -> None:
    """The all-or-none rules of the 17 weight slots starting at `first` (TFLite layout = NNAPI's)."""
    def has(k: int) -> bool:
        return c.input(first + k) is not None
    for k, what in ((1, "input-to-forget"), (2, "input-to-cell"), (3, "input-to-output"),
                    (5, "recurrent-to-forget"), (6, "recurrent-to-cell"), (7, "recurrent-to-output"),
                    (12, "forget gate bias"), (13, "cell gate bias"), (14, "output gate bias")):
        if not has(k):
            c.refuse(Code.MISSING_OPERAND, f"{what} weights (input {first + k}) are required")
    if has(0) != has(4):
        c.refuse(Code.MISSING_OPERAND, "input-to-input and recurrent-to-input weights must be both given "
                 "or both omitted (CIFG)")
    if not has(15) and has(16):
        c.refuse(Code.MISSING_OPERAND, "a projection bias needs projection weights")


def check_lstm_layer_norm(c: CheckContext) -> bool:
    """Whether an LSTM or UNIDIRECTIONAL_SEQUENCE_LSTM (24 inputs) has layer-norm weights (`check_layer_norm`)."""
    return len(c.op.inputs) == len(LstmInput) and check_layer_norm(c, LSTM_LAYER_NORM_SLOTS,
                                                                   c.input(_I.INPUT_TO_INPUT_WEIGHTS) is None)


def check_layer_norm(c: CheckContext, slots: range, cifg: bool) -> bool:
    """Whether the op has layer-norm weights (`slots`); refuses a partial set (with CIFG the input gate's
    is omitted)."""
    present = [c.input(i) is not None for i in slots]
    if not any(present):
        return False
    needed = present[1:] if cifg else present
    if not all(needed):
        c.refuse(Code.MISSING_OPERAND, "layer-norm weights must be all given or all omitted")
    return True


@lowering_rule(BuiltinOperator.LSTM)
class Lstm(Rule):
    """TFLite LSTM (full kernel, 20 or 24 inputs) -> NNAPI LSTM (float32) or QUANTIZED_LSTM (int8).

    Float32: TFLite inputs 0..17 (input, 4 input-to-gate weights, 4 recurrent weights, 3 peephole,
    4 biases, projection weights and bias; optional ones -1) map to NNAPI slots 0..17 one to one;
    18 output state and 19 cell state (variables -> zero constants) to slots 18, 19; then NNAPI
    20 activation, 21 cell_clip, 22 proj_clip from the options; TFLite 20..23 layer-norm weights -> NNAPI
    23..26 (the 27-input form of API 29). NNAPI outputs: scratch buffer, output_state_out, cell_state_out
    (unread temporaries) and output (TFLite's output 0).

    Dynamic-range (hybrid) float LSTMs, with int8 constant weight matrices and peepholes, get
    those weights dequantized (`check_hybrid_weights`: DEQUANTIZE from API 29 as TFLite's delegate does, or
    float32 constants with `fold_dynamic_range_weights`). The BASIC kernel (uint8, 5 inputs) is refused:
    see the comment in `check`.

    Int8 (TFLite's 8x8_16 integer kernel, five intermediates; API 30): TFLite inputs 0..19 map to
    QUANTIZED_LSTM slots 0..19 (the int8 weights become TENSOR_QUANT8_SYMM constants, the int16 peephole
    and layer-norm weights TENSOR_QUANT16_SYMM), layer norm 20..23 to 20..23, then 24 cell_clip,
    25 proj_clip, 26..29 the scales of the op's four gate intermediates (2^-12 without layer norm, TFLite's
    fixed Q3.12), 30/31 the zero point (negated without projection: `hidden_zero_point`) and scale of its
    fifth (hidden state) intermediate. NNAPI outputs: output_state_out and cell_state_out (unread
    temporaries) and output (a same-type CAST carries its bytes where TFLite's output is quantized apart
    from the state: `write_output`). Without layer norm, where QUANTIZED_LSTM would drop the gate biases,
    they ride on constant columns joined to the input by a CONCATENATION (`int8_lstm_bias`). TFLite's
    delegate maps neither the LSTM nor the sequence LSTM in int8. The 8x8_8 kernel (12 intermediates) is
    refused.
    """

    options_type = LSTMOptions

    nnapi_ops = (OperationType.LSTM, OperationType.QUANTIZED_LSTM, OperationType.DEQUANTIZE,
                 OperationType.CONCATENATION, OperationType.CAST)
    min_api_level = 28
    dtypes = ("float32", "int8")
    constraints = ("full kernel; float32 (layer norm and hybrid weights need API 29) or int8 8x8_16 (API 30); "
                   "state from zero (variables)")

    def check(self, c: CheckContext) -> None:
        c.require_api(28, "LSTM (as TFLite's NNAPI delegate)")  # hand-written: the delegate's level, not the spec's
        o = c.options
        if o is not None and o.kernel_type == 1:
            # The uint8 basic kernel would map to QUANTIZED_16BIT_LSTM, but NNAPI's reference (and its CTS
            # vectors) multiply the concatenation [input, previous output] by weight columns ordered
            # [recurrent | input]; with TFLite's weights split as the delegate does, that disagrees with
            # TFLite's kernel (measured), so parity cannot hold.
            c.refuse(Code.OPTION, "the BASIC (uint8, 5-input) LSTM kernel is not lowered: NNAPI's "
                     "QUANTIZED_16BIT_LSTM reference pairs its weights differently from TFLite's kernel",
                     "convert the model with the full LSTM kernel")
            return
        if not c.require_inputs(20, 24):
            return
        x = c.input(0)
        c.require_rank(x, 2, 2)
        self.check_cell_operands(c, x, "LSTM", "layer-normalized LSTM (27-input NNAPI LSTM)")
        if o is not None:
            check_activation(c, o.fused_activation_function, lstm=True)
            check_clips(c)

    @staticmethod
    def check_cell_operands(c: CheckContext, x: Tensor | None, name: str, layer_norm_what: str) -> None:
        """The operands of one LSTM cell: TFLite's LSTM, and UNIDIRECTIONAL_SEQUENCE_LSTM, whose NNAPI forms
        (the sequence operation or its unrolled LSTM steps) take the same weights, states and layer norm."""
        if x is not None and x.type == TensorType.INT8:
            Lstm._check_int8(c)
        else:
            c.require_dtype(x, FLOAT)
            check_float_operands(c, range(0, len(c.op.inputs)), LSTM_STATE_SLOTS, LSTM_HYBRID_SLOTS)
            check_hybrid_weights(c, LSTM_HYBRID_SLOTS, name)
            if check_lstm_layer_norm(c):
                # hand-written: the 27-input (layer norm) form's feature level 3 is a rule of LSTM's validator
                c.require_api(29, layer_norm_what)
        check_lstm_weights(c, _I.INPUT_TO_INPUT_WEIGHTS)
        check_state_inputs(c, LSTM_STATE_SLOTS)
        check_static(c)

    @staticmethod
    def _check_int8(c: CheckContext) -> None:
        c.require_operation(OperationType.QUANTIZED_LSTM, "int8 LSTM (QUANTIZED_LSTM)")
        layer_norm = check_lstm_layer_norm(c)
        expected = {_I.INPUT: TensorType.INT8, _I.OUTPUT_STATE_IN: TensorType.INT8,
                    _I.CELL_STATE_IN: TensorType.INT16, _I.PROJECTION_BIAS: TensorType.INT32}
        expected.update({i: TensorType.INT8 for i in _INT8_WEIGHTS})
        expected.update({i: TensorType.INT16 for i in (*_PEEPHOLES, *LSTM_LAYER_NORM_SLOTS)})
        expected.update({i: TensorType.INT32 for i in _GATE_BIASES})
        for i, tt in expected.items():
            t = c.input(i)
            if t is not None and t.type != tt:
                c.refuse(Code.DTYPE, f"input {int(i)} '{t.name}' is {dtype_description(t)}; the int8 LSTM takes "
                         f"{tt.name.lower()} there", dtype_hint(t) if tt == TensorType.INT8 else "")
        for i in _INT8_WEIGHTS:
            t = c.input(i)
            if t is None:
                continue
            c.require_const(t, f"int8 LSTM weight {int(i)}")
            q = t.quantization
            if q.is_per_channel or any(z != 0 for z in q.zero_point):
                c.refuse(Code.QUANTIZATION, f"weight '{t.name}' must be per-tensor symmetric (zero point 0)")
        scaled = (*LSTM_HYBRID_SLOTS, *LSTM_STATE_SLOTS, *LSTM_LAYER_NORM_SLOTS)  # the tensors quantized by a scale
        for t in (c.input(_I.INPUT), *(c.input(i) for i in scaled), c.output(0)):
            if t is not None and not (t.quantization.scale and 0 < t.quantization.scale[0] < float("inf")):
                c.refuse(Code.QUANTIZATION, f"'{t.name}' has no finite positive quantization scale; the int8 "
                         "LSTM needs one")
        cell = c.input(_I.CELL_STATE_IN)
        if cell is not None and cell.quantization.scale and 0 < cell.quantization.scale[0] < float("inf"):
            shift = cell_shift(cell.quantization.scale[0])
            if shift is None:
                c.refuse(Code.QUANTIZATION, f"the cell state scale {cell.quantization.scale[0]} must be a power "
                         "of two no larger than 2^-9")
            elif shift < -15 and c.input(_I.INPUT_TO_INPUT_WEIGHTS) is None:
                # Below 2^-15 both kernels skip tanh(cell) and multiply what their input-gate buffer holds:
                # NNAPI's 1 - forget with CIFG, TFLite's a buffer nothing wrote in this step.
                c.refuse(Code.QUANTIZATION, f"a CIFG int8 LSTM with cell state scale {cell.quantization.scale[0]} "
                         "(below 2^-15): TFLite's kernel then reads a buffer it never wrote")
        if c.output(0).type != TensorType.INT8:
            c.refuse(Code.DTYPE, "the int8 LSTM's output must be int8")
        inter = [c.tensor(i) for i in c.op.intermediates]
        if len(inter) == 12:
            c.refuse(Code.OPTION, "an int8 LSTM with 12 intermediates runs TFLite's 8x8_8 kernel (8-bit gate "
                     "products), which NNAPI has no equivalent of")
        elif len(inter) != 5 or any(not t.quantization.scale for t in (inter if layer_norm else inter[4:])):
            # Without layer norm TFLite takes the gates in Q3.12 and reads only the hidden state's scale.
            c.refuse(Code.QUANTIZATION, "the int8 LSTM needs its 5 intermediates, quantized (the gate scales "
                     "with layer normalization, the hidden state's always)")
        elif c.input(_I.PROJECTION_WEIGHTS) is None and inter[4].quantization.zero_point \
                and inter[4].quantization.zero_point[0] == -128:
            # Without a projection the zero point is passed negated (see `hidden_zero_point`), and NNAPI's
            # reference reads that INT32 scalar as an int8: 128 would wrap.
            c.refuse(Code.QUANTIZATION, "an int8 LSTM without projection whose hidden state has zero point -128 "
                     "(NNAPI's QUANTIZED_LSTM would need +128 there, outside int8)")
        if not layer_norm:
            check_bias_columns(c)

    def lower(self, c: LowerContext) -> None:
        if c.input(0).type == TensorType.INT8:
            self._lower_int8(c)
            return
        o = c.options
        s = LstmSlot
        ins = {s.INPUT: c.input_operand(_I.INPUT), **by_name(s, LSTM_WEIGHT_SLOTS, lambda i: lstm_weight(c, i)),
               **by_name(s, LSTM_STATE_SLOTS, lambda i: state_in(c, i))}
        ins.update({s.ACTIVATION: c.i32(activation_code(o.fused_activation_function)), s.CELL_CLIP: c.f32(o.cell_clip),
                    s.PROJ_CLIP: c.f32(o.proj_clip)})
        if has_layer_norm(c):  # the 27-input form
            ins.update(by_name(s, LSTM_LAYER_NORM_SLOTS, lambda i: opt_in(c, i)))
        out = c.output_operand(0)
        batch = dim(c.input(0), 0)
        n_cell = dim(c.input(_I.INPUT_TO_OUTPUT_WEIGHTS), 0)
        n_out = dim(c.output(0), 1)
        gates = 3 if c.input(_I.INPUT_TO_INPUT_WEIGHTS) is None else 4  # CIFG: no input gate
        outs = [unread(c, out, (batch, gates * n_cell), "scratch"), unread(c, out, (batch, n_out), "h_out"),
                unread(c, out, (batch, n_cell), "c_out"), out]
        c.emit(OperationType.LSTM, slot_operands(ins), outs)

    @staticmethod
    def _lower_int8(c: LowerContext) -> None:
        parts = quantized_lstm_operands(c)
        x = extended_input(c, parts, c.input_operand(_I.INPUT), [int(d) for d in c.input(_I.INPUT).shape])
        h, cell = state_in(c, _I.OUTPUT_STATE_IN), state_in(c, _I.CELL_STATE_IN)
        if output_matches_state(c):
            emit_quantized_lstm(c, parts, x, h, cell, c.output_operand(0))
        else:
            write_output(c, emit_quantized_lstm(c, parts, x, h, cell)[2], c.output_operand(0))


# TFLite's gate scale without layer normalization: its 8x8_16 kernel then takes the gate products in Q3.12
# and ignores the four gate intermediates (the converter leaves them unquantized).
GATE_SCALE_WITHOUT_LAYER_NORM = 2.0 ** -12


class QuantizedLstmParts(NamedTuple):
    """The step-independent QUANTIZED_LSTM operands of an int8 TFLite LSTM."""

    by_slot: dict[IntEnum, int]  # every `QuantizedLstmSlot` but the input and the two states
    columns: np.ndarray  # int8 values appended to each input row (int8_lstm_bias), maybe none


def has_layer_norm(c: CheckContext | LowerContext) -> bool:
    return len(c.op.inputs) == len(LstmInput) and any(c.input(i) is not None for i in LSTM_LAYER_NORM_SLOTS)


def check_bias_columns(c: CheckContext) -> None:
    """Without layer normalization the gate biases ride on constant input columns (`int8_lstm_bias`): they
    must be constant, and not so large that they need more than MAX_WIDE_COLUMNS columns."""
    biases = []
    for i in _GATE_BIASES:
        t = c.input(i)
        if t is not None:
            if not c.require_const(t, f"int8 LSTM gate bias {i} (without layer normalization NNAPI gets it as "
                                   "constant input columns)"):
                return
            biases.append(np.asarray(c.const_value(t)))
    wide = wide_columns_needed(biases, input_zero_point(c))
    if wide > MAX_WIDE_COLUMNS:
        c.refuse(Code.OPERAND_VALUE, f"the int8 LSTM's gate biases would need {wide} constant input columns (at "
                 f"most {MAX_WIDE_COLUMNS}): without layer normalization NNAPI's QUANTIZED_LSTM adds no bias")


def input_zero_point(c: CheckContext | LowerContext) -> int:
    q = c.input(0).quantization
    return int(q.zero_point[0]) if q.zero_point else 0


def hidden_zero_point(c: LowerContext, hidden: Quantization) -> int:
    """The hidden-state zero point for QUANTIZED_LSTM slot 30. NNAPI's reference stores the hidden state as
    q - zp (its projection bias compensates with + zp), TFLite's kernel as q + zp; without a projection that
    value is the output (the two differed by 2 * zp, measured), so the zero point is passed negated there."""
    zp = int(hidden.zero_point[0]) if hidden.zero_point else 0
    return zp if c.input(_I.PROJECTION_WEIGHTS) is not None else -zp


def quantized_lstm_operands(c: LowerContext) -> QuantizedLstmParts:
    """The int8 weights become TENSOR_QUANT8_SYMM constants (the operand policy would make them ASYMM).
    Without layer normalization the gate biases move into extra input-to-gate weight columns (the bias
    operands get zeros) and the gate scales are TFLite's fixed Q3.12."""
    o = c.options
    layer_norm = has_layer_norm(c)
    if layer_norm:
        columns, extra = np.zeros(0, np.int8), [None] * 4
    else:
        biases = [None if c.input(i) is None else np.asarray(c.const_value(c.input(i))) for i in _GATE_BIASES]
        columns, extra = bias_columns(biases, input_zero_point(c))

    def symm_weight(i: int, more: np.ndarray | None = None) -> int:
        t = c.input(i)
        if t is None:
            return c.no_value(OperandType.TENSOR_QUANT8_SYMM)
        value = np.asarray(c.const_value(t), dtype=np.int8)
        if more is not None and more.shape[1]:
            value = np.concatenate([value, more], axis=1)
        return c.constant(OperandType.TENSOR_QUANT8_SYMM, value, scale=t.quantization.scale[0], name=t.name)

    def bias(i: int) -> int:
        t = c.input(i)
        if t is None:
            return c.no_value(OperandType.TENSOR_INT32)
        if layer_norm:
            return c.input_operand(i)
        scale = t.quantization.scale[0] if t.quantization.scale else 0.0
        return c.constant(OperandType.TENSOR_INT32, np.zeros(t.shape, np.int32), scale=scale, name=f"{t.name}_zero")

    def typed(i: int, omitted: OperandType) -> int:
        # QUANTIZED_LSTM validates every slot's type, omitted operands' too
        return c.input_operand(i) if c.input(i) is not None else c.no_value(omitted)

    s = QuantizedLstmSlot
    input_w = per_gate(_I, "INPUT_TO_{}_WEIGHTS")
    ins = by_name(s, input_w, lambda i: symm_weight(i, extra[input_w.index(i)]))
    ins.update(by_name(s, per_gate(_I, "RECURRENT_TO_{}_WEIGHTS"), symm_weight))
    ins.update(by_name(s, _PEEPHOLES, lambda i: typed(i, OperandType.TENSOR_QUANT16_SYMM)))
    ins.update(by_name(s, _GATE_BIASES, bias))
    ins.update({s.PROJECTION_WEIGHTS: symm_weight(_I.PROJECTION_WEIGHTS),
                s.PROJECTION_BIAS: typed(_I.PROJECTION_BIAS, OperandType.TENSOR_INT32)})
    inter = [c.tensor(i).quantization for i in c.op.intermediates]
    gate_scales = [q.scale[0] for q in inter[:4]] if layer_norm else [GATE_SCALE_WITHOUT_LAYER_NORM] * 4
    ins.update(by_name(s, LSTM_LAYER_NORM_SLOTS, lambda i: typed(i, OperandType.TENSOR_QUANT16_SYMM)))
    ins.update({s.CELL_CLIP: c.f32(o.cell_clip), s.PROJECTION_CLIP: c.f32(o.proj_clip)})
    ins.update({slot: c.f32(scale) for slot, scale in zip(per_gate(s, "{}_INTERMEDIATE_SCALE"), gate_scales)})
    ins.update({s.HIDDEN_STATE_ZERO_POINT: c.i32(hidden_zero_point(c, inter[4])),
                s.HIDDEN_STATE_SCALE: c.f32(inter[4].scale[0])})
    return QuantizedLstmParts(ins, columns)


def extended_input(c: LowerContext, parts: QuantizedLstmParts, x: int, shape: list[int]) -> int:
    """`x` (of `shape`) with the bias columns appended on its last axis (one CONCATENATION), or `x`."""
    k = len(parts.columns)
    if not k:
        return x
    od = c.info(x)
    ones = np.ones(shape[:-1] + [1], dtype=np.int8)
    const = c.constant(od.type, ones * parts.columns, scale=od.scale, zero_point=od.zero_point,
                       name=f"op{c.op.index}_bias_columns")
    joined = c.temp_like(x, shape[:-1] + [shape[-1] + k], name=f"op{c.op.index}_input_and_bias_columns")
    c.emit(OperationType.CONCATENATION, [x, const, c.i32(len(shape) - 1)], [joined])
    return joined


def emit_quantized_lstm(c: LowerContext, parts: QuantizedLstmParts, x: int, h: int, cell: int,
                        y: int | None = None) -> tuple[int, int, int]:
    """One QUANTIZED_LSTM step; returns (output state, cell state, output) operands (`y` if given)."""
    h_out = c.temp_like(h, name=f"op{c.op.index}_h_out")
    c_out = c.temp_like(cell, name=f"op{c.op.index}_c_out")
    y = c.temp_like(h, name=f"op{c.op.index}_y") if y is None else y
    s = QuantizedLstmSlot
    ins = {s.INPUT: x, **parts.by_slot, s.OUTPUT_STATE_IN: h, s.CELL_STATE_IN: cell}
    c.emit(OperationType.QUANTIZED_LSTM, slot_operands(ins), [h_out, c_out, y])
    return h_out, c_out, y


def output_matches_state(c: CheckContext | LowerContext) -> bool:
    """Whether the int8 LSTM's output is quantized like its output state, as QUANTIZED_LSTM writes it."""
    h, y = c.input(_I.OUTPUT_STATE_IN), c.output(0)
    return h is None or (h.quantization.scale, h.quantization.zero_point) == \
        (y.quantization.scale, y.quantization.zero_point)


def write_output(c: LowerContext, y: int, out: int) -> None:
    """Writes the QUANTIZED_LSTM output `y` (quantized as the output state) to `out`. TFLite's kernel copies
    the output state's bytes into its output whatever the output's declared quantization (the converter can
    give them different ones), so where they differ the bytes are carried over unchanged: a same-type CAST,
    which the reference runs as a raw copy ignoring scales (API 30 for TENSOR_QUANT8_ASYMM_SIGNED)."""
    c.emit(OperationType.CAST, [y], [out])
