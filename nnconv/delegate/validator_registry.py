"""The registry of the delegate's per-builtin checks: one validator per `case` of `Validate`'s switch,
registered with `@validator(...)` by the `validate_*` modules (imported explicitly by `validation.py`)."""

from __future__ import annotations

from typing import Callable

from nnconv.delegate.failures import NodeCheck
from nnconv.tflite.schema_enums import BuiltinOperator

Validator = Callable[[NodeCheck], None]
VALIDATORS: dict[int, Validator] = {}


def validator(*ops: BuiltinOperator) -> Callable[[Validator], Validator]:
    """Registers the delegate's checks of `ops`."""
    def register(fn: Validator) -> Validator:
        for op in ops:
            if int(op) in VALIDATORS:
                raise RuntimeError(f"two delegate validators for {op.name}")
            VALIDATORS[int(op)] = fn
        return fn
    return register
