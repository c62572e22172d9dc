"""`verify --relax-fp16`: the float32 graph run as a relaxed fp16 driver (simulated), on models whose fp16
error is known exactly."""

from __future__ import annotations

import json

import numpy as np
from click.testing import CliRunner

from harness import TfliteBuilder
from nnconv.cli import main
from nnconv.errors import EXIT_FAILURE, EXIT_OK
from nnconv.parity.session import VerifyOptions, verify
from nnconv.tflite.options import AddOptions, MulOptions
from nnconv.tflite.schema_enums import BuiltinOperator as B

SHAPE = (1, 6, 5, 4)


def _mul_model(c: np.ndarray) -> bytes:
    b = TfliteBuilder()
    x = b.input("x", SHAPE, np.float32)
    y = b.tensor("y", SHAPE, np.float32)
    b.op(B.MUL, [x, b.const("c", c)], [y], MulOptions())
    b.output(y)
    return b.finish()


def _fp16(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, np.float32).astype(np.float16).astype(np.float32)


def test_relaxed_error_of_a_mul_is_the_fp16_rounding(tmp_path):
    rng = np.random.default_rng(3)
    c = rng.uniform(-3, 3, SHAPE).astype(np.float32)
    x = rng.uniform(-1, 1, SHAPE).astype(np.float32)
    path = tmp_path / "mul.tflite"
    path.write_bytes(_mul_model(c))
    report = verify(str(path), VerifyOptions(relax_fp16=True, inputs={"x": x}))
    # A relaxed driver stores x and c in fp16 and rounds the product to fp16; TFLite computes x * c in fp32.
    known = float(np.max(np.abs(_fp16(_fp16(x) * _fp16(c)).astype(np.float64) - (x * c).astype(np.float64))))
    assert known > 0
    (row,) = report.relaxed
    assert row.max_abs == known
    assert row.passed and report.passed  # ~1e-3 of the range: within the relaxed tolerance
    data = report.to_json()["relaxed"]
    assert data["outputs"][0]["max_abs"] == known and "extra max |diff|" in data["outputs"][0]["detail"]


def test_fp16_overflow_fails_and_per_op_names_the_op(tmp_path):
    """x + 1 then x * 1000: with x up to 100 the product exceeds fp16's 65504 and becomes inf."""
    b = TfliteBuilder()
    x = b.input("x", SHAPE, np.float32)
    a, y = b.tensor("a", SHAPE, np.float32), b.tensor("y", SHAPE, np.float32)
    b.op(B.ADD, [x, b.const("one", np.ones(SHAPE, np.float32))], [a], AddOptions())
    b.op(B.MUL, [a, b.const("k", np.full(SHAPE, 1000.0, np.float32))], [y], MulOptions())
    b.output(y)
    path = tmp_path / "overflow.tflite"
    path.write_bytes(b.finish())
    report = verify(str(path), VerifyOptions(relax_fp16=True, per_op=True, input_range=(-100.0, 100.0)))
    assert report.parity.passed  # float32 parity is fine
    assert not report.passed and report.relaxed[0].max_abs == np.inf
    first = report.relaxed_per_op.first_divergent
    assert (first.op_index, first.op) == (1, "MUL")
    assert [e.status for e in report.relaxed_per_op.entries] == ["pass", "divergent"]
    runner = CliRunner()
    result = runner.invoke(main, ["verify", str(path), "--relax-fp16", "--per-op", "--input-range", "-100", "100",
                                  "--format", "json"])
    assert result.exit_code == EXIT_FAILURE, result.output
    assert json.loads(result.stdout)["relaxed"]["first_large_error_op"]["op"] == "MUL"
    ok = runner.invoke(main, ["verify", str(path), "--relax-fp16"])  # inputs in [-1, 1]: no overflow
    assert ok.exit_code == EXIT_OK, ok.output
    assert "relaxed fp16 (simulated)" in ok.stdout


def test_catastrophic_cancellation_is_blamed_on_the_subtraction(tmp_path):
    """(x + 1000) - 1000: the sum is stored in fp16 with a step of 0.5 (within tolerance of its range,
    ~1000), and the subtraction cancels the 1000 leaving that rounding as an error of up to 25% of x's
    range: the SUB is where the fp16 error becomes large, not the ADD."""
    from nnconv.tflite.options import SubOptions
    b = TfliteBuilder()
    x = b.input("x", SHAPE, np.float32)
    a, y = b.tensor("a", SHAPE, np.float32), b.tensor("y", SHAPE, np.float32)
    k = np.full(SHAPE, 1000.0, np.float32)
    b.op(B.ADD, [x, b.const("k", k)], [a], AddOptions())
    b.op(B.SUB, [a, b.const("k2", k)], [y], SubOptions())
    b.output(y)
    path = tmp_path / "cancel.tflite"
    path.write_bytes(b.finish())
    report = verify(str(path), VerifyOptions(relax_fp16=True, per_op=True))
    assert report.parity.passed and not report.passed
    assert 0.1 < report.relaxed[0].max_rel <= 0.25 + 1e-6
    first = report.relaxed_per_op.first_large
    assert (first.op_index, first.op, first.status) == (1, "SUB", "divergent")
    assert report.to_json()["relaxed"]["first_large_error_op"]["op"] == "SUB"


def test_relax_fp16_below_api_28_warns_and_simulates_nothing(tmp_path):
    """Issue 35: at API 27 the model has no relaxComputationFloat32toFloat16: verify warned that the option
    has no effect and then printed a "relaxed fp16 (simulated)" table anyway."""
    path = tmp_path / "mul.tflite"
    path.write_bytes(_mul_model(np.full(SHAPE, 3.0, np.float32)))
    res = CliRunner().invoke(main, ["verify", str(path), "--api-level", "27", "--relax-fp16"])
    assert res.exit_code == EXIT_OK, res.output
    assert "--relax-fp16 has no effect at API 27" in res.stderr
    assert "relaxed" not in res.stdout
    data = json.loads(CliRunner().invoke(main, ["verify", str(path), "--api-level", "27", "--relax-fp16",
                                                "--format", "json"]).stdout)
    assert "relaxed" not in data
    assert verify(str(path), VerifyOptions(api_level=27, relax_fp16=True)).relaxed is None
    assert verify(str(path), VerifyOptions(api_level=28, relax_fp16=True)).relaxed is not None
