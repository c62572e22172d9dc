"""TRANSPOSE_CONV_2D (NNAPI OperationType 91, API 29).

Slots: `window.TransposeExplicitSlot` (11 inputs: input [N,H,W,C], filter [O,KH,KW,C], bias [O], pads
left/right/top/bottom, strides, fused activation, NCHW) or `TransposeImplicitSlot` (9: the output shape
TENSOR_INT32 [4] and a padding scheme instead of the pads; the padding is derived from the requested output
size, the tail may be negative), read by `window.TRANSPOSE_CONV_2D`.
Output size: in * stride + filter - stride - head - tail.

Each input pixel scatters x . filter[o] to out[h*s - pad + kh]. Computed that way: one matmul of the input
pixels [N*H*W, C] with every tap's filter [C, KH*KW*O], then each tap's [N, H, W, O] slice added into the
stride-spaced positions of the uncropped output (a copy when the taps tile it exactly, stride == filter),
then the padding cropped. A convolution of the stride-dilated input would multiply s*s times as many
zeros. Float sums: each tap's channel sum in BLAS order, the taps added in the reference's order (input
rows, then columns, ascending: filter taps descending), within the float tolerance. Types: float32,
float16 (computed in float32), quant8 asymm / signed with a per-tensor or per-channel filter: exact integer
accumulation (in float32 or float64 while provably exact) and the reference per-channel requantization.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nnconv.nnapi.enums import OperandType, OperationType, PaddingCode
from nnconv.nnapi.operations import window
from nnconv.nnapi.operations.window import TransposeExplicitSlot, TransposeImplicitSlot
from nnconv.nnapi.quantization import Requantizer, is_quant8, max_abs_offset, requantize_accumulator
from nnconv.runtime.kernels._float_activation import apply_float_activation
from nnconv.runtime.kernels._matmul import exact_matmul_dtype
from nnconv.runtime.kernels._spatial import nchw_to_nhwc, nhwc_to_nchw, window_params
from nnconv.runtime.kernels._conv_quant import filter_scales
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
    if call.num_inputs not in (len(TransposeImplicitSlot), len(TransposeExplicitSlot)):
        raise call.fail(f"expects 9 or 11 inputs, has {call.num_inputs}")
    wp = window_params(call, window.TRANSPOSE_CONV_2D)
    nchw, sw, sh, act = wp.nchw, int(wp.stride_w), int(wp.stride_h), int(wp.activation)
    if wp.explicit:
        pl, pr, pt, pb = (int(v) for v in (wp.pad_left, wp.pad_right, wp.pad_top, wp.pad_bottom))
    else:
        shape = call.tensor(TransposeImplicitSlot.OUTPUT_SHAPE).reshape(-1)
        if shape.size != 4:
            raise call.fail("output shape must have 4 elements")
        req_h, req_w = (int(shape[2]), int(shape[3])) if nchw else (int(shape[1]), int(shape[2]))
        if min(sw, sh) < 1:
            raise call.fail("strides must be positive")
        pl, pr = transpose_padding(req_w, sw, kw, int(wp.padding_scheme))
        pt, pb = transpose_padding(req_h, sh, kh, int(wp.padding_scheme))
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
        xs = xh.astype(np.float32, copy=False)
        # every tap's filter as [C, KH*KW*O] float32, kept per operation
        wf = call.memo("transpose_conv_float", (1,), lambda: _tap_matrix(w, np.float32))
    # Full output (no padding crop) has size (h-1)*s + k; the top-left crop is (pt, pl).
    full_h, full_w = (h - 1) * sh + kh, (wd - 1) * sw + kw
    need_h, need_w = max(full_h, pt + out_h), max(full_w, pl + out_w)  # negative tails extend the output
    tap_rows = call.empty((n * h * wd, kh * kw * o), wf.dtype)
    np.matmul(xs.reshape(n * h * wd, c), wf, out=tap_rows)
    taps = tap_rows.reshape(n, h, wd, kh, kw, o)
    full = call.empty((n, need_h, need_w, o), taps.dtype)
    if (sh, sw) == (kh, kw) and (need_h, need_w) == (h * kh, wd * kw):
        # the taps tile the output exactly: one copy
        full.reshape(n, h, kh, wd, kw, o)[...] = taps.transpose(0, 1, 3, 2, 4, 5)
    else:
        full.fill(0)
        for ky in reversed(range(kh)):
            for kx in reversed(range(kw)):
                dst = full[:, ky:ky + (h - 1) * sh + 1:sh, kx:kx + (wd - 1) * sw + 1:sw]
                np.add(dst, taps[:, :, :, ky, kx], out=dst)
    if (pt, pl, out_h, out_w) == (0, 0, need_h, need_w):
        acc = full
    else:
        acc = call.empty((n, out_h, out_w, o), full.dtype)
        np.copyto(acc, full[:, pt:pt + out_h, pl:pl + out_w])
        call.give_back(full)
    call.give_back(tap_rows)
    if quant:
        if qw.requantizer is not None:
            y = qw.requantizer(acc)
        else:
            y = requantize_accumulator(np.rint(acc).astype(np.int64) + b.astype(np.int64), qw.multipliers,
                                       qw.shifts, out_od, act)
        call.give_back(acc)
    else:
        acc += b.astype(np.float32)
        y = apply_float_activation(acc, act).astype(out_od.dtype, copy=False)
        if y is not acc:  # float16: the float32 buffer goes back to the pool
            call.give_back(acc)
    if not nchw:
        return [y]
    result = nhwc_to_nchw(y)
    call.give_back(y)  # the NHWC result was pooled scratch (a no-op for the requantizer's own array)
    return [result]


def _tap_matrix(w: np.ndarray, dtype: type) -> np.ndarray:
    """The filter [O, KH, KW, C] as [C, KH*KW*O]: column (ky, kx, o) holds tap (ky, kx) of output channel o."""
    o, kh, kw, c = w.shape
    return np.ascontiguousarray(w.transpose(3, 1, 2, 0).reshape(c, kh * kw * o), dtype=dtype)


@dataclass
class _QuantTransposeFilter:
    """Constant-derived data of a quantized TRANSPOSE_CONV_2D, built once per operation."""

    matrix: np.ndarray  # (w - zp) as [C, KH*KW*O] in `dtype` (`_tap_matrix`)
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
    matrix = _tap_matrix(ws, dtype)
    # the multipliers and shifts (TFLite's single rounding is its FULLY_CONNECTED's: `ConvRequantization`)
    m, sh = call.conv_requantization(in_od.scale, filter_scales(call, 1), out_od.scale)[:2]
    return _QuantTransposeFilter(matrix, dtype, Requantizer.build(m, sh, b, out_od, act, bound), m, sh)
