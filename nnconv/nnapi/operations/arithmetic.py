"""The broadcasting binary operations (ADD, SUB, MUL, DIV, MAXIMUM, MINIMUM, POW, the comparisons and
LOGICAL_AND / LOGICAL_OR), LOGICAL_NOT and SELECT, with the validate/prepare-time rules of ADD, SUB and MUL
(Broadcast.cpp of the NNAPI reference operations): one quantized type throughout and an output multiplier
the reference can quantize (`nnapi/quant_limits.py`, the same value the kernels use); TENSOR_INT32 operands
from feature level 4."""

from __future__ import annotations

from enum import IntEnum

from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.nnapi.operations.spec import SampleAxis, declare, operation
from nnconv.nnapi.operations.view import OperationView
from nnconv.nnapi.quant_limits import add_output_multiplier, mul_output_multiplier


_T = OperationType


class BinarySlot(IntEnum):
    """ADD, SUB, MUL, DIV: two broadcastable tensors and the fused activation."""
    INPUT1 = 0
    INPUT2 = 1
    ACTIVATION = 2


def validate_quant_binary(view: OperationView, multiply: bool) -> int:
    """Broadcast.cpp's validate and prepare for quantized ADD / SUB / MUL: both inputs and the output of one
    quantized type, and an output multiplier in (0, 1) (QuantizeMultiplierSmallerThanOneExp)."""
    a, b, out = view.input(BinarySlot.INPUT1), view.input(BinarySlot.INPUT2), view.out_operands[0]
    if a is None or b is None or not a.type.is_quantized:
        return 1
    both = f"{view.describe(BinarySlot.INPUT1)}, {view.describe(BinarySlot.INPUT2)}"
    if b.type is not a.type or out.type is not a.type:
        raise view.refuse(f"{both} and output 0 must share one type, got {a.type.name}, {b.type.name} and "
                          f"{out.type.name}")
    if not (a.scale > 0 and b.scale > 0 and out.scale > 0):
        raise view.refuse(f"{both} and output 0 need positive scales")
    if multiply:
        real = mul_output_multiplier(a.scale, b.scale, out.scale)
        if not real < 1.0:
            raise view.refuse(f"output 0 scale {out.scale:g} must exceed input1_scale * input2_scale "
                              f"({a.scale:g} * {b.scale:g}): the multiplier {real:.3g} is not below 1")
    else:
        real = add_output_multiplier(a.scale, b.scale, out.scale)
        if not real < 1.0:
            raise view.refuse(f"output 0 scale {out.scale:g} is too small for the inputs' scales ({a.scale:g}, "
                              f"{b.scale:g}): the output multiplier {real:.3g} is not below 1")
    return 1


# ADD, SUB, MUL: byte-table members (a one-value constant operand), batched as they broadcast
_ARITHMETIC = dict(inputs=BinarySlot, byte_op=True, sample_axis=SampleAxis.BROADCAST, float_batched=True)
# Broadcast.cpp's validate, per input type: float16 from feature level 3, signed quant8 and int32 from 4;
# SUB's unsigned quant8 from 3 (SUB itself is 2); DIV takes no quantized type at all.
_O = OperandType
_ADD_MUL_LEVELS = {_O.TENSOR_FLOAT32: 1, _O.TENSOR_FLOAT16: 3, _O.TENSOR_QUANT8_ASYMM: 1,
                   _O.TENSOR_QUANT8_ASYMM_SIGNED: 4, _O.TENSOR_INT32: 4}
_SUB_LEVELS = {**_ADD_MUL_LEVELS, _O.TENSOR_QUANT8_ASYMM: 3}
_DIV_LEVELS = {_O.TENSOR_FLOAT32: 1, _O.TENSOR_FLOAT16: 3, _O.TENSOR_INT32: 4}


@operation(_T.ADD, level=1, input_levels=_ADD_MUL_LEVELS, **_ARITHMETIC)
@operation(_T.SUB, level=2, input_levels=_SUB_LEVELS, **_ARITHMETIC)
def validate_add_sub(view: OperationView, feature_level: int) -> int:
    return validate_quant_binary(view, multiply=False)


@operation(_T.MUL, level=1, input_levels=_ADD_MUL_LEVELS, **_ARITHMETIC)
def validate_mul(view: OperationView, feature_level: int) -> int:
    return validate_quant_binary(view, multiply=True)


declare(_T.DIV, level=2, inputs=BinarySlot, input_levels=_DIV_LEVELS, sample_axis=SampleAxis.BROADCAST,
        float_batched=True)
declare(_T.POW, level=3, inputs="BASE EXPONENT", sample_axis=SampleAxis.BROADCAST)
# MAXIMUM, MINIMUM, the comparisons, LOGICAL_AND / LOGICAL_OR: two broadcastable tensors
_PAIR = "INPUT1 INPUT2"
for _op in (_T.MAXIMUM, _T.MINIMUM):
    declare(_op, level=3, inputs=_PAIR, same_type_output=True, byte_op=True, sample_axis=SampleAxis.BROADCAST,
            float_batched=True)
for _op in (_T.EQUAL, _T.NOT_EQUAL, _T.GREATER, _T.GREATER_EQUAL, _T.LESS, _T.LESS_EQUAL):
    declare(_op, level=3, inputs=_PAIR, sample_axis=SampleAxis.BROADCAST, float_batched=True)
for _op in (_T.LOGICAL_AND, _T.LOGICAL_OR):
    declare(_op, level=3, inputs=_PAIR, sample_axis=SampleAxis.BROADCAST)
declare(_T.LOGICAL_NOT, level=3, inputs="INPUT", sample_axis=SampleAxis.FIRST_ONLY)
# a TENSOR_BOOL8 condition and two tensors of its shape (no broadcasting)
declare(_T.SELECT, level=3, inputs="CONDITION INPUT1 INPUT2", sample_axis=SampleAxis.ALL_SAMPLED, float_batched=True)
