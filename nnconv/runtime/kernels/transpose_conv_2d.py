"""TRANSPOSE_CONV_2D (NNAPI OperationType 92, API 29).

Slots, explicit padding (11 inputs): 0 input [N,H,W,C], 1 filter [O,KH,KW,C], 2 bias [O],
3..6 pad left/right/top/bottom, 7 stride_w, 8 stride_h, 9 fused activation, 10 NCHW bool.
Implicit padding (9 inputs): 3 output shape TENSOR_INT32 [4], 4 padding scheme, 5 stride_w, 6 stride_h,
7 activation, 8 NCHW; the padding is derived from the requested output size (the tail may be negative).
Output size: in * stride + filter - stride - head - tail.

Each input pixel scatters x . filter[o] to out[h*s - pad + kh]. Computed as a direct convolution of the
stride-dilated, (K-1)-padded input with the spatially flipped filter, cropped by the padding: one im2col
matmul. Types: float32, float16 (computed in float32), quant8 asymm / signed with a per-tensor or
per-channel filter: int32 accumulation and the reference per-channel requantization.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nnconv.nnapi.enums import OperandType, OperationType, PaddingCode
from nnconv.nnapi.quantization import Requantizer, is_quant8, max_abs_offset, requantize_accumulator
from nnconv.runtime.kernels._float_activation import apply_float_activation
from nnconv.runtime.kernels._matmul import exact_matmul_dtype
from nnconv.runtime.kernels._spatial import extract_patches, nchw_to_nhwc, nhwc_to_nchw
from nnconv.runtime.kernels.conv_2d import filter_scales
from nnconv.runtime.kernels.registry import KernelCall, kernel


def transpose_padding(out_size: int, stride: int, filter_size: int, scheme: int) -> tuple[int, int]:
    """`calculateExplicitPaddingTransposeConv`: SAME padding of the output size; the tail fits the end of
    the last stride exactly, so it may be negative."""
    if scheme == PaddingCode.VALID:
        return 0, 0
    out = (out_size + stride - 1) // stride
    need = (out - 1) * stride + filter_size - out_size
    head = need // 2 if need > 0 else 0
    return head, need - head


@kernel(OperationType.TRANSPOSE_CONV_2D)
def transpose_conv_2d(call: KernelCall) -> list[np.ndarray]:
    x, w = call.tensor(0), call.tensor(1)
    b = call.inputs[2]
    if x.ndim != 4 or w.ndim != 4:
        raise call.fail(f"input and filter must be 4-D, got {x.ndim}-D and {w.ndim}-D")
    o, kh, kw, c = w.shape
    if call.num_inputs == 9:
        nchw = bool(call.scalar(8))
        shape = call.tensor(3).reshape(-1)
        if shape.size != 4:
            raise call.fail("output shape must have 4 elements")
        req_h, req_w = (int(shape[2]), int(shape[3])) if nchw else (int(shape[1]), int(shape[2]))
        scheme = int(call.scalar(4))
        sw, sh, act = int(call.scalar(5)), int(call.scalar(6)), int(call.scalar(7))
        if min(sw, sh) < 1:
            raise call.fail("strides must be positive")
        pl, pr = transpose_padding(req_w, sw, kw, scheme)
        pt, pb = transpose_padding(req_h, sh, kh, scheme)
    elif call.num_inputs == 11:
        pl, pr, pt, pb, sw, sh, act = (int(call.scalar(i)) for i in range(3, 10))
        nchw = bool(call.scalar(10))
    else:
        raise call.fail(f"expects 9 or 11 inputs, has {call.num_inputs}")
    if min(sw, sh) < 1 or pl < 0 or pt < 0:
        raise call.fail("strides must be positive, left and top paddings non-negative")
    xh = nchw_to_nhwc(x) if nchw else x
    n, h, wd, cin = xh.shape
    if cin != c:
        raise call.fail(f"input depth {cin} differs from filter depth {c}")
    if b is None or b.shape != (o,):
        raise call.fail(f"bias must have shape [{o}]")
    out_h = h * sh + kh - sh - pt - pb
    out_w = wd * sw + kw - sw - pl - pr
    if out_h < 1 or out_w < 1:
        raise call.fail(f"output size {out_h}x{out_w} must be positive")
    in_od, out_od = call.in_operands[0], call.out_operands[0]
    quant = is_quant8(in_od.type)
    if quant:
        qw: _QuantTransposeFilter = call.memo(("transpose_conv", act), (1, 2),
                                              lambda: _quant_filter(call, w, b, act))
        xs = np.subtract(xh, qw.dtype(in_od.zero_point), dtype=qw.dtype)
        wf = qw.matrix
    else:
        xs = xh.astype(np.float32)
        # the spatially flipped filter as [O, KH*KW*C] float32 rows, kept per operation; matmul reads .T
        wf = call.memo("transpose_conv_float", (1,),
                       lambda: w.astype(np.float32)[:, ::-1, ::-1, :].reshape(o, kh * kw * c)).T
    # Full output (no padding crop) has size (h-1)*s + k; the top-left crop is (pt, pl).
    full_h, full_w = (h - 1) * sh + kh, (wd - 1) * sw + kw
    need_h, need_w = max(full_h, pt + out_h), max(full_w, pl + out_w)  # negative tails extend the output
    dil = np.zeros((n, need_h + kh - 1, need_w + kw - 1, c), dtype=xs.dtype)
    dil[:, kh - 1:kh - 1 + (h - 1) * sh + 1:sh, kw - 1:kw - 1 + (wd - 1) * sw + 1:sw] = xs
    patches = extract_patches(dil, kh, kw, 1, 1, 1, 1, need_h, need_w)[:, pt:pt + out_h, pl:pl + out_w]
    cols = patches.reshape(n * out_h * out_w, kh * kw * c)
    acc = (cols @ wf).reshape(n, out_h, out_w, o)
    if quant:
        if qw.requantizer is not None:
            y = qw.requantizer(acc)
        else:
            acc = np.rint(acc).astype(np.int64) + b.astype(np.int64)
            y = requantize_accumulator(acc, qw.multipliers, qw.shifts, out_od, act)
    else:
        acc += b.astype(np.float32)
        y = apply_float_activation(acc, act).astype(out_od.dtype, copy=False)
    return [nhwc_to_nchw(y) if nchw else y]


@dataclass
class _QuantTransposeFilter:
    """Constant-derived data of a quantized TRANSPOSE_CONV_2D, built once per operation."""

    matrix: np.ndarray  # flipped (w - zp) as [KH*KW*C, O] in `dtype`
    dtype: type  # float32 or float64, exact for this filter (`exact_matmul_dtype`)
    requantizer: Requantizer | None
    multipliers: np.ndarray
    shifts: np.ndarray


def _quant_filter(call: KernelCall, w: np.ndarray, b: np.ndarray, act: int) -> _QuantTransposeFilter:
    """Each output sums a subset of one filter's taps times inputs, so |acc_o| <= sum |w_o - zp| * max|x - zp|."""
    in_od, w_od, out_od = call.in_operands[0], call.in_operands[1], call.out_operands[0]
    o, kh, kw, c = w.shape
    w_zp = 0 if w_od.type is OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL else w_od.zero_point
    ws = w.astype(np.int64) - w_zp
    bound = np.abs(ws).reshape(o, -1).sum(axis=1) * max_abs_offset(in_od.type, in_od.zero_point)
    dtype = exact_matmul_dtype(int(bound.max(initial=0)))
    matrix = np.ascontiguousarray(ws[:, ::-1, ::-1, :].reshape(o, kh * kw * c).T, dtype=dtype)
    m, sh = call.conv_multipliers(in_od.scale, filter_scales(call, 1), out_od.scale)
    return _QuantTransposeFilter(matrix, dtype, Requantizer.build(m, sh, b, out_od, act, bound), m, sh)
