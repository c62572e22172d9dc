"""An unspecified batch (-1 in shape_signature, as Keras exports) lowers at the stored default shape, like
TFLite's NNAPI delegate without dynamic dimensions; a zero-sized or unknown stored extent is refused."""

from __future__ import annotations

import numpy as np

from harness import assert_parity, assert_refused
from nnconv.lowering.diagnostics import Code
from nnconv.tflite.builder import TfliteBuilder
from nnconv.tflite.options import Conv2DOptions, ReshapeOptions, ShapeOptions, StridedSliceOptions
from nnconv.tflite.schema_enums import BuiltinOperator, Padding

RNG = np.random.default_rng(5)


def test_dynamic_batch_conv_lowers_at_default_shape():
    b = TfliteBuilder()
    x = b.input("x", (1, 6, 5, 3), np.float32, shape_signature=(-1, 6, 5, 3))
    w = b.const("w", RNG.standard_normal((4, 3, 3, 3)).astype(np.float32))
    bias = b.const("b", RNG.standard_normal(4).astype(np.float32))
    y = b.tensor("y", (1, 6, 5, 4), np.float32, shape_signature=(-1, 6, 5, 4))
    b.op(BuiltinOperator.CONV_2D, [x, w, bias], [y], Conv2DOptions(padding=Padding.SAME, stride_w=1, stride_h=1))
    b.output(y)
    assert_parity(b.finish(), api_level=27)


def test_dynamic_batch_shape_chain_folds():
    # SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE, the TensorFlow idiom around a squeeze-excite block.
    b = TfliteBuilder()
    x = b.input("x", (1, 4, 3, 5), np.float32, shape_signature=(-1, 4, 3, 5))
    shape = b.tensor("shape", (4,), np.int32)
    b.op(BuiltinOperator.SHAPE, [x], [shape], ShapeOptions(out_type=2))
    batch = b.tensor("batch", (), np.int32)
    b.op(BuiltinOperator.STRIDED_SLICE, [shape, b.const("b0", np.array([0], np.int32)),
                                         b.const("e0", np.array([1], np.int32)),
                                         b.const("s0", np.array([1], np.int32))], [batch],
         StridedSliceOptions(shrink_axis_mask=1))
    new_shape = b.tensor("new_shape", (2,), np.int32)
    b.op(BuiltinOperator.PACK, [batch, b.const("n", np.array(60, np.int32))], [new_shape])
    from nnconv.tflite.options import PackOptions
    b.ops[-1].options = PackOptions(values_count=2, axis=0)
    y = b.tensor("y", (1, 60), np.float32, shape_signature=(-1, 60))
    b.op(BuiltinOperator.RESHAPE, [x, new_shape], [y], ReshapeOptions())
    b.output(y)
    result = assert_parity(b.finish(), api_level=27, expect_ops=["RESHAPE"])
    assert [r.status.value for r in result.report.ops] == ["folded", "folded", "folded", "lowered"]


def test_zero_sized_extent_is_refused():
    b = TfliteBuilder()
    x = b.input("x", (0, 6), np.float32)
    y = b.tensor("y", (0, 6), np.float32)
    b.op(BuiltinOperator.RELU, [x], [y])
    b.output(y)
    assert_refused(b.finish(), 30, Code.DYNAMIC_SHAPE)
