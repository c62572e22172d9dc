"""SLICE (NNAPI OperationType 86, API 29).

Slots: 0 input (float32/float16/int32/quant8 asymm/signed), 1 begin (TENSOR_INT32 [rank]), 2 size
(TENSOR_INT32 [rank], -1 takes everything from begin to the end of the axis).
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.quantization import requantize_to
from nnconv.runtime.kernels.registry import KernelCall, kernel


@kernel(OperationType.SLICE)
def slice_(call: KernelCall) -> list[np.ndarray]:
    x = call.tensor(0)
    begin = [int(b) for b in call.tensor(1).reshape(-1)]
    size = [int(s) for s in call.tensor(2).reshape(-1)]
    if not len(begin) == len(size) == x.ndim:
        raise call.fail(f"begin and size must have {x.ndim} entries")
    index = []
    for b, s, d in zip(begin, size, x.shape):
        e = d if s == -1 else b + s
        if b < 0 or s < -1 or e > d:
            raise call.fail(f"slice begin={begin} size={size} is outside shape {list(x.shape)}")
        index.append(slice(b, e))
    y = np.ascontiguousarray(x[tuple(index)])
    return [requantize_to(y, call.in_operands[0], call.out_operands[0])]
