"""`nnconv inspect`: what is inside a .tflite or .nnapi file (the logic is nnconv.inspection's)."""

from __future__ import annotations

import json

import click

from nnconv.cli import common
from nnconv.cli.common import handle_errors, verbosity_options
from nnconv.errors import NnconvError


EPILOG = """\b
Examples:
  nnconv inspect model.tflite --ops
  nnconv inspect model.nnapi --dot | dot -Tsvg > model.svg"""


@click.command(short_help="Summarize a .tflite or .nnapi file: ops, tensors, constants, partitions.",
               epilog=EPILOG)
@click.argument("file", type=click.Path())
@click.option("--ops", "with_ops", is_flag=True, help="Also list every operation: place, type, inputs -> outputs.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--dot", is_flag=True, help="Print the operation graph as Graphviz text instead (partitions as "
                                          "clusters): nnconv inspect M.nnapi --dot | dot -Tsvg > m.svg")
@verbosity_options
@handle_errors
def inspect(file: str, with_ops: bool, fmt: str, dot: bool) -> None:
    """Summarize FILE (.tflite or .nnapi): ops by type, tensors, constants, subgraphs, signatures, metadata,
    and for .nnapi files the provenance and partitions."""
    from nnconv.inspection import load, op_rows, ops_table_text, summary_of, summary_text, to_dot
    if dot and (with_ops or fmt != "text"):
        raise NnconvError("--dot prints only the Graphviz graph: drop --ops / --format")
    loaded = load(file)
    if dot:
        common.emit(to_dot(loaded), nl=False)
        return
    summary = summary_of(loaded, file)
    if fmt == "json":
        if with_ops:
            summary["ops"] = op_rows(loaded)
        common.emit(json.dumps(summary, indent=2))
        return
    common.out.print(summary_text(summary), markup=False)
    if with_ops:
        common.out.print(ops_table_text(op_rows(loaded)), markup=False)
