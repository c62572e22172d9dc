"""Comparison kernels' shared evaluation (not a kernel module)."""

from __future__ import annotations

from typing import Callable

import numpy as np

from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.nnapi.quantization import is_quant8
from nnconv.runtime.kernels._elementwise import FLOAT_TYPES, broadcast_shape, check_same_type, real_values
from nnconv.runtime.kernels.registry import KernelCall, KernelFn, kernel


def compare(call: KernelCall, fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> np.ndarray:
    """fn(a, b) -> TENSOR_BOOL8 with broadcasting. Quantized inputs (each with its own scale and zero point)
    are compared as real values `float(q - zp) * scale`; float16 compares as float16 (exact in float32)."""
    t = check_same_type(call)
    a, b = call.tensor(0), call.tensor(1)
    broadcast_shape(call, a, b, max_rank=None)
    if is_quant8(t):
        a, b = real_values(call, 0), real_values(call, 1)
    elif t not in FLOAT_TYPES and t not in (OperandType.TENSOR_INT32, OperandType.TENSOR_BOOL8):
        raise call.fail(f"input 0 has unsupported type {t.name}")
    return np.asarray(fn(a, b), dtype=np.bool_)


def compare_kernel(op_type: OperationType, ufunc: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> KernelFn:
    """Registers the kernel of a comparison (EQUAL, NOT_EQUAL, GREATER, ...): `compare` with `ufunc`."""
    def run(call: KernelCall) -> list[np.ndarray]:
        return [compare(call, ufunc)]
    run.__name__ = op_type.name.lower()
    return kernel(op_type)(run)
