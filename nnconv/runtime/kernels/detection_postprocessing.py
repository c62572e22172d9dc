"""DETECTION_POSTPROCESSING (NNAPI OperationType 47): SSD box decoding and NMS (TFLite's
TFLite_Detection_PostProcess).

Slots: 0 class scores [N, A, K] (class 0 is the background), 1 box encodings [N, A, >= 4] (ty, tx, th, tw),
2 anchors [A, 4] (y centre, x centre, height, width), 3..6 y / x / h / w scales, 7 use regular NMS bool,
8 max detections, 9 max classes per detection (fast NMS), 10 max detections per class (regular NMS),
11 score threshold, 12 IoU threshold, 13 background in label bool (when false, output class ids are
shifted down by one).
Outputs: 0 scores [N, D], 1 boxes [N, D, 4] (y1, x1, y2, x2), 2 classes [N, D] int32, 3 valid detections
[N] int32; D = max detections (times max classes per detection for fast NMS); unused slots are zero.
Types: float32, float16 (computed in float32).
Regular NMS suppresses each class separately (class 0 excluded) and keeps the best `max detections`
overall; fast NMS suppresses on each anchor's best non-background score and then reports that anchor's
top classes (GenerateProposals.cpp `detectionPostprocessFloat32`).
"""

from __future__ import annotations

import numpy as np

from nnconv.runtime.kernels._boxes import F32, float_scalar, nms_single_class, stable_order_desc
from nnconv.runtime.kernels.registry import KernelCall, kernel
from nnconv.nnapi.enums import OperationType


def decode_boxes(deltas: np.ndarray, anchors: np.ndarray, scales: tuple[F32, F32, F32, F32]) -> np.ndarray:
    """[A, >=4] encodings + [A, 4] anchors -> [A, 4] boxes (y1, x1, y2, x2), float32 in reference order."""
    sy, sx, sh, sw = scales
    y_ctr = anchors[:, 0] + anchors[:, 2] * deltas[:, 0] / sy
    x_ctr = anchors[:, 1] + anchors[:, 3] * deltas[:, 1] / sx
    with np.errstate(over="ignore"):
        h_half = anchors[:, 2] * np.exp(deltas[:, 2] / sh).astype(F32) * F32(0.5)
        w_half = anchors[:, 3] * np.exp(deltas[:, 3] / sw).astype(F32) * F32(0.5)
    return np.stack([y_ctr - h_half, x_ctr - w_half, y_ctr + h_half, x_ctr + w_half], axis=1).astype(F32)


@kernel(OperationType.DETECTION_POSTPROCESSING)
def detection_postprocessing(call: KernelCall) -> list[np.ndarray]:
    scores_all = call.tensor(0).astype(F32)
    deltas_all = call.tensor(1).astype(F32)
    anchors = call.tensor(2).astype(F32)
    if scores_all.ndim != 3 or deltas_all.ndim != 3 or anchors.ndim != 2:
        raise call.fail("scores and box encodings must be 3-D, anchors 2-D")
    n, num_anchors, num_classes = scores_all.shape
    if (deltas_all.shape[:2] != (n, num_anchors) or deltas_all.shape[2] < 4
            or anchors.shape != (num_anchors, 4)):
        raise call.fail(f"shapes do not fit: scores {list(scores_all.shape)}, box encodings "
                        f"{list(deltas_all.shape)}, anchors {list(anchors.shape)}")
    scales = tuple(float_scalar(call, i) for i in (3, 4, 5, 6))
    regular = bool(call.scalar(7))
    max_det, max_cls_per_det, max_det_per_cls = (int(call.scalar(i)) for i in (8, 9, 10))
    score_threshold, iou_threshold = float_scalar(call, 11), float_scalar(call, 12)
    class_offset = 0 if bool(call.scalar(13)) else 1
    if not all(s > 0 for s in scales) or not score_threshold >= 0 or not iou_threshold >= 0:
        raise call.fail("scales must be positive, thresholds non-negative")
    if num_classes < 2 or max_det <= 0 or (regular and max_det_per_cls <= 0) or \
            (not regular and max_cls_per_det <= 0):
        raise call.fail("needs at least 2 classes and positive detection limits")
    d = max_det if regular else max_det * max_cls_per_det

    out_scores = np.zeros((n, d), F32)
    out_boxes = np.zeros((n, d, 4), F32)
    out_classes = np.zeros((n, d), np.int32)
    out_count = np.zeros(n, np.int32)
    for b in range(n):  # images are independent; each runs its own NMS
        boxes = decode_boxes(deltas_all[b], anchors, scales)
        scores = scores_all[b]
        if regular:
            flat = scores.ravel()
            per_class = []
            for c in range(1, num_classes):  # per class: inherent to per-class NMS
                cand = np.flatnonzero(scores[:, c] > score_threshold) * num_classes + c
                per_class.append(nms_single_class(cand, flat, _ClassBoxes(boxes, num_classes),
                                                  max_det_per_cls, iou_threshold=iou_threshold))
            sel = np.concatenate(per_class) if per_class else np.zeros(0, np.int64)
            sel = sel[stable_order_desc(flat[sel])][:max_det]
            k = sel.size
            out_scores[b, :k] = flat[sel]
            out_boxes[b, :k] = boxes[sel // num_classes]
            out_classes[b, :k] = sel % num_classes - class_offset
            out_count[b] = k
        else:
            n_out = min(num_classes - 1, max_cls_per_det)
            best = scores[:, 1:].max(axis=1)
            cand = np.flatnonzero(best > score_threshold)
            sel = nms_single_class(cand, best.copy(), boxes, max_det, iou_threshold=iou_threshold)
            # Each selected anchor's top classes (class 0 excluded), descending score.
            order = np.argsort(-scores[sel, 1:].astype(np.float64), axis=1, kind="stable")[:, :n_out] + 1
            k = sel.size * n_out
            out_scores[b, :k] = np.take_along_axis(scores[sel], order, axis=1).ravel()
            out_boxes[b, :k] = np.repeat(boxes[sel], n_out, axis=0)
            out_classes[b, :k] = (order - class_offset).ravel()
            out_count[b] = k
    ods = call.out_operands
    return [out_scores.astype(ods[0].dtype), out_boxes.astype(ods[1].dtype), out_classes, out_count]


class _ClassBoxes:
    """Box lookup by a (anchor * num_classes + class) index: every class of an anchor shares its box."""

    def __init__(self, boxes: np.ndarray, num_classes: int) -> None:
        self.boxes = boxes
        self.num_classes = num_classes

    def __getitem__(self, index: np.ndarray | int) -> np.ndarray:
        return self.boxes[np.asarray(index) // self.num_classes]
