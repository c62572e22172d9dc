"""TILE (NNAPI OperationType 89, API 29).

Slots: 0 input (float32/float16/int32/quant8 asymm/signed), 1 multiples (TENSOR_INT32 [rank], >= 0).
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.quantization import requantize_to
from nnconv.runtime.kernels.registry import KernelCall, kernel


@kernel(OperationType.TILE)
def tile(call: KernelCall) -> list[np.ndarray]:
    x = call.tensor(0)
    reps = [int(m) for m in call.tensor(1).reshape(-1)]
    if len(reps) != x.ndim or any(m < 0 for m in reps):
        raise call.fail(f"multiples {reps} must be {x.ndim} non-negative values")
    return [requantize_to(np.tile(x, reps), call.in_operands[0], call.out_operands[0])]
