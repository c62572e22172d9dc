"""Boolean outputs (issue 35): a quantized comparison's output differing from TFLite is counted in
mismatching booleans, not "1 LSB", and a mismatch at a near tie after rescaling says so with the two values."""

from __future__ import annotations

import numpy as np
import pytest

from harness import QuantParams, single_op_model
from nnconv.nnapi.enums import OperationType
from nnconv.parity.session import VerifyOptions, verify
from nnconv.runtime.kernels import KERNELS
from nnconv.tflite.options import GreaterOptions
from nnconv.tflite.schema_enums import BuiltinOperator as B

QA, QB = QuantParams(0.1, 3), QuantParams(0.07, -5)


@pytest.fixture
def model(tmp_path) -> str:
    path = tmp_path / "greater.tflite"
    path.write_bytes(single_op_model(B.GREATER, [("a", (4, 64), np.int8, QA), ("b", (4, 64), np.int8, QB)],
                                     [("y", (4, 64), np.bool_)], GreaterOptions()))
    return str(path)


def _ties() -> dict[str, np.ndarray]:
    """a = 0.1 (qa - 3) and b = 0.07 (qb + 5) equal wherever qa - 3 = 7k and qb + 5 = 10k: exact ties, which
    NNAPI's float32 products and TFLite's fixed-point rescaling break differently."""
    k = np.arange(-12, 13)
    a, b = np.zeros((4, 64), np.int8), np.zeros((4, 64), np.int8)
    a.ravel()[:k.size], b.ravel()[:k.size] = np.clip(3 + 7 * k, -128, 127), np.clip(-5 + 10 * k, -128, 127)
    return {"a": a, "b": b}


def test_near_ties_are_counted_and_shown_with_their_values(model):
    (out,) = verify(model, VerifyOptions(inputs=_ties())).parity.outputs
    assert not out.passed and out.max_lsb is None and out.histogram == {}
    assert out.mismatches and out.detail.startswith(f"{out.mismatches} of 256 booleans differ; ")
    assert "near tie after rescaling: #0 GREATER" in out.detail and "LSB" not in out.detail
    assert "a = 2.1 (q 24), b = 2.1 (q 25)" in out.detail
    assert out.to_json()["mismatches"] == out.mismatches


def test_a_real_mismatch_is_not_called_a_tie(model):
    real = KERNELS[OperationType.GREATER]

    def flipped(call):  # a test-only fault: the first element inverted
        y = real(call)[0].copy()
        y.reshape(-1)[0] = ~y.reshape(-1)[0]
        return [y]
    inputs = {"a": np.full((4, 64), 100, np.int8), "b": np.full((4, 64), -100, np.int8)}
    (out,) = verify(model, VerifyOptions(inputs=inputs, executor_options={
        "kernel_overrides": {OperationType.GREATER: flipped}})).parity.outputs
    assert out.mismatches == 1 and "1 not near a tie" in out.detail and "a = 9.7 (q 100)" in out.detail
