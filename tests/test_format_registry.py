"""The report formats' registries are what the commands offer, and verify's conflicting options are refused
from one list before any file is read."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from nnconv.cli import main
from nnconv.cli.check import check
from nnconv.cli.ops import ops
from nnconv.errors import InputDataError
from nnconv.parity.session import VerifyOptions, option_conflicts
from nnconv.report.formats import CHECK_FORMATS, CheckFormat
from nnconv.report.ops_doc import OPS_FORMATS


def _format_choices(command: click.Command) -> list[str]:
    option = next(p for p in command.params if p.name == "fmt")
    return list(option.type.choices)


def test_the_commands_offer_their_registries() -> None:
    assert _format_choices(check) == list(CHECK_FORMATS) == ["table", "json", "csv", "md"]
    assert _format_choices(ops) == list(OPS_FORMATS)
    assert all(isinstance(f, CheckFormat) and f.name == name for name, f in CHECK_FORMATS.items())


@pytest.mark.parametrize("given,message", [
    ({"inputs": True, "seed": True}, "--inputs and --seed exclude each other"),
    ({"image": True, "seed": True}, "--image excludes --inputs and --seed"),
    ({"inputs": True, "input_range": True}, "--input-range applies to random inputs"),
    ({"reference": True, "relax_fp16": True}, "--reference compares outputs only"),
    ({"node_data": True}, "--node-data needs --per-op"),
])
def test_each_conflict_is_named(given: dict, message: str) -> None:
    found = option_conflicts(**given)
    assert len(found) == 1 and found[0].startswith(message)


def test_compatible_options_pass() -> None:
    assert option_conflicts(node_data=True, per_op=True) == []
    assert option_conflicts(image=True, input_range=True, reference=True) == []


def test_library_callers_meet_the_same_list() -> None:
    with pytest.raises(InputDataError, match="--image excludes"):
        VerifyOptions(image="x.png", seed=1).check()


def test_the_command_refuses_a_conflict_before_reading_files(tmp_path) -> None:
    missing = str(tmp_path / "absent.npz")  # never opened: the conflict is found first
    result = CliRunner().invoke(main, ["verify", str(tmp_path / "m.tflite"), "--inputs", missing, "--image",
                                       str(tmp_path / "absent.png")])
    assert result.exit_code == 2 and "--image excludes --inputs and --seed" in result.stderr
