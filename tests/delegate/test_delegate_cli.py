"""The delegate target through the commands: reports say which target they answer for, model-level outcomes
come with their codes and no partition, `convert` writes what the delegate builds, options that belong to
nnconv's converter are refused, and the upstream defects are reported. Models are built here or taken from
the project's examples (whose delegate behaviour tests/delegate/test_recordings.py pins to the recordings)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from harness import single_op_model
from nnconv.cli import main
from nnconv.errors import EXIT_BAD_INPUT, EXIT_NOT_CONVERTIBLE
from nnconv.nnapi import serialize
from nnconv.tflite.builder import QuantParams, TfliteBuilder
from nnconv.tflite.options import DepthwiseConv2DOptions, PadOptions
from nnconv.tflite.schema_enums import BuiltinOperator as B
from nnconv.tflite.schema_enums import Padding

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "models"


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def check_json(*args: str) -> dict:
    res = run("check", *args, "--format", "json")
    assert res.exit_code in (0, EXIT_NOT_CONVERTIBLE), res.output
    return json.loads(res.stdout)


def pad_model(tmp_path: Path) -> str:
    """A float PAD: the delegate maps PAD from API 28, nnconv's converter emulates it below."""
    m = single_op_model(B.PAD, [("x", (1, 4, 5, 3), np.float32),
                                ("p", np.array([[0, 0], [1, 1], [2, 2], [0, 0]], np.int32))],
                        [("y", (1, 6, 9, 3), np.float32)], PadOptions())
    path = tmp_path / "pad.tflite"
    path.write_bytes(m)
    return str(path)


def hybrid_depthwise_model(tmp_path: Path) -> str:
    """A float DEPTHWISE_CONV_2D with per-channel int8 weights: the delegate's Validate takes it at API 27/28
    (it only checks the input type there) and its build then calls setOperandSymmPerChannelQuantParams."""
    rng = np.random.default_rng(0)
    b = TfliteBuilder()
    x = b.input("x", (1, 6, 5, 4), np.float32)
    w = b.const("w", rng.integers(-127, 128, (1, 3, 3, 4)).astype(np.int8),
                quant=QuantParams(np.array([0.01, 0.02, 0.03, 0.04], np.float32), np.zeros(4, np.int64), 3))
    bias = b.const("b", rng.standard_normal(4).astype(np.float32))
    y = b.tensor("y", (1, 6, 5, 4), np.float32)
    b.op(B.DEPTHWISE_CONV_2D, [x, w, bias], [y],
         DepthwiseConv2DOptions(padding=Padding.SAME, stride_w=1, stride_h=1, depth_multiplier=1), version=3)
    b.output(y)
    path = tmp_path / "hybrid_dw.tflite"
    path.write_bytes(b.finish())
    return str(path)


def test_reports_say_which_target_they_answer_for() -> None:
    model = str(EXAMPLES / "mobilenet_v2_float.tflite")
    assert check_json(model)["target"] == "delegate"
    assert check_json(model, "--target", "nnconv")["target"] == "nnconv"
    assert run("check", model).output.splitlines()[1] == "target: TFLite's NNAPI delegate (what phones run)"
    assert "target:" not in run("check", model, "--target", "nnconv").output  # nnconv's reports look as before


def test_refusals_quote_the_delegate_and_point_at_the_nnconv_target(tmp_path: Path) -> None:
    op = check_json(pad_model(tmp_path), "--api-level", "27")["ops"][0]
    assert op["status"] == "refused_level" and op["min_api_level"] == 28
    assert op["reason"].startswith('TFLite\'s NNAPI delegate: "Android sdk version less than 28"')
    assert op["diagnostics"][0]["code"] == "NNC010"
    assert "lowerable with --target nnconv (beyond the delegate)" in op["notes"]
    nnconv_op = check_json(pad_model(tmp_path), "--api-level", "27", "--target", "nnconv")["ops"][0]
    assert nnconv_op["status"] == "lowered"


def test_dynamic_tensors_refuse_the_delegate_with_no_partition() -> None:
    report = check_json(str(EXAMPLES / "efficientnet_se_float.tflite"), "--api-level", "30")
    assert report["outcome"] == "refused_dynamic_tensors" and report["partitions"] == []
    assert report["summary"]["coverage"] == 0
    assert [d["code"] for d in report["model_diagnostics"]] == ["NNC040"]
    assert "dynamic-sized" in report["outcome_reason"]


def test_convert_writes_what_the_delegate_builds(tmp_path: Path) -> None:
    out = tmp_path / "lstm.nnapi"
    res = run("convert", str(EXAMPLES / "lstm_keras.tflite"), "-o", str(out), "--api-level", "29")
    assert res.exit_code == 0, res.output
    loaded = serialize.load(str(out))
    # the delegate takes the LSTM (node 0) and leaves the FULLY_CONNECTED (API 30) on the CPU
    assert [p.tflite_ops for p in loaded.partitions] == [[0]]
    types = [op.type.name for op in loaded.partitions[0].model.main.operations]
    assert types == ["UNIDIRECTIONAL_SEQUENCE_LSTM"]
    # its recurrent state is a model input the delegate feeds; `run` starts it at zero
    assert [s.variable for s in loaded.partitions[0].inputs].count(True) == 2


def test_convert_of_a_model_the_delegate_refuses_exits_3(tmp_path: Path) -> None:
    res = run("convert", str(EXAMPLES / "efficientnet_se_float.tflite"), "-o", str(tmp_path / "x.nnapi"))
    assert res.exit_code == EXIT_NOT_CONVERTIBLE
    assert "dynamic-sized" in res.stderr
    assert not (tmp_path / "x.nnapi").exists()


def test_fold_weights_belongs_to_the_nnconv_target() -> None:
    res = run("check", str(EXAMPLES / "mobilenet_v2_dynamic_range.tflite"), "--fold-weights")
    assert res.exit_code == EXIT_BAD_INPUT and "--target nnconv" in res.stderr


def test_the_missing_per_channel_call_below_api_29_is_a_crash(tmp_path: Path) -> None:
    model = hybrid_depthwise_model(tmp_path)
    report = check_json(model, "--api-level", "28")
    assert report["ops"][0]["status"] == "lowered"  # the delegate's Validate takes it ...
    assert report["outcome"] == "device_crash_null_api" and report["partitions"] == []  # ... and then crashes
    assert [d["code"] for d in report["model_diagnostics"]] == ["NNC043"]
    assert "setOperandSymmPerChannelQuantParams" in report["outcome_reason"]


def test_float16_constants_beyond_the_headroom_are_warned() -> None:
    report = check_json(str(EXAMPLES / "mobilenet_v2_fp16.tflite"), "--api-level", "28")
    codes = [d["code"] for d in report["model_diagnostics"]]
    assert codes == ["NNW110"] and report["outcome"] == "delegated"
    assert any(w.startswith("NNW110") for w in report["warnings"])


def test_a_graph_androids_runtime_refuses_fails_check_and_convert(tmp_path: Path) -> None:
    # int8 LSTM at API 29: the delegate declares its int8 tensors TENSOR_QUANT8_SYMM with non-zero zero points
    model = str(EXAMPLES / "lstm_keras_int8.tflite")
    res = run("check", model, "--api-level", "29", "--format", "json")
    assert res.exit_code == EXIT_NOT_CONVERTIBLE
    part = json.loads(res.stdout)["partitions"][0]
    assert part["ops"] == [0] and "TENSOR_QUANT8_SYMM" in part["error"]
    res = run("convert", model, "-o", str(tmp_path / "l.nnapi"), "--api-level", "29")
    assert res.exit_code == EXIT_NOT_CONVERTIBLE and "refuses the delegate's graph" in res.stderr


def test_verify_runs_the_delegates_graph_with_its_state_inputs() -> None:
    res = run("verify", str(EXAMPLES / "lstm_keras.tflite"), "--api-level", "29", "--format", "json")
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert report["target"] == "delegate" and report["passed"]


@pytest.mark.parametrize("level,partitions", [(28, [[0]]), (29, [[0]])], ids=["below-29", "from-29"])
def test_check_device_on_the_delegates_graph(level: int, partitions: list) -> None:
    res = run("check", str(EXAMPLES / "mobilenet_v2_float.tflite"), "--api-level", str(level),
              "--device", "reference", "--format", "json")
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert report["target"] == "delegate"
    device = report["devices"][0]
    assert device["summary"]["partitions"] == 1
