"""Issue 36: each command's options are parsed once into one object, and the API level is one type, an
`ApiLevel`, from the command line to the lowering rules."""

from __future__ import annotations

import pathlib

import pytest
from click.testing import CliRunner

from nnconv.cli import main
from nnconv.lowering.context import CheckContext
from nnconv.lowering.convert import ConversionOptions
from nnconv.nnapi.levels import ApiLevel
from nnconv.pipeline import prepare
from nnconv.targets import Target

MODELS = pathlib.Path(__file__).resolve().parent.parent / "examples" / "models"
INT8 = str(MODELS / "mobilenet_v2_int8.tflite")
SPLIT = str(MODELS / "efficientnet_se_float.tflite")  # the delegate refuses some ops, which nnconv's rules check


@pytest.mark.parametrize("target", list(Target))
def test_prepare_keeps_the_level_it_is_given(target):
    level = ApiLevel(29)
    assert prepare(INT8, level, ConversionOptions(target=target)).api_level is level


def test_a_plain_number_becomes_an_api_level_once():
    assert type(prepare(INT8, 29).api_level) is ApiLevel
    assert type(prepare(INT8, 29, ConversionOptions(target=Target.NNCONV)).state.api_level) is ApiLevel


@pytest.mark.parametrize("target", ["nnconv", "delegate"])
def test_the_rules_see_the_command_lines_api_level(monkeypatch, target):
    """`check --api-level 32`: every rule's check reads an ApiLevel (32 decides as 31), never a plain int."""
    seen = []
    real = CheckContext.api_level.fget

    def recording(ctx: CheckContext) -> ApiLevel:
        level = real(ctx)
        seen.append((ctx.state.api_level, level))
        return level
    monkeypatch.setattr(CheckContext, "api_level", property(recording))
    result = CliRunner().invoke(main, ["check", SPLIT, "--api-level", "32", "--target", target, "-q"])
    assert result.exit_code == 0, result.stderr
    assert seen and all(type(target) is ApiLevel and type(rule) is ApiLevel for target, rule in seen)
    assert (32, 31) in {(int(t), int(r)) for t, r in seen}
