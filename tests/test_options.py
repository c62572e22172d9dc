"""Issue 36: each command's options are parsed once into one object, and the API level is one type, an
`ApiLevel`, from the command line to the lowering rules."""

from __future__ import annotations

import importlib
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


def test_no_cli_function_takes_more_than_six_parameters():
    """The commands take one options object (`common.parsed`), not a parameter per option."""
    import ast

    import nnconv.cli
    found = []
    for path in sorted(pathlib.Path(nnconv.cli.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                a = node.args
                count = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) + bool(a.vararg) + bool(a.kwarg)
                if count > 6:
                    found.append(f"{path.name}: {getattr(node, 'name', 'lambda')} takes {count}")
    assert not found


def test_check_parses_its_options_into_one_object(monkeypatch):
    from nnconv.report.formats import CHECK_FORMATS
    command = importlib.import_module("nnconv.cli.check")  # the module: `nnconv.cli.check` is the command
    seen = []
    monkeypatch.setattr(command, "run_check", lambda options, out, err: seen.append(options) or 0)
    result = CliRunner().invoke(main, ["check", INT8, "--feature-level", "5", "--device", "reference", "--format",
                                       "md", "--fail-on", "refused", "--target", "nnconv"])
    assert result.exit_code == 0, result.stderr
    (options,) = seen
    assert type(options.level) is ApiLevel and options.level == 31 and not options.every_level
    assert options.fmt is CHECK_FORMATS["md"] and [p.name for p in options.devices] == ["reference"]
    assert options.conversion.target is Target.NNCONV and options.policies.fail_on == "refused"
    assert options.paths == [INT8]


def test_verify_parses_its_options_into_one_object(monkeypatch, tmp_path):
    import numpy as np

    command = importlib.import_module("nnconv.cli.verify")
    seen = []
    monkeypatch.setattr(command, "_verify_one", lambda parsed: seen.append(parsed) or 0)
    np.savez(tmp_path / "in.npz", image=np.zeros((1, 64, 64, 3), np.int8))
    result = CliRunner().invoke(main, ["verify", INT8, "--api-level", "29", "--inputs", str(tmp_path / "in.npz"),
                                       "--per-op", "--node-data", str(tmp_path / "n.json"), "--max-lsb", "2",
                                       "--max-memory", "1G"])
    assert result.exit_code == 0, result.stderr
    (parsed,) = seen
    options = parsed.options
    assert not parsed.several and parsed.node_data == str(tmp_path / "n.json")
    assert type(options.api_level) is ApiLevel and options.api_level == 29 and options.per_op
    assert set(options.inputs) == {"image"} and options.overrides.max_lsb == 2
    assert options.max_bytes == 1 << 30 and options.executor_options == {"max_memory": 1 << 30}
    assert options.given() == {"--inputs", "--per-op"}
