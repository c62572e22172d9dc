"""The recurrent operations: LSTM, QUANTIZED_LSTM, QUANTIZED_16BIT_LSTM, the sequence LSTMs, RNN, SVDF and
the sequence RNNs, with their named operand slots, and the validate-time rules of QUANTIZED_LSTM (QLSTM.cpp of
the NNAPI reference: 32 inputs and 3 outputs of fixed types) and of UNIDIRECTIONAL_SEQUENCE_LSTM
(UnidirectionalSequenceLSTM.cpp, a float operation). The reference checks every input slot's declared type,
omitted optional operands' included, so an omitted peephole, projection or layer-norm operand must still be
declared with its slot's type.

The LSTMs share one block of weights, in this order: input-to-{input, forget, cell, output}, recurrent-to-*,
cell-to-{input, forget, output} (peepholes), the four gate biases, the projection weights and bias
(`LSTM_WEIGHTS`); a bidirectional LSTM has one block per direction (FW_..., BW_...).
"""

from __future__ import annotations

import math
from enum import IntEnum

import numpy as np

from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.nnapi.operations.spec import declare, operation
from nnconv.nnapi.operations.view import OperationView

_T = OperandType
_GATES = ("INPUT", "FORGET", "CELL", "OUTPUT")
# The 17 weights of one LSTM cell, in slot order (LSTM's slots 1..17).
LSTM_WEIGHTS = (*(f"INPUT_TO_{g}_WEIGHTS" for g in _GATES), *(f"RECURRENT_TO_{g}_WEIGHTS" for g in _GATES),
                "CELL_TO_INPUT_WEIGHTS", "CELL_TO_FORGET_WEIGHTS", "CELL_TO_OUTPUT_WEIGHTS",
                "INPUT_GATE_BIAS", "FORGET_GATE_BIAS", "CELL_BIAS", "OUTPUT_GATE_BIAS",
                "PROJECTION_WEIGHTS", "PROJECTION_BIAS")
_LAYER_NORM = tuple(f"{g}_LAYER_NORM_WEIGHTS" for g in _GATES)
_STATES_IN = ("OUTPUT_STATE_IN", "CELL_STATE_IN")


def per_gate(slots: type[IntEnum], pattern: str) -> tuple[IntEnum | None, ...]:
    """The slots `pattern` names for the gates input, forget, cell and output, in that order ("INPUT_TO_{}_WEIGHTS"
    gives INPUT_TO_INPUT_WEIGHTS, ...); None for a gate without one (the cell gate has no peephole)."""
    return tuple(slots.__members__.get(pattern.format(gate)) for gate in _GATES)


def _slots(name: str, doc: str, *names: str) -> type[IntEnum]:
    """The slot enum of an operation whose slots are `names`, numbered from 0 in order."""
    slots = IntEnum(name, list(names), start=0, module=__name__)  # type: ignore[misc]
    slots.__doc__ = doc
    return slots


def _direction(prefix: str, names: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(f"{prefix}_{n}" for n in names)


LstmSlot = _slots("LstmSlot", "LSTM: 23 inputs, 27 with the layer-norm weights (feature level 3).",
                  "INPUT", *LSTM_WEIGHTS, *_STATES_IN, "ACTIVATION", "CELL_CLIP", "PROJ_CLIP", *_LAYER_NORM)
LstmOutput = _slots("LstmOutput", "LSTM's outputs.", "SCRATCH_BUFFER", "OUTPUT_STATE_OUT", "CELL_STATE_OUT", "OUTPUT")
QuantizedLstmSlot = _slots(
    "QuantizedLstmSlot", "QUANTIZED_LSTM: LSTM's slots 0..19, then the layer-norm weights, the clips, the gates' "
    "intermediate scales and the hidden state's quantization.",
    "INPUT", *LSTM_WEIGHTS, *_STATES_IN, *_LAYER_NORM, "CELL_CLIP", "PROJECTION_CLIP",
    *(f"{g}_INTERMEDIATE_SCALE" for g in _GATES), "HIDDEN_STATE_ZERO_POINT", "HIDDEN_STATE_SCALE")
QuantizedLstmOutput = _slots("QuantizedLstmOutput", "QUANTIZED_LSTM's outputs.",
                             "OUTPUT_STATE_OUT", "CELL_STATE_OUT", "OUTPUT")
Quantized16BitLstmSlot = _slots(
    "Quantized16BitLstmSlot", "QUANTIZED_16BIT_LSTM: no peepholes, projection nor layer norm.",
    "INPUT", *LSTM_WEIGHTS[:8], *LSTM_WEIGHTS[11:15], "PREV_CELL_STATE", "PREV_OUTPUT")
Quantized16BitLstmOutput = _slots("Quantized16BitLstmOutput", "QUANTIZED_16BIT_LSTM's outputs.",
                                  "CELL_STATE_OUT", "OUTPUT")
SequenceLstmSlot = _slots("SequenceLstmSlot", "UNIDIRECTIONAL_SEQUENCE_LSTM: LSTM's slots 0..22, time_major, then "
                          "the layer-norm weights.",
                          "INPUT", *LSTM_WEIGHTS, *_STATES_IN, "ACTIVATION", "CELL_CLIP", "PROJ_CLIP", "TIME_MAJOR",
                          *_LAYER_NORM)
SequenceLstmOutput = _slots("SequenceLstmOutput", "UNIDIRECTIONAL_SEQUENCE_LSTM's outputs (the states from feature "
                            "level 4).", "OUTPUT", "OUTPUT_STATE_OUT", "CELL_STATE_OUT")
BidirectionalLstmSlot = _slots(
    "BidirectionalLstmSlot", "BIDIRECTIONAL_SEQUENCE_LSTM: one weight block per direction, the four states, the "
    "aux input and its weights per direction, the scalars, then the layer-norm weights per direction.",
    "INPUT", *_direction("FW", LSTM_WEIGHTS), *_direction("BW", LSTM_WEIGHTS), *_direction("FW", _STATES_IN),
    *_direction("BW", _STATES_IN), "AUX_INPUT", *_direction("FW_AUX", LSTM_WEIGHTS[:4]),
    *_direction("BW_AUX", LSTM_WEIGHTS[:4]), "ACTIVATION", "CELL_CLIP", "PROJ_CLIP", "MERGE_OUTPUTS", "TIME_MAJOR",
    *_direction("FW", _LAYER_NORM), *_direction("BW", _LAYER_NORM))
BidirectionalLstmOutput = _slots(
    "BidirectionalLstmOutput", "BIDIRECTIONAL_SEQUENCE_LSTM's outputs (BW_OUTPUT absent when merging; the states "
    "from feature level 4).", "FW_OUTPUT", "BW_OUTPUT", *_direction("FW", ("OUTPUT_STATE_OUT", "CELL_STATE_OUT")),
    *_direction("BW", ("OUTPUT_STATE_OUT", "CELL_STATE_OUT")))

_RNN_CELL = ("WEIGHTS", "RECURRENT_WEIGHTS", "BIAS", "HIDDEN_STATE_IN")
RnnSlot = _slots("RnnSlot", "RNN: one step.", "INPUT", *_RNN_CELL, "ACTIVATION")
RnnOutput = _slots("RnnOutput", "RNN's outputs (the same values).", "HIDDEN_STATE_OUT", "OUTPUT")
SequenceRnnSlot = _slots("SequenceRnnSlot", "UNIDIRECTIONAL_SEQUENCE_RNN (time_major an INT32 0 / 1).",
                         "INPUT", *_RNN_CELL, "ACTIVATION", "TIME_MAJOR")
SequenceRnnOutput = _slots("SequenceRnnOutput", "UNIDIRECTIONAL_SEQUENCE_RNN's outputs (the state from feature "
                           "level 4).", "OUTPUT", "HIDDEN_STATE_OUT")
BidirectionalRnnSlot = _slots(
    "BidirectionalRnnSlot", "BIDIRECTIONAL_SEQUENCE_RNN: one cell per direction, the aux input and its weights.",
    "INPUT", *_direction("FW", _RNN_CELL), *_direction("BW", _RNN_CELL), "AUX_INPUT", "FW_AUX_WEIGHTS",
    "BW_AUX_WEIGHTS", "ACTIVATION", "TIME_MAJOR", "MERGE_OUTPUTS")
BidirectionalRnnOutput = _slots("BidirectionalRnnOutput", "BIDIRECTIONAL_SEQUENCE_RNN's outputs (BW_OUTPUT absent "
                                "when merging; the states from feature level 4).",
                                "FW_OUTPUT", "BW_OUTPUT", "FW_HIDDEN_STATE_OUT", "BW_HIDDEN_STATE_OUT")
SvdfSlot = _slots("SvdfSlot", "SVDF: one time step.", "INPUT", "WEIGHTS_FEATURE", "WEIGHTS_TIME", "BIAS",
                  "STATE_IN", "RANK", "ACTIVATION")
SvdfOutput = _slots("SvdfOutput", "SVDF's outputs.", "STATE_OUT", "OUTPUT")

# QUANTIZED_LSTM's slot types, in slot order (`QuantizedLstmSlot`)
QUANTIZED_LSTM_INPUTS = (
    _T.TENSOR_QUANT8_ASYMM_SIGNED, *[_T.TENSOR_QUANT8_SYMM] * 8, *[_T.TENSOR_QUANT16_SYMM] * 3,
    *[_T.TENSOR_INT32] * 4, _T.TENSOR_QUANT8_SYMM, _T.TENSOR_INT32, _T.TENSOR_QUANT8_ASYMM_SIGNED,
    _T.TENSOR_QUANT16_SYMM, *[_T.TENSOR_QUANT16_SYMM] * 4, *[_T.FLOAT32] * 6, _T.INT32, _T.FLOAT32)
# output state, cell state, output
QUANTIZED_LSTM_OUTPUTS = (_T.TENSOR_QUANT8_ASYMM_SIGNED, _T.TENSOR_QUANT16_SYMM, _T.TENSOR_QUANT8_ASYMM_SIGNED)


def cell_shift(scale: float) -> int | None:
    """QLSTM.cpp's CheckedLog2 of the cell state's scale (held as float32) and its rule cellShift <= -9: the
    shift, or None when the scale is not a power of two no larger than 2^-9. The validator, the kernel and
    the int8 LSTM lowering rule all ask this."""
    s = float(np.float32(scale))
    if not 0 < s < math.inf:
        return None
    log2 = math.log2(s)
    shift = round(log2)
    return shift if abs(log2 - shift) < 1e-3 and shift <= -9 else None


@operation(OperationType.QUANTIZED_LSTM, level=4, inputs=QuantizedLstmSlot, outputs=QuantizedLstmOutput)
def validate_quantized_lstm(view: OperationView, feature_level: int) -> int:
    types = list(view.in_types) or [od.type if od is not None else None for od in view.in_operands]
    if len(types) != len(QUANTIZED_LSTM_INPUTS) or len(view.out_operands) != len(QUANTIZED_LSTM_OUTPUTS):
        raise view.refuse(f"takes {len(QUANTIZED_LSTM_INPUTS)} inputs and {len(QUANTIZED_LSTM_OUTPUTS)} outputs, "
                          f"got {len(types)} and {len(view.out_operands)}")
    for slot, (got, want) in enumerate(zip(types, QUANTIZED_LSTM_INPUTS)):
        if got is not None and got is not want:
            raise view.refuse(f"input {slot} is {got.name}, the slot takes {want.name} (omitted or not)")
    for slot, (od, want) in enumerate(zip(view.out_operands, QUANTIZED_LSTM_OUTPUTS)):
        if od.type is not want:
            raise view.refuse(f"output {slot} is {od.type.name}, the slot takes {want.name}")
    _check_shapes(view)
    scale = view.input(QuantizedLstmSlot.CELL_STATE_IN).scale
    if cell_shift(scale) is None:
        raise view.refuse(f"input {int(QuantizedLstmSlot.CELL_STATE_IN)} (cell state) scale {scale} must be a power "
                          "of two no larger than 2^-9")
    return 4


def _check_shapes(view: OperationView) -> None:
    """QLSTM.cpp's prepare: every operand's dimensions follow from the input [batch, input_size], the
    input-to-output weights [units, input_size] and the recurrent-to-output weights [units, output_size]
    (0 is an unknown extent)."""
    s = QuantizedLstmSlot
    required = (s.INPUT, s.INPUT_TO_FORGET_WEIGHTS, s.INPUT_TO_CELL_WEIGHTS, s.INPUT_TO_OUTPUT_WEIGHTS,
                s.RECURRENT_TO_FORGET_WEIGHTS, s.RECURRENT_TO_CELL_WEIGHTS, s.RECURRENT_TO_OUTPUT_WEIGHTS,
                s.FORGET_GATE_BIAS, s.CELL_BIAS, s.OUTPUT_GATE_BIAS, s.OUTPUT_STATE_IN, s.CELL_STATE_IN)
    for slot in required:
        if view.input(slot) is None:
            raise view.refuse(f"input {int(slot)} is required")
    x, w, r = (list(view.input(k).dimensions) for k in (s.INPUT, s.INPUT_TO_OUTPUT_WEIGHTS,
                                                         s.RECURRENT_TO_OUTPUT_WEIGHTS))
    if len(x) != 2 or len(w) != 2 or len(r) != 2:
        raise view.refuse("input 0 and the input-to-output / recurrent-to-output weights (inputs 4, 8) must be 2-D")
    (batch, n_in), units, n_out = x, w[0], r[1]
    if view.input(s.PROJECTION_WEIGHTS) is None and units and n_out and n_out != units:
        raise view.refuse(f"without projection weights the output size ({n_out}) must be the units ({units})")
    per_unit = (s.CELL_TO_INPUT_WEIGHTS, s.CELL_TO_FORGET_WEIGHTS, s.CELL_TO_OUTPUT_WEIGHTS, s.INPUT_GATE_BIAS,
                s.FORGET_GATE_BIAS, s.CELL_BIAS, s.OUTPUT_GATE_BIAS, *(s[f"{g}_LAYER_NORM_WEIGHTS"] for g in _GATES))
    expected = {**{s[f"INPUT_TO_{g}_WEIGHTS"]: (units, n_in) for g in _GATES},
                **{s[f"RECURRENT_TO_{g}_WEIGHTS"]: (units, n_out) for g in _GATES},
                **{slot: (units,) for slot in per_unit},
                s.PROJECTION_WEIGHTS: (n_out, units), s.PROJECTION_BIAS: (n_out,), s.OUTPUT_STATE_IN: (batch, n_out),
                s.CELL_STATE_IN: (batch, units)}
    for slot, shape in expected.items():  # in the order above: the first mismatch is named
        od = view.input(slot)
        if od is None:
            continue
        got = list(od.dimensions)
        if len(got) != len(shape) or any(g and e and g != e for g, e in zip(got, shape)):
            raise view.refuse(f"input {int(slot)} has dimensions {got}, expected {list(shape)} (0: unknown)")


# UNIDIRECTIONAL_SEQUENCE_LSTM (UnidirectionalSequenceLSTM.cpp): 28 inputs, every tensor slot of the input's
# float type (omitted optional ones included), the scalars activation (INT32), cell and projection clips (a
# scalar of the input's float type), time_major (BOOL); 1 output, or 3 with the final states (level 4).
SEQUENCE_LSTM_NUM_INPUTS = len(SequenceLstmSlot)
_SEQUENCE_LSTM_SCALARS = {SequenceLstmSlot.ACTIVATION: lambda t: _T.INT32,
                          SequenceLstmSlot.CELL_CLIP: lambda t: _FLOAT_SCALAR[t],
                          SequenceLstmSlot.PROJ_CLIP: lambda t: _FLOAT_SCALAR[t],
                          SequenceLstmSlot.TIME_MAJOR: lambda t: _T.BOOL}
_FLOAT_SCALAR = {_T.TENSOR_FLOAT32: _T.FLOAT32, _T.TENSOR_FLOAT16: _T.FLOAT16}


@operation(OperationType.UNIDIRECTIONAL_SEQUENCE_LSTM, level=3, inputs=SequenceLstmSlot, outputs=SequenceLstmOutput)
def validate_unidirectional_sequence_lstm(view: OperationView, feature_level: int) -> int:
    """A float operation only, at every feature level: an 8-bit LSTM is QUANTIZED_LSTM (one step) in NNAPI;
    the reference's validate refuses any other input type (TFLite's NNAPI delegate hands it its int8
    sequence LSTM as is, with float omitted operands)."""
    types = list(view.in_types) or [od.type if od is not None else None for od in view.in_operands]
    if len(types) != SEQUENCE_LSTM_NUM_INPUTS or len(view.out_operands) not in (1, 3):
        raise view.refuse(f"takes {SEQUENCE_LSTM_NUM_INPUTS} inputs and 1 or 3 outputs, got {len(types)} and "
                          f"{len(view.out_operands)}")
    x = types[0]
    if x not in _FLOAT_SCALAR:
        raise view.refuse(f"input 0 is {x.name}; UNIDIRECTIONAL_SEQUENCE_LSTM takes TENSOR_FLOAT32 or "
                          "TENSOR_FLOAT16 only")
    for slot, got in enumerate(types):
        want = _SEQUENCE_LSTM_SCALARS[slot](x) if slot in _SEQUENCE_LSTM_SCALARS else x
        if got is not None and got is not want:
            raise view.refuse(f"input {slot} is {got.name}, the slot takes {want.name} (omitted or not) with a "
                              f"{x.name} input")
    for slot, od in enumerate(view.out_operands):
        if od.type is not x:
            raise view.refuse(f"output {slot} is {od.type.name}, the operation's outputs are {x.name}")
    return 3 if len(view.out_operands) == 1 else 4


_O = OperationType


@operation(_O.LSTM, level=1, inputs=LstmSlot, outputs=LstmOutput)
def validate_lstm(view: OperationView, feature_level: int) -> int:
    """LegacyUtils.cpp's LSTM case: 23 inputs (feature level 1) or 27 with the layer-norm weights (level 3),
    four outputs, float32 or float16 (level 3) data."""
    n_in, n_out = len(view.in_operands), len(view.out_operands)
    if n_in not in (23, 27) or n_out != len(LstmOutput):
        raise view.refuse(f"takes 23 or 27 inputs and {len(LstmOutput)} outputs, got {n_in} and {n_out}")
    x = view.input(LstmSlot.INPUT)
    if x is not None and x.type not in (OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16):
        raise view.refuse(f"{view.describe(LstmSlot.INPUT)} is {x.type.name}; LSTM takes TENSOR_FLOAT32 or "
                          "TENSOR_FLOAT16 only")
    return 3 if n_in == 27 else 1
declare(_O.QUANTIZED_16BIT_LSTM, level=3, inputs=Quantized16BitLstmSlot, outputs=Quantized16BitLstmOutput)
declare(_O.BIDIRECTIONAL_SEQUENCE_LSTM, level=3, inputs=BidirectionalLstmSlot, outputs=BidirectionalLstmOutput)
declare(_O.RNN, level=1, inputs=RnnSlot, outputs=RnnOutput)
declare(_O.UNIDIRECTIONAL_SEQUENCE_RNN, level=3, inputs=SequenceRnnSlot, outputs=SequenceRnnOutput)
declare(_O.BIDIRECTIONAL_SEQUENCE_RNN, level=3, inputs=BidirectionalRnnSlot, outputs=BidirectionalRnnOutput)
declare(_O.SVDF, level=1, inputs=SvdfSlot, outputs=SvdfOutput)
