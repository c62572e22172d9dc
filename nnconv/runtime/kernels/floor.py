"""FLOOR (NNAPI OperationType 8): elementwise largest integer not greater than x.

Slots: 0 input (rank <= 4). Types: TENSOR_FLOAT32, TENSOR_FLOAT16 (computed in float32, cast back).
"""

from __future__ import annotations

import numpy as np

from nnconv.runtime.kernels._activation import check_rank
from nnconv.runtime.kernels._elementwise import float_unary
from nnconv.runtime.kernels.registry import KernelCall, kernel
from nnconv.nnapi.enums import OperationType


@kernel(OperationType.FLOOR)
def floor(call: KernelCall) -> list[np.ndarray]:
    check_rank(call, call.tensor(0))
    return [float_unary(call, np.floor)]
