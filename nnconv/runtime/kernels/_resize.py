"""Shared parameter handling of RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR.

Slots: 0 input [N,H,W,C], 1 output width, 2 output height (INT32 sizes, or since API 29 FLOAT32 /
FLOAT16 scale factors: out = floor(in * factor)), [3 NCHW bool], [4 align_corners, 5 half_pixel_centers].
NNAPI takes the width before the height.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nnconv.nnapi.enums import OperandType
from nnconv.runtime.kernels._spatial import nchw_to_nhwc
from nnconv.runtime.kernels.registry import KernelCall


@dataclass
class ResizeParams:
    """The operands of a resize call, the input in NHWC."""

    x: np.ndarray  # NHWC view of the input
    out_h: int
    out_w: int
    nchw: bool
    align_corners: bool
    half_pixel: bool


def parse_resize(call: KernelCall) -> ResizeParams:
    """Reads and validates the operands of RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR."""
    x = call.tensor(0)
    if x.ndim != 4:
        raise call.fail(f"input must be 4-D, got {x.ndim}-D")
    nchw = bool(call.opt_scalar(3, False)) if call.num_inputs > 3 else False
    xh = nchw_to_nhwc(x) if nchw else x
    in_h, in_w = xh.shape[1], xh.shape[2]
    if call.type(1) is OperandType.INT32:
        out_w, out_h = int(call.scalar(1)), int(call.scalar(2))
    else:
        # The reference multiplies in float32 and floors.
        out_w = int(np.floor(np.float32(in_w) * np.float32(call.scalar(1))))
        out_h = int(np.floor(np.float32(in_h) * np.float32(call.scalar(2))))
    if out_h < 1 or out_w < 1:
        raise call.fail(f"output size {out_h}x{out_w} must be positive")
    align = bool(call.opt_scalar(4, False)) if call.num_inputs > 4 else False
    half = bool(call.opt_scalar(5, False)) if call.num_inputs > 5 else False
    if align and half:
        raise call.fail("align_corners and half_pixel_centers cannot both be true")
    return ResizeParams(xh, out_h, out_w, nchw, align, half)


def resize_scale(in_size: int, out_size: int, align_corners: bool) -> np.float32:
    """`calculateResizeScale`: in/out, or (in-1)/(out-1) with align_corners and out > 1, in float32."""
    if align_corners and out_size > 1:
        return np.float32(in_size - 1) / np.float32(out_size - 1)
    return np.float32(in_size) / np.float32(out_size)
