"""Hostile paths, sizes and signals at the command line: outputs that are not files, --max-memory, Ctrl-C."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from click.testing import CliRunner

from harness import TfliteBuilder, single_op_model
from nnconv.cli import main
from nnconv.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_OK
from nnconv.nnapi import serialize
from nnconv.nnapi.memory import constant_bytes, peak_live_bytes, peak_memory
from nnconv.tflite.options import AddOptions, Conv2DOptions, MulOptions
from nnconv.tflite.schema_enums import BuiltinOperator, Padding

ROOT = pathlib.Path(__file__).resolve().parent.parent


def add_model(shape=(2, 3)) -> bytes:
    return single_op_model(BuiltinOperator.ADD, [("x", shape, np.float32), ("k", np.ones(shape, np.float32))],
                           [("y", shape, np.float32)], AddOptions())


def one_error_line(result, code: int) -> str:
    assert result.exit_code == code, (result.exit_code, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("nnconv: error: "), result.stderr
    return lines[0]


@pytest.fixture
def model(tmp_path) -> pathlib.Path:
    p = tmp_path / "m.tflite"
    p.write_bytes(add_model())
    return p


@pytest.mark.parametrize("output,fragment", [
    pytest.param(".", "is a directory; give a file name", id="directory"),
    pytest.param("/dev/null", "is not a regular file (a device); refusing to replace it", id="device"),
])
def test_convert_refuses_outputs_that_are_not_files(tmp_path, model, output, fragment):
    result = CliRunner().invoke(main, ["convert", str(model), "-o", output])
    assert fragment in one_error_line(result, EXIT_BAD_INPUT)
    assert os.path.isdir(".") and not os.path.isfile("/dev/null")


def test_emit_c_to_a_directory_is_refused_before_writing_anything(tmp_path, model):
    out = tmp_path / "m.nnapi"
    result = CliRunner().invoke(main, ["convert", str(model), "-o", str(out), "--emit-c", str(tmp_path)])
    assert "is a directory" in one_error_line(result, EXIT_BAD_INPUT)
    assert not out.exists()


def test_convert_follows_a_symlink_to_its_file(tmp_path, model):
    real = tmp_path / "real.nnapi"
    real.write_bytes(b"old")
    link = tmp_path / "link.nnapi"
    link.symlink_to(real)
    result = CliRunner().invoke(main, ["convert", str(model), "-o", str(link)])
    assert result.exit_code == EXIT_OK, result.stderr
    assert link.is_symlink() and serialize.load(real).partitions


def run_args(tmp_path, model_path, *extra, shape=(2, 3)) -> list[str]:
    nnapi = tmp_path / "m.nnapi"
    assert CliRunner().invoke(main, ["convert", str(model_path), "-o", str(nnapi)]).exit_code == EXIT_OK
    np.savez(tmp_path / "in.npz", x=np.ones(shape, np.float32))
    return ["run", str(nnapi), "--inputs", str(tmp_path / "in.npz"), "-o", str(tmp_path / "out.npz"), *extra]


def test_run_output_to_a_directory_is_one_line(tmp_path, model):
    args = run_args(tmp_path, model)
    args[-1] = str(tmp_path)
    assert "is a directory" in one_error_line(CliRunner().invoke(main, args), EXIT_BAD_INPUT)


def test_run_refuses_a_model_over_max_memory_with_the_figure(tmp_path):
    big = tmp_path / "big.tflite"
    big.write_bytes(add_model((256, 1024)))  # 1 MiB per tensor: constant + input + output = 3 MiB
    result = CliRunner().invoke(main, run_args(tmp_path, big, "--max-memory", "2M", shape=(256, 1024)))
    line = one_error_line(result, EXIT_BAD_INPUT)
    assert "needs at least 3 MiB to execute" in line and "over the 2 MiB allowed (--max-memory)" in line
    assert not (tmp_path / "out.npz").exists()
    ok = CliRunner().invoke(main, run_args(tmp_path, big, "--max-memory", "4M", shape=(256, 1024)))
    assert ok.exit_code == EXIT_OK, ok.stderr


def test_max_memory_syntax_errors_are_one_line(tmp_path, model):
    result = CliRunner().invoke(main, run_args(tmp_path, model, "--max-memory", "lots"))
    assert "give a size such as 512M" in one_error_line(result, EXIT_BAD_INPUT)


def test_verify_refuses_before_running_either_engine(tmp_path):
    big = tmp_path / "big.tflite"
    big.write_bytes(add_model((256, 1024)))
    result = CliRunner().invoke(main, ["verify", str(big), "--max-memory", "1M"])
    assert "over the 1 MiB allowed (--max-memory)" in one_error_line(result, EXIT_BAD_INPUT)


def test_peak_memory_frees_intermediates_after_their_last_use():
    """x -> a -> b -> y, each 4x4 float32 (64 bytes): at most two values live at once beyond the input."""
    import nnconv
    b = TfliteBuilder()
    x = b.input("x", (4, 4), np.float32)
    k = b.const("k", np.ones((4, 4), np.float32))
    t1, t2, y = (b.tensor(n, (4, 4), np.float32) for n in ("a", "b", "y"))
    b.op(BuiltinOperator.ADD, [x, k], [t1], AddOptions())
    b.op(BuiltinOperator.MUL, [t1, k], [t2], MulOptions())
    b.op(BuiltinOperator.ADD, [t2, k], [y], AddOptions())
    b.output(y)
    model = nnconv.convert(b.finish(), api_level=30).converted.model
    assert constant_bytes(model) >= 64
    # x stays (a model input), a and b overlap at the MUL, then b and y at the last ADD: 3 x 64.
    assert peak_live_bytes(model) == 3 * 64
    assert peak_memory(model) == constant_bytes(model) + 3 * 64


def test_keyboard_interrupt_in_a_command_is_one_line_exit_130(tmp_path, model, monkeypatch):
    from nnconv import pipeline

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(pipeline, "lower_ops", interrupted)  # nnconv's own lowering: the nnconv target
    out = tmp_path / "o.nnapi"
    result = CliRunner().invoke(main, ["convert", str(model), "--target", "nnconv", "-o", str(out)])
    assert result.exit_code == EXIT_INTERRUPTED
    assert result.stderr == "nnconv: interrupted\n" and not out.exists()


def _has_mapped(pid: int, library: str) -> bool:
    """True once a shared library whose path contains `library` is mapped into the process (Linux /proc)."""
    try:
        with open(f"/proc/{pid}/maps") as f:
            return library in f.read()
    except OSError:
        return False


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def conv_chain_model(layers: int = 32, side: int = 192, channels: int = 32) -> bytes:
    """A chain of 3x3 float convolutions: over a second of verify work (both engines) after TFLite's
    library is mapped, so that a signal sent at that moment arrives before the command ends even when the
    test's process waits for a CPU (with a 64x64 ADD the command often ended first under `-n 2`)."""
    rng = np.random.default_rng(0)
    b = TfliteBuilder()
    x = b.input("x", (1, side, side, channels), np.float32)
    for k in range(layers):
        y = b.tensor(f"y{k}", (1, side, side, channels), np.float32)
        w = b.const(f"w{k}", (rng.standard_normal((channels, 3, 3, channels)) * 0.05).astype(np.float32))
        b.op(BuiltinOperator.CONV_2D, [x, w, b.const(f"b{k}", np.zeros(channels, np.float32))], [y],
             Conv2DOptions(padding=Padding.SAME, stride_w=1, stride_h=1))
        x = y
    b.output(x)
    return b.finish()


# The moment of each signal, told by what the process has loaded rather than by a delay (which a fast
# machine outruns and a loaded one never reaches): numpy's C core is mapped while nnconv's entry point
# imports the package's modules (a signal during the interpreter's own start-up, before `site` is
# imported, ends Python itself: no program can answer it); TFLite's interpreter library is mapped only
# when verify, past its imports, starts the TFLite side of the comparison.
@pytest.mark.parametrize("library", ["_multiarray_umath", "_pywrap_litert_interpreter_wrapper"],
                         ids=["during-imports", "during-work"])
def test_sigint_to_the_process_is_one_line_exit_130(tmp_path, library):
    """A real Ctrl-C (SIGINT) at two moments: while nnconv's modules are being imported, and during the
    work (verify running TFLite)."""
    model = tmp_path / "m.tflite"
    model.write_bytes(conv_chain_model())
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1")
    # the child starts with SIGINT's default action whatever this worker's is: an ignored signal is
    # inherited, and Python then installs no KeyboardInterrupt handler
    proc = subprocess.Popen([sys.executable, "-m", "nnconv", "verify", str(model)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, cwd=tmp_path, preexec_fn=_default_sigint)
    deadline = time.monotonic() + 30
    while not (seen := _has_mapped(proc.pid, library)) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.001)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    if proc.returncode == EXIT_OK:  # a loaded machine may be slow or fast
        pytest.skip(f"the command finished before the signal arrived (library seen mapped: {seen})")
    assert proc.returncode == EXIT_INTERRUPTED, err
    assert err.decode() == "nnconv: interrupted\n"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def _interrupt_the_rename(*args, **kwargs):
    raise KeyboardInterrupt  # Ctrl-C after the temporary file is written, just before it replaces the target


@pytest.mark.parametrize("command,outputs", [
    pytest.param(["convert", "{m}", "-o", "{d}/o.nnapi"], ["o.nnapi"], id="convert-nnapi"),
    pytest.param(["convert", "{m}", "-o", "{d}/o.nnapi", "--emit-c", "{d}/o.c"], ["o.nnapi", "o.c", "o.h"],
                 id="convert-emit-c"),
    pytest.param(["run", "{d}/m.nnapi", "--inputs", "{d}/in.npz", "-o", "{d}/out.npz"], ["out.npz"], id="run-npz"),
    pytest.param(["verify", "{m}", "--save-reference", "{d}/ref.npz"], ["ref.npz"], id="verify-save-reference"),
    pytest.param(["verify", "{m}", "--per-op", "--node-data", "{d}/nd.json"], ["nd.json"], id="verify-node-data"),
    pytest.param(["check", "{m}", "--node-data", "{d}/nd.json"], ["nd.json"], id="check-node-data"),
])
def test_every_output_is_atomic_and_ctrl_c_leaves_the_old_file(tmp_path, model, monkeypatch, command, outputs):
    """Each file a command writes goes through nnconv.safe_write: interrupted at the last moment, the command
    exits 130 with one line, every target keeps its old bytes and no temporary file is left."""
    from nnconv import safe_write
    work = tmp_path / "work"
    work.mkdir()
    assert CliRunner().invoke(main, ["convert", str(model), "-o", str(work / "m.nnapi")]).exit_code == EXIT_OK
    np.savez(work / "in.npz", x=np.ones((2, 3), np.float32))
    for name in outputs:
        (work / name).write_bytes(b"old")
    before = sorted(p.name for p in work.iterdir())
    monkeypatch.setattr(safe_write, "_mode_for", _interrupt_the_rename)
    args = [a.format(m=model, d=work) for a in command]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == EXIT_INTERRUPTED, result.stderr
    assert result.stderr.splitlines()[-1] == "nnconv: interrupted"
    assert all((work / name).read_bytes() == b"old" for name in outputs)
    assert sorted(p.name for p in work.iterdir()) == before  # no temporary file left behind


def test_docs_errors_names_every_exit_code_and_error_class():
    """docs/errors.md is the list of outcomes: every NnconvError subclass and every exit code appears in it."""
    import nnconv.nnapi.ndk.check  # noqa: F401 - define the error classes of the lazily imported modules
    import nnconv.parity.tflite_runner  # noqa: F401
    import nnconv.report.analysis  # noqa: F401
    from nnconv import errors
    text = (ROOT / "docs" / "errors.md").read_text()
    classes, todo = set(), [errors.NnconvError]
    while todo:
        cls = todo.pop()
        classes.add(cls.__name__)
        todo += cls.__subclasses__()
    assert not [name for name in sorted(classes) if f"`{name}`" not in text]
    codes = [getattr(errors, n) for n in dir(errors) if n.startswith("EXIT_")]
    assert not [code for code in codes if f"\n| {code} |" not in text]
