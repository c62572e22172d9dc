"""SQUEEZE (NNAPI OperationType 34, API 28).

Slots: 0 input (float32/float16/quant8 asymm/signed/int32, rank <= 4), 1 squeeze dims (TENSOR_INT32 1-D,
optional: omitted or empty squeezes every size-1 dimension). Naming a dimension that is not 1 fails.
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.quantization import requantize_to
from nnconv.runtime.kernels._spatial import normalize_axis
from nnconv.runtime.kernels.registry import KernelCall, kernel


@kernel(OperationType.SQUEEZE)
def squeeze(call: KernelCall) -> list[np.ndarray]:
    x = call.tensor(0)
    dims = [int(d) for d in call.inputs[1].reshape(-1)] if call.has(1) else []
    if dims:
        axes = sorted({normalize_axis(d, x.ndim, call.fail) for d in dims})
        if any(x.shape[a] != 1 for a in axes):
            raise call.fail(f"squeezed dimensions {dims} of shape {list(x.shape)} are not all 1")
    else:
        axes = [a for a, d in enumerate(x.shape) if d == 1]
    y = np.squeeze(x, axis=tuple(axes)) if axes else x
    y = y.reshape(y.shape or (1,))  # NNAPI tensors keep at least one dimension
    return [requantize_to(y, call.in_operands[0], call.out_operands[0])]
