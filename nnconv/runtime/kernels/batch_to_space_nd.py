"""BATCH_TO_SPACE_ND (NNAPI OperationType 29, API 28).

Slots: 0 input (float32/float16/quant8 asymm/signed, 4-D), 1 block shape (TENSOR_INT32 [2]: h, w, >= 1),
[2 NCHW layout BOOL, API 29]. NNAPI has no crops (TFLite's are lowered only when zero). The inverse of
SPACE_TO_BATCH_ND's batch ordering.
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.quantization import requantize_to
from nnconv.runtime.kernels._spatial import nhwc_input, nhwc_to_nchw
from nnconv.runtime.kernels.registry import KernelCall, kernel


@kernel(OperationType.BATCH_TO_SPACE_ND)
def batch_to_space_nd(call: KernelCall) -> list[np.ndarray]:
    x, nchw = nhwc_input(call, 2)
    bh, bw = (int(b) for b in call.tensor(1).reshape(-1))
    nb, h, w, c = x.shape
    if bh < 1 or bw < 1 or nb % (bh * bw):
        raise call.fail(f"batch {nb} is not a multiple of the block {bh}x{bw}")
    n = nb // (bh * bw)
    y = x.reshape(bh, bw, n, h, w, c).transpose(2, 3, 0, 4, 1, 5)
    y = np.ascontiguousarray(y).reshape(n, h * bh, w * bw, c)
    y = requantize_to(y, call.in_operands[0], call.out_operands[0])
    return [nhwc_to_nchw(y) if nchw else y]
