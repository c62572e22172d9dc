"""`nnconv check`: the offline NNAPI compatibility report (rendering lives in `nnconv.report`)."""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import Any, Callable, Sequence

import click
from rich.console import Console

from nnconv.cli import common
from nnconv.cli.check_options import CheckOptions
from nnconv.cli.scale import Batch, scale_options
from nnconv.cli.common import (
    feature_level_option,
    fold_weights_option,
    input_shape_option,
    handle_errors,
    parsed,
    target_option,
    verbosity_options,
)
from nnconv.errors import EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_NOT_CONVERTIBLE, folder_exit_code
from nnconv.nnapi.levels import ALL_API_LEVELS
from nnconv.parallel import Failed, guarded
from nnconv.report.analysis import ModelCheck, check_at, check_levels, check_one, matrices
from nnconv.report.formats import CHECK_FORMATS, CheckFormat
from nnconv.report.junit import check_cases, matrix_cases
from nnconv.report.render import progress
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
@parsed(CheckOptions.from_params)
def check(options: CheckOptions) -> None:
    """Report, per op, whether NNAPI takes MODEL at an API level, why not, and from which level.

    MODELS are .tflite files or folders of them. The table becomes one op per line below 100 columns;
    -v lists every NNAPI op of long expansions and the inputs' quantization, -q prints only the verdict
    line of each model."""
    code = run_check(options, common.out, common.err)
    if code:
        raise SystemExit(code)


def run_check(options: CheckOptions, out: Console, err: Console) -> int:
    """Runs `nnconv check`; returns the exit code (0; 1 when a policy is violated; that of `convert` when a
    partition fails to lower)."""
    batch = options.batch
    if not options.models:  # this shard holds none of the models
        err.print(f"nnconv: shard {batch.shard[0]}/{batch.shard[1]} holds none of the models", markup=False)
        batch.write_junit("nnconv.check", [])
        return 0
    if options.every_level:
        return _check_every_level(options, out, err)
    name_of = options.name_of
    with common.timed("check"):
        if options.devices:
            with_devices, failures = _check_devices(options, err)
            checks = [d.check for d in with_devices]
        else:
            with_devices = []
            checks, failures = _check_spec(options, err)
    for c in checks:  # named as every table names them, relative to the folder given
        c.name = name_of.get(c.path, "")
    failures = [replace(f, name=name_of.get(f.path, "")) for f in failures]
    policies = options.policies
    batch.write_junit("nnconv.check", check_cases(checks, failures, policies.violations, options.level, name_of))
    if not checks:
        return _report_failures(failures, options.fmt, out, err, False)
    if options.node_data is not None:
        from nnconv.report.node_data import check_node_data, write_node_data
        common.info(write_node_data(options.node_data, check_node_data(checks[0]), checks[0].path))
    _render(options, checks, with_devices, failures, out, err)
    unchecked = _report_failures(failures, options.fmt, out, err, True)
    violations = [v for c in checks for v in policies.violations(c)]
    for v in violations:
        err.print(f"nnconv: policy violated: {v}", markup=False)
    return _lowering_exit_code(checks, err) or folder_exit_code(bool(violations), [unchecked] if unchecked else [])


def _render(options: CheckOptions, checks: Sequence[ModelCheck], with_devices: Sequence[Any],
            failures: Sequence[Failed], out: Console, err: Console) -> None:
    """The report in the chosen format: with devices, each model's spec report and its devices together
    (nnconv/devices/render.py, one renderer per format); else one model's report, or one row per model."""
    verbose, quiet = common.verbosity == common.VERBOSE, common.verbosity == common.QUIET
    if with_devices:
        from nnconv.devices.render import device_format
        device_format(options.fmt.name).render(with_devices, out, err, verbose=verbose, quiet=quiet)
    elif len(checks) == 1 and not failures:
        options.fmt.one(checks[0], out, err, verbose=verbose, quiet=quiet)
    else:
        options.fmt.several(checks, out, err, quiet=quiet, failures=failures)


def _check_spec(options: CheckOptions, err: Console) -> tuple[list[ModelCheck], list[Failed]]:
    """Each model's report at the target level, and the models that could not be checked."""
    paths = options.paths
    return _split(progress(paths, err, _each(paths, functools.partial(
        check_one, level=options.level, options=options.conversion, max_partitions=options.max_partitions),
        options.batch), options.jobs, scheduler=options.batch.scheduler))


def _lowering_exit_code(checks: Sequence[ModelCheck], err: Console) -> int:
    """`check` is the gate in front of `convert`: a partition that did not lower fails it with the exit code
    `convert` would give (2 bad input, 3 not convertible, 4 our bug), after the report is printed; 0 when
    every model converts as reported."""
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
    return 0


def _check_every_level(options: CheckOptions, out: Console, err: Console) -> int:
    """`--api-level all`: the op x API level matrix of each model."""
    paths, name_of, batch = options.paths, options.name_of, options.batch
    with common.timed("check"):
        if batch.scheduler is None:
            mats, failures = _split(progress(paths, err, _each(paths, functools.partial(
                check_levels, options=options.conversion, max_partitions=options.max_partitions), batch),
                options.jobs))
        else:  # one task per model and level, gathered per model as check_levels would
            cells = [(p, lv) for p in paths for lv in ALL_API_LEVELS]
            fn = functools.partial(guarded, fn=functools.partial(check_at, options=options.conversion,
                                                                 max_partitions=options.max_partitions))
            mats, failures = _split(matrices(list(zip(cells, progress(cells, err, fn,
                                                                      scheduler=batch.scheduler)))))
    for mat in mats:
        mat.name = name_of.get(mat.path, "")
    failures = [replace(f, name=name_of.get(f.path, "")) for f in failures]
    if mats:
        options.fmt.matrix(mats, out, failures, quiet=common.verbosity == common.QUIET)
    batch.write_junit("nnconv.check", matrix_cases(mats, failures, name_of))
    return _report_failures(failures, options.fmt, out, err, bool(mats)) or 0


def _each(paths: Sequence[str], fn: Callable[[str], Any], batch: Batch) -> Callable[[str], Any]:
    """`fn` for one model run here (its errors end the command as usual); for several, on a cluster, or with
    a JUnit report (which records the model in error), `fn` guarded so that a model that cannot be read
    becomes a row of its own and the others are still reported, as `verify` does."""
    alone = len(paths) == 1 and batch.scheduler is None and batch.junit is None
    return fn if alone else functools.partial(guarded, fn=fn)


def _split(results: Sequence[Any]) -> tuple[list[Any], list[Failed]]:
    return [r for r in results if not isinstance(r, Failed)], [r for r in results if isinstance(r, Failed)]


def _report_failures(failures: Sequence[Failed], fmt: CheckFormat, out: Console, err: Console, rendered: bool) -> int:
    """Prints the models that could not be checked (in the format's own document when nothing else was
    rendered, and one `nnconv: error:` line each on stderr); returns the exit code of the first (0 when
    none)."""
    if not failures:
        return 0
    if not rendered:
        fmt.nothing_checked(failures, out)
    for f in failures:
        line = f.error if f.error.startswith((f.path, f.label)) else f"{f.label}: {f.error}"
        err.print(f"nnconv: error: {line}", markup=False)
    if len(failures) > 1 or rendered:  # one model alone: its error line says it all
        err.print(f"nnconv: {plural(len(failures), 'model')} could not be checked", markup=False)
    return failures[0].exit_code


def _check_devices(options: CheckOptions, err: Console) -> tuple[list[Any], list[Failed]]:
    """`check --device`: each model's spec report with every device's verdicts and plan
    (`DeviceModelCheck`s), and the models that could not be checked."""
    from nnconv.devices.device_check import check_with_devices
    paths = options.paths
    return _split(progress(paths, err, _each(paths, functools.partial(
        check_with_devices, level=options.level, profiles=list(options.devices), options=options.conversion,
        max_partitions=options.max_partitions), options.batch), options.jobs, scheduler=options.batch.scheduler))
