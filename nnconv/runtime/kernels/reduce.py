"""REDUCE_SUM / REDUCE_PROD / REDUCE_MAX / REDUCE_MIN / REDUCE_ANY / REDUCE_ALL (NNAPI OperationType 80 / 79 / 77 / 78 / 76 / 75, API 29).

Slots: 0 input, 1 axes (TENSOR_INT32 1-D, negative allowed, duplicates ignored), 2 keep_dims (BOOL).
SUM and PROD take float32/float16 (float16 computed in float32 and rounded back, like the reference);
MAX and MIN also take quant8 asymm/signed (the stored values are compared, the output keeps the input's
parameters; an output declared otherwise is requantized); ANY and ALL take TENSOR_BOOL8.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.nnapi.quantization import is_quant8, requantize_to
from nnconv.runtime.kernels._reduction import finish_reduction, reduction_axes
from nnconv.runtime.kernels.registry import KernelCall, KernelFn, kernel


def _reduce(call: KernelCall, fn: Callable[..., np.ndarray]) -> list[np.ndarray]:
    x = call.tensor(0)
    axes = reduction_axes(call, x.ndim)
    keep = bool(call.scalar(2))
    src, out = call.in_operands[0], call.out_operands[0]
    if src.type in (OperandType.TENSOR_FLOAT16, OperandType.TENSOR_FLOAT32):
        y = fn(x.astype(np.float32), axis=axes, keepdims=True).astype(out.dtype)
    elif is_quant8(src.type):
        y = requantize_to(fn(x, axis=axes, keepdims=True), src, out)
    else:
        y = fn(x, axis=axes, keepdims=True).astype(out.dtype)
    return [finish_reduction(y, x.shape, axes, keep)]


def _reduction(op_type: OperationType, fn: Callable[..., np.ndarray], extreme: str | None = None) -> KernelFn:
    """Registers the kernel of a reduction by `fn`; `extreme` ("maximum", "minimum"): refused on an empty
    tensor, which has none."""
    def run(call: KernelCall) -> list[np.ndarray]:
        if extreme is not None and call.tensor(0).size == 0:
            raise call.fail(f"cannot take the {extreme} of an empty tensor")
        return _reduce(call, fn)
    return kernel(op_type)(run)


reduce_sum = _reduction(OperationType.REDUCE_SUM, np.sum)
reduce_prod = _reduction(OperationType.REDUCE_PROD, np.prod)
reduce_max = _reduction(OperationType.REDUCE_MAX, np.max, "maximum")
reduce_min = _reduction(OperationType.REDUCE_MIN, np.min, "minimum")
reduce_any = _reduction(OperationType.REDUCE_ANY, np.any)
reduce_all = _reduction(OperationType.REDUCE_ALL, np.all)
