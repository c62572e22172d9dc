"""The `nnconv` command line: convert, run, verify, check, ops.

Data goes to stdout, logs and errors to stderr. Colour is off when stdout is not a terminal or NO_COLOR is
set. Exit codes: 0 ok; 1 parity failure or policy violation; 2 usage error or unreadable/invalid input;
3 model not convertible at the target level; 4 internal error (set NNCONV_DEBUG=1 for the traceback).
"""

from __future__ import annotations

import functools
import json
import os
import sys
import zipfile
from typing import Any, Callable

import click
import numpy as np
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from nnconv.errors import (EXIT_FAILURE, EXIT_NOT_CONVERTIBLE, ConversionError, InputDataError,
                           NnconvError)
from nnconv.nnapi.enums import API_LEVELS, DEPRECATED_FROM_API, api_level_of_feature_level

EXIT_INTERNAL = 4


def _console(stderr: bool = False) -> Console:
    # NO_COLOR (https://no-color.org): any non-empty value turns every ANSI style off, not only colours.
    no_color = bool(os.environ.get("NO_COLOR"))
    stream = sys.stderr if stderr else sys.stdout
    # emoji=False: a path such as "a:thumbs_up:b" must print as written.
    return Console(stderr=stderr, no_color=no_color, color_system=None if no_color else "auto", highlight=False,
                   emoji=False, soft_wrap=True, width=None if stream.isatty() else 160)


out = _console()
err = _console(stderr=True)


def fail(message: str, code: int) -> None:
    """Prints one line to stderr and exits with `code`."""
    one_line = " ".join(str(message).split())
    err.print(f"nnconv: error: {one_line}", markup=False)
    raise SystemExit(code)


def handle_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turns every error into one line on stderr and a documented exit code (never a traceback)."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ConversionError as e:
            for d in e.diagnostics:
                err.print(f"  {d.one_line()}", markup=False)
            fail(str(e), EXIT_NOT_CONVERTIBLE)
        except NnconvError as e:
            fail(str(e), e.exit_code)
        except (click.exceptions.Exit, click.ClickException, SystemExit, KeyboardInterrupt):
            raise
        except MemoryError:
            fail("out of memory", EXIT_INTERNAL)
        except Exception as e:  # noqa: BLE001 - last line of defence for the one-line-error promise
            if os.environ.get("NNCONV_DEBUG"):
                raise
            fail(f"internal error: {type(e).__name__}: {e} (set NNCONV_DEBUG=1 for a traceback)", EXIT_INTERNAL)
    return wrapper


def resolve_api_level(api_level: int | None, feature_level: int | None) -> int:
    if api_level is not None and feature_level is not None:
        raise click.UsageError("give --api-level or --feature-level, not both")
    if feature_level is not None:
        return api_level_of_feature_level(feature_level)
    level = 30 if api_level is None else api_level
    if level == 32:
        level = 31
    if level not in API_LEVELS:
        raise click.BadParameter(f"{level} is not one of {', '.join(map(str, API_LEVELS))}", param_hint="--api-level")
    return level


def warn_deprecated(level: int) -> None:
    if level >= DEPRECATED_FROM_API:
        err.print(f"warning: NNAPI is deprecated from Android 15 (API {DEPRECATED_FROM_API}); "
                  "consider LiteRT's GPU or vendor delegates for new apps", markup=False)


api_level_option = click.option("--api-level", type=int, default=None,
                                 help="Target Android API level 27..35 (33/34/35 = feature levels 6/7/8). Default 30.")
feature_level_option = click.option("--feature-level", type=click.IntRange(1, 8), default=None,
                                    help="Target NNAPI feature level 1..8 (alias of --api-level).")


def conversion_options(fold_weights: bool, relax_fp16: bool):
    from nnconv.lowering.convert import ConversionOptions
    return ConversionOptions(fold_dynamic_range_weights=fold_weights, relax_float32_to_float16=relax_fp16)


fold_weights_option = click.option("--fold-weights", is_flag=True,
                                   help="Fold dynamic-range int8 weights into float32 constants (lets hybrid "
                                        "models lower at API 27/28).")
relax_option = click.option("--relax-fp16", is_flag=True,
                            help="Set relaxComputationFloat32toFloat16 in the NNAPI model (API 28+).")


def _version() -> str:
    from nnconv import __version__
    return __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(version=_version(), prog_name="nnconv")  # works from a source tree, not only installed
def main() -> None:
    """Convert TFLite models to Android NNAPI, check NNAPI compatibility offline, and prove parity."""
    # Consoles are rebuilt per invocation so NO_COLOR and the current streams apply (tests, embedding).
    global out, err
    out = _console()
    err = _console(stderr=True)


# -- convert ----------------------------------------------------------------------------------------
@main.command()
@click.argument("model", type=click.Path())
@click.option("-o", "--output", type=click.Path(dir_okay=False), required=True, help="The .nnapi file to write.")
@api_level_option
@feature_level_option
@click.option("--allow-partial", is_flag=True, help="Write the supported partitions and the partition plan "
                                                     "instead of failing on refused ops.")
@fold_weights_option
@relax_option
@click.option("--emit-c", "emit_c_path", type=click.Path(dir_okay=False), default=None,
              help="Also write C source that builds the model with the NDK, reading the weights from the "
                   ".nnapi file (docs/nnapi-format.md).")
@handle_errors
def convert(model: str, output: str, api_level: int | None, feature_level: int | None, allow_partial: bool,
            fold_weights: bool, relax_fp16: bool, emit_c_path: str | None) -> None:
    """Convert MODEL (.tflite) into an NNAPI model file (.nnapi)."""
    from nnconv.lowering.convert import convert as do_convert
    from nnconv.nnapi import serialize
    level = resolve_api_level(api_level, feature_level)
    warn_deprecated(level)
    options = conversion_options(fold_weights, relax_fp16)
    if allow_partial:
        from nnconv.partition import convert_partial
        plan = convert_partial(model, level, options)
        serialize.save(output, plan.converted, plan=plan.to_json())
        err.print(f"wrote {output}: {len(plan.converted)} partition(s), {plan.summary_line()}", markup=False)
    else:
        try:
            converted, report = do_convert(model, level, options)
        except ConversionError as e:
            # Say what the user can do next; the diagnostics above the line say why.
            raise ConversionError(f"{e}; --allow-partial writes the parts that lower, `nnconv check` "
                                  "explains each op", e.diagnostics) from None
        serialize.save(output, [converted])
        n_ops = len(converted.model.main.operations)
        err.print(f"wrote {output}: {len(report.ops)} TFLite ops -> {n_ops} NNAPI operations at API {level}",
                  markup=False)
    if emit_c_path:
        from nnconv.nnapi.emit_c import write_c
        # From the file just written, so the C code's pool offsets are those of the file on disk.
        write_c(emit_c_path, serialize.load(output), output)
        err.print(f"wrote {emit_c_path}: NDK C source reading its weights from {output}", markup=False)


# -- run --------------------------------------------------------------------------------------------
def load_npz(path: str) -> dict[str, np.ndarray]:
    """The arrays of an .npz file by key; any unreadable file is an InputDataError (exit 2)."""
    try:
        data = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise InputDataError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputDataError(f"{path}: is a directory, not an .npz file") from None
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as e:
        raise InputDataError(f"{path}: not a readable .npz file ({_reason(e)})") from None
    if isinstance(data, np.ndarray):  # a bare .npy: say what is expected rather than guessing its name
        raise InputDataError(f"{path}: is a single .npy array; pass an .npz (np.savez) with one array per input")
    try:
        with data:
            return {k: data[k] for k in data.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError, KeyError) as e:
        raise InputDataError(f"{path}: not a readable .npz file ({_reason(e)})") from None


def _reason(e: BaseException) -> str:
    return " ".join(str(e).split()) or type(e).__name__


def save_npz(path: str, arrays: dict[str, np.ndarray]) -> None:
    try:
        with open(path, "wb") as f:
            np.savez(f, **arrays)
    except OSError as e:
        raise NnconvError(f"{path}: cannot write ({e.strerror or e})") from None


@main.command()
@click.argument("nnapi_model", type=click.Path())
@click.option("--inputs", "inputs_path", type=click.Path(), required=True,
              help=".npz with one array per model input, by input name or arr_0, arr_1, ...")
@click.option("-o", "--output", type=click.Path(dir_okay=False), required=True, help=".npz to write the outputs to.")
@click.option("--trace", is_flag=True, help="Print each NNAPI operation's output dtype, shape and range to stderr.")
@click.option("--partition", type=int, default=None,
              help="Run this partition of a file written with --allow-partial (its inputs are the TFLite "
                   "tensors entering it).")
@handle_errors
def run(nnapi_model: str, inputs_path: str, output: str, trace: bool, partition: int | None) -> None:
    """Run an NNAPI model file on the numpy executor."""
    from nnconv.executor import Executor, Trace
    from nnconv.nnapi import serialize
    loaded = serialize.load(nnapi_model)
    n = len(loaded.partitions)
    if partition is None:
        if n != 1:
            raise NnconvError(f"{nnapi_model} holds {n} partitions (written with --allow-partial); pass "
                              f"--partition 0..{n - 1} to run one, or use `nnconv verify` on the .tflite")
        partition = 0
    elif not 0 <= partition < n:
        raise click.BadParameter(f"{nnapi_model} has partitions 0..{n - 1}", param_hint="--partition")
    inputs = load_npz(inputs_path)
    ex = Executor(loaded.partitions[partition], trace=Trace(stream=sys.stderr) if trace else None)
    outputs = ex.run(inputs)
    save_npz(output, outputs)
    err.print(f"wrote {output}: " + ", ".join(f"{k} {v.dtype}{list(v.shape)}" for k, v in outputs.items()),
              markup=False)


# -- verify -----------------------------------------------------------------------------------------
@main.command()
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
    out.print(table)
    if getattr(report, "note", ""):
        out.print(f"note: {report.note}", markup=False)
    out.print("PASS" if report.passed else "FAIL", markup=False)


# -- check ------------------------------------------------------------------------------------------
@main.command()
@click.argument("models", nargs=-1, required=True, type=click.Path())
@click.option("--api-level", "api_level", type=str, default=None,
              help="Target API level 27..35, or 'all' for the op x level table. Default 30.")
@feature_level_option
@click.option("--format", "fmt", type=click.Choice(["table", "json", "csv", "md"]), default="table",
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
@fold_weights_option
@handle_errors
def check(models: tuple[str, ...], api_level: str | None, feature_level: int | None, fmt: str,
          max_partitions: int, fail_on: str | None, min_coverage: float | None,
          max_partitions_allowed: int | None, fold_weights: bool) -> None:
    """Report, per op, whether NNAPI takes MODEL at an API level, why not, and from which level."""
    from nnconv.report import run_check
    code = run_check(models, api_level, feature_level, fmt, max_partitions, fail_on, min_coverage,
                     max_partitions_allowed, conversion_options(fold_weights, False), out, err)
    if code:
        raise SystemExit(code)


# -- ops --------------------------------------------------------------------------------------------
@main.command()
@click.option("--format", "fmt", type=click.Choice(["table", "json", "md"]), default="table", show_default=True)
@handle_errors
def ops(fmt: str) -> None:
    """List the TFLite ops nnconv lowers, the NNAPI ops they become and from which API level."""
    from nnconv.opsdoc import ops_json, ops_markdown
    data = ops_json()
    if fmt == "json":
        click.echo(json.dumps(data, indent=2))
    elif fmt == "md":
        click.echo(ops_markdown(), nl=False)  # the text ends with its own newline
    else:
        table = Table(title=f"{len(data['ops'])} TFLite ops")
        for col in ("TFLite op", "NNAPI ops", "min API", "dtypes", "constraints"):
            table.add_column(col)
        for o in data["ops"]:
            table.add_row(o["op"], ", ".join(o["nnapi_ops"]), str(o["min_api_level"]), ", ".join(o["dtypes"]),
                          o["constraints"])
        out.print(table)


if __name__ == "__main__":  # pragma: no cover
    main()
