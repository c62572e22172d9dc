"""The filter operations, CONV_2D, DEPTHWISE_CONV_2D, GROUPED_CONV_2D, TRANSPOSE_CONV_2D, FULLY_CONNECTED and
BATCH_MATMUL, with the validate-time rules of Conv2D.cpp, DepthwiseConv2D.cpp, GroupedConv2D.cpp,
TransposeConv2D.cpp and FullyConnected.cpp of the NNAPI reference operations: before feature level 3, a
TENSOR_QUANT8_ASYMM operation needed output_scale > input_scale * filter_scale; the convolutions' scalars
(their forms in `window.py`, each spec's `window`) have the types of their form, and the layout flag or
dilation needs feature level 3."""

from __future__ import annotations

from enum import IntEnum

from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.nnapi.operations import window
from nnconv.nnapi.operations.spec import SampleAxis, declare, operation, spec_of
from nnconv.nnapi.operations.view import OperationView, f32

_T = OperationType


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


_QUANT_INPUTS = (OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED)


def quant_filter_types(op: OperationType, input_type: OperandType) -> tuple[OperandType, ...]:
    """The filter types a quantized input takes: the input's own, and for the convolutions (not
    FULLY_CONNECTED, whose validate expects the input's type in every slot but the bias) per-channel
    TENSOR_QUANT8_SYMM_PER_CHANNEL. A uint8 input never takes an int8 filter, nor the reverse."""
    if op is OperationType.FULLY_CONNECTED:
        return (input_type,)
    return (input_type, OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL)


@operation(_T.GROUPED_CONV_2D, level=3, window=window.GROUPED_CONV_2D, sample_axis=SampleAxis.FIRST_ONLY)
@operation(_T.TRANSPOSE_CONV_2D, level=3, window=window.TRANSPOSE_CONV_2D, sample_axis=SampleAxis.TRANSPOSE_CONV)
def validate_window_scalars(view: OperationView, feature_level: int) -> int:
    """The scalars of GROUPED_CONV_2D's and TRANSPOSE_CONV_2D's forms have their types."""
    return window.window_level(view, spec_of(view.operation.type).window)


@operation(_T.CONV_2D, level=1, window=window.CONV_2D, sample_axis=SampleAxis.FIRST_ONLY)
@operation(_T.DEPTHWISE_CONV_2D, level=1, window=window.DEPTHWISE_CONV_2D, sample_axis=SampleAxis.FIRST_ONLY)
# FULLY_CONNECTED flattens its input to [rows, input_size]: per sample only when a sample is one row, which
# batched execution's leading-1 check of its output [rows, units] enforces
@operation(_T.FULLY_CONNECTED, level=1, inputs="INPUT WEIGHTS BIAS ACTIVATION", sample_axis=SampleAxis.FIRST_ONLY)
def validate_filter_op(view: OperationView, feature_level: int) -> int:
    """The operand type combinations of the reference's validate: a float input with a filter and bias of its
    type, a quantized input with a filter of its type (or, for the convolutions, per-channel: FullyConnected.cpp
    takes none) and a TENSOR_INT32 bias; a rank-1 bias of one value per output
    channel (prepare); an output of the input's type (a file whose filter or bias slot names another operand,
    or whose bias does not match the filter, is refused here, not in a kernel)."""
    x, w, b = view.input(FilterSlot.INPUT), view.input(FilterSlot.FILTER), view.input(FilterSlot.BIAS)
    out = view.out_operands[0] if view.out_operands else None
    if x is not None and w is not None and b is not None:
        quant = x.type in _QUANT_INPUTS
        filters = quant_filter_types(view.operation.type, x.type) if quant else ()
        if quant and (w.type not in filters or b.type is not OperandType.TENSOR_INT32):
            raise view.refuse(f"a {x.type.name} input needs a {' or '.join(t.name for t in filters)} filter and a "
                              f"TENSOR_INT32 bias, got {w.type.name} and {b.type.name}")
        if not quant and (w.type is not x.type or b.type is not x.type):
            raise view.refuse(f"a {x.type.name} input needs a filter and a bias of its type, got {w.type.name} "
                              f"and {b.type.name}")
        if len(b.dimensions) != 1:
            raise view.refuse(f"{view.describe(FilterSlot.BIAS)} must be 1-D, got {list(b.dimensions)}")
        # prepare: one bias value per output channel (filter dimension 0, a depthwise filter's last)
        units_axis = 3 if view.operation.type is OperationType.DEPTHWISE_CONV_2D else 0
        units = w.dimensions[units_axis] if len(w.dimensions) > units_axis else 0
        if units and b.dimensions[0] and b.dimensions[0] != units:
            raise view.refuse(f"{view.describe(FilterSlot.BIAS)} has {b.dimensions[0]} values for the filter's "
                              f"{units} output channels")
    if x is not None and out is not None and out.type is not x.type:
        raise view.refuse(f"output 0 is {out.type.name}, {view.describe(FilterSlot.INPUT)} is {x.type.name}")
    signature = spec_of(view.operation.type).window
    needed = 1 if signature is None else window.window_level(view, signature)
    return max(needed, scale_relation_level(view))


declare(_T.BATCH_MATMUL, level=6, inputs="LHS RHS ADJ_X ADJ_Y", sample_axis=SampleAxis.BATCHES)
