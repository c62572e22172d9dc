"""GENERATE_PROPOSALS (NNAPI OperationType 52): region proposals from anchors, deltas and objectness.

Slots: 0 scores [N, H, W, A], 1 deltas [N, H, W, A * 4] (dx, dy, dw, dh), 2 anchors [A, 4] (x1, y1, x2,
y2), 3 image sizes [N, 2] (height, width), 4 height stride, 5 width stride (anchor shift per feature-map
cell), 6 pre-NMS top-n (<= 0: all), 7 post-NMS top-n (negative: all), 8 IoU threshold, 9 minimum box
size, 10 NCHW bool (scores [N, A, H, W], deltas [N, A * 4, H, W]).
Outputs: 0 scores [n], 1 boxes [n, 4], 2 batch index [n], batch by batch in selection order.
Types: float32, float16 (computed in float32), quant8 asymm / signed scores and deltas with
TENSOR_QUANT16_SYMM anchors and TENSOR_QUANT16_ASYMM image sizes / boxes (scale 0.125); quantized values
go through float32 like the reference (GenerateProposals.cpp).
Per batch: shifted anchors, bbox transform clipped to the image, top-n by score, boxes not larger than
the minimum size or centred outside the image dropped, hard NMS.
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.runtime.kernels._boxes import (F32, bbox_transform, float_scalar, from_float, nms_single_class,
                                           stable_order_desc, to_float)
from nnconv.runtime.kernels._spatial import nchw_to_nhwc
from nnconv.runtime.kernels.registry import KernelCall, kernel


@kernel(OperationType.GENERATE_PROPOSALS)
def generate_proposals(call: KernelCall) -> list[np.ndarray]:
    nchw = bool(call.scalar(10))
    scores = to_float(call, 0)
    deltas = to_float(call, 1)
    anchors = to_float(call, 2)
    info = to_float(call, 3)
    if scores.ndim != 4 or deltas.ndim != 4 or anchors.ndim != 2 or info.ndim != 2:
        raise call.fail("scores and deltas must be 4-D, anchors and image sizes 2-D")
    if nchw:
        scores, deltas = nchw_to_nhwc(scores), nchw_to_nhwc(deltas)
    n, h, w, a = scores.shape
    if deltas.shape != (n, h, w, a * 4) or anchors.shape != (a, 4) or info.shape != (n, 2):
        raise call.fail(f"shapes do not fit: scores {list(scores.shape)}, deltas {list(deltas.shape)}, "
                        f"anchors {list(anchors.shape)}, image sizes {list(info.shape)}")
    if call.type(0) is OperandType.TENSOR_QUANT8_ASYMM:
        if call.in_operands[2].scale != 0.125 or call.in_operands[3].scale != 0.125 \
                or call.in_operands[3].zero_point != 0:
            raise call.fail("quantized anchors and image sizes must have scale 0.125 (image sizes zero point 0)")
    h_stride, w_stride = float_scalar(call, 4), float_scalar(call, 5)
    pre_n, post_n = int(call.scalar(6)), int(call.scalar(7))
    iou_threshold, min_size = float_scalar(call, 8), float_scalar(call, 9)

    # Anchors shifted to every cell, [H * W * A, 4] in (h, w, a) order.
    h_shift = (np.arange(h, dtype=F32) * h_stride)[:, None, None]
    w_shift = (np.arange(w, dtype=F32) * w_stride)[None, :, None]
    base = np.empty((h, w, a, 4), dtype=F32)
    base[..., 0] = anchors[:, 0] + w_shift
    base[..., 1] = anchors[:, 1] + h_shift
    base[..., 2] = anchors[:, 2] + w_shift
    base[..., 3] = anchors[:, 3] + h_shift
    base = base.reshape(-1, 4)
    count = h * w * a

    out_scores, out_boxes, out_batches = [], [], []
    for b in range(n):  # images are independent; each runs its own NMS
        s = scores[b].reshape(count)
        boxes = bbox_transform(base, deltas[b].reshape(count, 1, 4), np.full(count, info[b, 0], F32),
                               np.full(count, info[b, 1], F32))[:, 0]
        select = np.arange(count)
        if 0 < pre_n < count:
            select = stable_order_desc(s)[:pre_n]
        sb = boxes[select]
        bw, bh = sb[:, 2] - sb[:, 0], sb[:, 3] - sb[:, 1]
        cx, cy = sb[:, 0] + bw / F32(2), sb[:, 1] + bh / F32(2)
        keep = (bw > min_size) & (bh > min_size) & (cx < info[b, 1]) & (cy < info[b, 0])
        chosen = nms_single_class(select[keep], s, boxes, post_n, iou_threshold=iou_threshold)
        out_scores.append(s[chosen])
        out_boxes.append(boxes[chosen])
        out_batches.append(np.full(chosen.size, b, dtype=np.int32))
    sc = np.concatenate(out_scores) if out_scores else np.zeros(0, F32)
    bx = np.concatenate(out_boxes) if out_boxes else np.zeros((0, 4), F32)
    bt = np.concatenate(out_batches) if out_batches else np.zeros(0, np.int32)
    return [from_float(sc, call.out_operands[0]), from_float(bx.reshape(-1, 4), call.out_operands[1]), bt]
