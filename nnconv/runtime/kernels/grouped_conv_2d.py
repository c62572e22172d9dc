"""GROUPED_CONV_2D (NNAPI OperationType 55, API 29).

Slots: `window.GroupedImplicitSlot` / `GroupedExplicitSlot` (input [N,H,W,C], filter [O,KH,KW,C/G],
bias [O], the padding, strides, num_groups G, activation, NCHW), read by `window.GROUPED_CONV_2D`.
Output channels [g*O/G, (g+1)*O/G) read input channels [g*C/G, (g+1)*C/G). Types as CONV_2D (float32,
float16, quant8 asymm / signed, per-channel filter); the arithmetic is `conv_2d.conv_nhwc` with groups.
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.operations import window
from nnconv.runtime.kernels._spatial import nhwc_to_nchw
from nnconv.runtime.kernels.conv_2d import conv_nhwc, grouped_conv_inputs
from nnconv.runtime.kernels.registry import KernelCall, kernel


@kernel(OperationType.GROUPED_CONV_2D)
def grouped_conv_2d(call: KernelCall) -> list[np.ndarray]:
    xh, w, p, groups = grouped_conv_inputs(call, window.GROUPED_CONV_2D, "num_groups")
    y = conv_nhwc(call, xh, w, call.inputs[2], p, groups=groups)
    return [nhwc_to_nchw(y) if p.nchw else y]
