"""INSTANCE_NORMALIZATION (NNAPI OperationType 57, API 29).

Slots: 0 input [N,H,W,C] (float32 / float16), 1 gamma, 2 beta, 3 epsilon (FLOAT32, or FLOAT16 for
float16), 4 NCHW bool. Per batch and channel over H and W:
out = (x - mean) * gamma / sqrt(var + epsilon) + beta, computed in float32.
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.runtime.kernels._spatial import nchw_to_nhwc, nhwc_to_nchw
from nnconv.runtime.kernels.registry import KernelCall, kernel


@kernel(OperationType.INSTANCE_NORMALIZATION)
def instance_normalization(call: KernelCall) -> list[np.ndarray]:
    x = call.tensor(0)
    if x.ndim != 4:
        raise call.fail(f"input must be 4-D, got {x.ndim}-D")
    if not call.type(0).is_float:
        raise call.fail("INSTANCE_NORMALIZATION takes float tensors only")
    gamma, beta, eps = (np.float32(call.scalar(i)) for i in (1, 2, 3))
    nchw = bool(call.opt_scalar(4, False))
    xf = (nchw_to_nhwc(x) if nchw else x).astype(np.float32)
    mean = xf.mean(axis=(1, 2), keepdims=True, dtype=np.float64)
    var = ((xf - mean) ** 2).mean(axis=(1, 2), keepdims=True)
    y = ((xf - mean) * gamma / np.sqrt(var + eps) + beta).astype(np.float32)
    y = nhwc_to_nchw(y) if nchw else y
    return [y.astype(call.out_operands[0].dtype)]
