"""The operations that rearrange or resample a tensor's spatial layout: PAD, PAD_V2, MIRROR_PAD,
DEPTH_TO_SPACE, SPACE_TO_DEPTH, BATCH_TO_SPACE_ND, SPACE_TO_BATCH_ND, RESIZE_BILINEAR and
RESIZE_NEAREST_NEIGHBOR, with the validate/prepare-time rules of ResizeImageOps.cpp of the NNAPI reference
operations."""

from __future__ import annotations

from enum import IntEnum

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.operations.spec import SampleAxis, declare, operation
from nnconv.nnapi.operations.view import OperationView

_T = OperationType


class ResizeSlot(IntEnum):
    """RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR by output size (the by-scale form has FLOAT32 or FLOAT16
    scales in slots 1, 2)."""
    INPUT = 0
    OUTPUT_WIDTH = 1
    OUTPUT_HEIGHT = 2
    NCHW = 3
    ALIGN_CORNERS = 4
    HALF_PIXEL_CENTERS = 5


@operation(_T.RESIZE_BILINEAR, level=1, inputs=ResizeSlot, same_type_output=True, sample_axis=SampleAxis.FIRST_ONLY)
def validate_resize_bilinear(view: OperationView, feature_level: int) -> int:
    """ResizeImageOps.cpp: quantized input from feature level 3, the align_corners / half_pixel_centers flags
    from 4, and prepare refuses both flags set."""
    x = view.input(ResizeSlot.INPUT)
    needed = 3 if x is not None and x.type.is_quantized else 1
    align, half = view.scalar(ResizeSlot.ALIGN_CORNERS, False), view.scalar(ResizeSlot.HALF_PIXEL_CENTERS, False)
    if view.input(ResizeSlot.ALIGN_CORNERS) is not None or view.input(ResizeSlot.HALF_PIXEL_CENTERS) is not None:
        needed = 4
    if align and half:
        raise view.refuse(f"{view.describe(ResizeSlot.ALIGN_CORNERS)} and "
                          f"{view.describe(ResizeSlot.HALF_PIXEL_CENTERS)} cannot both be true")
    return needed


declare(_T.RESIZE_NEAREST_NEIGHBOR, level=3, inputs=ResizeSlot, same_type_output=True,
        sample_axis=SampleAxis.FIRST_ONLY)
# Copies: batched at any size
declare(_T.PAD, level=2, inputs="INPUT PADDINGS", same_type_output=True, sample_axis=SampleAxis.PAD,
        float_batched=True)
declare(_T.PAD_V2, level=3, inputs="INPUT PADDINGS PAD_VALUE", same_type_output=True, sample_axis=SampleAxis.PAD,
        float_batched=True)
# MODE: 0 REFLECT (the edge excluded), 1 SYMMETRIC (repeated)
declare(_T.MIRROR_PAD, level=7, inputs="INPUT PADDINGS MODE", sample_axis=SampleAxis.PAD, float_batched=True)
# the layout flag (NCHW) from feature level 3
for _op in (_T.DEPTH_TO_SPACE, _T.SPACE_TO_DEPTH):
    declare(_op, level=1, inputs="INPUT BLOCK_SIZE NCHW", same_type_output=True, sample_axis=SampleAxis.FIRST_ONLY,
            float_batched=True)
declare(_T.BATCH_TO_SPACE_ND, level=2, inputs="INPUT BLOCK_SHAPE NCHW", same_type_output=True)
declare(_T.SPACE_TO_BATCH_ND, level=2, inputs="INPUT BLOCK_SHAPE PADDINGS NCHW", same_type_output=True)
