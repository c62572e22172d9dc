"""`nnconv check`: verdicts, API-level targeting, `--api-level all`, formats, several models, CI policies and exit
codes. Models come from tests/test_partition.py's builders (CONV_2D chains) plus single ops made to hit each
verdict."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest
from click.testing import CliRunner

from harness import nnconv_options, single_op_model
from nnconv.cli import main
from nnconv.lowering.check_report import check_ops
from nnconv.lowering.convert import make_state, rule_for
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.driver_support import DriverNote, warn_driver_issues
from nnconv.lowering.context import CheckContext
from nnconv.lowering.registry import CUSTOM_RULES, RULES
from nnconv.lowering.partition import build_plan
from nnconv.report.analysis import ModelCheck, report_json
from nnconv.tflite.builder import TfliteBuilder
from nnconv.tflite.options import AddOptions, Conv2DOptions
from nnconv.tflite.reader import read_model
from nnconv.tflite.schema_enums import BuiltinOperator, Padding
from test_partition import SHAPE, add_op, chain

# Builtins no rule is expected to lower (NNAPI has no counterpart); the first without a rule is used.
_EXOTIC = ("RFFT2D", "BUCKETIZE", "RANDOM_UNIFORM", "MULTINOMIAL", "UNSORTED_SEGMENT_PROD", "SEGMENT_SUM")


def unsupported_builtin() -> BuiltinOperator:
    for name in _EXOTIC:
        op = BuiltinOperator[name]
        if int(op) not in RULES:
            return op
    pytest.fail("every candidate builtin has a rule now: pick another unsupported one")


def every_verdict_model() -> bytes:
    """op0 conv (lowered), op1 dilated conv (refused_level below 29), op2 custom, op3 unsupported builtin,
    op4 conv on an input with a zero-sized (unknown) batch (refused_operand)."""
    rng = np.random.default_rng(2)
    b = TfliteBuilder()
    x = b.input("x", SHAPE, np.float32)
    t0, t1, t2, t3 = (b.tensor(f"t{i}", SHAPE, np.float32) for i in range(4))
    add_op(b, rng, "conv", x, t0, 0)
    add_op(b, rng, "dilated", t0, t1, 1)
    add_op(b, rng, "custom", t1, t2, 2)
    b.op(unsupported_builtin(), [t2], [t3])
    dyn = b.input("dyn", (0, *SHAPE[1:]), np.float32, shape_signature=(-1, *SHAPE[1:]))
    t4 = b.tensor("t4", (0, *SHAPE[1:]), np.float32, shape_signature=(-1, *SHAPE[1:]))
    add_op(b, rng, "conv", dyn, t4, 4)
    b.output(t3, t4)
    return b.finish()


@pytest.fixture
def models(tmp_path):
    paths = {}
    for name, data in {"verdicts": every_verdict_model(), "mid": chain(["conv", "dilated", "conv", "conv"]),
                       "clean": chain(["conv", "conv"])}.items():
        p = tmp_path / f"{name}.tflite"
        p.write_bytes(data)
        paths[name] = str(p)
    return paths


def run(*args: str):
    return CliRunner().invoke(main, ["check", *args], catch_exceptions=False)


def check_json(*args: str) -> dict:
    res = run(*args, "--format", "json")
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


# -- verdicts -------------------------------------------------------------------------------------
def test_every_refusal_verdict_with_reason_hint_and_level(models):
    data = check_json(models["verdicts"], "--target", "nnconv", "--api-level", "28")
    ops = {o["index"]: o for o in data["ops"]}
    assert [ops[k]["status"] for k in range(5)] == ["lowered", "refused_level", "custom", "unsupported",
                                                   "refused_operand"]
    assert ops[0]["nnapi_ops"] == ["CONV_2D"] and ops[0]["min_api_level"] == 27 and ops[0]["partition"] == 0
    lvl = ops[1]
    assert "needs API 29" in lvl["reason"] and "--api-level" in lvl["hint"] and lvl["min_api_level"] == 29
    assert lvl["nnapi_ops"] == [] and "CONV_2D" in lvl["nnapi_ops_at_min_api_level"]
    assert lvl["diagnostics"][0]["code"] == Code.API_LEVEL.value
    assert ops[2]["diagnostics"][0]["code"] == Code.CUSTOM_OPERATOR.value and ops[2]["min_api_level"] is None
    assert ops[3]["diagnostics"][0]["code"] == Code.UNSUPPORTED_OPERATOR.value
    assert ops[4]["diagnostics"][0]["code"] == Code.DYNAMIC_SHAPE.value and ops[4]["min_api_level"] is None
    assert ops[0]["input_dtypes"] == ["float32"] * 3 and ops[0]["version"] == 1
    assert data["summary"]["by_status"]["refused_level"] == 1 and data["summary"]["ops_refused"] == 4


def test_driver_warning_comes_from_the_check(models, monkeypatch):
    note = DriverNote(lambda c: c.api_level >= 30, "test row", "test source")
    monkeypatch.setattr(RULES[int(BuiltinOperator.CONV_2D)], "driver_notes", (note,))
    data = check_json(models["clean"], "--target", "nnconv", "--api-level", "30")
    assert [o["status"] for o in data["ops"]] == ["driver_warning"] * 2
    d = data["ops"][0]["diagnostics"][0]
    assert d["code"] == Code.DRIVER_SUPPORT.value and d["severity"] == "warning" and "test row" in d["message"]
    assert data["ops"][0]["nnapi_ops"] == ["CONV_2D"] and data["summary"]["partitions"] == 1  # still delegated
    at_29 = check_json(models["clean"], "--target", "nnconv", "--api-level", "29")
    assert [o["status"] for o in at_29["ops"]] == ["lowered"] * 2
    res = run(models["clean"], "--target", "nnconv", "--api-level", "30", "--fail-on", "warning")
    assert res.exit_code == 1 and "--fail-on warning" in res.stderr
    assert run(models["clean"], "--target", "nnconv", "--api-level", "30", "--fail-on", "refused").exit_code == 0


def _table_warnings(model: bytes, level: int) -> list:
    m = read_model(model)
    op = m.subgraphs[0].operators[0]
    c = CheckContext(make_state(m, level), m.subgraphs[0], op)
    warn_driver_issues(c, rule_for(op).driver_notes)
    return c.diagnostics


def test_driver_issue_table_rows_apply_by_condition():
    def mul(dtype):
        return single_op_model(BuiltinOperator.MUL, [("a", (2, 3), dtype), ("b", (2, 3), dtype)],
                               [("y", (2, 3), dtype)])
    diags = _table_warnings(mul(np.int32), 30)
    assert [d.code for d in diags] == [Code.DRIVER_SUPPORT] and "Arm NN" in diags[0].message
    assert not diags[0].is_error
    assert _table_warnings(mul(np.float32), 30) == []  # float32 MUL is on every driver's list
    assert _table_warnings(chain(["conv"]), 30) == []


def test_folded_verdict_in_the_report():
    m = read_model(chain(["conv", "conv"]))
    state = make_state(m, 30)
    state.folded[(0, m.subgraphs[0].operators[0].outputs[0])] = np.zeros(SHAPE, np.float32)
    report = check_ops(state)
    data = report_json(ModelCheck("m.tflite", report, build_plan(state, report)))
    assert [o["status"] for o in data["ops"]] == ["folded", "lowered"]
    assert data["ops"][0]["nnapi_ops"] == [] and data["summary"]["ops_folded"] == 1
    assert data["summary"]["ops_delegated"] == 2


def test_lowered_ops_name_the_nnapi_ops_actually_emitted(tmp_path):
    rng = np.random.default_rng(0)
    b = TfliteBuilder()
    x = b.input("x", (1, 7, 5, 6), np.float32)
    y = b.tensor("y", (1, 7, 5, 9), np.float32)
    w = b.const("w", rng.standard_normal((9, 3, 3, 2)).astype(np.float32))  # 3 groups
    b.op(BuiltinOperator.CONV_2D, [x, w, b.const("b", np.zeros(9, np.float32))], [y],
         Conv2DOptions(padding=Padding.SAME, stride_w=1, stride_h=1))
    b.output(y)
    p = tmp_path / "grouped.tflite"
    p.write_bytes(b.finish())
    assert check_json(str(p), "--api-level", "29")["ops"][0]["nnapi_ops"] == ["GROUPED_CONV_2D"]


# -- targeting ------------------------------------------------------------------------------------
def test_level_is_echoed_and_feature_level_is_an_alias(models):
    assert check_json(models["clean"], "--api-level", "29")["api_level"] == 29
    data = check_json(models["clean"], "--feature-level", "6")
    assert (data["api_level"], data["feature_level"]) == (33, 6) and data["warnings"] == []
    res = run(models["clean"], "--api-level", "27")
    assert "at API 27 (NNAPI feature level 1)" in res.stdout and "API 27: 1 partition, 2/2 ops (100%)" in res.stdout


def test_api_35_warns_that_nnapi_is_deprecated(models):
    assert any("deprecated" in w for w in check_json(models["clean"], "--api-level", "35")["warnings"])
    res = run(models["clean"], "--api-level", "35")  # a log line: stderr, the report alone on stdout
    assert "deprecated" in res.stderr and "deprecated" not in res.stdout
    # a Markdown report is a document to paste: the warning is part of it
    assert "deprecated" in run(models["clean"], "--api-level", "35", "--format", "md").stdout
    res = run(models["clean"], models["mid"], "--api-level", "35")
    assert "deprecated" in res.stderr and "deprecated" not in res.stdout
    res = run(models["clean"], "--api-level", "35", "--format", "csv")  # stdout stays pure CSV
    assert "deprecated" in res.stderr and "deprecated" not in res.stdout
    res = run(models["clean"], models["mid"], "--api-level", "35", "--format", "csv")
    assert "deprecated" in res.stderr and "deprecated" not in res.stdout


def test_bad_level_is_a_usage_error(models):
    for args in (["--api-level", "26"], ["--api-level", "abc"], ["--api-level", "30", "--feature-level", "4"]):
        res = run(models["clean"], *args)
        assert res.exit_code == 2, args


# -- --api-level all ------------------------------------------------------------------------------
def test_all_levels_json(models):
    data = check_json(models["mid"], "--target", "nnconv", "--api-level", "all")
    assert data["api_level"] == "all" and data["levels"] == [27, 28, 29, 30, 31, 32, 33, 34, 35]
    dilated = data["ops"][1]
    assert dilated["min_api_level"] == 29
    assert [dilated["status_by_level"][str(lv)] for lv in (27, 28, 29, 35)] == \
        ["refused_level", "refused_level", "lowered", "lowered"]
    s = data["summary_by_level"]
    assert (s["28"]["partitions"], s["28"]["coverage"]) == (2, 75.0)
    assert (s["29"]["partitions"], s["29"]["coverage"]) == (1, 100.0)


def test_all_levels_table_csv_md(models):
    table = run(models["mid"], "--target", "nnconv", "--api-level", "all").stdout
    assert "from API" in table and "coverage" in table and "partitions" in table and "L refused" in table
    csv_text = run(models["mid"], "--target", "nnconv", "--api-level", "all", "--format", "csv").stdout
    rows = list(csv.reader(io.StringIO(csv_text)))
    assert rows[0] == ["index", "op", "27", "28", "29", "30", "31", "32", "33", "34", "35", "min_api_level"]
    assert rows[2][2:5] == ["refused_level", "refused_level", "lowered"] and rows[2][-1] == "29"
    assert rows[-1][:4] == ["partitions", "", "2", "2"]
    md = run(models["mid"], "--target", "nnconv", "--api-level", "all", "--format", "md").stdout
    assert "| 1 | CONV_2D | L | L | ✓ |" in md


def test_all_levels_several_models(models):
    res = run(models["mid"], models["clean"], "--api-level", "all", "--format", "csv")
    rows = list(csv.reader(io.StringIO(res.stdout)))
    assert rows[1][0].endswith("mid.tflite") and rows[1][1:4] == ["75% / 2p", "75% / 2p", "100% / 1p"]
    assert rows[-1][0] == "total"


# -- formats --------------------------------------------------------------------------------------
def test_json_schema_keys(models):
    data = check_json(models["mid"], "--api-level", "28")
    assert {"schema_version", "model", "api_level", "feature_level", "ops", "partitions", "summary",
            "warnings"} <= set(data)
    assert {"index", "op", "version", "status", "nnapi_ops", "reason", "hint", "min_api_level", "input_dtypes",
            "quantization", "partition", "diagnostics"} <= set(data["ops"][0])
    assert {"ops_total", "ops_lowered", "partitions", "coverage", "ops_delegated"} <= set(data["summary"])
    assert data["summary"]["ops_total"] == 4 and data["summary"]["ops_lowered"] == 3
    p1 = data["partitions"][1]
    assert p1["ops"] == [2, 3] and p1["inputs"][0]["peers"] == ["CPU op #1 CONV_2D"]
    assert p1["inputs"][0]["bytes"] == 6 * 5 * 3 * 4
    assert data["summary"]["line"] == "2 partitions, 3/4 ops (75%)"


def test_table_and_md_and_csv(models):
    res = run(models["mid"], "--target", "nnconv", "--api-level", "28")
    table = res.stdout
    assert "refused_level" in table and "partitions (as TFLite's NNAPI delegate forms them)" in table
    assert "API 28: 2 partitions, 3/4 ops (75%)" in table and "warning" not in table
    assert res.stderr.startswith("warning: 2 partitions: every invocation copies 1.41 KiB across")
    md = run(models["mid"], "--target", "nnconv", "--api-level", "28", "--format", "md").stdout
    assert md.startswith("## mid.tflite at API 28") and "| # | op | v |" in md and "**API 28: 2 partitions" in md
    csv_text = run(models["mid"], "--target", "nnconv", "--api-level", "28", "--format", "csv").stdout
    rows = list(csv.DictReader(io.StringIO(csv_text)))
    assert [r["status"] for r in rows] == ["lowered", "refused_level", "lowered", "lowered"]
    assert rows[1]["min_api_level"] == "29" and rows[2]["partition"] == "1" and rows[0]["nnapi_ops"] == "CONV_2D"


def test_several_models_and_folders(models, tmp_path):
    res = run(str(tmp_path), "--api-level", "28", "--format", "csv")  # a folder: its .tflite files
    rows = list(csv.reader(io.StringIO(res.stdout)))
    assert [r[0].rsplit("/", 1)[-1] for r in rows[1:-1]] == ["clean.tflite", "mid.tflite", "verdicts.tflite"]
    assert rows[0][:3] == ["model", "api_level", "ops_total"]
    assert rows[-1][0] == "total (3 models)" and rows[-1][1:3] == ["28", str(2 + 4 + 5)]
    data = check_json(models["clean"], models["mid"], "--api-level", "28")
    assert [m["summary"]["partitions"] for m in data["models"]] == [1, 2]
    assert data["total"] == {"models": 2, "ops_total": 6, "ops_lowered": 5, "ops_delegated": 5, "ops_refused": 1,
                             "coverage": 83.33, "partitions": 3}
    table = run(models["clean"], models["mid"], "--api-level", "28").stdout
    assert "total (2 models)" in table and "checking" not in table
    md = run(models["clean"], models["mid"], "--api-level", "28", "--format", "md").stdout
    assert "| total (2 models) | 6 | 5 | 1 | 5 | 83.3 | 3 |" in md


# -- policies and exit codes ----------------------------------------------------------------------
@pytest.mark.parametrize("args,rule", [
    pytest.param(["--fail-on", "refused"], "--fail-on refused: 1 op refused", id="fail-on-refused"),
    pytest.param(["--min-coverage", "80"], "--min-coverage 80: mid.tflite has 75.0%", id="min-coverage"),
    pytest.param(["--max-partitions-allowed", "1"], "--max-partitions-allowed 1: mid.tflite forms 2", id="max-parts"),
])
def test_policy_violations_exit_1_naming_the_rule(models, args, rule):
    res = run(models["mid"], "--api-level", "28", *args)
    assert res.exit_code == 1 and rule in res.stderr
    assert run(models["mid"], "--api-level", "29", *args).exit_code == 0  # all lowered at 29


def test_min_coverage_fails_a_model_with_nothing_on_nnapi(tmp_path):
    """Issue 35: folded ops alone are not coverage: a model whose ops are folded or refused has no partition,
    runs wholly on TFLite's CPU, and fails `--min-coverage` (it passed at 50%)."""
    b = TfliteBuilder()
    x = b.input("x", SHAPE, np.float32)
    c = b.tensor("c", SHAPE, np.float32)
    b.op(BuiltinOperator.ADD, [b.const("a", np.ones(SHAPE, np.float32)), b.const("b", np.ones(SHAPE, np.float32))],
         [c], AddOptions())
    y = b.tensor("y", SHAPE, np.float32)
    b.op(BuiltinOperator.CUSTOM, [x, c], [y], custom_code="MyOp")
    b.output(y)
    path = tmp_path / "folded_only.tflite"
    path.write_bytes(b.finish())
    res = run(str(path), "--min-coverage", "10", "--target", "nnconv")
    assert res.exit_code == 1, res.output
    assert "--min-coverage 10: folded_only.tflite has 0.0% of its ops delegated" in res.stderr
    summary = check_json(str(path), "--target", "nnconv")["summary"]
    assert (summary["ops_folded"], summary["ops_delegated"], summary["coverage"]) == (1, 0, 0.0)


def test_policies_pass(models):
    res = run(models["mid"], "--api-level", "28", "--min-coverage", "75", "--max-partitions-allowed", "2")
    assert res.exit_code == 0 and "policy" not in res.stderr
    assert res.stderr.startswith("warning: 2 partitions")  # the copy-cost warning is a log, not a violation


def test_max_partitions_option(models, tmp_path):
    p = tmp_path / "many.tflite"
    p.write_bytes(chain(["conv", "dilated", "conv", "conv", "dilated", "conv"]))
    data = check_json(str(p), "--api-level", "28", "--max-partitions", "1")
    assert [q["ops"] for q in data["partitions"]] == [[2, 3]] and data["dropped_partitions"] == [[0], [5]]
    assert data["summary"]["partitions_formed"] == 3
    assert check_json(str(p), "--api-level", "28", "--max-partitions", "0")["summary"]["partitions"] == 3


def test_unreadable_input_exits_2_with_one_line(models, tmp_path):
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"not a flatbuffer at all")
    for path in (str(bad), str(tmp_path / "missing.tflite")):
        alone = run(path)
        assert alone.exit_code == 2 and alone.stdout == "" and len(alone.stderr.strip().splitlines()) == 1
        # among several models, the readable ones are still reported (as `verify` does), the exit code is the
        # unreadable one's, and its error is one line (plus the count)
        res = run(models["clean"], path)
        assert res.exit_code == 2 and "clean.tflite" in res.stdout and "Traceback" not in res.stderr
        assert res.stderr.splitlines()[0].startswith("nnconv: error: ") and path in res.stderr
        assert res.stderr.splitlines()[1] == "nnconv: 1 model could not be checked"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run(str(empty)).exit_code == 2


def test_policies_need_one_level(models):
    res = run(models["mid"], "--api-level", "all", "--fail-on", "refused")
    assert res.exit_code == 2 and "one target level" in res.stderr
    res = run(models["mid"], "--api-level", "all", "--feature-level", "3")
    assert res.exit_code == 2 and "not both" in res.stderr


def test_progress_bar_only_on_a_terminal():
    from rich.console import Console

    from nnconv.report.render import progress as _progress

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    tty = Tty()
    assert _progress(["a.tflite", "b.tflite"], Console(file=tty, force_terminal=True), str.upper) == \
        ["A.TFLITE", "B.TFLITE"]
    assert "checking" in tty.getvalue()
    pipe = io.StringIO()
    assert _progress(["a.tflite", "b.tflite"], Console(file=pipe), str.upper) == ["A.TFLITE", "B.TFLITE"]
    assert pipe.getvalue() == ""


def test_every_driver_note_of_a_rule_has_a_message_and_a_source():
    notes = [(type(rule).__name__, note) for rule in [*RULES.values(), *CUSTOM_RULES.values()]
             for note in rule.driver_notes]
    assert len(notes) >= 39  # the Arm NN and delegate rows, one per op they name
    for name, note in notes:
        assert isinstance(note, DriverNote) and note.source and note.message, name


def test_int32_mul_driver_warning_from_the_real_table(tmp_path):
    """A real rule and a real row of the table: int32 MUL exists from API 30, and the Arm NN driver does not
    list it, so it is lowered with a warning (and still delegated)."""
    if int(BuiltinOperator.MUL) not in RULES:
        pytest.fail("the MUL rule is gone")
    from nnconv.tflite.options import MulOptions
    p = tmp_path / "mul.tflite"
    p.write_bytes(single_op_model(BuiltinOperator.MUL, [("a", (2, 3), np.int32), ("b", (2, 3), np.int32)],
                                  [("y", (2, 3), np.int32)], MulOptions()))
    op = check_json(str(p), "--target", "nnconv", "--api-level", "30")["ops"][0]
    assert op["status"] == "driver_warning" and op["nnapi_ops"] == ["MUL"] and op["partition"] == 0
    assert op["diagnostics"][0]["code"] == "NNW100" and "Arm NN" in op["reason"]
    levels = check_json(str(p), "--target", "nnconv", "--api-level", "all")["ops"][0]
    assert levels["status_by_level"]["29"] == "refused_level" and levels["status_by_level"]["30"] == "driver_warning"
    assert levels["min_api_level"] == 30


def test_a_rule_whose_lowering_raises_is_an_internal_error_not_a_diagnostic(models, monkeypatch):
    """A rule whose check accepts but whose lowering raises (not an NnconvError) is a bug of ours: `check`'s
    trial lowering surfaces it as exit 4 "please report", never as a refusal of the user's op."""
    from nnconv.errors import EXIT_INTERNAL, InternalError
    from nnconv.pipeline import check_model, convert_partial
    rule = RULES[int(BuiltinOperator.CONV_2D)]

    def broken(c):
        raise RuntimeError("boom")
    monkeypatch.setattr(rule, "lower", broken)
    res = run(models["clean"], "--target", "nnconv", "--api-level", "30", "--format", "json")
    assert res.exit_code == EXIT_INTERNAL and res.stdout == ""
    assert "Conv2D lowering failed on op #0 CONV_2D (RuntimeError: boom)" in res.stderr
    assert "please report" in res.stderr and "Traceback" not in res.stderr
    assert run(models["clean"], "--target", "nnconv", "--api-level", "all").exit_code == EXIT_INTERNAL
    with pytest.raises(InternalError, match="boom"):
        check_model(models["clean"], 30, nnconv_options())
    with pytest.raises(InternalError, match="boom"):
        convert_partial(models["clean"], 30, nnconv_options())


def test_a_partition_that_fails_to_lower_is_reported_then_fails_like_convert(models, monkeypatch):
    """A lowering that fails only when a whole partition is lowered is a bug: the report names it per
    partition, and check exits 4 as convert would (check exit 0 must mean convert succeeds)."""
    rule = RULES[int(BuiltinOperator.CONV_2D)]

    def broken(c):
        raise RuntimeError("boom")
    monkeypatch.setattr(rule, "lower", broken)
    # check's own trial lowering of each op would stop at the bug first (the test below): skip it, to reach
    # a failure that shows only when a whole partition is lowered.
    import nnconv.lowering.convert as convert_module
    monkeypatch.setattr(convert_module, "runtime_refusals", lambda state, sg, op: [])
    res = run(models["clean"], "--target", "nnconv", "--api-level", "30", "--format", "json")
    assert res.exit_code == 4
    data = json.loads(res.stdout)
    assert "RuntimeError: boom" in data["partitions"][0]["error"]
    assert any("failed to lower" in w for w in data["warnings"])
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("nnconv: error:")]
    assert len(errors) == 1 and "partition 0 failed to lower: RuntimeError: boom (a bug in nnconv" in errors[0]
    from nnconv.pipeline import convert_partial
    with pytest.raises(RuntimeError, match="boom"):
        convert_partial(models["clean"], 30, nnconv_options())


def test_a_refusal_found_only_by_the_lowering_is_reported_not_an_internal_error(models, monkeypatch):
    """A rule's lowering that refuses the op (a ConversionError, e.g. unreadable custom options) is the
    model's problem, not a bug: check reports it on the op's partition and exits as convert does (3, not
    convert's internal-error 4), without 'please report'."""
    from nnconv.errors import EXIT_NOT_CONVERTIBLE, ConversionError
    rule = RULES[int(BuiltinOperator.CONV_2D)]

    def refusing(c):
        raise ConversionError("these weights cannot be expressed")
    monkeypatch.setattr(rule, "lower", refusing)
    res = run(models["clean"], "--target", "nnconv", "--api-level", "30", "--format", "json")
    assert res.exit_code == EXIT_NOT_CONVERTIBLE, res.stderr
    data = json.loads(res.stdout)
    assert "these weights cannot be expressed" in data["partitions"][0]["error"]
    assert "please report" not in res.stderr and "Traceback" not in res.stderr


def test_beyond_delegate_flag():
    from nnconv.lowering.registry import CUSTOM_RULES
    from nnconv.report.analysis import beyond_delegate
    assert not beyond_delegate("CONV_2D") and not beyond_delegate("CUSTOM(MyOp)")
    assert not beyond_delegate("BUILTIN_999")
    flagged = [name for name, rule in CUSTOM_RULES.items() if rule.beyond_delegate]
    if flagged:
        assert beyond_delegate(f"CUSTOM({flagged[0]})")
    builtins = [k for k, rule in RULES.items() if rule.beyond_delegate]
    if builtins:
        assert beyond_delegate(BuiltinOperator(builtins[0]).name)
    assert flagged or builtins, "no rule declares beyond_delegate: the flag is never exercised"


def test_beyond_delegate_marked_in_the_table(tmp_path):
    if int(BuiltinOperator.SQUARE) not in RULES or not RULES[int(BuiltinOperator.SQUARE)].beyond_delegate:
        pytest.fail("pick another op that nnconv lowers beyond TFLite's NNAPI delegate")
    p = tmp_path / "square.tflite"
    p.write_bytes(single_op_model(BuiltinOperator.SQUARE, [("x", (2, 3, 5), np.float32)],
                                  [("y", (2, 3, 5), np.float32)]))
    assert check_json(str(p), "--target", "nnconv")["ops"][0]["beyond_delegate"] is True
    table = run(str(p), "--target", "nnconv").stdout
    assert "MUL *" in table and "TFLite's own NNAPI delegate leaves this op on the CPU" in table
    assert "TFLite's own NNAPI delegate" not in run(chain_path(tmp_path), "--target", "nnconv").stdout


def chain_path(tmp_path) -> str:
    p = tmp_path / "plain.tflite"
    p.write_bytes(chain(["conv"]))
    return str(p)


def test_api_32_is_reported_as_32_with_31s_feature_level_and_default_is_30(models):
    data = check_json(models["clean"], "--api-level", "32")
    assert (data["api_level"], data["feature_level"]) == (32, 5)
    assert check_json(models["clean"])["api_level"] == 30




def test_constant_weights_dequantize_is_reported_folded_in_no_partition():
    # docs/reading-the-report.md: a result known at conversion time is `folded`. The float16 weights'
    # DEQUANTIZE ops emit no NNAPI operation (their consumers read a float32 constant): they said `lowered`
    # with no NNAPI ops, sat in partition 0 and counted as ops_folded 0.
    import pathlib
    model = str(pathlib.Path(__file__).resolve().parent.parent / "examples" / "models" / "mobilenet_v2_fp16.tflite")
    data = check_json(model)
    dequantize = [op for op in data["ops"] if op["op"] == "DEQUANTIZE"]
    assert dequantize and all(op["status"] == "folded" and op["nnapi_ops"] == [] for op in dequantize)
    assert data["summary"]["ops_folded"] == len(dequantize)
    (partition,) = data["partitions"]
    assert not {op["index"] for op in dequantize} & set(partition["ops"])
    assert data["summary"]["coverage"] == 100 and partition["nnapi_op_count"] == len(data["ops"]) - len(dequantize)


# -- issue 35: what -q shows, and names in every format ---------------------------------------------
def test_quiet_keeps_what_matters(tmp_path):
    """`check -q` of a model TFLite's CPU kernels refuse (NNW101) showed `100%` and nothing else, then `verify`
    exited 2; `check --api-level all -q` printed the whole matrix instead of one line per model and level."""
    from lowering.test_tflite_refuses import depthwise
    from nnconv.tflite.schema_enums import ActivationFunctionType
    path = tmp_path / "dw.tflite"
    path.write_bytes(depthwise(ActivationFunctionType.RELU6))
    res = run(str(path), "-q", "--target", "nnconv")
    assert res.stdout == (f"{path}: API 30: 1 partition, 1/1 ops (100%); TFLite's CPU kernels refuse 1 op (NNW101): "
                          "verify has no TFLite result to compare with, and the model runs only where NNAPI takes it\n")
    # TFLite prepares the node on its CPU kernels before it applies its NNAPI delegate: the model loads on no phone
    res = run(str(path), "-q")
    assert res.exit_code == 2 and res.stdout == f"{path}: API 30: 0 partitions, 0/1 ops (0%)\n"
    assert "TFLite cannot prepare this model: fused RELU6" in res.stderr
    lines = run(str(path), "--api-level", "all", "-q", "--target", "nnconv").stdout.splitlines()
    assert [line.split(":")[1].strip() for line in lines] == [f"API {lv}" for lv in range(27, 36)]
    assert lines[0].startswith(f"{path}: API 27: 0 partitions, 0/1 ops (0%)")


def test_names_are_relative_to_the_folder_in_every_format(tmp_path):
    folder = tmp_path / "models"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "mid.tflite").write_bytes(chain(["conv", "dilated", "conv"]))
    (folder / "clean.tflite").write_bytes(chain(["conv", "conv"]))
    assert [r[0] for r in csv.reader(io.StringIO(run(str(folder), "--format", "csv").stdout))][1:3] == \
        ["clean.tflite", "sub/mid.tflite"]
    assert "| sub/mid.tflite |" in run(str(folder), "--format", "md").stdout
    data = check_json(str(folder))
    assert [m["name"] for m in data["models"]] == ["clean.tflite", "sub/mid.tflite"]
    quiet = run(str(folder), "--device", "reference", "-q").stdout.splitlines()
    assert {line.split(":")[0] for line in quiet} == {"clean.tflite", "sub/mid.tflite"}
    table = run(str(folder), "--device", "reference", "--api-level", "28").stdout
    assert "devices: sub/mid.tflite at API 28" in table and "sub/mid.tflite at API 28 (NNAPI" in table
    devices_csv = run(str(folder), "--device", "reference", "--format", "csv").stdout
    assert {r[0] for r in list(csv.reader(io.StringIO(devices_csv)))[1:]} == {"clean.tflite", "sub/mid.tflite"}
