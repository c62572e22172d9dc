"""RESIZE_BILINEAR (NNAPI OperationType 23). Slots: see `_resize` (input, width, height[, NCHW]
[, align_corners, half_pixel_centers]).

Types: float32, float16 (computed in float32), quant8 asymm / signed (API 29 / 30). As TFLite's reference
kernel: source position src = (x + 0.5) * scale - 0.5 with half_pixel_centers, else x * scale;
x0 = max(floor(src), 0), x1 = min(ceil(src), in - 1); the four neighbours are weighted with (src - x0) in
float32. Quantized results are rounded to nearest (+0.5 then truncation toward zero of the non-negative
offset value), keeping the input's quantization.
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.quantization import is_quant8, qrange
from nnconv.runtime.kernels._resize import parse_resize, resize_scale
from nnconv.runtime.kernels._spatial import nhwc_to_nchw
from nnconv.runtime.kernels.registry import KernelCall, kernel


def _axis(out_size: int, in_size: int, align: bool, half: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lower index, upper index, fractional weight of the upper one) per output coordinate."""
    scale = resize_scale(in_size, out_size, align)
    pos = np.arange(out_size, dtype=np.float32)
    src = ((pos + np.float32(0.5)) * scale - np.float32(0.5)) if half else pos * scale
    src = src.astype(np.float32)
    lo = np.maximum(np.floor(src).astype(np.int64), 0)
    hi = np.minimum(np.ceil(src).astype(np.int64), in_size - 1)
    return lo, hi, (src - lo.astype(np.float32)).astype(np.float32)


@kernel(OperationType.RESIZE_BILINEAR)
def resize_bilinear(call: KernelCall) -> list[np.ndarray]:
    p = parse_resize(call)
    x = p.x
    y0, y1, fy = _axis(p.out_h, x.shape[1], p.align_corners, p.half_pixel)
    x0, x1, fx = _axis(p.out_w, x.shape[2], p.align_corners, p.half_pixel)
    xf = x.astype(np.float32)
    fy = fy[None, :, None, None]
    fx = fx[None, None, :, None]
    one = np.float32(1)
    top = xf[:, y0][:, :, x0] * (one - fy) * (one - fx) + xf[:, y1][:, :, x0] * fy * (one - fx)
    bottom = xf[:, y0][:, :, x1] * (one - fy) * fx + xf[:, y1][:, :, x1] * fy * fx
    y = (top + bottom).astype(np.float32)
    out = call.out_operands[0]
    if is_quant8(call.type(0)):
        lo, hi = qrange(out.type)
        y = np.clip(np.floor(y + np.float32(0.5)), lo, hi)
    y = y.astype(out.dtype)
    return [nhwc_to_nchw(y) if p.nchw else y]
