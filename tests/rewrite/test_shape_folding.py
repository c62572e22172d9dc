"""SHAPE/RANK of tensors whose shape is static fold whatever their dtype and quantization: Keras' Flatten
and squeeze-excite reshapes in int8/uint8 models (nnconv/rewrite/folding.py)."""

from __future__ import annotations

import numpy as np
import pytest

from harness import QuantParams, TfliteBuilder, assert_parity, nnconv_options
from nnconv.pipeline import check_model
from nnconv.lowering.diagnostics import Verdict
from nnconv.tflite.options import PackOptions, ReshapeOptions, ShapeOptions, StridedSliceOptions
from nnconv.tflite.schema_enums import BuiltinOperator as B

I32 = np.int32
TYPES = {"float32": (np.float32, None), "int8": (np.int8, QuantParams(0.05, -3)),
         "uint8": (np.uint8, QuantParams(0.05, 120))}


def flatten_model(dtype: str) -> bytes:
    """Keras' Flatten on a quantized tensor: RESHAPE(x, PACK(SHAPE(x)[0], -1))."""
    np_dtype, q = TYPES[dtype]
    b = TfliteBuilder()
    x = b.input("x", (1, 3, 4, 5), np_dtype, quant=q)
    s = b.tensor("s", (4,), I32)
    b.op(B.SHAPE, [x], [s], ShapeOptions(out_type=2))
    n = b.tensor("n", (), I32)
    b.op(B.STRIDED_SLICE, [s, b.const("b0", np.array([0], I32)), b.const("e0", np.array([1], I32)),
                           b.const("s0", np.array([1], I32))], [n], StridedSliceOptions(shrink_axis_mask=1))
    packed = b.tensor("packed", (2,), I32)
    b.op(B.PACK, [n, b.const("minus1", np.array(-1, I32))], [packed], PackOptions(values_count=2, axis=0))
    y = b.tensor("y", (1, 60), np_dtype, quant=q)
    b.op(B.RESHAPE, [x, packed], [y], ReshapeOptions())
    b.output(y)
    return b.finish()


@pytest.mark.parametrize("dtype", ["float32", "int8", "uint8"])
@pytest.mark.parametrize("api", [29, 30])
def test_flatten_of_quantized_tensor_folds(dtype, api):
    report = check_model(flatten_model(dtype), api, nnconv_options())
    assert [r.status for r in report.ops] == [Verdict.FOLDED] * 3 + [Verdict.LOWERED]
    assert_parity(flatten_model(dtype), api_level=api, expect_ops=["RESHAPE"])
