"""verify on models with MediaPipe's Convolution2DTransposeBias custom op, which TFLite's interpreter does
not have: TFLite runs the model's builtin twin (TRANSPOSE_CONV with bias) and the comparison is real."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from harness import TfliteBuilder, nnconv_options
from nnconv.nnapi.enums import OperationType
from nnconv.parity.builtin_twin import builtin_twin, custom_ops_substituted
from nnconv.parity.session import VerifyOptions, save_reference_outputs, verify
from nnconv.runtime.kernels import KERNELS
from nnconv.tflite.options import Conv2DOptions
from nnconv.tflite.reader import read_model
from nnconv.tflite.schema_enums import BuiltinOperator

RNG = np.random.default_rng(7)


def segmentation_head(padding_code: int, in_shape, out_shape) -> bytes:
    """CONV_2D -> Convolution2DTransposeBias (stride 2) -> LOGISTIC, as MediaPipe's selfie model ends."""
    b = TfliteBuilder()
    x = b.input("x", in_shape, np.float32)
    c = in_shape[3]
    h = b.tensor("h", in_shape[:3] + (4,), np.float32)
    b.op(BuiltinOperator.CONV_2D, [x, b.const("cw", RNG.standard_normal((4, 1, 1, c)).astype(np.float32)),
                                   b.const("cb", RNG.standard_normal(4).astype(np.float32))], [h],
         Conv2DOptions(padding=1, stride_w=1, stride_h=1))
    t = b.tensor("t", out_shape, np.float32)
    raw = struct.pack("<iii", padding_code, 2, 2)
    b.op(BuiltinOperator.CUSTOM, [h, b.const("w", RNG.standard_normal((out_shape[3], 3, 3, 4)).astype(np.float32)),
                                  b.const("b", RNG.standard_normal(out_shape[3]).astype(np.float32))], [t],
         custom_code="Convolution2DTransposeBias", custom_options=raw)
    y = b.tensor("y", out_shape, np.float32)
    b.op(BuiltinOperator.LOGISTIC, [t], [y])
    b.output(y)
    return b.finish()


@pytest.mark.parametrize("padding_code,in_shape,out_shape", [
    pytest.param(1, (1, 4, 3, 2), (1, 8, 5, 2), id="same"),
    pytest.param(2, (2, 3, 4, 3), (2, 7, 9, 1), id="valid-batch2"),
])
def test_verify_runs_tflite_on_the_builtin_twin(tmp_path, padding_code, in_shape, out_shape):
    path = tmp_path / "seg.tflite"
    path.write_bytes(segmentation_head(padding_code, in_shape, out_shape))
    report = verify(str(path), VerifyOptions(per_op=True, conversion=nnconv_options()))
    assert report.passed
    out = report.parity.outputs[0]
    assert out.max_abs < 1e-5 and "as builtin TRANSPOSE_CONV" in out.detail
    assert report.parity.model == str(path)
    assert report.per_op.first_divergent is None
    saved = save_reference_outputs(str(path), VerifyOptions())
    assert saved["y"].shape == out_shape


def test_a_wrong_transpose_conv_still_fails(tmp_path):
    path = tmp_path / "seg.tflite"
    path.write_bytes(segmentation_head(1, (1, 4, 3, 2), (1, 8, 5, 2)))
    real = KERNELS[OperationType.TRANSPOSE_CONV_2D]

    def faulty(call):  # a test-only fault: the transpose convolution's results are off by 0.5
        return [out + np.float32(0.5) for out in real(call)]
    report = verify(str(path), VerifyOptions(conversion=nnconv_options(), executor_options={
        "kernel_overrides": {OperationType.TRANSPOSE_CONV_2D: faulty}}))
    assert not report.passed


def test_models_without_the_custom_op_have_no_twin(tmp_path):
    b = TfliteBuilder()
    x = b.input("x", (1, 3), np.float32)
    y = b.tensor("y", (1, 3), np.float32)
    b.op(BuiltinOperator.LOGISTIC, [x], [y])
    b.output(y)
    model = read_model(b.finish())
    assert custom_ops_substituted(model) == 0 and builtin_twin(model) is None
    with_op = read_model(segmentation_head(1, (1, 4, 3, 2), (1, 8, 5, 2)))
    assert custom_ops_substituted(with_op) == 1
    twin = read_model(builtin_twin(with_op))
    codes = [op.builtin_code for op in twin.subgraphs[0].operators]
    assert codes == [BuiltinOperator.CONV_2D, BuiltinOperator.TRANSPOSE_CONV, BuiltinOperator.LOGISTIC]
    assert [t.name for t in twin.subgraphs[0].tensors][:len(with_op.subgraphs[0].tensors)] == \
        [t.name for t in with_op.subgraphs[0].tensors]  # every original index kept
