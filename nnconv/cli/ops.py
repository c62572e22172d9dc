"""`nnconv ops`: every TFLite op nnconv lowers, the NNAPI ops it becomes and from which API level."""

from __future__ import annotations

import json

import click

from nnconv.cli import common
from nnconv.cli.common import api_level_option, handle_errors, resolve_api_level, verbosity_options
from nnconv.errors import NnconvError

EPILOG = """\b
Examples:
  nnconv ops --api-level 27                  what lowers on Android 8.1
  nnconv ops --op MEAN --op CUSTOM(TFLite_Detection_PostProcess)
  nnconv ops --format csv > ops.csv"""


@click.command(short_help="List the TFLite ops nnconv lowers, the NNAPI ops they become and from which API "
                          "level.", epilog=EPILOG)
@click.option("--format", "fmt", type=click.Choice(["table", "json", "csv", "md"]), default="table",
              show_default=True)
@click.option("--op", "op_names", multiple=True, metavar="NAME",
              help="Only this TFLite op (any case; CUSTOM(code) or the code for custom ops). Repeatable.")
@api_level_option
@verbosity_options
@handle_errors
def ops(fmt: str, op_names: tuple[str, ...], api_level: int | None) -> None:
    """List the TFLite ops nnconv lowers, the NNAPI ops they become and from which API level
    (with --api-level: only what lowers at that level)."""
    from nnconv.report.ops_doc import ops_csv, ops_json, ops_markdown, render_ops, unknown_op_names
    unknown = unknown_op_names(op_names)
    if unknown:
        raise NnconvError(f"--op {', '.join(unknown)}: no lowering rule has this name (`nnconv ops` lists them)")
    level = resolve_api_level(api_level, None) if api_level is not None else None
    if fmt == "md":
        if op_names or level is not None:
            raise click.UsageError("--format md writes docs/ops.md whole: it takes no --op or --api-level")
        common.emit(ops_markdown(), nl=False)  # the text ends with its own newline
        return
    data = ops_json(level, op_names)
    if fmt == "json":
        common.emit(json.dumps(data, indent=2))
    elif fmt == "csv":
        common.emit(ops_csv(data), nl=False)
    elif common.verbosity > common.QUIET:
        render_ops(data, common.out)
    else:
        common.out.print(f"{len(data['ops'])} TFLite ops", markup=False)
