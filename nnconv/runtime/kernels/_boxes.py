"""Helpers of the detection operations (ROI_ALIGN, ROI_POOLING, AXIS_ALIGNED_BBOX_TRANSFORM,
BOX_WITH_NMS_LIMIT, GENERATE_PROPOSALS, DETECTION_POSTPROCESSING, HEATMAP_MAX_KEYPOINT).

The Android reference CPU runs these operations in float32: quantized tensors are converted with
`(float(q) - zero_point) * scale` and results converted back with `round(x / scale + zero_point)`
(CpuOperationUtils.h `convertQuantToFloat32` / `convertFloat32ToQuant`), float16 tensors are widened to
float32. Boxes are (x1, y1, x2, y2); quantized boxes are TENSOR_QUANT16_ASYMM with scale 0.125, zero
point 0. NMS follows the reference's in-place candidate bookkeeping (`hardNmsSingleClass` /
`softNmsSingleClass` in GenerateProposals.cpp) so that ties between equal scores resolve the same way.
(A leading underscore keeps this module out of the kernel auto-discovery.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from nnconv.nnapi.enums import OperandType
from nnconv.nnapi.model import Operand
from nnconv.nnapi.quantization import qrange, round_half_away
from nnconv.runtime.kernels._spatial import nchw_to_nhwc, nhwc_to_nchw
from nnconv.runtime.kernels.registry import KernelCall

F32 = np.float32
FLOAT_TYPES = (OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16)


def to_float(call: KernelCall, i: int) -> np.ndarray:
    """Input `i` as float32 real values, the reference's conversion for its type."""
    x = call.tensor(i)
    od = call.in_operands[i]
    if od.type.is_quantized:
        return dequantize_ref(x, od)
    return x.astype(F32)


def dequantize_ref(q: np.ndarray, od: Operand) -> np.ndarray:
    """`convertQuantToFloat32`: (float(q) - zero_point) * scale, all in float32."""
    return (q.astype(F32) - F32(od.zero_point)) * F32(od.scale)


def from_float(x: np.ndarray, od: Operand) -> np.ndarray:
    """float32 results -> storage of `od`: float16 by rounding, quantized types by `convertFloat32ToQuant`
    (round half away of x / scale + zero_point in float32, saturated to the type)."""
    x = np.asarray(x, dtype=F32)
    if od.type.is_quantized:
        lo, hi = qrange(od.type)
        with np.errstate(invalid="ignore", over="ignore"):
            q = round_half_away(x / F32(od.scale) + F32(od.zero_point))
        return np.clip(np.nan_to_num(q), lo, hi).astype(od.dtype)
    return x.astype(od.dtype)


def float_scalar(call: KernelCall, i: int) -> np.float32:
    """A FLOAT32 / FLOAT16 scalar input as float32 (float16 widens exactly)."""
    return F32(call.scalar(i))


def check_quant_boxes(call: KernelCall, i: int, what: str = "boxes") -> None:
    """Quantized boxes must be TENSOR_QUANT16_ASYMM with scale 0.125 and zero point 0."""
    od = call.in_operands[i]
    if od.type.is_quantized and (od.type is not OperandType.TENSOR_QUANT16_ASYMM or od.scale != 0.125
                                 or od.zero_point != 0):
        raise call.fail(f"input {i} ({what}) must be TENSOR_QUANT16_ASYMM with scale 0.125 and zero point 0, "
                        f"got {od.type.name} scale {od.scale:g} zero point {od.zero_point}")


# Elements of the largest intermediate a kernel builds at once; rois are processed in chunks below it.
CHUNK_ELEMENTS = 1 << 24


@dataclass
class RoiCall:
    """The operands ROI_ALIGN and ROI_POOLING share: slots 0 input, 1 rois [R, 4], 2 batch indices [R],
    3 output height, 4 output width, 5 height stride, 6 width stride, and the layout flag."""

    x: np.ndarray  # the input in NHWC
    nchw: bool
    rois: np.ndarray
    batch: np.ndarray
    out_h: int
    out_w: int
    h_stride: np.float32
    w_stride: np.float32

    def empty_output(self, od: Operand) -> np.ndarray:
        """The zero-sized output of a call without rois, in the call's layout."""
        y = np.zeros((0, self.out_h, self.out_w, self.x.shape[3]), dtype=od.dtype)
        return nhwc_to_nchw(y) if self.nchw else y


def roi_call(call: KernelCall, layout_slot: int) -> RoiCall:
    """Reads and validates the operands of a ROI_ALIGN / ROI_POOLING call (`layout_slot`: the NCHW flag)."""
    x, rois, batch = call.tensor(0), call.tensor(1), call.tensor(2)
    nchw = bool(call.scalar(layout_slot))
    if x.ndim != 4 or rois.ndim != 2:
        raise call.fail("input must be 4-D and rois 2-D")
    if rois.shape[1] != 4 or batch.shape != (rois.shape[0],):
        raise call.fail(f"rois {list(rois.shape)} must be [R, 4] with R batch indices, got {list(batch.shape)}")
    out_h, out_w = int(call.scalar(3)), int(call.scalar(4))
    h_stride, w_stride = float_scalar(call, 5), float_scalar(call, 6)
    if out_h <= 0 or out_w <= 0 or not (h_stride > 0 and w_stride > 0):
        raise call.fail("output size and strides must be positive")
    return RoiCall(nchw_to_nhwc(x) if nchw else x, nchw, rois, batch, out_h, out_w, h_stride, w_stride)


def roi_chunks(count: int, elements_per_roi: int) -> list[slice]:
    """Slices of `count` rois whose per-roi intermediates total at most CHUNK_ELEMENTS (at least one
    roi per chunk), so a thousand-roi call does not materialize gigabytes at once."""
    step = max(1, CHUNK_ELEMENTS // max(1, elements_per_roi))
    return [slice(i, min(i + step, count)) for i in range(0, count, step)]


def iou_one_to_many(box: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """`getIoUAxisAligned(boxes[k], box)` for every k, in float32 and the reference's operation order
    (a zero union gives NaN, which never reaches a threshold)."""
    area1 = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    area2 = (box[2] - box[0]) * (box[3] - box[1])
    w = np.maximum(np.minimum(boxes[:, 2], box[2]) - np.maximum(boxes[:, 0], box[0]), F32(0))
    h = np.maximum(np.minimum(boxes[:, 3], box[3]) - np.maximum(boxes[:, 1], box[1]), F32(0))
    inter = w * h
    with np.errstate(invalid="ignore", divide="ignore"):
        return (inter / ((area1 + area2) - inter)).astype(F32)


# A soft-NMS kernel: (iou of the candidates with the box just selected) -> score multipliers.
SoftKernel = Callable[[np.ndarray], np.ndarray]


def soft_kernel(kind: int, iou_threshold: float, sigma: float) -> SoftKernel | None:
    """BOX_WITH_NMS_LIMIT's kernels: 0 hard, 1 linear, 2 gaussian; None for an unknown kind."""
    thr, sig = F32(iou_threshold), F32(sigma)
    if kind == 0:
        return lambda iou: np.where(iou < thr, F32(1), F32(0)).astype(F32)
    if kind == 1:
        return lambda iou: np.where(iou < thr, F32(1), F32(1) - iou).astype(F32)
    if kind == 2:
        return lambda iou: np.exp(F32(-1) * iou * iou / sig).astype(F32)
    return None


def nms_single_class(select: np.ndarray, scores: np.ndarray, boxes: np.ndarray, max_detections: int,
                     iou_threshold: float | None = None, kernel: SoftKernel | None = None,
                     score_threshold: float = 0.0) -> np.ndarray:
    """Greedy NMS over the candidate indices `select` (into `scores` and `boxes`), in their given order.

    Hard NMS (`kernel` None) drops candidates whose IoU with the selected box is >= `iou_threshold`.
    Soft NMS multiplies the candidates' scores (in place in `scores`) by `kernel(iou)` and drops those
    below `score_threshold`. Returns the selected indices in selection order, at most `max_detections`
    (all when negative).

    The reference keeps candidates in an array, moves each round's best (the first maximum) to the
    front and swaps every dropped candidate with the last live one; the later rounds' first-maximum
    choice among equal scores depends on that order, so it is reproduced here: the live candidates
    that sat behind the dropped ones refill the dropped slots in reverse order.
    """
    sel = np.array(select, dtype=np.int64)
    limit = len(sel) if max_detections < 0 else max_detections
    start, end = 0, len(sel)
    thr = F32(iou_threshold) if iou_threshold is not None else None
    while start < end and start < limit:  # one round per selected box: inherent to greedy NMS
        window = sel[start:end]
        k = int(np.argmax(scores[window]))
        sel[start], sel[start + k] = sel[start + k], sel[start]
        rest = sel[start + 1:end]
        if rest.size:
            iou = iou_one_to_many(boxes[sel[start]], boxes[rest])
            if kernel is None:
                drop = iou >= thr
            else:
                scores[rest] = (scores[rest] * kernel(iou)).astype(scores.dtype)
                drop = scores[rest] < F32(score_threshold)
            if drop.any():
                kept = int(rest.size - drop.sum())
                front = rest[:kept].copy()
                back = rest[kept:]
                front[np.flatnonzero(drop[:kept])] = back[~drop[kept:]][::-1]
                sel[start + 1:start + 1 + kept] = front
                end = start + 1 + kept
        start += 1
    return sel[:start]


def stable_order_desc(values: np.ndarray) -> np.ndarray:
    """Indices sorting `values` descending, ties in their current order (the reference's std::sort leaves
    the order of ties unspecified; keeping it stable is the deterministic choice)."""
    return np.argsort(-values.astype(np.float64), kind="stable")


def batch_splits(batches: np.ndarray) -> list[tuple[int, int]]:
    """(start, stop) runs of equal consecutive batch indices, as BOX_WITH_NMS_LIMIT groups its boxes."""
    if batches.size == 0:
        return []
    cuts = np.flatnonzero(np.diff(batches) != 0) + 1
    starts = np.concatenate(([0], cuts))
    stops = np.concatenate((cuts, [batches.size]))
    return list(zip(starts.tolist(), stops.tolist()))


def bbox_transform(rois: np.ndarray, deltas: np.ndarray, image_h: np.ndarray, image_w: np.ndarray) -> np.ndarray:
    """`bboxTransformFloat32`: rois [R, 4] (x1, y1, x2, y2), deltas [R, K, 4] (dx, dy, dw, dh, relative to
    the roi's width and height, log-scale sizes), image sizes [R] -> boxes [R, K, 4] clipped to the image.
    float32 throughout, in the reference's operation order."""
    w = (rois[:, 2] - rois[:, 0])[:, None]
    h = (rois[:, 3] - rois[:, 1])[:, None]
    cx = ((rois[:, 0] + rois[:, 2]) / F32(2))[:, None]
    cy = ((rois[:, 1] + rois[:, 3]) / F32(2))[:, None]
    with np.errstate(over="ignore"):
        nw = np.exp(deltas[..., 2]).astype(F32) * w
        nh = np.exp(deltas[..., 3]).astype(F32) * h
    nx = cx + deltas[..., 0] * w
    ny = cy + deltas[..., 1] * h
    iw, ih = image_w[:, None], image_h[:, None]
    out = np.stack([np.minimum(np.maximum(nx - nw / F32(2), F32(0)), iw),
                    np.minimum(np.maximum(ny - nh / F32(2), F32(0)), ih),
                    np.minimum(np.maximum(nx + nw / F32(2), F32(0)), iw),
                    np.minimum(np.maximum(ny + nh / F32(2), F32(0)), ih)], axis=-1)
    return out.astype(F32)
