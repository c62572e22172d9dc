"""`nnconv check`: the offline NNAPI compatibility report (rendering lives in `nnconv.report`)."""

from __future__ import annotations

import functools
import json
from dataclasses import replace
from typing import Any, Callable, Sequence

import click
from rich.console import Console

from nnconv.cli import common
from nnconv.cli.scale import Batch, scale_options
from nnconv.cli.common import (
    conversion_options,
    feature_level_option,
    fold_weights_option,
    input_shape_option,
    handle_errors,
    target_option,
    resolve_api_level,
    verbosity_options,
)
from nnconv.errors import EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_NOT_CONVERTIBLE, folder_exit_code
from nnconv.lowering.convert import ConversionOptions
from nnconv.nnapi.levels import ALL_API_LEVELS, ApiLevel, is_all
from nnconv.parallel import Failed, guarded
from nnconv.report.analysis import (
    SCHEMA_VERSION,
    CheckUsageError,
    Policies,
    check_at,
    check_levels,
    check_one,
    matrices,
    summary_line,
)
from nnconv.report.formats import CHECK_FORMATS
from nnconv.report.junit import check_cases, matrix_cases
from nnconv.report.render import print_raw, progress
from nnconv.tflite.model_paths import named_models
from nnconv.fmt import plural


EPILOG = """\b
Examples:
  nnconv check model.tflite --api-level 29
  nnconv check models/ --api-level all --format md
  nnconv check model.tflite --fail-on refused --min-coverage 90 -q    (a CI gate)
  nnconv check model.tflite --device armnn-hal1.3 --device reference  (devices side by side)
  nnconv check model.tflite --device probe-out/                       (what a phone said, `nnconv probe`)"""


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
@click.option("--device", "devices", multiple=True, metavar="PROFILE",
              help="Also report what this device takes and the delegate's partitions with it: a shipped "
                   "profile's name (`nnconv devices`), a profile file or a folder of them. Repeatable.")
@scale_options
@target_option
@fold_weights_option
@input_shape_option
@verbosity_options
@handle_errors
def check(models: tuple[str, ...], api_level: str | None, feature_level: int | None, fmt: str,
          max_partitions: int, fail_on: str | None, min_coverage: float | None,
          max_partitions_allowed: int | None, jobs: int, node_data: str | None, target: str, fold_weights: bool,
          input_shapes: tuple[str, ...], shard: tuple[int, int] | None, junit: str | None,
          scheduler: str | None, devices: tuple[str, ...]) -> None:
    """Report, per op, whether NNAPI takes MODEL at an API level, why not, and from which level.

    MODELS are .tflite files or folders of them. The table becomes one op per line below 100 columns;
    -v lists every NNAPI op of long expansions and the inputs' quantization, -q prints only the verdict
    line of each model."""
    code = run_check(models, api_level, feature_level, fmt, max_partitions, fail_on, min_coverage,
                     max_partitions_allowed, conversion_options(fold_weights, False, input_shapes, target), common.out,
                     common.err,
                     node_data, jobs, Batch(shard, junit, scheduler), devices)
    if code:
        raise SystemExit(code)


def run_check(models: tuple[str, ...], api_level: str | None, feature_level_: int | None, fmt: str,
              max_partitions: int, fail_on: str | None, min_coverage: float | None,
              max_partitions_allowed: int | None, options: ConversionOptions, out: Console, err: Console,
              node_data: str | None = None, jobs: int = 1, batch: Batch | None = None,
              devices: tuple[str, ...] = ()) -> int:
    """Runs `nnconv check`; returns the exit code (0; 1 when a policy is violated; that of `convert` when a
    partition fails to lower)."""
    policies = Policies(fail_on, min_coverage, max_partitions_allowed)
    batch = batch or Batch()
    named = named_models(models, batch.shard)
    paths = [path for path, _ in named]
    name_of = dict(named)
    if not paths:  # this shard holds none of the models
        err.print(f"nnconv: shard {batch.shard[0]}/{batch.shard[1]} holds none of the models", markup=False)
        batch.write_junit("nnconv.check", [])
        return 0
    if node_data is not None and (len(paths) != 1 or is_all(api_level)):
        raise CheckUsageError("--node-data takes one model at one API level")
    if is_all(api_level):
        if devices:
            raise CheckUsageError("--device needs one target level, not --api-level all")
        if feature_level_ is not None:
            raise CheckUsageError("give --api-level all or --feature-level, not both")
        if policies.any:
            raise CheckUsageError("--fail-on, --min-coverage and --max-partitions-allowed need one target level, "
                                  "not --api-level all")
        with common.timed("check"):
            if batch.scheduler is None:
                mats, failures = _split(progress(paths, err, _each(paths, functools.partial(
                    check_levels, options=options, max_partitions=max_partitions), batch), jobs))
            else:  # one task per model and level, gathered per model as check_levels would
                cells = [(p, lv) for p in paths for lv in ALL_API_LEVELS]
                fn = functools.partial(guarded, fn=functools.partial(check_at, options=options,
                                                                     max_partitions=max_partitions))
                mats, failures = _split(matrices(list(zip(cells, progress(cells, err, fn,
                                                                          scheduler=batch.scheduler)))))
        for mat in mats:
            mat.name = name_of.get(mat.path, "")
        failures = [replace(f, name=name_of.get(f.path, "")) for f in failures]
        if mats and fmt == "table" and common.verbosity == common.QUIET:  # verdicts only: a line per model and level
            for mat in mats:
                for lv, c in mat.checks.items():
                    out.print(f"{mat.label}: API {lv}: {summary_line(c)}", markup=False)
        elif mats:
            CHECK_FORMATS[fmt].matrix(mats, out, failures)
        if mats and fmt in ("table", "md"):  # a row of its own for each model that could not be checked
            for f in failures:
                out.print(f"{f.label}: ERROR {f.error}", markup=False)
        batch.write_junit("nnconv.check", matrix_cases(mats, failures, name_of))
        return _report_failures(failures, fmt, out, err, bool(mats)) or 0
    level = resolve_api_level(api_level, feature_level_, also=" or 'all'")
    if devices:
        checks, failures = _check_devices(paths, name_of, level, devices, fmt, max_partitions, options, out, err,
                                          jobs, batch)
    else:
        with common.timed("check"):
            checks, failures = _split(progress(paths, err, _each(paths, functools.partial(
                check_one, level=level, options=options, max_partitions=max_partitions), batch), jobs,
                scheduler=batch.scheduler))
    for c in checks:
        c.name = name_of.get(c.path, "")
    failures = [replace(f, name=name_of.get(f.path, "")) for f in failures]
    batch.write_junit("nnconv.check", check_cases(checks, failures, policies.violations, level, name_of))
    if not checks:
        return _report_failures(failures, fmt, out, err, False)
    if node_data is not None:
        from nnconv.report.node_data import check_node_data, write_node_data
        common.info(write_node_data(node_data, check_node_data(checks[0]), checks[0].path))
    renderer = CHECK_FORMATS[fmt]
    quiet = common.verbosity == common.QUIET
    if devices:
        pass  # already printed, with the devices
    elif len(checks) == 1 and not failures:
        renderer.one(checks[0], out, err, verbose=common.verbosity == common.VERBOSE, quiet=quiet)
    else:
        renderer.several(checks, out, err, quiet=quiet, failures=failures)
    unchecked = _report_failures(failures, fmt, out, err, True)
    violations = [v for c in checks for v in policies.violations(c)]
    for v in violations:
        err.print(f"nnconv: policy violated: {v}", markup=False)
    # `check` is the gate in front of `convert`: a partition that did not lower fails it with the exit code
    # `convert` would give (2 bad input, 3 not convertible, 4 our bug), after the report is printed.
    unprepared = [c for c in checks if c.plan.outcome == "cpu_prepare_failed"]
    if unprepared:  # TFLite itself cannot run the model: bad input for every command, after the report
        line = " ".join(f"{unprepared[0].label}: TFLite cannot prepare this model: "
                        f"{unprepared[0].plan.outcome_reason}".split())
        err.print(f"nnconv: error: {line}", markup=False)
        return EXIT_BAD_INPUT
    failed = [(c, p) for c in checks for p in c.plan.partitions if p.error]
    if failed:
        c, p = failed[0]
        bug = " (a bug in nnconv: please report it with the model)" if p.error_exit_code == EXIT_INTERNAL else ""
        line = " ".join(f"{c.label}: partition {p.index} failed to lower: {p.error}{bug}".split())
        err.print(f"nnconv: error: {line}", markup=False)
        return p.error_exit_code
    blocked = [c for c in checks if c.whole_refusal and c.report.ok]
    if blocked:  # every op lowers, yet `convert` cannot write the model whole: the same exit 3
        line = " ".join(f"{blocked[0].label}: {blocked[0].whole_refusal}".split())
        err.print(f"nnconv: error: {line}", markup=False)
        return EXIT_NOT_CONVERTIBLE
    return folder_exit_code(bool(violations), [unchecked] if unchecked else [])


def _each(paths: Sequence[str], fn: Callable[[str], Any], batch: Batch) -> Callable[[str], Any]:
    """`fn` for one model run here (its errors end the command as usual); for several, on a cluster, or with
    a JUnit report (which records the model in error), `fn` guarded so that a model that cannot be read
    becomes a row of its own and the others are still reported, as `verify` does."""
    alone = len(paths) == 1 and batch.scheduler is None and batch.junit is None
    return fn if alone else functools.partial(guarded, fn=fn)


def _split(results: Sequence[Any]) -> tuple[list[Any], list[Failed]]:
    return [r for r in results if not isinstance(r, Failed)], [r for r in results if isinstance(r, Failed)]


def _report_failures(failures: Sequence[Failed], fmt: str, out: Console, err: Console, rendered: bool) -> int:
    """Prints the models that could not be checked (in the JSON when nothing else was rendered, else one
    `nnconv: error:` line each on stderr); returns the exit code of the first (0 when none)."""
    if not failures:
        return 0
    if fmt == "json" and not rendered:
        print_raw(out, json.dumps({"schema_version": SCHEMA_VERSION, "models": [],
                                   "errors": [f.to_json() for f in failures]}, indent=2))
    for f in failures:
        line = f.error if f.error.startswith((f.path, f.label)) else f"{f.label}: {f.error}"
        err.print(f"nnconv: error: {line}", markup=False)
    if len(failures) > 1 or rendered:  # one model alone: its error line says it all
        err.print(f"nnconv: {plural(len(failures), 'model')} could not be checked", markup=False)
    return failures[0].exit_code


def _check_devices(paths: list[str], name_of: dict[str, str], level: ApiLevel, devices: tuple[str, ...], fmt: str,
                   max_partitions: int, options: ConversionOptions, out: Console, err: Console, jobs: int,
                   batch: Batch) -> tuple[list, list[Failed]]:
    """`check --device`: the spec report and every device's verdicts and plan, printed; returns the spec
    checks (for the policies, which stay those of the spec) and the models that could not be checked."""
    from nnconv.devices.device_check import check_with_devices
    from nnconv.devices.profile import resolve_profiles
    from nnconv.devices.render import render_devices
    profiles = resolve_profiles(devices)
    with common.timed("check"):
        results, failures = _split(progress(paths, err, _each(paths, functools.partial(
            check_with_devices, level=level, profiles=profiles, options=options, max_partitions=max_partitions),
            batch), jobs, scheduler=batch.scheduler))
    for d in results:  # named as every table names them, relative to the folder given
        d.check.name = name_of.get(d.check.path, "")
    if fmt == "table" and common.verbosity == common.QUIET:
        for d in results:
            out.print(f"{d.check.label}: API {d.check.api_level}: {summary_line(d.check)}", markup=False)
            for dc in d.devices:
                out.print(f"{d.check.label}: API {d.check.api_level}: {dc.summary_line()}", markup=False)
    else:
        render_devices(results, fmt, out, err, verbose=common.verbosity == common.VERBOSE)
    return [d.check for d in results], failures
