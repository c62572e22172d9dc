"""A verdict that tells the truth: constant outputs are flagged, top-k is never claimed on ties, the per-op
table shows where divergence starts, the relaxed tolerance scales with the output, folder runs report every
model with exit codes that tell a parity failure from a model that could not be verified, hints lead
somewhere, and a closed pipe does not turn into a failure."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from chain_models import SHAPE as CHAIN_SHAPE, add_mul_sub_chain
from harness import TfliteBuilder, single_op_model
from nnconv.cli import main
from nnconv.errors import EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_NOT_CONVERTIBLE, EXIT_OK
from nnconv.nnapi.enums import OperationType
from nnconv.parity.metrics import is_uninformative, top_k_agreement
from nnconv.parity.session import RELAXED_TOLERANCE
from nnconv.parity.verify import compare
from nnconv.runtime.kernels import KERNELS
from nnconv.tflite.options import AddOptions, MulOptions, SubOptions
from nnconv.tflite.schema_enums import BuiltinOperator as B


@pytest.fixture
def runner():
    return CliRunner()


def _constant_output_model(value: float = 0.001, classes: int = 20) -> bytes:
    """x [1, classes] -> MUL 0 -> ADD value: every output element is `value`, whatever the input (the
    held-out classifiers of issue 29 whose only output was constant)."""
    b = TfliteBuilder()
    x = b.input("x", (1, classes), np.float32)
    zero = b.const("zero", np.zeros((1, classes), np.float32))
    c = b.const("c", np.full((1, classes), value, np.float32))
    m, y = b.tensor("m", (1, classes), np.float32), b.tensor("y", (1, classes), np.float32)
    b.op(B.MUL, [x, zero], [m], MulOptions())
    b.op(B.ADD, [m, c], [y], AddOptions())
    b.output(y)
    return b.finish()


def test_constant_output_is_never_a_bare_pass(tmp_path, runner):
    path = tmp_path / "flat.tflite"
    path.write_bytes(_constant_output_model())
    result = runner.invoke(main, ["verify", str(path), "--format", "json"])
    assert result.exit_code == EXIT_OK, result.output  # not a parity failure, but flagged
    data = json.loads(result.stdout)
    out = data["outputs"][0]
    assert out["uninformative"] and "constant on these inputs" in out["detail"]
    assert out["top1"] is None and out["top5"] is None  # 20 tied classes: no top-k claimed
    assert data["uninformative_outputs"] == ["y"] and data["verdict"].startswith("PASS (uninformative")
    table = runner.invoke(main, ["verify", str(path)])
    lines = table.stdout.strip().splitlines()
    assert "PASS" not in [line.strip() for line in lines]
    assert "--dataset" in table.stdout and "--per-op" in table.stdout
    assert "PASS (uninformative: every output is constant" in table.stdout
    quiet = runner.invoke(main, ["verify", str(path), "-q"])
    assert quiet.stdout.startswith("PASS (uninformative")


def test_informative_output_keeps_a_plain_pass(tmp_path, runner):
    path = tmp_path / "chain.tflite"
    path.write_bytes(add_mul_sub_chain())
    data = json.loads(runner.invoke(main, ["verify", str(path), "--format", "json"]).stdout)
    assert data["verdict"] == "PASS" and not data["outputs"][0]["uninformative"]


def test_quantized_constant_output_is_flagged():
    expected = np.full((1, 1000), -128, np.int8)  # `int8 1x1000 [-128, -128]`
    row = compare("probs", expected.copy(), expected)
    assert row.passed and row.uninformative and row.verdict == "PASS (uninformative)"
    assert row.top1 is None and row.top5 is None
    # one LSB of spread is within the 1 LSB tolerance: still nothing to tell engines apart
    nearly = expected.copy()
    nearly[0, 3] = -127
    assert compare("probs", nearly, nearly).uninformative
    varied = np.arange(-128, 72, dtype=np.int8).reshape(1, 200)
    assert not compare("probs", varied, varied).uninformative


def test_nearly_constant_float_and_single_values():
    assert is_uninformative(np.array([0.001, 0.0010000005]), tolerance_span=0.0)  # within 1e-3 of magnitude
    assert not is_uninformative(np.array([0.001, 0.9]), tolerance_span=1e-4)
    assert not is_uninformative(np.array([3.0]), tolerance_span=1.0)  # one value: nothing can vary


def test_top_k_is_not_claimed_on_ties():
    expected = np.zeros((1, 10), np.float32)
    assert top_k_agreement(expected, expected) == (None, None)
    rows = np.tile(np.arange(10, dtype=np.float32), (2, 1))
    rows[1, 9] = 8.0  # row 1: classes 8 and 9 tie for the best; its 5th and 6th best differ
    actual = rows.copy()
    top1, top5 = top_k_agreement(actual, rows)
    assert (top1, top5) == (1.0, 1.0)  # top-1 over row 0 only, top-5 over both rows
    tied5 = np.array([[9, 8, 7, 6, 5, 5, 3, 2, 1, 0]], np.float32)  # 5th and 6th tie: no top-5 set
    assert top_k_agreement(tied5, tied5) == (1.0, None)


def _cancelling_model() -> bytes:
    """x -> ADD 1000 -> a -> SUB 1000 -> y: SUB cancels the large offset, so a difference within ADD's
    tolerance (relative to its ~1000 range) is far out of SUB's (relative to ~1)."""
    b = TfliteBuilder()
    shape = (1, 4, 4, 2)
    x = b.input("x", shape, np.float32)
    big = b.const("big", np.full(shape, 1000.0, np.float32))
    a, y = b.tensor("a", shape, np.float32), b.tensor("y", shape, np.float32)
    b.op(B.ADD, [x, big], [a], AddOptions())
    b.op(B.SUB, [a, big], [y], SubOptions())
    b.output(y)
    return b.finish()


def test_per_op_table_shows_where_divergence_starts(tmp_path, runner, monkeypatch):
    real = KERNELS[OperationType.ADD]

    def slightly_off(call):  # a test-only fault within ADD's tolerance (1e-5 + 1e-4 x ~1001 = 0.1)
        return [np.asarray(o) + np.float32(0.05) for o in real(call)]
    monkeypatch.setitem(KERNELS, OperationType.ADD, slightly_off)
    path = tmp_path / "cancel.tflite"
    path.write_bytes(_cancelling_model())
    result = runner.invoke(main, ["verify", str(path), "--per-op", "--format", "json"])
    assert result.exit_code == EXIT_FAILURE, result.output
    data = json.loads(result.stdout)
    assert [e["status"] for e in data["per_op"]] == ["pass", "amplified"]
    assert data["first_divergent_op"] is None
    assert data["divergence_starts_at"]["op"] == "SUB" and data["divergence_starts_at"]["status"] == "amplified"
    table = runner.invoke(main, ["verify", str(path), "--per-op"])
    assert "divergence starts at: #1 SUB -> y (amplified" in table.stdout
    assert "amplified (starts here)" in table.stdout


def test_relaxed_tolerance_scales_with_the_output():
    expected = np.linspace(0.0, 0.015, 40, dtype=np.float32)  # a 0.015-range output
    off = expected + np.float32(0.001)  # 6.7% of the range: passed the old 1e-3 + 1e-2 x range
    assert not compare("y", off, expected, overrides=RELAXED_TOLERANCE).passed
    close = expected + np.float32(1e-4)  # 0.7% of the range: a few fp16 roundings
    assert compare("y", close, expected, overrides=RELAXED_TOLERANCE).passed
    large = np.linspace(0.0, 100.0, 40, dtype=np.float32)
    assert compare("y", large + np.float32(0.5), large, overrides=RELAXED_TOLERANCE).passed


def test_check_over_a_folder_reports_the_readable_models(folder, runner):
    result = runner.invoke(main, ["check", str(folder), "--format", "json"])
    assert result.exit_code == EXIT_BAD_INPUT, result.output  # one model could not be checked
    data = json.loads(result.stdout)
    assert [m["model"].rsplit("/", 1)[-1] for m in data["models"]] == ["a_chain.tflite", "c_chain.tflite"]
    assert [e["model"].rsplit("/", 1)[-1] for e in data["errors"]] == ["b_broken.tflite"]
    assert data["errors"][0]["exit_code"] == EXIT_BAD_INPUT and "\n" not in data["errors"][0]["error"]
    table = runner.invoke(main, ["check", str(folder)])
    assert "1 model could not be checked" in table.stderr and "b_broken.tflite" in table.stderr
    # issue 35: the model that could not be checked is a row of the table too, as in `verify` (it was stderr only)
    assert "3 models at API 30 (NNAPI feature level 4), 1 could not be checked" in table.stdout
    assert "b_broken.tflite: ERROR " in table.stdout or "b_broken.tflite" in table.stdout.split("total")[0]
    quiet = runner.invoke(main, ["check", str(folder), "-q"])
    assert [line.split(":")[0] for line in quiet.stdout.splitlines()] == ["a_chain.tflite", "c_chain.tflite",
                                                                          "b_broken.tflite"]
    assert data["errors"][0]["name"] == "b_broken.tflite" and data["models"][0]["name"] == "a_chain.tflite"
    matrix = runner.invoke(main, ["check", str(folder), "--api-level", "all", "--format", "json"])
    assert matrix.exit_code == EXIT_BAD_INPUT and len(json.loads(matrix.stdout)["errors"]) == 1


def test_check_folder_policy_failure_wins_over_unreadable(folder, runner, tmp_path):
    custom = folder / "d_custom.tflite"
    custom.write_bytes(single_op_model(B.CUSTOM, [("x", (1, 4), np.float32)], [("y", (1, 4), np.float32)],
                                       custom_code="NnconvNoSuchOp"))
    result = runner.invoke(main, ["check", str(folder), "--fail-on", "refused", "-q"])
    assert result.exit_code == EXIT_FAILURE, result.output
    assert "policy violated" in result.stderr and "b_broken.tflite" in result.stderr


def test_verify_folder_parity_failure_wins_over_unreadable(folder, runner, monkeypatch):
    real = KERNELS[OperationType.MUL]
    monkeypatch.setitem(KERNELS, OperationType.MUL, lambda call: [np.asarray(o) + 1 for o in real(call)])
    result = runner.invoke(main, ["verify", str(folder), "--format", "json"])
    assert result.exit_code == EXIT_FAILURE, result.output
    assert [m["status"] for m in json.loads(result.stdout)["models"]] == ["fail", "error", "fail"]


def test_no_allow_partial_hint_when_tflite_cannot_run_the_model(tmp_path, runner):
    path = tmp_path / "custom.tflite"
    path.write_bytes(single_op_model(B.CUSTOM, [("x", (1, 4), np.float32)], [("y", (1, 4), np.float32)],
                                     custom_code="NnconvNoSuchOp"))
    result = runner.invoke(main, ["verify", str(path)])
    assert result.exit_code == EXIT_NOT_CONVERTIBLE
    assert "--allow-partial" not in result.stderr and "TFLite cannot run it either" in result.stderr
    assert "nnconv check" in result.stderr


def test_allow_partial_is_still_offered_where_it_works(runner):
    import pathlib
    model = pathlib.Path(__file__).resolve().parents[2] / "examples" / "models" / "custom_op_middle.tflite"
    result = runner.invoke(main, ["verify", str(model), "--target", "nnconv"])
    assert result.exit_code == EXIT_NOT_CONVERTIBLE and "--allow-partial" in result.stderr


@pytest.mark.parametrize("args,code", [
    pytest.param(["ops"], EXIT_OK, id="ops-table"),
    pytest.param(["ops", "--format", "json"], EXIT_OK, id="ops-json"),
    pytest.param(["verify", "{model}", "--format", "json"], EXIT_OK, id="verify-json"),
    pytest.param(["check", "{model}"], EXIT_OK, id="check-table"),
    pytest.param(["check", "{broken}"], EXIT_BAD_INPUT, id="check-bad-input"),
])
def test_a_closed_pipe_keeps_the_verdict(tmp_path, args, code):
    model = tmp_path / "chain.tflite"
    model.write_bytes(add_mul_sub_chain())
    broken = tmp_path / "broken.tflite"
    broken.write_bytes(b"TFL3 junk")
    argv = [a.format(model=model, broken=broken) for a in args]
    proc = subprocess.Popen([sys.executable, "-m", "nnconv", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before the first byte (`| head -0`)
    stderr = proc.stderr.read().decode()
    assert proc.wait() == code, stderr
    assert "Traceback" not in stderr and "internal error" not in stderr


def test_float_tolerance_is_relative_to_the_magnitude_and_says_so(tmp_path, runner):
    """Issue 35: the code judged against max|value| while the table and the docs said "range". An output with
    an offset ([-11.1, -11.0]) rounds as values near 11 do: 5e-4 is within 1e-5 + 1e-4 x 11.1 (it would
    fail a tolerance on the span, 1e-5 + 1e-4 x 0.1); the table, JSON and docs name the magnitude."""
    expected = np.linspace(-11.1, -11.0, 16, dtype=np.float32).reshape(1, 16)
    row = compare("y", expected + np.float32(5e-4), expected)
    assert row.passed and row.tolerance.describe() == "|diff| <= 1e-05 + 0.0001 * max |expected|"
    assert not compare("y", expected + np.float32(2e-3), expected).passed  # 1.12e-3 is the bound
    path = tmp_path / "add.tflite"
    path.write_bytes(add_mul_sub_chain())
    res = runner.invoke(main, ["verify", str(path)])
    assert "max |expected|" in res.stdout and "range" not in res.stdout.replace("[min, max]", "")
    docs = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "verify.md").read_text()
    assert "1e-5 + 1e-4 x max \\|expected\\|" in docs and "1e-4 x range" not in docs


def test_uninformative_with_per_op_says_what_the_intermediates_show(tmp_path, runner, monkeypatch):
    """Issue 35: a constant output with `--per-op` given still recommended `--per-op`, while the per-op table
    showed intermediates out of tolerance: the verdict and the detail now say what the intermediates show."""
    b = TfliteBuilder()
    x = b.input("x", (1, 20), np.float32)
    a, m, y = (b.tensor(n, (1, 20), np.float32) for n in ("a", "m", "y"))
    b.op(B.SUB, [x, b.const("c1", np.full((1, 20), 0.5, np.float32))], [a], SubOptions())
    b.op(B.MUL, [a, b.const("zero", np.zeros((1, 20), np.float32))], [m], MulOptions())
    b.op(B.ADD, [m, b.const("c", np.full((1, 20), 0.001, np.float32))], [y], AddOptions())
    b.output(y)
    path = tmp_path / "flat.tflite"
    path.write_bytes(b.finish())
    real = KERNELS[OperationType.SUB]
    monkeypatch.setitem(KERNELS, OperationType.SUB, lambda call: [o + np.float32(1) for o in real(call)])
    res = runner.invoke(main, ["verify", str(path), "--per-op", "--format", "json"])
    data = json.loads(res.stdout)
    assert data["verdict"] == ("PASS (uninformative: every output is constant on these inputs (y); per-op: 1 of 3 "
                               "intermediates out of tolerance, divergence starts at #0 SUB (divergent); compare on "
                               "other inputs (--image, --inputs, --dataset))")
    assert "--per-op" not in data["outputs"][0]["detail"] and "per-op: 1 of 3" in data["outputs"][0]["detail"]
    monkeypatch.setitem(KERNELS, OperationType.SUB, real)
    clean = json.loads(runner.invoke(main, ["verify", str(path), "--per-op", "--format", "json"]).stdout)
    assert "per-op: all 3 intermediates within tolerance" in clean["verdict"]


def test_reference_runs_say_what_they_compare_with_and_warn_without_inputs(tmp_path, runner):
    """Issue 35: `--reference` titled its table "(TFLite reference outputs out/ref.npz kernels)", and without
    `--inputs` compared with seeded random inputs in silence (then failed)."""
    path = tmp_path / "chain.tflite"
    path.write_bytes(add_mul_sub_chain())
    ref = tmp_path / "ref.npz"
    assert runner.invoke(main, ["verify", str(path), "--save-reference", str(ref), "-q"]).exit_code == EXIT_OK
    res = runner.invoke(main, ["verify", str(path), "--reference", str(ref)])
    assert res.exit_code == EXIT_OK, res.output
    assert f"(against reference outputs {ref})" in res.stdout and "kernels)" not in res.stdout
    assert "warning: --reference without --inputs: our executor ran on seeded random inputs (seed 0)" in \
        " ".join(res.stderr.split())
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x=np.zeros(CHAIN_SHAPE, np.float32))
    given = runner.invoke(main, ["verify", str(path), "--reference", str(ref), "--inputs", str(inputs)])
    assert given.exit_code == EXIT_FAILURE and "--reference without --inputs" not in given.stderr


def test_verbose_verify_gives_timings_and_the_inputs_quantization(tmp_path, runner):
    """Issue 35: the README says `-v` adds timings and the inputs' quantization; `verify -v` printed neither."""
    from harness import QuantParams
    path = tmp_path / "int8_add.tflite"
    q = QuantParams(0.05, -3)
    path.write_bytes(single_op_model(B.ADD, [("x", (1, 4, 3), np.int8, q), ("c", np.full((1, 4, 3), 5, np.int8), q)],
                                     [("y", (1, 4, 3), np.int8, q)], AddOptions()))
    res = runner.invoke(main, ["verify", str(path), "-v", "--seed", "3"])
    assert res.exit_code == EXIT_OK, res.output
    assert "input 'x': int8 1x4x3, scale 0.05, zero point -3; seeded random values (seed 3)" in res.stderr
    timings = next(line for line in res.stderr.splitlines() if line.startswith("timings: "))
    assert "convert " in timings and "compare " in timings
    assert "timings" not in runner.invoke(main, ["verify", str(path)]).stderr
