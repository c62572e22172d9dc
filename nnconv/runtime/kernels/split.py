"""SPLIT (NNAPI OperationType 87, API 29).

Slots: 0 input (float32/float16/int32/quant8 asymm/signed), 1 axis (INT32 scalar, negative allowed),
2 num_splits (INT32 scalar dividing the axis extent). Outputs: num_splits equal slices along the axis.
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.quantization import requantize_to
from nnconv.runtime.kernels._spatial import normalize_axis
from nnconv.runtime.kernels.registry import KernelCall, kernel


@kernel(OperationType.SPLIT)
def split(call: KernelCall) -> list[np.ndarray]:
    x = call.tensor(0)
    axis = normalize_axis(int(call.scalar(1)), x.ndim, call.fail)
    n = int(call.scalar(2))
    if n < 1 or x.shape[axis] % n or n != len(call.out_operands):
        raise call.fail(f"cannot split an axis of extent {x.shape[axis]} into {n} equal parts "
                        f"for {len(call.out_operands)} outputs")
    parts = np.split(x, n, axis=axis)
    return [requantize_to(np.ascontiguousarray(p), call.in_operands[0], od)
            for p, od in zip(parts, call.out_operands)]
