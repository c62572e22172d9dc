"""TOPK_V2 (NNAPI OperationType 90, API 29).

Slots: 0 input (float32/float16/int32/quant8 asymm/signed, the last axis is searched), 1 k (INT32 scalar,
1 <= k <= last extent). Outputs: 0 the k largest values in descending order, 1 their indices
(TENSOR_INT32); equal values keep the lower index first.
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.quantization import requantize_to
from nnconv.runtime.kernels.registry import KernelCall, kernel


@kernel(OperationType.TOPK_V2)
def topk_v2(call: KernelCall) -> list[np.ndarray]:
    x = call.tensor(0)
    k = int(call.scalar(1))
    if x.ndim < 1 or not 1 <= k <= x.shape[-1]:
        raise call.fail(f"k={k} is outside [1, {x.shape[-1] if x.ndim else 0}]")
    keys = -x.astype(np.float64)  # exact for every supported type; negation turns ascending into descending
    order = np.argsort(keys, axis=-1, kind="stable")[..., :k]
    values = np.take_along_axis(x, order, axis=-1)
    return [requantize_to(values, call.in_operands[0], call.out_operands[0]), order.astype(np.int32)]
