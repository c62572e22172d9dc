"""A NaN or infinity is named at the op where it first appears (issue 35): `floor_mod.int8` on random data
divides by zero, and verify failed by 127 LSB "at" the QUANTIZE that reads the NaN."""

from __future__ import annotations

import numpy as np
import pytest

from harness import QuantParams, TfliteBuilder, nnconv_options
from nnconv.parity.session import VerifyOptions, verify
from nnconv.tflite.schema_enums import BuiltinOperator as B


@pytest.fixture
def model(tmp_path) -> str:
    """x, y int8 -> DEQUANTIZE both -> FLOOR_MOD -> QUANTIZE (TensorFlow's int8 floormod): y at its zero
    point is a division by zero, NaN in both engines, and its QUANTIZE is undefined."""
    b = TfliteBuilder()
    x = b.input("x", (2, 8), np.int8, quant=QuantParams(0.05, -5))
    y = b.input("y", (2, 8), np.int8, quant=QuantParams(0.04, -17))
    xf, yf, m = (b.tensor(n, (2, 8), np.float32) for n in ("xf", "yf", "m"))
    b.op(B.DEQUANTIZE, [x], [xf])
    b.op(B.DEQUANTIZE, [y], [yf])
    b.op(B.FLOOR_MOD, [xf, yf], [m])
    o = b.tensor("o", (2, 8), np.int8, quant=QuantParams(0.06, -29))
    b.op(B.QUANTIZE, [m], [o])
    b.output(o)
    path = tmp_path / "floor_mod.tflite"
    path.write_bytes(b.finish())
    return str(path)


def _zero_divisors() -> dict[str, np.ndarray]:
    y = np.full((2, 8), 20, np.int8)
    y[0] = -17  # the zero point: a real 0
    return {"x": np.arange(-8, 8, dtype=np.int8).reshape(2, 8), "y": y}


def test_the_op_where_nan_first_appears_is_named(model):
    """QUANTIZE of NaN gives the type's maximum in both engines (std::min keeps its first argument when the
    comparison with NaN is false); a QUANTIZE that read it otherwise (numpy's cast of NaN, 0 on x86) disagrees,
    and the report says where the NaN came from instead of blaming the QUANTIZE."""
    from nnconv.nnapi.enums import OperationType
    from nnconv.runtime.kernels import KERNELS
    agreed = verify(model, VerifyOptions(conversion=nnconv_options(), inputs=_zero_divisors(), per_op=True))
    assert agreed.passed and agreed.per_op.first_non_finite["op"] == "FLOOR_MOD"
    real = KERNELS[OperationType.QUANTIZE]

    def nan_to_zero_point(call):  # a test-only fault: NaN quantizes to the zero point
        (q,) = real(call)
        return [np.where(np.isnan(call.tensor(0)), np.int8(call.out_operands[0].zero_point), q).astype(q.dtype)]
    report = verify(model, VerifyOptions(conversion=nnconv_options(), inputs=_zero_divisors(), per_op=True,
                                         executor_options={"kernel_overrides": {OperationType.QUANTIZE:
                                                                                nan_to_zero_point}}))
    (out,) = report.parity.outputs
    assert not out.passed
    assert "a NaN or infinity first appears in TFLite's values at #2 FLOOR_MOD -> m (8 NaN)" in out.detail
    first = report.per_op.first_non_finite
    assert (first["op_index"], first["op"], first["tflite"], first["ours"]) == (2, "FLOOR_MOD", {"nan": 8},
                                                                                {"nan": 8})
    quantize = report.per_op.entries[-1]
    assert quantize.op == "QUANTIZE" and quantize.status == "propagated"  # not blamed for the NaN it read
    assert report.per_op.first_divergent is None
    assert report.to_json()["first_non_finite"]["op"] == "FLOOR_MOD"


def test_finite_data_names_nothing(model):
    inputs = _zero_divisors()
    inputs["y"][0] = 20
    report = verify(model, VerifyOptions(conversion=nnconv_options(), inputs=inputs, per_op=True))
    assert report.passed and report.per_op.first_non_finite is None


def test_an_infinite_constant_is_data_not_news(tmp_path):
    """Scores padded with -inf (a constant, as attention masks are) are data: no NaN or infinity "appears"
    there, and an op that reads them and is wrong is still blamed (divergent), not excused as reading a
    non-finite value. (CONCATENATION copies the -inf as both engines do.)"""
    from nnconv.nnapi.enums import OperationType
    from nnconv.runtime.kernels import KERNELS
    from nnconv.tflite.options import ConcatenationOptions, SoftmaxOptions
    b = TfliteBuilder()
    x = b.input("x", (1, 4), np.float32)
    s, y = b.tensor("s", (1, 6), np.float32), b.tensor("y", (1, 6), np.float32)
    b.op(B.CONCATENATION, [x, b.const("pad", np.full((1, 2), -np.inf, np.float32))], [s],
         ConcatenationOptions(axis=1))
    b.op(B.SOFTMAX, [s], [y], SoftmaxOptions(beta=1.0))
    b.output(y)
    path = tmp_path / "padded.tflite"
    path.write_bytes(b.finish())
    clean = verify(str(path), VerifyOptions(conversion=nnconv_options(), per_op=True))
    assert clean.passed and clean.per_op.first_non_finite is None
    real = KERNELS[OperationType.SOFTMAX]

    def faulty(call):  # a test-only fault: every probability 0.1 higher
        return [o + np.float32(0.1) for o in real(call)]
    report = verify(str(path), VerifyOptions(conversion=nnconv_options(), per_op=True, executor_options={
        "kernel_overrides": {OperationType.SOFTMAX: faulty}}))
    assert not report.passed and report.per_op.entries[-1].status == "divergent"
    assert report.per_op.first_non_finite is None
