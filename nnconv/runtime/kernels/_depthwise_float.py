"""The depthwise convolution of depth multiplier 1 as row runs (float, and quantized in exact int32).

With stride 1 and one output channel per input channel, every filter tap reads, for one output row, a
contiguous run of OW*C values of one (padded) input row, and writes a contiguous run of OW*C outputs. An
einsum over windows shaped [OH, KH, KW, OW*C] with the filter tiled along W to [KH, KW, OW*C] then runs
its multiply-accumulate loop over whole rows (OW*C elements per inner loop) instead of over C channels per
pixel and tap: measured 1.9x (56x56x144) to 4.9x (112x112x32, where C = 32 made the per-pixel loops
short) faster than the einsum over the im2col view, and 1.5x faster than per-tap multiply + add passes.

A stride along H only changes the windows' row step. A stride along W first copies, per input row, the
KW columns each tap reads ([rows, KW, OW, C]: column kx holds input pixels kx*dil_w + ox*stride_w), so that
every tap again reads one contiguous run of OW*C values: one copy of KW/stride_w times the input, then
the same einsum at a quarter of the stride-1 work (stride 2). In situ 2.0x (96x96x32, 5x5, stride 2:
1.41 -> 0.71 ms), 1.5x (130x130x64, 3x3) over the per-tap and im2col paths; int8 1.8x (NASNetMobile's
111x111x32 7x7, 3.5 -> 2.0 ms); on maps of at most 64 output pixels the im2col einsum stays faster (the
copy is not paid back).

The sum of each output's taps still runs in row-major tap order from 0 (einsum's reduction over i, j), so
the result equals the other float paths bit for bit.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from nnconv.runtime.kernels._float_activation import add_bias_and_activate
from nnconv.runtime.kernels._spatial import window_view
from nnconv.runtime.kernels.registry import KernelCall

# Quantized: bytes of int32 sums per block of rows, a scratch block the requantization reads next. Fewer,
# larger blocks win in situ (A/B alternating, CPU clock, DEPTHWISE_CONV_2D per run against 128 KiB):
# MobileNetV2 int8 15.2 -> 13.9 ms, NASNetMobile int8 46.5 -> 44.0 ms (most of its maps now one block).
ROW_BLOCK_BYTES = 1 << 19
# Float blocks accumulate in the output itself and are larger: in situ, fewer einsum calls (each sets up
# a 4-operand-axis iterator) beat keeping the block in cache for the epilogue. MobileNetV2's depthwise
# layers, A/B alternating on the CPU clock: 128 KiB 8.5 ms, 256 KiB 8.3, 512 KiB 8.1, whole maps 7.9.
FLOAT_ROW_BLOCK_BYTES = 1 << 21
# At a stride along W: bytes of the per-block column copy (see `depthwise_rows`).
COLUMN_BLOCK_BYTES = 1 << 21


def depthwise_rows(call: KernelCall, xs: np.ndarray, wk: np.ndarray, bias: np.ndarray | None,
                   stride_h: int, stride_w: int, dil_h: int, dil_w: int, activation: int, out: np.ndarray,
                   requantize: Callable[[np.ndarray, np.ndarray], None] | None = None,
                   zero_point: int | None = None) -> None:
    """`out` [N, OH, OW, C] = the depthwise convolution (multiplier 1) of the padded float32 NHWC input
    `xs` by the taps `wk` [KH, KW, C, 1], + `bias` [C], clamped by the fused `activation`.

    Quantized: `xs` and `wk` hold centered integers (int32, exact sums in any order) and each block's sums
    [rows * OW, C] go through `requantize(sums, out_block)` instead of the bias and activation. At a
    stride along W, `zero_point` given: `xs` holds the raw padded 8-bit values and the column copy
    centers them into the taps' integer dtype (no pass over the whole input as int32 first)."""
    n, oh, ow, c = out.shape
    kh, kw = wk.shape[:2]
    run = ow * c
    if xs.strides[3] != xs.itemsize or xs.strides[2] != c * xs.itemsize:
        xs = np.ascontiguousarray(xs)  # the runs need each input row's (W, C) contiguous
    taps = call.memo(("depthwise_rows", ow), (1,),
                     lambda: np.ascontiguousarray(np.broadcast_to(wk[:, :, None, :, 0], (kh, kw, ow, c)))
                     .reshape(kh, kw, run))
    tiled_bias = None if bias is None else call.memo(("depthwise_rows_bias", ow), (2,), lambda: np.tile(bias, ow))
    block_bytes = ROW_BLOCK_BYTES if requantize is not None else FLOAT_ROW_BLOCK_BYTES
    block_h = max(1, min(oh, block_bytes // (4 * run)))
    sum_dtype = xs.dtype if zero_point is None else wk.dtype
    sums = None if requantize is None else np.empty((block_h, run), dtype=sum_dtype)
    cols = None
    if stride_w > 1:
        # The column copy is made per block of output rows, so that it stays a few MiB whatever the map
        # (a whole-map copy is KW / stride_h times the input: 7 MB on MobileNetV2's 112x112x96 stride 2,
        # which the buffer pool's arena then kept); the rows the blocks share (KH - stride_h) are copied twice.
        row_bytes = kw * ow * c * np.dtype(sum_dtype).itemsize
        block_h = max(1, min(block_h, (COLUMN_BLOCK_BYTES // row_bytes - (kh - 1) * dil_h - 1) // stride_h + 1))
        cols = call.empty(((block_h - 1) * stride_h + (kh - 1) * dil_h + 1, kw, ow, c), sum_dtype)
    s = xs.strides
    for i in range(n):
        if cols is None:
            windows = window_view(xs[i], (oh, kh, kw, run), (s[1] * stride_h, s[1] * dil_h, s[2] * dil_w, s[3]))
        rows = out[i].reshape(oh, run)
        for r0 in range(0, oh, block_h):
            dest = rows[r0:r0 + block_h]
            if cols is None:
                block = windows[r0:r0 + block_h]
            else:
                block = _column_windows(xs[i], cols, r0, dest.shape[0], kh, kw, ow, c, stride_h, stride_w,
                                        dil_h, dil_w, zero_point)
            if requantize is not None:
                acc = sums[:dest.shape[0]]
                np.einsum("rijl,ijl->rl", block, taps, out=acc)
                requantize(acc.reshape(-1, c), dest.reshape(-1, c))
                continue
            np.einsum("rijl,ijl->rl", block, taps, out=dest)
            add_bias_and_activate(dest, tiled_bias, activation)
    if cols is not None:
        call.give_back(cols)


def _column_windows(x: np.ndarray, cols: np.ndarray, r0: int, rows: int, kh: int, kw: int, ow: int, c: int,
                    stride_h: int, stride_w: int, dil_h: int, dil_w: int, zero_point: int | None) -> np.ndarray:
    """The [rows, KH, KW, OW*C] windows of output rows r0.. over a copy of the input rows they read, in
    which cols[y, kx] holds the OW pixels tap column kx reads from input row r0*stride_h + y, one contiguous
    run each (centered by `zero_point` when given)."""
    first = r0 * stride_h
    read = (rows - 1) * stride_h + (kh - 1) * dil_h + 1
    s = x.strides
    view = window_view(x[first:first + read], (read, kw, ow, c), (s[0], s[1] * dil_w, s[1] * stride_w, s[2]))
    dest = cols[:read]
    if zero_point is None:
        np.copyto(dest, view)
    else:
        np.subtract(view, dest.dtype.type(zero_point), out=dest, dtype=dest.dtype)
    t = dest.strides
    return window_view(dest, (rows, kh, kw, ow * c), (t[0] * stride_h, t[0] * dil_h, t[1], t[3]))
