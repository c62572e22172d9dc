"""ADD (NNAPI OperationType 0): elementwise sum with broadcasting.

Slots: 0 input1, 1 input2 (same type, broadcastable, rank <= 4), 2 fused activation (INT32 FuseCode).
Types: TENSOR_FLOAT32, TENSOR_FLOAT16 (computed in float32), TENSOR_QUANT8_ASYMM and
TENSOR_QUANT8_ASYMM_SIGNED (each input keeps its own scale / zero point; the reference left-shift-20
pipeline), TENSOR_INT32 (wrap-around, activation NONE only).
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.runtime.kernels._binary_kernels import arithmetic_kernel
from nnconv.runtime.kernels._elementwise import quant_add

add = arithmetic_kernel(OperationType.ADD, np.add, "add", quant_add)
