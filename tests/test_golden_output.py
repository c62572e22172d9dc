"""Golden outputs of `check`, `convert` and `verify` on the fixture models at 80 and 120 columns: what a user
sees, byte for byte (stdout, stderr and exit code), so a rendering change shows up as a reviewed diff.

Regenerate after an intended change (then read the diff of tests/golden/ before committing):

    NNCONV_UPDATE_GOLDEN=1 python -m pytest tests/test_golden_output.py -q -p no:cacheprovider
"""

from __future__ import annotations

import os
import pathlib
import re

import pytest
from click.testing import CliRunner

from nnconv.cli import main

ROOT = pathlib.Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
MODELS = "examples/models"

CASES = {
    "check-mobilenet_v3_int8": ["check", f"{MODELS}/mobilenet_v3_int8.tflite", "--target", "nnconv"],
    "check-mobilenet_v3_int8-api27": ["check", f"{MODELS}/mobilenet_v3_int8.tflite", "--api-level", "27",
                                      "--target", "nnconv"],
    "check-custom_op_middle": ["check", f"{MODELS}/custom_op_middle.tflite", "--target", "nnconv"],
    "convert-custom_op_middle-partial-relax27": ["convert", f"{MODELS}/custom_op_middle.tflite", "-o",
                                                 "cop.nnapi", "--allow-partial", "--relax-fp16",
                                                 "--api-level", "27"],
    "convert-custom_op_middle-refused": ["convert", f"{MODELS}/custom_op_middle.tflite", "-o", "cop.nnapi",
                                         "--target", "nnconv"],
    "convert-mobilenet_v2_float-verbose": ["convert", f"{MODELS}/mobilenet_v2_float.tflite", "-o",
                                           "m.nnapi", "--api-level", "29", "-v"],
    "verify-mobilenet_v2_float": ["verify", f"{MODELS}/mobilenet_v2_float.tflite", "--api-level", "29"],
    "verify-mobilenet_v3_int8": ["verify", f"{MODELS}/mobilenet_v3_int8.tflite", "--target", "nnconv"],
}


# A float error measured against TFLite (`1.49e-08`) is a few ulps whose count the BLAS kernel numpy picks
# for this CPU decides (SkylakeX OpenBLAS kernels give 2.98e-08 on the same model): keep its width and place,
# so the layout is still checked byte for byte, and mask the digits. Exact values (0, LSB counts, scales,
# tolerances) are printed without an exponent mantissa and stay as they are.
_BACKEND_FLOAT = re.compile(r"\b\d\.\d+e[-+]\d+\b")


def _mask_backend_digits(match: re.Match) -> str:
    return re.sub(r"\d", "#", match.group(0))


def _normalise(text: str) -> str:
    lines = text.splitlines()
    # timings vary from run to run: keep the phases, not the durations
    lines = ["timings: <varies>" if line.startswith("timings: ") else line for line in lines]
    return "\n".join(_BACKEND_FLOAT.sub(_mask_backend_digits, line) for line in lines)


def render(args: list[str], columns: int) -> str:
    result = CliRunner().invoke(main, args, env={"COLUMNS": str(columns), "NO_COLOR": "1"}, prog_name="nnconv")
    return (f"$ COLUMNS={columns} nnconv {' '.join(args)}\n--- stdout\n{_normalise(result.stdout)}\n"
            f"--- stderr\n{_normalise(result.stderr)}\n--- exit {result.exit_code}\n")


@pytest.mark.parametrize("columns", [80, 120])
@pytest.mark.parametrize("name", sorted(CASES))
def test_golden(name, columns, tmp_path, monkeypatch):
    # Every path in the output is the relative one of the command line, so wrapping never depends on where
    # pytest puts its temporary folders: run in tmp_path (outputs land there) with the models linked in.
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    got = render(CASES[name], columns)
    path = GOLDEN / f"{name}.{columns}.txt"
    if os.environ.get("NNCONV_UPDATE_GOLDEN"):
        path.write_text(got)
    assert path.exists(), f"{path} is missing: run NNCONV_UPDATE_GOLDEN=1 python -m pytest {__file__}"
    assert got == path.read_text(), (f"{path.name} differs; if the change is intended, regenerate "
                                     "(see this module's docstring)")


def test_lines_fit_the_width_unless_one_identifier_is_longer():
    for path in GOLDEN.glob("*.txt"):
        columns = int(path.name.rsplit(".", 2)[1])
        for line in path.read_text().splitlines():
            if line.startswith(("$ ", "nnconv: error: ")) or len(line) <= columns:
                continue  # the command, and the error line (one line by promise, for grep and CI logs)
            # only a single unbreakable word (a long TFLite tensor name or path) may overflow
            assert any(len(w) > columns // 2 for w in line.split()), f"{path.name}: {line!r}"


def test_backend_digits_are_masked_at_their_width():
    # The same verify line from two BLAS kernels normalises to one text, and keeps its width.
    a = _normalise("    max |diff| 1.49e-08, max rel 5.14e-08, top-1/5 100%/100%")
    b = _normalise("    max |diff| 2.98e-08, max rel 1.03e-07, top-1/5 100%/100%")
    assert a == b and len(a) == len("    max |diff| 1.49e-08, max rel 5.14e-08, top-1/5 100%/100%")
    assert _normalise("tolerance: |diff| <= 1e-05 + 0.0001 * max |expected|, 0 LSB") == \
        "tolerance: |diff| <= 1e-05 + 0.0001 * max |expected|, 0 LSB"


def test_the_readme_verify_sample_is_the_real_output(monkeypatch):
    # The README shows one verify run at the width of a pipe (160 columns); it had drifted from the table
    # verify prints (columns the default table no longer has). Refresh it with the command's real output.
    monkeypatch.chdir(ROOT)  # the README's paths are relative to the repository
    readme = (ROOT / "README.md").read_text()
    command = "nnconv verify examples/models/mobilenet_v2_int8.tflite --per-op --kernels reference --max-lsb 0"
    shown = readme.split(f"$ {command}\n", 1)[1].split("```", 1)[0]
    result = CliRunner().invoke(main, command.split()[1:], env={"COLUMNS": "160", "NO_COLOR": "1"},
                                prog_name="nnconv")
    assert result.exit_code == 1
    assert _normalise(shown) == _normalise(result.stdout), "README's verify sample differs from the real output"
