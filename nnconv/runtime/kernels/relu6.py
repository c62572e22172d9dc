"""RELU6 (NNAPI OperationType 21): clamp to [0, 6].

Slots: 0 input (rank <= 4). Types: TENSOR_FLOAT32, TENSOR_FLOAT16, TENSOR_QUANT8_ASYMM,
TENSOR_QUANT8_ASYMM_SIGNED; a quantized output keeps the input's scale and zero point, and the clamp
bounds are quantized with them.
"""

from __future__ import annotations

import numpy as np

from nnconv.runtime.kernels._activation import relu_family
from nnconv.runtime.kernels.registry import KernelCall, kernel
from nnconv.nnapi.enums import FuseCode, OperationType


@kernel(OperationType.RELU6)
def relu6(call: KernelCall) -> list[np.ndarray]:
    return relu_family(call, FuseCode.RELU6)
