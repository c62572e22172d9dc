"""MEAN (NNAPI OperationType 31, API 28).

Slots: 0 input (float32/float16/quant8 asymm/signed, rank <= 4), 1 axes (TENSOR_INT32 1-D), 2 keep_dims
(INT32 scalar, > 0 keeps). Quantized: the reference (TFLite `Mean<uint8_t, int32_t>`) sums the stored
values in int32 and divides by the element count with C++ integer division (truncation toward zero); the
output keeps the input's scale and zero point, so an output declared with other parameters is requantized.
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.quantization import is_quant8, requantize_to
from nnconv.runtime.kernels.reduce_ops import finish_reduction, reduction_axes
from nnconv.runtime.kernels.registry import KernelCall, kernel


@kernel(OperationType.MEAN)
def mean(call: KernelCall) -> list[np.ndarray]:
    x = call.tensor(0)
    axes = reduction_axes(call, x.ndim)
    keep = int(call.scalar(2)) > 0
    src, out = call.in_operands[0], call.out_operands[0]
    count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64)) if axes else 1
    if count == 0:
        raise call.fail("cannot average over an empty dimension")
    if is_quant8(src.type):
        total = x.astype(np.int64).sum(axis=axes, keepdims=True)
        q = np.where(total >= 0, total // count, -((-total) // count))  # C++ truncating division
        y = requantize_to(q.astype(src.dtype), src, out)
    else:
        y = x.astype(np.float32).mean(axis=axes, keepdims=True).astype(out.dtype)
    return [finish_reduction(y, x.shape, axes, keep)]
