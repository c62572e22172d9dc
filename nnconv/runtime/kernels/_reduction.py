"""Shared parts of the reduction kernels: axis lists and the keep-dims reshape (no kernel here)."""

from __future__ import annotations

import numpy as np

from nnconv.runtime.kernels._spatial import normalize_axis
from nnconv.runtime.kernels.registry import KernelCall


def reduction_axes(call: KernelCall, rank: int, slot: int = 1) -> tuple[int, ...]:
    """The axes operand (1-D TENSOR_INT32, negative values count from the end, duplicates allowed)."""
    raw = [int(a) for a in call.tensor(slot).reshape(-1)]
    return tuple(sorted({normalize_axis(a, max(rank, 1), call.fail) for a in raw}))


def finish_reduction(y: np.ndarray, x_shape: tuple[int, ...], axes: tuple[int, ...], keep_dims: bool) -> np.ndarray:
    """Shapes a reduction computed with keepdims=True: drops the reduced axes unless `keep_dims`; a result
    with every axis reduced away becomes [1], since NNAPI tensors have at least one dimension."""
    if keep_dims:
        return y
    shape = [d for k, d in enumerate(x_shape) if k not in axes]
    return y.reshape(shape or [1])
