"""`nnconv verify`: convert a model, run it on our executor and on TFLite, and compare every output."""

from __future__ import annotations

import json
import os
from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from nnconv.cli import common
from nnconv.cli.common import (
    api_level_option,
    conversion_options,
    feature_level_option,
    fold_weights_option,
    handle_errors,
    relax_option,
    resolve_api_level,
    warn_deprecated,
)
from nnconv.cli.npz_io import load_npz
from nnconv.errors import EXIT_FAILURE


@click.command()
@click.argument("model", type=click.Path())
@api_level_option
@feature_level_option
@click.option("--inputs", "inputs_path", type=click.Path(), default=None,
              help=".npz of inputs (default: seeded random inputs).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random inputs.")
@click.option("--kernels", type=click.Choice(["builtin", "reference", "xnnpack"]), default="builtin",
              show_default=True, help="TFLite kernels to compare against: optimized builtin kernels without "
                                      "delegates, the reference kernels, or the default XNNPACK path.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@fold_weights_option
@relax_option
@handle_errors
def verify(model: str, api_level: int | None, feature_level: int | None, inputs_path: str | None, seed: int,
           kernels: str, fmt: str, fold_weights: bool, relax_fp16: bool) -> None:
    """Convert MODEL, run it on our executor and on TFLite, and compare every output."""
    from nnconv.parity.partitioned import verify_model
    level = resolve_api_level(api_level, feature_level)
    warn_deprecated(level)
    options = conversion_options(fold_weights, relax_fp16)
    inputs = load_npz(inputs_path) if inputs_path else None
    report = verify_model(model, level, options, inputs=inputs, seed=seed, kernels=kernels)
    if fmt == "json":
        click.echo(json.dumps(report.to_json(), indent=2))
    else:
        print_parity(report)
    if not report.passed:
        raise SystemExit(EXIT_FAILURE)


def print_parity(report: Any) -> None:
    table = Table(title=f"{os.path.basename(report.model)} at API {report.api_level} "
                        f"(TFLite {report.kernels} kernels)")
    for col in ("output", "dtype", "shape", "max |diff|", "max rel", "LSB", "tolerance", "result"):
        table.add_column(col)
    for o in report.outputs:
        detail = escape(o.detail)
        table.add_row(o.name, o.dtype, "x".join(map(str, o.shape)), f"{o.max_abs:.3g}", f"{o.max_rel:.3g}",
                      "-" if o.max_lsb is None else str(o.max_lsb), o.tolerance.describe(),
                      f"[green]PASS[/green] {detail}" if o.passed else f"[red]FAIL[/red] {detail}")
    common.out.print(table)
    if getattr(report, "note", ""):
        common.out.print(f"note: {report.note}", markup=False)
    common.out.print("PASS" if report.passed else "FAIL", markup=False)
