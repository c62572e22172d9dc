"""SIN (NNAPI OperationType 85): elementwise sine.

Slots: 0 input. Types: TENSOR_FLOAT32, TENSOR_FLOAT16 (computed in float32, cast back).
"""

from __future__ import annotations

import numpy as np

from nnconv.runtime.kernels._elementwise import float_unary
from nnconv.runtime.kernels.registry import KernelCall, kernel
from nnconv.nnapi.enums import OperationType


@kernel(OperationType.SIN)
def sin(call: KernelCall) -> list[np.ndarray]:
    return [float_unary(call, np.sin)]
