"""Activation lowering: parity with TFLite for float32, uint8 and int8 at the API levels where the lowering
differs, the pre-API-29/30 compositions, and refusals with their diagnostic codes."""

from __future__ import annotations

import numpy as np
import pytest

from harness import QuantParams, assert_bit_exact, assert_parity, assert_refused, single_op_model
from nnconv.lowering.diagnostics import Code
from nnconv.tflite.options import LeakyReluOptions
from nnconv.tflite.schema_enums import BuiltinOperator as B

SHAPE = (2, 5, 7, 3)
Q_IN = {np.uint8: QuantParams(0.06, 120), np.int8: QuantParams(0.06, -8)}


def act_model(op, dtype=np.float32, q_out=None, shape=SHAPE, options=None):
    q_in = Q_IN.get(dtype)
    q_out = q_out if q_out is not None else q_in
    return single_op_model(op, [("x", shape, dtype, q_in)], [("y", shape, dtype, q_out)], options)


def wide(feed):
    """Float inputs spread over [-8, 8] so every activation's saturated regions are exercised."""
    return {k: (v * np.float32(8)).astype(v.dtype) if v.dtype == np.float32 else v for k, v in feed.items()}


RELUS = {B.RELU: "RELU", B.RELU6: "RELU6", B.RELU_N1_TO_1: "RELU1"}


@pytest.mark.parametrize("op", list(RELUS), ids=lambda o: o.name)
@pytest.mark.parametrize("dtype", [np.float32, np.uint8, np.int8], ids=["f32", "u8", "i8"])
def test_relu_family_parity(op, dtype):
    m = act_model(op, dtype)
    assert_parity(m, api_level=27, input_fn=wide, expect_ops=[RELUS[op]])
    if dtype is np.int8:
        assert_parity(m, api_level=30, expect_ops=[RELUS[op]])


@pytest.mark.parametrize("op", list(RELUS), ids=lambda o: o.name)
@pytest.mark.parametrize("dtype", [np.uint8, np.int8], ids=["u8", "i8"])
def test_relu_family_requantizing(op, dtype):
    # Output quantization differs from the input's: one ADD(x, 0) with the activation fused.
    q_out = QuantParams(0.03, 10 if dtype is np.uint8 else -100)
    m = act_model(op, dtype, q_out=q_out)
    assert_parity(m, api_level=27, expect_ops=["ADD"])
    assert_parity(m, api_level=30, expect_ops=["ADD"])


SIGMOIDAL = {B.LOGISTIC: {np.uint8: QuantParams(1 / 256, 0), np.int8: QuantParams(1 / 256, -128)},
             B.TANH: {np.uint8: QuantParams(1 / 128, 128), np.int8: QuantParams(1 / 128, 0)}}


@pytest.mark.parametrize("op", list(SIGMOIDAL), ids=lambda o: o.name)
def test_sigmoidal_float_parity(op):
    assert_parity(act_model(op), api_level=27, input_fn=wide, expect_ops=[op.name])


@pytest.mark.parametrize("op", list(SIGMOIDAL), ids=lambda o: o.name)
@pytest.mark.parametrize("dtype", [np.uint8, np.int8], ids=["u8", "i8"])
def test_sigmoidal_quantized_parity(op, dtype):
    m = act_model(op, dtype, q_out=SIGMOIDAL[op][dtype])
    assert_parity(m, api_level=27 if op is B.LOGISTIC else 29)
    assert_parity(m, api_level=30)


def test_tanh_quantized_needs_29():
    m = act_model(B.TANH, np.uint8, q_out=SIGMOIDAL[B.TANH][np.uint8])
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)


def test_logistic_wrong_output_quantization_refused():
    assert_refused(act_model(B.LOGISTIC, np.uint8, q_out=QuantParams(1 / 128, 0)), 30, Code.QUANTIZATION)


def test_elu_parity_and_level():
    m = act_model(B.ELU)
    assert_parity(m, api_level=30, input_fn=wide, expect_ops=["ELU"])
    composite = ["MINIMUM", "EXP", "ADD", "RELU", "ADD"]
    assert_parity(m, api_level=29, input_fn=wide, expect_ops=composite)
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)
    q = act_model(B.ELU, np.int8, q_out=QuantParams(0.04, 0))
    assert_parity(q, api_level=30, expect_ops=["DEQUANTIZE", "ELU", "QUANTIZE"])
    assert_parity(q, api_level=29, expect_ops=["DEQUANTIZE", *composite, "QUANTIZE"])
    assert_refused(act_model(B.ELU, np.uint8), 30, Code.DTYPE)  # TFLite has no uint8 ELU


def test_hard_swish_float_native_and_composite():
    m = act_model(B.HARD_SWISH)
    assert_parity(m, api_level=30, input_fn=wide, expect_ops=["HARD_SWISH"])
    assert_parity(m, api_level=27, input_fn=wide, expect_ops=["MUL", "MUL", "MUL", "ADD"])


@pytest.mark.parametrize("dtype", [np.uint8, np.int8], ids=["u8", "i8"])
def test_hard_swish_quantized(dtype):
    q_out = QuantParams(0.05, 30 if dtype is np.uint8 else -100)
    m = act_model(B.HARD_SWISH, dtype, q_out=q_out)
    assert_parity(m, api_level=30, expect_ops=["HARD_SWISH"])
    assert_parity(m, api_level=29, expect_ops=["CAST", "GATHER"])
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8], ids=["u8", "i8"])
@pytest.mark.parametrize("in_scale,out_scale", [(0.05, 0.05), (0.1, 0.04), (0.02, 0.015), (0.2, 0.5)])
def test_hard_swish_quantized_table_is_bit_exact_at_29(dtype, in_scale, out_scale):
    """Below API 30 the 256 results of the reference's fixed-point HARD_SWISH are a constant table read by
    GATHER(CAST(x)): every stored input value gives TFLite's int8/uint8 result bit for bit (and the same bits
    as API 30's native HARD_SWISH)."""
    from harness import assert_bit_exact
    from nnconv.parity.tflite_runner import REFERENCE_KERNELS
    info = np.iinfo(dtype)
    zp = (3 if dtype is np.int8 else 131)
    m = single_op_model(B.HARD_SWISH, [("x", (256,), dtype, QuantParams(in_scale, zp))],
                        [("y", (256,), dtype, QuantParams(out_scale, zp - 20))])
    every_value = {"x": np.arange(info.min, info.max + 1).astype(dtype)}
    assert_bit_exact(m, 29, every_value)
    assert_bit_exact(m, 30, every_value)
    assert_parity(m, api_level=29, inputs=every_value, kernels=REFERENCE_KERNELS, expect_ops=["CAST", "GATHER"])


def test_hard_swish_quantized_tiny_output_scale_refused():
    """An output scale the fixed point cannot reach (multiplier above 1), which TFLite's Prepare refuses too."""
    m = act_model(B.HARD_SWISH, np.uint8, q_out=QuantParams(1e-4, 0))
    for api in (29, 30):
        assert_refused(m, api, Code.QUANTIZATION)


def prelu_model(dtype=np.float32, alpha_shape=(7, 1), const_alpha=True):
    rng = np.random.default_rng(5)
    q_in, q_alpha = Q_IN.get(dtype), (QuantParams(0.01, 3) if dtype is not np.float32 else None)
    if const_alpha:
        if dtype is np.float32:
            alpha = rng.uniform(-0.5, 1.5, alpha_shape).astype(np.float32)
        else:
            alpha = rng.integers(-40, 100, alpha_shape).astype(dtype)
        a = ("alpha", alpha, q_alpha)
    else:
        a = ("alpha", alpha_shape, dtype, q_alpha)
    q_out = QuantParams(0.05, 100 if dtype is np.uint8 else 10) if q_in else None
    return single_op_model(B.PRELU, [("x", SHAPE, dtype, q_in), a], [("y", SHAPE, dtype, q_out)])


@pytest.mark.parametrize("dtype", [np.float32, np.uint8, np.int8], ids=["f32", "u8", "i8"])
def test_prelu_parity(dtype):
    m = prelu_model(dtype)
    assert_parity(m, api_level=29, expect_ops=["PRELU"])
    assert_parity(m, api_level=30, expect_ops=["PRELU"])


def test_prelu_float_below_29_is_exact_composite():
    m = prelu_model(np.float32)
    assert_parity(m, api_level=27, expect_ops=["RELU", "MUL", "RELU", "MUL", "ADD"])


def test_prelu_refusals_below_29():
    assert_refused(prelu_model(np.uint8), 28, Code.API_LEVEL, min_api_level=29)
    assert_refused(prelu_model(np.float32, const_alpha=False), 28, Code.API_LEVEL, min_api_level=29)


def leaky(dtype=np.float32, alpha=0.2):
    q_out = QuantParams(0.04, 128 if dtype is np.uint8 else 0) if dtype is not np.float32 else None
    return act_model(B.LEAKY_RELU, dtype, q_out=q_out, options=LeakyReluOptions(alpha=alpha))


@pytest.mark.parametrize("alpha", [0.2, -0.3, 0.0], ids=["pos", "neg", "zero"])
@pytest.mark.parametrize("dtype", [np.float32, np.uint8, np.int8], ids=["f32", "u8", "i8"])
def test_leaky_relu_parity(dtype, alpha):
    m = leaky(dtype, alpha)
    assert_parity(m, api_level=29, input_fn=wide, expect_ops=["PRELU"])
    assert_parity(m, api_level=30, input_fn=wide, expect_ops=["PRELU"])


def test_leaky_relu_below_29():
    assert_parity(leaky(), api_level=27, input_fn=wide, expect_ops=["RELU", "MUL", "RELU", "MUL", "ADD"])
    assert_refused(leaky(np.uint8), 28, Code.API_LEVEL, min_api_level=29)


def edge_map(shape, seed=0) -> np.ndarray:
    """Wide float32 values with +-inf, +-0.0 and subnormals scattered through a map large enough for the
    kernels' tiled and pooled paths (NaN is left out: TFLite's RELU keeps it, the reference's gives lo)."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 8).astype(np.float32)
    at = rng.choice(x.size, 40, replace=False)
    x.reshape(-1)[at] = np.resize(np.asarray([np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 3e38, -3e38],
                                             np.float32), 40)
    return x


@pytest.mark.parametrize("op", list(RELUS), ids=lambda o: o.name)
def test_relu_family_large_map_bit_exact(op):
    shape = (1, 33, 35, 16)
    assert_bit_exact(act_model(op, shape=shape), 30, {"x": edge_map(shape)})


@pytest.mark.parametrize("alpha_shape", [(1, 1, 16), (35, 1), (1,)], ids=["channel", "width", "one"])
def test_prelu_large_map_bit_exact(alpha_shape):
    shape = (1, 33, 35, 16)
    alpha = np.random.default_rng(7).uniform(-0.5, 1.5, alpha_shape).astype(np.float32)
    m = single_op_model(B.PRELU, [("x", shape, np.float32, None), ("alpha", alpha, None)],
                        [("y", shape, np.float32, None)])
    for api in (29, 30):
        assert_bit_exact(m, api, {"x": edge_map(shape, seed=1)})


def test_relu_rank5_refused():
    assert_refused(act_model(B.RELU, shape=(2, 1, 3, 1, 2)), 30, Code.RANK)


@pytest.mark.parametrize("dtype", [np.float32, np.uint8, np.int8], ids=["f32", "u8", "i8"])
def test_relu_0_to_1(dtype):
    m = act_model(B.RELU_0_TO_1, dtype)
    assert_parity(m, api_level=27, expect_ops=["RELU1", "RELU"])
    assert_parity(m, api_level=30, expect_ops=["RELU1", "RELU"])
    if dtype is not np.float32:
        q_out = QuantParams(1 / 255, 0 if dtype is np.uint8 else -128)
        assert_parity(act_model(B.RELU_0_TO_1, dtype, q_out=q_out), api_level=27, expect_ops=["ADD", "RELU"])


def test_prelu_and_leaky_relu_composites_are_bit_exact():
    x = np.random.default_rng(13).standard_normal(SHAPE).astype(np.float32) * np.float32(5)
    assert_bit_exact(prelu_model(np.float32), 27, {"x": x})
    assert_bit_exact(leaky(np.float32, -0.3), 27, {"x": x})
    assert_bit_exact(act_model(B.RELU_0_TO_1), 27, {"x": x})


@pytest.mark.parametrize("approximate", [True, False], ids=["tanh-form", "erf-form"])
def test_gelu_float(approximate):
    from nnconv.tflite.options import GeluOptions
    m = act_model(B.GELU, options=GeluOptions(approximate=approximate))
    assert_parity(m, api_level=27 if approximate else 29, input_fn=wide)
    if not approximate:
        assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)
    for dtype in (np.uint8, np.int8):
        q_out = QuantParams(0.04, 10 if dtype is np.uint8 else -118)
        q = act_model(B.GELU, dtype, q_out=q_out, options=GeluOptions(approximate=approximate))
        assert_parity(q, api_level=29)
        assert_parity(q, api_level=30)
        assert_refused(q, 28, Code.API_LEVEL, min_api_level=29)


@pytest.mark.parametrize("api", [27, 29])
def test_prelu_with_float16_alpha_through_dequantize_is_constant(api):
    """MediaPipe's float16 models: alpha = DEQUANTIZE(float16 constant). That alpha is a constant made at
    conversion time (lowering/context.py `conversion_constants`), so below API 29 the exact composite
    applies instead of a refusal for a "non-constant alpha"."""
    from nnconv.tflite.builder import TfliteBuilder
    rng = np.random.default_rng(3)
    b = TfliteBuilder()
    x = b.input("x", (1, 4, 5, 3), np.float32)
    a16 = b.const("alpha16", rng.uniform(-0.5, 0.5, (1, 1, 3)).astype(np.float16))
    a = b.tensor("alpha", (1, 1, 3), np.float32)
    y = b.tensor("y", (1, 4, 5, 3), np.float32)
    b.op(B.DEQUANTIZE, [a16], [a])
    b.op(B.PRELU, [x, a], [y])
    b.output(y)
    ops = ["RELU", "MUL", "RELU", "MUL", "ADD"] if api < 29 else ["PRELU"]
    assert_parity(b.finish(), api_level=api, expect_ops=ops)
