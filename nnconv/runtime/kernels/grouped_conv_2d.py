"""GROUPED_CONV_2D (NNAPI OperationType 55, API 29).

Slots, implicit padding: 0 input [N,H,W,C], 1 filter [O,KH,KW,C/G], 2 bias [O], 3 padding scheme,
4 stride_w, 5 stride_h, 6 num_groups G, 7 fused activation, 8 NCHW bool.
Explicit padding: 3..6 pad left/right/top/bottom, 7 stride_w, 8 stride_h, 9 G, 10 activation, 11 NCHW.
Output channels [g*O/G, (g+1)*O/G) read input channels [g*C/G, (g+1)*C/G). Types as CONV_2D (float32,
float16, quant8 asymm / signed, per-channel filter); the arithmetic is `conv_2d.conv_nhwc` with groups.
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.runtime.kernels._spatial import nhwc_to_nchw
from nnconv.runtime.kernels.conv_2d import conv_nhwc, grouped_conv_inputs
from nnconv.runtime.kernels.registry import KernelCall, kernel


@kernel(OperationType.GROUPED_CONV_2D)
def grouped_conv_2d(call: KernelCall) -> list[np.ndarray]:
    xh, w, p, groups = grouped_conv_inputs(call, "num_groups")
    y = conv_nhwc(call, xh, w, call.inputs[2], p, groups=groups)
    return [nhwc_to_nchw(y) if p.nchw else y]
