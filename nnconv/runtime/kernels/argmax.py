"""ARGMAX / ARGMIN (NNAPI OperationType 39 / 40, API 29).

Slots: 0 input (float32/float16/int32/quant8 asymm/signed), 1 axis (INT32 scalar, negative allowed).
Output: TENSOR_INT32 with the axis removed (rank-1 input gives [1]); ties pick the first index.
"""

from __future__ import annotations

import functools
from typing import Callable

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.runtime.kernels._spatial import normalize_axis
from nnconv.runtime.kernels.registry import KernelCall, kernel


def _arg(call: KernelCall, fn: Callable[..., np.ndarray]) -> list[np.ndarray]:
    x = call.tensor(0)
    axis = normalize_axis(int(call.scalar(1)), x.ndim, call.fail)
    if x.shape[axis] == 0:
        raise call.fail("the reduced axis is empty")
    y = fn(x, axis=axis).astype(np.int32)  # numpy returns the first of equal extremes, as the reference
    return [y.reshape(y.shape or (1,))]


argmax = kernel(OperationType.ARGMAX)(functools.partial(_arg, fn=np.argmax))
argmin = kernel(OperationType.ARGMIN)(functools.partial(_arg, fn=np.argmin))
