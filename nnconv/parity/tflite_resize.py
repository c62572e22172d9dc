"""TFLite's integer RESIZE_BILINEAR (its reference kernel for int8 / int16, `ResizeBilinearInteger`), which
`verify`'s rerun computes quantized RESIZE_BILINEAR operations with instead of NNAPI's float interpolation, to
prove a difference is arithmetic only (nnconv/parity/tflite_arithmetic.py); never an NNAPI semantics.

Positions in Q10: scale_10 = (1024 * in + out // 2) // out (align_corners: (in - 1) and (out - 1));
src = x * scale_10 (+ scale_10 // 2 - 512 with half_pixel_centers); x0 = max(trunc(src / 1024), 0),
x1 = min(trunc((src + 1023) / 1024), in - 1); the four products in Q20 are summed in int64 and rounded
half away from zero ((v +- 2^19) / 2^20, C division). NNAPI's reference weighs in float32 and rounds the
float sum (nnconv/runtime/kernels/resize_bilinear.py), so ~1% of values of an upsampling land one step apart.
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.quantization import qrange
from nnconv.runtime.kernels._resize import parse_resize
from nnconv.runtime.kernels._spatial import nhwc_to_nchw
from nnconv.runtime.kernels.registry import KernelCall

ONE_Q10 = 1 << 10


def _axis_q10(out_size: int, in_size: int, align: bool, half: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per output coordinate: the Q10 fraction (src - 1024 * x0) and the indices x0, x1."""
    if align and out_size > 1:
        scale = (ONE_Q10 * (in_size - 1) + (out_size - 1) // 2) // (out_size - 1)
    else:
        scale = (ONE_Q10 * in_size + out_size // 2) // out_size
    src = np.arange(out_size, dtype=np.int64) * scale
    if half:
        src += scale // 2 - (ONE_Q10 >> 1)
    lo = np.maximum(np.fix(src / ONE_Q10).astype(np.int64), 0)  # C division truncates toward zero
    hi = np.minimum(np.fix((src + ONE_Q10 - 1) / ONE_Q10).astype(np.int64), in_size - 1)
    return src - ONE_Q10 * lo, lo, hi


def resize_bilinear_integer(x: np.ndarray, out_h: int, out_w: int, align: bool, half: bool,
                            lo: int, hi: int) -> np.ndarray:
    """NHWC storage values `x` resized as TFLite's integer kernel does, clamped to [lo, hi] (int64)."""
    fy, y0, y1 = _axis_q10(out_h, x.shape[1], align, half)
    fx, x0, x1 = _axis_q10(out_w, x.shape[2], align, half)
    xi = x.astype(np.int64)
    top, bottom = np.take(xi, y0, axis=1), np.take(xi, y1, axis=1)
    wy1 = fy[None, :, None, None]
    wx1 = fx[None, None, :, None]
    wy0, wx0 = ONE_Q10 - wy1, ONE_Q10 - wx1
    acc = (np.take(top, x0, axis=2) * wy0 * wx0 + np.take(bottom, x0, axis=2) * wy1 * wx0
           + np.take(top, x1, axis=2) * wy0 * wx1 + np.take(bottom, x1, axis=2) * wy1 * wx1)
    half_unit = 1 << 19
    acc += np.where(acc > 0, half_unit, -half_unit)
    out = np.sign(acc) * (np.abs(acc) >> 20)  # C division by 2^20: toward zero
    return np.clip(out, lo, hi)


def resize_bilinear_integer_kernel(call: KernelCall) -> list[np.ndarray]:
    """A quantized RESIZE_BILINEAR (either layout, NNAPI's operands) computed by `resize_bilinear_integer`."""
    p = parse_resize(call)
    out = call.out_operands[0]
    y = resize_bilinear_integer(p.x, p.out_h, p.out_w, p.align_corners, p.half_pixel, *qrange(out.type))
    y = y.astype(out.dtype)
    return [nhwc_to_nchw(y) if p.nchw else y]
