"""MIRROR_PAD (NNAPI OperationType 104, feature level 7).

Slots: 0 input (float32/float16/quant8 asymm/signed/int32), 1 paddings (TENSOR_INT32 [rank, 2]),
2 mode (INT32: 0 REFLECT excludes the edge, 1 SYMMETRIC repeats it). Paddings may not exceed the extent
(minus one for REFLECT).
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.quantization import requantize_to
from nnconv.runtime.kernels.pad import read_paddings
from nnconv.runtime.kernels.registry import KernelCall, kernel


@kernel(OperationType.MIRROR_PAD)
def mirror_pad(call: KernelCall) -> list[np.ndarray]:
    x = call.tensor(0)
    pairs = read_paddings(call, x.ndim)
    mode = int(call.scalar(2))
    if mode not in (0, 1):
        raise call.fail(f"mode {mode} is neither REFLECT (0) nor SYMMETRIC (1)")
    limit = [d - 1 if mode == 0 else d for d in x.shape]
    if any(max(a, b) > m for (a, b), m in zip(pairs, limit)):
        raise call.fail(f"paddings {pairs} are too large for shape {list(x.shape)}")
    y = np.pad(x, pairs, mode="reflect" if mode == 0 else "symmetric")
    return [requantize_to(y, call.in_operands[0], call.out_operands[0])]
