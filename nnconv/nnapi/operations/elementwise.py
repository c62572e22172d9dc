"""The unary elementwise operations: those of Elementwise.cpp in the NNAPI reference operations (ABS, EXP,
FLOOR, LOG, RSQRT, SIN, SQRT), NEG, and the type conversions CAST, DEQUANTIZE and QUANTIZE.

Each of Elementwise.cpp's takes one tensor and gives one of the same type (`same_type_output`); what differs
is the input types the reference's validate lists and the feature level each type needs (`input_levels`):

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
from nnconv.nnapi.operations.spec import SampleAxis, declare, operation
from nnconv.nnapi.operations.view import OperationView

_T = OperationType
_O = OperandType
_FLOAT = {_O.TENSOR_FLOAT16: 3, _O.TENSOR_FLOAT32: 3}
FLOOR_MAX_RANK = 4


class ElementwiseSlot(IntEnum):
    """The one input of the unary elementwise operations."""
    INPUT = 0


# Elementwise with the input's shape and type, only input 0 carrying samples.
_UNARY = dict(inputs=ElementwiseSlot, same_type_output=True, sample_axis=SampleAxis.FIRST_ONLY)


@operation(_T.FLOOR, level=1, input_levels={_O.TENSOR_FLOAT16: 3, _O.TENSOR_FLOAT32: 1}, byte_op=True,
           float_batched=True, **_UNARY)
def validate_floor(view: OperationView, feature_level: int) -> int:
    x = view.input(ElementwiseSlot.INPUT)
    if x is not None and x.dimensions and len(x.dimensions) > FLOOR_MAX_RANK:
        raise view.refuse(f"{view.describe(ElementwiseSlot.INPUT)} has rank {len(x.dimensions)}; FLOOR takes rank "
                          f"<= {FLOOR_MAX_RANK}")
    return 1


declare(_T.ABS, level=3, input_levels={**_FLOAT, _O.TENSOR_INT32: 4}, byte_op=True, float_batched=True, **_UNARY)
declare(_T.EXP, level=3, input_levels=_FLOAT, byte_op=True, **_UNARY)
declare(_T.LOG, level=3, input_levels=_FLOAT, **_UNARY)
declare(_T.SIN, level=3, input_levels=_FLOAT, **_UNARY)
declare(_T.SQRT, level=3, input_levels=_FLOAT, float_batched=True, **_UNARY)
declare(_T.RSQRT, level=3, input_levels={**_FLOAT, _O.TENSOR_QUANT8_ASYMM: 7, _O.TENSOR_QUANT8_ASYMM_SIGNED: 7},
        **_UNARY)
declare(_T.NEG, level=3, byte_op=True, float_batched=True, **_UNARY)
# The type conversions: elementwise, but the output type is another (QUANTIZE, DEQUANTIZE) or any (CAST).
declare(_T.CAST, level=3, inputs=ElementwiseSlot, sample_axis=SampleAxis.FIRST_ONLY, float_batched=True)
declare(_T.DEQUANTIZE, level=1, inputs=ElementwiseSlot, byte_op=True, sample_axis=SampleAxis.FIRST_ONLY,
        float_batched=True)
declare(_T.QUANTIZE, level=3, inputs=ElementwiseSlot, byte_op=True, sample_axis=SampleAxis.FIRST_ONLY,
        float_batched=True)
