"""Validate-time rules of the unary elementwise operations of Elementwise.cpp in the NNAPI reference
operations: ABS, EXP, FLOOR, LOG, RSQRT, SIN and SQRT.

Each takes one tensor and gives one of the same type (`SAME_TYPE_OUTPUT`); what differs is the input
types the reference's validate lists and the feature level each type needs:

| operation | types (feature level) |
| --- | --- |
| EXP, LOG, SIN, SQRT | TENSOR_FLOAT16, TENSOR_FLOAT32 (3, the operations' own) |
| ABS | as EXP, + TENSOR_INT32 (4) |
| FLOOR | TENSOR_FLOAT32 (1), TENSOR_FLOAT16 (3); rank <= 4 |
| RSQRT | as EXP, + TENSOR_QUANT8_ASYMM and TENSOR_QUANT8_ASYMM_SIGNED (7: Android 14's `validateRsqrt`) |

Any other input type is refused at every level: a quantized EXP or SQRT is not an operation the runtime
knows, whatever the operand types' own feature levels say (`default_feature_level` alone would let a
TENSOR_QUANT8_ASYMM_SIGNED SQRT through at level 4, and a quantized RSQRT three levels early). A quantized
RSQRT's output may carry its own scale and zero point: the reference dequantizes, computes in float and
quantizes with the output's (see runtime/kernels/rsqrt.py).
"""

from __future__ import annotations

from enum import IntEnum

from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.nnapi.operations.validation import OperationView, validator

_T = OperandType
_FLOAT = {_T.TENSOR_FLOAT16: 3, _T.TENSOR_FLOAT32: 3}
# input type -> the feature level the operation needs with it (Elementwise.cpp's validate functions)
ELEMENTWISE_INPUT_LEVELS: dict[OperationType, dict[OperandType, int]] = {
    OperationType.EXP: _FLOAT,
    OperationType.LOG: _FLOAT,
    OperationType.SIN: _FLOAT,
    OperationType.SQRT: _FLOAT,
    OperationType.ABS: {**_FLOAT, _T.TENSOR_INT32: 4},
    OperationType.FLOOR: {_T.TENSOR_FLOAT16: 3, _T.TENSOR_FLOAT32: 1},
    OperationType.RSQRT: {**_FLOAT, _T.TENSOR_QUANT8_ASYMM: 7, _T.TENSOR_QUANT8_ASYMM_SIGNED: 7},
}
FLOOR_MAX_RANK = 4


class ElementwiseSlot(IntEnum):
    """The one input of the unary elementwise operations."""
    INPUT = 0


@validator(*ELEMENTWISE_INPUT_LEVELS)
def validate_elementwise(view: OperationView, feature_level: int) -> int:
    levels = ELEMENTWISE_INPUT_LEVELS[view.operation.type]
    x = view.input(ElementwiseSlot.INPUT)
    if x is None:
        return 1
    needed = levels.get(x.type)
    if needed is None:
        accepted = ", ".join(t.name for t in levels)
        raise view.refuse(f"{view.describe(ElementwiseSlot.INPUT)} is {x.type.name}; {view.name} takes {accepted}")
    if view.operation.type is OperationType.FLOOR and x.dimensions and len(x.dimensions) > FLOOR_MAX_RANK:
        raise view.refuse(f"{view.describe(ElementwiseSlot.INPUT)} has rank {len(x.dimensions)}; FLOOR takes rank "
                          f"<= {FLOOR_MAX_RANK}")
    return needed
