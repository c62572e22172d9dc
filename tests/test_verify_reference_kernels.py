"""Partition-wise verify: quantized outputs that miss TFLite's optimized kernels pass when they are within
tolerance of TFLite's reference kernels (the NNAPI reference arithmetic), and say so."""

from __future__ import annotations

import numpy as np

import nnconv.parity.partitioned as partitioned
from harness import QuantParams, TfliteBuilder
from nnconv.pipeline import prepare
from nnconv.tflite.options import AddOptions
from nnconv.tflite.schema_enums import BuiltinOperator


def int8_model(tmp_path) -> str:
    """Two int8 ADDs, verified as one partition through `verify_partitions` directly."""
    q = QuantParams(0.05, -3)
    b = TfliteBuilder()
    x = b.input("x", (2, 5, 3), np.int8, quant=q)
    y = b.tensor("y", (2, 5, 3), np.int8, quant=QuantParams(0.1, 2))
    z = b.tensor("z", (2, 5, 3), np.int8, quant=QuantParams(0.2, -1))
    b.op(BuiltinOperator.ADD, [x, x], [y], AddOptions())
    b.op(BuiltinOperator.ADD, [y, y], [z], AddOptions())
    b.output(z)
    path = tmp_path / "int8.tflite"
    path.write_bytes(b.finish())
    return str(path)


def test_partition_outputs_fall_back_to_the_reference_kernels(tmp_path, monkeypatch):
    path = int8_model(tmp_path)
    prepared = prepare(path, 30)
    converted = prepared.whole().converted
    real_compare = partitioned.compare
    phase = {"reference": False}

    def compare(name, actual, expected, hybrid=False, overrides=None, source=None):
        o = real_compare(name, actual, expected, hybrid, overrides, source)
        if not phase["reference"]:
            o.passed, o.max_lsb = False, 3  # as if TFLite's optimized kernels rounded 3 LSB away
        return o

    real_recheck = partitioned._recheck_with_reference_kernels

    def recheck(*args, **kwargs):
        phase["reference"] = True
        return real_recheck(*args, **kwargs)

    monkeypatch.setattr(partitioned, "compare", compare)
    monkeypatch.setattr(partitioned, "_recheck_with_reference_kernels", recheck)
    report = partitioned.verify_partitions(prepared, [converted])
    assert report.passed
    assert report.outputs[0].detail.startswith("within tolerance of TFLite's reference kernels")
    assert "differ by up to 3 LSB" in report.outputs[0].detail

    phase["reference"] = False
    monkeypatch.setattr(partitioned, "_recheck_with_reference_kernels", real_recheck)  # stays failing
    report = partitioned.verify_partitions(prepared, [converted])
    assert not report.passed


def test_xnnpack_outputs_are_settled_and_say_so(tmp_path, monkeypatch):
    """Issue 35: `--kernels xnnpack` failed a quantized output with no detail (only the builtin kernels were
    re-judged against TFLite's reference kernels); XNNPACK's own rounding is settled the same way."""
    import nnconv.parity.partitioned as whole
    import nnconv.parity.settle as settle
    from nnconv.parity.partitioned import verify_model
    path = int8_model(tmp_path)
    real = whole.run_parity

    def xnnpack_off_by_three(source, converted, feed, kernels="builtin", runner=None, **options):
        report = real(source, converted, feed, kernels=kernels, **options)
        if kernels == "xnnpack":
            for o in report.outputs:
                o.passed, o.max_lsb = False, 3  # as if XNNPACK rounded 3 LSB away
        return report

    monkeypatch.setattr(whole, "run_parity", xnnpack_off_by_three)
    monkeypatch.setattr(settle, "run_parity", xnnpack_off_by_three)
    report = verify_model(path, 30, kernels="xnnpack")
    (out,) = report.outputs
    assert report.passed and out.settled_by == "reference kernels"
    assert out.detail.startswith("within tolerance of TFLite's reference kernels (max 0 LSB)")
    assert "TFLite's xnnpack kernels differ by up to 3 LSB" in out.detail


def test_per_op_says_which_kernels_it_compared_with_and_why(tmp_path):
    """Issue 35: with `--kernels xnnpack`, `--per-op` compared with other kernels (XNNPACK hides the
    intermediates; the reference kernels when they explain more) without saying why they are not XNNPACK."""
    from click.testing import CliRunner
    from nnconv.cli import main
    from nnconv.parity.session import VerifyOptions, verify
    path = int8_model(tmp_path)
    report = verify(path, VerifyOptions(kernels="xnnpack", per_op=True))
    assert report.per_op.kernels in ("builtin", "reference")
    assert report.per_op.kernels_note.startswith("not --kernels xnnpack")
    assert report.to_json()["per_op_kernels_note"] == report.per_op.kernels_note
    res = CliRunner().invoke(main, ["verify", path, "--kernels", "xnnpack", "--per-op"])
    assert f"per-op parity (against TFLite's {report.per_op.kernels} kernels, not --kernels xnnpack" in res.stdout
    assert verify(path, VerifyOptions(per_op=True)).per_op.kernels_note == ""  # builtin kernels, as asked
