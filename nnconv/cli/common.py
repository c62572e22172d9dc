"""What every `nnconv` command shares: the consoles, the one-line error handling with its exit codes, the API
level options and the conversion options, and `parsed`: a command's options as one object.

Commands read the consoles as `common.out` / `common.err` (module attributes), since `main` rebuilds them on
every invocation.
"""

from __future__ import annotations

import functools
import os
import sys
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Mapping, Sequence, TypeVar

import click
from rich.console import Console

from nnconv.errors import (
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_NOT_CONVERTIBLE,
    ConversionError,
    InternalError,
    NnconvError,
)
from nnconv.nnapi.levels import MAX_FEATURE_LEVEL, MIN_FEATURE_LEVEL, RELAX_FP16_MIN_API, ApiLevel, LevelError


# Width of the consoles when the stream is not a terminal and COLUMNS is not set: wide enough that piped
# tables keep one line per op.
PIPE_WIDTH = 160


def _width(stream: Any) -> int | None:
    """COLUMNS when set (also for pipes, so `COLUMNS=80 nnconv check ... | less` renders for 80 columns),
    else the terminal's own width, else PIPE_WIDTH."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    return None if stream.isatty() else PIPE_WIDTH


class _Console(Console):
    """A rich Console whose reader may go away: a closed pipe (`nnconv check ... | head`) discards the rest of
    the output and the command goes on to its verdict and exit code, instead of rich's exit 1 (which would
    read as a parity failure)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        try:
            fd = self.file.fileno()
        except (AttributeError, OSError, ValueError):  # not a real file (tests capture into memory)
            return
        # Further writes, and Python's flush of the stream at exit, go to /dev/null instead of raising again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)


def emit(text: str, nl: bool = True) -> None:
    """Machine-readable text (JSON, CSV, DOT) on stdout, byte for byte; a closed pipe is not an error."""
    try:
        click.echo(text, nl=nl)
    except BrokenPipeError:
        out.on_broken_pipe()


def _console(stderr: bool = False) -> Console:
    # NO_COLOR (https://no-color.org): any non-empty value turns every ANSI style off, not only colours.
    no_color = bool(os.environ.get("NO_COLOR"))
    stream = sys.stderr if stderr else sys.stdout
    # emoji=False: a path such as "a:thumbs_up:b" must print as written.
    return _Console(stderr=stderr, no_color=no_color, color_system=None if no_color else "auto", highlight=False,
                   emoji=False, soft_wrap=True, width=_width(stream))


out = _console()
err = _console(stderr=True)

# -q: -1 (verdicts only), default 0, -v: 1 (details and timings). Set by `verbosity_options` per invocation.
QUIET, NORMAL, VERBOSE = -1, 0, 1
verbosity = NORMAL
_timings: list[tuple[str, float]] = []


def reset_consoles() -> None:
    """Rebuilds both consoles so NO_COLOR and the current streams apply (tests, embedding), and forgets the
    previous invocation's verbosity and timings."""
    global out, err, verbosity
    out = _console()
    err = _console(stderr=True)
    verbosity = NORMAL
    _timings.clear()


def _print_log(message: str) -> None:
    """One log message wrapped to the console at spaces, continuation lines indented two more columns than
    the message's own indentation (file and tensor names are never split)."""
    from nnconv.fmt import print_wrapped
    lead = message[:len(message) - len(message.lstrip(" "))]
    print_wrapped(err, message.lstrip(" "), indent=lead + "  ", first_indent=lead)


def info(message: str) -> None:
    """A log line on stderr (what was written, partition counts); hidden by -q."""
    if verbosity > QUIET:
        _print_log(message)


def detail(message: str) -> None:
    """A detail line on stderr, shown only with -v."""
    if verbosity >= VERBOSE:
        _print_log(message)


def warn(message: str) -> None:
    """`warning: ...` on stderr; hidden by -q (which keeps only verdicts and errors)."""
    if verbosity > QUIET:
        _print_log(f"warning: {message}")


@contextmanager
def timed(phase: str) -> Iterator[None]:
    """Records how long `phase` took; -v prints every phase after the command's output."""
    start = time.perf_counter()
    try:
        yield
    finally:
        _timings.append((phase, time.perf_counter() - start))


def record_timing(phase: str, seconds: float) -> None:
    """A phase measured elsewhere (a library call's own timings), printed with the others by -v."""
    _timings.append((phase, seconds))


def _print_timings() -> None:
    from nnconv.fmt import format_seconds
    if verbosity >= VERBOSE and _timings:
        _print_log("timings: " + ", ".join(f"{phase} {format_seconds(s)}" for phase, s in _timings))


def _verbosity_setter(level: int) -> Callable[[click.Context, click.Parameter, bool], None]:
    """The callback of -q (QUIET) or -v (VERBOSE): sets `verbosity`, refusing the other flag too."""
    def callback(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
        global verbosity
        if value:
            if verbosity not in (NORMAL, level):
                raise click.UsageError("give -q or -v, not both", ctx)
            verbosity = level
    return callback


def verbosity_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """-q/--quiet and -v/--verbose for a command (read back as `common.verbosity`)."""
    fn = click.option("-v", "--verbose", is_flag=True, expose_value=False, callback=_verbosity_setter(VERBOSE),
                      help="Also print details (every NNAPI op of long expansions, inputs) and timings.")(fn)
    return click.option("-q", "--quiet", is_flag=True, expose_value=False, callback=_verbosity_setter(QUIET),
                        help="Print only verdicts and errors (no tables, logs or warnings).")(fn)


def fail(message: str, code: int) -> None:
    """Prints one line to stderr and exits with `code`."""
    one_line = " ".join(str(message).split())
    err.print(f"nnconv: error: {one_line}", markup=False)
    raise SystemExit(code)


def usage_error_line(e: click.ClickException) -> str:
    """click's usage errors as one line naming the command and where to read its help, instead of click's
    `Usage:` / `Error:` block."""
    message = e.format_message().rstrip(".")
    ctx = getattr(e, "ctx", None)
    if ctx is not None and isinstance(e, click.UsageError):
        path = ctx.command_path
        return f"{path.split(' ', 1)[1] + ': ' if ' ' in path else ''}{message} (see '{path} --help')"
    return message


class Group(click.Group):
    """The `nnconv` group: every error, click's usage errors included, is one `nnconv: error: ...` line with
    the documented exit code (2 for usage errors)."""

    def main(self, args: Any = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.Abort:  # Ctrl-C at a prompt; KeyboardInterrupt elsewhere
            interrupted()
        except click.ClickException as e:
            reset_err()
            fail(usage_error_line(e), e.exit_code)
        if not standalone_mode:
            return rv
        raise SystemExit(rv if isinstance(rv, int) else 0)  # --help and --version return 0


def reset_err() -> None:
    """Rebinds the error console to the current stderr (errors raised before `main`'s callback ran)."""
    global err
    err = _console(stderr=True)


def interrupted() -> None:
    """Ctrl-C: one line, exit 130 (128 + SIGINT, as shells report it), never click's "Aborted!" (exit 1)."""
    sys.stderr.write("nnconv: interrupted\n")
    sys.stderr.flush()
    raise SystemExit(EXIT_INTERRUPTED)


def handle_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turns every error into one line on stderr and a documented exit code (never a traceback)."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ConversionError as e:
            for d in e.diagnostics:
                _print_log(f"  {d.one_line()}")
            fail(str(e), EXIT_NOT_CONVERTIBLE)
        except InternalError as e:
            if os.environ.get("NNCONV_DEBUG"):
                raise
            fail(f"internal error: {e} (set NNCONV_DEBUG=1 for a traceback)", EXIT_INTERNAL)
        except NnconvError as e:
            fail(str(e), e.exit_code)
        except KeyboardInterrupt:
            # Ctrl-C: outputs are written atomically (nnconv.safe_write), so nothing half-written remains.
            interrupted()
        except (click.exceptions.Exit, click.ClickException, SystemExit):
            raise
        except MemoryError:
            fail("out of memory", EXIT_INTERNAL)
        except Exception as e:  # noqa: BLE001 - last line of defence for the one-line-error promise
            if os.environ.get("NNCONV_DEBUG"):
                raise
            fail(f"internal error: {type(e).__name__}: {e}; this is a bug in nnconv, please report it "
                 "(set NNCONV_DEBUG=1 for a traceback)", EXIT_INTERNAL)
        finally:
            _print_timings()
    return wrapper


Options = TypeVar("Options")


def parsed(build: Callable[[Mapping[str, Any]], Options]) -> Callable[[Callable[[Options], None]],
                                                                     Callable[..., None]]:
    """A command whose function takes one options object. click calls a command's function with a keyword per
    option; `build` turns them, all at once, into the command's options, where they are parsed and checked
    against each other, so that no function passes a dozen of them along. Goes below `handle_errors`, which
    then reports `build`'s errors as the command's."""
    def decorate(fn: Callable[[Options], None]) -> Callable[..., None]:
        @functools.wraps(fn)
        def command(**params: Any) -> None:
            fn(build(params))
        return command
    return decorate


def resolve_api_level(api_level: int | str | None, feature_level: int | None, also: str = "") -> ApiLevel:
    """The target of --api-level / --feature-level (`ApiLevel.resolve`: default 30, 32 reported as 32), for
    every command; `also` names what else the command's --api-level takes (check: " or 'all'")."""
    if api_level is not None and feature_level is not None:
        raise click.UsageError("give --api-level or --feature-level, not both")
    try:
        return ApiLevel.resolve(api_level, feature_level)
    except LevelError as e:
        if feature_level is not None:
            raise click.BadParameter(str(e), param_hint="--feature-level") from None
        raise click.BadParameter(f"{e}{also}", param_hint="--api-level") from None


def warn_deprecated(level: ApiLevel) -> None:
    warning = level.deprecation_warning()
    if warning:
        warn(warning)


def target_level(api_level: int | str | None, feature_level: int | None) -> ApiLevel:
    """The level --api-level / --feature-level choose (`resolve_api_level`), warned about when deprecated:
    what convert, rewrite and probe target (verify warns later, after its option conflicts)."""
    level = resolve_api_level(api_level, feature_level)
    warn_deprecated(level)
    return level


def inapplicable_options(level: int, relax_fp16: bool = False) -> list[str]:
    """Options the user gave that have no effect at `level`, each with the reason (printed as warnings
    instead of dropping them silently)."""
    found = []
    if relax_fp16 and level < RELAX_FP16_MIN_API:
        found.append(f"--relax-fp16 has no effect at API {level}: relaxComputationFloat32toFloat16 needs "
                     f"API {RELAX_FP16_MIN_API} (NNAPI 1.1); the model computes in float32")
    return found


def warn_inapplicable(level: int, relax_fp16: bool = False) -> None:
    for message in inapplicable_options(level, relax_fp16):
        warn(message)


api_level_option = click.option("--api-level", type=int, default=None,
                                 help="Target Android API level 27..35 (33/34/35 = feature levels 6/7/8). Default 30.")
feature_level_option = click.option("--feature-level", type=click.IntRange(MIN_FEATURE_LEVEL, MAX_FEATURE_LEVEL), default=None,
                                    help="Target NNAPI feature level 1..8 (alias of --api-level).")


def level_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--api-level and --feature-level: two spellings of one target level, which go together (check has its
    own --api-level, which also takes 'all')."""
    return api_level_option(feature_level_option(fn))


def conversion_options(fold_weights: bool, relax_fp16: bool, input_shapes: Sequence[str] = (),
                       target: str = "delegate"):
    """The ConversionOptions of the common flags; `input_shapes`: the --input-shape texts (NAME=D0,D1,...);
    `target`: the --target value. --fold-weights is nnconv's own lowering: with the delegate target it is a
    usage error (exit 2), never silently ignored."""
    from nnconv.lowering.convert import ConversionOptions
    from nnconv.targets import Target
    from nnconv.tflite.input_shapes import parse_input_shape
    chosen = Target.parse(target)
    if fold_weights and chosen is Target.DELEGATE:
        raise click.UsageError("--fold-weights folds weights in nnconv's own converter: add --target nnconv (TFLite's "
                               "NNAPI delegate keeps int8 weights behind DEQUANTIZE from API 29)")
    return ConversionOptions(fold_dynamic_range_weights=fold_weights, relax_float32_to_float16=relax_fp16,
                             input_shapes=tuple(parse_input_shape(t) for t in input_shapes), target=chosen)


target_option = click.option(
    "--target", "target", type=click.Choice(["delegate", "nnconv"]), default="delegate", show_default=True,
    help="Whose decisions: 'delegate' answers for TFLite's own NNAPI delegate, what phones run (its verdicts, "
         "partitions and NNAPI graph); 'nnconv' for nnconv's own converter, which goes beyond the delegate "
         "(rewrites, emulated ops, the NDK C path).")


threads_option = click.option(
    "--threads", type=click.IntRange(1, 256), default=1, show_default=True,
    help="Threads for our executor's BLAS and for TFLite's interpreter alike (the comparison stays fair).")
fold_weights_option = click.option("--fold-weights", is_flag=True,
                                   help="Fold dynamic-range int8 / int4 weights and weight-only int4 weights "
                                        "into float32 constants (lets hybrid models lower at API 27/28; "
                                        "otherwise they stay 8-bit behind a DEQUANTIZE from API 29).")
input_shape_option = click.option(
    "--input-shape", "input_shapes", multiple=True, metavar="NAME=D0,D1,...",
    help="Convert with this model input at this shape (repeatable; NAME: the input tensor's or its signature "
         "name): only the dimensions its signature leaves open (-1, e.g. the batch) can change, as TFLite's "
         "strict input resize allows.")
relax_option = click.option("--relax-fp16", is_flag=True,
                            help="Set relaxComputationFloat32toFloat16 in the NNAPI model (API 28+).")


def max_memory_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`--max-memory SIZE`: the bound `run` / `verify` check the model's memory (and the .npz inputs) against."""
    from nnconv.limits import DEFAULT_FRACTION_OF_RAM
    return click.option("--max-memory", "max_memory", type=str, default=None,
                        help=f"Refuse models / inputs needing more memory than this (e.g. 512M, 2G). Default "
                             f"{DEFAULT_FRACTION_OF_RAM:.0%} of the machine's physical memory.")(fn)


def resolve_max_memory(text: str | None) -> int:
    from nnconv.limits import default_max_memory, parse_size
    return default_max_memory() if text is None else parse_size(text)
