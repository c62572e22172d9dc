"""CONV_2D (NNAPI OperationType 3).

Slots: `window.ConvImplicitSlot` / `ConvExplicitSlot` (input [N,H,W,C], filter [O,KH,KW,C], bias [O], then
the padding, strides, activation, [NCHW], [dilation]), read by `window.CONV_2D`, which also tells the two
forms apart. Quantized: int32 accumulation of (q - zp) products, the reference per-channel requantization.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.nnapi.operations import window
from nnconv.nnapi.operations.window import WindowParams, WindowSignature
from nnconv.nnapi.quantization import (Requantizer, is_quant8, max_abs_offset, qrange,
                                       requantize_accumulator)
from nnconv.runtime.kernels._float_activation import add_bias_and_activate
from nnconv.runtime.kernels._conv_small import CACHE_KEY as SMALL_KEY
from nnconv.runtime.kernels._conv_small import ConvLayout, prepare_small_conv
from nnconv.runtime.kernels._matmul import exact_matmul_dtype, float32_chunks
from nnconv.runtime.kernels._spatial import (conv_output_size, extract_patches, implicit_padding, nchw_to_nhwc,
                                             nhwc_to_nchw, pad_spatial, window_params)
from nnconv.runtime.kernels.registry import KernelCall, kernel


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


def parse_conv_params(call: KernelCall, signature: WindowSignature, in_h: int, in_w: int, kh: int,
                      kw: int) -> ConvParams:
    """The operation's geometry on an input of in_h x in_w and a kh x kw filter: its signature's scalars with
    the implicit padding resolved. Memoized per operation and geometry when the scalars are constants."""
    first = int(signature.implicit.PADDING_SCHEME)
    return call.memo(("conv_params", in_h, in_w, kh, kw), range(first, call.num_inputs),
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
    return ConvParams(pt, pb, pl, pr, sh, sw, dh, dw, wp.activation, wp.nchw, out_h, out_w)


def filter_scales(call: KernelCall, slot: int) -> np.ndarray:
    od = call.in_operands[slot]
    if od.type is OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL:
        return np.asarray(od.channel_quant.scales, dtype=np.float32)
    return np.asarray([od.scale], dtype=np.float32)


@dataclass
class QuantFilter:
    """Constant-derived data of a quantized convolution, built once per operation (`KernelCall.memo`)."""

    mats: list[np.ndarray]  # per group: (filter - zp) as a [KH*KW*C/G, O/G] matrix in `dtype` (none with
    # `scaled` or `chunks`, which replace it)
    dtype: type  # float32 or float64: the BLAS dtype proven exact for this filter (`exact_matmul_dtype`)
    requantizer: Requantizer | None  # the fused bias + requantization, None when its bound check fails
    multipliers: np.ndarray
    shifts: np.ndarray
    # True: the matmul reads the raw input q_x and the bias absorbs -zp_x * sum_k(w_k - zp_w); padding is
    # then zp_x (it must contribute 0 after that correction). False: it reads (q_x - zp_x), padding 0.
    folded: bool
    bias: np.ndarray | None  # the int64 bias the accumulators take (the corrected one when folded)
    # [mats[0] * alpha; kappa] in float64 (see FloatRequantizer.scaled_filter): the GEMM of [cols, 1] by it
    # gives the requantization's multiply-add exactly, so only its clamp and cast remain. For narrow inputs
    # (K + 1 <= O / SCALED_FILTER_RATIO), where the requantization's passes cost more than the float64 GEMM.
    scaled: np.ndarray | None = None
    # Where float64 would be needed (sums reaching 2^24), runs [k0, k1) of the reduction whose float32
    # products are each exact (`float32_chunks`), with mats[0]'s rows of each run as float32: the im2col
    # rows are float32 and each run's float32 GEMM is summed exactly in float64.
    chunks: list[tuple[int, int]] | None = None
    chunk_mats: list[np.ndarray] | None = None
    single_rounding: bool = False  # TFLite's FULLY_CONNECTED rounding (`KernelCall.single_rounding`, verify only)


def quant_filter(call: KernelCall, w: np.ndarray, b: np.ndarray | None, activation: int,
                 groups: int) -> QuantFilter:
    """(q_w - zp_w) per group as a matmul operand, the exactness bound and the per-channel requantization.

    sum_k (x_k - zp_x) w'_k = sum_k x_k w'_k - zp_x sum_k w'_k: folding the input's zero point into the
    bias saves a pass over the input, and is exact when the raw products stay within the BLAS dtype's exact
    range as well. |acc_c| <= sum_k |w'_ck| * max|x| bounds every accumulator (padding contributes 0)."""
    in_od, w_od, out_od = call.in_operands[0], call.in_operands[1], call.out_operands[0]
    o = w.shape[0]
    w_zp = w_od.zero_point if w_od.type is not OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL else 0
    ws = w.reshape(o, -1).astype(np.int64) - w_zp
    abs_sum = np.abs(ws).sum(axis=1)
    m, sh = call.conv_multipliers(in_od.scale, filter_scales(call, 1), out_od.scale)
    b64 = None if b is None else b.astype(np.int64)
    lo, hi = qrange(in_od.type)
    centered_bound = abs_sum * max_abs_offset(in_od.type, in_od.zero_point)
    raw_bound = abs_sum * max(abs(lo), abs(hi))
    folded_bias = (0 if b64 is None else b64) - in_od.zero_point * ws.sum(axis=1)
    og = o // groups
    single = call.single_rounding
    folded_rq = Requantizer.build(m, sh, folded_bias, out_od, activation, raw_bound, single)
    centered_dtype = exact_matmul_dtype(int(centered_bound.max(initial=0)))
    raw_dtype = exact_matmul_dtype(int(raw_bound.max(initial=0)))
    # fold unless it would cost a wider matmul or the fused requantization; folding can also narrow it: an
    # input zero point at the range's end (-128 after a RELU) centers to 0..255, where the raw values stay
    # within +-128 (DenseNet-121 int8's 3x3x128 convolutions: float32 raw, float64 centered)
    folded = folded_rq is not None and (raw_dtype is centered_dtype or raw_dtype is np.float32)
    dtype = raw_dtype if folded else centered_dtype
    if folded:
        rq, bias = folded_rq, folded_bias
    else:
        rq, bias = Requantizer.build(m, sh, b64, out_od, activation, centered_bound, single), b64
    chunks = chunk_mats = None
    if dtype is np.float64 and groups == 1:
        x_bound = max(abs(lo), abs(hi)) if folded else max_abs_offset(in_od.type, in_od.zero_point)
        chunks = float32_chunks(np.abs(ws).max(axis=0, initial=0) * x_bound)
        if chunks is not None:
            chunk_mats = [np.ascontiguousarray(ws[:, k0:k1].T, dtype=np.float32) for k0, k1 in chunks]
    scaled = None
    k1 = ws.shape[1] + 1
    _o, kh, kw, c = w.shape
    # the scaled filter also for a KxK filter over few channels (an RGB stem, tap-major im2col): its
    # requantization passes over O outputs per pixel cost more than the float64 GEMM's K + 1 <= 28 terms
    # (MobileNetV2 int8's 224x224x3 -> 32 stem with the tap-major rows 1.64 -> 1.39 ms)
    few_inputs = kh * kw > 1 and c <= TAP_MAJOR_MAX_CHANNELS
    if groups == 1 and rq is not None and rq.fast is not None and k1 <= SCALED_FILTER_MAX_K1 and \
            (k1 * SCALED_FILTER_RATIO <= o or few_inputs):
        scaled = rq.fast.scaled_filter(ws.T, raw_bound if folded else centered_bound, rq.shift)
    # the whole filter matrix only where the GEMM reads it: the scaled filter and the float32 chunks replace
    # it (kept, it doubled what a chunked int8 model keeps: ResNet50 int8 212 -> 100 MB)
    mats = [] if scaled is not None or chunks is not None else \
        [np.ascontiguousarray(ws[g * og:(g + 1) * og].T, dtype=dtype) for g in range(groups)]
    return QuantFilter(mats, dtype, rq, m, sh, folded, bias, scaled,
                       None if scaled is not None else chunks, None if scaled is not None else chunk_mats, single)


# A quantized convolution with K + 1 <= SCALED_FILTER_MAX_K1 and <= O / SCALED_FILTER_RATIO takes the float64
# scaled-filter GEMM (in situ MobileNetV2: 112x112x16 -> 96 3.15 -> 2.50 ms, 56x56x24 -> 144 1.29 -> 1.11
# ms; the 32..320 -> 6x expansions lose 7%: the float64 GEMM's extra cost grows with K)
SCALED_FILTER_MAX_K1 = 32
SCALED_FILTER_RATIO = 4


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
# A float KxK convolution of at most this many input channels gathers its im2col block tap-major.
TAP_MAJOR_MAX_CHANNELS = 4
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
    """Grouped NHWC convolution of storage arrays, float or quantized by the operand types.

    Output rows are computed in blocks: per block, the im2col rows (a strided view of the padded input,
    gathered and cast in one copy; a 1x1 convolution reads the input rows directly), one BLAS matmul per
    group, then bias + activation (float, in place) or the fused requantization (quantized) into the
    output, all while the block is in cache. Quantized: products in float32 or float64 BLAS, exact by the
    filter's bound (see `quant_filter`)."""
    in_od, out_od = call.in_operands[0], call.out_operands[0]
    n, _h, _w, c = x.shape
    o, kh, kw, cg = w.shape
    if c != cg * groups or o % groups:
        raise call.fail(f"input depth {c} does not match filter depth {cg} x {groups} groups")
    quant = is_quant8(in_od.type)
    og = o // groups
    padded = not p.pad_top == p.pad_bottom == p.pad_left == p.pad_right == 0
    if quant:
        qf: QuantFilter = call.memo(("conv", groups, p.activation), (1, 2),
                                    lambda: quant_filter(call, w, b, p.activation, groups))
        if (kh == kw == 1 and groups == 1 and n * p.out_h * p.out_w <= SMALL_POINTWISE_PIXELS
                and qf.requantizer is not None and qf.scaled is None and qf.chunks is None
                and p.stride_h == p.stride_w == 1 and not padded):
            return _small_quant_pointwise(call, x, qf, p)
        # float32 rows for the exact float32 runs of a reduction float64 would otherwise take (`chunks`)
        dtype = np.float32 if qf.chunks is not None else qf.dtype
        # the rows the im2col reads (made below): the input padded with its zero point where the filter
        # folds it, else a centered copy in `dtype` (padding 0)
        rows_dtype = np.dtype(x.dtype) if qf.folded else np.dtype(dtype)
        rows_contiguous = padded or not qf.folded or x.flags.c_contiguous
        mats = qf.mats
        if qf.scaled is not None:
            dtype, mats = np.float64, [qf.scaled]
        elif qf.chunks is not None:
            mats = [None]  # the GEMM runs over the float32 chunks
        bias = None
    else:
        dtype = np.float32
        xf = x.astype(np.float32, copy=False)
        if (groups == 1 and kh == kw == 1 and n * p.out_h * p.out_w <= SMALL_POINTWISE_PIXELS
                and p.stride_h == p.stride_w == 1 and not padded):
            return _small_pointwise(call, xf, w, b, p)
        rows_dtype, rows_contiguous = np.dtype(np.float32), padded or xf.flags.c_contiguous
        # [O, KH*KW*C/G] float32 rows (a view of a float32 filter, a converted copy of a float16 one);
        # each group's matmul reads a transposed view
        wf = call.memo("conv_float", (1,), lambda: np.asarray(w, dtype=np.float32).reshape(o, kh * kw * cg))
        mats = [wf[g * og:(g + 1) * og].T for g in range(groups)]
        bias = None if b is None else b.astype(np.float32, copy=False)
    ow, k = p.out_w, kh * kw * cg
    block_h = max(1, min(p.out_h, (CONV_BLOCK_BYTES if quant else FLOAT_CONV_BLOCK_BYTES) // max(1, 8 * ow * o)))
    one_by_one = kh == kw == 1
    if not one_by_one:
        block_h = max(1, min(block_h, IM2COL_BLOCK_BYTES // max(1, np.dtype(dtype).itemsize * ow * (k * groups + 1))))
    direct = one_by_one and groups == 1 and rows_dtype == dtype  # the input rows may be the matmul operand
    scaled = quant and qf.scaled is not None  # a column of ones after the im2col rows meets kappa's row
    # Float, one group: the bias as one more row of the filter matrix, read against a column of ones
    # after the im2col rows, so that BLAS adds it inside the matmul instead of an epilogue pass over the
    # output. Where the rows are copied anyway (a KxK filter, a strided or padded 1x1 input) that is free;
    # a 1x1 convolution reading its input in place takes the copy only when the input is much narrower
    # than the output (copying C+1 values per pixel then costs less than a pass over O: measured 12544x16
    # -> 96 0.91 -> 0.88 ms, 3136x24 -> 144 0.42 -> 0.38 ms; a projection to fewer channels loses).
    # The bias joins the GEMM's sum instead of following it: float rounding only.
    in_place = direct and p.stride_h == p.stride_w == 1 and rows_contiguous
    # (the row joins a copy of the filter matrix, kept with the operation: only for filters of at most
    # FILTER_COPY_MAX_BYTES, where the epilogue's pass weighs against the GEMM)
    bias_row = (not quant and groups == 1 and b is not None and (not in_place or NARROW_INPUT_RATIO * (c + 1) <= o)
                and k * o * 4 <= FILTER_COPY_MAX_BYTES)
    if bias_row:
        direct = False
        mats = [call.memo("conv_float_bias_row", (1, 2), lambda: np.vstack([mats[0], bias[None]]))]
    elif not quant and bias is not None:
        # the bias tiled along a whole output row: the epilogue's add then runs over rows of OW*O values
        # instead of one short loop of O per pixel (MobileNetV2's projections have 16..32 channels)
        bias = call.memo(("conv_bias_rows", p.out_w), (2,), lambda: np.tile(bias, p.out_w))
    # One group, a KxK filter over few input channels (an RGB stem): the im2col block is gathered
    # tap-major, [KH*KW*C (+1), pixels], so that the copy's inner loop runs along a row of output pixels
    # instead of over the KW*C values of one pixel (224x224x3 stride 2: copy 0.27 -> 0.15 ms); the matmul
    # reads it transposed. The extra row of ones meets the float bias row or the scaled filter's kappa.
    tap_major = groups == 1 and not one_by_one and c <= TAP_MAJOR_MAX_CHANNELS
    chunked = quant and qf.chunks is not None
    if groups == 1 and _preparable(call, x, p) and (not quant or qf.requantizer is not None):
        # A small map: this layout prepared (`_conv_small`), the same steps without the setup, from this
        # first run on (so that the buffer pool sees the same requests on every run).
        reads_rows = direct and in_place
        small = call.cache[SMALL_KEY] = prepare_small_conv(call, x, p, ConvLayout(
            kh, kw, o, dtype, mats[0], bias_row or scaled, reads_rows, tap_major, rows_dtype,
            None if not quant or qf.folded else in_od.zero_point, in_od.zero_point if quant and qf.folded else 0,
            list(zip(qf.chunks, qf.chunk_mats)) if chunked else None, None if quant or bias_row else bias,
            p.activation, _quant_epilogue(qf, p.out_h * p.out_w) if quant else None,
            np.dtype(out_od.dtype if quant else np.float32)), rows_in_place=reads_rows and not quant and not padded,
            one_block=block_h >= p.out_h)
        if small is not None:
            return small.run(call, x)
    if quant:
        # padded (scratch from the buffer pool) with the zero point: 0 after centering or after the fold
        xs = pad_spatial(x, p.pad_top, p.pad_bottom, p.pad_left, p.pad_right, in_od.zero_point, call.empty)
        scratch = [] if xs is x else [xs]
        if not qf.folded:
            centered = call.empty(xs.shape, rows_dtype)
            np.subtract(xs, rows_dtype.type(in_od.zero_point), out=centered, dtype=rows_dtype)
            xs = centered
            scratch.append(centered)
    else:
        xs = pad_spatial(xf, p.pad_top, p.pad_bottom, p.pad_left, p.pad_right, 0, call.empty)
        scratch = [] if xs is xf else [xs]
    out = call.empty((n, p.out_h, p.out_w, o), out_od.dtype if quant else np.float32)
    cols_buf: np.ndarray | None = None
    acc_buf = np.empty((block_h * ow, o), dtype=np.float64 if chunked else dtype) if quant or groups > 1 else None
    part_buf = np.empty((block_h * ow, o), dtype=np.float32) if chunked else None
    patches = None if one_by_one else extract_patches(xs, kh, kw, p.stride_h, p.stride_w, p.dil_h, p.dil_w,
                                                      p.out_h, p.out_w)
    for i in range(n):
        for r0 in range(0, p.out_h, block_h):
            r1 = min(p.out_h, r0 + block_h)
            rows = (r1 - r0) * ow
            if one_by_one:
                view = xs[i, r0 * p.stride_h:(r1 - 1) * p.stride_h + 1:p.stride_h,
                          0:(ow - 1) * p.stride_w + 1:p.stride_w]
            else:
                view = patches[i, r0:r1]
            if direct and view.flags.c_contiguous:
                cols = view.reshape(rows, c)
            elif tap_major:
                if cols_buf is None:
                    cols_buf = call.empty((kh * kw * c + (bias_row or scaled), block_h * ow), dtype)
                    scratch.append(cols_buf)
                    if bias_row or scaled:
                        cols_buf[-1] = 1
                np.copyto(cols_buf[:kh * kw * c, :rows].reshape(kh, kw, c, r1 - r0, ow), view.transpose(2, 3, 4, 0, 1))
                cols = cols_buf[:, :rows].T
            else:
                if cols_buf is None:
                    # pooled: a block of im2col rows is megabytes, which a fresh array faults in every run
                    cols_buf = call.empty((block_h * ow, kh * kw * c + (bias_row or scaled)), dtype)
                    scratch.append(cols_buf)
                    if bias_row or scaled:
                        cols_buf[:, -1] = 1
                cols = cols_buf[:rows]
                np.copyto(cols[:, :kh * kw * c].reshape(view.shape), view, casting="unsafe")
            dest = out[i, r0:r1].reshape(rows, o)
            acc = dest if not quant and groups == 1 else acc_buf[:rows]
            if chunked:
                # each run's float32 product is exact; their sum, exact in float64
                for j, ((k0, k1), part_mat) in enumerate(zip(qf.chunks, qf.chunk_mats)):
                    part = part_buf[:rows]
                    np.matmul(cols[:, k0:k1], part_mat, out=part)
                    if j:
                        acc += part
                    else:
                        np.copyto(acc, part)
            elif groups == 1:
                np.matmul(cols, mats[0], out=acc)
            else:
                taps = cols.reshape(rows, kh * kw, c)
                for g in range(groups):
                    acc[:, g * og:(g + 1) * og] = taps[:, :, g * cg:(g + 1) * cg].reshape(rows, k) @ mats[g]
            if quant:
                if scaled:
                    qf.requantizer.fast(acc, dest, scaled=True)
                elif qf.requantizer is not None:
                    qf.requantizer(acc, out=dest)
                else:
                    r = np.rint(acc).astype(np.int64)
                    if qf.bias is not None:
                        r += qf.bias
                    dest[...] = requantize_accumulator(r, qf.multipliers, qf.shifts, out_od, p.activation,
                                                       qf.single_rounding)
                continue
            if groups > 1:
                dest[...] = acc
            add_bias_and_activate(out[i, r0:r1].reshape(r1 - r0, ow * o), None if bias_row else bias, p.activation)
    for block in scratch:
        call.give_back(block)
    return out if quant or out_od.dtype == np.float32 else out.astype(out_od.dtype)


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
        small = call.cache[SMALL_KEY] = prepare_small_conv(call, x, p, ConvLayout(
            1, 1, o, np.float32, mat, False, True, False, np.dtype(np.float32), None, 0, None,
            None if tiled is None else tiled.astype(np.float32, copy=False), p.activation, None,
            np.dtype(np.float32)), rows_in_place=x.flags.c_contiguous, one_block=True)
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
        small = call.cache[SMALL_KEY] = prepare_small_conv(call, x, p, ConvLayout(
            1, 1, mat.shape[1], qf.dtype, mat, False, True, False, np.dtype(qf.dtype),
            None if qf.folded else call.in_operands[0].zero_point, 0, None, None, p.activation,
            _quant_epilogue(qf, n * h * wd), np.dtype(call.out_operands[0].dtype)), rows_in_place=False)
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
    small = call.cache.get(SMALL_KEY) if call.cache is not None else None
    if small is not None:
        x = call.tensor(0)
        if small.accepts(x):
            return [small.run(call, x)]
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


def _quant_epilogue(qf: QuantFilter, rows: int | None = None) -> Callable[[np.ndarray, np.ndarray], object]:
    """conv_nhwc's requantization of a block: the scaled filter's clamp, or the fused requantizer; bound to
    blocks of exactly `rows` rows where that is given and the float requantizer takes it (a small map)."""
    fast = qf.requantizer.fast if qf.requantizer is not None else None
    bound = fast.bind(rows, scaled=qf.scaled is not None) if fast is not None and rows is not None else None
    if bound is not None:
        return bound
    if qf.scaled is not None:
        return lambda acc, dest: qf.requantizer.fast(acc, dest, scaled=True)
    return lambda acc, dest: qf.requantizer(acc, out=dest)


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
