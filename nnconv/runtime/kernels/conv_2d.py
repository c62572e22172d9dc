"""CONV_2D (NNAPI OperationType 3).

Slots, implicit padding: 0 input [N,H,W,C], 1 filter [O,KH,KW,C], 2 bias [O], 3 padding scheme,
4 stride_w, 5 stride_h, 6 fused activation, [7 NCHW bool], [8 dilation_w, 9 dilation_h].
Explicit padding: 3..6 pad left/right/top/bottom, 7 stride_w, 8 stride_h, 9 activation, [10 NCHW],
[11 dilation_w, 12 dilation_h]. The two forms are told apart by input 7's type (INT32 only in the explicit
form). Quantized: int32 accumulation of (q - zp) products, the reference per-channel requantization.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nnconv.runtime.kernels.common import (Requantizer, apply_float_activation, conv_multipliers, conv_output_size,
                                   exact_matmul_dtype, extract_patches, implicit_padding, is_quant8,
                                   max_abs_offset, nchw_to_nhwc, nhwc_to_nchw, pad_spatial,
                                   requantize_accumulator)
from nnconv.runtime.kernels.registry import KernelCall, kernel
from nnconv.nnapi.enums import OperandType, OperationType


@dataclass(frozen=True)
class ConvParams:
    pad_top: int
    pad_bottom: int
    pad_left: int
    pad_right: int
    stride_h: int
    stride_w: int
    dil_h: int
    dil_w: int
    activation: int
    nchw: bool
    out_h: int
    out_w: int


def parse_conv_params(call: KernelCall, in_h: int, in_w: int, kh: int, kw: int, first: int = 3,
                      extra: int = 0) -> ConvParams:
    """Reads padding/stride/activation/layout/dilation slots starting at `first` (CONV_2D: 3).

    `extra` counts op-specific scalars between strides and the activation (DEPTHWISE's multiplier,
    GROUPED_CONV's group count). Memoized per operation and geometry when the scalars are constants."""
    return call.memo(("conv_params", in_h, in_w, kh, kw, first, extra), range(first, call.num_inputs),
                     lambda: _parse_conv_params(call, in_h, in_w, kh, kw, first, extra))


def _parse_conv_params(call: KernelCall, in_h: int, in_w: int, kh: int, kw: int, first: int,
                       extra: int) -> ConvParams:
    explicit = is_explicit_padding(call, first, extra)
    if explicit:
        pl, pr, pt, pb = (call.scalar(first + k) for k in range(4))
        sw, sh = call.scalar(first + 4), call.scalar(first + 5)
        act_slot = first + 6 + extra
    else:
        scheme = call.scalar(first)
        sw, sh = call.scalar(first + 1), call.scalar(first + 2)
        act_slot = first + 3 + extra
    act = call.scalar(act_slot)
    nchw = bool(call.opt_scalar(act_slot + 1, False))
    dw = int(call.opt_scalar(act_slot + 2, 1))
    dh = int(call.opt_scalar(act_slot + 3, 1))
    if min(sw, sh, dw, dh) < 1:
        raise call.fail("strides and dilations must be positive")
    if not explicit:
        pl, pr = implicit_padding(in_w, sw, kw, dw, scheme)
        pt, pb = implicit_padding(in_h, sh, kh, dh, scheme)
    out_h = conv_output_size(in_h, kh, sh, dh, pt, pb)
    out_w = conv_output_size(in_w, kw, sw, dw, pl, pr)
    if out_h < 0 or out_w < 0:
        raise call.fail("the filter is larger than the padded input")
    return ConvParams(pt, pb, pl, pr, sh, sw, dh, dw, act, nchw, out_h, out_w)


def filter_scales(call: KernelCall, slot: int) -> np.ndarray:
    od = call.in_operands[slot]
    if od.type is OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL:
        return np.asarray(od.channel_quant.scales, dtype=np.float32)
    return np.asarray([od.scale], dtype=np.float32)


@dataclass
class QuantFilter:
    """Constant-derived data of a quantized convolution, built once per operation (`KernelCall.memo`)."""

    mats: list[np.ndarray]  # per group: (filter - zp) as a [KH*KW*C/G, O/G] matrix in `dtype`
    dtype: type  # float32 or float64: the BLAS dtype proven exact for this filter (`exact_matmul_dtype`)
    requantizer: Requantizer | None  # the fused bias + requantization, None when its bound check fails
    multipliers: np.ndarray
    shifts: np.ndarray


def quant_filter(call: KernelCall, w: np.ndarray, b: np.ndarray | None, activation: int,
                 groups: int) -> QuantFilter:
    """(q_w - zp_w) per group as a matmul operand, the exactness bound and the per-channel requantization.

    |acc_c| <= sum_k |w_ck - zp_w| * max|x - zp_x| bounds every accumulator (padding contributes 0)."""
    in_od, w_od, out_od = call.in_operands[0], call.in_operands[1], call.out_operands[0]
    o = w.shape[0]
    w_zp = w_od.zero_point if w_od.type is not OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL else 0
    ws = w.reshape(o, -1).astype(np.int64) - w_zp
    bound = np.abs(ws).sum(axis=1) * max_abs_offset(in_od.type, in_od.zero_point)
    dtype = exact_matmul_dtype(int(bound.max(initial=0)))
    og = o // groups
    mats = [np.ascontiguousarray(ws[g * og:(g + 1) * og].T, dtype=dtype) for g in range(groups)]
    m, sh = conv_multipliers(in_od.scale, filter_scales(call, 1), out_od.scale)
    rq = Requantizer.build(m, sh, b, out_od, activation, bound)
    return QuantFilter(mats, dtype, rq, m, sh)


def conv_nhwc(call: KernelCall, x: np.ndarray, w: np.ndarray, b: np.ndarray | None, p: ConvParams,
              groups: int = 1) -> np.ndarray:
    """Grouped NHWC convolution of storage arrays, float or quantized by the operand types.

    One BLAS matmul per group over the im2col rows (a 1x1 convolution reads the input rows directly).
    Quantized: (q - zp) products in float32 or float64 BLAS, exact by the filter's bound (see
    `quant_filter`), then the memoized fused requantization."""
    in_od, out_od = call.in_operands[0], call.out_operands[0]
    n, _h, _w, c = x.shape
    o, kh, kw, cg = w.shape
    if c != cg * groups or o % groups:
        raise call.fail(f"input depth {c} does not match filter depth {cg} x {groups} groups")
    quant = is_quant8(in_od.type)
    if quant:
        qf: QuantFilter = call.memo(("conv", groups, p.activation), (1, 2),
                                    lambda: quant_filter(call, w, b, p.activation, groups))
        xs = np.subtract(x, qf.dtype(in_od.zero_point), dtype=qf.dtype)
        xs = pad_spatial(xs, p.pad_top, p.pad_bottom, p.pad_left, p.pad_right, 0)
        mats = qf.mats
    else:
        xs = pad_spatial(x.astype(np.float32, copy=False), p.pad_top, p.pad_bottom, p.pad_left, p.pad_right, 0)
        # [O, KH*KW*C/G] float32 rows (a view of a float32 filter, a converted copy of a float16 one);
        # each group's matmul reads a transposed view
        wf = call.memo("conv_float", (1,), lambda: np.asarray(w, dtype=np.float32).reshape(o, kh * kw * cg))
        mats = [wf[g * (o // groups):(g + 1) * (o // groups)].T for g in range(groups)]
    rows = n * p.out_h * p.out_w
    if kh == kw == 1 and groups == 1:
        cols = xs[:, ::p.stride_h, ::p.stride_w] if p.stride_h > 1 or p.stride_w > 1 else xs
        cols = cols[:, :p.out_h, :p.out_w].reshape(rows, c)
        acc = cols @ mats[0]
    else:
        patches = extract_patches(xs, kh, kw, p.stride_h, p.stride_w, p.dil_h, p.dil_w, p.out_h, p.out_w)
        outs = [patches[..., g * cg:(g + 1) * cg].reshape(rows, kh * kw * cg) @ mats[g] for g in range(groups)]
        acc = outs[0] if groups == 1 else np.concatenate(outs, axis=1)
    acc = acc.reshape(n, p.out_h, p.out_w, o)
    if quant:
        if qf.requantizer is not None:
            return qf.requantizer(acc)
        acc = np.rint(acc).astype(np.int64)
        if b is not None:
            acc = acc + b.astype(np.int64)
        return requantize_accumulator(acc, qf.multipliers, qf.shifts, out_od, p.activation)
    if b is not None:
        acc += b.astype(np.float32)
    return apply_float_activation(acc, p.activation).astype(out_od.dtype, copy=False)


@kernel(OperationType.CONV_2D)
def conv_2d(call: KernelCall) -> list[np.ndarray]:
    x, w = call.tensor(0), call.tensor(1)
    b = call.inputs[2]
    if x.ndim != 4 or w.ndim != 4:
        raise call.fail(f"input and filter must be 4-D, got {x.ndim}-D and {w.ndim}-D")
    nchw_peek = _peek_nchw(call)
    xh = nchw_to_nhwc(x) if nchw_peek else x
    p = parse_conv_params(call, xh.shape[1], xh.shape[2], w.shape[1], w.shape[2])
    if xh.shape[3] % w.shape[3]:
        raise call.fail(f"input depth {xh.shape[3]} is not a multiple of filter depth {w.shape[3]}")
    if xh.shape[3] != w.shape[3]:
        raise call.fail(f"input depth {xh.shape[3]} differs from filter depth {w.shape[3]}")
    y = conv_nhwc(call, xh, w, b, p)
    return [nhwc_to_nchw(y) if p.nchw else y]


def is_explicit_padding(call: KernelCall, first: int = 3, extra: int = 0) -> bool:
    """The explicit form has at least 7 + extra scalars, and the slot that holds the implicit form's
    NCHW bool holds an INT32 stride there."""
    n = call.num_inputs
    return n >= first + 7 + extra and call.type(first + 4 + extra) is OperandType.INT32


def _peek_nchw(call: KernelCall, first: int = 3, extra: int = 0) -> bool:
    explicit = is_explicit_padding(call, first, extra)
    slot = (first + 7 + extra) if explicit else (first + 4 + extra)
    return bool(call.opt_scalar(slot, False))
