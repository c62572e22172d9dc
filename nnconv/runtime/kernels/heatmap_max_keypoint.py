"""HEATMAP_MAX_KEYPOINT (NNAPI OperationType 56): keypoint locations from per-box heatmaps.

Slots: 0 heatmaps [R, S, S, K] (NCHW [R, K, S, S] with slot 2), 1 boxes [R, 4] (x1, y1, x2, y2), 2 NCHW bool.
Outputs: 0 scores [R, K], 1 keypoints [R, K, 2] (x, y in image coordinates).
Types: float32, float16 (computed in float32), quant8 asymm / signed heatmaps with TENSOR_QUANT16_ASYMM
boxes and keypoints (scale 0.125); quantized values go through float32 like the reference.
For each heatmap the maximum (first in row-major order) is refined by a second-order Taylor expansion
on its 3x3 neighbourhood (mirrored at the borders); the refinement is skipped when the Hessian is
(nearly) singular and clipped to 1.5 cells (HeatmapMaxKeypoint.cpp `solveForDelta`).
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.runtime.kernels._boxes import F32, check_quant_boxes, from_float, to_float
from nnconv.runtime.kernels._spatial import nchw_to_nhwc
from nnconv.runtime.kernels.registry import KernelCall, kernel


@kernel(OperationType.HEATMAP_MAX_KEYPOINT)
def heatmap_max_keypoint(call: KernelCall) -> list[np.ndarray]:
    nchw = bool(call.scalar(2))
    heat = to_float(call, 0)
    boxes = to_float(call, 1)
    if heat.ndim != 4 or boxes.ndim != 2:
        raise call.fail("heatmaps must be 4-D and boxes 2-D")
    if nchw:
        heat = nchw_to_nhwc(heat)
    r, size, size_w, k = heat.shape
    if size != size_w or size < 2 or boxes.shape != (r, 4):
        raise call.fail(f"heatmaps {list(heat.shape)} must be square (>= 2) with one box each, boxes "
                        f"{list(boxes.shape)}")
    if call.type(0).is_quantized:
        check_quant_boxes(call, 1)
    if (boxes[:, 0] > boxes[:, 2]).any() or (boxes[:, 1] > boxes[:, 3]).any():
        raise call.fail("a box has x2 < x1 or y2 < y1")
    # The reference widens float16 but loosens its singularity test for it.
    tol = F32(1e-3) if call.type(0) is OperandType.TENSOR_FLOAT16 else F32(1e-5)

    flat = heat.reshape(r, size * size, k)
    idx = np.argmax(flat, axis=1)  # [R, K], first maximum
    max_score = np.take_along_axis(flat, idx[:, None, :], axis=1)[:, 0, :]
    mh, mw = idx // size, idx % size

    def mirror(v: np.ndarray) -> np.ndarray:
        return np.where(v < 0, 1, np.where(v >= size, size - 2, v))

    ri = np.arange(r)[:, None]
    ki = np.arange(k)[None, :]
    g = [[heat[ri, mirror(mh + dh), mirror(mw + dw), ki] for dw in (-1, 0, 1)] for dh in (-1, 0, 1)]
    b0 = -(g[1][2] - g[1][0]) / F32(2)
    b1 = -(g[2][1] - g[0][1]) / F32(2)
    a00 = g[1][0] - F32(2) * g[1][1] + g[1][2]
    a01 = (g[2][2] - g[2][0] - g[0][2] + g[0][0]) / F32(4)
    a11 = g[0][1] - F32(2) * g[1][1] + g[2][1]
    cross1 = a00 * a11
    det = cross1 - a01 * a01
    solvable = ~(np.abs(det) < tol + tol * cross1)
    with np.errstate(divide="ignore", invalid="ignore"):
        d0 = np.where(solvable, (a11 * b0 - a01 * b1) / det, F32(0)).astype(F32)
        d1 = np.where(solvable, (a00 * b1 - a01 * b0) / det, F32(0)).astype(F32)
    big = np.maximum(np.abs(d0), np.abs(d1))
    clip = big > F32(1.5)
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(clip, F32(1.5) / big, F32(1)).astype(F32)
    d0 = np.where(clip, d0 * factor, d0).astype(F32)
    d1 = np.where(clip, d1 * factor, d1).astype(F32)
    refined = (g[1][1] - b0 * d0 - b1 * d1
               + ((a00 * d0 + a01 * d1) * d0 + (a01 * d0 + a11 * d1) * d1) / F32(2))
    score = np.where(solvable, refined, max_score).astype(F32)

    x1, y1 = boxes[:, 0:1], boxes[:, 1:2]
    bw, bh = boxes[:, 2:3] - x1, boxes[:, 3:4] - y1
    wrel = (mw.astype(F32) + d0 + F32(0.5)) / F32(size)
    hrel = (mh.astype(F32) + d1 + F32(0.5)) / F32(size)
    keypoints = np.stack([wrel * bw + x1, hrel * bh + y1], axis=-1).astype(F32)
    return [from_float(score, call.out_operands[0]), from_float(keypoints, call.out_operands[1])]
