"""DEPTHWISE_CONV_2D (NNAPI OperationType 4).

Slots: `window.DepthwiseImplicitSlot` / `DepthwiseExplicitSlot` (input [N,H,W,C], filter [1,KH,KW,C*M],
bias [C*M], the padding, strides, depth multiplier M, activation, [NCHW], [dilation]), read by
`window.DEPTHWISE_CONV_2D`.

Output channel `c * M + m` reads input channel `c`. Types: float32, float16 (computed in float32), quant8
asymm / asymm signed with a per-tensor or per-channel (channel dim 3) filter: int32 accumulation of
(q - zp) products, then the per-channel requantization of the reference.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.nnapi.operations import window
from nnconv.nnapi.quantization import Requantizer, is_quant8, max_abs_offset, requantize_accumulator
from nnconv.runtime.kernels._depthwise_float import FLOAT_ROW_BLOCK_BYTES, depthwise_rows
from nnconv.runtime.kernels._depthwise_small import CACHE_KEY, SmallDepthwise, prepare_small_depthwise
from nnconv.runtime.kernels._float_activation import add_bias_and_activate
from nnconv.runtime.kernels._spatial import extract_patches, nhwc_to_nchw, pad_spatial
from nnconv.runtime.kernels._conv_quant import filter_scales
from nnconv.runtime.kernels.conv_2d import ConvParams, grouped_conv_inputs
from nnconv.runtime.kernels.registry import KernelCall, kernel


# A quantized depthwise layer with at least this many output channels, or at most this many output pixels,
# runs as an einsum over its im2col view (see `depthwise_nhwc`).
EINSUM_MIN_CHANNELS = 64
EINSUM_MAX_PIXELS = 64
# Bytes of accumulators per block of output rows (see `depthwise_nhwc`).
DEPTHWISE_BLOCK_BYTES = 1 << 17


@dataclass
class QuantDepthwise:
    """Constant-derived data of a quantized depthwise convolution, built once per operation."""

    taps: np.ndarray  # (filter - zp) as [KH, KW, C, M] in `dtype`
    dtype: type  # int32 when the accumulator bound allows it, else int64
    requantizer: Requantizer | None
    multipliers: np.ndarray
    shifts: np.ndarray


def quant_depthwise(call: KernelCall, w: np.ndarray, b: np.ndarray | None, c: int, multiplier: int,
                    activation: int) -> QuantDepthwise:
    """|acc| <= sum over taps |w - zp_w| * max|x - zp_x| per output channel; int32 holds it exactly below
    2^31 (the reference accumulates in int32)."""
    in_od, w_od, out_od = call.in_operands[0], call.in_operands[1], call.out_operands[0]
    _one, kh, kw, oc = w.shape
    w_zp = 0 if w_od.type is OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL else w_od.zero_point
    ws = w.reshape(kh * kw, oc).astype(np.int64) - w_zp
    bound = np.abs(ws).sum(axis=0) * max_abs_offset(in_od.type, in_od.zero_point)
    dtype = np.int32 if int(bound.max(initial=0)) < (1 << 31) else np.int64
    # the multipliers and shifts (TFLite's single rounding is its FULLY_CONNECTED's: `ConvRequantization`)
    m, sh = call.conv_requantization(in_od.scale, filter_scales(call, 1), out_od.scale)[:2]
    return QuantDepthwise(ws.astype(dtype).reshape(kh, kw, c, multiplier), dtype,
                          Requantizer.build(m, sh, b, out_od, activation, bound), m, sh)


def depthwise_nhwc(call: KernelCall, x: np.ndarray, w: np.ndarray, b: np.ndarray | None, p: ConvParams,
                   multiplier: int) -> np.ndarray:
    """Depthwise convolution of NHWC storage arrays; filter [1, KH, KW, C*M].

    Quantized in exact int32 (or int64) arithmetic, float in float32 with the taps summed in row-major
    order from 0, by an einsum over the im2col view (wide layers) or one multiply-add per tap (narrow)."""
    in_od, out_od = call.in_operands[0], call.out_operands[0]
    n, _h, _w, c = x.shape
    one, kh, kw, oc = w.shape
    if one != 1:
        raise call.fail(f"filter dimension 0 must be 1, got {one}")
    if oc != c * multiplier:
        raise call.fail(f"filter depth {oc} differs from input depth {c} x multiplier {multiplier}")
    quant = is_quant8(in_od.type)
    small = _prepare_small(call, x, w, b, p, multiplier)
    if small is not None:
        return small.run(call, x)
    rows = multiplier == 1 and (p.stride_h == p.stride_w == 1 or p.out_h * p.out_w > EINSUM_MAX_PIXELS)
    if quant:
        qd: QuantDepthwise = call.memo(("depthwise", multiplier, p.activation), (1, 2),
                                       lambda: quant_depthwise(call, w, b, c, multiplier, p.activation))
        acc_dtype = qd.dtype
        # Padding with the zero point then centering equals centering then padding with 0; padding the
        # 8-bit values first makes the wide array in one pass. Both come from the buffer pool (scratch).
        xp = pad_spatial(x, p.pad_top, p.pad_bottom, p.pad_left, p.pad_right, in_od.zero_point, call.empty)
        scratch = [] if xp is x else [xp]
        if rows and p.stride_w > 1:
            xs = xp  # the row runs' column copy centers the 8-bit values itself
        else:
            xs = call.empty(xp.shape, acc_dtype)
            np.subtract(xp, acc_dtype(in_od.zero_point), out=xs, dtype=acc_dtype)
            scratch.append(xs)
        wk = qd.taps
    else:
        acc_dtype = np.float32
        xf = x.astype(np.float32, copy=False)
        xs = pad_spatial(xf, p.pad_top, p.pad_bottom, p.pad_left, p.pad_right, 0, call.empty)
        scratch = [] if xs is xf else [xs]
        wk = call.memo("depthwise_float", (1,),
                       lambda: np.asarray(w, dtype=np.float32).reshape(kh, kw, c, multiplier))
    out = call.empty((n, p.out_h, p.out_w, oc), out_od.dtype if quant else np.float32)
    if quant and rows:
        # row runs in int32 (in situ 2-4x the tap-by-tap or im2col einsum); exact in any summation order.
        # Strided maps too: their row runs copy the taps' columns first (see _depthwise_float)
        depthwise_rows(call, xs, wk, None, p.stride_h, p.stride_w, p.dilation_h, p.dilation_w, p.activation, out,
                       lambda acc, dest: _requantize(call, qd, acc, b, p, out=dest),
                       in_od.zero_point if xs is xp else None)
    elif rows:
        depthwise_rows(call, xs, wk, None if b is None else b.astype(np.float32, copy=False), p.stride_h,
                       p.stride_w, p.dilation_h, p.dilation_w, p.activation, out)
    elif oc >= EINSUM_MIN_CHANNELS or p.out_h * p.out_w <= EINSUM_MAX_PIXELS:
        _depthwise_einsum(call, xs, wk, b, p, qd if quant else None, out)
    else:
        _depthwise_taps(call, xs, wk, b, p, qd if quant else None, out)
    for block in scratch:
        call.give_back(block)
    return out if quant or out_od.dtype == np.float32 else out.astype(out_od.dtype)


def _depthwise_einsum(call: KernelCall, xs: np.ndarray, wk: np.ndarray, b: np.ndarray | None, p: ConvParams,
                      qd: "QuantDepthwise | None", out: np.ndarray) -> None:
    """Wide or spatially small layers: one einsum over the im2col view (a strided view, no copy) beats the
    per-tap passes, which cost two memory passes per tap (measured 1.2-2x quantized from 8x8x96 to
    112x112x96; float 1.4-3x from 56x56x144 to 7x7x1152 in isolation, and on stride 2 it needs no phase
    copy). einsum sums each output's taps in row-major order from 0, as the per-tap path does."""
    n, kh, kw, c, multiplier, oc = xs.shape[0], *wk.shape, out.shape[3]
    quant = qd is not None
    bias = None if quant or b is None else b.astype(np.float32, copy=False)
    # Per block of output rows, so that the requantization or the bias and activation find the block
    # in cache.
    patches = extract_patches(xs, kh, kw, p.stride_h, p.stride_w, p.dilation_h, p.dilation_w, p.out_h, p.out_w)
    # float blocks accumulate in the output itself, and fewer einsum calls win there (see
    # FLOAT_ROW_BLOCK_BYTES)
    block_bytes = DEPTHWISE_BLOCK_BYTES if quant else FLOAT_ROW_BLOCK_BYTES
    block_h = max(1, min(p.out_h, block_bytes // max(1, 4 * p.out_w * oc)))
    acc_buf = np.empty((block_h, p.out_w, c, multiplier), dtype=qd.dtype) if quant else None
    for i in range(n):
        for r0 in range(0, p.out_h, block_h):
            r1 = min(p.out_h, r0 + block_h)
            dest = out[i, r0:r1]
            acc = acc_buf[:r1 - r0] if acc_buf is not None else dest.reshape(r1 - r0, p.out_w, c, multiplier)
            np.einsum("hwijc,ijcm->hwcm", patches[i, r0:r1], wk, out=acc)
            if quant:
                _requantize(call, qd, acc.reshape(r1 - r0, p.out_w, oc), b, p, out=dest)
            else:
                add_bias_and_activate(dest, bias, p.activation)


def _depthwise_taps(call: KernelCall, xs: np.ndarray, wk: np.ndarray, b: np.ndarray | None, p: ConvParams,
                    qd: "QuantDepthwise | None", out: np.ndarray) -> None:
    """Narrow layers: one multiply-add per filter tap over a block of output rows (the tap's window of
    the padded input, merged into one contiguous inner loop), accumulated in the output itself (float)
    or in an int32/int64 buffer that is then requantized (quantized)."""
    n, kh, kw, c, multiplier, oc = xs.shape[0], *wk.shape, out.shape[3]
    quant = qd is not None
    acc_dtype = qd.dtype if quant else np.float32
    if multiplier == 1:
        wk = wk[..., 0]
        tail: tuple[int, ...] = (c,)
    else:
        xs = xs[..., None]
        tail = (c, multiplier)
    # The taps repeated along W: with the filter broadcast only over rows, numpy merges each tap's
    # contiguous (W, C) run into one inner loop instead of one short loop per pixel (2x for small C).
    wt = call.memo(("depthwise_tiled", quant, multiplier, p.out_w), (1,),
                   lambda: np.ascontiguousarray(np.broadcast_to(wk[:, :, None], (kh, kw, p.out_w) + wk.shape[2:])))
    strided = p.stride_h > 1 or p.stride_w > 1
    if strided:
        # De-interleave the input into its stride phases once (one copy in total), so that every tap reads
        # a stride-1, mergeable window of one phase.
        phases = {(py, px): np.ascontiguousarray(xs[:, py::p.stride_h, px::p.stride_w])
                  for py in range(min(p.stride_h, xs.shape[1])) for px in range(min(p.stride_w, xs.shape[2]))}
    # Output rows in cache-sized blocks: the taps' multiply-adds, the bias and activation (float) or the
    # requantization (quantized) all run on a block while it is in cache, instead of one pass over the
    # whole map per tap. Float blocks accumulate in the output itself.
    block_h = max(1, min(p.out_h, DEPTHWISE_BLOCK_BYTES // max(1, 4 * p.out_w * oc)))
    prod = np.empty((block_h, p.out_w) + tail, dtype=acc_dtype)
    acc_buf = np.empty((block_h, p.out_w) + tail, dtype=acc_dtype) if quant else None
    bias = None if quant or b is None else b.astype(np.float32, copy=False)
    for i in range(n):
        for r0 in range(0, p.out_h, block_h):
            r1 = min(p.out_h, r0 + block_h)
            dest = out[i, r0:r1]
            acc = acc_buf[:r1 - r0] if acc_buf is not None else dest.reshape((r1 - r0, p.out_w) + tail)
            pr = prod[:r1 - r0]
            first = True
            for ky in range(kh):  # taps summed in row-major order (float: the same order on every path)
                for kx in range(kw):
                    y0, x0 = ky * p.dilation_h + r0 * p.stride_h, kx * p.dilation_w
                    if strided:
                        ph = phases[(y0 % p.stride_h, x0 % p.stride_w)][i]
                        oy, ox = y0 // p.stride_h, x0 // p.stride_w
                        tap = ph[oy:oy + r1 - r0, ox:ox + p.out_w]
                    else:
                        tap = xs[i, y0:y0 + r1 - r0, x0:x0 + p.out_w]
                    if first:
                        np.multiply(tap, wt[ky, kx], out=acc)
                        first = False
                    else:
                        np.multiply(tap, wt[ky, kx], out=pr)
                        acc += pr
            if quant:
                _requantize(call, qd, acc.reshape(r1 - r0, p.out_w, oc), b, p, out=dest)
                continue
            add_bias_and_activate(dest, bias, p.activation)


def _requantize(call: KernelCall, qd: QuantDepthwise, acc: np.ndarray, b: np.ndarray | None,
                p: ConvParams, out: np.ndarray | None = None) -> np.ndarray:
    if qd.requantizer is not None:
        return qd.requantizer(acc, out=out)
    acc = acc.astype(np.int64)
    if b is not None:
        acc += b.astype(np.int64)
    y = requantize_accumulator(acc, qd.multipliers, qd.shifts, call.out_operands[0], p.activation)
    if out is None:
        return y
    out[...] = y
    return out


def _prepare_small(call: KernelCall, x: np.ndarray, w: np.ndarray, b: np.ndarray | None, p: ConvParams,
                   multiplier: int) -> SmallDepthwise | None:
    """The operation prepared for its small map (`_depthwise_small`), kept in its cache; None where the
    general path runs: a large or batched map, NCHW, float16, parameters that are not constants, or a
    quantized operation without the fused requantizer."""
    if call.cache is None or CACHE_KEY in call.cache or p.nchw:
        return None
    if not all(call.is_constant(s) for s in range(1, call.num_inputs) if call.has(s)):
        return None
    in_od, out_od = call.in_operands[0], call.out_operands[0]
    c = x.shape[3]
    # the layout `depthwise_nhwc` takes for this map (each einsum layout its own float sums)
    pixels = p.out_h * p.out_w
    if multiplier == 1 and (p.stride_h == p.stride_w == 1 or pixels > EINSUM_MAX_PIXELS):
        layout = "rows"
    elif c * multiplier >= EINSUM_MIN_CHANNELS or pixels <= EINSUM_MAX_PIXELS:
        layout = "im2col"
    else:
        call.cache[CACHE_KEY] = None  # the per-tap passes: the general path's own float sums
        return None
    if is_quant8(in_od.type):
        qd: QuantDepthwise = call.memo(("depthwise", multiplier, p.activation), (1, 2),
                                       lambda: quant_depthwise(call, w, b, c, multiplier, p.activation))
        if qd.requantizer is None or x.dtype != in_od.dtype:
            return None
        # the float requantizer bound to this map's rows where it takes them (the same passes, no dispatch)
        bound = qd.requantizer.fast.bind(pixels) if qd.requantizer.fast is not None else None
        small = prepare_small_depthwise(call, x, qd.taps, None, p, multiplier, layout, out_od.dtype, in_od.zero_point,
                                        qd.dtype, bound or (lambda acc, dest: qd.requantizer(acc, out=dest)))
    elif x.dtype == np.float32 and out_od.dtype == np.float32:
        _one, kh, kw, _oc = w.shape
        wk = np.asarray(w, dtype=np.float32).reshape(kh, kw, c, multiplier)
        small = prepare_small_depthwise(call, x, wk, None if b is None else b.astype(np.float32), p, multiplier, layout,
                                        np.float32, None, np.float32, None)
    else:
        return None
    call.cache[CACHE_KEY] = small  # None too: the general path from then on
    return small


@kernel(OperationType.DEPTHWISE_CONV_2D)
def depthwise_conv_2d(call: KernelCall) -> list[np.ndarray]:
    y = call.run_prepared(CACHE_KEY)
    if y is not None:
        return [y]
    xh, w, p, multiplier = grouped_conv_inputs(call, window.DEPTHWISE_CONV_2D, "depth multiplier")
    y = depthwise_nhwc(call, xh, w, call.inputs[2], p, multiplier)
    return [nhwc_to_nchw(y) if p.nchw else y]
