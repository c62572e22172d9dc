"""EXPAND_DIMS (NNAPI OperationType 50, API 29).

Slots: 0 input (float32/float16/quant8 asymm/signed/int32), 1 axis (INT32 scalar in [-(rank+1), rank]).
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.quantization import requantize_to
from nnconv.runtime.kernels._spatial import normalize_axis
from nnconv.runtime.kernels.registry import KernelCall, kernel


@kernel(OperationType.EXPAND_DIMS)
def expand_dims(call: KernelCall) -> list[np.ndarray]:
    x = call.tensor(0)
    axis = normalize_axis(int(call.scalar(1)), x.ndim + 1, call.fail)
    return [requantize_to(np.expand_dims(x, axis), call.in_operands[0], call.out_operands[0])]
