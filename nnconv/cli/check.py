"""`nnconv check`: the offline NNAPI compatibility report (rendering lives in `nnconv.report`)."""

from __future__ import annotations

import functools

import click
from rich.console import Console

from nnconv.cli import common
from nnconv.cli.common import (
    conversion_options,
    feature_level_option,
    fold_weights_option,
    input_shape_option,
    handle_errors,
    resolve_api_level,
    verbosity_options,
)
from nnconv.errors import EXIT_FAILURE, EXIT_INTERNAL, EXIT_NOT_CONVERTIBLE
from nnconv.lowering.convert import ConversionOptions
from nnconv.nnapi.levels import is_all
from nnconv.report.analysis import CheckUsageError, Policies, check_levels, check_one
from nnconv.report.formats import CHECK_FORMATS
from nnconv.report.render import progress
from nnconv.tflite.model_paths import expand_models


EPILOG = """\b
Examples:
  nnconv check model.tflite --api-level 29
  nnconv check models/ --api-level all --format md
  nnconv check model.tflite --fail-on refused --min-coverage 90 -q    (a CI gate)"""


@click.command(short_help="Report per op whether NNAPI takes a model at an API level, why not, and from "
                          "which level.", epilog=EPILOG)
@click.argument("models", nargs=-1, required=True, type=click.Path())
@click.option("--api-level", "api_level", type=str, default=None,
              help="Target API level 27..35, or 'all' for the op x level table. Default 30.")
@feature_level_option
@click.option("--format", "fmt", type=click.Choice(list(CHECK_FORMATS)), default="table",
              show_default=True)
@click.option("--max-partitions", type=int, default=3, show_default=True,
              help="Partitions the delegate keeps (largest first), like max_number_delegated_partitions; "
                   "0 = unlimited.")
@click.option("--fail-on", type=click.Choice(["refused", "warning"]), default=None,
              help="Exit 1 when any op is refused (or, with 'warning', also on driver warnings).")
@click.option("--min-coverage", type=click.FloatRange(0, 100), default=None,
              help="Exit 1 when fewer than this percentage of ops is lowered.")
@click.option("--max-partitions-allowed", type=int, default=None,
              help="Exit 1 when the plan has more partitions than this.")
@click.option("--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="Models checked in parallel processes (several models or folders).")
@click.option("--node-data", "node_data", type=click.Path(), default=None,
              help="Write a Model Explorer node-data file colouring each op by partition / verdict (one model).")
@fold_weights_option
@input_shape_option
@verbosity_options
@handle_errors
def check(models: tuple[str, ...], api_level: str | None, feature_level: int | None, fmt: str,
          max_partitions: int, fail_on: str | None, min_coverage: float | None,
          max_partitions_allowed: int | None, jobs: int, node_data: str | None, fold_weights: bool,
          input_shapes: tuple[str, ...]) -> None:
    """Report, per op, whether NNAPI takes MODEL at an API level, why not, and from which level.

    MODELS are .tflite files or folders of them. The table becomes one op per line below 100 columns;
    -v lists every NNAPI op of long expansions and the inputs' quantization, -q prints only the verdict
    line of each model."""
    code = run_check(models, api_level, feature_level, fmt, max_partitions, fail_on, min_coverage,
                     max_partitions_allowed, conversion_options(fold_weights, False, input_shapes), common.out,
                     common.err,
                     node_data, jobs)
    if code:
        raise SystemExit(code)


def run_check(models: tuple[str, ...], api_level: str | None, feature_level_: int | None, fmt: str,
              max_partitions: int, fail_on: str | None, min_coverage: float | None,
              max_partitions_allowed: int | None, options: ConversionOptions, out: Console, err: Console,
              node_data: str | None = None, jobs: int = 1) -> int:
    """Runs `nnconv check`; returns the exit code (0; 1 when a policy is violated; that of `convert` when a
    partition fails to lower)."""
    policies = Policies(fail_on, min_coverage, max_partitions_allowed)
    paths = expand_models(models)
    if node_data is not None and (len(paths) != 1 or is_all(api_level)):
        raise CheckUsageError("--node-data takes one model at one API level")
    if is_all(api_level):
        if feature_level_ is not None:
            raise CheckUsageError("give --api-level all or --feature-level, not both")
        if policies.any:
            raise CheckUsageError("--fail-on, --min-coverage and --max-partitions-allowed need one target level, "
                                  "not --api-level all")
        with common.timed("check"):
            mats = progress(paths, err, functools.partial(check_levels, options=options,
                                                          max_partitions=max_partitions), jobs)
        CHECK_FORMATS[fmt].matrix(mats, out)
        return 0
    level = resolve_api_level(api_level, feature_level_, also=" or 'all'")
    with common.timed("check"):
        checks = progress(paths, err, functools.partial(check_one, level=level, options=options,
                                                        max_partitions=max_partitions), jobs)
    if node_data is not None:
        from nnconv.report.node_data import check_node_data, write_node_data
        write_node_data(node_data, check_node_data(checks[0]))
    renderer = CHECK_FORMATS[fmt]
    quiet = common.verbosity == common.QUIET
    if len(checks) == 1:
        renderer.one(checks[0], out, err, verbose=common.verbosity == common.VERBOSE, quiet=quiet)
    else:
        renderer.several(checks, out, err, quiet=quiet)
    violations = [v for c in checks for v in policies.violations(c)]
    for v in violations:
        err.print(f"nnconv: policy violated: {v}", markup=False)
    # `check` is the gate in front of `convert`: a partition that did not lower fails it with the exit code
    # `convert` would give (2 bad input, 3 not convertible, 4 our bug), after the report is printed.
    failed = [(c, p) for c in checks for p in c.plan.partitions if p.error]
    if failed:
        c, p = failed[0]
        bug = " (a bug in nnconv: please report it with the model)" if p.error_exit_code == EXIT_INTERNAL else ""
        line = " ".join(f"{c.path}: partition {p.index} failed to lower: {p.error}{bug}".split())
        err.print(f"nnconv: error: {line}", markup=False)
        return p.error_exit_code
    blocked = [c for c in checks if c.whole_refusal and c.report.ok]
    if blocked:  # every op lowers, yet `convert` cannot write the model whole: the same exit 3
        line = " ".join(f"{blocked[0].path}: {blocked[0].whole_refusal}".split())
        err.print(f"nnconv: error: {line}", markup=False)
        return EXIT_NOT_CONVERTIBLE
    return EXIT_FAILURE if violations else 0
