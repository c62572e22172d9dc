"""Weight-only int4 (AI Edge Quantizer's `weight_only_wi4_afp32`): constant INT4 weights behind DEQUANTIZE,
read by float FULLY_CONNECTED / CONV_2D. From API 29 an 8-bit symmetric constant + DEQUANTIZE, else (API 27/28,
--fold-weights) a float32 constant; both exact, compared with TFLite's own int4 DEQUANTIZE."""

from __future__ import annotations

import numpy as np
import pytest

import nnconv
from harness import QuantParams, TfliteBuilder, assert_parity, assert_refused, nnconv_options, single_op_model
from nnconv.errors import ModelFormatError
from nnconv.lowering.diagnostics import Code
from nnconv.parity.tflite_runner import TfliteRunner
from nnconv.runtime.executor import Executor
from nnconv.parity.partitioned import PartitionedParityReport, verify_model
from nnconv.pipeline import convert_partial
from nnconv.rewrite.state import ConversionOptions
from nnconv.tflite.int4 import pack_int4, unpack_int4
from nnconv.tflite.ir import DimensionMetadata, Sparsity
from nnconv.tflite.options import (AddOptions, Conv2DOptions, DepthwiseConv2DOptions, FullyConnectedOptions,
                                   TransposeConvOptions)
from nnconv.tflite.reader import read_model
from nnconv.tflite.schema_enums import BuiltinOperator as B, Padding, TensorType

FOLD = ConversionOptions(fold_dynamic_range_weights=True)


def test_packing_is_tflites():
    # TFLite's UnpackDenseInt4IntoInt8: low nibble first, each sign-extended; {0x12, 0x34} -> {2, 1, 4, 3}
    assert unpack_int4(np.frombuffer(bytes([0x12, 0x34]), np.uint8), (4,)).tolist() == [2, 1, 4, 3]
    assert unpack_int4(np.frombuffer(bytes([0x8F, 0x07]), np.uint8), (3,)).tolist() == [-1, -8, 7]
    assert pack_int4(np.array([-1, -8, 7])) == bytes([0x8F, 0x07])  # odd count: the last high nibble is 0
    values = np.random.default_rng(0).integers(-8, 8, (3, 5, 7))
    assert np.array_equal(unpack_int4(np.frombuffer(pack_int4(values), np.uint8), values.shape), values)
    with pytest.raises(ValueError):
        pack_int4(np.array([8]))


def int4_fc_model(per_channel: bool, units: int = 5, k: int = 7) -> bytes:
    """y = FULLY_CONNECTED(x, DEQUANTIZE(int4 weights), float bias), as the quantizer writes it."""
    rng = np.random.default_rng(3)
    w = rng.integers(-8, 8, (units, k))
    q = (QuantParams(list(rng.uniform(0.01, 0.2, units)), 0, 0) if per_channel else QuantParams(0.07))
    b = TfliteBuilder()
    x = b.input("x", (3, k), np.float32)
    wq = b.const_int4("w_int4", w, q)
    wf = b.tensor("w", (units, k), np.float32)
    b.op(B.DEQUANTIZE, [wq], [wf])
    bias = b.const("bias", rng.standard_normal(units).astype(np.float32))
    y = b.tensor("y", (3, units), np.float32)
    b.op(B.FULLY_CONNECTED, [x, wf, bias], [y], FullyConnectedOptions())
    b.output(y)
    return b.finish()


def int4_conv_model() -> bytes:
    """CONV_2D over DEQUANTIZE(per-channel int4 filter [4, 3, 3, 5]: 180 values) with an odd-sized kernel."""
    rng = np.random.default_rng(4)
    w = rng.integers(-8, 8, (4, 3, 3, 5))
    b = TfliteBuilder()
    x = b.input("x", (1, 6, 7, 5), np.float32)
    wq = b.const_int4("f_int4", w, QuantParams(list(rng.uniform(0.01, 0.2, 4)), 0, 0))
    wf = b.tensor("f", w.shape, np.float32)
    b.op(B.DEQUANTIZE, [wq], [wf])
    bias = b.const("bias", rng.standard_normal(4).astype(np.float32))
    y = b.tensor("y", (1, 6, 7, 4), np.float32)
    b.op(B.CONV_2D, [x, wf, bias], [y], Conv2DOptions(padding=Padding.SAME, stride_w=1, stride_h=1))
    b.output(y)
    return b.finish()


@pytest.mark.parametrize("per_channel", [False, True], ids=["per-tensor", "per-channel"])
def test_int4_fully_connected_weights(per_channel):
    m = int4_fc_model(per_channel)
    for level in (29, 30):
        result = assert_parity(m, api_level=level, expect_ops=["DEQUANTIZE", "FULLY_CONNECTED"])
        weights = result.converted.model.main.operands[result.converted.model.main.operations[0].inputs[0]]
        assert weights.type.name == ("TENSOR_QUANT8_SYMM_PER_CHANNEL" if per_channel else "TENSOR_QUANT8_SYMM")
    assert_parity(m, api_level=27, expect_ops=["FULLY_CONNECTED"])  # no symmetric 8-bit types: float32 constant
    assert_parity(m, api_level=30, options=FOLD, expect_ops=["FULLY_CONNECTED"])


def test_int4_conv_weights():
    m = int4_conv_model()
    assert_parity(m, api_level=29, expect_ops=["DEQUANTIZE", "CONV_2D"])
    assert_parity(m, api_level=28, expect_ops=["CONV_2D"])
    assert_parity(m, api_level=30, options=FOLD, expect_ops=["CONV_2D"])


def test_int4_with_zero_point_folds():
    # NNAPI's symmetric types have zero point 0; an asymmetric int4 tensor is folded into float32 instead
    b = TfliteBuilder()
    w = np.random.default_rng(5).integers(-8, 8, (2, 6))
    x = b.input("x", (2, 6), np.float32)
    wq = b.const_int4("w_int4", w, QuantParams(0.1, 3))
    wf = b.tensor("w", (2, 6), np.float32)
    b.op(B.DEQUANTIZE, [wq], [wf])
    y = b.tensor("y", (2, 2), np.float32)
    b.op(B.FULLY_CONNECTED, [x, wf, -1], [y], FullyConnectedOptions())
    b.output(y)
    assert_parity(b.finish(), api_level=30, expect_ops=["FULLY_CONNECTED"])


def test_int4_activation_refused():
    b = TfliteBuilder()
    x = b.input("x", (2, 6), TensorType.INT4, QuantParams(0.1))
    y = b.tensor("y", (2, 6), np.float32)
    b.op(B.DEQUANTIZE, [x], [y])
    b.output(y)
    diags = assert_refused(b.finish(), 30, Code.DTYPE)
    assert "int4 computed at run time" in diags[0].message


def test_short_int4_buffer_is_a_format_error():
    b = TfliteBuilder()
    x = b.input("x", (1, 5), np.float32)
    wq = b.copied_tensor("w_int4", (2, 5), TensorType.INT4, pack_int4(np.zeros(8)), QuantParams(0.1))  # 4 of 5 bytes
    wf = b.tensor("w", (2, 5), np.float32)
    b.op(B.DEQUANTIZE, [wq], [wf])
    y = b.tensor("y", (1, 2), np.float32)
    b.op(B.FULLY_CONNECTED, [x, wf, -1], [y], FullyConnectedOptions())
    b.output(y)
    with pytest.raises(ModelFormatError, match="5 bytes packed"):
        read_model(b.finish())


def test_int4_weights_shared_across_partitions(tmp_path):
    """Two FULLY_CONNECTEDs read one DEQUANTIZE(int4) across a SEGMENT_SUM nnconv does not lower: the
    DEQUANTIZE of a constant is folded (in no partition), each partition makes its own 8-bit constant +
    DEQUANTIZE from it, and TFLite and the partitioned model agree."""
    rng = np.random.default_rng(6)
    b = TfliteBuilder()
    x = b.input("x", (2, 6), np.float32)
    wq = b.const_int4("w_int4", rng.integers(-8, 8, (6, 6)), QuantParams(list(rng.uniform(0.05, 0.2, 6)), 0, 0))
    wf = b.tensor("w", (6, 6), np.float32)
    b.op(B.DEQUANTIZE, [wq], [wf])
    h = b.tensor("h", (2, 6), np.float32)
    b.op(B.FULLY_CONNECTED, [x, wf, -1], [h], FullyConnectedOptions())
    s = b.tensor("s", (2, 6), np.float32)
    b.op(B.SEGMENT_SUM, [h, b.const("ids", np.array([0, 1], np.int32))], [s])
    y = b.tensor("y", (2, 6), np.float32)
    b.op(B.FULLY_CONNECTED, [s, wf, -1], [y], FullyConnectedOptions())
    b.output(y)
    model = b.finish()
    plan = convert_partial(model, 30, nnconv_options())
    assert [cm.tflite_ops for cm in plan.converted] == [[1], [3]]
    assert [[op.type.name for op in cm.model.main.operations] for cm in plan.converted] == \
        [["DEQUANTIZE", "FULLY_CONNECTED"]] * 2
    path = tmp_path / "int4_shared.tflite"
    path.write_bytes(model)
    report = verify_model(str(path), 30, nnconv_options())
    assert isinstance(report, PartitionedParityReport) and report.passed


# -- int4 weights read directly (AI Edge Quantizer's int4 recipes with int8 or float activations) -------------
def fc_with_int4(activations: str, per_channel: bool) -> bytes:
    """FULLY_CONNECTED reading constant int4 weights itself: `activations` "int8" (quantized, int32 bias),
    "float" (hybrid), or "weight-only" (the same float op behind DEQUANTIZE: what NNAPI computes for hybrid)."""
    rng = np.random.default_rng(7)
    q = QuantParams([float(s) for s in rng.uniform(0.05, 0.1, 3)], [0] * 3, 0) if per_channel else QuantParams(0.07)
    w = rng.integers(-8, 8, (3, 6))
    b = TfliteBuilder()
    if activations == "int8":
        x = b.input("x", (2, 6), np.int8, QuantParams(0.05, 2))
        scales = q.scale if per_channel else [q.scale] * 3
        bias = b.const("b", rng.integers(-100, 100, 3).astype(np.int32),
                       quant=QuantParams([float(np.float32(0.05) * np.float32(s)) for s in scales], [0] * 3))
        y = b.tensor("y", (2, 3), np.int8, QuantParams(0.2, -1))
    else:
        x = b.input("x", (2, 6), np.float32)
        bias = b.const("b", rng.standard_normal(3).astype(np.float32))
        y = b.tensor("y", (2, 3), np.float32)
    wq = b.const_int4("w_int4", w, q)
    if activations == "weight-only":
        wf = b.tensor("w", (3, 6), np.float32)
        b.op(B.DEQUANTIZE, [wq], [wf])
        wq = wf
    b.op(B.FULLY_CONNECTED, [x, wq, bias], [y], FullyConnectedOptions())
    b.output(y)
    return b.finish()


@pytest.mark.parametrize("per_channel,levels", [(False, (27, 30)), (True, (29, 30))],
                         ids=["per-tensor", "per-channel"])
def test_int8_fully_connected_with_int4_weights(per_channel, levels):
    # int4 values are int8 values: TFLite's kernel unpacks them, NNAPI reads them as 8-bit weights
    m = fc_with_int4("int8", per_channel)
    for level in levels:
        assert_parity(m, api_level=level)


CONV_CASES = [
    pytest.param(B.CONV_2D, (4, 3, 3, 3), 0, (1, 6, 7, 4),
                 Conv2DOptions(padding=Padding.SAME, stride_w=1, stride_h=1, fused_activation_function=1), id="conv"),
    pytest.param(B.DEPTHWISE_CONV_2D, (1, 3, 3, 6), 3, (1, 6, 7, 6),
                 DepthwiseConv2DOptions(padding=Padding.SAME, stride_w=1, stride_h=1, depth_multiplier=2),
                 id="depthwise"),
]


@pytest.mark.parametrize("op,filter_shape,axis,out_shape,options", CONV_CASES)
def test_int8_convolution_with_int4_filter(op, filter_shape, axis, out_shape, options):
    rng = np.random.default_rng(8)
    channels = filter_shape[axis]
    scales = [float(s) for s in rng.uniform(0.01, 0.03, channels)]
    b = TfliteBuilder()
    x = b.input("x", (1, 6, 7, 3), np.int8, QuantParams(0.05, -3))
    w = b.const_int4("f_int4", rng.integers(-8, 8, filter_shape), QuantParams(scales, [0] * channels, axis))
    bias = b.const("b", rng.integers(-300, 300, channels).astype(np.int32),
                   quant=QuantParams([float(np.float32(0.05) * np.float32(s)) for s in scales], [0] * channels))
    y = b.tensor("y", out_shape, np.int8, QuantParams(0.1, 5))
    b.op(op, [x, w, bias], [y], options)
    b.output(y)
    m = b.finish()
    for level in (29, 30):
        assert_parity(m, api_level=level, expect_ops=[op.name])


@pytest.mark.parametrize("per_channel", [False, True], ids=["per-tensor", "per-channel"])
def test_hybrid_fully_connected_with_int4_weights(per_channel, tmp_path):
    m = fc_with_int4("float", per_channel)
    x = {"x": np.random.default_rng(2).uniform(-1, 1, (2, 6)).astype(np.float32)}
    at29 = nnconv.convert(m, api_level=29, options=nnconv_options()).converted
    assert [o.type.name for o in at29.model.main.operations] == ["DEQUANTIZE", "FULLY_CONNECTED"]
    folded = nnconv.convert(m, api_level=27, options=nnconv_options(FOLD)).converted
    assert [o.type.name for o in folded.model.main.operations] == ["FULLY_CONNECTED"]
    # What NNAPI computes is the float op on the dequantized weights: TFLite's weight-only form of it
    weight_only = TfliteRunner(fc_with_int4("weight-only", per_channel))
    expected = next(iter(weight_only.run({weight_only.input_details()[0]["index"]: x["x"]}).values()))
    for converted in (at29, folded):
        np.testing.assert_allclose(Executor(converted).run(x)["y"], expected, rtol=1e-5, atol=1e-6)
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)
    path = tmp_path / "hybrid_int4.tflite"
    path.write_bytes(m)
    # against the float twin, int4 unpacked
    assert nnconv.verify(str(path), api_level=29, conversion=nnconv_options()).passed


def test_transpose_conv_int4_filter_refused():
    # TFLite's TRANSPOSE_CONV fails to prepare with int4 weights ("weights->type != kTfLiteInt8")
    rng = np.random.default_rng(11)
    b = TfliteBuilder()
    x = b.input("x", (1, 4, 5, 3), np.int8, QuantParams(0.05, -3))
    w = b.const_int4("f_int4", rng.integers(-8, 8, (4, 3, 3, 3)), QuantParams([0.02, 0.01, 0.03, 0.02], [0] * 4, 0))
    y = b.tensor("y", (1, 8, 10, 4), np.int8, QuantParams(0.1, 5))
    b.op(B.TRANSPOSE_CONV, [b.const("shape", np.array([1, 8, 10, 4], np.int32)), w, x, -1], [y],
         TransposeConvOptions(padding=Padding.SAME, stride_w=2, stride_h=2))
    b.output(y)
    diags = assert_refused(b.finish(), 30, Code.DTYPE)
    assert any("TFLite's TRANSPOSE_CONV takes int8 filters only" in d.message for d in diags)


def finish_fc(b: TfliteBuilder, x: int, w: int, w_shape: tuple, weight_only: bool) -> bytes:
    """The model y = FULLY_CONNECTED(x, w) with `w` read through a DEQUANTIZE (`weight_only`) or directly."""
    if weight_only:
        wf = b.tensor("w", w_shape, np.float32)
        b.op(B.DEQUANTIZE, [w], [wf])
        w = wf
    y = b.tensor("y", (2, w_shape[0]), np.float32)
    b.op(B.FULLY_CONNECTED, [x, w, -1], [y], FullyConnectedOptions())
    b.output(y)
    return b.finish()


@pytest.mark.parametrize("weight_only", [True, False], ids=["behind-dequantize", "read-by-fc"])
def test_sparse_int4_refused(weight_only):
    # nnconv unpacks dense int4 only; a sparse one is refused by the check, never half-converted
    b = TfliteBuilder()
    x = b.input("x", (2, 4), np.float32)
    sp = Sparsity(traversal_order=(0, 1), block_map=(),
                  dim_metadata=(DimensionMetadata(0, 3), DimensionMetadata(1, 0, (0, 1, 2, 3), (0, 1, 2))))
    w = b.const("w_int4", np.array([1, 2, 3], np.int8), quant=QuantParams(0.1), shape=(3, 4), sparsity=sp)
    b.tensors[w].type = TensorType.INT4  # its 3 stored values as 2 packed bytes would do as well: never read
    diags = assert_refused(finish_fc(b, x, w, (3, 4), weight_only), 30, Code.QUANTIZATION)
    assert any("sparse int4" in d.message for d in diags)


def blockwise_fc(activation: int = 0, zero_points: int = -1, block: int = 32, x_dtype=np.float32,
                 scale_shape: tuple | None = None, weight_only: bool = False) -> bytes:
    """y = FULLY_CONNECTED(x [2, 64], blockwise int4 weights [5, 64] with float16 scales [5, 64 / block]), as
    AI Edge Quantizer's dynamic_wi4b32 recipe writes it (zero points -1: symmetric)."""
    rng = np.random.default_rng(13)
    b = TfliteBuilder()
    x = b.input("x", (2, 64), x_dtype, QuantParams(0.05, 0) if x_dtype == np.int8 else None)
    scales = b.const("w_scales", rng.uniform(0.01, 0.1, scale_shape or (5, 64 // block)).astype(np.float16))
    w = b.const_int4("w_int4", rng.integers(-8, 8, (5, 64)), QuantParams([], [], 0, blockwise=(scales, zero_points,
                                                                                              block)))
    if weight_only:
        wf = b.tensor("w", (5, 64), np.float32)
        b.op(B.DEQUANTIZE, [w], [wf])
        w = wf
    bias = b.const("bias", rng.standard_normal(5).astype(np.float32))
    y = b.tensor("y", (2, 5), np.float32)
    b.op(B.FULLY_CONNECTED, [x, w, bias], [y], FullyConnectedOptions(fused_activation_function=activation))
    b.output(y)
    return b.finish()


def test_blockwise_int4_fully_connected(tmp_path):
    m = blockwise_fc()
    q = read_model(m).subgraphs[0].tensors[2].quantization
    assert q.details == 2 and q.blockwise == (1, -1, 32) and not q.scale
    x = {"x": np.random.default_rng(3).uniform(-1, 1, (2, 64)).astype(np.float32)}
    # what NNAPI computes: the float FC on q * scale[n, i // 32], here written out as float32 weights for TFLite
    rng = np.random.default_rng(13)
    scales = rng.uniform(0.01, 0.1, (5, 2)).astype(np.float16).astype(np.float32)
    w = rng.integers(-8, 8, (5, 64)) * np.repeat(scales, 32, axis=1)
    plain = single_op_model(B.FULLY_CONNECTED, [("x", (2, 64), np.float32), ("w", w.astype(np.float32)),
                                                ("bias", rng.standard_normal(5).astype(np.float32))],
                            [("y", (2, 5), np.float32)], FullyConnectedOptions())
    runner = TfliteRunner(plain)
    expected = next(iter(runner.run({runner.input_details()[0]["index"]: x["x"]}).values()))
    for level in (27, 29, 30):  # a float32 constant at every level: NNAPI has no blockwise operand
        converted = nnconv.convert(m, api_level=level, options=nnconv_options()).converted
        assert [o.type.name for o in converted.model.main.operations] == ["FULLY_CONNECTED"]
        np.testing.assert_allclose(Executor(converted).run(x)["y"], expected, rtol=1e-5, atol=1e-6)
    path = tmp_path / "blockwise.tflite"
    path.write_bytes(m)
    # TFLite's own blockwise kernel runs it too
    assert nnconv.verify(str(path), api_level=30, conversion=nnconv_options()).passed


@pytest.mark.parametrize("kwargs,fragment", [
    (dict(weight_only=True), "BlockwiseQuantization"),  # TFLite reads blockwise weights in FC only
    (dict(activation=1), "TFLite's blockwise kernel skips it"),
    (dict(zero_points=0), "zero points tensor"),
    (dict(block=24, scale_shape=(5, 2)), "block size 24"),
    (dict(scale_shape=(5, 3)), "float scales tensor [5, 2]"),
    (dict(x_dtype=np.int8), "float inputs only"),
])
def test_blockwise_int4_refused(kwargs, fragment):
    diags = assert_refused(blockwise_fc(**kwargs), 30, Code.QUANTIZATION)
    assert any(fragment in d.message for d in diags), [d.message for d in diags]
    assert all("per channel" in d.hint for d in diags if d.code is Code.QUANTIZATION)


def test_single_int4_value_is_not_folded_as_its_byte():
    # one int4 value takes one byte, so its buffer has as many entries as the tensor: folding must not read
    # the byte 0x0F as 15 (it is -1); CAST's fold would otherwise write that into its float output
    b = TfliteBuilder()
    x = b.input("x", (1,), np.float32)
    c = b.const_int4("c", np.array([-1]))
    r = b.tensor("r", (1,), np.float32)
    b.op(B.CAST, [c], [r])
    y = b.tensor("y", (1,), np.float32)
    b.op(B.ADD, [x, r], [y], AddOptions())
    b.output(y)
    assert nnconv.prepare(b.finish(), 30, nnconv_options()).state.folded.get((0, r)) is None
