"""The `nnconv` command line: exit codes, one-line errors, formats, NO_COLOR, `python -m`."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from harness import TfliteBuilder, single_op_model
from nnconv.cli import main
from nnconv.errors import EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_NOT_CONVERTIBLE, EXIT_OK
from nnconv.runtime.kernels import KERNELS
from nnconv.nnapi import serialize
from nnconv.nnapi.enums import OperationType
from nnconv.tflite.options import Conv2DOptions
from nnconv.tflite.schema_enums import BuiltinOperator, Padding

ROOT = pathlib.Path(__file__).resolve().parent.parent
RNG = np.random.default_rng(23)
X_SHAPE, Y_SHAPE = (1, 9, 7, 3), (1, 9, 7, 4)


def conv_tflite(act: int = 0) -> bytes:
    w = RNG.standard_normal((4, 3, 2, 3)).astype(np.float32)
    b = RNG.standard_normal(4).astype(np.float32)
    opts = Conv2DOptions(padding=Padding.SAME, stride_w=1, stride_h=1, fused_activation_function=act)
    return single_op_model(BuiltinOperator.CONV_2D, [("x", X_SHAPE, np.float32), ("w", w), ("b", b)],
                           [("y", Y_SHAPE, np.float32)], opts)


def refused_tflite() -> bytes:
    """Three ops NNAPI refuses for three different reasons: a conv with the SIGN_BIT activation, a custom op
    and a builtin without a lowering."""
    b = TfliteBuilder()
    x = b.input("x", X_SHAPE, np.float32)
    w = b.const("w", RNG.standard_normal((4, 3, 2, 3)).astype(np.float32))
    y = b.tensor("y", Y_SHAPE, np.float32)
    b.op(BuiltinOperator.CONV_2D, [x, w, -1], [y], Conv2DOptions(padding=Padding.SAME, stride_w=1, stride_h=1,
                                                                 fused_activation_function=5))
    z = b.tensor("z", Y_SHAPE, np.float32)
    b.op(BuiltinOperator.CUSTOM, [y], [z], custom_code="MyFancyOp")
    s = b.tensor("s", Y_SHAPE, np.float32)
    b.op(BuiltinOperator.SEGMENT_SUM, [z, b.const("segments", np.zeros(Y_SHAPE[0], np.int32))], [s])
    b.output(s)
    return b.finish()


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def conv_path(tmp_path) -> pathlib.Path:
    p = tmp_path / "conv.tflite"
    p.write_bytes(conv_tflite())
    return p


@pytest.fixture
def nnapi_path(tmp_path, conv_path, runner) -> pathlib.Path:
    out = tmp_path / "conv.nnapi"
    result = runner.invoke(main, ["convert", str(conv_path), "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    return out


def assert_one_line_error(result, code: int, *fragments: str) -> str:
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("nnconv: error: ")
    assert "Traceback" not in result.output
    for f in fragments:
        assert f in lines[0], lines[0]
    return lines[0]


# -- convert ------------------------------------------------------------------------------------------
def test_convert_writes_a_loadable_file(tmp_path, conv_path, runner):
    out = tmp_path / "m.nnapi"
    result = runner.invoke(main, ["convert", str(conv_path), "-o", str(out), "--api-level", "29"])
    assert result.exit_code == EXIT_OK, result.stderr
    assert "1 TFLite ops -> 1 NNAPI operations at API 29" in result.stderr
    loaded = serialize.load(out)
    assert loaded.api_level == 29 and len(loaded.partitions) == 1
    assert [op.type for op in loaded.partitions[0].model.main.operations] == [OperationType.CONV_2D]


def test_convert_emit_c(tmp_path, conv_path, runner):
    out, c = tmp_path / "m.nnapi", tmp_path / "m.c"
    result = runner.invoke(main, ["convert", str(conv_path), "-o", str(out), "--emit-c", str(c)])
    assert result.exit_code == EXIT_OK, result.stderr
    text = c.read_text()
    assert "ANEURALNETWORKS_CONV_2D" in text and "int conv_p0_create(" in (tmp_path / "m.h").read_text()


def test_refused_model_exits_3_listing_every_refused_op(tmp_path, runner):
    model = tmp_path / "refused.tflite"
    model.write_bytes(refused_tflite())
    out = tmp_path / "refused.nnapi"
    result = runner.invoke(main, ["convert", str(model), "--target", "nnconv", "-o", str(out)])
    assert result.exit_code == EXIT_NOT_CONVERTIBLE, result.stderr
    lines = result.stderr.splitlines()
    assert lines[-1].startswith("nnconv: error: 3 of 3 ops cannot be lowered at API 30; --allow-partial")
    body = "\n".join(lines[:-1])
    for needle in ("op #0 CONV_2D", "op #1", "MyFancyOp", "op #2 SEGMENT_SUM"):
        assert needle in body, result.stderr
    assert "Traceback" not in result.output
    assert not out.exists()


def test_bad_api_level_is_a_usage_error(conv_path, tmp_path, runner):
    result = runner.invoke(main, ["convert", str(conv_path), "-o", str(tmp_path / "m.nnapi"), "--api-level", "26"])
    assert result.exit_code == EXIT_BAD_INPUT
    assert "26 is not one of 27, 28, 29, 30, 31, 32, 33, 34, 35" in result.stderr


@pytest.mark.parametrize("breakage", ["truncated", "random", "identifier", "empty", "missing", "directory"])
@pytest.mark.parametrize("command", ["convert", "verify"])
def test_broken_tflite_is_one_line_exit_2(tmp_path, runner, breakage, command):
    good = conv_tflite()
    path = tmp_path / "broken.tflite"
    if breakage == "truncated":
        path.write_bytes(good[: len(good) // 2])
    elif breakage == "random":
        path.write_bytes(np.random.default_rng(1).integers(0, 256, 700, dtype=np.uint8).tobytes())
    elif breakage == "identifier":
        path.write_bytes(good[:4] + b"TFL2" + good[8:])
    elif breakage == "empty":
        path.write_bytes(b"")
    elif breakage == "directory":
        path.mkdir()
    args = [command, str(path)] + (["-o", str(tmp_path / "out.nnapi")] if command == "convert" else [])
    line = assert_one_line_error(runner.invoke(main, args), EXIT_BAD_INPUT, str(path))
    if breakage == "identifier":
        assert "not a TFLite model" in line


def test_swapped_file_kinds_get_a_hint(tmp_path, runner, conv_path, nnapi_path):
    result = runner.invoke(main, ["convert", str(nnapi_path), "-o", str(tmp_path / "again.nnapi")])
    assert_one_line_error(result, EXIT_BAD_INPUT, "is an .nnapi file written by nnconv, not a TFLite model")
    np.savez(tmp_path / "in.npz", x=np.ones(X_SHAPE, np.float32))
    result = runner.invoke(main, ["run", str(conv_path), "--inputs", str(tmp_path / "in.npz"), "-o",
                                  str(tmp_path / "o.npz")])
    assert_one_line_error(result, EXIT_BAD_INPUT, "is a TFLite model, not an .nnapi file", "nnconv convert")


# -- run ----------------------------------------------------------------------------------------------
def run_with(runner, tmp_path, nnapi_path, arrays: dict | None = None, npz_bytes: bytes | None = None):
    inputs = tmp_path / "in.npz"
    if npz_bytes is not None:
        inputs.write_bytes(npz_bytes)
    else:
        np.savez(inputs, **arrays)
    out = tmp_path / "out.npz"
    return runner.invoke(main, ["run", str(nnapi_path), "--inputs", str(inputs), "-o", str(out)]), out


@pytest.mark.parametrize("key", ["x", "arr_0"])
def test_run_by_name_and_by_position(tmp_path, runner, nnapi_path, key):
    x = RNG.standard_normal(X_SHAPE).astype(np.float32)
    result, out = run_with(runner, tmp_path, nnapi_path, {key: x})
    assert result.exit_code == EXIT_OK, result.stderr
    assert "wrote" in result.stderr and "y float32 1x9x7x4" in result.stderr
    with np.load(out) as data:
        assert data.files == ["y"]
        from nnconv.runtime.executor import Executor
        want = Executor(serialize.load(nnapi_path).partitions[0]).run({"x": x})["y"]
        np.testing.assert_array_equal(data["y"], want)


def test_run_trace_prints_each_operation(tmp_path, runner, nnapi_path):
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x=np.ones(X_SHAPE, np.float32))
    result = runner.invoke(main, ["run", str(nnapi_path), "--inputs", str(inputs), "-o", str(tmp_path / "o.npz"),
                                  "--trace"])
    assert result.exit_code == EXIT_OK
    assert "#0 CONV_2D (TFLite op #0) -> y [" in result.stderr


def test_run_and_verify_with_two_threads(tmp_path, runner, nnapi_path, conv_path):
    """--threads N: the same outputs as one thread; verify runs both engines with N threads and passes."""
    x = RNG.standard_normal(X_SHAPE).astype(np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    outs = []
    for n in ("1", "2"):
        out = tmp_path / f"out{n}.npz"
        result = runner.invoke(main, ["run", str(nnapi_path), "--inputs", str(tmp_path / "in.npz"), "-o", str(out),
                                      "--threads", n])
        assert result.exit_code == EXIT_OK, result.stderr
        with np.load(out) as data:
            outs.append(data["y"])
    np.testing.assert_array_equal(outs[0], outs[1])
    result = runner.invoke(main, ["verify", str(conv_path), "--threads", "2", "--format", "json"])
    assert result.exit_code == EXIT_OK, result.stderr
    result = runner.invoke(main, ["run", str(nnapi_path), "--inputs", str(tmp_path / "in.npz"), "-o",
                                  str(tmp_path / "o.npz"), "--threads", "0"])
    assert result.exit_code == EXIT_BAD_INPUT


@pytest.mark.parametrize("arrays,fragments", [
    pytest.param({"z": np.ones(X_SHAPE, np.float32)}, ("missing input 'x'",), id="missing"),
    pytest.param({"x": np.ones(X_SHAPE, np.float32), "extra": np.ones(2)},
                 ("unknown input array 'extra'", "the model takes 'x' float32[1, 9, 7, 3]"), id="extra"),
    pytest.param({"x": np.ones(X_SHAPE, np.float64)},
                 ("'x' is float64[1, 9, 7, 3]", "takes float32", "np.savez(f, x=x.astype(np.float32))"), id="dtype"),
    pytest.param({"x": np.ones((1, 9, 7, 2), np.float32)}, ("'x' has shape [1, 9, 7, 2]", "[1, 9, 7, 3]"),
                 id="shape"),
    pytest.param({"x": np.ones((9, 7, 3), np.float32)}, ("'x' has shape [9, 7, 3]",), id="rank"),
])
def test_run_bad_inputs_one_line_exit_2(tmp_path, runner, nnapi_path, arrays, fragments):
    result, out = run_with(runner, tmp_path, nnapi_path, arrays)
    assert_one_line_error(result, EXIT_BAD_INPUT, *fragments)
    assert not out.exists()


@pytest.mark.parametrize("content,fragment", [
    pytest.param(b"not a zip file at all", "not an .npz file", id="garbage"),
    pytest.param(b"PK\x03\x04" + b"\0" * 40, "not a readable .npz file", id="broken-zip"),
    pytest.param(b"", "not an .npz file", id="empty"),
])
def test_run_unreadable_npz_one_line_exit_2(tmp_path, runner, nnapi_path, content, fragment):
    result, _ = run_with(runner, tmp_path, nnapi_path, npz_bytes=content)
    assert_one_line_error(result, EXIT_BAD_INPUT, fragment)


def test_run_npy_instead_of_npz(tmp_path, runner, nnapi_path):
    npy = tmp_path / "in.npy"
    np.save(npy, np.ones(X_SHAPE, np.float32))
    result = runner.invoke(main, ["run", str(nnapi_path), "--inputs", str(npy), "-o", str(tmp_path / "o.npz")])
    assert_one_line_error(result, EXIT_BAD_INPUT, "single .npy array")


def test_run_pickled_npz_refused(tmp_path, runner, nnapi_path):
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x=np.array([{"a": 1}], dtype=object))
    result = runner.invoke(main, ["run", str(nnapi_path), "--inputs", str(inputs), "-o", str(tmp_path / "o.npz")])
    assert_one_line_error(result, EXIT_BAD_INPUT, "holds Python objects (pickled data)")


def test_run_missing_npz_and_broken_model(tmp_path, runner, nnapi_path):
    result = runner.invoke(main, ["run", str(nnapi_path), "--inputs", str(tmp_path / "nope.npz"), "-o",
                                  str(tmp_path / "o.npz")])
    assert_one_line_error(result, EXIT_BAD_INPUT, "nope.npz: no such file")
    broken = tmp_path / "broken.nnapi"
    broken.write_bytes(nnapi_path.read_bytes()[:300])
    np.savez(tmp_path / "in.npz", x=np.ones(X_SHAPE, np.float32))
    result = runner.invoke(main, ["run", str(broken), "--inputs", str(tmp_path / "in.npz"), "-o",
                                  str(tmp_path / "o.npz")])
    assert_one_line_error(result, EXIT_BAD_INPUT, "broken.nnapi")


def test_run_unwritable_output(tmp_path, runner, nnapi_path):
    np.savez(tmp_path / "in.npz", x=np.ones(X_SHAPE, np.float32))
    result = runner.invoke(main, ["run", str(nnapi_path), "--inputs", str(tmp_path / "in.npz"), "-o",
                                  str(tmp_path / "no-such-dir" / "o.npz")])
    assert_one_line_error(result, EXIT_BAD_INPUT, "no-such-dir does not exist")


# -- verify -------------------------------------------------------------------------------------------
def test_verify_passes_with_exit_0_and_json(conv_path, runner):
    result = runner.invoke(main, ["verify", str(conv_path), "--format", "json"])
    assert result.exit_code == EXIT_OK, result.stderr
    report = json.loads(result.stdout)
    assert report["passed"] is True
    table = runner.invoke(main, ["verify", str(conv_path)])
    assert table.exit_code == EXIT_OK and "PASS" in table.stdout


def test_verify_parity_failure_exits_1(conv_path, runner, monkeypatch):
    real = KERNELS[OperationType.CONV_2D]

    def off_by_one(call):
        return [out + 1 for out in real(call)]

    monkeypatch.setitem(KERNELS, OperationType.CONV_2D, off_by_one)
    result = runner.invoke(main, ["verify", str(conv_path), "--format", "json"])
    assert result.exit_code == EXIT_FAILURE, result.stderr
    assert json.loads(result.stdout)["passed"] is False
    table = runner.invoke(main, ["verify", str(conv_path)])
    assert table.exit_code == EXIT_FAILURE and "FAIL" in table.stdout


def test_verify_with_inputs_by_position(tmp_path, conv_path, runner):
    np.savez(tmp_path / "in.npz", RNG.standard_normal(X_SHAPE).astype(np.float32))  # stored as arr_0
    result = runner.invoke(main, ["verify", str(conv_path), "--inputs", str(tmp_path / "in.npz")])
    assert result.exit_code == EXIT_OK, result.stderr


# -- ops, colour, entry points ------------------------------------------------------------------------
def test_ops_json_lists_rules(runner):
    result = runner.invoke(main, ["ops", "--format", "json"])
    assert result.exit_code == EXIT_OK
    ops = {o["op"]: o for o in json.loads(result.stdout)["ops"]}
    assert "CONV_2D" in ops and "CONV_2D" in ops["CONV_2D"]["nnapi_ops"]
    assert ops["CONV_2D"]["min_api_level"] == 27


def test_no_color_turns_styles_off(runner):
    styled = runner.invoke(main, ["ops"], env={"FORCE_COLOR": "1", "NO_COLOR": "", "TERM": "xterm-256color"})
    assert styled.exit_code == EXIT_OK
    assert "\x1b[" in styled.stdout  # the check below is meaningful: styles do appear on a terminal
    plain = runner.invoke(main, ["ops"], env={"FORCE_COLOR": "1", "NO_COLOR": "1", "TERM": "xterm-256color"})
    assert plain.exit_code == EXIT_OK
    assert "\x1b[" not in plain.stdout and "CONV_2D" in plain.stdout


@pytest.mark.parametrize("module", ["nnconv", "nnconv.cli"])
def test_python_dash_m_subprocess(tmp_path, conv_path, module):
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1")
    out = tmp_path / "m.nnapi"
    done = subprocess.run([sys.executable, "-m", module, "convert", str(conv_path), "-o", str(out)],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert done.returncode == EXIT_OK, done.stderr
    assert out.stat().st_size > 0
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"\x00" * 64)
    done = subprocess.run([sys.executable, "-m", module, "convert", str(bad), "-o", str(out)],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert done.returncode == EXIT_BAD_INPUT
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("nnconv: error: ")


FIXTURES = ROOT / "examples" / "models"


def test_convert_allow_partial_writes_partitions_and_plan(tmp_path, runner):
    out = tmp_path / "partial.nnapi"
    result = runner.invoke(main, ["convert", str(FIXTURES / "custom_op_middle.tflite"), "-o", str(out),
                                  "--allow-partial"])
    assert result.exit_code == EXIT_OK, result.stderr
    loaded = serialize.load(out)
    assert len(loaded.partitions) == 2
    assert loaded.plan is not None and loaded.plan["partitions_formed"] == 2
    assert [p["ops"] for p in loaded.plan["partitions"]] == [p.tflite_ops for p in loaded.partitions]
    np.savez(tmp_path / "in.npz", audio=np.ones((512, 1), np.float32))
    result = runner.invoke(main, ["run", str(out), "--inputs", str(tmp_path / "in.npz"), "-o",
                                  str(tmp_path / "o.npz")])
    assert_one_line_error(result, EXIT_BAD_INPUT, "holds 2 partitions", "--partition 0..1")
    # One partition at a time: partition 1 starts after the custom op, at the tensor the CPU hands over.
    first = loaded.partitions[1].inputs[0]
    np.savez(tmp_path / "in1.npz", **{first.name: np.ones(first.shape, first.dtype)})
    result = runner.invoke(main, ["run", str(out), "--partition", "1", "--inputs", str(tmp_path / "in1.npz"),
                                  "-o", str(tmp_path / "o1.npz")])
    assert result.exit_code == EXIT_OK, result.stderr
    with np.load(tmp_path / "o1.npz") as data:
        assert data.files == [o.name for o in loaded.partitions[1].outputs]
    result = runner.invoke(main, ["run", str(out), "--partition", "2", "--inputs", str(tmp_path / "in1.npz"),
                                  "-o", str(tmp_path / "o1.npz")])
    assert result.exit_code == EXIT_BAD_INPUT and "partitions 0..1" in result.stderr
