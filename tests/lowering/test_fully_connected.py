"""FULLY_CONNECTED lowering: parity with TFLite and refusals."""

from __future__ import annotations

import numpy as np
import pytest

import nnconv
from harness import QuantParams, assert_parity, assert_refused, nnconv_options, single_op_model
from nnconv.runtime.executor import Executor
from nnconv.lowering.convert import ConversionOptions
from nnconv.lowering.diagnostics import Code
from nnconv.parity.tflite_runner import TfliteRunner
from nnconv.tflite.options import FullyConnectedOptions
from nnconv.tflite.schema_enums import BuiltinOperator

RNG = np.random.default_rng(17)


def fc_model(in_shape, units, out_shape, act=0, keep_num_dims=False, bias=True):
    k = in_shape[-1]
    ins = [("x", in_shape, np.float32), ("w", RNG.standard_normal((units, k)).astype(np.float32))]
    ins.append(("b", RNG.standard_normal(units).astype(np.float32)) if bias else None)
    opts = FullyConnectedOptions(fused_activation_function=act, keep_num_dims=keep_num_dims)
    return single_op_model(BuiltinOperator.FULLY_CONNECTED, ins, [("y", out_shape, np.float32)], opts)


def qfc_model(dtype, in_shape, units, out_shape, out_scale=0.2, act=0, keep_num_dims=False):
    k = in_shape[-1]
    zp = 128 if dtype == np.uint8 else 0
    lo, hi = (0, 256) if dtype == np.uint8 else (-127, 128)
    w = RNG.integers(lo, hi, (units, k)).astype(dtype)
    ins = [("x", in_shape, dtype, QuantParams(0.04, zp + 5)), ("w", w, QuantParams(0.02, zp)),
           ("b", RNG.integers(-1000, 1000, units).astype(np.int32), QuantParams(0.04 * 0.02, 0))]
    opts = FullyConnectedOptions(fused_activation_function=act, keep_num_dims=keep_num_dims)
    return single_op_model(BuiltinOperator.FULLY_CONNECTED, ins,
                           [("y", out_shape, dtype, QuantParams(out_scale, zp - 7))], opts)


@pytest.mark.parametrize("api", [27, 30])
@pytest.mark.parametrize("act", [0, 1, 2, 3])
def test_fc_float_parity(api, act):
    assert_parity(fc_model((3, 7), 5, (3, 5), act=act), api_level=api, expect_ops=["FULLY_CONNECTED"])


def test_fc_rank3_input_is_flattened():
    assert_parity(fc_model((2, 3, 7), 4, (6, 4)), api_level=27, expect_ops=["FULLY_CONNECTED"])


@pytest.mark.parametrize("api", [27, 30])
@pytest.mark.parametrize("act", [0, 3], ids=["none", "relu6"])
def test_fc_keep_num_dims_reshapes(api, act):
    # TFLite's delegate needs API 30 for this; FC + RESHAPE is plain NNAPI 1.0. The fused activation goes on
    # the FC before the RESHAPE.
    m = fc_model((2, 3, 7), 4, (2, 3, 4), act=act, keep_num_dims=True)
    assert_parity(m, api_level=api, expect_ops=["FULLY_CONNECTED", "RESHAPE"])


@pytest.mark.parametrize("act", [4, 5, 6], ids=["tanh", "sign-bit", "sigmoid"])
def test_fc_fused_activation_tflite_rejects_is_refused(act):
    # TFLite's FC kernel fails to prepare with TANH / SIGMOID (unlike CONV_2D, which ignores them).
    assert_refused(fc_model((3, 7), 5, (3, 5), act=act), 30, Code.OPTION)


def test_fc_shuffled_weights_format_refused():
    # SHUFFLED4x16INT8 is a TFLite-internal weight layout with no NNAPI form.
    m = single_op_model(BuiltinOperator.FULLY_CONNECTED,
                        [("x", (3, 16), np.uint8, QuantParams(0.04, 128)),
                         ("w", RNG.integers(0, 256, (4, 16)).astype(np.uint8), QuantParams(0.02, 128))],
                        [("y", (3, 4), np.uint8, QuantParams(0.5, 128))], FullyConnectedOptions(weights_format=1))
    assert_refused(m, 30, Code.OPTION)


def test_fc_without_bias():
    result = assert_parity(fc_model((4, 6), 3, (4, 3), bias=False), api_level=27, expect_ops=["FULLY_CONNECTED"])
    main = result.converted.model.main
    assert main.operands[main.operations[0].inputs[2]].is_constant


@pytest.mark.parametrize("api", [27, 29, 30])
@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_fc_quantized_parity(api, dtype):
    m = qfc_model(dtype, (5, 9), 6, (5, 6), act=1)
    result = assert_parity(m, api_level=api, expect_ops=["FULLY_CONNECTED"])
    x_type = result.converted.model.main.operands[result.converted.model.main.operations[0].inputs[0]].type.name
    signed = dtype == np.int8 and api >= 30
    assert x_type == ("TENSOR_QUANT8_ASYMM_SIGNED" if signed else "TENSOR_QUANT8_ASYMM")


def test_fc_quantized_keep_num_dims():
    assert_parity(qfc_model(np.int8, (2, 3, 8), 5, (2, 3, 5), keep_num_dims=True), api_level=30,
                  expect_ops=["FULLY_CONNECTED", "RESHAPE"])


def test_fc_scale_restriction_below_29():
    m = qfc_model(np.uint8, (2, 4), 3, (2, 3), out_scale=5e-4)  # 0.04 * 0.02 = 8e-4 >= 5e-4
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)
    assert_parity(m, api_level=29)


def test_fc_per_channel_weights_need_api_29():
    """Per-channel weights lower as a 1x1 CONV_2D from API 29 (more in test_real_model_regressions.py)."""
    w = RNG.integers(-127, 128, (3, 4)).astype(np.int8)
    m = single_op_model(BuiltinOperator.FULLY_CONNECTED,
                        [("x", (2, 4), np.int8, QuantParams(0.05, 0)),
                         ("w", w, QuantParams([0.01, 0.02, 0.03], [0, 0, 0], 0))],
                        [("y", (2, 3), np.int8, QuantParams(0.1, 0))], FullyConnectedOptions())
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)
    assert_parity(m, api_level=30, expect_ops=["RESHAPE", "CONV_2D", "RESHAPE"])


def test_fc_int16_output_refused():
    m = single_op_model(BuiltinOperator.FULLY_CONNECTED,
                        [("x", (2, 4), np.int16, QuantParams(0.05, 0)),
                         ("w", np.ones((3, 4), np.int8), QuantParams(0.01, 0))],
                        [("y", (2, 3), np.int16, QuantParams(0.1, 0))], FullyConnectedOptions())
    assert_refused(m, 30, Code.DTYPE)


def _hybrid_fc(in_shape, units):
    w = RNG.integers(-127, 128, (units, in_shape[-1])).astype(np.int8)
    b = (RNG.standard_normal(units) * 0.1).astype(np.float32)
    m = single_op_model(BuiltinOperator.FULLY_CONNECTED,
                        [("x", in_shape, np.float32), ("w", w, QuantParams(0.01, 0)), ("b", b)],
                        [("y", (in_shape[0], units), np.float32)], FullyConnectedOptions())
    twin = single_op_model(BuiltinOperator.FULLY_CONNECTED,
                           [("x", in_shape, np.float32), ("w", (w.astype(np.float32) * np.float32(0.01))), ("b", b)],
                           [("y", (in_shape[0], units), np.float32)], FullyConnectedOptions())
    return m, twin


def test_fc_hybrid_dequantize_and_fold():
    m, twin = _hybrid_fc((3, 10), 4)
    assert_parity(twin, api_level=27)
    x = {"x": RNG.uniform(-1, 1, (3, 10)).astype(np.float32)}
    ref = Executor(nnconv.convert(twin, api_level=27, options=nnconv_options()).converted).run(x)["y"]
    at29 = nnconv.convert(m, api_level=29, options=nnconv_options()).converted
    assert [o.type.name for o in at29.model.main.operations] == ["DEQUANTIZE", "FULLY_CONNECTED"]
    np.testing.assert_allclose(Executor(at29).run(x)["y"], ref, atol=1e-6, rtol=0)
    folded = nnconv.convert(m, api_level=27,
                            options=nnconv_options(ConversionOptions(fold_dynamic_range_weights=True))).converted
    np.testing.assert_allclose(Executor(folded).run(x)["y"], ref, atol=1e-6, rtol=0)
    tfl = TfliteRunner(m)
    expected = next(iter(tfl.run({tfl.input_details()[0]["index"]: x["x"]}).values()))
    assert np.max(np.abs(expected - ref)) <= 0.02 * np.max(np.abs(ref))
    diags = assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)
    assert any("--fold-weights" in d.hint for d in diags)


def test_fc_rank1_input_is_reshaped():
    # NNAPI's FC needs a rank >= 2 input: a [K] vector becomes [1, K] first.
    assert_parity(fc_model((7,), 4, (1, 4)), api_level=27, expect_ops=["RESHAPE", "FULLY_CONNECTED"])


@pytest.mark.parametrize("per_channel", [False, True], ids=["per-tensor", "per-channel"])
def test_int8_fc_with_tflite_arithmetic_is_tflite_reference_bit_for_bit(per_channel):
    """TFLite's reference int8 FULLY_CONNECTED rounds once, (x * M + 2^(s-1)) >> s, where NNAPI's reference
    rounds twice: ~0.1% of outputs 1 LSB apart (measured: 34 of 24,576 here). The executor's TFLite
    arithmetic (`verify`'s fallback: its multipliers and, for operations lowered from a FULLY_CONNECTED, its
    single rounding) reproduces TFLite's reference kernels exactly, which is how verify tells that difference
    from a conversion error."""
    from nnconv.parity.tflite_runner import REFERENCE_KERNELS
    from nnconv.parity.tflite_arithmetic import TfliteArithmetic
    rng = np.random.default_rng(1)
    rows, n_in, n_out, xs, ys = 512, 64, 48, 0.0078, 0.0061
    w = rng.integers(-127, 128, (n_out, n_in)).astype(np.int8)
    ws = [float(s) for s in rng.uniform(0.001, 0.003, n_out)] if per_channel else [0.002]
    wq = QuantParams(ws, [0] * len(ws), 0) if per_channel else QuantParams(ws[0], 0)
    bq = QuantParams([xs * s for s in ws], [0] * len(ws), 0) if per_channel else QuantParams(xs * ws[0], 0)
    m = single_op_model(BuiltinOperator.FULLY_CONNECTED,
                        [("x", (rows, n_in), np.int8, QuantParams(xs, -3)), ("w", w, wq),
                         ("b", rng.integers(-5000, 5000, n_out).astype(np.int32), bq)],
                        [("y", (rows, n_out), np.int8, QuantParams(ys, 5))], FullyConnectedOptions())
    x = rng.integers(-128, 128, (rows, n_in)).astype(np.int8)
    runner = TfliteRunner(m, kernels=REFERENCE_KERNELS)
    want = next(iter(runner.run({runner.input_details()[0]["index"]: x}).values()))
    converted = nnconv.convert(m, api_level=30, options=nnconv_options()).converted
    nnapi = Executor(converted).run({"x": x})["y"]
    tflite = Executor(converted, replacements=TfliteArithmetic(fully_connected=frozenset({0}))).run({"x": x})["y"]
    assert np.array_equal(tflite, want)
    assert 0 < np.count_nonzero(nnapi != want) < want.size // 200 and np.abs(nnapi.astype(int) - want).max() == 1


def test_per_channel_fc_int32_accumulator_wraps_like_tflite():
    """A quantized PyTorch ShuffleNetV2's classifier (issue 26): input scale 1.5e-8, per-channel weights,
    output scale 2.4e-4. Its int32 biases (scale input_scale * weight_scale ~ 4e-12) saturate at the int32
    limits, and adding the products overflows the int32 accumulator, which wraps in TFLite's kernel (as in
    Android's): before the executor wrapped it too, it saturated, up to 178 LSB off here (66 on the model)."""
    rng = np.random.default_rng(26)
    rows, k, units, xs, ys = 8, 256, 40, 1.5e-8, 2.4e-4
    wf = rng.normal(0, 0.03, (units, k))
    ws = np.abs(wf).max(axis=1) / 127
    w = np.round(wf / ws[:, None]).astype(np.int8)
    bias_scales = xs * ws
    b = np.clip(np.round(rng.normal(0, 0.01, units) / bias_scales), -2**31, 2**31 - 1).astype(np.int32)
    m = single_op_model(BuiltinOperator.FULLY_CONNECTED,
                        [("x", (rows, k), np.int8, QuantParams(xs, -10)),
                         ("w", w, QuantParams([float(s) for s in ws], [0] * units, 0)),
                         ("b", b, QuantParams([float(s) for s in bias_scales], [0] * units, 0))],
                        [("y", (rows, units), np.int8, QuantParams(ys, 3))], FullyConnectedOptions())
    x = rng.integers(-128, 128, (rows, k)).astype(np.int8)
    exact = (x.astype(np.int64) + 10) @ w.astype(np.int64).T + b
    assert (np.abs(exact) > 2**31 - 1).any()  # the case under test: some accumulators overflow int32
    assert_parity(m, api_level=30, inputs={"x": x}, expect_ops=["RESHAPE", "CONV_2D", "RESHAPE"])
