"""Regressions found by converting real TensorFlow-built models (Keras applications and DeepLab-, SSD-,
transformer- and audio-style nets at small input sizes, float / float16 / dynamic-range / int8): each test
rebuilds the failing pattern with our builder and checks parity against the TFLite interpreter."""

from __future__ import annotations

import numpy as np

from nnconv.parity.partitioned import PartitionedParityReport, verify_model
from nnconv.partition import convert_partial
from nnconv.tflite.builder import TfliteBuilder
from nnconv.tflite.options import AddOptions, ResizeBilinearOptions
from nnconv.tflite.schema_enums import BuiltinOperator as B


def _fp16_weight_shared_across_partitions() -> bytes:
    """float16 weights (as the converter's float16 quantization writes them: a constant float16 tensor and a
    DEQUANTIZE) read on both sides of an op refused at API 29 (a half-pixel RESIZE_BILINEAR, as in
    DeepLab's upsampling): ADD(x, w) -> RESIZE_BILINEAR -> ADD(r, w)."""
    rng = np.random.default_rng(7)
    b = TfliteBuilder()
    x = b.input("x", (1, 3, 5, 2), np.float32)
    w16 = b.const("w16", rng.uniform(-1, 1, (2,)).astype(np.float16))
    w = b.tensor("w", (2,), np.float32)
    b.op(B.DEQUANTIZE, [w16], [w])
    a = b.tensor("a", (1, 3, 5, 2), np.float32)
    b.op(B.ADD, [x, w], [a], AddOptions())
    size = b.const("size", np.array([7, 9], np.int32))
    r = b.tensor("r", (1, 7, 9, 2), np.float32)
    b.op(B.RESIZE_BILINEAR, [a, size], [r], ResizeBilinearOptions(align_corners=False, half_pixel_centers=True))
    y = b.tensor("y", (1, 7, 9, 2), np.float32)
    b.op(B.ADD, [r, w], [y], AddOptions())
    b.output(y)
    return b.finish()


def test_fp16_dequantized_weight_is_a_constant_in_every_partition(tmp_path):
    """deeplab_fp16 at API 27/29 failed with "output tensor 'tfl.dequantize4' is not computed by any lowered
    operation": the DEQUANTIZE of a constant lowers to a constant, which was made an output of the first
    partition and an input of the next. Each partition now makes that constant itself."""
    model = _fp16_weight_shared_across_partitions()
    plan = convert_partial(model, 29)
    assert [cm.tflite_ops for cm in plan.converted] == [[0, 1], [3]]
    assert [s.name for s in plan.converted[0].outputs] == ["a"]
    assert [s.name for s in plan.converted[1].inputs] == ["r"]  # not "w": a constant of that partition
    path = tmp_path / "fp16_shared.tflite"
    path.write_bytes(model)
    report = verify_model(str(path), 29)
    assert isinstance(report, PartitionedParityReport) and report.passed
    assert verify_model(str(path), 30).passed  # whole model: the DEQUANTIZE lowers once
