"""LESS (NNAPI OperationType 58): elementwise a < b with broadcasting, output TENSOR_BOOL8.

Slots: 0 input1, 1 input2 (same type, broadcastable). Types: TENSOR_BOOL8, TENSOR_FLOAT16, TENSOR_FLOAT32,
TENSOR_INT32, TENSOR_QUANT8_ASYMM, TENSOR_QUANT8_ASYMM_SIGNED (quantized inputs compare real values, so
their scales and zero points may differ).
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.runtime.kernels._compare import compare_kernel

less = compare_kernel(OperationType.LESS, np.less)
