"""Validate-time rules of QUANTIZED_LSTM (QLSTM.cpp of the NNAPI reference): 32 inputs and 3 outputs of
fixed types. The reference checks every input slot's declared type, omitted optional operands' included, so
an omitted peephole, projection or layer-norm operand must still be declared with its slot's type."""

from __future__ import annotations

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
    return 4
