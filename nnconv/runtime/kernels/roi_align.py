"""ROI_ALIGN (NNAPI OperationType 81): average of bilinear samples over each output bin of each region.

Slots: 0 input [N, H, W, C] (NCHW with slot 9), 1 rois [R, 4] (x1, y1, x2, y2 in input-image
coordinates), 2 batch index of each roi [R], 3 output height, 4 output width, 5 height stride, 6 width
stride (image / feature-map ratios), 7 height sampling ratio, 8 width sampling ratio (0: adaptive,
ceil(bin size)), 9 NCHW bool.
Types: float32, float16 (computed in float32), quant8 asymm / signed with TENSOR_QUANT16_ASYMM rois
(scale 0.125). The quantized path is integer like the reference: bilinear weights quantized to 1/255,
int32 sums of weight * (q - zp), one requantization per roi with input_scale / 255 / output_scale /
samples (RoiAlign.cpp). Zero rois give a zero-sized output.
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.quantization import (is_quant8, multiply_by_quantized_multiplier, qrange, quantize_multiplier,
                                       round_half_away)
from nnconv.runtime.kernels._boxes import F32, check_quant_boxes, roi_call, roi_chunks
from nnconv.runtime.kernels._spatial import nhwc_to_nchw
from nnconv.runtime.kernels.registry import KernelCall, kernel

W_SCALE = F32(1.0) / F32(255.0)  # the quantized path's bilinear weight step


@kernel(OperationType.ROI_ALIGN)
def roi_align(call: KernelCall) -> list[np.ndarray]:
    rc = roi_call(call, 9)
    xh, rois, batch, nchw, out_h, out_w = rc.x, rc.rois, rc.batch, rc.nchw, rc.out_h, rc.out_w
    n, in_h, in_w, depth = xh.shape
    num_rois = rois.shape[0]
    if min(n, in_h, in_w, depth) <= 0:
        raise call.fail("every input dimension must be positive")
    h_ratio, w_ratio = int(call.scalar(7)), int(call.scalar(8))
    if h_ratio < 0 or w_ratio < 0:
        raise call.fail("sampling ratios must be non-negative")
    quant = is_quant8(call.type(0))
    if quant:
        check_quant_boxes(call, 1, "rois")
    out_od = call.out_operands[0]
    if num_rois == 0:
        return [rc.empty_output(out_od)]

    h_scale, w_scale = F32(1.0) / rc.h_stride, F32(1.0) / rc.w_stride
    r = rois.astype(F32)
    if quant:
        x1, y1 = r[:, 0] * w_scale * F32(0.125), r[:, 1] * h_scale * F32(0.125)
        x2, y2 = r[:, 2] * w_scale * F32(0.125), r[:, 3] * h_scale * F32(0.125)
        bad = (x1 > in_w) | (y1 > in_h) | (x2 > in_w) | (y2 > in_h) | (x1 > x2) | (y1 > y2)
    else:
        bad = (r < 0).any(axis=1) | (r[:, 0] * w_scale > in_w) | (r[:, 1] * h_scale > in_h)
        bad |= (r[:, 2] * w_scale > in_w) | (r[:, 3] * h_scale > in_h) | (r[:, 0] > r[:, 2]) | (r[:, 1] > r[:, 3])
        x1, y1, x2, y2 = r[:, 0] * w_scale, r[:, 1] * h_scale, r[:, 2] * w_scale, r[:, 3] * h_scale
    bad |= (batch < 0) | (batch >= n)
    if bad.any():
        k = int(np.argmax(bad))
        raise call.fail(f"roi {k} ({rois[k].tolist()}, batch {int(batch[k])}) is malformed or out of the image")

    w_step = np.maximum(x2 - x1, F32(1)) / F32(out_w)
    h_step = np.maximum(y2 - y1, F32(1)) / F32(out_h)
    # Adaptive sampling ratios differ per roi: rois sharing a (h, w) ratio pair are computed together.
    hs = np.full(num_rois, h_ratio, dtype=np.int64) if h_ratio > 0 else np.ceil(h_step).astype(np.int64)
    ws = np.full(num_rois, w_ratio, dtype=np.int64) if w_ratio > 0 else np.ceil(w_step).astype(np.int64)
    y = np.empty((num_rois, out_h, out_w, depth), dtype=out_od.dtype)
    pairs = np.unique(np.stack([hs, ws], axis=1), axis=0)
    for sh, sw in pairs.tolist():  # one group per distinct sampling grid
        group = np.flatnonzero((hs == sh) & (ws == sw))
        for part in roi_chunks(group.size, out_h * sh * out_w * sw * depth):  # bounded memory
            g = group[part]
            y[g] = _group(call, xh, batch[g], x1[g], y1[g], w_step[g], h_step[g], out_h, out_w, sh, sw, quant)
    return [nhwc_to_nchw(y) if nchw else y]


def _axis_samples(start: np.ndarray, step: np.ndarray, out: int, ratio: int, size: int
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sample positions of one axis for rois [G]: (low index, high index, fraction of the high one),
    each [G, out, ratio], with samples beyond the last row/column clamped onto it (fraction 0)."""
    bin_size = step / F32(ratio)
    bin_start = step[:, None] * np.arange(out, dtype=F32)[None, :] + start[:, None]  # [G, out]
    pos = (bin_start[:, :, None] + (bin_size / F32(2))[:, None, None]
           + bin_size[:, None, None] * np.arange(ratio, dtype=F32)[None, None, :]).astype(F32)
    lo = np.floor(pos).astype(np.int64)
    frac = (pos - lo.astype(F32)).astype(F32)
    edge = lo >= size - 1
    lo = np.where(edge, size - 1, lo)
    hi = np.where(edge, size - 1, lo + 1)
    frac = np.where(edge, F32(0), frac).astype(F32)
    return lo, hi, frac


def _group(call: KernelCall, xh: np.ndarray, batch: np.ndarray, x1: np.ndarray, y1: np.ndarray,
           w_step: np.ndarray, h_step: np.ndarray, out_h: int, out_w: int, sh: int, sw: int,
           quant: bool) -> np.ndarray:
    in_h, in_w = xh.shape[1], xh.shape[2]
    ylo, yhi, dy = _axis_samples(y1, h_step, out_h, sh, in_h)  # [G, out_h, sh]
    xlo, xhi, dx = _axis_samples(x1, w_step, out_w, sw, in_w)  # [G, out_w, sw]
    # Broadcast to [G, out_h, sh, out_w, sw].
    b = batch.astype(np.int64)[:, None, None, None, None]
    Y = lambda a: a[:, :, :, None, None]  # noqa: E731 - index helpers for the two axes
    X = lambda a: a[:, None, None, :, :]  # noqa: E731
    dy1, dx1 = Y(dy), X(dx)
    dy2, dx2 = F32(1) - dy1, F32(1) - dx1
    weights = (dx2 * dy2, dx1 * dy2, dx2 * dy1, dx1 * dy1)
    corners = ((Y(ylo), X(xlo)), (Y(ylo), X(xhi)), (Y(yhi), X(xlo)), (Y(yhi), X(xhi)))
    in_od, out_od = call.in_operands[0], call.out_operands[0]
    if quant:
        acc = 0
        for wgt, (yy, xx) in zip(weights, corners):  # the four bilinear corners
            wq = round_half_away(wgt.astype(F32) / W_SCALE).astype(np.int64)
            acc = acc + wq[..., None] * (xh[b, yy, xx].astype(np.int64) - in_od.zero_point)
        acc = acc.sum(axis=(2, 4))  # [G, out_h, out_w, C]: exact integer sums
        real = F32(in_od.scale) * W_SCALE / F32(out_od.scale) / F32(sh * sw)
        if not 0.0 < float(real) < 1.0:
            raise call.fail(f"requantization multiplier {float(real):g} is not in (0, 1)")
        m, s = quantize_multiplier(float(real))
        lo, hi = qrange(out_od.type)
        q = multiply_by_quantized_multiplier(acc, m, s) + out_od.zero_point
        return np.clip(q, lo, hi).astype(out_od.dtype)
    xf = xh.astype(F32)
    interp = None
    for wgt, (yy, xx) in zip(weights, corners):  # accumulated in the reference's order
        term = wgt.astype(F32)[..., None] * xf[b, yy, xx]
        interp = term if interp is None else interp + term
    total = interp[:, :, 0, :, 0]
    for iy in range(sh):  # the sampling points of a bin, summed in the reference's order
        for ix in range(sw):
            if iy or ix:
                total = total + interp[:, :, iy, :, ix]
    return (total / F32(sh * sw)).astype(out_od.dtype)
