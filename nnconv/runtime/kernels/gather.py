"""GATHER (NNAPI OperationType 51, API 29).

Slots: 0 input (float32/float16/int32/quant8 asymm/signed), 1 axis (INT32 scalar, negative allowed),
2 indices (TENSOR_INT32, any rank; each in [0, extent)). Output shape: input.shape[:axis] + indices.shape +
input.shape[axis+1:].
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.quantization import requantize_to
from nnconv.runtime.kernels._spatial import normalize_axis
from nnconv.runtime.kernels.registry import KernelCall, kernel


@kernel(OperationType.GATHER)
def gather(call: KernelCall) -> list[np.ndarray]:
    x = call.tensor(0)
    axis = normalize_axis(int(call.scalar(1)), x.ndim, call.fail)
    idx = call.tensor(2).astype(np.int64)
    if idx.size and (idx.min() < 0 or idx.max() >= x.shape[axis]):
        raise call.fail(f"indices must lie in [0, {x.shape[axis]})")
    y = np.take(x, idx, axis=axis)
    return [requantize_to(y.reshape(y.shape or (1,)), call.in_operands[0], call.out_operands[0])]
