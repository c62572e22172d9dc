"""MINIMUM (NNAPI OperationType 66): elementwise smaller of two tensors, with broadcasting.

Slots: 0 input1, 1 input2 (same type, broadcastable). Types: TENSOR_FLOAT32, TENSOR_FLOAT16, TENSOR_INT32,
TENSOR_QUANT8_ASYMM, TENSOR_QUANT8_ASYMM_SIGNED (inputs may differ in scale / zero point from each other and
from the output; both are requantized to the output first).
"""

from __future__ import annotations

from nnconv.nnapi.enums import OperationType
from nnconv.runtime.kernels._binary_kernels import min_max_kernel
from nnconv.runtime.kernels._minmax import pick_min

minimum = min_max_kernel(OperationType.MINIMUM, pick_min)
