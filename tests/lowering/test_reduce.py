"""Reduction lowerings: MEAN, SUM, REDUCE_PROD/MAX/MIN/ANY, ARG_MAX/ARG_MIN, TOPK_V2."""

from __future__ import annotations

import numpy as np
import pytest

from harness import QuantParams, assert_parity, assert_refused, nnconv_options, single_op_model
from nnconv.lowering.diagnostics import Code
from nnconv.tflite.options import ArgMaxOptions, ArgMinOptions, ReducerOptions, TopKV2Options
from nnconv.tflite.schema_enums import BuiltinOperator as B
from shape_models import io, op_model

I32 = np.int32
AXES = [
    pytest.param([1, 2], True, (2, 1, 1, 3), id="hw-keep"),
    pytest.param([1, 2], False, (2, 3), id="hw"),
    pytest.param([-1], False, (2, 5, 7), id="last"),
    pytest.param([0, 1, 2, 3], False, (), id="all"),
    pytest.param([2, 0], False, (5, 3), id="apart"),  # not adjacent: float MEAN's general path, not the BLAS one
    pytest.param([1], True, (2, 1, 7, 3), id="middle"),
]


@pytest.mark.parametrize("axes,keep,out", AXES)
@pytest.mark.parametrize("dtype,api", [("float32", 28), ("float32", 30), ("uint8", 29), ("int8", 29),
                                       ("int8", 30)])
def test_mean_parity(axes, keep, out, dtype, api):
    m = op_model(B.MEAN, (2, 5, 7, 3), out, dtype, [np.array(axes, I32)], ReducerOptions(keep_dims=keep))
    pooled = dtype != "float32" and sorted(a % 4 for a in axes) == [1, 2]  # quantized H,W: AVERAGE_POOL_2D
    expect = (["AVERAGE_POOL_2D"] + ([] if keep else ["RESHAPE"])) if pooled else ["MEAN"]
    assert_parity(m, api_level=api, expect_ops=expect)


@pytest.mark.parametrize("dtype,api", [("uint8", 29), ("int8", 29), ("int8", 30)])
def test_mean_requantized_output_goes_through_float(dtype, api):
    q_in = QuantParams(0.05, 120) if dtype == "uint8" else QuantParams(0.05, -8)
    q_out = QuantParams(0.02, 100) if dtype == "uint8" else QuantParams(0.02, 5)
    np_dtype = np.uint8 if dtype == "uint8" else np.int8
    m = single_op_model(B.MEAN, [("x", (2, 5, 7, 3), np_dtype, q_in), ("a", np.array([1, 2], I32))],
                        [("y", (2, 3), np_dtype, q_out)], ReducerOptions(keep_dims=False))
    ops = [op.type.name for op in assert_parity(m, api_level=api).converted.model.main.operations]
    if dtype == "uint8":
        assert ops == ["DEQUANTIZE", "MEAN", "QUANTIZE"]
    else:  # int8 reproduces TFLite's integer rounding in float (see test_real_model_regressions.py)
        assert ops[:2] == ["DEQUANTIZE", "MEAN"] and ops[-1] == "QUANTIZE" and "FLOOR" in ops


@pytest.mark.parametrize("dtype", ["float32", "uint8", "int8"])
@pytest.mark.parametrize("keep,out,ops", [(True, (2, 1, 1, 3), ["AVERAGE_POOL_2D"]),
                                          (False, (2, 3), ["AVERAGE_POOL_2D", "RESHAPE"])])
def test_spatial_mean_is_average_pool_at_27(dtype, keep, out, ops):
    m = op_model(B.MEAN, (2, 5, 7, 3), out, dtype, [np.array([2, 1], I32)], ReducerOptions(keep_dims=keep))
    assert_parity(m, api_level=27, expect_ops=ops)


@pytest.mark.parametrize("dtype,api", [("uint8", 28), ("uint8", 30), ("int8", 30)])
def test_quantized_spatial_mean_is_average_pool_at_every_level(dtype, api):
    """NNAPI's quantized MEAN truncates the average, AVERAGE_POOL_2D rounds it: against TFLite on 40 maps of
    7x7x16, MEAN was 1 LSB off on about half of the outputs, AVERAGE_POOL_2D on a few percent."""
    import nnconv
    from nnconv.parity.tflite_runner import TfliteRunner
    from nnconv.runtime.executor import Executor
    m = op_model(B.MEAN, (40, 7, 7, 16), (40, 1, 1, 16), dtype, [np.array([1, 2], I32)],
                 ReducerOptions(keep_dims=True))
    assert_parity(m, api_level=api, expect_ops=["AVERAGE_POOL_2D"])
    info = np.iinfo(np.dtype(dtype))
    x = np.random.default_rng(3).integers(info.min, info.max + 1, (40, 7, 7, 16)).astype(dtype)
    runner = TfliteRunner(m)
    want = next(iter(runner.run({runner.input_details()[0]["index"]: x}).values()))
    converted = nnconv.convert(m, api_level=api, options=nnconv_options()).converted
    got = next(iter(Executor(converted).run({"x": x}).values()))
    assert np.count_nonzero(got != want) < 0.05 * want.size


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_quantized_mean_at_28(dtype):
    m = op_model(B.MEAN, (2, 5, 7, 3), (2, 5, 3), dtype, [np.array([2], I32)], ReducerOptions(keep_dims=False))
    assert_parity(m, api_level=28, expect_ops=["MEAN"])


def test_mean_refusals():
    m = op_model(B.MEAN, (2, 5, 7, 3), (2, 7, 3), "float32", [np.array([1], I32)])
    assert_refused(m, 27, Code.API_LEVEL, min_api_level=28)
    mq = single_op_model(B.MEAN, [("x", (2, 5, 7, 3), np.uint8, QuantParams(0.1, 3)), ("a", np.array([1, 2], I32))],
                         [("y", (2, 3), np.uint8, QuantParams(0.05, 3))])
    assert_refused(mq, 28, Code.API_LEVEL, min_api_level=29)
    dyn = single_op_model(B.MEAN, [("x", (2, 5, 7, 3), np.float32), ("a", (2,), I32)],
                          [("y", (2, 3), np.float32)], ReducerOptions())
    assert_refused(dyn, 30, Code.NON_CONSTANT)


@pytest.mark.parametrize("op,nnapi", [(B.SUM, "REDUCE_SUM"), (B.REDUCE_PROD, "REDUCE_PROD"),
                                      (B.REDUCE_MAX, "REDUCE_MAX"), (B.REDUCE_MIN, "REDUCE_MIN")])
@pytest.mark.parametrize("axes,keep,out", AXES[:3])
def test_float_reductions_parity(op, nnapi, axes, keep, out):
    m = op_model(op, (2, 5, 7, 3), out, "float32", [np.array(axes, I32)], ReducerOptions(keep_dims=keep))
    assert_parity(m, api_level=29, expect_ops=[nnapi])
    if not (op == B.REDUCE_MAX and sorted(axes) == [1, 2]):  # that one is MAX_POOL_2D below 29
        assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)


@pytest.mark.parametrize("op,nnapi", [(B.REDUCE_MAX, "REDUCE_MAX"), (B.REDUCE_MIN, "REDUCE_MIN")])
@pytest.mark.parametrize("dtype,api", [("uint8", 29), ("int8", 29), ("int8", 30)])
def test_quantized_max_min_parity(op, nnapi, dtype, api):
    m = op_model(op, (2, 5, 7, 3), (2, 7, 3), dtype, [np.array([1], I32)], ReducerOptions(keep_dims=False))
    assert_parity(m, api_level=api, expect_ops=[nnapi])


@pytest.mark.parametrize("dtype,api", [("float32", 27), ("uint8", 27), ("int8", 28)])
@pytest.mark.parametrize("keep,out,ops", [(True, (2, 1, 1, 3), ["MAX_POOL_2D"]),
                                          (False, (2, 3), ["MAX_POOL_2D", "RESHAPE"])])
def test_spatial_reduce_max_is_max_pool_below_29(dtype, api, keep, out, ops):
    m = op_model(B.REDUCE_MAX, (2, 5, 7, 3), out, dtype, [np.array([1, -2], I32)], ReducerOptions(keep_dims=keep))
    assert_parity(m, api_level=api, expect_ops=ops)


@pytest.mark.parametrize("dtype,api", [("uint8", 29), ("int8", 29), ("int8", 30)])
def test_quantized_sum_goes_through_float(dtype, api):
    q_in = QuantParams(0.01, 120) if dtype == "uint8" else QuantParams(0.01, -8)
    q_out = QuantParams(0.3, 10) if dtype == "uint8" else QuantParams(0.3, 4)
    np_dtype = np.uint8 if dtype == "uint8" else np.int8
    m = single_op_model(B.SUM, [("x", (2, 5, 7, 3), np_dtype, q_in), ("a", np.array([1, 2], I32))],
                        [("y", (2, 3), np_dtype, q_out)], ReducerOptions(keep_dims=False))
    assert_parity(m, api_level=api, expect_ops=["DEQUANTIZE", "REDUCE_SUM", "QUANTIZE"])
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)


def test_quantized_prod_refused():
    m = op_model(B.REDUCE_PROD, (2, 5, 7, 3), (2, 3), "uint8", [np.array([1, 2], I32)])
    assert_refused(m, 30, Code.DTYPE)


def int8_prod_model(n: int, s_in: float, s_out: float) -> bytes:
    """int8 REDUCE_PROD of [16, 16, n] over its last axis (n values per output)."""
    return single_op_model(B.REDUCE_PROD, [("x", (16, 16, n), np.int8, QuantParams(s_in, -3)),
                                           ("a", np.array([2], I32))],
                           [("y", (16, 16), np.int8, QuantParams(s_out, 1))], ReducerOptions(keep_dims=False))


@pytest.mark.parametrize("n,s_in,s_out", [(2, 0.05, 0.05), (3, 0.02, 0.01)])
@pytest.mark.parametrize("api", [29, 30])
def test_int8_prod_through_float_where_tflite_rounding_stays_within_a_step(n, s_in, s_out, api):
    """TFLite rounds after each multiplication; where `_quant_prod`'s bound is below 1 (0.11 and 0.62
    here) the float product is within 1 LSB of it, over seeded inputs spanning the whole int8 range."""
    m = int8_prod_model(n, s_in, s_out)
    for seed in range(4):
        assert_parity(m, api_level=api, seed=seed, expect_ops=["DEQUANTIZE", "REDUCE_PROD", "QUANTIZE"])
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)


@pytest.mark.parametrize("n,s_in,s_out,why", [(4, 0.05, 0.02, "output steps"), (8, 0.1, 0.05, "wraps"),
                                              (1, 0.05, 0.02, "reference kernel")],
                         ids=["rounding-8-lsb", "int32-wrap", "one-value"])
def test_int8_prod_refused_where_tflite_rounding_adds_up(n, s_in, s_out, why):
    """Measured: TFLite up to 8 LSB (n = 4) and 255 LSB (n = 8, its partial products wrapping) from the
    float product; with one value per output its optimized and reference kernels disagree (up to 79 LSB)."""
    (diag,) = [d for d in assert_refused(int8_prod_model(n, s_in, s_out), 30, Code.QUANTIZATION)
               if d.code is Code.QUANTIZATION]
    assert why in diag.message and diag.hint


@pytest.mark.parametrize("op,nnapi", [(B.REDUCE_ANY, "REDUCE_ANY"), (B.REDUCE_ALL, "REDUCE_ALL")])
def test_reduce_any_all_parity(op, nnapi):
    m = single_op_model(op, [("x", (2, 5, 7), np.bool_), ("a", np.array([1], I32))],
                        [("y", (2, 7), np.bool_)], ReducerOptions(keep_dims=False))
    # Mostly-true inputs so that ALL is not trivially false everywhere.
    assert_parity(m, api_level=29, expect_ops=[nnapi],
                  input_fn=lambda f: {"x": np.random.default_rng(5).random((2, 5, 7)) > 0.1})
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)


@pytest.mark.parametrize("op,opts,nnapi", [(B.ARG_MAX, ArgMaxOptions(output_type=2), "ARGMAX"),
                                           (B.ARG_MIN, ArgMinOptions(output_type=2), "ARGMIN")])
@pytest.mark.parametrize("dtype,api", [("float32", 29), ("uint8", 29), ("int8", 29), ("int8", 30),
                                       ("int32", 29)])
@pytest.mark.parametrize("axis,out", [(1, (2, 7, 3)), (-1, (2, 5, 7))])
def test_arg_parity(op, opts, nnapi, dtype, api, axis, out):
    m = single_op_model(op, [io("x", (2, 5, 7, 3), dtype), ("a", np.array([axis], I32))],
                        [("y", out, np.int32)], opts)
    assert_parity(m, api_level=api, expect_ops=[nnapi])


def test_arg_refusals():
    m = single_op_model(B.ARG_MAX, [("x", (2, 5), np.float32), ("a", np.array([1], I32))],
                        [("y", (2,), np.int32)], ArgMaxOptions(output_type=2))
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)
    bad_axis = single_op_model(B.ARG_MAX, [("x", (2, 5), np.float32), ("a", np.array([2], I32))],
                               [("y", (2,), np.int32)], ArgMaxOptions(output_type=2))
    assert_refused(bad_axis, 30, Code.OPERAND_VALUE)


@pytest.mark.parametrize("op,opts,nnapi", [(B.ARG_MAX, ArgMaxOptions(output_type=4), "ARGMAX"),
                                           (B.ARG_MIN, ArgMinOptions(output_type=4), "ARGMIN")])
def test_arg_int64_output_travels_as_int32(op, opts, nnapi):
    m = single_op_model(op, [("x", (2, 5, 7), np.float32), ("a", np.array([-1], np.int64))],
                        [("y", (2, 5), np.int64)], opts)
    result = assert_parity(m, api_level=29, expect_ops=[nnapi])
    assert result.converted.outputs[0].dtype == "int64"


@pytest.mark.parametrize("dtype,api", [("float32", 29), ("uint8", 29), ("int8", 29), ("int8", 30),
                                       ("int32", 29)])
def test_topk_parity(dtype, api):
    m = single_op_model(B.TOPK_V2, [io("x", (2, 5, 7), dtype), ("k", np.array(3, I32))],
                        [io("v", (2, 5, 3), dtype), ("i", (2, 5, 3), np.int32)], TopKV2Options())
    # Distinct values per row so that the tie order (lower index first in both) cannot matter.
    def distinct(feed):
        x = feed["x"]
        perm = np.argsort(np.random.default_rng(3).random(x.shape), axis=-1)
        feed["x"] = (perm * 3 - 10).astype(x.dtype) if x.dtype.kind != "f" else (perm * 0.25 - 1).astype(x.dtype)
        return feed
    assert_parity(m, api_level=api, expect_ops=["TOPK_V2"], input_fn=distinct)


def test_topk_non_constant_k_refused():
    m = single_op_model(B.TOPK_V2, [("x", (2, 7), np.float32), ("k", (), I32)],
                        [("v", (2, 3), np.float32), ("i", (2, 3), np.int32)])
    assert_refused(m, 30, Code.NON_CONSTANT)
