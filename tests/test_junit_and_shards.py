"""`--junit FILE` (one testcase per model, per model and level with `--api-level all`, the failing ones
failed with the one-line reason) and `--shard K/N` (a split of a folder stable across runs and machines)
for `check` and `verify`."""

from __future__ import annotations

import json
import pathlib
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from click.testing import CliRunner

from harness import single_op_model
from nnconv.cli import main
from nnconv.errors import EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK
from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.levels import ALL_API_LEVELS
from nnconv.runtime.kernels import KERNELS
from nnconv.tflite.model_paths import expand_models, in_shard
from nnconv.tflite.options import AddOptions
from nnconv.tflite.schema_enums import BuiltinOperator as B


def _add_model(scale: float) -> bytes:
    return single_op_model(B.ADD, [("x", (1, 3, 4), np.float32), ("c", np.full((1, 3, 4), scale, np.float32))],
                           [("y", (1, 3, 4), np.float32)], AddOptions())


def _custom_model() -> bytes:
    return single_op_model(B.CUSTOM, [("x", (1, 4), np.float32)], [("y", (1, 4), np.float32)],
                           custom_code="NnconvNoSuchOp")


@pytest.fixture
def models(tmp_path):
    d = tmp_path / "models"
    (d / "sub").mkdir(parents=True)
    (d / "add1.tflite").write_bytes(_add_model(1.0))
    (d / "sub" / "add2.tflite").write_bytes(_add_model(2.0))
    (d / "broken.tflite").write_bytes(b"TFL3 not a model")
    (d / "custom.tflite").write_bytes(_custom_model())
    return d


def _cases(path: pathlib.Path) -> dict[tuple[str, str], tuple[str, str]]:
    """{(model file name, classname): (outcome, message)} of a JUnit file."""
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    out = {}
    for case in root.iter("testcase"):
        outcome = next(iter(case), None)
        key = (pathlib.Path(case.get("name")).name, case.get("classname"))
        assert key not in out
        out[key] = ("pass", "") if outcome is None else (outcome.tag, outcome.get("message"))
    return out


def test_check_junit_one_testcase_per_model(models, tmp_path):
    report = tmp_path / "check.xml"
    result = CliRunner().invoke(main, ["check", str(models), "--fail-on", "refused", "-q", "--junit", str(report)])
    assert result.exit_code == EXIT_FAILURE, result.output
    cases = _cases(report)
    assert cases[("add1.tflite", "nnconv.check.api30")] == ("pass", "")
    assert cases[("add2.tflite", "nnconv.check.api30")] == ("pass", "")
    outcome, message = cases[("custom.tflite", "nnconv.check.api30")]
    assert outcome == "failure" and message.startswith("--fail-on refused: 1 op refused") and "\n" not in message
    outcome, message = cases[("broken.tflite", "nnconv.check.api30")]
    assert outcome == "error" and "not a TFLite model" in message
    suite = ET.parse(report).getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("4", "1", "1")


def test_check_junit_per_model_and_level(models, tmp_path):
    (models / "broken.tflite").unlink()
    report = tmp_path / "all.xml"
    result = CliRunner().invoke(main, ["check", str(models), "--api-level", "all", "--format", "json",
                                       "--junit", str(report)])
    assert result.exit_code == EXIT_OK, result.output
    cases = _cases(report)
    assert len(cases) == 3 * len(ALL_API_LEVELS)
    assert all(cases[("add1.tflite", f"nnconv.check.api{lv}")] == ("pass", "") for lv in ALL_API_LEVELS)
    assert all(cases[("custom.tflite", f"nnconv.check.api{lv}")] == ("failure", f"1 of 1 op refused at API {lv}")
               for lv in ALL_API_LEVELS)


def test_verify_junit_failure_message_is_the_reason(models, tmp_path, monkeypatch):
    (models / "custom.tflite").unlink()
    real = KERNELS[OperationType.ADD]
    monkeypatch.setitem(KERNELS, OperationType.ADD, lambda call: [np.asarray(o) + np.float32(0.5) for o in real(call)])
    report = tmp_path / "verify.xml"
    result = CliRunner().invoke(main, ["verify", str(models), "--junit", str(report)])
    assert result.exit_code == EXIT_FAILURE, result.output
    cases = _cases(report)
    outcome, message = cases[("add1.tflite", "nnconv.verify.api30")]
    assert outcome == "failure"
    assert message == "output 'y': max |diff| 0.5 over the tolerance |diff| <= 1e-05 + 0.0001 * max |expected|"
    assert cases[("broken.tflite", "nnconv.verify.api30")][0] == "error"
    # one model: the same testcase, passing without the fault
    monkeypatch.setitem(KERNELS, OperationType.ADD, real)
    one = CliRunner().invoke(main, ["verify", str(models / "add1.tflite"), "--junit", str(report)])
    assert one.exit_code == EXIT_OK and _cases(report) == {("add1.tflite", "nnconv.verify.api30"): ("pass", "")}


def test_junit_to_a_directory_is_refused(models, tmp_path):
    result = CliRunner().invoke(main, ["check", str(models / "add1.tflite"), "--junit", str(tmp_path)])
    assert result.exit_code == EXIT_BAD_INPUT and "directory" in result.stderr


def _names(paths):
    return sorted(pathlib.Path(p).name for p in paths)


def test_shards_cover_a_folder_exactly_once(tmp_path):
    d = tmp_path / "many"
    d.mkdir()
    for i in range(40):
        (d / f"m{i:02d}.tflite").write_bytes(b"")
    every = expand_models([str(d)])
    for n in (1, 2, 3, 7):
        shards = [expand_models([str(d)], (k, n)) for k in range(1, n + 1)]
        assert sorted(p for s in shards for p in s) == sorted(every)  # each model in exactly one shard
    halves = [expand_models([str(d)], (k, 2)) for k in (1, 2)]
    assert all(8 <= len(h) <= 32 for h in halves)  # a split, not everything on one side


def test_shard_is_stable_across_machines(tmp_path):
    """The key is the path relative to the folder given: another checkout location gives the same split,
    and these values are SHA-256's, the same on every machine and Python (no salted hash())."""
    for root in ("a", "b/c"):
        d = tmp_path / root
        (d / "sub").mkdir(parents=True)
        for name in ("x.tflite", "y.tflite", "sub/z.tflite", "w.tflite"):
            (d / name).write_bytes(b"")
    assert [_names(expand_models([str(tmp_path / r)], (1, 2))) for r in ("a", "b/c")] == [
        _names(expand_models([str(tmp_path / "a")], (1, 2)))] * 2
    # pinned: a change of the hash would reshuffle every CI job's models
    assert [k for k in ("x.tflite", "y.tflite", "sub/z.tflite", "w.tflite", "m00.tflite", "m01.tflite")
            if in_shard(k, (1, 2))] == ["x.tflite", "m00.tflite"]


def test_cli_shards_split_check_and_verify(models):
    (models / "broken.tflite").unlink()
    runner = CliRunner()
    seen = []
    for k in (1, 2):
        result = runner.invoke(main, ["check", str(models), "--shard", f"{k}/2", "--format", "json"])
        assert result.exit_code == EXIT_OK, result.output
        if result.stdout.strip():
            data = json.loads(result.stdout)
            seen += [m["model"] for m in data["models"]] if "models" in data else [data["model"]]
    assert _names(seen) == ["add1.tflite", "add2.tflite", "custom.tflite"]
    verified = []
    for k in (1, 2):
        result = runner.invoke(main, ["verify", str(models), "--shard", f"{k}/2", "--format", "json",
                                      "--allow-partial"])
        verified += [m["model"] for m in json.loads(result.stdout)["models"]]
    assert _names(verified) == ["add1.tflite", "add2.tflite", "custom.tflite"]


@pytest.mark.parametrize("value", ["0/2", "3/2", "1", "a/b", "1/0", "-1/2", "1/2/3", "²/3"])
def test_bad_shard_is_one_line_exit_2(models, value):
    for command in ("check", "verify"):
        result = CliRunner().invoke(main, [command, str(models), "--shard", value])
        assert result.exit_code == EXIT_BAD_INPUT, (command, value, result.output)
        assert len(result.stderr.strip().splitlines()) == 1 and "--shard" in result.stderr


def test_verify_junit_records_a_single_model_in_error(models, tmp_path):
    report = tmp_path / "one.xml"
    result = CliRunner().invoke(main, ["verify", str(models / "broken.tflite"), "--junit", str(report)])
    assert result.exit_code == EXIT_BAD_INPUT and result.stderr.startswith("nnconv: error:")
    outcome, message = _cases(report)[("broken.tflite", "nnconv.verify.api30")]
    assert outcome == "error" and "not a TFLite model" in message


def test_check_junit_records_a_single_model_in_error(models, tmp_path):
    report = tmp_path / "one.xml"
    result = CliRunner().invoke(main, ["check", str(models / "broken.tflite"), "--junit", str(report)])
    assert result.exit_code == EXIT_BAD_INPUT and len(result.stderr.strip().splitlines()) == 1
    assert _cases(report)[("broken.tflite", "nnconv.check.api30")][0] == "error"


def _constant_model() -> bytes:
    """y = x * 0 + 0.5: the same value whatever the input, a PASS that proves little."""
    from harness import TfliteBuilder
    from nnconv.tflite.options import MulOptions
    b = TfliteBuilder()
    x = b.input("x", (1, 12), np.float32)
    m, y = b.tensor("m", (1, 12), np.float32), b.tensor("y", (1, 12), np.float32)
    b.op(B.MUL, [x, b.const("zero", np.zeros((1, 12), np.float32))], [m], MulOptions())
    b.op(B.ADD, [m, b.const("half", np.full((1, 12), 0.5, np.float32))], [y], AddOptions())
    b.output(y)
    return b.finish()


def test_fail_on_uninformative_and_junit_marks_uninformative_passes(tmp_path):
    """Issue 35: CI needs an option that fails on uninformative PASSes, and JUnit reports that mark them."""
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "flat.tflite").write_bytes(_constant_model())
    (folder / "add.tflite").write_bytes(_add_model(1.0))
    runner = CliRunner()
    res = runner.invoke(main, ["verify", str(folder), "--junit", str(tmp_path / "a.xml")])
    assert res.exit_code == EXIT_OK, res.output
    cases = {c.get("name"): c for c in ET.parse(tmp_path / "a.xml").iter("testcase")}
    flat = cases["flat.tflite"]
    assert flat.find("failure") is None
    assert flat.find("properties/property").attrib == {"name": "uninformative", "value": "y"}
    assert flat.find("system-out").text.startswith("PASS (uninformative: every output is constant")
    assert cases["add.tflite"].find("properties") is None
    res = runner.invoke(main, ["verify", str(folder), "--fail-on", "uninformative", "--junit", str(tmp_path / "b.xml")])
    assert res.exit_code == EXIT_FAILURE and "FAIL (uninformative)" in res.stdout
    failure = {c.get("name"): c for c in ET.parse(tmp_path / "b.xml").iter("testcase")}["flat.tflite"].find("failure")
    assert failure.get("message").startswith("--fail-on uninformative: every output is constant on these inputs (y)")
    one = runner.invoke(main, ["verify", str(folder / "flat.tflite"), "--fail-on", "uninformative", "-q"])
    assert one.exit_code == EXIT_FAILURE and one.stdout.startswith("FAIL (--fail-on uninformative: ")
    assert runner.invoke(main, ["verify", str(folder / "add.tflite"), "--fail-on", "uninformative"]).exit_code == EXIT_OK


def test_folder_verify_prints_one_layout_whatever_the_content(tmp_path):
    """Issue 35: a folder `verify` switched to one model per line when a message held a long word (an error
    naming the model's full path): the layout now depends on the width alone, the note column folding such
    words (model names are still never split)."""
    folder = tmp_path / "a_folder_with_a_rather_long_name_as_ci_checkouts_have" / "models"
    folder.mkdir(parents=True)
    (folder / "add.tflite").write_bytes(_add_model(1.0))
    runner = CliRunner()
    good = runner.invoke(main, ["verify", str(folder)], env={"COLUMNS": "120"}).stdout
    (folder / "broken.tflite").write_bytes(b"TFL3 not a model")
    mixed = runner.invoke(main, ["verify", str(folder)], env={"COLUMNS": "120"}).stdout
    assert good.splitlines()[1].startswith("┏") and mixed.splitlines()[1].startswith("┏")  # a table both times
    assert max(len(line) for line in mixed.splitlines()) <= 120
    narrow = runner.invoke(main, ["verify", str(folder)], env={"COLUMNS": "80"}).stdout
    assert narrow.splitlines()[1].startswith("add.tflite: PASS")  # below 100 columns, one model per line


def test_verify_json_names_models_as_the_table_does(models):
    """Issue 35: names relative to the folder in every format (verify's JSON carried only the path)."""
    data = json.loads(CliRunner().invoke(main, ["verify", str(models), "--format", "json"]).stdout)
    assert sorted(m["name"] for m in data["models"]) == ["add1.tflite", "broken.tflite", "custom.tflite",
                                                         "sub/add2.tflite"]
    assert all(m["model"].startswith(str(models)) for m in data["models"])
