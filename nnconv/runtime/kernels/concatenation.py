"""CONCATENATION (NNAPI OperationType 2).

Slots: 0..n-1 inputs (same type and rank, equal extents except on the axis), n axis (INT32 scalar,
negative from API 29). float32/float16/quant8 asymm/signed/int32 (INT32 from feature level 4).
Quantized inputs whose (scale, zero point) differ from the output's are requantized the way the
reference does (`requantize_to`); matching inputs are copied.
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.quantization import requantize_to
from nnconv.runtime.kernels._spatial import normalize_axis
from nnconv.runtime.kernels.registry import KernelCall, kernel


@kernel(OperationType.CONCATENATION)
def concatenation(call: KernelCall) -> list[np.ndarray]:
    n = call.num_inputs - 1
    if n < 1:
        raise call.fail("needs at least one input tensor and the axis")
    xs = [call.tensor(i) for i in range(n)]
    rank = xs[0].ndim
    if rank > 4:
        raise call.fail(f"inputs have rank {rank}; NNAPI takes rank <= 4")
    axis = normalize_axis(int(call.scalar(n)), rank, call.fail)
    for i, x in enumerate(xs):
        if x.ndim != rank or any(x.shape[d] != xs[0].shape[d] for d in range(rank) if d != axis):
            raise call.fail(f"input {i} of shape {list(x.shape)} does not match input 0 {list(xs[0].shape)}")
    out = call.out_operands[0]
    parts = [requantize_to(x, call.in_operands[i], out) for i, x in enumerate(xs)]
    return [np.concatenate(parts, axis=axis).astype(out.dtype, copy=False)]
