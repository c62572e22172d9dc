"""`nnconv rewrite`: writes the `.tflite` that TFLite's stock NNAPI delegate takes more of, by exact rewrites
the delegate target says help (`nnconv/retarget/`), proven on TFLite's interpreter before anything is written."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping

import click

from nnconv.cli import common
from nnconv.cli.common import (
    handle_errors,
    input_shape_option,
    level_options,
    parsed,
    target_level,
    verbosity_options,
)
from nnconv.errors import EXIT_FAILURE
from nnconv.nnapi.levels import ApiLevel

EPILOG = """\b
Examples:
  nnconv rewrite model.tflite -o model.nnapi-ready.tflite --api-level 30
  nnconv rewrite model.tflite -o out.tflite --inputs in.npz --format json

Exit codes: 0 written (or nothing to rewrite: the output is the input, byte for byte), 1 TFLite's outputs
changed (nothing written), 2 bad input, 3 a model this writer cannot carry over, 4 internal error."""


@dataclass(frozen=True)
class RewriteCommand:
    """What one `nnconv rewrite` does, parsed and checked before the model is read (`from_params`)."""

    model: str
    output: str
    level: ApiLevel
    input_shapes: tuple
    inputs_path: str | None  # an .npz of the proof's inputs, or seeded random ones
    seed: int
    fmt: str  # --format

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> "RewriteCommand":
        from nnconv.safe_write import output_target
        from nnconv.tflite.input_shapes import parse_input_shape
        if params["inputs_path"] is not None and params["seed"] is not None:
            raise click.UsageError("--inputs and --seed both choose the proof's inputs: give one")
        output_target(params["output"])  # a directory or device is refused before any work
        level = target_level(params["api_level"], params["feature_level"])
        shapes = tuple(parse_input_shape(t) for t in params["input_shapes"])
        return cls(params["model"], params["output"], level, shapes, params["inputs_path"], params["seed"] or 0,
                   params["fmt"])


@click.command(short_help="Rewrite a .tflite so TFLite's own NNAPI delegate takes more of it.", epilog=EPILOG)
@click.argument("model", type=click.Path())
@click.option("-o", "--output", type=click.Path(), required=True, help="The .tflite file to write.")
@level_options
@input_shape_option
@click.option("--inputs", "inputs_path", type=click.Path(), default=None,
              help="An .npz of inputs (by input name or arr_0, arr_1, ...) to prove the rewrite on instead of "
                   "seeded random ones.")
@click.option("--seed", type=int, default=None, help="Seed of the random inputs of the proof (default 0).")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@verbosity_options
@handle_errors
@parsed(RewriteCommand.from_params)
def rewrite(command: RewriteCommand) -> None:
    """Rewrite MODEL (.tflite) into OUTPUT so TFLite's NNAPI delegate takes more of it at the level: exact
    rewrites only, each kept when the delegate takes more with it, and TFLite's outputs unchanged."""
    from nnconv.cli.npz_io import load_npz
    from nnconv.retarget.engine import rewrite_model
    from nnconv.retarget.render import render_text, summary_line, to_json, written_line
    from nnconv.safe_write import write_bytes
    model, output = command.model, command.output
    inputs = load_npz(command.inputs_path) if command.inputs_path else None
    with common.timed("rewrite"):
        result = rewrite_model(model, int(command.level), command.input_shapes, command.seed, inputs)
    if command.fmt == "json":
        common.emit(json.dumps(to_json(result, output if result.passed else None), indent=2))
    elif common.verbosity == common.QUIET:
        common.emit(summary_line(result))
    else:
        common.emit(render_text(result))
    if not result.passed:
        common.fail(f"{model}: TFLite's outputs differ after the rewrite: nothing written to {output}", EXIT_FAILURE)
    if result.data is not None:
        data = result.data
    else:
        with open(model, "rb") as f:
            data = f.read()
    with common.timed("write"):
        write_bytes(output, data)
    common.info(written_line(result, output, len(data)))

