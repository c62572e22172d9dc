"""TFLite_Detection_PostProcess (custom op) -> DETECTION_POSTPROCESSING: parity with TFLite's own kernel
and refusals."""

from __future__ import annotations

import numpy as np
import pytest
from flatbuffers import flexbuffers

import nnconv
from harness import QuantParams, TfliteBuilder, assert_parity, assert_refused, nnconv_options
from nnconv.runtime.executor import Executor
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.rules.detection import detection_options
from nnconv.tflite.schema_enums import BuiltinOperator

NUM_ANCHORS, NUM_CLASSES, MAX_DET = 37, 5, 6
RNG = np.random.default_rng(11)


def _anchors(n: int) -> np.ndarray:
    """(y centre, x centre, height, width) anchors: many overlap, so NMS has work to do."""
    ctr = RNG.uniform(0.1, 0.9, size=(n, 2))
    size = RNG.uniform(0.05, 0.35, size=(n, 2))
    return np.concatenate([ctr, size], axis=1).astype(np.float32)


def _options(regular: bool, **override) -> bytes:
    opts = {"max_detections": MAX_DET, "max_classes_per_detection": 1, "detections_per_class": 4,
            "use_regular_nms": regular, "nms_score_threshold": 0.2, "nms_iou_threshold": 0.45,
            "num_classes": NUM_CLASSES, "y_scale": 10.0, "x_scale": 10.0, "h_scale": 5.0, "w_scale": 5.0}
    opts.update(override)
    return flexbuffers.Dumps(opts)


def _model(options: bytes, dtype=np.float32, anchors: np.ndarray | None = None, classes: int = NUM_CLASSES + 1,
           out_det: int = MAX_DET) -> bytes:
    """The custom op with float32 (or uint8) box encodings and class predictions as model inputs and
    constant anchors; custom_options built with flexbuffers as TFLite's converter writes them."""
    anchors = _anchors(NUM_ANCHORS) if anchors is None else anchors
    n = anchors.shape[0]
    b = TfliteBuilder()
    if dtype == np.uint8:
        anc = b.const("anchors", np.clip(np.round(anchors * 255), 0, 255).astype(np.uint8),
                      quant=QuantParams(scale=1 / 255.0, zero_point=0))
        box = b.input("box_encodings", (1, n, 4), np.uint8, quant=QuantParams(scale=0.05, zero_point=128))
        cls = b.input("class_predictions", (1, n, classes), np.uint8, quant=QuantParams(scale=1 / 255.0, zero_point=0))
    else:
        anc = b.const("anchors", anchors)
        box = b.input("box_encodings", (1, n, 4), np.float32)
        cls = b.input("class_predictions", (1, n, classes), np.float32)
    outs = [b.tensor("detection_boxes", (1, out_det, 4), np.float32),
            b.tensor("detection_classes", (1, out_det), np.float32),
            b.tensor("detection_scores", (1, out_det), np.float32),
            b.tensor("num_detections", (1,), np.float32)]
    b.op(BuiltinOperator.CUSTOM, [box, cls, anc], outs, custom_code="TFLite_Detection_PostProcess",
         custom_options=options)
    b.output(*outs)
    return b.finish()


def _inputs(dtype=np.float32, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    # Distinct scores (no ties), deltas of a few tenths.
    scores = rng.permutation(NUM_ANCHORS * (NUM_CLASSES + 1)).reshape(1, NUM_ANCHORS, NUM_CLASSES + 1)
    scores = (scores / scores.size).astype(np.float32)
    deltas = rng.normal(scale=2.0, size=(1, NUM_ANCHORS, 4)).astype(np.float32)
    if dtype == np.uint8:
        return {"box_encodings": np.clip(np.round(deltas / 0.05) + 128, 0, 255).astype(np.uint8),
                "class_predictions": np.clip(np.round(scores * 255), 0, 255).astype(np.uint8)}
    return {"box_encodings": deltas, "class_predictions": scores}


@pytest.mark.parametrize("regular", [False, True], ids=["fast", "regular"])
@pytest.mark.parametrize("api", [29, 30])
def test_detection_postprocess_parity(regular, api):
    model = _model(_options(regular))
    feed = _inputs(seed=api)
    result = assert_parity(model, api_level=api, inputs=feed,
                           expect_ops=["DETECTION_POSTPROCESSING", "CAST", "CAST"])
    # Every slot is filled (TFLite's fast path leaves unfilled slots unwritten), so parity covers them all.
    out = Executor(result.converted).run(feed)
    assert out["num_detections"].tolist() == [MAX_DET]
    assert out["detection_classes"].min() >= 0 and out["detection_classes"].max() < NUM_CLASSES


def test_detection_postprocess_fast_two_classes_per_detection_parity():
    # k = 2 slots per anchor in both; the count is anchors for TFLite, slots for NNAPI (divided back).
    model = _model(_options(False, max_classes_per_detection=2), out_det=2 * MAX_DET)
    feed = _inputs(seed=7)
    result = assert_parity(model, api_level=29, inputs=feed,
                           expect_ops=["DETECTION_POSTPROCESSING", "CAST", "CAST", "DIV"])
    assert Executor(result.converted).run(feed)["num_detections"].tolist() == [MAX_DET]


def test_detection_postprocess_uint8_parity():
    model = _model(_options(True), dtype=np.uint8)
    assert_parity(model, api_level=29, inputs=_inputs(np.uint8, seed=3),
                  expect_ops=["DEQUANTIZE", "DEQUANTIZE", "DEQUANTIZE", "DETECTION_POSTPROCESSING", "CAST", "CAST"])


def test_detection_postprocess_thresholds_match_tflite_at_the_boundary():
    # A score exactly at the threshold is kept by TFLite (>=); NNAPI keeps only > thresholds, so the
    # lowering moves the threshold one float32 step down.
    anchors = np.array([[0.2, 0.2, 0.1, 0.1], [0.7, 0.7, 0.1, 0.1], [0.5, 0.2, 0.1, 0.1]], np.float32)
    scores = np.zeros((1, 3, 3), np.float32)
    scores[0, :, 1] = [0.5, 0.25, 0.1]  # 0.25 is the threshold
    feed = {"box_encodings": np.zeros((1, 3, 4), np.float32), "class_predictions": scores}
    model = _model(_options(False, nms_score_threshold=0.25, max_detections=3, num_classes=2), anchors=anchors,
                   classes=3, out_det=3)
    out = Executor(nnconv.convert(model, api_level=29, options=nnconv_options()).converted).run(feed)
    assert out["num_detections"].tolist() == [2]
    assert out["detection_scores"][0, :2].tolist() == [0.5, 0.25]


def test_detection_postprocess_refusals():
    assert_refused(_model(_options(True)), 28, Code.API_LEVEL, min_api_level=29)
    assert_refused(_model(_options(True, max_classes_per_detection=2), out_det=2 * MAX_DET), 30, Code.OPTION)
    assert_refused(_model(_options(False, max_classes_per_detection=NUM_CLASSES + 1),
                          out_det=(NUM_CLASSES + 1) * MAX_DET), 30, Code.OPTION)
    assert_refused(_model(_options(True), classes=NUM_CLASSES), 30, Code.OPTION)  # no background column
    assert_refused(_model(b"\x00\x01"), 30, Code.OPTION)
    assert_refused(_model(_options(True), out_det=MAX_DET + 1), 30, Code.OPERAND_VALUE)


def test_detection_options_defaults():
    raw = flexbuffers.Dumps({k: 1 for k in ("max_detections", "max_classes_per_detection", "nms_score_threshold",
                                            "nms_iou_threshold", "num_classes", "y_scale", "x_scale", "h_scale",
                                            "w_scale")})
    opts = detection_options(raw)
    assert opts["detections_per_class"] == 100 and opts["use_regular_nms"] is False
    assert detection_options(flexbuffers.Dumps({"max_detections": 3})) is None
