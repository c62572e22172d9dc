"""Errors that end a command with a one-line message and a documented exit code.

Exit codes: 0 ok; 1 parity failure or policy violation; 2 usage error or unreadable/invalid input;
3 model not convertible at the target level; 4 internal error (our bug); 130 interrupted (Ctrl-C).
docs/errors.md lists the error classes.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_BAD_INPUT = 2
EXIT_NOT_CONVERTIBLE = 3
EXIT_INTERNAL = 4
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what shells report for a process ended by Ctrl-C


class NnconvError(Exception):
    """Base of every error nnconv reports to a user. Its text is one line: messages quote names read from the
    user's files (tensor, signature and operator names), which may hold newlines or other control characters;
    those are shown escaped (`\\n`, `\\x00`) so that no caller, the CLI or the Python API, gets a multi-line
    or terminal-controlling message."""

    exit_code = EXIT_BAD_INPUT

    def __str__(self) -> str:
        return one_line(super().__str__())


def one_line(text: str) -> str:
    """`text` with every non-printable character (newline, tab, NUL, escape...) written as its Python escape."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


class ModelFormatError(NnconvError):
    """A `.tflite` or `.nnapi` file that cannot be decoded (not a model, truncated, indices out of range)."""


class InputDataError(NnconvError):
    """Input arrays that do not fit the model (missing, wrong dtype or shape, unreadable `.npz`)."""


@contextmanager
def reading(name: str, kind: str, error: Callable[[str], NnconvError]) -> Iterator[None]:
    """Turns the OSError of opening or reading the file `name` into `error`'s one line, worded alike for
    every input file: no such file, a directory where `kind` ("an .npz file") was expected, or the
    system's reason."""
    try:
        yield
    except FileNotFoundError:
        raise error(f"{name}: no such file") from None
    except IsADirectoryError:
        raise error(f"{name}: is a directory, not {kind}") from None
    except OSError as e:
        raise error(f"{name}: cannot read ({e.strerror or e})") from None


class OutputError(NnconvError):
    """An output path we must not or cannot write (a directory, a device, a missing folder, a full disk)."""


class ResourceLimitError(NnconvError):
    """The work would need more memory than allowed (`--max-memory`), or an input claims absurd sizes."""


class ModelValidationError(NnconvError):
    """An NNAPI model that breaks the HAL rules. `problems` lists every violation found."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        head = problems[0] if problems else "invalid model"
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(f"invalid NNAPI model: {head}{more}")


class ExecutionError(NnconvError):
    """An operation failed while executing (the NNAPI runtime's ANEURALNETWORKS_OP_FAILED)."""


class ConversionError(NnconvError):
    """The model cannot be lowered at the target level; `diagnostics` holds every refusal."""

    exit_code = EXIT_NOT_CONVERTIBLE

    def __init__(self, message: str, diagnostics: list | None = None) -> None:
        super().__init__(message)
        self.diagnostics = diagnostics or []


class OperationsRefusedError(ModelValidationError):
    """NNAPI operations the runtime would refuse (their `validate`, or `prepare` on constant parameters):
    `refusals` lists each one with its reason. nnconv's check refuses such ops before lowering them, so a
    converted model holding one is nnconv's own bug: exit 4, asking for a report."""

    exit_code = EXIT_INTERNAL

    def __init__(self, refusals: list) -> None:
        self.refusals = refusals
        super().__init__([str(r) for r in refusals])
        head = str(refusals[0]) if refusals else "an operation is refused"
        more = f" (and {len(refusals) - 1} more)" if len(refusals) > 1 else ""
        self.args = (f"the NNAPI runtime would refuse this model: {head}{more}. A model converted by nnconv "
                     "should never be refused: please report this bug with the model",)


class InternalError(NnconvError):
    """A bug of nnconv (e.g. a rule's check raising on a well-formed op): never the user's input."""

    exit_code = EXIT_INTERNAL


def failure_line(e: BaseException) -> tuple[str, int]:
    """The one-line reason and exit code of an error that ends one model of a folder run (`check` / `verify`
    over several models report it in that model's row and go on): what the command would print and return
    for that model alone."""
    if isinstance(e, NnconvError):
        return " ".join(str(e).split()), e.exit_code
    if isinstance(e, MemoryError):
        return "out of memory", EXIT_INTERNAL
    return f"internal error: {type(e).__name__}: {' '.join(one_line(str(e)).split())}", EXIT_INTERNAL


def folder_exit_code(failed: bool, error_codes: list[int]) -> int:
    """The exit code of a run over several models: 1 when some model failed its comparison or a policy (the
    verdict wins), else the code of the first model that could not be checked or verified (2 unreadable or
    bad input, 3 not convertible, 4 our bug), else 0."""
    if failed:
        return EXIT_FAILURE
    return error_codes[0] if error_codes else EXIT_OK
