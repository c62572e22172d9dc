"""The report formats' registries are what the commands offer (`check --device` included), and verify's
conflicting options are refused from one list before any file is read."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from nnconv.cli import main
from nnconv.cli.check import check
from nnconv.cli.ops import ops
from nnconv.cli.verify import verify
from nnconv.cli.verify_render import VERIFY_FORMATS, VerifyFormat
from nnconv.devices.render import DEVICE_FORMATS, DeviceFormat, device_format
from nnconv.errors import InputDataError, InternalError
from nnconv.parity.conflicts import SEVERAL_MODELS, option_conflicts
from nnconv.parity.session import VerifyOptions
from nnconv.report.formats import CHECK_FORMATS, CheckFormat
from nnconv.report.ops_doc import OPS_FORMATS


def _format_choices(command: click.Command) -> list[str]:
    option = next(p for p in command.params if p.name == "fmt")
    return list(option.type.choices)


def test_the_commands_offer_their_registries() -> None:
    assert _format_choices(check) == list(CHECK_FORMATS) == ["table", "json", "csv", "md"]
    assert _format_choices(ops) == list(OPS_FORMATS)
    assert _format_choices(verify) == list(VERIFY_FORMATS) == ["table", "json"]
    assert all(isinstance(f, CheckFormat) and f.name == name for name, f in CHECK_FORMATS.items())
    assert all(isinstance(f, VerifyFormat) and f.name == name for name, f in VERIFY_FORMATS.items())


def test_check_device_renders_every_check_format() -> None:
    """`check --device` goes through a renderer of the same name, never a quiet fall back to the table."""
    assert list(DEVICE_FORMATS) == list(CHECK_FORMATS)
    assert all(isinstance(f, DeviceFormat) and f.name == name for name, f in DEVICE_FORMATS.items())
    with pytest.raises(InternalError, match="no renderer for --device"):
        device_format("html")


@pytest.mark.parametrize("given,message", [
    ({"--inputs", "--seed"}, "--inputs and --seed exclude each other"),
    ({"--image", "--seed"}, "--image excludes --inputs and --seed"),
    ({"--inputs", "--input-range"}, "--input-range applies to random inputs"),
    ({"--reference", "--relax-fp16"}, "--reference compares outputs only"),
    ({"--node-data"}, "--node-data needs --per-op"),
    ({"--input-std", "--inputs"}, "--input-layout, --input-mean and --input-std say how images become inputs"),
    ({SEVERAL_MODELS, "--save-reference"}, "--inputs, --image, --reference, --save-reference, --save-repro and "
                                           "--node-data take one model"),
])
def test_each_conflict_is_named(given: set, message: str) -> None:
    found = option_conflicts(given)
    assert len(found) == 1 and found[0].startswith(message)


def test_compatible_options_pass() -> None:
    assert option_conflicts({"--node-data", "--per-op"}) == []
    assert option_conflicts({"--image", "--input-range", "--reference"}) == []
    assert option_conflicts({"--input-mean", "--dataset", SEVERAL_MODELS}) == []


def test_library_callers_meet_the_same_list() -> None:
    with pytest.raises(InputDataError, match="--image excludes"):
        VerifyOptions(image="x.png", seed=1).check()


def test_the_command_refuses_a_conflict_before_reading_files(tmp_path) -> None:
    missing = str(tmp_path / "absent.npz")  # never opened: the conflict is found first
    result = CliRunner().invoke(main, ["verify", str(tmp_path / "m.tflite"), "--inputs", missing, "--image",
                                       str(tmp_path / "absent.png")])
    assert result.exit_code == 2 and "--image excludes --inputs and --seed" in result.stderr
