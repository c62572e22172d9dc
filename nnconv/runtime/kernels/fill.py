"""FILL (NNAPI OperationType 100, feature level 4) and RANK (101, feature level 4).

FILL slots: 0 dims (TENSOR_INT32 1-D, non-negative), 1 value (FLOAT32 / FLOAT16 / INT32 scalar matching
the output type). RANK slots: 0 input (any tensor type); output an INT32 scalar.
"""

from __future__ import annotations

import numpy as np

from nnconv.runtime.kernels.registry import KernelCall, kernel
from nnconv.nnapi.enums import OperationType


@kernel(OperationType.FILL)
def fill(call: KernelCall) -> list[np.ndarray]:
    dims = [int(d) for d in call.tensor(0).reshape(-1)]
    if any(d < 0 for d in dims):
        raise call.fail(f"dims {dims} must be non-negative")
    out = call.out_operands[0]
    return [np.full(dims, call.scalar(1), dtype=out.dtype)]


@kernel(OperationType.RANK)
def rank(call: KernelCall) -> list[np.ndarray]:
    return [np.asarray(call.tensor(0).ndim, dtype=np.int32)]
