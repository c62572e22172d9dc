"""`verify` over folders (a broken model in the middle), saved references, and where inputs come from."""

from __future__ import annotations

import json
import pathlib
import shutil

import numpy as np
import pytest
from click.testing import CliRunner

from chain_models import SHAPE, add_mul_sub_chain
from nnconv.cli import main
from nnconv.errors import EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_NOT_CONVERTIBLE, EXIT_OK
from nnconv.parity.batch import verify_many
from nnconv.parity.session import VerifyOptions

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "models"


@pytest.fixture
def runner():
    return CliRunner()


@pytest.fixture
def chain(tmp_path):
    path = tmp_path / "chain.tflite"
    path.write_bytes(add_mul_sub_chain())
    return str(path)


def test_folder_with_a_broken_model_in_the_middle(folder, runner):
    result = runner.invoke(main, ["verify", str(folder), "--format", "json"])
    # no parity failure, one model unreadable: the exit code that model gives alone (docs/errors.md)
    assert result.exit_code == EXIT_BAD_INPUT, result.output
    data = json.loads(result.stdout)
    assert data["schema_version"] == 1
    assert [(pathlib.Path(m["model"]).name, m["status"]) for m in data["models"]] == [
        ("a_chain.tflite", "pass"), ("b_broken.tflite", "error"), ("c_chain.tflite", "pass")]
    assert data["models"][1]["error"] and "\n" not in data["models"][1]["error"]
    assert data["summary"] == {"models": 3, "passed": 2, "failed": 0, "errors": 1,
                               "seconds": data["summary"]["seconds"]}
    assert data["models"][1]["exit_code"] == EXIT_BAD_INPUT
    table = runner.invoke(main, ["verify", str(folder)])
    assert table.exit_code == EXIT_BAD_INPUT
    assert "2 passed, 0 failed, 1 could not be verified" in table.stdout and "ERROR" in table.stdout


def test_folder_in_parallel_processes_keeps_the_order(folder):
    paths = sorted(str(p) for p in folder.iterdir())
    results = list(verify_many(paths, VerifyOptions(), jobs=2))
    assert [r.status for r in results] == ["pass", "error", "pass"]
    assert [r.model for r in results] == paths


def test_folder_of_passing_models_exits_0(folder, runner):
    (folder / "b_broken.tflite").unlink()
    assert runner.invoke(main, ["verify", str(folder), "--jobs", "1"]).exit_code == EXIT_OK


def test_save_reference_then_compare_with_it(chain, tmp_path, runner):
    ref = tmp_path / "ref.npz"
    saved = runner.invoke(main, ["verify", chain, "--seed", "4", "--save-reference", str(ref)])
    assert saved.exit_code == EXIT_OK, saved.output
    with np.load(ref) as npz:
        assert list(npz.files) == ["y"] and npz["y"].shape == SHAPE
        y = npz["y"]
    same = runner.invoke(main, ["verify", chain, "--seed", "4", "--reference", str(ref), "--format", "json"])
    assert same.exit_code == EXIT_OK, same.output
    data = json.loads(same.stdout)
    assert data["passed"] and data["outputs"][0]["max_abs"] == 0.0 and "ref.npz" in data["tflite_kernels"]
    off = tmp_path / "off.npz"
    np.savez(off, y=y + np.float32(0.01))  # e.g. a device whose outputs are off by 0.01
    bad = runner.invoke(main, ["verify", chain, "--seed", "4", "--reference", str(off), "--format", "json"])
    assert bad.exit_code == EXIT_FAILURE
    assert json.loads(bad.stdout)["outputs"][0]["max_abs"] == pytest.approx(0.01, rel=1e-3)
    other_inputs = runner.invoke(main, ["verify", chain, "--seed", "5", "--reference", str(ref)])
    assert other_inputs.exit_code == EXIT_FAILURE  # the reference belongs to seed 4's inputs
    np.savez(off, z=y)
    missing = runner.invoke(main, ["verify", chain, "--reference", str(off)])
    assert missing.exit_code == EXIT_BAD_INPUT and "no output 'y'" in missing.stderr


def test_inputs_with_seed_is_a_usage_error(chain, tmp_path, runner):
    np.savez(tmp_path / "in.npz", x=np.zeros(SHAPE, np.float32))
    result = runner.invoke(main, ["verify", chain, "--inputs", str(tmp_path / "in.npz"), "--seed", "1"])
    assert result.exit_code == EXIT_BAD_INPUT and "--seed" in result.stderr


def test_json_metadata(chain, runner):
    data = json.loads(runner.invoke(main, ["verify", chain, "--seed", "7", "--input-range", "0", "2",
                                           "--format", "json"]).stdout)
    assert data["schema_version"] == 1 and data["inputs"] == {"seed": 7, "range": [0.0, 2.0]}
    assert data["interpreter"]["package"] == "ai-edge-litert" and data["interpreter"]["version"]
    assert data["tflite_kernels"] == "builtin"


def test_partial_model_needs_allow_partial(runner):
    model = str(FIXTURES / "custom_op_middle.tflite")
    refused = runner.invoke(main, ["verify", model, "--target", "nnconv"])
    assert refused.exit_code == EXIT_NOT_CONVERTIBLE and "--allow-partial" in refused.stderr
    allowed = runner.invoke(main, ["verify", model, "--target", "nnconv", "--allow-partial", "--per-op",
                                   "--format", "json"])
    assert allowed.exit_code == EXIT_OK, allowed.output
    data = json.loads(allowed.stdout)
    assert data["mode"] == "partitioned" and {e["partition"] for e in data["per_op"]} == {0, 1}


def test_xnnpack_log_lines_do_not_reach_the_user(chain, tmp_path):
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-m", "nnconv", "verify", chain, "--kernels", "xnnpack"],
                          capture_output=True, text=True, cwd=pathlib.Path(__file__).resolve().parents[2],
                          timeout=120)
    assert done.returncode == EXIT_OK, done.stderr
    assert "XNNPACK" not in done.stderr and "INFO" not in done.stderr


def test_python_api_returns_the_same_report(chain):
    import nnconv
    report = nnconv.verify(chain, seed=3, per_op=True)
    assert report.passed and report.to_json()["first_divergent_op"] is None
    cli = json.loads(CliRunner().invoke(main, ["verify", chain, "--seed", "3", "--per-op", "--format",
                                               "json"]).stdout)
    mine = report.to_json()
    for key in ("outputs", "per_op", "inputs", "schema_version"):
        assert json.loads(json.dumps(mine[key])) == cli[key]


def test_python_api_takes_the_model_bytes(chain):
    """nnconv.verify(bytes) failed with "embedded null byte": the model's bytes were opened as a path."""
    import nnconv
    by_path = nnconv.verify(chain, seed=3)
    by_bytes = nnconv.verify(pathlib.Path(chain).read_bytes(), seed=3)
    assert by_bytes.passed and by_bytes.to_json()["model"] == "<bytes>"
    assert [o["max_abs"] for o in by_bytes.to_json()["outputs"]] == [o["max_abs"] for o in by_path.to_json()["outputs"]]


def test_empty_folder_is_a_one_line_error(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    result = CliRunner().invoke(main, ["verify", str(empty)])
    assert result.exit_code == EXIT_BAD_INPUT and "no .tflite" in result.stderr


def test_check_in_parallel_processes_reports_the_same(runner, tmp_path):
    d = tmp_path / "two"
    d.mkdir()
    for name in ("custom_op_middle.tflite", "lstm_keras.tflite"):
        shutil.copy(FIXTURES / name, d / name)
    one = runner.invoke(main, ["check", str(d), "--format", "json"])
    two = runner.invoke(main, ["check", str(d), "--format", "json", "--jobs", "2"])
    assert one.exit_code == two.exit_code == EXIT_OK, two.output
    assert json.loads(one.stdout) == json.loads(two.stdout)
