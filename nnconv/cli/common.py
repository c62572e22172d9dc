"""What every `nnconv` command shares: the consoles, the one-line error handling with its exit codes, the API
level options and the conversion options.

Commands read the consoles as `common.out` / `common.err` (module attributes), since `main` rebuilds them on
every invocation.
"""

from __future__ import annotations

import functools
import os
import sys
from typing import Any, Callable

import click
from rich.console import Console

from nnconv.errors import EXIT_INTERNAL, EXIT_NOT_CONVERTIBLE, ConversionError, NnconvError
from nnconv.nnapi.enums import (
    API_LEVELS,
    DEPRECATED_FROM_API,
    api_level_of_feature_level,
)


def _console(stderr: bool = False) -> Console:
    # NO_COLOR (https://no-color.org): any non-empty value turns every ANSI style off, not only colours.
    no_color = bool(os.environ.get("NO_COLOR"))
    stream = sys.stderr if stderr else sys.stdout
    # emoji=False: a path such as "a:thumbs_up:b" must print as written.
    return Console(stderr=stderr, no_color=no_color, color_system=None if no_color else "auto", highlight=False,
                   emoji=False, soft_wrap=True, width=None if stream.isatty() else 160)


out = _console()
err = _console(stderr=True)


def reset_consoles() -> None:
    """Rebuilds both consoles so NO_COLOR and the current streams apply (tests, embedding)."""
    global out, err
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


threads_option = click.option(
    "--threads", type=click.IntRange(1, 256), default=1, show_default=True,
    help="Threads for our executor's BLAS and for TFLite's interpreter alike (the comparison stays fair).")
fold_weights_option = click.option("--fold-weights", is_flag=True,
                                   help="Fold dynamic-range int8 weights into float32 constants (lets hybrid "
                                        "models lower at API 27/28).")
relax_option = click.option("--relax-fp16", is_flag=True,
                            help="Set relaxComputationFloat32toFloat16 in the NNAPI model (API 28+).")
