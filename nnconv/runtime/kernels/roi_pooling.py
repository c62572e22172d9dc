"""ROI_POOLING (NNAPI OperationType 82): max over each output bin of each region.

Slots: 0 input [N, H, W, C] (NCHW with slot 7), 1 rois [R, 4] (x1, y1, x2, y2 in input-image
coordinates), 2 batch index of each roi [R], 3 output height, 4 output width, 5 height stride, 6 width
stride, 7 NCHW bool.
Types: float32, float16, quant8 asymm / signed with TENSOR_QUANT16_ASYMM rois (scale 0.125); the output
keeps the input's quantization (a max needs no requantization).
Semantics (RoiPooling.cpp): roi corners scaled by 1/stride and rounded; bin i covers
[floor(i * size / out), ceil((i + 1) * size / out)) from the rounded start, clamped to the input; an
empty bin yields the input zero point (0 for floats).
The windows differ per roi and bin, so the maxima come from sparse tables (max over power-of-two spans)
along W and then H: two gathers per axis instead of a loop over bins.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.quantization import is_quant8, round_half_away
from nnconv.runtime.kernels._boxes import F32, check_quant_boxes, dequantize_ref, roi_call, roi_chunks
from nnconv.runtime.kernels._spatial import nhwc_to_nchw
from nnconv.runtime.kernels.registry import KernelCall, kernel


@kernel(OperationType.ROI_POOLING)
def roi_pooling(call: KernelCall) -> list[np.ndarray]:
    rc = roi_call(call, 7)
    xh, rois, batch, nchw, out_h, out_w = rc.x, rc.rois, rc.batch, rc.nchw, rc.out_h, rc.out_w
    n, in_h, in_w, depth = xh.shape
    num_rois = rois.shape[0]
    in_od, out_od = call.in_operands[0], call.out_operands[0]
    quant = is_quant8(in_od.type)
    if quant:
        check_quant_boxes(call, 1, "rois")
        r = dequantize_ref(rois, call.in_operands[1])
    else:
        r = rois.astype(F32)
    if num_rois == 0:
        return [rc.empty_output(out_od)]
    h_scale, w_scale = F32(1.0) / rc.h_stride, F32(1.0) / rc.w_stride
    bad = (batch < 0) | (batch >= n) | (r < 0).any(axis=1) | (r[:, 0] > r[:, 2]) | (r[:, 1] > r[:, 3])
    bad |= (r[:, 0] * w_scale > in_w) | (r[:, 1] * h_scale > in_h) | (r[:, 2] * w_scale > in_w)
    bad |= r[:, 3] * h_scale > in_h
    if bad.any():
        k = int(np.argmax(bad))
        raise call.fail(f"roi {k} ({rois[k].tolist()}, batch {int(batch[k])}) is malformed or out of the image")

    w_start, h_start = (round_half_away(r[:, 0] * w_scale).astype(np.int64),
                        round_half_away(r[:, 1] * h_scale).astype(np.int64))
    w_end, h_end = (round_half_away(r[:, 2] * w_scale).astype(np.int64),
                    round_half_away(r[:, 3] * h_scale).astype(np.int64))
    w_lo, w_hi = _bins(w_start, w_end, out_w, in_w)  # [R, out_w]
    h_lo, h_hi = _bins(h_start, h_end, out_h, in_h)  # [R, out_h]

    # Max in a wide signed type with a sentinel below every value; empty bins become the zero point.
    if quant:
        work, floor = xh.astype(np.int32), np.int32(-(1 << 20))
    else:
        work, floor = xh.astype(F32), F32(-np.inf)
    b = batch.astype(np.int64)
    # Along W: [R, H, out_w, C], then along H per roi: [R, out_h, out_w, C]; rois in bounded chunks.
    table_w = _sparse_table(work, axis=2, floor=floor)  # [L, N, H, W, C]
    rows = np.arange(in_h)
    levels_h = int(np.log2(in_h)) + 1
    y = np.empty((num_rois, out_h, out_w, depth), dtype=work.dtype)
    for part in roi_chunks(num_rois, levels_h * in_h * out_w * depth):
        cols = _range_max(table_w, b[part, None, None], rows[None, :, None], w_lo[part, None, :],
                          w_hi[part, None, :], floor)
        table_h = _sparse_table(cols, axis=1, floor=floor)  # [L, r, H, out_w, C]
        rr = np.arange(cols.shape[0])[:, None, None]
        y[part] = _range_max_h(table_h, rr, h_lo[part, :, None], h_hi[part, :, None],
                               np.arange(out_w)[None, None, :], floor)
    empty = y == floor
    if empty.any():
        y = np.where(empty, in_od.zero_point if quant else 0, y)
    y = y.astype(out_od.dtype)
    return [nhwc_to_nchw(y) if nchw else y]


def _bins(start: np.ndarray, end: np.ndarray, out: int, size: int) -> tuple[np.ndarray, np.ndarray]:
    """[lo, hi) of each bin along one axis, per roi: float32 bin edges as the reference computes them."""
    extent = np.maximum(end - start + 1, 1).astype(F32)
    step = extent / F32(out)
    i = np.arange(out, dtype=F32)
    lo = np.floor(step[:, None] * i[None, :] + start[:, None].astype(F32)).astype(np.int64)
    hi = np.ceil(step[:, None] * (i[None, :] + F32(1)) + start[:, None].astype(F32)).astype(np.int64)
    return np.minimum(lo, size), np.minimum(hi, size)


def _sparse_table(a: np.ndarray, axis: int, floor: float) -> np.ndarray:
    """Level k holds the max of a[..., i : i + 2**k, ...] along `axis` (floor past the end)."""
    levels = [a]
    span = 1
    n = a.shape[axis]
    while span * 2 <= n:
        prev = levels[-1]
        shifted = np.full_like(prev, floor)
        src = [slice(None)] * a.ndim
        dst = [slice(None)] * a.ndim
        src[axis], dst[axis] = slice(span, None), slice(0, n - span)
        shifted[tuple(dst)] = prev[tuple(src)]
        levels.append(np.maximum(prev, shifted))
        span *= 2
    return np.stack(levels)


def _level(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sparse-table level k = floor(log2(length)) of each [lo, hi) range and its span 2**k: two lookups at
    lo and hi - span cover the range."""
    length = np.maximum(hi - lo, 1)
    k = np.floor(np.log2(length)).astype(np.int64)
    return k, np.int64(1) << k


def _range_max_along(table: np.ndarray, axis: int, lo: np.ndarray, hi: np.ndarray, floor: float,
                     index: Callable[[np.ndarray, np.ndarray], tuple]) -> np.ndarray:
    """max over [lo, hi) along `axis` of the sparse table (floor for an empty range): the larger of the two
    power-of-two spans covering the range, read at table[index(level, position)]."""
    k, span = _level(lo, hi)
    lo_c = np.minimum(lo, table.shape[axis] - 1)
    hi_c = np.clip(hi - span, 0, table.shape[axis] - 1)
    v = np.maximum(table[index(k, lo_c)], table[index(k, hi_c)])
    return np.where((hi > lo)[..., None], v, floor)


def _range_max(table: np.ndarray, b: np.ndarray, h: np.ndarray, lo: np.ndarray, hi: np.ndarray,
               floor: float) -> np.ndarray:
    """max over W in [lo, hi) of table[., b, h, :, :] (floor for an empty range), shapes broadcast."""
    return _range_max_along(table, 3, lo, hi, floor, lambda k, w: (k, b, h, w))


def _range_max_h(table: np.ndarray, r: np.ndarray, lo: np.ndarray, hi: np.ndarray, j: np.ndarray,
                 floor: float) -> np.ndarray:
    """max over H in [lo, hi) of table[., r, :, j, :] (floor for an empty range)."""
    return _range_max_along(table, 2, lo, hi, floor, lambda k, hh: (k, r, hh, j))
