"""Device profiles (nnconv/devices/profile.py), `check --device` (device_check.py, render.py) and
`nnconv devices`.

Models are built with our builder: a float CONV_2D -> LOG -> CONV_2D chain (Arm NN's list has no LOG, so a
device with its profile splits the model in two partitions around it), and a dilated float CONV_2D, which the Arm
NN list names with TENSOR_FLOAT32 but NNAPI takes only from feature level 3 (a HAL 1.0 driver cannot take it).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from harness import nnconv_options
from nnconv.cli import main
from nnconv.devices.device_check import NOT_LOWERED, REFUSED, TAKEN, check_with_devices
from nnconv.devices.profile import (DeviceProfile, ProfileError, load_profile, resolve_profiles, shipped_names,
                                    shipped_profiles)
from nnconv.tflite.builder import TfliteBuilder
from nnconv.tflite.options import AddOptions, Conv2DOptions
from nnconv.tflite.schema_enums import BuiltinOperator, Padding

SHAPE = (1, 6, 5, 3)
NBYTES = 6 * 5 * 3 * 4
FIXTURE = "examples/models/mobilenet_v2_int8.tflite"


def conv_log_conv(path, seed: int = 0) -> str:
    rng = np.random.default_rng(seed)
    b = TfliteBuilder()
    x = b.input("x", SHAPE, np.float32)
    t0, t1, y = (b.tensor(n, SHAPE, np.float32) for n in ("t0", "t1", "y"))
    for i, (src, dst) in enumerate(((x, t0), (t1, y))):
        w = b.const(f"w{i}", (rng.standard_normal((3, 3, 3, 3)) * 0.5).astype(np.float32))
        bias = b.const(f"b{i}", rng.standard_normal(3).astype(np.float32))
        b.op(BuiltinOperator.CONV_2D, [src, w, bias], [dst], Conv2DOptions(padding=Padding.SAME, stride_w=1,
                                                                            stride_h=1))
        if i == 0:
            b.op(BuiltinOperator.LOG, [t0], [t1])
    b.output(y)
    target = path / "conv_log_conv.tflite"
    target.write_bytes(b.finish())
    return str(target)


def dilated_conv(path, seed: int = 0) -> str:
    rng = np.random.default_rng(seed)
    b = TfliteBuilder()
    x = b.input("x", SHAPE, np.float32)
    y = b.tensor("y", SHAPE, np.float32)
    w = b.const("w", (rng.standard_normal((3, 3, 3, 3)) * 0.5).astype(np.float32))
    bias = b.const("b", rng.standard_normal(3).astype(np.float32))
    b.op(BuiltinOperator.CONV_2D, [x, w, bias], [y], Conv2DOptions(padding=Padding.SAME, stride_w=1, stride_h=1,
                                                                    dilation_w_factor=2, dilation_h_factor=2))
    b.output(y)
    target = path / "dilated_conv.tflite"
    target.write_bytes(b.finish())
    return str(target)


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


# -- profiles ---------------------------------------------------------------------------------------
def test_shipped_profiles_name_their_source():
    names = shipped_names()
    assert names == ["armnn-hal1.0", "armnn-hal1.1", "armnn-hal1.2", "armnn-hal1.3", "reference"]
    for p in shipped_profiles():
        assert p.source["kind"] in ("published", "spec") and p.source["reference"].startswith("https://")
    armnn = {p.name: p for p in shipped_profiles()}
    assert "NnapiSupport.txt" in armnn["armnn-hal1.3"].source["reference"]
    assert [armnn[f"armnn-hal1.{k}"].feature_level for k in range(4)] == [1, 2, 3, 4]
    assert armnn["reference"].all_operations and armnn["reference"].feature_level is None


def test_devices_command_lists_profiles_with_sources():
    result = run("devices", "--format", "json")
    assert result.exit_code == 0
    data = json.loads(result.output)["profiles"]
    assert [p["name"] for p in data] == shipped_names()
    assert all(p["source"]["description"] for p in data)
    table = run("devices")
    assert table.exit_code == 0 and "armnn-hal1.3" in table.output and "NnapiSupport.txt" in table.output


@pytest.mark.parametrize("content, message", [
    ("{", "not JSON"),
    ('{"format": "other"}', "not a device profile"),
    ('{"format": "nnconv-device-profile", "format_version": 9}', "format_version 9"),
    ('{"format": "nnconv-device-profile", "format_version": 1, "name": "x", "device": {"feature_level": 3}, '
     '"source": {}, "operations": [{"operation": "NOT_AN_OP"}]}', "unknown NNAPI operation 'NOT_AN_OP'"),
    ('{"format": "nnconv-device-profile", "format_version": 1, "name": "x", "device": {"feature_level": 3}, '
     '"source": {}, "operations": [{"operation": "ADD", "input_types": ["TENSOR_FLOAT64"]}]}',
     "unknown operand type 'TENSOR_FLOAT64'"),
])
def test_malformed_profile_is_one_line_exit_2(tmp_path, content, message):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    with pytest.raises(ProfileError, match=message):
        load_profile(bad)
    result = CliRunner().invoke(main, ["check", FIXTURE, "--device", str(bad)])
    assert result.exit_code == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_unknown_device_name_lists_the_shipped_ones():
    result = CliRunner().invoke(main, ["check", FIXTURE, "--device", "snapdragon"])
    assert result.exit_code == 2
    assert "neither a shipped profile (armnn-hal1.0" in result.stderr


def test_a_folder_of_profiles_and_duplicate_names(tmp_path):
    for name in ("armnn-hal1.3", "reference"):
        (tmp_path / f"{name}.json").write_text(json.dumps(load_profile(f"nnconv/devices/data/{name}.json")
                                                          .to_json()))
    assert [p.name for p in resolve_profiles([str(tmp_path)])] == ["armnn-hal1.3", "reference"]
    with pytest.raises(ProfileError, match="two profiles are named 'reference'"):
        resolve_profiles([str(tmp_path), "reference"])


# -- check --device ---------------------------------------------------------------------------------
def test_reference_device_is_the_spec(tmp_path):
    d = check_with_devices(FIXTURE, 30, resolve_profiles(["reference"]))
    ref = d.devices[0]
    assert [o.status for o in ref.ops] == [TAKEN] * len(d.check.report.ops)
    assert [p.ops for p in ref.plan.partitions] == [p.ops for p in d.check.plan.partitions]
    assert ref.boundary_bytes == sum(p.boundary_bytes for p in d.check.plan.partitions)
    assert [p.nnapi_ops for p in ref.plan.partitions] == [p.nnapi_ops for p in d.check.plan.partitions]


def test_armnn_refuses_log_and_the_delegate_splits_around_it(tmp_path):
    model = conv_log_conv(tmp_path)
    d = check_with_devices(model, 30, resolve_profiles(["armnn-hal1.3", "reference"]))
    armnn, ref = d.devices
    assert [o.status for o in armnn.ops] == [TAKEN, REFUSED, TAKEN]
    assert "LOG is not among the operations armnn-hal1.3 takes" in armnn.ops[1].reason
    assert [v.label() for v in armnn.ops[0].nnapi] == ["CONV_2D(TENSOR_FLOAT32 -> TENSOR_FLOAT32)"]
    assert [p.ops for p in armnn.plan.partitions] == [[0], [2]]
    assert armnn.cpu_ops == [1]
    # each partition copies its input and its output across the boundary
    assert armnn.boundary_bytes == 4 * NBYTES
    assert [p.ops for p in ref.plan.partitions] == [[0, 1, 2]] and ref.boundary_bytes == 2 * NBYTES


def test_python_api_is_check_device(tmp_path):
    """`nnconv.check_devices` takes a path or bytes and gives what `check --device --format json` prints."""
    import pathlib

    import nnconv
    model = conv_log_conv(tmp_path)
    d = nnconv.check_devices(pathlib.Path(model).read_bytes(), ["armnn-hal1.3"], api_level=30)
    assert [o.status for o in d.devices[0].ops] == [TAKEN, REFUSED, TAKEN]
    assert [p.ops for p in d.devices[0].plan.partitions] == [[0], [2]]
    printed = json.loads(run("check", model, "--device", "armnn-hal1.3", "--api-level", "30", "--format",
                             "json").output)
    assert nnconv.check_devices(model, ["armnn-hal1.3"], api_level=30).to_json() == printed
    with pytest.raises(ProfileError, match="neither a shipped profile"):
        nnconv.check_devices(model, ["no-such-device"])


def test_device_feature_level_bounds_what_it_takes(tmp_path):
    model = dilated_conv(tmp_path)
    d = check_with_devices(model, 30, resolve_profiles(["armnn-hal1.0", "armnn-hal1.2"]), nnconv_options())
    hal10, hal12 = d.devices
    assert hal12.ops[0].status == TAKEN
    assert hal10.ops[0].status == REFUSED
    assert "CONV_2D: the device has feature level 1" in hal10.ops[0].reason
    assert "needs NNAPI feature level 3" in hal10.ops[0].reason
    assert hal10.plan.partitions == [] and hal10.cpu_ops == [0]


def test_spec_refused_ops_are_not_asked(tmp_path):
    d = check_with_devices("examples/models/custom_op_middle.tflite", 30, resolve_profiles(["armnn-hal1.3"]))
    statuses = {o.op: o.status for o in d.devices[0].ops}
    assert statuses["CUSTOM(AudioSpectrogram)"] == NOT_LOWERED


def test_check_device_formats(tmp_path):
    model = conv_log_conv(tmp_path)
    result = run("check", model, "--device", "armnn-hal1.3", "--device", "reference", "--format", "json")
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert data["schema_version"] == 1 and len(data["ops"]) == 3  # the spec report is unchanged
    armnn = data["devices"][0]
    assert armnn["profile"]["name"] == "armnn-hal1.3"
    assert armnn["summary"]["cpu_ops"] == [1] and armnn["summary"]["partitions"] == 2
    assert armnn["ops"][1]["nnapi_ops"][0] == {"partition": 0, "subgraph": 0, "operation": 1, "type": "LOG",
                                               "input_type": "TENSOR_FLOAT32", "output_type": "TENSOR_FLOAT32",
                                               "supported": False,
                                               "reason": "LOG is not among the operations armnn-hal1.3 takes"}
    assert armnn["summary"]["boundary_bytes"] == 4 * NBYTES
    csv_out = run("check", model, "--device", "armnn-hal1.3", "--format", "csv")
    rows = csv_out.stdout.splitlines()
    assert rows[0].startswith("model,api_level,device,index,op,spec_status,device_status")
    assert ",armnn-hal1.3,1,LOG,lowered,refused by device,," in rows[2]
    md = run("check", model, "--device", "armnn-hal1.3", "--device", "reference", "--format", "md")
    assert "| 1 | LOG | LOG(TENSOR_FLOAT32 -> TENSOR_FLOAT32) | NO | yes |" in md.output
    table = CliRunner(env={"COLUMNS": "160"}).invoke(main, ["check", model, "--device", "armnn-hal1.3",
                                                            "--device", "reference"])
    assert table.exit_code == 0
    assert "armnn-hal1.3: 2 partitions, 2/3 ops (67%), 1 refused by the device, 1 on TFLite's CPU, 1.41 KiB" \
        in table.output
    quiet = run("check", model, "--device", "armnn-hal1.3", "-q")
    assert quiet.output.count("\n") == 2 and "1 refused by the device" in quiet.output


def test_check_device_needs_one_level():
    result = CliRunner().invoke(main, ["check", FIXTURE, "--device", "reference", "--api-level", "all"])
    assert result.exit_code == 2 and "--device needs one target level" in result.stderr


def test_profile_round_trips_through_json():
    for p in shipped_profiles():
        again = DeviceProfile(**{**load_profile(p.path).__dict__})
        assert again.to_json() == p.to_json()
        assert json.loads(json.dumps(p.to_json()))["operations"] == [e.to_json() for e in p.operations]


def test_several_models_with_devices(tmp_path):
    model = conv_log_conv(tmp_path)
    result = run("check", model, FIXTURE, "--device", "armnn-hal1.3", "--format", "json", "--jobs", "2")
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert data["api_level"] == 30 and data["total"]["models"] == 2
    assert [m["devices"][0]["summary"]["ops_refused_by_device"] for m in data["models"]] == [1, 0]


def test_the_armnn_profile_agrees_with_the_rules_driver_notes():
    """The NNW100 notes rules give from the same list (lowering/driver_support.py) and the armnn-hal1.3 profile
    say the same thing: a rule noted MISSING_FROM_ARMNN emits an operation the profile does not name."""
    from nnconv.lowering.driver_support import MISSING_FROM_ARMNN
    from nnconv.lowering.registry import CUSTOM_RULES, RULES
    armnn = load_profile("nnconv/devices/data/armnn-hal1.3.json")
    named = {e.operation for e in armnn.operations}
    noted = [r for r in (*RULES.values(), *CUSTOM_RULES.values()) if MISSING_FROM_ARMNN in r.driver_notes]
    assert len(noted) >= 10
    for rule in noted:
        assert set(rule.nnapi_ops) - named, type(rule).__name__


def test_int32_add_needs_a_feature_level_4_device(tmp_path):
    """The Arm NN list names ADD with INT32, but NNAPI has int32 ADD only from feature level 4: the HAL 1.2
    profile refuses it (the runtime's validation, nnapi/operations/arithmetic.py), the HAL 1.3 one takes it."""
    b = TfliteBuilder()
    x = b.input("x", (2, 3), np.int32)
    c = b.const("c", np.arange(6, dtype=np.int32).reshape(2, 3))
    y = b.tensor("y", (2, 3), np.int32)
    b.op(BuiltinOperator.ADD, [x, c], [y], AddOptions())
    b.output(y)
    model = tmp_path / "int32_add.tflite"
    model.write_bytes(b.finish())
    hal12, hal13 = check_with_devices(str(model), 30, resolve_profiles(["armnn-hal1.2", "armnn-hal1.3"]),
                                      nnconv_options()).devices
    assert hal13.ops[0].status == TAKEN
    assert hal12.ops[0].status == REFUSED and "needs NNAPI feature level 4" in hal12.ops[0].reason


def test_a_device_below_the_level_checked_is_pointed_to_its_level():
    hal12, = check_with_devices(FIXTURE, 30, resolve_profiles(["armnn-hal1.2"]), nnconv_options()).devices
    assert len(hal12.refused) == 21  # int8 as TENSOR_QUANT8_ASYMM_SIGNED, which HAL 1.2 lacks
    assert hal12.warnings() == ["armnn-hal1.2 implements NNAPI feature level 3 (API 29), below the API 30 the model "
                                "was converted for: --api-level 29 converts for it (int8 as TENSOR_QUANT8_ASYMM, "
                                "no newer operations)"]
    at29, = check_with_devices(FIXTURE, 29, resolve_profiles(["armnn-hal1.2"]), nnconv_options()).devices
    assert at29.refused == [] and at29.warnings() == [] and len(at29.plan.partitions) == 1


def test_the_delegate_targets_a_lower_device_feature_level():
    """TFLite's NNAPI delegate lowers its target feature level to the device's (GetTargetFeatureLevel): at API 30
    with a HAL 1.2 (feature level 3) driver it decides and builds as at API 29, int8 carried as uint8, which
    that driver takes whole."""
    hal12, = check_with_devices(FIXTURE, 30, resolve_profiles(["armnn-hal1.2"])).devices
    assert hal12.refused == [] and len(hal12.plan.partitions) == 1
    assert hal12.warnings() == ["TFLite's NNAPI delegate targets armnn-hal1.2's NNAPI feature level 3 "
                                "(GetTargetFeatureLevel): its verdicts and graph for this device are those of API 29"]
    types = {v.input_type.name for o in hal12.ops for v in o.nnapi if v.input_type is not None}
    assert "TENSOR_QUANT8_ASYMM_SIGNED" not in types and "TENSOR_QUANT8_ASYMM" in types
