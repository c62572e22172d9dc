"""Validate-time rules of QUANTIZED_LSTM (QLSTM.cpp of the NNAPI reference): 32 inputs and 3 outputs of
fixed types; and of UNIDIRECTIONAL_SEQUENCE_LSTM (UnidirectionalSequenceLSTM.cpp), a float operation. The
reference checks every input slot's declared type, omitted optional operands' included, so an omitted
peephole, projection or layer-norm operand must still be declared with its slot's type."""

from __future__ import annotations

import math

import numpy as np

from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.nnapi.operations.validation import OperationView, validator

_T = OperandType
# Slots: 0 input; 1..8 input-to-gate and recurrent-to-gate weights; 9..11 peepholes; 12..15 gate biases;
# 16, 17 projection weights and bias; 18, 19 output and cell state; 20..23 layer-norm weights; 24, 25 cell
# and projection clips; 26..29 gate intermediate scales; 30, 31 hidden state zero point and scale.
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


@validator(OperationType.QUANTIZED_LSTM)
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
    scale = view.input(19).scale
    if cell_shift(scale) is None:
        raise view.refuse(f"input 19 (cell state) scale {scale} must be a power of two no larger than 2^-9")
    return 4


def _check_shapes(view: OperationView) -> None:
    """QLSTM.cpp's prepare: every operand's dimensions follow from the input [batch, input_size], the
    input-to-output weights [units, input_size] and the recurrent-to-output weights [units, output_size]
    (0 is an unknown extent)."""
    for slot in (0, 2, 3, 4, 6, 7, 8, 13, 14, 15, 18, 19):
        if view.input(slot) is None:
            raise view.refuse(f"input {slot} is required")
    x, w, r = (list(view.input(s).dimensions) for s in (0, 4, 8))
    if len(x) != 2 or len(w) != 2 or len(r) != 2:
        raise view.refuse("input 0 and the input-to-output / recurrent-to-output weights (inputs 4, 8) must be 2-D")
    (batch, n_in), units, n_out = x, w[0], r[1]
    if view.input(16) is None and units and n_out and n_out != units:
        raise view.refuse(f"without projection weights the output size ({n_out}) must be the units ({units})")
    expected = {**{s: (units, n_in) for s in (1, 2, 3, 4)}, **{s: (units, n_out) for s in (5, 6, 7, 8)},
                **{s: (units,) for s in (9, 10, 11, 12, 13, 14, 15, 20, 21, 22, 23)},
                16: (n_out, units), 17: (n_out,), 18: (batch, n_out), 19: (batch, units)}
    for slot, shape in expected.items():
        od = view.input(slot)
        if od is None:
            continue
        got = list(od.dimensions)
        if len(got) != len(shape) or any(g and e and g != e for g, e in zip(got, shape)):
            raise view.refuse(f"input {slot} has dimensions {got}, expected {list(shape)} (0: unknown)")


# UNIDIRECTIONAL_SEQUENCE_LSTM (UnidirectionalSequenceLSTM.cpp): 28 inputs, every tensor slot of the input's
# float type (omitted optional ones included), the scalars activation (INT32), cell and projection clips (a
# scalar of the input's float type), time_major (BOOL); 1 output, or 3 with the final states (level 4).
SEQUENCE_LSTM_NUM_INPUTS = 28
_SEQUENCE_LSTM_SCALARS = {20: lambda t: _T.INT32, 21: lambda t: _FLOAT_SCALAR[t], 22: lambda t: _FLOAT_SCALAR[t],
                          23: lambda t: _T.BOOL}
_FLOAT_SCALAR = {_T.TENSOR_FLOAT32: _T.FLOAT32, _T.TENSOR_FLOAT16: _T.FLOAT16}


@validator(OperationType.UNIDIRECTIONAL_SEQUENCE_LSTM)
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
