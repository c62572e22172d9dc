"""The operations that move a tensor's values without computing new ones: RESHAPE, SQUEEZE, EXPAND_DIMS,
TRANSPOSE, CONCATENATION, SPLIT, PACK, TILE, SLICE, STRIDED_SLICE, GATHER, REVERSE, CHANNEL_SHUFFLE, and
FILL and RANK, with the validate/prepare-time rules of Concatenation.cpp, Squeeze.cpp and StridedSlice.cpp
of the NNAPI reference operations."""

from __future__ import annotations

import math
from enum import IntEnum

from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.nnapi.operations.spec import AxisParam, SampleAxis, declare, operation
from nnconv.nnapi.operations.view import OperationView

_T = OperationType
_O = OperandType


class SqueezeSlot(IntEnum):
    """SQUEEZE_DIMS is optional: omitted or empty, every size-1 dimension is squeezed."""
    INPUT = 0
    SQUEEZE_DIMS = 1


# A copy is exact at any size: the data movement's float steps run batched
_MOVES = dict(float_batched=True)


# the n tensors from slot 0 on, then the axis (slot n)
@operation(_T.CONCATENATION, level=1, inputs="FIRST_INPUT", same_type_output=True,
           sample_axis=SampleAxis.CONCATENATION, **_MOVES)
def validate_concatenation(view: OperationView, feature_level: int) -> int:
    """Concatenation.cpp: quantized inputs whose (scale, zero point) differ from the output's need feature
    level 3 (before it, every input had to share the output's quantization). Slots: the n tensors, then
    the axis."""
    out = view.out_operands[0]
    if not out.type.is_quantized:
        return 1
    tensors = [od for od in view.in_operands[:-1] if od is not None]
    same = all(od.scale == out.scale and od.zero_point == out.zero_point for od in tensors)
    return 1 if same else 3


# SQUEEZE and STRIDED_SLICE input types and the feature level each needs (Squeeze.cpp's and StridedSlice.cpp's
# validate): no TENSOR_QUANT8_SYMM, which TFLite's NNAPI delegate gives an int8 tensor of zero point 0 below
# API 30
SLICING_INPUT_LEVELS = {_O.TENSOR_FLOAT32: 2, _O.TENSOR_QUANT8_ASYMM: 2, _O.TENSOR_FLOAT16: 3,
                        _O.TENSOR_QUANT8_ASYMM_SIGNED: 4}


@operation(_T.SQUEEZE, level=2, inputs=SqueezeSlot, input_levels=SLICING_INPUT_LEVELS, same_type_output=True,
           sample_axis=SampleAxis.SQUEEZE, **_MOVES)
def validate_squeeze(view: OperationView, feature_level: int) -> int:
    """Squeeze.cpp: the input is required (its types: `input_levels`)."""
    if view.input(SqueezeSlot.INPUT) is None:
        raise view.refuse(f"{view.describe(SqueezeSlot.INPUT)} is omitted; SQUEEZE takes "
                          f"{', '.join(t.name for t in SLICING_INPUT_LEVELS)}")
    return 1


class StridedSliceSlot(IntEnum):
    INPUT = 0
    BEGIN = 1
    END = 2
    STRIDES = 3
    BEGIN_MASK = 4
    END_MASK = 5
    SHRINK_AXIS_MASK = 6


STRIDED_SLICE_MAX_RANK = 4


def clamped_index(index: int, dim: int, positive_stride: bool) -> int:
    """The reference's ClampedIndex: a begin or end counted from the end when negative, clamped into the
    range a slice in the stride's direction can take (0..dim, or -1..dim-1 for a negative stride)."""
    if dim == 0:
        return 0
    if positive_stride:
        return dim if index >= dim else min(max(index, -dim), dim) % dim  # Python's % is PositiveRemainder
    return -1 if index < -dim else min(max(index, -dim), dim - 1) % dim


def strided_slice_extent(dim: int, begin: int, end: int, stride: int, begin_full: bool, end_full: bool) -> int:
    """How many elements one axis of a strided slice keeps, as the reference's prepare counts them:
    ceil((end - begin) / stride) after the masks and `clamped_index`, at least 0."""
    positive = stride > 0
    b = (0 if positive else dim - 1) if begin_full else clamped_index(begin, dim, positive)
    e = (dim if positive else -1) if end_full else clamped_index(end, dim, positive)
    return max(0, math.ceil((e - b) / stride))


@operation(_T.STRIDED_SLICE, level=2, inputs=StridedSliceSlot, input_levels=SLICING_INPUT_LEVELS,
           same_type_output=True, sample_axis=SampleAxis.STRIDED_SLICE, **_MOVES)
def validate_strided_slice(view: OperationView, feature_level: int) -> int:
    """StridedSlice.cpp: float32 / quant8 from feature level 2, float16 from 3, quant8 signed from 4
    (`input_levels`); rank <= 4. With constant begin / end / strides / masks and a known input shape, the
    checks of its prepare: non-zero strides, and each shrunk axis (shrink_axis_mask) sliced with a positive
    stride to exactly one element. The spec says so ("the ith specification must define a slice of size 1,
    e.g. begin[i] = x, end[i] = x + 1") and the reference's prepare fails the execution otherwise, before the
    TFLite routine it runs (which would read begin's element and ignore end) is reached. TFLite's own
    STRIDED_SLICE ignores end on a shrunk axis, so a TFLite model may well hold begin -1, end 0 there (Keras'
    GRU does); nnconv's lowering writes end = begin + 1, TFLite's NNAPI delegate passes the model's values
    through."""
    x = view.input(StridedSliceSlot.INPUT)
    needed = 2
    if x is None or not x.dimensions:
        return needed
    rank = len(x.dimensions)
    if rank > STRIDED_SLICE_MAX_RANK:
        raise view.refuse(f"{view.describe(StridedSliceSlot.INPUT)} has rank {rank}; STRIDED_SLICE takes rank <= "
                          f"{STRIDED_SLICE_MAX_RANK}")
    vectors = [view.constant(s) for s in (StridedSliceSlot.BEGIN, StridedSliceSlot.END, StridedSliceSlot.STRIDES)]
    masks = [view.scalar(s) for s in (StridedSliceSlot.BEGIN_MASK, StridedSliceSlot.END_MASK,
                                      StridedSliceSlot.SHRINK_AXIS_MASK)]
    if any(v is None for v in vectors) or any(m is None for m in masks) or 0 in x.dimensions:
        return needed  # decided at execution (the kernel checks the same)
    begin, end, strides = ([int(k) for k in v.reshape(-1)] for v in vectors)
    begin_mask, end_mask, shrink_mask = (int(m) for m in masks)
    for slot, v in zip((StridedSliceSlot.BEGIN, StridedSliceSlot.END, StridedSliceSlot.STRIDES), (begin, end, strides)):
        if len(v) != rank:
            raise view.refuse(f"{view.describe(slot)} has {len(v)} entries, the input has rank {rank}")
    for axis, (dim, b, e, stride) in enumerate(zip(x.dimensions, begin, end, strides)):
        if stride == 0:
            raise view.refuse(f"{view.describe(StridedSliceSlot.STRIDES)}: the stride of axis {axis} is 0")
        if not shrink_mask >> axis & 1:
            continue
        size = strided_slice_extent(dim, b, e, stride, bool(begin_mask >> axis & 1), bool(end_mask >> axis & 1))
        if stride < 0 or size != 1:
            raise view.refuse(
                f"axis {axis} is shrunk ({view.describe(StridedSliceSlot.SHRINK_AXIS_MASK)}) but begin {b}, end {e}, "
                f"stride {stride} on its extent {dim} select {size} element{'' if size == 1 else 's'}"
                f"{' with a negative stride' if stride < 0 else ''}: a shrunk axis must be sliced to exactly one "
                "element with a positive stride (begin x, end x + 1); the reference CPU's prepare fails the "
                "execution otherwise")
    return needed


# Reshape.cpp's validateReshape: int32 data from feature level 6 only (the type is older), no bool at all
declare(_T.RESHAPE, level=1, inputs="INPUT SHAPE", same_type_output=True, sample_axis=SampleAxis.RESHAPE,
        input_levels={_O.TENSOR_FLOAT32: 1, _O.TENSOR_FLOAT16: 3, _O.TENSOR_QUANT8_ASYMM: 1,
                      _O.TENSOR_QUANT8_ASYMM_SIGNED: 4, _O.TENSOR_INT32: 6}, **_MOVES)
declare(_T.EXPAND_DIMS, level=3, inputs="INPUT AXIS", sample_axis=SampleAxis.EXPAND_DIMS, **_MOVES)
# PERM is optional: omitted or empty, the dimensions are reversed
declare(_T.TRANSPOSE, level=2, inputs="INPUT PERM", same_type_output=True, sample_axis=SampleAxis.TRANSPOSE,
        **_MOVES)
declare(_T.SPLIT, level=3, inputs="INPUT AXIS NUM_SPLITS", sample_axis=AxisParam("AXIS", None), **_MOVES)
# the axis, then the n tensors from slot 1 on
declare(_T.PACK, level=6, inputs="AXIS FIRST_INPUT", sample_axis=SampleAxis.PACK, **_MOVES)
declare(_T.TILE, level=3, inputs="INPUT MULTIPLES", same_type_output=True, sample_axis=SampleAxis.TILE, **_MOVES)
declare(_T.SLICE, level=3, inputs="INPUT BEGIN SIZE", same_type_output=True, sample_axis=SampleAxis.SLICE, **_MOVES)
declare(_T.GATHER, level=3, inputs="INPUT AXIS INDICES", sample_axis=SampleAxis.GATHER, **_MOVES)
# an axis tensor of one value
declare(_T.REVERSE, level=7, inputs="INPUT AXIS", sample_axis=SampleAxis.REVERSE, **_MOVES)
declare(_T.CHANNEL_SHUFFLE, level=3, inputs="INPUT NUM_GROUPS AXIS", same_type_output=True,
        sample_axis=AxisParam("AXIS", None))
declare(_T.FILL, level=4, inputs="DIMS VALUE")
declare(_T.RANK, level=4, inputs="INPUT")
