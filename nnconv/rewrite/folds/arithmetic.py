"""Folds of the value-computing ops on unquantized tensors: CAST, the binary arithmetic, comparisons and
logical ops, NEG, ABS, SELECT / SELECT_V2, ZEROS_LIKE, RANGE and the SUM / REDUCE_PROD / REDUCE_MAX /
REDUCE_MIN reductions (quantized arithmetic would need the kernels' exact rounding: never folded)."""

from __future__ import annotations

from typing import Callable

import numpy as np

from nnconv.rewrite.folds.registry import Evaluator, FoldCall, fold
from nnconv.tflite.schema_enums import BuiltinOperator as B


@fold(B.CAST)
def cast(c: FoldCall) -> list[np.ndarray]:
    return [c.value(0).astype(c.outputs[0].dtype)]


def _binary(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Evaluator:
    def evaluate(c: FoldCall) -> list[np.ndarray]:
        act = getattr(c.options, "fused_activation_function", 0) if c.options is not None else 0
        if act != 0:
            raise ValueError("fused activation")
        a, b = c.value(0), c.value(1)
        with np.errstate(all="raise"):
            return [fn(a, b)]
    return evaluate


def _trunc_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """TFLite's DIV: true division for floats, C++ truncation toward zero for integers."""
    if np.issubdtype(a.dtype, np.floating):
        return a / b
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) ^ (b < 0), -q, q)


add = fold(B.ADD)(_binary(np.add))
sub = fold(B.SUB)(_binary(np.subtract))
mul = fold(B.MUL)(_binary(np.multiply))
div = fold(B.DIV)(_binary(_trunc_div))
floor_div = fold(B.FLOOR_DIV)(_binary(np.floor_divide))
floor_mod = fold(B.FLOOR_MOD)(_binary(np.mod))
maximum = fold(B.MAXIMUM)(_binary(np.maximum))
minimum = fold(B.MINIMUM)(_binary(np.minimum))
equal = fold(B.EQUAL)(_binary(np.equal))
not_equal = fold(B.NOT_EQUAL)(_binary(np.not_equal))
less = fold(B.LESS)(_binary(np.less))
less_equal = fold(B.LESS_EQUAL)(_binary(np.less_equal))
greater = fold(B.GREATER)(_binary(np.greater))
greater_equal = fold(B.GREATER_EQUAL)(_binary(np.greater_equal))
logical_and = fold(B.LOGICAL_AND)(_binary(np.logical_and))
logical_or = fold(B.LOGICAL_OR)(_binary(np.logical_or))


@fold(B.LOGICAL_NOT)
def logical_not(c: FoldCall) -> list[np.ndarray]:
    return [np.logical_not(c.value(0))]


@fold(B.NEG)
def neg(c: FoldCall) -> list[np.ndarray]:
    return [np.negative(c.value(0))]


@fold(B.ABS)
def abs_(c: FoldCall) -> list[np.ndarray]:
    return [np.abs(c.value(0))]


@fold(B.SELECT, B.SELECT_V2)
def select(c: FoldCall) -> list[np.ndarray]:
    return [np.where(c.value(0).astype(bool), c.value(1), c.value(2))]


@fold(B.ZEROS_LIKE)
def zeros_like(c: FoldCall) -> list[np.ndarray]:
    return [np.zeros_like(c.value(0))]


@fold(B.RANGE)
def range_(c: FoldCall) -> list[np.ndarray]:
    start, limit, delta = (c.value(i).reshape(-1)[0] for i in range(3))
    return [np.arange(start, limit, delta)]


def _reduction(fn: Callable[..., np.ndarray]) -> Evaluator:
    def evaluate(c: FoldCall) -> list[np.ndarray]:
        x = c.value(0)
        axes = tuple(sorted({a % max(x.ndim, 1) for a in c.ints(1)}))
        keep = bool(c.options.keep_dims) if c.options is not None else False
        return [fn(x, axis=axes, keepdims=keep)]
    return evaluate


sum_ = fold(B.SUM)(_reduction(np.sum))
reduce_prod = fold(B.REDUCE_PROD)(_reduction(np.prod))
reduce_max = fold(B.REDUCE_MAX)(_reduction(np.max))
reduce_min = fold(B.REDUCE_MIN)(_reduction(np.min))
