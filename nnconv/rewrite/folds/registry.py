"""The constant-folding registry: one `Fold` per TFLite builtin operator, keyed by `BuiltinOperator`.

A fold is a small numpy evaluator following TFLite's semantics, plus what the folding driver
(`rewrite/folding.py`) must know about the op: whether it only moves data (quantized values are copied, so
folding a quantized tensor is exact when all quantization parameters match) and whether it reads only its
input's static shape (SHAPE, RANK), not its values. Each family module registers its folds with
`@fold(BuiltinOperator.X, ...)`; the lowering rule of the op names the same object in its `fold` attribute,
so everything about one op can be read from its rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from nnconv.tflite.ir import Operator, Tensor
from nnconv.tflite.schema_enums import BuiltinOperator


@dataclass
class FoldCall:
    """What an evaluator sees: the op, its input values (None for omitted inputs or, for SHAPE/RANK, a
    non-constant input), the input and output tensors."""

    op: Operator
    values: list[np.ndarray | None]
    inputs: list[Tensor | None]
    outputs: list[Tensor]

    @property
    def options(self) -> Any:
        return self.op.options

    def value(self, i: int) -> np.ndarray:
        v = self.values[i]
        if v is None:
            raise ValueError(f"input {i} has no value")
        return v

    def ints(self, i: int) -> list[int]:
        return [int(v) for v in self.value(i).reshape(-1)]


Evaluator = Callable[[FoldCall], list[np.ndarray]]


@dataclass(frozen=True)
class Fold:
    """How an op is evaluated at conversion time. `data_movement`: the op copies values without arithmetic,
    so it folds quantized tensors whose parameters all match; `shape_only`: it reads only input 0's static
    shape (it folds whatever that input's values, dtype or quantization)."""

    evaluate: Evaluator
    data_movement: bool = False
    shape_only: bool = False

    def __call__(self, call: FoldCall) -> list[np.ndarray]:
        return self.evaluate(call)


FOLDS: dict[BuiltinOperator, Fold] = {}


def fold(*ops: BuiltinOperator, data_movement: bool = False, shape_only: bool = False
         ) -> Callable[[Evaluator], Fold]:
    """Registers the decorated evaluator as the fold of each of `ops` and returns the `Fold`."""
    def register(fn: Evaluator) -> Fold:
        entry = Fold(fn, data_movement, shape_only)
        for op in ops:
            if op in FOLDS:
                raise RuntimeError(f"two folds registered for {op.name}")
            FOLDS[op] = entry
        return entry
    return register
