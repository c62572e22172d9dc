"""Float outputs dequantized from a quantized tensor are judged in that tensor's LSB (issue 35, item 2):
`quantize.int8_floatio` (QUANTIZE, int8 AVERAGE_POOL_2D, DEQUANTIZE) at API 29 failed by exactly one step
of the int8 tensor (0.0156), blamed "#2 DEQUANTIZE (amplified)" and named no op where the difference
started, while the same pool with an int8 output passed."""

from __future__ import annotations

import numpy as np
import pytest

from harness import QuantParams, TfliteBuilder, nnconv_options
from nnconv.nnapi.enums import OperationType
from nnconv.parity.session import VerifyOptions, verify
from nnconv.parity.tolerances import ToleranceOverrides
from nnconv.runtime.kernels import KERNELS
from nnconv.tflite.options import Pool2DOptions
from nnconv.tflite.schema_enums import BuiltinOperator as B, Padding

Q = QuantParams(1 / 64, -1)


def _float_io_pool() -> bytes:
    b = TfliteBuilder()
    x = b.input("x", (1, 8, 8, 4), np.float32)
    xq = b.tensor("xq", (1, 8, 8, 4), np.int8, quant=Q)
    b.op(B.QUANTIZE, [x], [xq])
    p = b.tensor("p", (1, 4, 4, 4), np.int8, quant=Q)
    b.op(B.AVERAGE_POOL_2D, [xq], [p], Pool2DOptions(padding=Padding.VALID, stride_w=2, stride_h=2, filter_width=2,
                                                    filter_height=2))
    y = b.tensor("y", (1, 4, 4, 4), np.float32)
    b.op(B.DEQUANTIZE, [p], [y])
    b.output(y)
    return b.finish()


@pytest.fixture
def model(tmp_path) -> str:
    path = tmp_path / "int8_floatio.tflite"
    path.write_bytes(_float_io_pool())
    return str(path)


def test_a_dequantized_output_is_judged_in_the_lsb_of_its_source(model):
    # API 29 carries int8 as uint8, rounding the pool's averages half up (TFLite: half away from zero)
    report = verify(model, VerifyOptions(conversion=nnconv_options(), api_level=29, per_op=True))
    (out,) = report.parity.outputs
    assert out.max_lsb == 1 and out.max_abs == pytest.approx(Q.scale) and out.passed and report.passed
    assert out.tolerance.describe() == "|diff| <= 1 LSB of int8 (0.0156) + 1e-05 + 0.0001 * max |expected|"
    assert out.detail == "1 LSB of int8 'p' (#1 AVERAGE_POOL_2D, scale 0.01562), dequantized here"
    # per op: nothing out of tolerance, and the difference starts at the pool, not at the DEQUANTIZE
    assert report.per_op.out_of_tolerance == 0 and report.per_op.first_large is None
    start = report.per_op.first_difference
    assert (start.op_index, start.op, start.lsb) == (1, "AVERAGE_POOL_2D", 1)
    assert report.to_json()["first_difference"]["op"] == "AVERAGE_POOL_2D"


def test_two_lsb_still_fail(model):
    real = KERNELS[OperationType.AVERAGE_POOL_2D]

    def faulty(call):  # a test-only fault: every pooled value 2 steps higher
        return [np.clip(o.astype(np.int32) + 2, 0, 255).astype(o.dtype) for o in real(call)]
    (out,) = verify(model, VerifyOptions(conversion=nnconv_options(), api_level=29, executor_options={
        "kernel_overrides": {OperationType.AVERAGE_POOL_2D: faulty}})).parity.outputs
    assert not out.passed and out.max_lsb >= 2
    # --max-lsb applies to the source's LSB: bit-exactness against the reference kernels fails the step
    (strict,) = verify(model, VerifyOptions(conversion=nnconv_options(), api_level=29, kernels="reference",
                                            overrides=ToleranceOverrides(max_lsb=0))).parity.outputs
    assert not strict.passed and strict.tolerance.lsb == 0 and strict.max_lsb == 1
