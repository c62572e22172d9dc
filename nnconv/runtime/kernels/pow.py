"""POW (NNAPI OperationType 70): base ^ exponent elementwise, with broadcasting.

Slots: 0 base, 1 exponent (same type, broadcastable). Types: TENSOR_FLOAT32, TENSOR_FLOAT16 (computed in
float32 with C's `pow` semantics: NaN for a negative base with a non-integer exponent).
"""

from __future__ import annotations

import numpy as np

from nnconv.runtime.kernels._elementwise import FLOAT_TYPES, check_same_type, float_binary
from nnconv.runtime.kernels.registry import KernelCall, kernel
from nnconv.nnapi.enums import OperationType


@kernel(OperationType.POW)
def pow_(call: KernelCall) -> list[np.ndarray]:
    t = check_same_type(call)
    if t not in FLOAT_TYPES:
        raise call.fail(f"input 0 has unsupported type {t.name}")
    return [float_binary(call, np.power, max_rank=None)]
