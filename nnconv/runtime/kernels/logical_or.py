"""LOGICAL_OR (NNAPI OperationType 63): elementwise a OR b of two TENSOR_BOOL8 tensors, with broadcasting.

Slots: 0 input1, 1 input2 (TENSOR_BOOL8, broadcastable).
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.runtime.kernels._binary_kernels import logical_kernel

logical_or = logical_kernel(OperationType.LOGICAL_OR, np.logical_or)
