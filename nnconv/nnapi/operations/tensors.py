"""Validate/prepare-time rules of CONCATENATION and RESIZE_BILINEAR (Concatenation.cpp,
ResizeImageOps.cpp of the NNAPI reference operations)."""

from __future__ import annotations

from enum import IntEnum

from nnconv.nnapi.enums import OperationType
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
