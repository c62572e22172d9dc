"""The pre-commit hook of `.pre-commit-hooks.yaml`: what pre-commit runs (the entry, then the hook's args,
then the changed files its `files` pattern selects) passes on models NNAPI takes whole and fails, with the
policy's line, on a model with a refused op."""

from __future__ import annotations

import pathlib
import re
import shlex
import subprocess
import sys

import numpy as np
import pytest

from harness import single_op_model
from nnconv.errors import EXIT_FAILURE, EXIT_OK
from nnconv.tflite.options import AddOptions
from nnconv.tflite.schema_enums import BuiltinOperator as B

ROOT = pathlib.Path(__file__).resolve().parent.parent
yaml = pytest.importorskip("yaml", reason="PyYAML reads the hook file (pre-commit itself depends on it)")


def _hook() -> dict:
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    return next(h for h in hooks if h["id"] == "nnconv-check")


def _run_hook(files, args=()):
    """As pre-commit runs it: the entry's words, the configured args, then the files it matched."""
    hook = _hook()
    matched = [str(f) for f in files if re.search(hook["files"], str(f))]
    entry = shlex.split(hook["entry"])
    assert entry[0] == "nnconv"
    return subprocess.run([sys.executable, "-m", "nnconv", *entry[1:], *args, *matched], capture_output=True,
                          text=True, cwd=ROOT)


def test_hook_declares_what_pre_commit_needs():
    hook = _hook()
    assert hook["language"] == "python" and hook["pass_filenames"] is True
    assert re.search(hook["files"], "models/m.tflite") and not re.search(hook["files"], "m.tflite.txt")
    assert "--fail-on" in hook["entry"]  # a policy, not just a report


@pytest.fixture
def changed(tmp_path):
    shape = (1, 4)
    good = tmp_path / "good.tflite"
    good.write_bytes(single_op_model(B.ADD, [("x", shape, np.float32), ("c", np.ones(shape, np.float32))],
                                     [("y", shape, np.float32)], AddOptions()))
    custom = tmp_path / "custom.tflite"
    custom.write_bytes(single_op_model(B.CUSTOM, [("x", shape, np.float32)], [("y", shape, np.float32)],
                                       custom_code="NnconvNoSuchOp"))
    notes = tmp_path / "notes.txt"
    notes.write_text("not a model")
    return good, custom, notes


def test_hook_passes_models_nnapi_takes(changed):
    good, _, notes = changed
    result = _run_hook([good, notes])
    assert result.returncode == EXIT_OK, result.stderr


def test_hook_fails_a_refused_op_with_the_policy_line(changed):
    good, custom, _ = changed
    result = _run_hook([good, custom])
    assert result.returncode == EXIT_FAILURE
    assert "nnconv: policy violated: --fail-on refused: 1 op refused in custom.tflite" in result.stderr


def test_hook_args_add_a_policy(changed):
    good, _, _ = changed
    assert _run_hook([good], ["--api-level", "29", "--min-coverage", "100"]).returncode == EXIT_OK
