"""`nnconv ops`: every TFLite op nnconv lowers, the NNAPI ops it becomes and from which API level."""

from __future__ import annotations

import click

from nnconv.cli import common
from nnconv.cli.common import api_level_option, handle_errors, resolve_api_level, verbosity_options
from nnconv.errors import NnconvError
from nnconv.report.ops_doc import OPS_FORMATS, OPS_WHOLE_DOCUMENT, ops_json, unknown_op_names

EPILOG = """\b
Examples:
  nnconv ops --api-level 27                  what lowers on Android 8.1
  nnconv ops --op MEAN --op CUSTOM(TFLite_Detection_PostProcess)
  nnconv ops --format csv > ops.csv"""


@click.command(short_help="List the TFLite ops nnconv lowers, the NNAPI ops they become and from which API "
                          "level.", epilog=EPILOG)
@click.option("--format", "fmt", type=click.Choice(list(OPS_FORMATS)), default="table",
              show_default=True)
@click.option("--op", "op_names", multiple=True, metavar="NAME",
              help="Only this TFLite op (any case; CUSTOM(code) or the code for custom ops). Repeatable.")
@api_level_option
@verbosity_options
@handle_errors
def ops(fmt: str, op_names: tuple[str, ...], api_level: int | None) -> None:
    """List the TFLite ops nnconv lowers, the NNAPI ops they become and from which API level
    (with --api-level: only what lowers at that level)."""
    unknown = unknown_op_names(op_names)
    if unknown:
        raise NnconvError(f"--op {', '.join(unknown)}: no lowering rule has this name (`nnconv ops` lists them)")
    level = resolve_api_level(api_level, None) if api_level is not None else None
    whole = fmt in OPS_WHOLE_DOCUMENT
    if whole and (op_names or level is not None):
        raise click.UsageError(f"--format {fmt} writes docs/ops.md whole: it takes no --op or --api-level")
    text = OPS_FORMATS[fmt](None if whole else ops_json(level, op_names), common.out,
                            common.verbosity <= common.QUIET)
    if text is not None:
        common.emit(text, nl=False)
