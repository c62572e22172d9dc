"""Validate/prepare-time rules of CONCATENATION, RESIZE_BILINEAR, SQUEEZE, STRIDED_SLICE and LSH_PROJECTION
(Concatenation.cpp, ResizeImageOps.cpp, Squeeze.cpp, StridedSlice.cpp, LSHProjection.cpp of the NNAPI
reference operations)."""

from __future__ import annotations

import math
from enum import IntEnum

from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.nnapi.operations.validation import OperationView, validator


class ResizeSlot(IntEnum):
    """RESIZE_BILINEAR by output size (the by-scale form has FLOAT32 scales in slots 1, 2)."""
    INPUT = 0
    OUTPUT_WIDTH = 1
    OUTPUT_HEIGHT = 2
    NCHW = 3
    ALIGN_CORNERS = 4
    HALF_PIXEL_CENTERS = 5


@validator(OperationType.CONCATENATION)
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


@validator(OperationType.RESIZE_BILINEAR)
def validate_resize_bilinear(view: OperationView, feature_level: int) -> int:
    """ResizeImageOps.cpp: quantized input from feature level 3, the align_corners / half_pixel_centers flags
    from 4, and prepare refuses both flags set."""
    x = view.input(ResizeSlot.INPUT)
    needed = 3 if x is not None and x.type.is_quantized else 1
    align, half = view.scalar(ResizeSlot.ALIGN_CORNERS, False), view.scalar(ResizeSlot.HALF_PIXEL_CENTERS, False)
    if view.input(ResizeSlot.ALIGN_CORNERS) is not None or view.input(ResizeSlot.HALF_PIXEL_CENTERS) is not None:
        needed = 4
    if align and half:
        raise view.refuse(f"{view.describe(ResizeSlot.ALIGN_CORNERS)} and {view.describe(ResizeSlot.HALF_PIXEL_CENTERS)}"
                          " cannot both be true")
    return needed


# SQUEEZE input types and the feature level each needs (Squeeze.cpp's validate): no TENSOR_QUANT8_SYMM, which
# TFLite's NNAPI delegate gives an int8 tensor of zero point 0 below API 30
SQUEEZE_INPUT_LEVELS = {OperandType.TENSOR_FLOAT32: 2, OperandType.TENSOR_QUANT8_ASYMM: 2,
                        OperandType.TENSOR_FLOAT16: 3, OperandType.TENSOR_QUANT8_ASYMM_SIGNED: 4}


@validator(OperationType.SQUEEZE)
def validate_squeeze(view: OperationView, feature_level: int) -> int:
    x = view.input(0)
    if x is None or x.type not in SQUEEZE_INPUT_LEVELS:
        shown = x.type.name if x is not None else "omitted"
        raise view.refuse(f"{view.describe(0)} is {shown}; SQUEEZE takes "
                          f"{', '.join(t.name for t in SQUEEZE_INPUT_LEVELS)}")
    return SQUEEZE_INPUT_LEVELS[x.type]


class LshProjectionSlot(IntEnum):
    HASH = 0
    INPUT = 1
    WEIGHT = 2  # may be omitted (NO_VALUE), but the slot is there
    TYPE = 3


@validator(OperationType.LSH_PROJECTION)
def validate_lsh_projection(view: OperationView, feature_level: int) -> int:
    """LSHProjection.cpp: exactly four inputs, the weight slot present even when omitted."""
    if len(view.in_operands) != len(LshProjectionSlot):
        raise view.refuse(f"{len(view.in_operands)} inputs; LSH_PROJECTION takes {len(LshProjectionSlot)} (hash, "
                          "input, weight (which may be omitted), type)")
    return 1


class StridedSliceSlot(IntEnum):
    INPUT = 0
    BEGIN = 1
    END = 2
    STRIDES = 3
    BEGIN_MASK = 4
    END_MASK = 5
    SHRINK_AXIS_MASK = 6


# STRIDED_SLICE input types and the feature level each needs (StridedSlice.cpp's validate)
STRIDED_SLICE_INPUT_LEVELS = {OperandType.TENSOR_FLOAT32: 2, OperandType.TENSOR_QUANT8_ASYMM: 2,
                              OperandType.TENSOR_FLOAT16: 3, OperandType.TENSOR_QUANT8_ASYMM_SIGNED: 4}
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


@validator(OperationType.STRIDED_SLICE)
def validate_strided_slice(view: OperationView, feature_level: int) -> int:
    """StridedSlice.cpp: float32 / quant8 from feature level 2, float16 from 3, quant8 signed from 4; rank
    <= 4. With constant begin / end / strides / masks and a known input shape, the checks of its prepare:
    non-zero strides, and each shrunk axis (shrink_axis_mask) sliced with a positive stride to exactly one
    element. The spec says so ("the ith specification must define a slice of size 1, e.g. begin[i] = x,
    end[i] = x + 1") and the reference's prepare fails the execution otherwise, before the TFLite routine it
    runs (which would read begin's element and ignore end) is reached. TFLite's own STRIDED_SLICE ignores
    end on a shrunk axis, so a TFLite model may well hold begin -1, end 0 there (Keras' GRU does); nnconv's
    lowering writes end = begin + 1, TFLite's NNAPI delegate passes the model's values through."""
    x = view.input(StridedSliceSlot.INPUT)
    if x is None:
        return 2
    needed = STRIDED_SLICE_INPUT_LEVELS.get(x.type)
    if needed is None:
        accepted = ", ".join(t.name for t in STRIDED_SLICE_INPUT_LEVELS)
        raise view.refuse(f"{view.describe(StridedSliceSlot.INPUT)} is {x.type.name}; STRIDED_SLICE takes "
                          f"{accepted}")
    if not x.dimensions:
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
