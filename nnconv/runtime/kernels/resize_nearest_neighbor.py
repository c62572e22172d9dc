"""RESIZE_NEAREST_NEIGHBOR (NNAPI OperationType 94, API 29). Slots: see `_resize` (input, width, height,
NCHW[, align_corners, half_pixel_centers]).

Types: float32, float16, quant8 asymm / signed (values are copied). As the reference: with offset 0.5 when
half_pixel_centers, else 0, the source index is round((x + offset) * scale) (halves away from zero) with
align_corners, floor(...) otherwise, then capped at in - 1 (and at 0 from below with half_pixel_centers).
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.quantization import round_half_away
from nnconv.runtime.kernels._resize import parse_resize, resize_scale
from nnconv.runtime.kernels._spatial import nhwc_to_nchw
from nnconv.runtime.kernels.registry import KernelCall, kernel


def _index(out_size: int, in_size: int, align: bool, half: bool) -> np.ndarray:
    scale = resize_scale(in_size, out_size, align)
    offset = np.float32(0.5) if half else np.float32(0.0)
    src = ((np.arange(out_size, dtype=np.float32) + offset) * scale).astype(np.float32)
    idx = (round_half_away(src) if align else np.floor(src)).astype(np.int64)
    idx = np.minimum(idx, in_size - 1)
    return np.maximum(idx, 0) if half else idx


@kernel(OperationType.RESIZE_NEAREST_NEIGHBOR)
def resize_nearest_neighbor(call: KernelCall) -> list[np.ndarray]:
    p = parse_resize(call)
    yi = _index(p.out_h, p.x.shape[1], p.align_corners, p.half_pixel)
    xi = _index(p.out_w, p.x.shape[2], p.align_corners, p.half_pixel)
    y = np.ascontiguousarray(p.x[:, yi][:, :, xi])
    return [nhwc_to_nchw(y) if p.nchw else y]
