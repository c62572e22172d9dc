"""EMBEDDING_LOOKUP and HASHTABLE_LOOKUP lowerings."""

from __future__ import annotations

import numpy as np
import pytest

from harness import QuantParams, assert_parity, assert_refused, single_op_model
from nnconv.lowering.diagnostics import Code
from nnconv.tflite.schema_enums import BuiltinOperator as B

I32 = np.int32
RNG = np.random.default_rng(11)


@pytest.mark.parametrize("api", [27, 30])
@pytest.mark.parametrize("values_shape", [(8, 3), (8, 2, 5)])
def test_embedding_lookup_parity(api, values_shape):
    values = RNG.standard_normal(values_shape).astype(np.float32)
    m = single_op_model(B.EMBEDDING_LOOKUP, [("ids", (6,), I32), ("table", values)],
                        [("y", (6,) + values_shape[1:], np.float32)])
    assert_parity(m, api_level=api, expect_ops=["EMBEDDING_LOOKUP"])  # random ids lie in [0, 8)


@pytest.mark.parametrize("dtype,api,hybrid", [("uint8", 27, False), ("int8", 29, False), ("int8", 30, False),
                                              ("int8", 27, True), ("int8", 30, True)])
def test_embedding_lookup_quantized_tables(dtype, api, hybrid):
    np_dtype = np.uint8 if dtype == "uint8" else np.int8
    info = np.iinfo(np_dtype)
    values = RNG.integers(info.min, info.max + 1, (8, 3)).astype(np_dtype)
    q = QuantParams(0.1, 0)
    out = ("y", (6, 3), np.float32) if hybrid else ("y", (6, 3), np_dtype, q)
    m = single_op_model(B.EMBEDDING_LOOKUP, [("ids", (6,), I32), ("table", values, q)], [out])
    ops = ["EMBEDDING_LOOKUP", "DEQUANTIZE"] if hybrid else ["EMBEDDING_LOOKUP"]
    assert_parity(m, api_level=api, expect_ops=ops)


def test_embedding_lookup_hybrid_uint8_refused():
    values = RNG.integers(0, 255, (8, 3)).astype(np.uint8)
    m = single_op_model(B.EMBEDDING_LOOKUP, [("ids", (6,), I32), ("table", values, QuantParams(0.1, 0))],
                        [("y", (6, 3), np.float32)])
    assert_refused(m, 30, Code.DTYPE)


def test_embedding_lookup_hybrid_with_zero_point_refused():
    values = RNG.integers(-128, 127, (8, 3)).astype(np.int8)
    m = single_op_model(B.EMBEDDING_LOOKUP, [("ids", (6,), I32), ("table", values, QuantParams(0.1, 7))],
                        [("y", (6, 3), np.float32)])
    assert_refused(m, 30, Code.QUANTIZATION)


@pytest.mark.parametrize("api", [27, 30])
def test_hashtable_lookup_parity_with_hits_and_misses(api):
    keys = np.array([-3, 0, 2, 5, 7], I32)  # sorted, as NNAPI requires
    values = RNG.standard_normal((5, 4)).astype(np.float32)
    m = single_op_model(B.HASHTABLE_LOOKUP, [("ids", (7,), I32), ("keys", keys), ("values", values)],
                        [("y", (7, 4), np.float32), ("hits", (7,), np.uint8)])
    feed = {"ids": np.array([0, 1, 2, 7, -3, 6, 5], I32)}
    assert_parity(m, api_level=api, expect_ops=["HASHTABLE_LOOKUP"], inputs=feed)


@pytest.mark.parametrize("values", [np.arange(10, dtype=I32).reshape(5, 2) - 3,
                                    np.arange(10, dtype=np.uint8).reshape(5, 2) * 20], ids=["int32", "uint8"])
def test_hashtable_lookup_int_tables(values):
    keys = np.array([-3, 0, 2, 5, 7], I32)
    q = QuantParams(0.5, 3) if values.dtype == np.uint8 else None
    table = ("values", values, q) if q else ("values", values)
    out = ("y", (4, 2), values.dtype, q) if q else ("y", (4, 2), values.dtype)
    m = single_op_model(B.HASHTABLE_LOOKUP, [("ids", (4,), I32), ("keys", keys), table],
                        [out, ("hits", (4,), np.uint8)])
    assert_parity(m, api_level=27, expect_ops=["HASHTABLE_LOOKUP"], inputs={"ids": np.array([7, 1, -3, 2], I32)})


def test_hashtable_lookup_int8_values_refused():
    m = single_op_model(B.HASHTABLE_LOOKUP, [("ids", (3,), I32), ("keys", np.array([1, 2], I32)),
                                             ("values", np.array([[1], [2]], np.int8))],
                        [("y", (3, 1), np.int8), ("hits", (3,), np.uint8)])
    assert_refused(m, 30, Code.DTYPE)
