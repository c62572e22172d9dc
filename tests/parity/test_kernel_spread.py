"""Float outputs out of tolerance pass when nnconv is no further from TFLite than TFLite's builtin and
reference kernels are from each other (parity/kernel_spread.py), and only then."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from harness import TfliteBuilder
from nnconv.cli import main
from nnconv.errors import EXIT_FAILURE, EXIT_OK
from nnconv.nnapi.enums import OperationType
from nnconv.parity.session import VerifyOptions, verify
from nnconv.parity.tolerances import ToleranceOverrides
from nnconv.runtime.kernels import KERNELS
from nnconv.tflite.options import FullyConnectedOptions
from nnconv.tflite.schema_enums import BuiltinOperator


def cancelling_fc_model(k: int = 512, hidden: int = 32) -> bytes:
    """Two FULLY_CONNECTED layers whose result is the difference of near-equal sums of large products: each
    engine's float rounding of the hidden sums (order, FMA) survives the cancellation, so TFLite's own
    builtin and reference kernels differ by ~1e-2 on an output of range ~1e-1, far beyond 1e-4 x range."""
    rng = np.random.default_rng(0)
    w1 = rng.uniform(-1000, 1000, (hidden, k)).astype(np.float32)
    w1[1::2] = w1[0::2] + rng.uniform(-1e-3, 1e-3, (hidden // 2, k)).astype(np.float32)
    w2 = np.zeros((hidden // 2, hidden), np.float32)
    w2[np.arange(hidden // 2), np.arange(0, hidden, 2)] = 1.0
    w2[np.arange(hidden // 2), np.arange(1, hidden, 2)] = -1.0
    b = TfliteBuilder()
    x = b.input("x", (1, k), np.float32)
    h = b.tensor("h", (1, hidden), np.float32)
    y = b.tensor("y", (1, hidden // 2), np.float32)
    b.op(BuiltinOperator.FULLY_CONNECTED, [x, b.const("w1", w1), -1], [h], FullyConnectedOptions())
    b.op(BuiltinOperator.FULLY_CONNECTED, [h, b.const("w2", w2), -1], [y], FullyConnectedOptions())
    b.output(y)
    return b.finish()


@pytest.fixture
def cancelling(tmp_path):
    path = tmp_path / "cancelling.tflite"
    path.write_bytes(cancelling_fc_model())
    return str(path)


def _shifted_fc(by: float):
    real = KERNELS[OperationType.FULLY_CONNECTED]

    def faulty(call):  # a test-only fault: every FULLY_CONNECTED result is off by `by`
        return [np.asarray(out) + np.float32(by) for out in real(call)]
    return faulty


def test_amplified_rounding_passes_within_tflites_own_spread(cancelling):
    out = verify(cancelling, VerifyOptions()).parity.outputs[0]
    tol = out.tolerance.atol + out.tolerance.rtol * max(abs(v) for v in out.value_range)
    assert out.max_abs > tol  # out of the plain tolerance: the case this rule is for
    assert out.kernel_spread is not None and out.kernel_spread > 10 * tol  # TFLite disagrees with itself
    assert out.passed
    assert "within TFLite's own kernel spread" in out.detail


def test_an_error_beyond_the_spread_fails_and_says_so(cancelling):
    spread = verify(cancelling, VerifyOptions()).parity.outputs[0].kernel_spread
    options = VerifyOptions(executor_options={"kernel_overrides": {
        OperationType.FULLY_CONNECTED: _shifted_fc(4 * spread)}})
    out = verify(cancelling, options).parity.outputs[0]
    assert not out.passed
    assert "beyond TFLite's own kernel spread" in out.detail


def test_an_explicit_float_tolerance_is_not_widened(cancelling):
    report = verify(cancelling, VerifyOptions(overrides=ToleranceOverrides(rtol=1e-4)))
    assert not report.passed
    assert report.parity.outputs[0].kernel_spread is None and "spread" not in report.parity.outputs[0].detail


def test_where_tflite_agrees_with_itself_the_tolerance_is_unchanged(tmp_path):
    """One FULLY_CONNECTED of small values: TFLite's kernel sets agree to float rounding, so a fault of
    1e-3 fails exactly as under the plain tolerance."""
    rng = np.random.default_rng(1)
    b = TfliteBuilder()
    x = b.input("x", (1, 8), np.float32)
    y = b.tensor("y", (1, 4), np.float32)
    b.op(BuiltinOperator.FULLY_CONNECTED, [x, b.const("w", rng.uniform(-1, 1, (4, 8)).astype(np.float32)), -1],
         [y], FullyConnectedOptions())
    b.output(y)
    path = tmp_path / "fc.tflite"
    path.write_bytes(b.finish())
    out = verify(str(path), VerifyOptions(executor_options={"kernel_overrides": {
        OperationType.FULLY_CONNECTED: _shifted_fc(1e-3)}})).parity.outputs[0]
    assert not out.passed
    assert out.kernel_spread is not None and out.kernel_spread < 1e-5
    assert "beyond TFLite's own kernel spread" in out.detail


def test_cli_json_reports_the_spread(cancelling):
    result = CliRunner().invoke(main, ["verify", cancelling, "--format", "json"])
    assert result.exit_code == EXIT_OK, result.output
    out = json.loads(result.stdout)["outputs"][0]
    assert out["passed"] and out["kernel_spread"] > 0 and "kernel spread" in out["detail"]
    strict = CliRunner().invoke(main, ["verify", cancelling, "--rtol", "1e-4"])
    assert strict.exit_code == EXIT_FAILURE


def test_figures_agree_and_a_spread_that_per_op_does_not_apply_is_said(cancelling, tmp_path):
    """Issue 35: a dataset's figures for the same tensor agree between the dataset table, the worst sample's
    table and --per-op, and where one passes through the kernel-spread allowance and another does not, the
    report says so."""
    rng = np.random.default_rng(1)
    np.savez(tmp_path / "s.npz", x=rng.uniform(-1, 1, (3, 1, 512)).astype(np.float32))
    report = verify(cancelling, VerifyOptions(dataset=str(tmp_path / "s.npz"), per_op=True))
    (ds,) = report.dataset["outputs"]
    (out,) = report.parity.outputs
    assert report.dataset["worst_sample"] == ds["worst_sample"]
    assert ds["abs_error"]["max"] == pytest.approx(out.max_abs, rel=1e-6)  # the table's max is the worst's
    assert ds["settled_samples"] == {"kernel spread": 3} and out.settled_by == "kernel spread"
    last = report.per_op.entries[-1]
    assert last.tensor == "y" and last.status != "pass"  # per op, the plain tolerance
    assert report.per_op.notes == ["output 'y' passes within TFLite's kernel spread (its detail); per op only the "
                                   "plain tolerance applies, so #1 FULLY_CONNECTED shows out of tolerance here"]
    res = CliRunner().invoke(main, ["verify", cancelling, "--dataset", str(tmp_path / "s.npz"), "--per-op"],
                             env={"COLUMNS": "300"})
    assert "PASS (3 of 3 within TFLite's kernel spread)" in res.stdout
    assert "note: output 'y' passes within TFLite's kernel spread" in res.stdout
