"""Errors that end a command with a one-line message and a documented exit code.

Exit codes: 0 ok; 1 parity failure or policy violation; 2 usage error or unreadable/invalid input;
3 model not convertible at the target level.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_BAD_INPUT = 2
EXIT_NOT_CONVERTIBLE = 3


class NnconvError(Exception):
    """Base of every error nnconv reports to a user."""

    exit_code = EXIT_BAD_INPUT


class ModelFormatError(NnconvError):
    """A `.tflite` or `.nnapi` file that cannot be decoded (not a model, truncated, indices out of range)."""


class InputDataError(NnconvError):
    """Input arrays that do not fit the model (missing, wrong dtype or shape, unreadable `.npz`)."""


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
