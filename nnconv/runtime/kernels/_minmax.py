"""MAXIMUM / MINIMUM shared evaluation (not a kernel module)."""

from __future__ import annotations

from typing import Callable

import numpy as np

from nnconv.nnapi.enums import OperandType
from nnconv.nnapi.quantization import is_quant8
from nnconv.runtime.kernels._elementwise import FLOAT_TYPES, broadcast_shape, check_same_type, requantize_ref
from nnconv.runtime.kernels.registry import KernelCall


def pick_max(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """std::max(a, b) = (a < b) ? b : a, as the reference: with a NaN the first operand wins."""
    return np.where(a < b, b, a)


def pick_min(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """std::min(a, b) = (b < a) ? b : a, as the reference: with a NaN the first operand wins."""
    return np.where(b < a, b, a)


def min_max(call: KernelCall, fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> np.ndarray:
    """fn(a, b) with broadcasting; quant8 inputs are first requantized to the output's scale and zero point
    (each may have its own), then compared as stored integers."""
    t = check_same_type(call)
    a, b = call.tensor(0), call.tensor(1)
    broadcast_shape(call, a, b, max_rank=None)
    out = call.out_operands[0]
    if t in FLOAT_TYPES or t is OperandType.TENSOR_INT32:
        return fn(a, b).astype(out.dtype)
    if is_quant8(t):
        return fn(requantize_ref(call, 0), requantize_ref(call, 1)).astype(out.dtype)
    raise call.fail(f"input 0 has unsupported type {t.name}")
