"""AXIS_ALIGNED_BBOX_TRANSFORM (NNAPI OperationType 41): applies per-class box deltas to regions.

Slots: 0 rois [R, 4] (x1, y1, x2, y2), 1 deltas [R, K * 4] (dx, dy, dw, dh per class: centre shifts in
units of the roi's width/height, log-scale size changes), 2 batch index of each roi [R], 3 image sizes
[N, 2] (height, width).
Output: boxes [R, K * 4], clipped to their image.
Types: float32, float16 (computed in float32), TENSOR_QUANT16_ASYMM rois / image sizes / output (scale
0.125) with quant8 asymm or signed deltas; quantized values go through float32 like the reference
(GenerateProposals.cpp `bboxTransformQuant`). Zero rois give a zero-sized output.
"""

from __future__ import annotations

import numpy as np

from nnconv.runtime.kernels._boxes import bbox_transform, check_quant_boxes, from_float, to_float
from nnconv.runtime.kernels.registry import KernelCall, kernel
from nnconv.nnapi.enums import OperationType


@kernel(OperationType.AXIS_ALIGNED_BBOX_TRANSFORM)
def axis_aligned_bbox_transform(call: KernelCall) -> list[np.ndarray]:
    rois, deltas, batch, info = call.tensor(0), call.tensor(1), call.tensor(2), call.tensor(3)
    if rois.ndim != 2 or deltas.ndim != 2 or batch.ndim != 1 or info.ndim != 2:
        raise call.fail("rois, deltas and image sizes must be 2-D, batch indices 1-D")
    num_rois = rois.shape[0]
    num_classes = deltas.shape[1] // 4
    if (rois.shape[1] != 4 or deltas.shape != (num_rois, num_classes * 4) or num_classes == 0
            or batch.shape[0] != num_rois or info.shape[1] != 2 or info.shape[0] == 0):
        raise call.fail(f"shapes do not fit: rois {list(rois.shape)}, deltas {list(deltas.shape)}, "
                        f"batches {list(batch.shape)}, image sizes {list(info.shape)}")
    if call.type(0).is_quantized:
        check_quant_boxes(call, 0, "rois")
        check_quant_boxes(call, 3, "image sizes")
    out_od = call.out_operands[0]
    if num_rois == 0:
        return [np.zeros((0, num_classes * 4), dtype=out_od.dtype)]
    r = to_float(call, 0)
    image = to_float(call, 3)
    bad = (batch < 0) | (batch >= info.shape[0]) | (r[:, 0] > r[:, 2]) | (r[:, 1] > r[:, 3])
    if bad.any():
        k = int(np.argmax(bad))
        raise call.fail(f"roi {k} ({rois[k].tolist()}, batch {int(batch[k])}) is malformed")
    img = image[batch.astype(np.int64)]
    boxes = bbox_transform(r, to_float(call, 1).reshape(num_rois, num_classes, 4), img[:, 0], img[:, 1])
    return [from_float(boxes.reshape(num_rois, num_classes * 4), out_od)]
