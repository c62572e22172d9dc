"""BOX_WITH_NMS_LIMIT (NNAPI OperationType 44): greedy (soft) non-maximum suppression per class.

Slots: 0 scores [num_rois, num_classes], 1 boxes [num_rois, num_classes * 4] (x1, y1, x2, y2 per class),
2 batch index of each roi [num_rois] (boxes of one batch consecutive), 3 score threshold, 4 max detections
per batch (and per class; negative: no limit), 5 NMS kernel (0 hard, 1 linear, 2 gaussian), 6 IoU
threshold, 7 gaussian sigma, 8 NMS score threshold (soft kernels drop boxes whose decayed score falls
below it).
Outputs: 0 scores [n], 1 boxes [n, 4], 2 classes [n] int32, 3 batch index [n] int32; ordered by batch,
then class, then descending score.
Types: float32, float16 (computed in float32), quant8 asymm / signed scores with TENSOR_QUANT16_ASYMM boxes
(scale 0.125). Class 0 is the background and never selected. Within a batch each class is suppressed
separately, the survivors of all classes are ranked by score and cut at max detections
(GenerateProposals.cpp `softNmsMultiClass`; the hard kernel also goes through the soft path).
"""

from __future__ import annotations

import numpy as np

from nnconv.runtime.kernels._boxes import (batch_splits, check_quant_boxes, float_scalar, from_float,
                                   nms_single_class, soft_kernel, stable_order_desc, to_float)
from nnconv.runtime.kernels.registry import KernelCall, kernel
from nnconv.nnapi.enums import OperationType


@kernel(OperationType.BOX_WITH_NMS_LIMIT)
def box_with_nms_limit(call: KernelCall) -> list[np.ndarray]:
    scores_q, boxes_q, batches = call.tensor(0), call.tensor(1), call.tensor(2)
    if scores_q.ndim != 2 or boxes_q.ndim != 2 or batches.ndim != 1:
        raise call.fail("scores and boxes must be 2-D, batch indices 1-D")
    num_rois, num_classes = scores_q.shape
    if boxes_q.shape != (num_rois, num_classes * 4) or batches.shape[0] != num_rois:
        raise call.fail(f"boxes {list(boxes_q.shape)} / batch indices {list(batches.shape)} do not fit "
                        f"scores {list(scores_q.shape)}")
    if num_classes < 2:
        raise call.fail("there must be at least 2 classes (class 0 is the background)")
    check_quant_boxes(call, 1)
    score_threshold = float_scalar(call, 3)
    max_detections = int(call.scalar(4))
    nms = soft_kernel(int(call.scalar(5)), float_scalar(call, 6), float_scalar(call, 7))
    if nms is None:
        raise call.fail(f"unsupported NMS kernel {call.scalar(5)} (0 hard, 1 linear, 2 gaussian)")
    nms_score_threshold = float_scalar(call, 8)

    scores = to_float(call, 0).ravel().copy()  # soft NMS decays these in place
    boxes = to_float(call, 1).reshape(-1, 4)  # row r * num_classes + c: roi r's box for class c
    selected: list[np.ndarray] = []
    out_batches: list[np.ndarray] = []
    for lo, hi in batch_splits(batches):  # a handful of images per call
        # The reference checks the first (hi - lo) boxes of the batch's block (as it lays them out).
        first = boxes[lo * num_classes: lo * num_classes + (hi - lo)]
        if (first[:, 0] > first[:, 2]).any() or (first[:, 1] > first[:, 3]).any():
            raise call.fail("a box has x2 < x1 or y2 < y1")
        result: list[np.ndarray] = []
        for c in range(1, num_classes):  # per class: inherent to per-class NMS
            idx = lo * num_classes + np.arange(hi - lo) * num_classes + c
            cand = idx[scores[idx] > score_threshold]
            result.append(nms_single_class(cand, scores, boxes, max_detections, kernel=nms,
                                           score_threshold=nms_score_threshold))
        keep = np.concatenate(result) if result else np.zeros(0, dtype=np.int64)
        keep = keep[stable_order_desc(scores[keep])]
        if max_detections >= 0:
            keep = keep[:max_detections]
        # Again by class, then descending score.
        order = np.lexsort((-scores[keep].astype(np.float64), keep % num_classes))
        keep = keep[order]
        selected.append(keep)
        out_batches.append(np.full(keep.size, batches[lo], dtype=np.int32))
    sel = np.concatenate(selected) if selected else np.zeros(0, dtype=np.int64)
    out_scores = from_float(scores[sel], call.out_operands[0])
    box_rows = boxes_q.reshape(-1, 4)[sel]  # boxes are copied in their storage type
    out_boxes = box_rows.astype(call.out_operands[1].dtype).reshape(-1, 4)
    classes = (sel % num_classes).astype(np.int32)
    out_b = np.concatenate(out_batches) if out_batches else np.zeros(0, dtype=np.int32)
    return [out_scores, out_boxes, classes, out_b.astype(np.int32)]

