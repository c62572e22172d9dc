"""TRANSPOSE (NNAPI OperationType 37, API 28).

Slots: 0 input (float32/float16/quant8 asymm/signed, rank <= 4), 1 perm (TENSOR_INT32 1-D, optional:
omitted or empty reverses the dimensions).
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.quantization import requantize_to
from nnconv.runtime.kernels.registry import KernelCall, kernel


@kernel(OperationType.TRANSPOSE)
def transpose(call: KernelCall) -> list[np.ndarray]:
    x = call.tensor(0)
    perm = [int(p) for p in call.inputs[1].reshape(-1)] if call.has(1) else []
    if not perm:
        perm = list(range(x.ndim))[::-1]
    if sorted(perm) != list(range(x.ndim)):
        raise call.fail(f"perm {perm} is not a permutation of {x.ndim} dimensions")
    y = np.ascontiguousarray(np.transpose(x, perm))
    return [requantize_to(y, call.in_operands[0], call.out_operands[0])]
