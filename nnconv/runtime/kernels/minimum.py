"""MINIMUM (NNAPI OperationType 66): elementwise smaller of two tensors, with broadcasting.

Slots: 0 input1, 1 input2 (same type, broadcastable). Types: TENSOR_FLOAT32, TENSOR_FLOAT16, TENSOR_INT32,
TENSOR_QUANT8_ASYMM, TENSOR_QUANT8_ASYMM_SIGNED (inputs may differ in scale / zero point from each other and
from the output; both are requantized to the output first).
"""

from __future__ import annotations

import numpy as np

from nnconv.runtime.kernels._minmax import min_max
from nnconv.runtime.kernels.registry import KernelCall, kernel
from nnconv.nnapi.enums import OperationType


def _min(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """std::min(a, b) = (b < a) ? b : a, as the reference: with a NaN the first operand wins."""
    return np.where(b < a, b, a)


@kernel(OperationType.MINIMUM)
def minimum(call: KernelCall) -> list[np.ndarray]:
    return [min_max(call, _min)]
