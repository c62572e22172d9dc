"""ELU (NNAPI OperationType 98): max(0, x) + min(0, alpha * (exp(x) - 1)).

Slots: 0 input, 1 alpha (FLOAT32 scalar for TENSOR_FLOAT32, FLOAT16 for TENSOR_FLOAT16). Float types only;
float16 is computed in float32.
"""

from __future__ import annotations

import numpy as np

from nnconv.runtime.kernels._elementwise import FLOAT_TYPES
from nnconv.runtime.kernels.registry import KernelCall, kernel
from nnconv.nnapi.enums import OperationType


@kernel(OperationType.ELU)
def elu(call: KernelCall) -> list[np.ndarray]:
    t = call.type(0)
    if t not in FLOAT_TYPES:
        raise call.fail(f"input 0 has unsupported type {t.name}")
    x = call.tensor(0).astype(np.float32)
    alpha = np.float32(call.scalar(1))
    with np.errstate(over="ignore", invalid="ignore"):
        y = np.maximum(np.float32(0), x) + np.minimum(np.float32(0), alpha * (np.exp(x) - np.float32(1)))
    return [y.astype(call.out_operands[0].dtype)]
