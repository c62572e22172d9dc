"""CONV_2D (NNAPI OperationType 3).

Slots: `window.ConvImplicitSlot` / `ConvExplicitSlot` (input [N,H,W,C], filter [O,KH,KW,C], bias [O], then
the padding, strides, activation, [NCHW], [dilation]), read by `window.CONV_2D`, which also tells the two
forms apart. Quantized: int32 accumulation of (q - zp) products, the reference per-channel requantization.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.operations import window
from nnconv.nnapi.operations.window import WindowParams, WindowSignature
from nnconv.nnapi.quantization import is_quant8
from nnconv.runtime.kernels._conv_blocked import ConvPlan, blocked_conv
from nnconv.runtime.kernels._conv_quant import TAP_MAJOR_MAX_CHANNELS, QuantFilter, quant_epilogue, quant_filter
from nnconv.runtime.kernels._conv_small import CACHE_KEY as SMALL_KEY
from nnconv.runtime.kernels._conv_small import ConvLayout, SmallConv, prepare_small_conv
from nnconv.runtime.kernels._float_activation import add_bias_and_activate
from nnconv.runtime.kernels._spatial import (conv_output_size, implicit_padding, nchw_to_nhwc, nhwc_to_nchw,
                                             window_params)
from nnconv.runtime.kernels.registry import KernelCall, kernel


@dataclass(frozen=True, kw_only=True)
class ConvParams(WindowParams):
    """A convolution's `WindowParams` resolved against one input and filter size: the padding made explicit
    (an implicit scheme's pads computed, `padding_scheme` dropped) and the output size it gives. The
    kernels read it from `parse_conv_params`, which keeps it with the operation. A subclass rather than a
    holder of the WindowParams: the per-run code reads `p.stride_h` as one plain attribute."""

    out_h: int
    out_w: int


def parse_conv_params(call: KernelCall, signature: WindowSignature, in_h: int, in_w: int, kh: int,
                      kw: int) -> ConvParams:
    """The operation's geometry on an input of in_h x in_w and a kh x kw filter: its signature's scalars with
    the implicit padding resolved. Memoized per operation and geometry when the scalars are constants."""
    return call.memo(("conv_params", in_h, in_w, kh, kw), range(signature.first_scalar, call.num_inputs),
                     lambda: _conv_geometry(call, window_params(call, signature), in_h, in_w, kh, kw))


def _conv_geometry(call: KernelCall, wp: WindowParams, in_h: int, in_w: int, kh: int, kw: int) -> ConvParams:
    sw, sh, dw, dh = wp.stride_w, wp.stride_h, wp.dilation_w, wp.dilation_h
    if min(sw, sh, dw, dh) < 1:
        raise call.fail("strides and dilations must be positive")
    if wp.explicit:
        pl, pr, pt, pb = wp.pad_left, wp.pad_right, wp.pad_top, wp.pad_bottom
    else:
        pl, pr = implicit_padding(in_w, sw, kw, dw, wp.padding_scheme)
        pt, pb = implicit_padding(in_h, sh, kh, dh, wp.padding_scheme)
    out_h = conv_output_size(in_h, kh, sh, dh, pt, pb)
    out_w = conv_output_size(in_w, kw, sw, dw, pl, pr)
    if out_h < 0 or out_w < 0:
        raise call.fail("the filter is larger than the padded input")
    # the scalars as read (vars: the fields of a WindowParams), with the padding resolved
    return ConvParams(**dict(vars(wp), explicit=True, padding_scheme=None, pad_left=pl, pad_right=pr, pad_top=pt,
                             pad_bottom=pb, out_h=out_h, out_w=out_w))


# Bytes of matmul output per block of output rows: small enough that the im2col rows, the accumulators and
# the requantization's int64 work stay in the CPU cache between the steps.
CONV_BLOCK_BYTES = 1 << 19
# Float blocks (the same measure) are larger: their matmul writes the output itself and the epilogue is at
# most one clamp pass, so fewer, larger matmuls win in situ (A/B alternating, CPU clock, CONV_2D per run:
# MobileNetV2 11.9 -> 11.3 ms, EfficientNet-B0 11.8 -> 11.3, ResNet50 ~112 -> ~108 against 1 << 19).
FLOAT_CONV_BLOCK_BYTES = 1 << 21
# Bytes of an im2col block at most: a KxK filter over many channels copies KH*KW*C values per output pixel
# (DenseNet-121's 3x3 over 128 channels to 32: 36x its output block), and the block is scratch the executor
# keeps between runs; past a few MiB the GEMM gains nothing from longer blocks.
IM2COL_BLOCK_BYTES = 1 << 22
# A float 1x1 convolution of stride 1 with at most this many output pixels is one matmul
# (`_small_pointwise`).
SMALL_POINTWISE_PIXELS = 64
# A 1x1 float convolution copies its input rows to take the bias into the matmul when its output has at
# least this many times the input's channels (see `conv_nhwc`).
NARROW_INPUT_RATIO = 4
# A float convolution's filter matrix is copied (the bias row, a contiguous pointwise matrix) only up to
# this many bytes: the copy stays with the operation for the executor's life, beside the model's own weights.
FILTER_COPY_MAX_BYTES = 1 << 18


def conv_nhwc(call: KernelCall, x: np.ndarray, w: np.ndarray, b: np.ndarray | None, p: ConvParams,
              groups: int = 1) -> np.ndarray:
    """Grouped NHWC convolution of storage arrays, float or quantized by the operand types, by the first
    of its fast paths that fits: a 1x1 convolution on a few pixels (one matmul), a small map prepared once
    (`_conv_small`), else the blocked GEMMs of `_conv_blocked` (the layout they share: `ConvPlan`)."""
    _check_depths(call, x, w, groups)
    if is_quant8(call.in_operands[0].type):
        qf: QuantFilter = call.memo(("conv", groups, p.activation), (1, 2),
                                    lambda: quant_filter(call, w, b, p.activation, groups, p.out_h * p.out_w))
        if (_few_pointwise_pixels(x, w, p, groups) and qf.requantizer is not None and qf.scaled is None
                and qf.chunks is None):
            return _small_quant_pointwise(call, x, qf, p)
        plan, xs = _quant_plan(call, x, w, p, groups, qf), x
    else:
        xs = x.astype(np.float32, copy=False)
        if _few_pointwise_pixels(x, w, p, groups):
            return _small_pointwise(call, xs, w, b, p)
        plan = _float_plan(call, xs, w, b, p, groups)
    small = _prepare_small_map(call, x, p, plan)
    if small is not None:
        return small.run(call, x)
    return blocked_conv(call, xs, p, plan)


def _check_depths(call: KernelCall, x: np.ndarray, w: np.ndarray, groups: int) -> None:
    c, (o, _kh, _kw, cg) = x.shape[3], w.shape
    if c != cg * groups or o % groups:
        raise call.fail(f"input depth {c} does not match filter depth {cg} x {groups} groups")


def _padded(p: ConvParams) -> bool:
    return not p.pad_top == p.pad_bottom == p.pad_left == p.pad_right == 0


def _few_pointwise_pixels(x: np.ndarray, w: np.ndarray, p: ConvParams, groups: int) -> bool:
    """A 1x1 convolution of stride 1, unpadded, one group, on at most SMALL_POINTWISE_PIXELS pixels."""
    return (groups == 1 and w.shape[1] == w.shape[2] == 1 and x.shape[0] * p.out_h * p.out_w <= SMALL_POINTWISE_PIXELS
            and p.stride_h == p.stride_w == 1 and not _padded(p))


def _block_rows(p: ConvParams, w: np.ndarray, groups: int, dtype: type, block_bytes: int) -> int:
    """Output rows per block: BLOCK_BYTES of matmul output, and for a KxK filter IM2COL_BLOCK_BYTES of rows."""
    o, kh, kw, cg = w.shape
    block_h = max(1, min(p.out_h, block_bytes // max(1, 8 * p.out_w * o)))
    if not kh == kw == 1:
        k = kh * kw * cg
        im2col_row = np.dtype(dtype).itemsize * p.out_w * (k * groups + 1)
        block_h = max(1, min(block_h, IM2COL_BLOCK_BYTES // max(1, im2col_row)))
    return block_h


def _quant_plan(call: KernelCall, x: np.ndarray, w: np.ndarray, p: ConvParams, groups: int,
                qf: QuantFilter) -> ConvPlan:
    """The quantized layout: the GEMM in the filter's exact dtype (float32 for the exact float32 runs of a
    reduction float64 would otherwise take, `chunks`; float64 for the scaled filter). The rows the im2col
    reads are the input padded with its zero point where the filter folds it, else a centered copy in the
    GEMM's dtype (padding 0)."""
    o, kh, kw, cg = w.shape
    dtype = np.float32 if qf.chunks is not None else qf.dtype
    rows_dtype = np.dtype(x.dtype) if qf.folded else np.dtype(dtype)
    rows_contiguous = _padded(p) or not qf.folded or x.flags.c_contiguous
    mats = qf.mats
    if qf.scaled is not None:
        dtype, mats = np.float64, [qf.scaled]
    elif qf.chunks is not None:
        mats = [None]  # the GEMM runs over the float32 chunks
    block_h = _block_rows(p, w, groups, dtype, CONV_BLOCK_BYTES)
    direct = kh == kw == 1 and groups == 1 and rows_dtype == dtype
    return ConvPlan(groups=groups, kh=kh, kw=kw, cg=cg, o=o, dtype=dtype, rows_dtype=rows_dtype, mats=mats,
                    bias=None, bias_row=False, direct=direct,
                    in_place=direct and p.stride_h == p.stride_w == 1 and rows_contiguous,
                    tap_major=_tap_major(x, w, groups), block_h=block_h, qf=qf)


def _float_plan(call: KernelCall, x: np.ndarray, w: np.ndarray, b: np.ndarray | None, p: ConvParams,
                groups: int) -> ConvPlan:
    """The float32 layout. One group: the bias as one more row of the filter matrix, read against a column
    of ones after the im2col rows, so that BLAS adds it inside the matmul instead of an epilogue pass over
    the output. Where the rows are copied anyway (a KxK filter, a strided or padded 1x1 input) that is free;
    a 1x1 convolution reading its input in place takes the copy only when the input is much narrower than
    the output (copying C+1 values per pixel then costs less than a pass over O: measured 12544x16 -> 96
    0.91 -> 0.88 ms, 3136x24 -> 144 0.42 -> 0.38 ms; a projection to fewer channels loses). The bias joins
    the GEMM's sum instead of following it: float rounding only. The row joins a copy of the filter matrix,
    kept with the operation: only for filters of at most FILTER_COPY_MAX_BYTES, where the epilogue's pass
    weighs against the GEMM."""
    o, kh, kw, cg = w.shape
    c, k, og = x.shape[3], kh * kw * cg, o // groups
    rows_dtype = np.dtype(np.float32)
    # [O, KH*KW*C/G] float32 rows (a view of a float32 filter, a converted copy of a float16 one); each
    # group's matmul reads a transposed view
    wf = call.memo("conv_float", (1,), lambda: np.asarray(w, dtype=np.float32).reshape(o, kh * kw * cg))
    mats = [wf[g * og:(g + 1) * og].T for g in range(groups)]
    bias = None if b is None else b.astype(np.float32, copy=False)
    direct = kh == kw == 1 and groups == 1
    in_place = direct and p.stride_h == p.stride_w == 1 and (_padded(p) or x.flags.c_contiguous)
    bias_row = (groups == 1 and b is not None and (not in_place or NARROW_INPUT_RATIO * (c + 1) <= o)
                and k * o * 4 <= FILTER_COPY_MAX_BYTES)
    if bias_row:
        direct = False
        mats = [call.memo("conv_float_bias_row", (1, 2), lambda: np.vstack([mats[0], bias[None]]))]
    elif bias is not None:
        # the bias tiled along a whole output row: the epilogue's add then runs over rows of OW*O values
        # instead of one short loop of O per pixel (MobileNetV2's projections have 16..32 channels)
        bias = call.memo(("conv_bias_rows", p.out_w), (2,), lambda: np.tile(bias, p.out_w))
    return ConvPlan(groups=groups, kh=kh, kw=kw, cg=cg, o=o, dtype=np.float32, rows_dtype=rows_dtype, mats=mats,
                    bias=None if bias_row else bias, bias_row=bias_row, direct=direct, in_place=in_place,
                    tap_major=_tap_major(x, w, groups), block_h=_block_rows(p, w, groups, np.float32,
                                                                           FLOAT_CONV_BLOCK_BYTES))


def _tap_major(x: np.ndarray, w: np.ndarray, groups: int) -> bool:
    """One group, a KxK filter over few input channels (an RGB stem): the im2col block is gathered
    tap-major, [KH*KW*C (+1), pixels], so that the copy's inner loop runs along a row of output pixels
    instead of over the KW*C values of one pixel (224x224x3 stride 2: copy 0.27 -> 0.15 ms); the matmul
    reads it transposed. The extra row of ones meets the float bias row or the scaled filter's kappa."""
    return groups == 1 and not w.shape[1] == w.shape[2] == 1 and x.shape[3] <= TAP_MAJOR_MAX_CHANNELS


def _prepare_small_map(call: KernelCall, x: np.ndarray, p: ConvParams, plan: ConvPlan) -> SmallConv | None:
    """A small map: this layout prepared (`_conv_small`), the same steps without the setup, from this first
    run on (so that the buffer pool sees the same requests on every run); None where the blocked path runs."""
    qf = plan.qf
    if not (plan.groups == 1 and _preparable(call, x, p) and (qf is None or qf.requantizer is not None)):
        return None
    if qf is None:
        layout = ConvLayout.of_plan(plan, p.activation)
    else:
        zero_point = call.in_operands[0].zero_point
        layout = ConvLayout.of_plan(plan, p.activation, border=zero_point if qf.folded else 0,
                                    chunks=list(zip(qf.chunks, qf.chunk_mats)) if plan.chunked else None,
                                    **_quant_epilogue_fields(call, qf, p.out_h * p.out_w))
    small = call.cache[SMALL_KEY] = prepare_small_conv(
        call, x, p, layout, rows_in_place=layout.reads_rows and qf is None and not _padded(p),
        one_block=plan.block_h >= p.out_h)
    return small


def _quant_epilogue_fields(call: KernelCall, qf: QuantFilter, pixels: int) -> dict[str, Any]:
    """The `ConvLayout` fields every quantized layout gives: the input zero point its copy subtracts (none
    where the filter folds it), the fused requantization of `pixels` output pixels and the output dtype."""
    return dict(zero_point=None if qf.folded else call.in_operands[0].zero_point,
                requantize=quant_epilogue(qf, pixels), out_dtype=np.dtype(call.out_operands[0].dtype))


def _small_pointwise(call: KernelCall, x: np.ndarray, w: np.ndarray, b: np.ndarray | None,
                     p: ConvParams) -> np.ndarray:
    """A float 1x1 convolution with few pixels (squeeze-and-excitation blocks on a pooled 1x1 map): one
    matmul, + bias, clamp, without the blocked path's per-call setup (~30 us a call there, ~10 here;
    EfficientNet-B0 runs 32 of them)."""
    n, h, wd, c = x.shape
    o = w.shape[0]
    # a contiguous copy of a small filter matrix (its GEMM is up to 30% faster on a few rows), the
    # transposed view of a larger one (1-7% slower there; a copy kept of every 7x7-stage filter took 20 MB
    # for ResNet50)
    mat = call.memo("conv_float_pointwise", (1,), lambda: _pointwise_matrix(w, o, c))
    if _preparable(call, x, p):
        tiled = None if b is None else call.memo(("conv_bias_rows", p.out_w), (2,), lambda: np.tile(b, p.out_w))
        layout = ConvLayout.pointwise(mat, p.activation,
                                      bias=None if tiled is None else tiled.astype(np.float32, copy=False))
        small = call.cache[SMALL_KEY] = prepare_small_conv(call, x, p, layout, rows_in_place=x.flags.c_contiguous,
                                                           one_block=True)
        if small is not None:
            return small.run(call, x)
    out = call.empty((n, h, wd, o), np.float32)
    rows = out.reshape(n * h * wd, o)
    np.matmul(x.reshape(n * h * wd, c), mat, out=rows)
    add_bias_and_activate(rows, b, p.activation)
    out_dtype = call.out_operands[0].dtype
    return out if out_dtype == np.float32 else out.astype(out_dtype)


def _pointwise_matrix(w: np.ndarray, o: int, c: int) -> np.ndarray:
    """[C, O] float32: a contiguous copy when it has at most FILTER_COPY_MAX_BYTES, else a view."""
    view = np.asarray(w, dtype=np.float32).reshape(o, c).T
    return np.ascontiguousarray(view) if view.nbytes <= FILTER_COPY_MAX_BYTES else view


def _small_quant_pointwise(call: KernelCall, x: np.ndarray, qf: QuantFilter, p: ConvParams) -> np.ndarray:
    """A quantized 1x1 convolution with few pixels (MobileNetV3's squeeze-excite convolutions on a pooled
    1x1 map): one exact matmul of the (raw or centered) rows, then the fused requantization, without the
    blocked path's padding, buffers and loops (in situ ~50 -> ~20 us a call)."""
    n, h, wd, c = x.shape
    mat = qf.mats[0]
    if _preparable(call, x, p):
        layout = ConvLayout.pointwise(mat, p.activation, dtype=qf.dtype, **_quant_epilogue_fields(call, qf, n * h * wd))
        small = call.cache[SMALL_KEY] = prepare_small_conv(call, x, p, layout, rows_in_place=False)
        if small is not None:
            return small.run(call, x)
    rows = x.reshape(n * h * wd, c)
    if qf.folded:
        lhs = rows.astype(qf.dtype)
    else:
        lhs = np.subtract(rows, qf.dtype(call.in_operands[0].zero_point), dtype=qf.dtype)
    out = np.empty((n, h, wd, mat.shape[1]), call.out_operands[0].dtype)
    qf.requantizer(lhs @ mat, out=out.reshape(n * h * wd, mat.shape[1]))
    return out


@kernel(OperationType.CONV_2D)
def conv_2d(call: KernelCall) -> list[np.ndarray]:
    y = call.run_prepared(SMALL_KEY)
    if y is not None:
        return [y]
    x, w = call.tensor(0), call.tensor(1)
    b = call.inputs[2]
    if x.ndim != 4 or w.ndim != 4:
        raise call.fail(f"input and filter must be 4-D, got {x.ndim}-D and {w.ndim}-D")
    xh = nchw_to_nhwc(x) if window_params(call, window.CONV_2D).nchw else x
    p = parse_conv_params(call, window.CONV_2D, xh.shape[1], xh.shape[2], w.shape[1], w.shape[2])
    if xh.shape[3] % w.shape[3]:
        raise call.fail(f"input depth {xh.shape[3]} is not a multiple of filter depth {w.shape[3]}")
    if xh.shape[3] != w.shape[3]:
        raise call.fail(f"input depth {xh.shape[3]} differs from filter depth {w.shape[3]}")
    y = conv_nhwc(call, xh, w, b, p)
    return [nhwc_to_nchw(y) if p.nchw else y]


def _preparable(call: KernelCall, x: np.ndarray, p: ConvParams) -> bool:
    """A CONV_2D the executor runs (a cache) with constant filter, bias and scalars, NHWC, float32 or
    quant8 in their storage dtypes, not yet prepared: `_conv_small` decides whether its map is small enough."""
    in_od, out_od = call.in_operands[0], call.out_operands[0]
    stored = (x.dtype == np.float32 and out_od.dtype == np.float32) if not is_quant8(in_od.type) else \
        x.dtype == in_od.dtype
    return (call.cache is not None and SMALL_KEY not in call.cache and call.operation.type is OperationType.CONV_2D
            and not p.nchw and stored and all(call.is_constant(s) for s in range(1, call.num_inputs) if call.has(s)))


def grouped_conv_inputs(call: KernelCall, signature: WindowSignature,
                        what: str) -> tuple[np.ndarray, np.ndarray, ConvParams, int]:
    """DEPTHWISE_CONV_2D and GROUPED_CONV_2D (`signature`): CONV_2D's slots with one extra INT32 (depth
    multiplier / num_groups) before the activation. Returns the NHWC input, the filter, the parsed parameters
    and that count."""
    x, w = call.tensor(0), call.tensor(1)
    if x.ndim != 4 or w.ndim != 4:
        raise call.fail(f"input and filter must be 4-D, got {x.ndim}-D and {w.ndim}-D")
    wp = window_params(call, signature)
    xh = nchw_to_nhwc(x) if wp.nchw else x
    p = parse_conv_params(call, signature, xh.shape[1], xh.shape[2], w.shape[1], w.shape[2])
    count = int(wp.depth_multiplier if wp.num_groups is None else wp.num_groups)
    if count < 1:
        raise call.fail(f"{what} {count} must be positive")
    return xh, w, p, count
