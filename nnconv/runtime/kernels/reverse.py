"""REVERSE (NNAPI OperationType 105, feature level 7).

Slots: 0 input (float32/float16/int32/quant8 asymm/signed), 1 axis (TENSOR_INT32 [1], negative allowed).
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.quantization import requantize_to
from nnconv.runtime.kernels._spatial import normalize_axis
from nnconv.runtime.kernels.registry import KernelCall, kernel


@kernel(OperationType.REVERSE)
def reverse(call: KernelCall) -> list[np.ndarray]:
    x = call.tensor(0)
    axes = call.tensor(1).reshape(-1)
    if axes.size != 1:
        raise call.fail(f"axis must hold exactly one value, got {axes.size}")
    axis = normalize_axis(int(axes[0]), x.ndim, call.fail)
    y = np.ascontiguousarray(np.flip(x, axis=axis))
    return [requantize_to(y, call.in_operands[0], call.out_operands[0])]
