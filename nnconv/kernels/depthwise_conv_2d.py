"""DEPTHWISE_CONV_2D (NNAPI OperationType 4).

Slots, implicit padding: 0 input [N,H,W,C], 1 filter [1,KH,KW,C*M], 2 bias [C*M], 3 padding scheme,
4 stride_w, 5 stride_h, 6 depth multiplier M, 7 fused activation, [8 NCHW bool], [9 dilation_w, 10 dilation_h].
Explicit padding: 3..6 pad left/right/top/bottom, 7 stride_w, 8 stride_h, 9 M, 10 activation, [11 NCHW],
[12 dilation_w, 13 dilation_h].

Output channel `c * M + m` reads input channel `c`. Types: float32, float16 (computed in float32), quant8
asymm / asymm signed with a per-tensor or per-channel (channel dim 3) filter: int32 accumulation of
(q - zp) products, then the per-channel requantization of the reference.
"""

from __future__ import annotations

import numpy as np

from nnconv.kernels.common import (apply_float_activation, conv_multipliers, is_quant8,
                                   nchw_to_nhwc, nhwc_to_nchw, pad_spatial, requantize_accumulator)
from nnconv.kernels.conv_2d import ConvParams, _peek_nchw, filter_scales, is_explicit_padding, parse_conv_params
from nnconv.kernels.registry import KernelCall, kernel
from nnconv.nnapi.enums import OperandType, OperationType


def depthwise_nhwc(call: KernelCall, x: np.ndarray, w: np.ndarray, b: np.ndarray | None, p: ConvParams,
                   multiplier: int) -> np.ndarray:
    """Depthwise convolution of NHWC storage arrays; filter [1, KH, KW, C*M]."""
    in_od, w_od, out_od = call.in_operands[0], call.in_operands[1], call.out_operands[0]
    n, _h, _w, c = x.shape
    one, kh, kw, oc = w.shape
    if one != 1:
        raise call.fail(f"filter dimension 0 must be 1, got {one}")
    if oc != c * multiplier:
        raise call.fail(f"filter depth {oc} differs from input depth {c} x multiplier {multiplier}")
    quant = is_quant8(in_od.type)
    if quant:
        # int32 holds any sum of fewer than 2^31 / 255^2 (~33000) taps exactly; larger filters widen to int64.
        acc_dtype = np.int32 if kh * kw * 255 * 255 < 2**31 else np.int64
        xs = pad_spatial(x.astype(acc_dtype) - in_od.zero_point, p.pad_top, p.pad_bottom, p.pad_left, p.pad_right, 0)
        w_zp = 0 if w_od.type is OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL else w_od.zero_point
        ws = w.astype(acc_dtype) - w_zp
    else:
        acc_dtype = np.float32
        xs = pad_spatial(x.astype(np.float32), p.pad_top, p.pad_bottom, p.pad_left, p.pad_right, 0)
        ws = w.astype(np.float32)
    wk = ws.reshape(kh, kw, c, multiplier)
    acc = np.zeros((n, p.out_h, p.out_w, c, multiplier), dtype=acc_dtype)
    span_h, span_w = (p.out_h - 1) * p.stride_h + 1, (p.out_w - 1) * p.stride_w + 1
    for ky in range(kh):  # a loop over filter taps: each step is one multiply-add over the whole output
        for kx in range(kw):
            y0, x0 = ky * p.dil_h, kx * p.dil_w
            tap = xs[:, y0:y0 + span_h:p.stride_h, x0:x0 + span_w:p.stride_w, :]
            acc += tap[..., None] * wk[ky, kx]
    acc = acc.reshape(n, p.out_h, p.out_w, oc).astype(np.int64 if quant else np.float32)
    if quant:
        if b is not None:
            acc = acc + b.astype(np.int64)
        m, s = conv_multipliers(in_od.scale, filter_scales(call, 1), out_od.scale)
        return requantize_accumulator(acc, m, s, out_od, p.activation)
    if b is not None:
        acc = acc + b.astype(np.float32)
    return apply_float_activation(acc.astype(np.float32), p.activation).astype(out_od.dtype)


@kernel(OperationType.DEPTHWISE_CONV_2D)
def depthwise_conv_2d(call: KernelCall) -> list[np.ndarray]:
    x, w = call.tensor(0), call.tensor(1)
    if x.ndim != 4 or w.ndim != 4:
        raise call.fail(f"input and filter must be 4-D, got {x.ndim}-D and {w.ndim}-D")
    nchw = _peek_nchw(call, extra=1)
    xh = nchw_to_nhwc(x) if nchw else x
    p = parse_conv_params(call, xh.shape[1], xh.shape[2], w.shape[1], w.shape[2], extra=1)
    mult_slot = 9 if is_explicit_padding(call, 3, 1) else 6
    multiplier = int(call.scalar(mult_slot))
    if multiplier < 1:
        raise call.fail(f"depth multiplier {multiplier} must be positive")
    y = depthwise_nhwc(call, xh, w, call.inputs[2], p, multiplier)
    return [nhwc_to_nchw(y) if p.nchw else y]
