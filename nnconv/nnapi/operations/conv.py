"""Validate-time rules of CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED (Conv2D.cpp, DepthwiseConv2D.cpp,
FullyConnected.cpp of the NNAPI reference operations): before feature level 3, a TENSOR_QUANT8_ASYMM
operation needed output_scale > input_scale * filter_scale."""

from __future__ import annotations

from enum import IntEnum

from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.nnapi.operations.validation import OperationView, f32, validator


class FilterSlot(IntEnum):
    """The slots CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED (weights) share; their scalars follow."""
    INPUT = 0
    FILTER = 1
    BIAS = 2


def scale_relation_level(view: OperationView) -> int:
    """Feature level 3 for a TENSOR_QUANT8_ASYMM operation whose output_scale is not above input_scale *
    filter_scale: NeuralNetworks.h requires that relation before API 29, and the validators raise the
    operation's minimum version instead of refusing it."""
    x, w, out = view.input(FilterSlot.INPUT), view.input(FilterSlot.FILTER), view.out_operands[0]
    if x is None or w is None or x.type is not OperandType.TENSOR_QUANT8_ASYMM \
            or w.type is not OperandType.TENSOR_QUANT8_ASYMM:
        return 1
    return 1 if f32(out.scale) > f32(f32(x.scale) * f32(w.scale)) else 3


@validator(OperationType.CONV_2D, OperationType.DEPTHWISE_CONV_2D, OperationType.FULLY_CONNECTED)
def validate_filter_op(view: OperationView, feature_level: int) -> int:
    return scale_relation_level(view)
