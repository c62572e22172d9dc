"""Regressions found by converting real TensorFlow-built models (Keras applications and DeepLab-, SSD-,
transformer- and audio-style nets at small input sizes, float / float16 / dynamic-range / int8): each test
rebuilds the failing pattern with our builder and checks parity against the TFLite interpreter."""

from __future__ import annotations

import numpy as np
import pytest

from harness import QuantParams, assert_bit_exact, assert_parity, assert_refused, nnconv_options, single_op_model
from nnconv import convert
from nnconv.runtime.executor import Executor
from nnconv.lowering.diagnostics import Code
from nnconv.parity.partitioned import PartitionedParityReport, verify_model
from nnconv.parity.tflite_runner import TfliteRunner
from nnconv.parity.tolerances import FLOAT_RTOL
from nnconv.parity.twin import float_twin
from nnconv.pipeline import convert_partial
from nnconv.tflite.builder import TfliteBuilder
from nnconv.tflite.options import (AddOptions, BatchMatMulOptions, FullyConnectedOptions, ReducerOptions,
                                   ResizeBilinearOptions)
from nnconv.tflite.reader import read_model
from nnconv.tflite.schema_enums import BuiltinOperator as B
from nnconv.tflite.schema_enums import TensorType


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
    plan = convert_partial(model, 29, nnconv_options())
    # the DEQUANTIZE (#0) is folded: in no partition, made again as a constant where it is read
    assert plan.folded == [0] and [cm.tflite_ops for cm in plan.converted] == [[1], [3]]
    assert [s.name for s in plan.converted[0].outputs] == ["a"]
    assert [s.name for s in plan.converted[1].inputs] == ["r"]  # not "w": a constant of that partition
    path = tmp_path / "fp16_shared.tflite"
    path.write_bytes(model)
    report = verify_model(str(path), 29, nnconv_options())
    assert isinstance(report, PartitionedParityReport) and report.passed
    assert verify_model(str(path), 30, nnconv_options()).passed  # whole model: the DEQUANTIZE lowers once


def test_fp16_dequantize_lowers_only_where_read():
    """A partition none of whose ops reads the DEQUANTIZE of a float16 constant gets no copy of the constant
    (TFLite writes those DEQUANTIZEs first, ahead of everything they feed; the DEQUANTIZE is folded, in no
    partition)."""
    rng = np.random.default_rng(3)
    b = TfliteBuilder()
    x = b.input("x", (1, 3, 5, 2), np.float32)
    w16 = b.const("w16", rng.uniform(-1, 1, (2,)).astype(np.float16))
    w = b.tensor("w", (2,), np.float32)
    b.op(B.DEQUANTIZE, [w16], [w])
    h = b.tensor("h", (1, 3, 5, 2), np.float32)
    b.op(B.ADD, [x, x], [h], AddOptions())
    size = b.const("size", np.array([7, 9], np.int32))
    r = b.tensor("r", (1, 7, 9, 2), np.float32)
    b.op(B.RESIZE_BILINEAR, [h, size], [r], ResizeBilinearOptions(half_pixel_centers=True))
    y = b.tensor("y", (1, 7, 9, 2), np.float32)
    b.op(B.ADD, [r, w], [y], AddOptions())
    b.output(y)
    plan = convert_partial(b.finish(), 29, nnconv_options())
    assert plan.folded == [0] and [cm.tflite_ops for cm in plan.converted] == [[1], [3]]
    names = [[o.name for o in cm.model.main.operands] for cm in plan.converted]
    assert "w16" not in names[0] and "w16" in names[1]


# -- FULLY_CONNECTED with per-channel int8 weights (TensorFlow >= 2.16's default for Dense layers) ---------
def _per_channel_fc(in_shape: tuple, units: int, keep_num_dims: bool = False, act: int = 0, bias: bool = True,
                    quantized_dimension: int = 0) -> bytes:
    rng = np.random.default_rng(11)
    k = in_shape[-1]
    batch = int(np.prod(in_shape)) // k
    in_q, out_q = QuantParams(0.05, -3), QuantParams(0.3, 7)
    scales = rng.uniform(0.005, 0.03, units if quantized_dimension == 0 else k).astype(np.float32)
    w_q = QuantParams([float(s) for s in scales], [0] * scales.size, quantized_dimension=quantized_dimension)
    w = rng.integers(-127, 128, (units, k)).astype(np.int8)
    out_shape = tuple(in_shape[:-1]) + (units,) if keep_num_dims else (batch, units)
    inputs = [("x", in_shape, np.int8, in_q), ("w", w, w_q)]
    if bias:
        b_scales = [float(np.float32(0.05) * s) for s in scales] if quantized_dimension == 0 else [0.05 * 0.01]
        inputs.append(("b", rng.integers(-3000, 3000, units).astype(np.int32),
                       QuantParams(b_scales if quantized_dimension == 0 else b_scales[0],
                                   [0] * units if quantized_dimension == 0 else 0)))
    else:
        inputs.append(None)
    return single_op_model(B.FULLY_CONNECTED, inputs, [("y", out_shape, np.int8, out_q)],
                           FullyConnectedOptions(fused_activation_function=act, keep_num_dims=keep_num_dims))


@pytest.mark.parametrize("api_level", [29, 30])
@pytest.mark.parametrize("in_shape,keep,act,bias", [((3, 7), False, 0, True), ((2, 3, 7), True, 1, True),
                                                    ((2, 3, 7), False, 3, False), ((7,), False, 0, True)])
def test_per_channel_int8_fc_as_1x1_conv(api_level, in_shape, keep, act, bias):
    """The int8 Keras applications' classifiers, the transformer's Dense layers: refused before ("takes
    per-tensor quantized weights only"), splitting every such model into partitions. Lowered as a 1x1
    CONV_2D with per-channel weights; the arithmetic is TFLite's per-channel FC, bit for bit."""
    model = _per_channel_fc(in_shape, 5, keep_num_dims=keep, act=act, bias=bias)
    result = assert_parity(model, api_level=api_level)
    ops = [op.type.name for op in result.converted.model.main.operations]
    assert ops[-3:] == ["RESHAPE", "CONV_2D", "RESHAPE"]
    rng = np.random.default_rng(3)
    assert_bit_exact(model, api_level, {"x": rng.integers(-128, 128, in_shape).astype(np.int8)})


def test_per_channel_int8_fc_needs_api_29():
    assert_refused(_per_channel_fc((3, 7), 5), 28, Code.API_LEVEL, min_api_level=29)


def test_per_channel_fc_weights_along_the_inputs_refused():
    assert_refused(_per_channel_fc((3, 7), 5, quantized_dimension=1), 30, Code.QUANTIZATION)


# -- partition-wise verify of dynamic-range models ------------------------------------------------------------
def _hybrid_fcs_around_a_resize() -> bytes:
    """Dynamic-range FULLY_CONNECTED layers (float activations, int8 weights) on both sides of an op refused at
    API 29, like the transformer's Dense layers around its attention BATCH_MATMULs."""
    rng = np.random.default_rng(5)
    b = TfliteBuilder()
    x = b.input("x", (1, 3, 5, 4), np.float32)
    w1 = b.const("w1", rng.integers(-127, 128, (6, 4)).astype(np.int8), quant=QuantParams(0.01, 0))
    h = b.tensor("h", (1, 3, 5, 6), np.float32)
    b.op(B.FULLY_CONNECTED, [x, w1, -1], [h], FullyConnectedOptions(keep_num_dims=True))
    size = b.const("size", np.array([4, 7], np.int32))
    r = b.tensor("r", (1, 4, 7, 6), np.float32)
    b.op(B.RESIZE_BILINEAR, [h, size], [r], ResizeBilinearOptions(half_pixel_centers=True))
    w2 = b.const("w2", rng.integers(-127, 128, (2, 6)).astype(np.int8), quant=QuantParams(0.02, 0))
    y = b.tensor("y", (1, 4, 7, 2), np.float32)
    b.op(B.FULLY_CONNECTED, [r, w2, -1], [y], FullyConnectedOptions(keep_num_dims=True))
    b.output(y)
    return b.finish()


def test_partitioned_verify_of_a_dynamic_range_model(tmp_path):
    """transformer_dynamic at API 29/30 failed partition-wise verify with every hybrid FC "out of tolerance
    on its own" at 0.5% of the range: TFLite's hybrid kernels quantize the activations on the fly. The
    partitions are now checked against TFLite on the float twin, with the plain float tolerance."""
    path = tmp_path / "hybrid_split.tflite"
    path.write_bytes(_hybrid_fcs_around_a_resize())
    report = verify_model(str(path), 29, nnconv_options())
    assert isinstance(report, PartitionedParityReport) and [p.ops for p in report.partitions] == [[0], [2]]
    assert report.passed, [(o.name, o.max_rel) for o in report.outputs]
    assert all(o.tolerance.rtol == FLOAT_RTOL for o in report.outputs)


def test_whole_model_verify_of_a_dynamic_range_model_uses_the_float_twin(tmp_path):
    """mobilenet_v1 / v3-small dynamic-range models failed verify at API 29/30 (TFLite's hybrid kernels 3e-2 and
    7.5e-2 of the range away from the exact float result nnconv computes, against a 1e-2 tolerance)."""
    path = tmp_path / "hybrid.tflite"
    path.write_bytes(_hybrid_fcs_around_a_resize())
    report = verify_model(str(path), 30)
    assert not isinstance(report, PartitionedParityReport) and report.passed
    (out,) = report.outputs
    assert out.tolerance.rtol == FLOAT_RTOL and out.max_rel < 1e-5
    assert "dequantized" in out.detail and "hybrid kernels differ" in out.detail


def test_float_twin_is_the_model_with_float_weights():
    """The twin runs like the same model built with the dequantized weights as float32 constants, keeps every
    tensor index, and leaves a model without hybrid weights alone."""
    model = _hybrid_fcs_around_a_resize()
    source = read_model(model)
    twin = read_model(float_twin(source))
    assert [t.name for t in twin.main.tensors] == [t.name for t in source.main.tensors]
    w1 = next(t for t in twin.main.tensors if t.name == "w1")
    assert w1.type == TensorType.FLOAT32 and not w1.quantization.scale
    ref = next(t for t in source.main.tensors if t.name == "w1")
    expected = ref.data.reshape(ref.shape).astype(np.float32) * np.float32(0.01)
    np.testing.assert_array_equal(w1.data.reshape(w1.shape), expected)
    x = np.random.default_rng(2).uniform(-1, 1, (1, 3, 5, 4)).astype(np.float32)
    runner = TfliteRunner(float_twin(source))
    (y,) = runner.run({runner.input_details()[0]["index"]: x}).values()
    assert y.shape == (1, 4, 7, 2) and np.isfinite(y).all()
    assert float_twin(read_model(_fp16_weight_shared_across_partitions())) is None


# -- BATCH_MATMUL of two computed tensors below API 33 (attention) ------------------------------------------
def _bmm(x_shape, y_shape, out_shape, adj_x=False, adj_y=False, dtype=np.float32, q=(None, None, None)) -> bytes:
    def spec(name, shape, qp):
        return (name, shape, dtype) + ((qp,) if qp else ())
    return single_op_model(B.BATCH_MATMUL, [spec("x", x_shape, q[0]), spec("y", y_shape, q[1])],
                           [spec("out", out_shape, q[2])], BatchMatMulOptions(adj_x=adj_x, adj_y=adj_y))


BMM_CASES = [  # (x, y, out, adj_x, adj_y, lowest level for float32)
    pytest.param((3, 5), (5, 4), (3, 4), False, False, 28, id="rank2"),
    pytest.param((3, 5), (4, 5), (3, 4), False, True, 27, id="rank2-adj-y"),
    pytest.param((2, 3, 5), (2, 5, 7), (2, 3, 7), False, False, 29, id="rank3"),
    pytest.param((2, 3, 5, 4), (2, 3, 6, 5), (2, 3, 4, 6), True, True, 29, id="rank4-adj-both"),
    pytest.param((1, 4, 6, 8), (1, 4, 7, 8), (1, 4, 6, 7), False, True, 29, id="attention-qk"),
    pytest.param((2, 5, 3), (2, 5, 6), (2, 3, 6), True, False, 29, id="adj-x"),
]


@pytest.mark.parametrize("x_shape,y_shape,out_shape,adj_x,adj_y,level", BMM_CASES)
def test_batch_matmul_of_computed_tensors_as_fc_per_batch_float(x_shape, y_shape, out_shape, adj_x, adj_y, level):
    """The transformer's attention products (Q.K^T, P.V: both inputs computed) were refused below API 33,
    splitting the encoder into 3 partitions at API 29-32. Now one FULLY_CONNECTED per batch element."""
    m = _bmm(x_shape, y_shape, out_shape, adj_x, adj_y)
    for api in (level, 30):
        ops = [op.type.name for op in assert_parity(m, api_level=api).converted.model.main.operations]
        assert "BATCH_MATMUL" not in ops and ops.count("FULLY_CONNECTED") == int(np.prod(x_shape[:-2]))
    if level > 27:
        assert_refused(m, level - 1, Code.API_LEVEL, min_api_level=level)
    assert [op.type.name for op in assert_parity(m, api_level=33).converted.model.main.operations] == \
        ["BATCH_MATMUL"]


@pytest.mark.parametrize("x_shape,y_shape,out_shape,adj_x,adj_y,level", BMM_CASES)
def test_batch_matmul_of_computed_tensors_as_fc_per_batch_int8(x_shape, y_shape, out_shape, adj_x, adj_y, level):
    """int8: bit-exact with TFLite's kernel, y's zero point included, at API 30 (signed) and 29 (uint8 + 128)."""
    q = (QuantParams(0.05, -3), QuantParams(0.04, 9), QuantParams(0.3, 4))
    m = _bmm(x_shape, y_shape, out_shape, adj_x, adj_y, dtype=np.int8, q=q)
    rng = np.random.default_rng(4)
    feed = {"x": rng.integers(-128, 128, x_shape).astype(np.int8),
            "y": rng.integers(-128, 128, y_shape).astype(np.int8)}
    for api in (29, 30):
        assert_parity(m, api_level=api)
        assert_bit_exact(m, api, feed)
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)


def test_batch_matmul_split_form_needs_equal_batch_and_inner_dims():
    assert_refused(_bmm((2, 3, 5), (1, 5, 4), (2, 3, 4)), 30, Code.API_LEVEL, min_api_level=None)
    assert_refused(_bmm((3, 5), (3, 4), (3, 4)), 30, Code.API_LEVEL)  # K 5 vs 3
    assert_refused(_bmm((3, 5), (5, 4), (3, 4), dtype=np.int32), 30, Code.API_LEVEL, min_api_level=33)


# -- int8 verify against TFLite's optimized kernels -------------------------------------------------------------
def test_quantized_verify_failure_names_the_reference_kernels_result(tmp_path, monkeypatch):
    """resnet50_int8 / pose_int8: nnconv is bit-exact with TFLite's reference kernels op by op and on the whole
    model, but TFLite's optimized int8 convolutions round ~0.05% of values one step differently and deep
    random-weight nets grow that into tens of LSB. Such an output passes when it is within tolerance of the
    reference kernels (which the NNAPI reference CPU follows), and says so; otherwise it still fails."""
    import nnconv.parity.partitioned as partitioned
    import nnconv.parity.settle as settle
    path = tmp_path / "fc.tflite"
    path.write_bytes(_per_channel_fc((3, 7), 5))
    real = partitioned.run_parity

    def builtin_off_by_two(source, converted, feed, kernels="builtin", runner=None, **options):
        report = real(source, converted, feed, kernels=kernels, **options)
        if kernels == "builtin":
            for o in report.outputs:
                o.passed, o.max_lsb = False, 2
        return report

    monkeypatch.setattr(partitioned, "run_parity", builtin_off_by_two)
    monkeypatch.setattr(settle, "run_parity", builtin_off_by_two)
    report = verify_model(str(path), 30, nnconv_options())
    (out,) = report.outputs
    assert report.passed and out.detail.startswith("within tolerance of TFLite's reference kernels (max 0 LSB)")
    assert "differ by up to 2 LSB" in out.detail
    assert verify_model(str(path), 30, nnconv_options(), kernels="reference").passed  # no second run, nothing added

    def both_off_by_two(source, converted, feed, kernels="builtin", runner=None, **options):
        report = real(source, converted, feed, kernels=kernels, **options)
        for o in report.outputs:
            o.passed, o.max_lsb = False, 2
        return report

    monkeypatch.setattr(partitioned, "run_parity", both_off_by_two)
    monkeypatch.setattr(settle, "run_parity", both_off_by_two)
    report = verify_model(str(path), 30, nnconv_options())
    assert not report.passed and report.outputs[0].detail.startswith("also 2 LSB from TFLite's reference kernels")


# -- int8 MEAN with the output quantized differently (Keras GlobalAveragePooling2D) ----------------------------
def _int8_mean(shape: tuple, axes: list, keep: bool, s_in: float, z_in: int, s_out: float, z_out: int) -> bytes:
    out_shape = tuple(1 if k in axes else d for k, d in enumerate(shape)) if keep else \
        tuple(d for k, d in enumerate(shape) if k not in axes)
    return single_op_model(B.MEAN, [("x", shape, np.int8, QuantParams(s_in, z_in)), ("axis", np.array(axes, np.int32))],
                           [("y", out_shape, np.int8, QuantParams(s_out, z_out))], ReducerOptions(keep_dims=keep))


MEAN_CASES = [  # s_in / s_out below 1 (double rounding), above 1, and a long axis; ties: see _int8_mean_rounding
    pytest.param((2, 3, 5, 16), [1, 2], 0.05, 7, 0.03, -3, id="hw-ratio-1.7"),
    pytest.param((1, 7, 6, 9), [1, 2], 0.02, -5, 0.09, 4, id="hw-ratio-0.2"),
    # float32(k) = 0.5 < k: products just past ties collapse onto them in float32
    pytest.param((3, 40, 6), [1], 0.1, 0, 0.01, 11, id="axis1-ratio-10"),
    pytest.param((2, 4, 64), [1], 0.02, 5, 0.06, -9, id="axis1-ratio-1/3"),  # float32(k) > k
    # float32(k) = 0.5 > k: products just short of ties collapse onto them in float32
    pytest.param((3, 10, 32), [1], 0.25, -4, 0.05, 6, id="axis1-ratio-5-just-below"),
    # equal scales over 4 values: acc / 4 in two halvings, exact ties of both signs at every odd step
    pytest.param((1, 2, 2, 64), [1, 2], 0.05, 3, 0.05, -7, id="hw-ties"),
]


@pytest.mark.parametrize("api_level", [29, 30])
@pytest.mark.parametrize("shape,axes,s_in,z_in,s_out,z_out", MEAN_CASES)
def test_int8_mean_is_bit_exact(api_level, shape, axes, s_in, z_in, s_out, z_out):
    """mobilenet_v2/v3 int8 (Keras global average pooling): the float mean rounded once differed from TFLite's
    integer mean (which rounds twice) by 1 LSB on ~5% of the pooled features; the lowering now reproduces
    the integer arithmetic: bit-exact with TFLite's kernels (keep_dims false: both kernel sets)."""
    m = _int8_mean(shape, axes, False, s_in, z_in, s_out, z_out)
    x = np.random.default_rng(8).integers(-128, 128, shape).astype(np.int8)
    assert_parity(m, api_level=api_level)
    assert_bit_exact(m, api_level, {"x": x})


@pytest.mark.parametrize("shape,axes,s_in,z_in,s_out,z_out", MEAN_CASES[:2])
def test_int8_mean_keep_dims_matches_the_reference_kernels(shape, axes, s_in, z_in, s_out, z_out):
    """A 4-D H,W mean with keep_dims (squeeze-excite blocks): bit-exact with TFLite's reference kernels, which
    the NNAPI reference CPU follows; TFLite's optimized kernel has its own rounding (within 1 LSB of it)."""
    m = _int8_mean(shape, axes, True, s_in, z_in, s_out, z_out)
    x = np.random.default_rng(9).integers(-128, 128, shape).astype(np.int8)
    ours = Executor(convert(m, api_level=30, options=nnconv_options()).converted).run({"x": x})["y"]
    runner = TfliteRunner(m, kernels="reference")
    (theirs,) = runner.run({runner.input_details()[0]["index"]: x}).values()
    np.testing.assert_array_equal(ours, theirs)
    assert_parity(m, api_level=30)
