"""Elementwise arithmetic lowering: parity with TFLite (float, uint8, int8, int32; broadcasting; every fused
activation; the pre-API-29 compositions) and refusals with their diagnostic codes."""

from __future__ import annotations

import numpy as np
import pytest

from harness import QuantParams, TfliteBuilder, assert_bit_exact, assert_parity, assert_refused, single_op_model
from nnconv.lowering.diagnostics import Code
from nnconv.tflite.options import AddOptions, CastOptions, DivOptions, MulOptions, SubOptions
from nnconv.tflite.schema_enums import BuiltinOperator as B
from nnconv.tflite.schema_enums import TensorType

X_SHAPE, Y_SHAPE = (2, 5, 7, 3), (5, 1, 3)  # unequal extents; y broadcasts over batch and width
OPTIONS = {B.ADD: AddOptions, B.SUB: SubOptions, B.MUL: MulOptions, B.DIV: DivOptions}
QX = {np.uint8: QuantParams(0.05, 128), np.int8: QuantParams(0.05, -3)}
QY = {np.uint8: QuantParams(0.03, 100), np.int8: QuantParams(0.03, 10)}
QOUT = {B.ADD: 0.08, B.SUB: 0.08, B.MUL: 0.2}


def binary(op, dtype=np.float32, act=0, x_shape=X_SHAPE, y_shape=Y_SHAPE, out_scale=None, y_const=None):
    out_shape = np.broadcast_shapes(x_shape, y_shape)
    quant = dtype in (np.uint8, np.int8)
    qx = QX[dtype] if quant else None
    qy = QY[dtype] if quant else None
    qo = QuantParams(out_scale or QOUT.get(op, 0.1), 120 if dtype == np.uint8 else 5) if quant else None
    y = ("y", y_const, qy) if y_const is not None else ("y", y_shape, dtype, qy)
    return single_op_model(op, [("x", x_shape, dtype, qx), y], [("z", out_shape, dtype, qo)],
                           OPTIONS[op](fused_activation_function=act))


def small_ints(feed):
    """int32 inputs in [-50, 50) (and nonzero divisors) instead of the default [0, 8)."""
    rng = np.random.default_rng(3)
    return {k: rng.integers(-50, 50, size=v.shape).astype(v.dtype) if v.dtype == np.int32 else v
            for k, v in feed.items()}


@pytest.mark.parametrize("act", [0, 1, 2, 3, 4, 6], ids=["none", "relu", "relu1", "relu6", "tanh", "sigmoid"])
@pytest.mark.parametrize("op", [B.ADD, B.SUB, B.MUL, B.DIV], ids=lambda o: o.name)
def test_float_parity_every_activation(op, act):
    # TFLite's arithmetic kernels ignore a fused TANH / SIGMOID, so the lowering emits the bare op for them.
    api = 27 if op in (B.ADD, B.MUL) else 28
    assert_parity(binary(op, act=act), api_level=api, expect_ops=[op.name])


@pytest.mark.parametrize("act", [0, 1, 2, 3], ids=["none", "relu", "relu1", "relu6"])
@pytest.mark.parametrize("dtype", [np.uint8, np.int8], ids=["uint8", "int8"])
@pytest.mark.parametrize("op", [B.ADD, B.SUB, B.MUL], ids=lambda o: o.name)
def test_quantized_parity(op, dtype, act):
    m = binary(op, dtype, act)
    low = 29 if op is B.SUB else 27
    assert_parity(m, api_level=low)  # int8 as uint8 + 128 below API 30
    assert_parity(m, api_level=30)  # int8 as TENSOR_QUANT8_ASYMM_SIGNED


@pytest.mark.parametrize("op", [B.ADD, B.SUB, B.MUL], ids=lambda o: o.name)
def test_int32_parity_and_levels(op):
    m = binary(op, np.int32)
    assert_parity(m, api_level=30, input_fn=small_ints, expect_ops=[op.name])
    assert_refused(m, 29, Code.API_LEVEL, min_api_level=30)


def test_int32_with_fused_activation_refused():
    assert_refused(binary(B.ADD, np.int32, act=1), 30, Code.OPTION)


@pytest.mark.parametrize("op", [B.ADD, B.SUB, B.MUL, B.DIV], ids=lambda o: o.name)
def test_fused_sign_bit_refused(op):
    # SIGN_BIT has no meaning as a fused activation; every rule refuses it through check_fused_activation.
    assert_refused(binary(op, act=5), 30, Code.OPTION)


def test_quantized_fused_tanh_is_ignored_like_tflite():
    assert_parity(binary(B.ADD, np.uint8, act=4), api_level=27, expect_ops=["ADD"])


def test_rank0_and_constant_operands_broadcast():
    # A rank-0 constant becomes a [1] tensor; NNAPI broadcasts it like TFLite.
    m = binary(B.MUL, x_shape=(3, 4, 6), y_shape=(), y_const=np.asarray(1.5, np.float32))
    assert_parity(m, api_level=27, expect_ops=["MUL"])
    m = binary(B.SUB, x_shape=(), y_shape=(4, 1, 6))
    assert_parity(m, api_level=28)


def test_quantized_constant_int8_operand_below_30():
    y = np.arange(-20, 25, dtype=np.int8).reshape(5, 1, 9)[:, :, :3]
    m = binary(B.ADD, np.int8, y_const=np.ascontiguousarray(y))
    assert_parity(m, api_level=27)
    assert_parity(m, api_level=30)


def test_level_refusals():
    assert_refused(binary(B.SUB), 27, Code.API_LEVEL, min_api_level=28)
    assert_refused(binary(B.DIV), 27, Code.API_LEVEL, min_api_level=28)
    assert_refused(binary(B.SUB, np.uint8), 28, Code.API_LEVEL, min_api_level=29)


def test_dtype_refusals():
    assert_refused(binary(B.DIV, np.int32), 30, Code.DTYPE)  # TFLite truncates, NNAPI floors
    assert_refused(binary(B.DIV, np.uint8), 30, Code.DTYPE)


def test_quantized_div_refusal_says_why_and_what_to_do():
    """int8 DIV with broadcasting (issue 26): TFLite's integer kernel is undefined for small dividends."""
    m = single_op_model(B.DIV, [("x", (2, 3), np.int8, QuantParams(0.05, -3)),
                                ("y", (1, 3), np.int8, QuantParams(0.02, 4))],
                        [("z", (2, 3), np.int8, QuantParams(0.1, 2))], DivOptions())
    (diag,) = [d for d in assert_refused(m, 34, Code.DTYPE) if d.code is Code.DTYPE]
    assert "undefined" in diag.message and "float" in diag.hint


@pytest.mark.parametrize("dtype", [np.uint8, np.int8], ids=["uint8", "int8"])
def test_mul_quantized_scale_constraint(dtype):
    # 0.05 * 0.03 = 0.0015 > 0.001: NNAPI's MUL cannot take it, the float form can (API 29).
    m = binary(B.MUL, dtype, act=1, out_scale=0.001)
    assert_parity(m, api_level=29, expect_ops=["DEQUANTIZE", "DEQUANTIZE", "MUL", "QUANTIZE"])
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)


def test_rank5_refused():
    m = binary(B.ADD, x_shape=(2, 1, 3, 1, 2), y_shape=(2, 1))
    assert_refused(m, 30, Code.RANK)


# -- ADD_N, SQUARE, SQUARED_DIFFERENCE, POW, MAXIMUM / MINIMUM ---------------------------------------
def test_add_n_parity():
    ins = [(f"x{k}", (2, 3, 5), np.float32) for k in range(4)]
    m = single_op_model(B.ADD_N, ins, [("y", (2, 3, 5), np.float32)])
    assert_parity(m, api_level=27, expect_ops=["ADD", "ADD", "ADD"])
    m = single_op_model(B.ADD_N, [(f"x{k}", (3, 4), np.int32) for k in range(3)], [("y", (3, 4), np.int32)])
    assert_parity(m, api_level=30, input_fn=small_ints)
    assert_refused(m, 29, Code.API_LEVEL, min_api_level=30)


def test_square_parity():
    m = single_op_model(B.SQUARE, [("x", (2, 3, 5, 4), np.float32)], [("y", (2, 3, 5, 4), np.float32)])
    assert_parity(m, api_level=27, expect_ops=["MUL"])


def squared_difference(dtype=np.float32, q=None):
    qx, qy, qo = (q or (None, None, None))
    return single_op_model(B.SQUARED_DIFFERENCE, [("x", (2, 5, 7, 3), dtype, qx), ("y", (7, 1), dtype, qy)],
                           [("z", (2, 5, 7, 3), dtype, qo)])


def test_squared_difference_float_parity():
    assert_parity(squared_difference(), api_level=27, expect_ops=["MUL", "ADD", "MUL"])  # y * -1 + x
    assert_parity(squared_difference(), api_level=28, expect_ops=["SUB", "MUL"])


def test_squared_difference_int32_parity():
    m = squared_difference(np.int32)
    assert_parity(m, api_level=30, input_fn=small_ints)
    assert_refused(m, 29, Code.API_LEVEL, min_api_level=30)


def test_pow_parity():
    m = single_op_model(B.POW, [("x", (2, 3, 5), np.float32), ("y", (3, 1), np.float32)],
                        [("z", (2, 3, 5), np.float32)])
    assert_parity(m, api_level=29, input_fn=lambda f: {k: np.abs(v) + 0.1 for k, v in f.items()})
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)


def minmax(op, dtype=np.float32, q=(None, None, None)):
    return single_op_model(op, [("x", (2, 5, 7, 3), dtype, q[0]), ("y", (7, 3), dtype, q[1])],
                           [("z", (2, 5, 7, 3), dtype, q[2])])


@pytest.mark.parametrize("op", [B.MAXIMUM, B.MINIMUM], ids=lambda o: o.name)
@pytest.mark.parametrize("dtype", [np.float32, np.uint8, np.int8, np.int32], ids=["f32", "u8", "i8", "i32"])
def test_min_max_parity(op, dtype):
    q = QuantParams(0.1, 3)
    m = minmax(op, dtype, (q, q, q) if dtype in (np.uint8, np.int8) else (None, None, None))
    assert_parity(m, api_level=29, expect_ops=[op.name])
    if dtype is np.int8:
        assert_parity(m, api_level=30)
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)


def test_min_max_mixed_quantization_refused():
    m = minmax(B.MAXIMUM, np.uint8, (QuantParams(0.1, 3), QuantParams(0.2, 3), QuantParams(0.1, 3)))
    assert_refused(m, 30, Code.QUANTIZATION)


# -- unary float functions ----------------------------------------------------------------------------
def positive(feed):
    return {k: (np.abs(v) + np.float32(0.05)).astype(v.dtype) for k, v in feed.items()}


def unary(op, dtype=np.float32, shape=(2, 3, 5, 4), out_dtype=None, options=None):
    return single_op_model(op, [("x", shape, dtype)], [("y", shape, out_dtype or dtype)], options)


@pytest.mark.parametrize("op", [B.EXP, B.LOG, B.SQRT, B.RSQRT, B.SIN, B.COS], ids=lambda o: o.name)
def test_unary_float_api29(op):
    m = unary(op)
    fn = positive if op in (B.LOG, B.SQRT, B.RSQRT) else None
    assert_parity(m, api_level=29, input_fn=fn)
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)


def test_unary_uint8_and_quantized_sin_refused():
    m = single_op_model(B.EXP, [("x", (2, 3), np.uint8, QuantParams(0.1, 0))],
                        [("y", (2, 3), np.uint8, QuantParams(0.1, 0))])
    assert_refused(m, 30, Code.DTYPE)  # TFLite has no uint8 EXP
    m = single_op_model(B.SIN, [("x", (2, 3), np.int8, QuantParams(0.1, 0))],
                        [("y", (2, 3), np.int8, QuantParams(0.1, 0))])
    assert_refused(m, 30, Code.DTYPE)


# (op, input quantization, output quantization, input_fn): int8 LUT ops of TFLite, lowered through float.
INT8_UNARY = {
    B.ABS: (QuantParams(0.05, 3), QuantParams(0.03, -128), None),
    B.EXP: (QuantParams(0.02, 0), QuantParams(0.02, -128), None),
    B.LOG: (QuantParams(0.05, -128), QuantParams(0.03, 20), None),
    B.SQRT: (QuantParams(0.05, -128), QuantParams(0.02, -128), None),
    B.RSQRT: (QuantParams(0.05, -128), QuantParams(0.03, -128), None),
}


@pytest.mark.parametrize("op", list(INT8_UNARY), ids=lambda o: o.name)
def test_unary_int8_through_float(op):
    qi, qo, _ = INT8_UNARY[op]
    m = single_op_model(op, [("x", (2, 3, 5, 4), np.int8, qi)], [("y", (2, 3, 5, 4), np.int8, qo)])

    def positive(feed):  # LOG / SQRT / RSQRT of real values > 0 (q > zp)
        return {k: np.clip(v, -127, 127).astype(np.int8) for k, v in feed.items()}
    ops = ["DEQUANTIZE", op.name, "QUANTIZE"]
    assert_parity(m, api_level=29, input_fn=positive, expect_ops=ops)  # int8 as uint8 + 128
    assert_parity(m, api_level=30, input_fn=positive, expect_ops=ops)
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)


def test_cos_is_sub_then_sin():
    assert_parity(unary(B.COS), api_level=29, expect_ops=["SUB", "SIN"])


@pytest.mark.parametrize("api, ops", [(27, ["MUL"]), (29, ["NEG"])])
def test_neg_float(api, ops):
    assert_parity(unary(B.NEG), api_level=api, expect_ops=ops)


def test_neg_int32():
    m = unary(B.NEG, np.int32)
    assert_parity(m, api_level=29, input_fn=small_ints)
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)


@pytest.mark.parametrize("api, ops", [(27, ["RELU", "MUL", "RELU", "ADD"]), (29, ["ABS"])])
def test_abs_float(api, ops):
    assert_parity(unary(B.ABS), api_level=api, expect_ops=ops)


def test_abs_int32():
    m = unary(B.ABS, np.int32)
    assert_parity(m, api_level=30, input_fn=small_ints)
    assert_refused(m, 29, Code.API_LEVEL, min_api_level=30)


def test_floor_and_ceil():
    assert_parity(unary(B.FLOOR), api_level=27, expect_ops=["FLOOR"])
    spread = lambda f: {k: v * np.float32(7) for k, v in f.items()}  # noqa: E731
    assert_parity(unary(B.CEIL), api_level=27, input_fn=spread, expect_ops=["MUL", "FLOOR", "MUL"])
    assert_parity(unary(B.CEIL), api_level=29, input_fn=spread, expect_ops=["NEG", "FLOOR", "NEG"])


def test_floor_rank5_refused():
    assert_refused(unary(B.FLOOR, shape=(2, 1, 3, 1, 2)), 30, Code.RANK)


# -- CAST and ZEROS_LIKE ------------------------------------------------------------------------------
TT = {np.float32: TensorType.FLOAT32, np.int32: TensorType.INT32, np.uint8: TensorType.UINT8,
      np.bool_: TensorType.BOOL}


def cast(src, dst):
    return unary(B.CAST, src, shape=(2, 3, 5), out_dtype=dst, options=CastOptions(TT[src], TT[dst]))


@pytest.mark.parametrize("src, dst", [(np.float32, np.int32), (np.int32, np.float32), (np.uint8, np.float32),
                                      (np.float32, np.uint8), (np.uint8, np.int32)],
                         ids=["f32-i32", "i32-f32", "u8-f32", "f32-u8", "u8-i32"])
def test_cast_parity(src, dst):
    def in_range(feed):  # values TFLite and NNAPI cast alike (NNAPI clamps to [0, 255] for uint8)
        return {k: (np.abs(v) * 100).astype(v.dtype) if v.dtype == np.float32 else v for k, v in feed.items()}
    m = cast(src, dst)
    assert_parity(m, api_level=29, input_fn=in_range, expect_ops=["CAST"])
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)


@pytest.mark.parametrize("src, dst, ops", [
    (np.bool_, np.float32, ["SELECT"]), (np.bool_, np.int32, ["SELECT"]), (np.bool_, np.uint8, ["SELECT"]),
    (np.float32, np.bool_, ["NOT_EQUAL"]), (np.int32, np.bool_, ["NOT_EQUAL"]), (np.uint8, np.bool_, ["NOT_EQUAL"]),
], ids=["b-f32", "b-i32", "b-u8", "f32-b", "i32-b", "u8-b"])
def test_cast_bool_compositions(src, dst, ops):
    def with_zeros(feed):  # make sure exact zeros occur
        return {k: np.where(np.arange(v.size).reshape(v.shape) % 3 == 0, 0, v).astype(v.dtype) if v.dtype != np.bool_
                else v for k, v in feed.items()}
    m = cast(src, dst)
    assert_parity(m, api_level=29, input_fn=with_zeros, expect_ops=ops)
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)


def test_cast_int8_refused():
    m = single_op_model(B.CAST, [("x", (2, 3), np.int8)], [("y", (2, 3), np.float32)],
                        CastOptions(TensorType.INT8, TensorType.FLOAT32))
    assert_refused(m, 30, Code.DTYPE)


def zeros_like_model(dtype=np.float32, consumed=True):
    b = TfliteBuilder()
    x = b.input("x", (2, 3, 4), dtype)
    z = b.tensor("zeros", (2, 3, 4), dtype)
    b.op(B.ZEROS_LIKE, [x], [z])
    if consumed:
        y = b.tensor("y", (2, 3, 4), dtype)
        b.op(B.ADD, [x, z], [y], AddOptions())
        b.output(y)
    else:
        b.output(z)
    return b.finish()


def test_zeros_like_becomes_a_constant():
    assert_parity(zeros_like_model(), api_level=27, expect_ops=["ADD"])


def test_zeros_like_as_model_output_is_copied():
    assert_parity(zeros_like_model(consumed=False), api_level=27, expect_ops=["ADD"])
    m = zeros_like_model(np.int32, consumed=False)
    assert_parity(m, api_level=29, expect_ops=["MAXIMUM"])
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)


def test_squared_difference_int8_parity():
    q = (QuantParams(0.05, 0), QuantParams(0.04, 10), QuantParams(0.02, -128))
    m = squared_difference(np.int8, q)
    ops = ["DEQUANTIZE", "DEQUANTIZE", "SUB", "MUL", "QUANTIZE"]
    assert_parity(m, api_level=29, expect_ops=ops)
    assert_parity(m, api_level=30, expect_ops=ops)
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)
    u8 = (QuantParams(0.05, 128), QuantParams(0.04, 100), QuantParams(0.02, 0))
    assert_refused(squared_difference(np.uint8, u8), 30, Code.DTYPE)  # TFLite has no uint8 kernel


def test_rank0_inputs_and_output():
    m = single_op_model(B.ADD, [("x", (), np.float32), ("y", (), np.float32)], [("z", (), np.float32)],
                        AddOptions())
    assert_parity(m, api_level=27, expect_ops=["ADD"])


# -- FLOOR_DIV, FLOOR_MOD, SIGN (beyond the delegate) --------------------------------------------------
def nonzero_ints(feed):
    rng = np.random.default_rng(4)
    out = {}
    for k, v in feed.items():
        if v.dtype == np.int32:
            a = rng.integers(-60, 60, size=v.shape).astype(np.int32)
            out[k] = np.where(a == 0, 7, a).astype(np.int32)
        else:
            out[k] = v
    return out


def two_input(op, dtype, options=None):
    return single_op_model(op, [("x", (2, 5, 7, 3), dtype), ("y", (7, 3), dtype)], [("z", (2, 5, 7, 3), dtype)],
                           options)


def test_floor_div():
    from nnconv.tflite.options import FloorDivOptions
    m = two_input(B.FLOOR_DIV, np.float32, FloorDivOptions())
    assert_parity(m, api_level=28, input_fn=lambda f: {k: v * np.float32(9) for k, v in f.items()},
                  expect_ops=["DIV", "FLOOR"])
    assert_refused(m, 27, Code.API_LEVEL, min_api_level=28)
    m = two_input(B.FLOOR_DIV, np.int32, FloorDivOptions())
    assert_parity(m, api_level=30, input_fn=nonzero_ints, expect_ops=["DIV"])
    assert_refused(m, 29, Code.API_LEVEL, min_api_level=30)


def test_floor_mod_int32():
    from nnconv.tflite.options import FloorModOptions
    m = two_input(B.FLOOR_MOD, np.int32, FloorModOptions())
    assert_parity(m, api_level=30, input_fn=nonzero_ints, expect_ops=["DIV", "MUL", "SUB"])
    assert_refused(m, 29, Code.API_LEVEL, min_api_level=30)
    assert_refused(two_input(B.FLOOR_MOD, np.uint8, FloorModOptions()), 30, Code.DTYPE)


@pytest.mark.parametrize("api", [29, 30])
def test_floor_mod_int8_stored_values_every_pair(api):
    """TFLite's int8 FLOOR_MOD ignores the quantization: the floor modulo of the stored values, kept as
    stored values. Every (x, y) pair with y != 0, broadcast [256, 1] by [1, 255], bit for bit, with three
    different quantizations (ignored alike) and int8 carried as uint8 + 128 at API 29."""
    from nnconv.tflite.options import FloorModOptions
    m = single_op_model(B.FLOOR_MOD, [("x", (256, 1), np.int8, QuantParams(0.05, -3)),
                                      ("y", (1, 255), np.int8, QuantParams(0.2, 7))],
                        [("z", (256, 255), np.int8, QuantParams(0.01, 2))], FloorModOptions())
    ys = np.arange(-128, 128)
    inputs = {"x": np.arange(-128, 128, dtype=np.int8).reshape(256, 1),
              "y": ys[ys != 0].astype(np.int8).reshape(1, 255)}
    assert_bit_exact(m, api, inputs)
    ops = ["CAST", "DEQUANTIZE", "CAST", "DEQUANTIZE", "DIV", "FLOOR", "MUL", "SUB", "QUANTIZE", "CAST"]
    assert_parity(m, api_level=api, inputs=inputs, expect_ops=ops)
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)


FLOAT_FLOOR_MOD_OPS = ["DIV", "FLOOR", "MUL", "SUB", "SUB", "SUB", "MUL", "SUB", "MUL", "SUB", "MUL", "LESS", "ABS", "ABS", "GREATER_EQUAL", "SUB",
                       "SELECT", "ADD", "SELECT"]


@pytest.mark.parametrize("seed", range(4))
def test_floor_mod_float32(seed):
    """x - floor(x / y) * y with TFLite's sign rule restored: both signs of x and y, exact multiples (a zero
    remainder, and quotients that round onto an integer), |x / y| up to ~300 (the documented bound is
    |x| * 2^-24 of error; the policy's rtol 1e-4 of the range holds while |x / y| < 1600)."""
    from nnconv.tflite.options import FloorModOptions
    m = two_input(B.FLOOR_MOD, np.float32, FloorModOptions())
    rng = np.random.default_rng(seed)

    def mixed(feed):
        y = (rng.uniform(0.3, 5.0, (7, 3)) * rng.choice([-1, 1], (7, 3))).astype(np.float32)
        x = rng.uniform(-100, 100, (2, 5, 7, 3)).astype(np.float32)
        k = rng.integers(-30, 30, (2, 5, 7, 3)).astype(np.float32)
        multiples = (k * y).astype(np.float32)  # exact multiples, and ones a rounding off
        x = np.where(rng.random(x.shape) < 0.3, multiples, x)
        x = np.where(rng.random(x.shape) < 0.1, np.nextafter(multiples, np.float32(np.inf)), x)
        return {"x": x.astype(np.float32), "y": y}
    assert_parity(m, api_level=29, input_fn=mixed, expect_ops=FLOAT_FLOOR_MOD_OPS)
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)


@pytest.mark.parametrize("dtype", [np.float32, np.int32], ids=["f32", "i32"])
def test_sign(dtype):
    from nnconv.tflite.options import SignOptions
    m = unary(B.SIGN, dtype, options=SignOptions())

    def with_zeros(feed):
        return {k: np.where(np.arange(v.size).reshape(v.shape) % 4 == 0, 0, v - (4 if dtype is np.int32 else 0))
                .astype(v.dtype) for k, v in feed.items()}
    assert_parity(m, api_level=29, input_fn=with_zeros, expect_ops=["GREATER", "LESS", "SELECT", "SELECT"])
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)


def test_round_half_to_even_exactly():
    m = unary(B.ROUND, shape=(2, 3, 4, 5))
    ties = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, 8388607.5, 3e7, -4194304.5, -4194305.5,
                     -8388607.0, 2.0 ** 23], np.float32)
    x = np.random.default_rng(8).uniform(-20, 20, 120).astype(np.float32)
    x[:ties.size] = ties
    x = x.reshape(2, 3, 4, 5)
    ops = ["ABS", "ADD", "SUB", "NEG", "LESS", "SELECT", "LESS", "SELECT"]
    assert_parity(m, api_level=29, inputs={"x": x}, expect_ops=ops)
    assert_bit_exact(m, 29, {"x": x})  # not merely within tolerance
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)


@pytest.mark.parametrize("op, api", [(B.ABS, 27), (B.NEG, 27), (B.CEIL, 27), (B.CEIL, 29), (B.SQUARE, 27)],
                         ids=["abs27", "neg27", "ceil27", "ceil29", "square27"])
def test_float_compositions_are_bit_exact(op, api):
    x = np.random.default_rng(11).standard_normal((2, 3, 5, 4)).astype(np.float32) * np.float32(30)
    assert_bit_exact(unary(op), api, {"x": x})


def test_floor_div_and_squared_difference_are_bit_exact():
    from nnconv.tflite.options import FloorDivOptions
    rng = np.random.default_rng(12)
    feed = {"x": rng.standard_normal((2, 5, 7, 3)).astype(np.float32) * np.float32(9),
            "y": rng.standard_normal((7, 3)).astype(np.float32)}
    assert_bit_exact(two_input(B.FLOOR_DIV, np.float32, FloorDivOptions()), 28, feed)
    feed["y"] = rng.standard_normal((7, 1)).astype(np.float32)
    assert_bit_exact(squared_difference(), 27, feed)
