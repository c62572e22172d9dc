"""What every `nnconv` command shares: one error style (usage errors too), -q/-v, examples in --help,
warnings for options that cannot apply, output sized to the console (no identifier split), `ops` formats and
filters, `run --trace` in TFLite words, the LICENSE and the threadpoolctl-based BLAS control."""

from __future__ import annotations

import configparser
import csv
import io
import json
import pathlib
import re

import numpy as np
import pytest
from click.testing import CliRunner

from harness import QuantParams, single_op_model
from nnconv.cli import main
from nnconv.errors import EXIT_BAD_INPUT, EXIT_OK
from nnconv.lowering.convert import ConversionOptions
from nnconv.report.analysis import check_one, report_json
from nnconv.fmt import describe_array, format_bytes, format_number, format_seconds, plural, wrap
from nnconv.report.render import nnapi_summary
from nnconv.targets import Target
from nnconv.tflite.schema_enums import BuiltinOperator
from test_cli import assert_one_line_error, conv_tflite

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODELS = ROOT / "examples" / "models"
COMMANDS = ("check", "convert", "verify", "run", "ops", "inspect", "devices", "probe", "rewrite")


def invoke(*args: str, columns: int | None = None):
    env = {"COLUMNS": str(columns)} if columns else {}
    return CliRunner().invoke(main, list(args), env=env, prog_name="nnconv")


# -- one error style ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("args,fragments", [
    pytest.param(("check", "--no-such-option", "m.tflite"), ("check:", "--no-such-option", "nnconv check --help"),
                 id="unknown-option"),
    pytest.param(("check",), ("Missing argument 'MODELS...'",), id="missing-argument"),
    pytest.param(("ops", "--format", "xml"), ("'xml' is not one of",), id="bad-choice"),
    pytest.param(("frobnicate",), ("No such command 'frobnicate'", "nnconv --help"), id="unknown-command"),
    pytest.param(("run", "x.nnapi"), ("Missing option '--inputs'",), id="missing-option"),
    pytest.param(("convert", "-q", "-v", "m.tflite", "-o", "m.nnapi"), ("give -q or -v, not both",),
                 id="quiet-and-verbose"),
    pytest.param(("ops", "--op", "NOT_AN_OP"), ("--op NOT_AN_OP",), id="unknown-op"),
])
def test_usage_errors_are_one_line_exit_2(args, fragments):
    result = invoke(*args)
    line = assert_one_line_error(result, EXIT_BAD_INPUT, *fragments)
    assert "Usage:" not in result.output and "Error:" not in result.output, line


# -- help -------------------------------------------------------------------------------------------------
def test_top_level_help_lists_every_command_whole_with_examples():
    result = invoke("--help")
    assert result.exit_code == EXIT_OK
    commands = result.stdout.split("Commands:")[1].split("Examples:")[0]
    assert "..." not in commands, commands  # click truncates long descriptions with '...'
    for name in COMMANDS:
        assert re.search(rf"^\s+{name}\s", commands, re.M), name
    assert "nnconv check m.tflite --api-level 29" in result.stdout
    assert all(len(line) <= 80 for line in result.stdout.splitlines()), result.stdout


@pytest.mark.parametrize("command", COMMANDS)
def test_each_command_help_has_an_example_and_verbosity_flags(command):
    result = invoke(command, "--help")
    assert result.exit_code == EXIT_OK
    assert "Example" in result.stdout and f"nnconv {command} " in result.stdout.split("Example")[1]
    assert "-q, --quiet" in result.stdout and "-v, --verbose" in result.stdout


# -- -q / -v --------------------------------------------------------------------------------------------------
def test_check_quiet_prints_only_the_verdict_line():
    model = str(MODELS / "custom_op_middle.tflite")
    result = invoke("check", model, "-q")
    assert result.exit_code == EXIT_OK
    assert result.stdout == f"{model}: API 30: 2 partitions, 4/5 ops (80%)\n"
    assert result.stderr == ""


def test_check_verbose_lists_long_expansions_and_prints_timings():
    model = str(MODELS / "mobilenet_v3_int8.tflite")
    normal = invoke("check", model, "--target", "nnconv", columns=160)
    verbose = invoke("check", model, "--target", "nnconv", "-v", columns=160)
    assert "19 ops (int8 mean, exact)" in normal.stdout
    assert "19 ops (int8" not in verbose.stdout and "FLOOR," in verbose.stdout.split()
    assert "int8 per-channel" in verbose.stdout  # the inputs' quantization is a detail
    assert re.search(r"^timings: check \d", verbose.stderr, re.M), verbose.stderr
    assert "timings" not in normal.stderr


def test_convert_quiet_is_silent_and_verbose_counts_operations_and_times(tmp_path):
    model = str(MODELS / "custom_op_middle.tflite")
    quiet = invoke("convert", model, "-o", str(tmp_path / "q.nnapi"), "--allow-partial", "-q")
    assert quiet.exit_code == EXIT_OK and quiet.stderr == "" and (tmp_path / "q.nnapi").exists()
    verbose = invoke("convert", model, "-o", str(tmp_path / "v.nnapi"), "--allow-partial", "-v")
    assert "partition: TFLite ops #3-4 -> FULLY_CONNECTED, SOFTMAX" in verbose.stderr
    assert re.search(r"timings: convert [\d.]+ m?s, write [\d.]+ m?s", verbose.stderr), verbose.stderr


def test_allow_partial_says_partitions_once(tmp_path):
    out = tmp_path / "cop.nnapi"
    result = invoke("convert", str(MODELS / "custom_op_middle.tflite"), "-o", str(out), "--allow-partial")
    assert result.exit_code == EXIT_OK
    assert result.stderr == f"wrote {out}: 2 partitions, 4/5 ops (80%) at API 30\n"


def test_ops_quiet_prints_the_count_only():
    result = invoke("ops", "--api-level", "27", "-q")
    assert re.fullmatch(r"\d+ TFLite ops\n", result.stdout), result.stdout


# -- options that cannot apply ---------------------------------------------------------------------------
def test_relax_fp16_below_28_warns_instead_of_dropping_silently(tmp_path):
    model = str(MODELS / "custom_op_middle.tflite")
    at27 = invoke("convert", model, "-o", str(tmp_path / "a.nnapi"), "--allow-partial", "--relax-fp16",
                  "--api-level", "27")
    assert at27.exit_code == EXIT_OK
    assert "warning: --relax-fp16 has no effect at API 27" in at27.stderr
    assert "needs API 28" in at27.stderr
    at28 = invoke("convert", model, "-o", str(tmp_path / "b.nnapi"), "--allow-partial", "--relax-fp16",
                  "--api-level", "28")
    assert "warning" not in at28.stderr
    quiet = invoke("convert", model, "-o", str(tmp_path / "c.nnapi"), "--allow-partial", "--relax-fp16",
                   "--api-level", "27", "-q")
    assert quiet.stderr == ""


# -- output that fits the console --------------------------------------------------------------------------
@pytest.mark.parametrize("model", ["custom_op_middle.tflite", "mobilenet_v3_int8.tflite", "lstm_keras.tflite"])
@pytest.mark.parametrize("columns", [80, 120])
def test_check_never_splits_an_op_name(model, columns):
    result = invoke("check", str(MODELS / model), "--api-level", "27", columns=columns)
    data = report_json(check_one(str(MODELS / model), 27, ConversionOptions(), 3))
    names = {o["op"] for o in data["ops"]}
    text = result.stdout
    for name in names:
        assert re.search(rf"(^|[\s│(]){re.escape(name)}([\s│,)]|$)", text, re.M), name
    # identifiers may exceed a line only when they are longer than the line itself
    long_words = [w for line in text.splitlines() if len(line) > columns for w in line.split() if len(w) > 40]
    assert all(len(line) <= columns for line in text.splitlines()) or long_words, text


def test_compact_below_100_columns_puts_one_op_per_line_with_details_indented():
    result = invoke("check", str(MODELS / "custom_op_middle.tflite"), "--target", "nnconv", columns=80)
    lines = result.stdout.splitlines()
    assert lines[1].split() == ["#0", "MUL", "v1", "lowered", "->", "MUL", "[partition", "0]"]
    custom = next(k for k, line in enumerate(lines) if "CUSTOM(AudioSpectrogram)" in line)
    assert lines[custom].split()[-1] == "custom"
    assert lines[custom + 1].startswith("    custom op 'AudioSpectrogram' has no NNAPI equivalent")
    assert "┃" not in result.stdout  # no table


def test_expansion_summary_comes_from_the_rule_and_json_keeps_every_op():
    check = check_one(str(MODELS / "mobilenet_v3_int8.tflite"), 30, ConversionOptions(target=Target.NNCONV), 3)
    mean = next(r for r in check.report.ops if r.op == "MEAN")
    assert mean.lowering_note == "int8 mean, exact"
    entry = report_json(check)["ops"][mean.index]
    assert entry["lowering_note"] == "int8 mean, exact" and len(entry["nnapi_ops"]) == len(mean.nnapi_ops) > 3
    assert nnapi_summary(mean.nnapi_ops, mean.lowering_note) == f"{len(mean.nnapi_ops)} ops (int8 mean, exact)"


def test_nnapi_summary_without_a_note_names_the_kinds_with_their_counts():
    ops = ["DEQUANTIZE", "MUL", "ADD", "MUL", "FLOOR", "QUANTIZE"]
    assert nnapi_summary(ops) == "6 ops: DEQUANTIZE, MUL x2, ADD, ..."
    # a PRELU-like expansion: the counts add up to the total (it read "5 ops: RELU, MUL, ADD")
    assert nnapi_summary(["RELU", "NEG", "RELU", "MUL", "ADD"]) == "5 ops: RELU x2, NEG, MUL, ..."
    assert nnapi_summary(["RELU", "MUL", "RELU", "MUL", "ADD"]) == "5 ops: RELU x2, MUL x2, ADD"
    assert nnapi_summary(ops[:3]) == "DEQUANTIZE, MUL, ADD"
    assert nnapi_summary(ops, verbose=True) == ", ".join(ops)


def test_numbers_print_at_sensible_precision():
    assert format_number(0.123456789) == "0.1235" and format_number(np.float32(6.0)) == "6"
    assert format_number(np.int8(-128)) == "-128" and format_number(1e-7) == "1e-07"
    # one unit style everywhere (tables, warnings, errors, inspect): binary units
    assert format_bytes(12) == "12 B" and format_bytes(5716) == "5.58 KiB" and format_bytes(602112) == "588 KiB"
    assert format_bytes(64 << 20) == "64 MiB" and format_bytes(3 << 29) == "1.5 GiB"
    assert plural(1, "NNAPI op") == "1 NNAPI op" and plural(2, "partition") == "2 partitions"
    assert format_seconds(0.000123) == "0.123 ms" and format_seconds(12.3456) == "12.3 s"
    assert describe_array(np.array([[0.5, 1 / 3]], np.float32)) == "float32 1x2 [0.3333, 0.5]"
    assert describe_array(np.zeros((2,), np.bool_)) == "bool 2"
    # an output may hold NaN or infinities (found by the fuzzer: `run` printing them was exit 4)
    assert format_number(float("nan")) == "nan" and format_number(np.float32("-inf")) == "-inf"
    assert describe_array(np.array([np.nan, 1.0], np.float32)) == "float32 2 [nan, nan]"


def test_wrap_never_breaks_an_identifier():
    name = "mobilenet_v3_small_mini/batch_normalization/FusedBatchNormV3;conv2d/Conv2D"
    lines = wrap(f"tensor {name} of the model", 30, indent="  ")
    assert name in [w for line in lines for w in line.split()]


# -- ops -------------------------------------------------------------------------------------------------
def test_ops_csv_has_one_row_per_op():
    result = invoke("ops", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    table = json.loads(invoke("ops", "--format", "json").stdout)["ops"]
    assert [r["op"] for r in rows] == [o["op"] for o in table]
    mean = next(r for r in rows if r["op"] == "MEAN")
    assert mean["min_api_level"] == "27" and "DEQUANTIZE" in mean["nnapi_ops"].split()


def test_ops_filters_by_name_and_by_level():
    named = json.loads(invoke("ops", "--op", "mean", "--op", "Conv_2d", "--format", "json").stdout)["ops"]
    assert [o["op"] for o in named] == ["CONV_2D", "MEAN"]
    custom = json.loads(invoke("ops", "--op", "TFLite_Detection_PostProcess", "--format", "json").stdout)["ops"]
    assert [o["op"] for o in custom] == ["CUSTOM(TFLite_Detection_PostProcess)"]
    at27 = json.loads(invoke("ops", "--api-level", "27", "--format", "json").stdout)
    at29 = json.loads(invoke("ops", "--api-level", "29", "--format", "json").stdout)
    assert at27["api_level"] == 27 and all(o["min_api_level"] <= 27 for o in at27["ops"])
    names27, names29 = {o["op"] for o in at27["ops"]}, {o["op"] for o in at29["ops"]}
    assert names27 < names29 and "CUSTOM(TFLite_Detection_PostProcess)" in names29 - names27


def test_ops_table_at_80_columns_keeps_names_whole():
    result = invoke("ops", "--op", "MEAN", "--op", "CONV_2D", columns=80)
    assert all(len(line) <= 80 for line in result.stdout.splitlines()), result.stdout
    assert "AVERAGE_POOL_2D," in result.stdout.split()


def test_ops_md_refuses_filters():
    result = invoke("ops", "--format", "md", "--op", "MEAN")
    assert_one_line_error(result, EXIT_BAD_INPUT, "--format md")


# -- run --trace ---------------------------------------------------------------------------------------
def test_run_trace_speaks_tflite_tensor_names(tmp_path):
    model, nnapi = tmp_path / "conv.tflite", tmp_path / "conv.nnapi"
    model.write_bytes(conv_tflite())
    assert invoke("convert", str(model), "-o", str(nnapi)).exit_code == EXIT_OK
    np.savez(tmp_path / "in.npz", x=np.full((1, 9, 7, 3), 1 / 3, np.float32))
    result = invoke("run", str(nnapi), "--inputs", str(tmp_path / "in.npz"), "-o", str(tmp_path / "o.npz"),
                    "--trace")
    line = result.stderr.splitlines()[0]
    m = re.fullmatch(r"#0 CONV_2D \(TFLite op #0\) -> y \[(\d+)\]: float32 1x9x7x4 \[(\S+), (\S+)\]", line)
    assert m, line
    y = np.load(tmp_path / "o.npz")["y"]
    assert m.group(2) == format_number(y.min()) and m.group(3) == format_number(y.max())
    assert all(len(v.lstrip("-").replace(".", "").lstrip("0")) <= 6 for v in m.group(2, 3))  # not 9 digits


def test_run_trace_names_temporaries(tmp_path):
    model, nnapi = tmp_path / "q.tflite", tmp_path / "q.nnapi"
    q = QuantParams([0.05], [3])
    model.write_bytes(single_op_model(BuiltinOperator.HARD_SWISH, [("x", (1, 4), np.int8, q)],
                                      [("y", (1, 4), np.int8, q)]))
    assert invoke("convert", str(model), "-o", str(nnapi), "--api-level", "29").exit_code == EXIT_OK
    np.savez(tmp_path / "in.npz", x=np.array([[-100, -3, 20, 100]], np.int8))
    result = invoke("run", str(nnapi), "--inputs", str(tmp_path / "in.npz"), "-o", str(tmp_path / "o.npz"),
                    "--trace")
    assert "-> <temporary> [" in result.stderr or "_tmp" in result.stderr, result.stderr
    assert result.stderr.splitlines()[-2].split(" -> ")[1].startswith("y ["), result.stderr


# -- LICENSE and dependencies --------------------------------------------------------------------------
def test_license_file_is_the_apache_2_text_the_package_declares():
    text = (ROOT / "LICENSE").read_text()
    assert text.lstrip().startswith("Apache License") and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text and "9. Accepting Warranty or Additional Liability." in text
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    assert cfg["metadata"]["license"] == "Apache-2.0" and cfg["metadata"]["license_files"] == "LICENSE"
    assert "threadpoolctl" in cfg["options"]["install_requires"]


def test_blas_threads_are_capped_through_threadpoolctl():
    from threadpoolctl import threadpool_info

    from nnconv.runtime.blas_threads import blas_num_threads, limit_blas_threads
    before = blas_num_threads()
    if before is None:
        pytest.skip("no BLAS thread pool in this numpy build: nothing to cap")
    with limit_blas_threads(1):
        assert {p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"} == {1}
    assert blas_num_threads() == before


# -- verify ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("columns", [80, 120])
def test_verify_names_outputs_as_tflite_does_with_operand_and_range(columns):
    model = str(MODELS / "mobilenet_v3_int8.tflite")
    result = invoke("verify", model, columns=columns)
    assert result.exit_code == EXIT_OK, result.output
    data = json.loads(invoke("verify", model, "--format", "json").stdout)
    out = data["parity"]["outputs"][0] if "parity" in data else data["outputs"][0]
    lo, hi = out["range"]
    assert isinstance(out["operand"], int)
    assert f"{out['name']} [{out['operand']}]" in result.stdout
    assert f"int8 1x10 [{format_number(lo)}, {format_number(hi)}]" in result.stdout
    assert all(len(line) <= columns for line in result.stdout.splitlines()), result.stdout


def test_verify_quiet_prints_the_verdict_only():
    result = invoke("verify", str(MODELS / "mobilenet_v3_int8.tflite"), "-q")
    assert result.stdout == "PASS\n" and result.exit_code == EXIT_OK


@pytest.mark.parametrize("columns", [80, 120])
def test_level_matrix_and_model_summary_never_split_names(columns):
    lstm, mnv3 = str(MODELS / "lstm_keras.tflite"), str(MODELS / "mobilenet_v3_int8.tflite")
    matrix = invoke("check", lstm, "--api-level", "all", columns=columns).stdout
    assert "UNIDIRECTIONAL_SEQUENCE_LSTM" in matrix.split() and "FULLY_CONNECTED" in matrix.split()
    several = invoke("check", lstm, mnv3, "--api-level", "29", columns=columns).stdout
    for path in (lstm, mnv3):
        assert any(path in w for line in several.splitlines() for w in line.split()), several
    both = invoke("check", lstm, mnv3, "--api-level", "all", columns=columns).stdout
    assert any(mnv3 in line for line in both.splitlines()), both
    for text in (matrix, several, both):
        assert all(len(line) <= columns for line in text.splitlines() if mnv3 not in line), text



# -- folders, -q, logs on stderr ------------------------------------------------------------------------------
@pytest.fixture
def model_folder(tmp_path):
    """A folder as a user has one, deep below an absolute path: two models, one in a subfolder."""
    folder = tmp_path / "a" / "rather" / "deep" / "folder" / "of" / "models"
    (folder / "face").mkdir(parents=True)
    (folder / "custom_op_middle.tflite").symlink_to(MODELS / "custom_op_middle.tflite")
    (folder / "face" / "mobilenet_v3_int8_face_detection_full_range.tflite").symlink_to(
        MODELS / "mobilenet_v3_int8.tflite")
    return folder


NAMES = ("custom_op_middle.tflite", "face/mobilenet_v3_int8_face_detection_full_range.tflite")


@pytest.mark.parametrize("columns", [80, 160])
@pytest.mark.parametrize("command", [("verify",), ("check", "--api-level", "all"), ("check",)])
def test_a_folders_models_are_named_relative_to_it_and_never_truncated(model_folder, command, columns):
    result = invoke(*command, str(model_folder), columns=columns)
    assert result.exit_code in (0, 1, 3), result.output  # 3: the custom op's model cannot be verified whole
    words = result.stdout.split()
    for name in NAMES:
        assert name in words or f"{name}:" in words, result.stdout
    assert str(model_folder) not in result.stdout and "…" not in result.stdout


def test_verify_quiet_prints_one_line_per_model(model_folder):
    result = invoke("verify", str(model_folder), "--target", "nnconv", "-q")
    assert result.exit_code == 3  # no parity failure; the custom op's model cannot be lowered whole (errors.md)
    lines = result.stdout.splitlines()
    assert len(lines) == 2, result.stdout
    assert lines[0].startswith("custom_op_middle.tflite: ERROR 1 of 5 ops cannot be lowered")
    assert lines[1] == "face/mobilenet_v3_int8_face_detection_full_range.tflite: PASS"


def test_check_warnings_are_logs_on_stderr():
    result = invoke("check", str(MODELS / "custom_op_middle.tflite"), columns=160)
    assert "warning" not in result.stdout
    assert result.stderr.startswith("warning: 2 partitions: every invocation copies 5.58 KiB across the CPU/NNAPI")
    deprecated = invoke("check", str(MODELS / "custom_op_middle.tflite"), str(MODELS / "mobilenet_v3_int8.tflite"),
                        "--api-level", "35", columns=160)
    assert "deprecated" not in deprecated.stdout and "warning: NNAPI is deprecated" in deprecated.stderr


def test_node_data_says_what_it_wrote(tmp_path):
    model = str(MODELS / "custom_op_middle.tflite")
    out = tmp_path / "nd.json"
    result = invoke("check", model, "--node-data", str(out), columns=400)
    assert result.exit_code == EXIT_OK and out.exists()
    assert (f"wrote {out}: Model Explorer node data for 5 ops (nnconv check: NNAPI partition at API 30 (0 = CPU, "
            f"-1 = folded)); open it with model-explorer {model} --node_data_paths={out}") in result.stderr
    assert invoke("check", model, "--node-data", str(out), "-q").stderr == ""


@pytest.mark.parametrize("arrays,fragments", [
    pytest.param({"x": np.ones((1, 9, 7, 3))}, ("'x' is float64[1, 9, 7, 3]", "the model takes float32[1, 9, 7, 3]",
                                                "save it as float32, e.g. np.savez(f, x=x.astype(np.float32))"),
                 id="float64"),
    pytest.param({"x": np.ones((1, 9, 7, 3), np.float32), "y_typo": np.ones(2, np.float32)},
                 ("unknown input array 'y_typo'", "the model takes 'x' float32[1, 9, 7, 3]"), id="unknown"),
])
def test_verify_inputs_that_cannot_be_used_say_what_to_do(tmp_path, arrays, fragments):
    model = tmp_path / "conv.tflite"
    model.write_bytes(conv_tflite())
    np.savez(tmp_path / "in.npz", **arrays)
    result = invoke("verify", str(model), "--inputs", str(tmp_path / "in.npz"))
    assert_one_line_error(result, EXIT_BAD_INPUT, *fragments)


def test_verify_reference_with_an_array_the_model_does_not_compute_is_refused(tmp_path):
    model = tmp_path / "conv.tflite"
    model.write_bytes(conv_tflite())
    saved = tmp_path / "ref.npz"
    assert invoke("verify", str(model), "--save-reference", str(saved)).exit_code == EXIT_OK
    with np.load(saved) as data:
        arrays = dict(data)
    np.savez(saved, **arrays, extra=np.zeros(2, np.float32))
    result = invoke("verify", str(model), "--reference", str(saved))
    assert_one_line_error(result, EXIT_BAD_INPUT, "--reference holds 'extra', which the model does not compute")


def test_models_of_two_folders_with_the_same_names_keep_their_paths(tmp_path):
    from nnconv.tflite.model_paths import named_models
    for folder in ("a", "b", "c"):
        (tmp_path / folder).mkdir()
    for path in ("a/m.tflite", "b/m.tflite", "c/other.tflite"):
        (tmp_path / path).write_bytes(b"")
    a, b, c = (str(tmp_path / f) for f in ("a", "b", "c"))
    named = named_models([a, b, c, str(tmp_path / "c" / "other.tflite")])
    assert [name for _, name in named] == [f"{a}/m.tflite", f"{b}/m.tflite", "other.tflite",
                                           str(tmp_path / "c" / "other.tflite")]
    assert [path for path, _ in named][0] == f"{a}/m.tflite"
