"""SPACE_TO_BATCH_ND (NNAPI OperationType 33, API 28).

Slots: 0 input (float32/float16/quant8 asymm/signed, 4-D), 1 block shape (TENSOR_INT32 [2]: h, w, >= 1),
2 paddings (TENSOR_INT32 [2, 2]: top/bottom, left/right), [3 NCHW layout BOOL, API 29]. Padding uses 0
for floats and the output zero point for quantized tensors. Output batch b' = (bh_off * bw + bw_off) * N + n.
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.quantization import is_quant8, requantize_to
from nnconv.runtime.kernels._spatial import nhwc_input, nhwc_to_nchw
from nnconv.runtime.kernels.registry import KernelCall, kernel


@kernel(OperationType.SPACE_TO_BATCH_ND)
def space_to_batch_nd(call: KernelCall) -> list[np.ndarray]:
    x, nchw = nhwc_input(call, 3)
    bh, bw = (int(b) for b in call.tensor(1).reshape(-1))
    pads = call.tensor(2).reshape(-1)
    if pads.size != 4:
        raise call.fail("paddings must have shape [2, 2]")
    pt, pb, pl, pr = (int(p) for p in pads)
    if bh < 1 or bw < 1 or min(pt, pb, pl, pr) < 0:
        raise call.fail("block sizes must be positive and paddings non-negative")
    out = call.out_operands[0]
    x = requantize_to(x, call.in_operands[0], out)
    fill = out.zero_point if is_quant8(out.type) else 0
    xp = np.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)), constant_values=fill)
    n, h, w, c = xp.shape
    if h % bh or w % bw:
        raise call.fail(f"padded spatial size {h}x{w} is not a multiple of the block {bh}x{bw}")
    y = xp.reshape(n, h // bh, bh, w // bw, bw, c).transpose(2, 4, 0, 1, 3, 5)
    y = np.ascontiguousarray(y).reshape(bh * bw * n, h // bh, w // bw, c)
    return [nhwc_to_nchw(y) if nchw else y]
