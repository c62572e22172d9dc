"""Detection custom ops: TFLite_Detection_PostProcess (SSD box decoding + NMS) -> DETECTION_POSTPROCESSING."""

from __future__ import annotations

from typing import Any

from flatbuffers import flexbuffers
import numpy as np

from nnconv.errors import ConversionError
from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.driver_support import MISSING_FROM_ARMNN
from nnconv.lowering.registry import Rule, custom_rule
from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.tflite.schema_enums import TensorType

_REQUIRED = ("max_detections", "max_classes_per_detection", "nms_score_threshold", "nms_iou_threshold",
             "num_classes", "y_scale", "x_scale", "h_scale", "w_scale")
_DETECTIONS_PER_CLASS_DEFAULT = 100  # TFLite's kNumDetectionsPerClass when the option is absent


def detection_options(raw: bytes | None) -> dict[str, Any] | None:
    """The custom_options flexbuffer map of TFLite_Detection_PostProcess with TFLite's defaults
    (detections_per_class 100, use_regular_nms false); None when unreadable or a required key is missing."""
    if not raw:
        return None
    try:
        m = flexbuffers.Loads(bytes(raw))
    except Exception:  # noqa: BLE001 - any decoding failure means unreadable options
        return None
    if not isinstance(m, dict) or any(k not in m for k in _REQUIRED):
        return None
    out = {k: m[k] for k in _REQUIRED}
    out["detections_per_class"] = m.get("detections_per_class", _DETECTIONS_PER_CLASS_DEFAULT)
    out["use_regular_nms"] = bool(m.get("use_regular_nms", False))
    for k in ("max_detections", "max_classes_per_detection", "num_classes", "detections_per_class"):
        out[k] = int(out[k])
    for k in ("nms_score_threshold", "nms_iou_threshold", "y_scale", "x_scale", "h_scale", "w_scale"):
        out[k] = float(out[k])
    return out


@custom_rule("TFLite_Detection_PostProcess")
class TfliteDetectionPostProcess(Rule):
    """TFLite_Detection_PostProcess(box_encodings [1, A, >=4] (ty, tx, th, tw), class_predictions
    [1, A, num_classes + 1] (column 0 the background), anchors [A, 4] (y, x, h, w)) ->
    (boxes [1, D, 4] (ymin, xmin, ymax, xmax), classes [1, D] float32, scores [1, D], num_detections [1]
    float32), options in a flexbuffer map (custom_options).

    -> DETECTION_POSTPROCESSING (API 29): slot 0 the class predictions, 1 the box encodings, 2 the anchors,
    3..6 y/x/h/w scales, 7 use_regular_nms, 8 max_detections, 9 max_classes_per_detection,
    10 detections_per_class, 11 score threshold, 12 IoU threshold, 13 background-in-label false (class ids
    count from the first real class, as TFLite's). NNAPI outputs scores, boxes, int32 classes and an int32
    count in another order: the scores and boxes are the TFLite outputs, the classes and the count go
    through CAST (API 29) to float32. uint8 inputs are DEQUANTIZEd to float32 first, as TFLite does
    internally.

    Differences handled: TFLite keeps scores >= threshold and suppresses IoU > threshold, NNAPI keeps
    scores > threshold and suppresses IoU >= threshold, so the thresholds are moved by one float32 step
    (the score one not below 0, which NNAPI requires: a score of exactly 0 stays out). With fast NMS and
    k = max_classes_per_detection > 1 both lay out k slots per selected anchor, but TFLite counts anchors
    where NNAPI counts slots: the count is divided by k (DIV, exact in float32).
    Refused: regular NMS with max_classes_per_detection != 1 (TFLite's outputs then have k times NNAPI's
    slots), k above num_classes (TFLite then leaves gaps between anchors), class predictions without a
    background column, output shapes other than TFLite's.
    """

    nnapi_ops = (OperationType.DETECTION_POSTPROCESSING, OperationType.CAST, OperationType.DEQUANTIZE,
                 OperationType.DIV)
    min_api_level = 29
    dtypes = ("float32", "uint8")
    constraints = ("API 29; float32 or uint8; regular NMS only with max_classes_per_detection 1; class "
                   "predictions with a background column")
    beyond_delegate = True
    driver_notes = (MISSING_FROM_ARMNN,)

    def check(self, c: CheckContext) -> None:
        c.require_operation(OperationType.DETECTION_POSTPROCESSING)
        if not c.require_inputs(3, 3):
            return
        if not c.require(len(c.op.outputs) == 4, Code.MISSING_OPERAND,
                         f"expects 4 outputs, has {len(c.op.outputs)}"):
            return
        opts = detection_options(c.op.custom_options)
        if opts is None:
            c.refuse(Code.OPTION, "custom options are not a readable TFLite_Detection_PostProcess map")
            return
        boxes, scores, anchors = c.input(0), c.input(1), c.input(2)
        allowed = (TensorType.FLOAT32, TensorType.UINT8)
        ok = c.require_dtype(boxes, allowed, "box encodings")
        ok &= c.require_dtype(scores, allowed, "class predictions")
        ok &= c.require_dtype(anchors, allowed, "anchors")
        if not ok or not c.require_static_shapes():
            return
        if not (c.require_rank(boxes, 3, 3, "box encodings") & c.require_rank(scores, 3, 3, "class predictions")
                & c.require_rank(anchors, 2, 2, "anchors")):
            return
        a = boxes.shape[1]
        if scores.shape[1] != a or anchors.shape != (a, 4) or boxes.shape[2] < 4 or boxes.shape[0] != 1 \
                or scores.shape[0] != 1:
            c.refuse(Code.OPERAND_VALUE, f"shapes do not fit: box encodings {list(boxes.shape)}, class "
                     f"predictions {list(scores.shape)}, anchors {list(anchors.shape)}")
            return
        if scores.shape[2] != opts["num_classes"] + 1:
            c.refuse(Code.OPTION, f"class predictions have {scores.shape[2]} columns for num_classes "
                     f"{opts['num_classes']}: NNAPI needs exactly one background column first")
        k = opts["max_classes_per_detection"]
        if opts["use_regular_nms"] and k != 1:
            c.refuse(Code.OPTION, f"regular NMS with max_classes_per_detection {k}: TFLite's outputs have {k} "
                     "times the slots NNAPI fills; only 1 lowers")
        elif not 1 <= k <= opts["num_classes"]:
            c.refuse(Code.OPTION, f"max_classes_per_detection {k} must be in 1..num_classes "
                     f"({opts['num_classes']}) for NNAPI's slot layout to match TFLite's")
        d = opts["max_detections"] * k
        if d <= 0 or (opts["use_regular_nms"] and opts["detections_per_class"] <= 0):
            c.refuse(Code.OPTION, "max_detections and detections_per_class must be positive")
        if not all(opts[k] > 0 for k in ("y_scale", "x_scale", "h_scale", "w_scale")) or \
                not 0 < opts["nms_iou_threshold"] <= 1:
            c.refuse(Code.OPTION, "box scales must be positive and the IoU threshold in (0, 1]")
        want = [(1, d, 4), (1, d), (1, d), (1,)]
        got = [tuple(t.shape) for t in c.outputs]
        if got != want:
            c.refuse(Code.OPERAND_VALUE, f"output shapes {[list(s) for s in got]} differ from TFLite's "
                     f"{[list(s) for s in want]}")
        for t in c.outputs:
            c.require_dtype(t, (TensorType.FLOAT32,), "output")

    def lower(self, c: LowerContext) -> None:
        opts = detection_options(c.op.custom_options)
        if opts is None:  # check() refuses unreadable options, so this is never reached
            raise ConversionError("TFLite_Detection_PostProcess: unreadable custom options")
        boxes, scores, anchors = (self._as_float(c, i) for i in (0, 1, 2))
        k = opts["max_classes_per_detection"]
        d = opts["max_detections"] * k
        score_thr = max(float(np.nextafter(np.float32(opts["nms_score_threshold"]), np.float32(-np.inf))), 0.0)
        iou_thr = float(np.nextafter(np.float32(opts["nms_iou_threshold"]), np.float32(np.inf)))
        classes = c.temp(OperandType.TENSOR_INT32, (1, d), name=f"{c.output(1).name}/int32")
        count = c.temp(OperandType.TENSOR_INT32, (1,), name=f"{c.output(3).name}/int32")
        ins = [scores, boxes, anchors,
               c.f32(opts["y_scale"]), c.f32(opts["x_scale"]), c.f32(opts["h_scale"]), c.f32(opts["w_scale"]),
               c.boolean(opts["use_regular_nms"]), c.i32(opts["max_detections"]), c.i32(k),
               c.i32(opts["detections_per_class"]), c.f32(score_thr), c.f32(iou_thr), c.boolean(False)]
        c.emit(OperationType.DETECTION_POSTPROCESSING, ins, [c.output_operand(2), c.output_operand(0), classes, count])
        c.emit(OperationType.CAST, [classes], [c.output_operand(1)])
        if k == 1:
            c.emit(OperationType.CAST, [count], [c.output_operand(3)])
            return
        # NNAPI counts the k slots of every selected anchor, TFLite the anchors.
        slots = c.temp(OperandType.TENSOR_FLOAT32, (1,), name=f"{c.output(3).name}/slots")
        c.emit(OperationType.CAST, [count], [slots])
        c.emit(OperationType.DIV, [slots, c.constant(OperandType.TENSOR_FLOAT32, np.array([k], np.float32)),
                                   c.i32(0)], [c.output_operand(3)])

    @staticmethod
    def _as_float(c: LowerContext, i: int) -> int:
        """Input `i` as a TENSOR_FLOAT32 operand (uint8 through DEQUANTIZE)."""
        src = c.input_operand(i)
        od = c.info(src)
        if od.type is OperandType.TENSOR_FLOAT32:
            return src
        tmp = c.temp(OperandType.TENSOR_FLOAT32, od.dimensions, name=f"{c.input(i).name}/dequantized")
        c.emit(OperationType.DEQUANTIZE, [src], [tmp])
        return tmp
