"""Ops whose NNAPI reference arithmetic rounds differently from TFLite's int8 kernels, found on AI Edge
Quantizer models (issue 26): quantized RESIZE_BILINEAR (NNAPI: float32 weights, rounded float sum; TFLite:
Q10 integer weights), QUANTIZE between quantized types (nnconv: NNAPI's ADD(x, 0) pipeline; TFLite: one
multiplier) and AVERAGE_POOL_2D of int8 carried as uint8 below API 30 (NNAPI: uint8 rounding half up;
TFLite: int8 rounding half away from zero); and, found on a litert-torch PT2E ResNet18, an int8 MEAN over
H and W lowered as AVERAGE_POOL_2D (NNAPI: one rounding; TFLite: two). Each alone stays within 1 LSB of TFLite, and computed TFLite's
way (verify's rerun, `TfliteArithmetic`) equals TFLite's reference kernel bit for bit; verify explains an
amplified difference that comes only from them, and still fails a fault on top."""

from __future__ import annotations

import re

import numpy as np
import pytest

from harness import QuantParams, TfliteBuilder, nnconv_options, single_op_model
from nnconv.nnapi.builder import ModelBuilder
from nnconv.nnapi.enums import OperandType as O, OperationType
from nnconv.nnapi.model import Model
from nnconv.parity.session import VerifyOptions, verify
from nnconv.parity.tflite_arithmetic import TfliteArithmetic
from nnconv.parity.tflite_kernels import tflite_requantize
from nnconv.parity.tflite_squared_difference import squared_difference_steps
from nnconv.parity.tflite_runner import REFERENCE_KERNELS, TfliteRunner
from nnconv.pipeline import prepare
from nnconv.runtime.executor import Executor
from nnconv.runtime.kernels import KERNELS
from nnconv.runtime.replacements import Replacements
from nnconv.tflite.options import Pool2DOptions, ReducerOptions, ResizeBilinearOptions
from nnconv.tflite.schema_enums import BuiltinOperator as B, Padding

IN_Q = QuantParams(0.05, -3)
TFLITE_WAY = TfliteArithmetic(resize=True, requantize=frozenset([0]), signed_average=frozenset([0]))


def _resize_model() -> bytes:
    """deeplab_mini's final upsampling: int8 16x16 -> 64x64, half-pixel centers."""
    return single_op_model(B.RESIZE_BILINEAR, [("x", (1, 16, 16, 5), np.int8, IN_Q),
                                               ("size", np.array([64, 64], np.int32))],
                           [("y", (1, 64, 64, 5), np.int8, IN_Q)], ResizeBilinearOptions(half_pixel_centers=True))


def _requantize_model() -> bytes:
    """deeplab_mini's QUANTIZE after its first upsampling (its scales and zero points)."""
    return single_op_model(B.QUANTIZE, [("x", (1, 16, 16, 16), np.int8, QuantParams(0.004732482600957155, -31))],
                           [("y", (1, 16, 16, 16), np.int8, QuantParams(0.016313569620251656, -100))])


def _average_model() -> bytes:
    return single_op_model(B.AVERAGE_POOL_2D, [("x", (1, 8, 8, 16), np.int8, IN_Q)],
                           [("y", (1, 4, 4, 16), np.int8, IN_Q)],
                           Pool2DOptions(padding=Padding.VALID, stride_w=2, stride_h=2, filter_width=2,
                                         filter_height=2))


def _diffs(model: bytes, api_level: int, tflite_way: Replacements | None = None, seed: int = 0) -> np.ndarray:
    """|ours - TFLite's reference kernel| on seeded int8 inputs of the one-op model, computed NNAPI's way or
    with `tflite_way`."""
    converted = prepare(model, api_level, nnconv_options()).lower_ops()
    rng = np.random.default_rng(seed)
    xs = [rng.integers(-128, 128, spec.shape, dtype=np.int8) for spec in converted.inputs]
    ours = Executor(converted, replacements=tflite_way).run({s.name: x for s, x in zip(converted.inputs, xs)})[
        converted.outputs[0].name]
    if ours.dtype == np.uint8:  # int8 carried as uint8 below API 30
        ours = (ours.astype(np.int16) - 128).astype(np.int8)
    runner = TfliteRunner(model, kernels=REFERENCE_KERNELS)
    tflite = runner.run({d["index"]: x for d, x in zip(runner.input_details(), xs)})
    want = next(iter(tflite.values()))
    return np.abs(ours.astype(np.int32) - want.reshape(ours.shape).astype(np.int32))


@pytest.mark.parametrize("make, api_level", [(_resize_model, 30), (_requantize_model, 30), (_average_model, 29)],
                         ids=["resize_bilinear", "requantize", "average_pool_api29"])
def test_nnapi_arithmetic_within_1_lsb_and_tflite_way_bit_exact(make, api_level):
    model = make()
    nnapi = _diffs(model, api_level)
    assert nnapi.max() == 1 and np.count_nonzero(nnapi) > 0  # NNAPI's own rounding: some values one step apart
    assert _diffs(model, api_level, TFLITE_WAY).max() == 0  # TFLite's arithmetic reproduces TFLite bit for bit


def _amplified_model(op: B, x_shape: tuple[int, ...], const: tuple[str, np.ndarray], mid_shape: tuple[int, ...],
                     options, q: QuantParams, out_zero_point: int) -> bytes:
    """`op`(x, const) then a requantization to a scale 3x finer (clamped values aside): the op's 1 LSB
    differences become 3 LSB, beyond the tolerance, as a SOFTMAX (deeplab_mini) or a FULLY_CONNECTED
    (resnet18) amplified them."""
    b = TfliteBuilder()
    x = b.input("x", x_shape, np.int8, quant=q)
    c = b.const(*const)
    r = b.tensor("r", mid_shape, np.int8, quant=q)
    b.op(op, [x, c], [r], options)
    y = b.tensor("y", mid_shape, np.int8, quant=QuantParams(q.scale / 3, out_zero_point))
    b.op(B.QUANTIZE, [r], [y])
    b.output(y)
    return b.finish()


AMPLIFIED = {  # name: (model, the NNAPI operation that differs, what the detail names)
    "resize_bilinear": (lambda: _amplified_model(B.RESIZE_BILINEAR, (1, 16, 16, 5),
                                                 ("size", np.array([64, 64], np.int32)), (1, 64, 64, 5),
                                                 ResizeBilinearOptions(half_pixel_centers=True), IN_Q, 0),
                        OperationType.RESIZE_BILINEAR, "RESIZE_BILINEAR"),
    # resnet18's global average pooling (litert-torch PT2E int8): MEAN over a 2x2 map, zero point -128
    "mean": (lambda: _amplified_model(B.MEAN, (1, 2, 2, 64), ("axis", np.array([1, 2], np.int32)), (1, 64),
                                      ReducerOptions(keep_dims=False), QuantParams(0.015345677, -128), -128),
             OperationType.AVERAGE_POOL_2D, "MEAN"),
}


@pytest.fixture(params=sorted(AMPLIFIED))
def amplified(request, tmp_path):
    make, operation, named = AMPLIFIED[request.param]
    path = tmp_path / f"{request.param}_amplified.tflite"
    path.write_bytes(make())
    return str(path), operation, named


def test_amplified_difference_passes_explained(amplified):
    path, _, named = amplified
    out = verify(path, VerifyOptions(conversion=nnconv_options())).parity.outputs[0]
    assert out.max_lsb >= 2 and out.passed
    assert named in out.detail and "within 0 LSB" in out.detail


def test_a_fault_on_top_still_fails(amplified):
    path, operation, _ = amplified
    real = KERNELS[operation]

    def faulty(call):  # a test-only fault: every quantized result one step higher
        return [np.clip(out.astype(np.int32) + 1, -128, 127).astype(out.dtype) for out in real(call)]
    out = verify(path, VerifyOptions(conversion=nnconv_options(),
                                     executor_options={"kernel_overrides": {operation: faulty}})).parity.outputs[0]
    assert not out.passed
    assert "NNAPI's own arithmetic" not in out.detail


def _squared_difference_model() -> bytes:
    """vit's first LayerNorm variance term (x - mean)^2: its scales and zero points."""
    return single_op_model(B.SQUARED_DIFFERENCE,
                           [("x", (1, 17, 32), np.int8, QuantParams(0.05213, -4)),
                            ("m", (1, 17, 1), np.int8, QuantParams(0.00711, 2))],
                           [("y", (1, 17, 32), np.int8, QuantParams(0.04127, -128))])


@pytest.mark.parametrize("api_level", [29, 30])  # 29: int8 carried as uint8
def test_squared_difference_tflite_way_is_bit_exact(api_level):
    """Lowered through float, the exact square rounded once, within 1 LSB of TFLite's fixed point; as one
    step TFLite's way (`parity/tflite_squared_difference.py`), bit for bit."""
    model = _squared_difference_model()
    nnapi = _diffs(model, api_level)
    assert nnapi.max() == 1 and np.count_nonzero(nnapi) > 0
    assert _diffs(model, api_level, TfliteArithmetic(squared_difference=frozenset([0]))).max() == 0
    # the step is found in the lowering's form itself (the rule's five operations), not merely nowhere
    converted = prepare(model, api_level, nnconv_options()).lower_ops()
    assert [op.type.name for op in converted.model.main.operations] == [
        "DEQUANTIZE", "DEQUANTIZE", "SUB", "MUL", "QUANTIZE"]
    (step,) = squared_difference_steps(converted.model.main, frozenset([0]))
    assert (step.absorbed, step.at) == ((0, 1, 2, 3), 4)



def _mean_model(shape: tuple[int, ...], keep_dims: bool, q: QuantParams = QuantParams(0.015345677, -128),
                out_q: QuantParams | None = None) -> bytes:
    """An int8 global average pooling as TFLite MEAN over H and W (resnet18's from litert-torch's PT2E
    flow: 1x2x2x512, zero point -128, the output quantized as the input)."""
    n, _h, _w, c = shape
    return single_op_model(B.MEAN, [("x", shape, np.int8, q), ("axis", np.array([1, 2], np.int32))],
                           [("y", (n, 1, 1, c) if keep_dims else (n, c), np.int8, out_q or q)],
                           ReducerOptions(keep_dims=keep_dims))


@pytest.mark.parametrize("shape", [(1, 2, 2, 64), (2, 3, 5, 16)], ids=["2x2", "3x5"])
@pytest.mark.parametrize("keep_dims", [False, True])
@pytest.mark.parametrize("api_level", [29, 30])  # 29: int8 carried as uint8
def test_int8_mean_as_average_pool_tflite_way_is_bit_exact(shape, keep_dims, api_level):
    """NNAPI's AVERAGE_POOL_2D rounds the average once; TFLite's int8 MEAN requantizes the sum with
    MultiplyByQuantizedMultiplier (two roundings: ceil(acc / 4) on 2x2), 1 LSB apart on some values; TFLite's
    way (`TfliteArithmetic.mean`), bit for bit."""
    model = _mean_model(shape, keep_dims)
    converted = prepare(model, api_level, nnconv_options()).lower_ops()
    assert [op.type for op in converted.model.main.operations][0] is OperationType.AVERAGE_POOL_2D
    nnapi = _diffs(model, api_level)
    assert nnapi.max() == 1 and np.count_nonzero(nnapi) > 0
    assert _diffs(model, api_level, TfliteArithmetic(mean=frozenset([0]))).max() == 0



def test_the_explanation_names_only_the_ops_of_the_model(amplified):
    """Issue 35: the detail listed every requantization cause nnconv knows (FULLY_CONNECTED, RESIZE,
    AVERAGE_POOL, SQUARED_DIFFERENCE, MEAN...) whatever the model held; it names the ops present, by index."""
    path, _, named = amplified
    detail = verify(path, VerifyOptions(conversion=nnconv_options())).parity.outputs[0].detail
    assert f"#0 {named}:" in detail
    assert set(re.findall(r"#\d+ ([A-Z_0-9]+)", detail)) == {named, "QUANTIZE"}, detail  # the model's two ops
    assert "FULLY_CONNECTED" not in detail and "SQUARED_DIFFERENCE" not in detail
    assert not detail.startswith("PASS")  # the verdict already says PASS: the table printed "PASS PASS against"


def _resize_then_conv() -> bytes:
    """A TensorFlow-converted int8 model's head: RESIZE_BILINEAR (half-pixel, 10x10 -> 24x24) then CONV_2D."""
    from nnconv.tflite.options import Conv2DOptions
    b = TfliteBuilder()
    q = QuantParams(0.0078, -1)
    x = b.input("x", (1, 10, 10, 3), np.int8, quant=q)
    r = b.tensor("r", (1, 24, 24, 3), np.int8, quant=q)
    b.op(B.RESIZE_BILINEAR, [x, b.const("size", np.array([24, 24], np.int32))], [r],
         ResizeBilinearOptions(half_pixel_centers=True))
    w = b.const("w", np.random.default_rng(1).integers(-127, 128, (4, 3, 3, 3)).astype(np.int8),
                quant=QuantParams(0.01, 0))
    bias = b.const("bias", np.zeros(4, np.int32), quant=QuantParams(0.0078 * 0.01, 0))
    y = b.tensor("y", (1, 22, 22, 4), np.int8, quant=QuantParams(0.02, 3))
    b.op(B.CONV_2D, [r, w, bias], [y], Conv2DOptions(padding=Padding.VALID, stride_w=1, stride_h=1))
    b.output(y)
    return b.finish()


def test_int8_resize_alone_is_nnapi_arithmetic_not_divergent(tmp_path):
    """Issue 35 (item 6): on uniform int8 inputs the first op, an int8 RESIZE_BILINEAR, was 3 LSB from TFLite
    alone on TFLite's inputs and per-op called it divergent. NNAPI's reference CPU interpolates in float32
    (TFLite's float template) where TFLite's int8 kernels use Q10 integers: computed TFLite's way the op is
    bit-exact, so it is NNAPI's own arithmetic, named as such; the output passes, explained."""
    path = tmp_path / "resize_conv.tflite"
    path.write_bytes(_resize_then_conv())
    report = verify(str(path), VerifyOptions(conversion=nnconv_options(), per_op=True))
    assert report.passed and report.parity.outputs[0].settled_by == "NNAPI arithmetic"
    resize = report.per_op.entries[0]
    assert (resize.op, resize.status) == ("RESIZE_BILINEAR", "arithmetic") and resize.lsb >= 2
    assert resize.confirmed_alone["tflite_arithmetic"]["lsb"] == 0
    assert "#0 RESIZE_BILINEAR: float32 weights" in resize.confirmed_alone["arithmetic"]
    assert report.per_op.first_divergent is None and report.per_op.first_large is resize


def test_a_faulty_resize_is_still_divergent(tmp_path):
    path = tmp_path / "resize_conv.tflite"
    path.write_bytes(_resize_then_conv())
    real = KERNELS[OperationType.RESIZE_BILINEAR]

    def faulty(call):  # a test-only fault: every resized value 3 steps higher
        return [np.clip(o.astype(np.int32) + 3, -128, 127).astype(o.dtype) for o in real(call)]
    report = verify(str(path), VerifyOptions(conversion=nnconv_options(), per_op=True, executor_options={
        "kernel_overrides": {OperationType.RESIZE_BILINEAR: faulty}}))
    assert not report.passed and report.per_op.entries[0].status == "divergent"


def _requantize_then_relu() -> Model:
    """int8 x -> ADD(x, real 0) (a lowered requantizing QUANTIZE, TFLite op 0) -> RELU: a chain of byte
    operations, which the executor computes as one 256-entry table. Scales where NNAPI's ADD and TFLite's
    one-multiplier requantization differ on some bytes."""
    mb = ModelBuilder()
    g = mb.main
    x = g.add_tensor(O.TENSOR_QUANT8_ASYMM_SIGNED, (1, 256), scale=0.0026362359, zero_point=5)
    zero = g.add_constant(O.TENSOR_QUANT8_ASYMM_SIGNED, np.array([5], np.int8), scale=0.0026362359, zero_point=5)
    mid = g.add_tensor(O.TENSOR_QUANT8_ASYMM_SIGNED, (1, 256), scale=0.0815137537, zero_point=16)
    g.add_operation(OperationType.ADD, [x, zero, g.add_scalar(0)], [mid], source_op=0)
    y = g.add_tensor(O.TENSOR_QUANT8_ASYMM_SIGNED, (1, 256), scale=0.0815137537, zero_point=16)
    g.add_operation(OperationType.RELU, [mid], [y], source_op=1)
    g.set_io([x], [y])
    return mb.finish()


def test_a_replaced_operation_is_not_fused_away():
    """The TFLite-arithmetic rerun replaces the requantizing ADD; inside the executor's byte table it would be
    computed with NNAPI's ADD again (the replacement lost), so a replaced operation runs as its own step."""
    model = _requantize_then_relu()
    ops = model.main.operands
    xs = np.arange(-128, 128, dtype=np.int8).reshape(1, 256)
    want = np.maximum(tflite_requantize(xs, ops[0], ops[2]), 16)  # RELU on the output's grid: max(q, zp)
    nnapi = Executor(model)
    name = nnapi.converted.inputs[0].name
    assert (next(iter(nnapi.run({name: xs}).values())) != want).any(), "NNAPI's ADD rounds like TFLite here"
    tflite_way = Executor(model, replacements=TfliteArithmetic(requantize=frozenset([0])))
    np.testing.assert_array_equal(next(iter(tflite_way.run({name: xs}).values())), want)
