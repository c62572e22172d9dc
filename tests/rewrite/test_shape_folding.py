"""SHAPE/RANK of tensors whose shape is static fold whatever their dtype and quantization: Keras' Flatten
and squeeze-excite reshapes in int8/uint8 models (nnconv/rewrite/folding.py)."""

from __future__ import annotations

import numpy as np
import pytest

from harness import QuantParams, TfliteBuilder, assert_parity, keras_flatten, nnconv_options
from nnconv.pipeline import check_model
from nnconv.lowering.diagnostics import Verdict

TYPES = {"float32": (np.float32, None), "int8": (np.int8, QuantParams(0.05, -3)),
         "uint8": (np.uint8, QuantParams(0.05, 120))}


def flatten_model(dtype: str) -> bytes:
    """Keras' Flatten on a quantized tensor: RESHAPE(x, PACK(SHAPE(x)[0], -1))."""
    np_dtype, q = TYPES[dtype]
    b = TfliteBuilder()
    x = b.input("x", (1, 3, 4, 5), np_dtype, quant=q)
    y = keras_flatten(b, x, (1, 3, 4, 5), np_dtype, q)
    b.output(y)
    return b.finish()


@pytest.mark.parametrize("dtype", ["float32", "int8", "uint8"])
@pytest.mark.parametrize("api", [29, 30])
def test_flatten_of_quantized_tensor_folds(dtype, api):
    report = check_model(flatten_model(dtype), api, nnconv_options())
    assert [r.status for r in report.ops] == [Verdict.FOLDED] * 3 + [Verdict.LOWERED]
    assert_parity(flatten_model(dtype), api_level=api, expect_ops=["RESHAPE"])
