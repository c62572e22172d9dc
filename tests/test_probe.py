"""`nnconv probe` (nnconv/devices/probe.py, probe_c.py) against the host recorder's fake devices
(nnconv/nnapi/ndk/recorder_devices.c): the generated program is compiled with `cc -std=c99 -pedantic -Wall
-Wextra -Werror`, run, and the profiles it writes must make `check --device` refuse exactly the ops it
refuses with the same fake driver written as a profile (the round trip of docs/devices.md)."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from click.testing import CliRunner

from nnconv.cli import main
from nnconv.devices.device_check import check_with_devices
from nnconv.devices.probe import fake_devices_text, run_on_host, write_probe
from nnconv.devices.profile import FORMAT, load_profile, profile_from_json

from test_devices import conv_log_conv

pytestmark = pytest.mark.skipif(shutil.which("cc") is None,
                                reason="no C compiler `cc` on PATH (the CI images and dev machines have one)")

MOBILENET = "examples/models/mobilenet_v2_int8.tflite"
S8 = "TENSOR_QUANT8_ASYMM_SIGNED"


def fake_profile(name: str, ops: dict[str, list[str]], device_type: str = "ACCELERATOR", level: int = 4) -> dict:
    """A driver as a profile: {NNAPI operation: input-0 types it takes ([] = any)}."""
    return {"format": FORMAT, "format_version": 1, "name": name,
            "device": {"name": name, "type": device_type, "feature_level": level},
            "source": {"kind": "hand-written", "description": "a fake driver for the probe's round trip"},
            "operations": [{"operation": op, **({"input_types": types} if types else {})}
                           for op, types in ops.items()]}


# No ADD nor SOFTMAX: MobileNetV2's residual adds and its head fall back to the CPU.
NPU = fake_profile("fake-npu", {"CONV_2D": [S8], "DEPTHWISE_CONV_2D": [S8], "AVERAGE_POOL_2D": [S8],
                                "FULLY_CONNECTED": [S8], "RESHAPE": []})
# Everything float, nothing quantized.
GPU = fake_profile("fake-gpu", {"CONV_2D": ["TENSOR_FLOAT32"], "LOG": ["TENSOR_FLOAT32"], "ADD": ["TENSOR_FLOAT32"],
                                "SOFTMAX": ["TENSOR_FLOAT32"]}, device_type="GPU", level=3)


def probe_with(tmp_path, model: str, drivers: list[dict], api_level: int = 30):
    probe_dir = tmp_path / "probe"
    write_probe(model, probe_dir, api_level)
    fake = tmp_path / "fake_devices.txt"
    fake.write_text(fake_devices_text(drivers))
    return run_on_host(probe_dir, tmp_path / "phone", fake)


@pytest.mark.parametrize("model", [MOBILENET, "conv_log_conv"])
def test_probe_round_trips_to_the_same_refusals(tmp_path, model):
    if model == "conv_log_conv":
        model = conv_log_conv(tmp_path)
    written = probe_with(tmp_path, model, [NPU, GPU])
    assert [p.name for p in written] == ["profile-fake-gpu.json", "profile-fake-npu.json"]
    drivers = [profile_from_json(d, d["name"]) for d in (GPU, NPU)]
    predicted = check_with_devices(model, 30, drivers)
    said = check_with_devices(model, 30, [load_profile(p) for p in written])
    for want, got in zip(predicted.devices, said.devices):
        assert got.profile.name == want.profile.name
        assert got.refused == want.refused
        assert [p.ops for p in got.plan.partitions] == [p.ops for p in want.plan.partitions]
        assert got.cpu_ops == want.cpu_ops and got.boundary_bytes == want.boundary_bytes
    npu = {d.profile.name: d for d in said.devices}["fake-npu"]
    if model == MOBILENET:
        refused = {predicted.check.report.ops[k].op for k in npu.refused}
        assert refused == {"ADD", "SOFTMAX"}
        assert len(npu.plan.partitions) == 3  # ADD, ADD and SOFTMAX cut the chain; the limit keeps 3
    else:
        assert npu.refused == [0, 1, 2]  # a float model on an int8-only NPU


def test_probe_profile_records_what_the_phone_said(tmp_path):
    model = conv_log_conv(tmp_path)
    [path] = probe_with(tmp_path, model, [fake_profile("npu/2:x", {"CONV_2D": ["TENSOR_FLOAT32"]})])
    assert path.name == "profile-npu_2_x.json"  # the device's name made a file name
    data = json.loads(path.read_text())
    assert data["name"] == "npu/2:x" and data["device"] == {"name": "npu/2:x", "type": "ACCELERATOR",
                                                            "feature_level": 4}
    assert data["source"]["kind"] == "probe" and data["source"]["api_level"] == 30
    assert data["operations"] == [{"operation": "CONV_2D", "input_types": ["TENSOR_FLOAT32"],
                                   "output_types": ["TENSOR_FLOAT32"]}]
    [part] = data["probe"]["partitions"]
    assert data["probe"]["method"] == "getSupportedOperationsForDevices"
    assert part["create_status"] == 0 and part["query_status"] == 0
    assert part["compile_status"] == 4  # BAD_DATA: the device cannot run LOG, so the model does not compile
    assert [o["supported"] for o in part["operations"]] == [True, False, True]
    result = CliRunner(env={"COLUMNS": "160"}).invoke(main, ["check", model, "--device", str(path), "-q"])
    assert result.exit_code == 0
    assert "npu/2:x: 2 partitions, 2/3 ops (67%), 1 refused by the device" in result.output


def test_below_api_29_the_probe_compiles_whole_partitions(tmp_path):
    model = conv_log_conv(tmp_path)
    [path] = probe_with(tmp_path, model, [NPU], api_level=28)
    data = json.loads(path.read_text())
    assert path.name == "profile-nnapi-runtime.json" and data["probe"]["method"] == "compilation"
    assert data["device"]["feature_level"] == 2
    # LOG needs API 29: two partitions, each compiled whole by the runtime
    assert [p["compile_status"] for p in data["probe"]["partitions"]] == [0, 0]
    assert "getDeviceCount" not in (tmp_path / "probe" / "probe.c").read_text()


def test_probe_command_writes_build_and_adb_scripts(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    adb = bin_dir / "adb"
    adb.write_text("#!/bin/sh\nexit 0\n")
    adb.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    out = tmp_path / "probe"
    result = CliRunner().invoke(main, ["probe", MOBILENET, "-o", str(out), "--api-level", "29"])
    assert result.exit_code == 0, result.output
    assert "1 partition, 21 NNAPI operations to ask about at API 29" in " ".join(result.stderr.split())
    build = (out / "build.sh").read_text()
    assert os.access(out / "build.sh", os.X_OK) and '--target="$TARGET$API"' in build and "API=29" in build
    assert "-lneuralnetworks" in build
    run = (out / "run_on_device.sh").read_text()
    assert "adb push nnconv_probe model.nnapi" in run and "adb pull" in run
    # issue 35: written without adb on PATH too (it runs on the machine the phone is attached to)
    monkeypatch.setenv("PATH", "")
    bare = tmp_path / "bare"
    result = CliRunner().invoke(main, ["probe", MOBILENET, "-o", str(bare)])
    assert result.exit_code == 0 and "run_on_device.sh" in " ".join(result.stderr.split())
    assert (bare / "run_on_device.sh").read_text() == run and os.access(bare / "run_on_device.sh", os.X_OK)
    assert 'command -v adb' in run


def test_probe_output_must_be_a_folder(tmp_path):
    target = tmp_path / "file"
    target.write_text("x")
    result = CliRunner().invoke(main, ["probe", MOBILENET, "-o", str(target)])
    assert result.exit_code == 2 and "is not a folder" in result.stderr


def test_the_phones_answer_per_operation_decides_for_the_probed_model(tmp_path):
    """A driver may take CONV_2D with some shapes and not others: the probe profile's entry says CONV_2D
    float is taken, but its answer for the second CONV_2D of this very model was no, and that answer wins."""
    model = conv_log_conv(tmp_path)
    [path] = probe_with(tmp_path, model, [GPU])
    data = json.loads(path.read_text())
    assert check_with_devices(model, 30, [load_profile(path)]).devices[0].refused == []
    data["probe"]["partitions"][0]["operations"][2]["supported"] = False
    path.write_text(json.dumps(data))
    gpu = check_with_devices(model, 30, [load_profile(path)]).devices[0]
    assert gpu.refused == [2] and "refused this operation when probed" in gpu.ops[2].reason
    assert [p.ops for p in gpu.plan.partitions] == [[0, 1]]
    # at another level (or for another model) the answers do not apply: the entries decide
    assert check_with_devices(model, 31, [load_profile(path)]).devices[0].refused == []
