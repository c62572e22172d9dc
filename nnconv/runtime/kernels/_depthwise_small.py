"""Depthwise convolutions of small maps, prepared once per operation (float32 and quant8).

On a map of a few thousand values (MobileNets' 7x7 and 14x14 blocks, MediaPipe's 2x2..8x8 landmark
heads) the arithmetic takes a few microseconds and the general path's setup dominates: reading the
scalars, padding into a fresh buffer (five slice assignments), building the window views, tiling the taps
(~35-60 us a call against ~7 us of numpy work). Here everything that depends only on the operation (the
parameters, the taps and bias, a zero-bordered padded buffer kept for the operation's life and the window
view over it) is built on the first call, and each run copies the input into the buffer's interior,
runs one einsum and the epilogue.

The einsums are the general path's own, over the same window layouts ("rijl,ijl->rl" over row runs at a
stride of 1 along W with one output per channel, "hwijc,ijcm->hwcm" over the im2col windows otherwise),
so each output's taps are summed in the same order and the results are those of the general path, bit
for bit. Quantized: the buffer holds the input minus its zero point in the accumulator's integer type
(the padding is then 0, the zero point's own value centered), exact in any order; row runs at a stride
along W keep the 8-bit input there instead (bordered by the zero point) and center it in their column
copy, the same integers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from nnconv.runtime.kernels._float_activation import add_bias_and_activate
from nnconv.runtime.kernels._spatial import window_view
from nnconv.runtime.kernels.conv_2d import ConvParams
from nnconv.runtime.kernels.registry import KernelCall

# At most this many output values take the prepared path (the padded input they read is about as large,
# times the strides): the kept buffers stay under a few hundred KiB per geometry. Measured against 1 << 14
# and 1 << 16 (with the convolutions' limit): face_landmark 5.86 -> 5.65 -> 5.42 ms, kept MB 1.9 -> 2.7 -> 4.3;
# MobileNetV2 float 4.8 -> 5.3 -> 7.2 kept MB for ~1% of its time.
SMALL_OUTPUT_ELEMENTS = 1 << 15
CACHE_KEY = "depthwise_small"


@dataclass
class SmallDepthwise:
    """The prepared operation: `run(call, x)` -> the output, for an input of exactly `shape` and `dtype`."""

    shape: tuple[int, ...]
    dtype: np.dtype
    interior: np.ndarray  # the input's place inside the kept padded buffer
    zero_point: int | None  # quantized: subtracted while copying into the buffer
    column_view: np.ndarray | None  # row runs at a stride along W: the taps' columns in the padded buffer
    columns: np.ndarray | None  # ... and their kept copy, which `windows` then reads
    # quantized row runs at a stride along W: the padded buffer holds the 8-bit input (its border the zero
    # point) and the column copy subtracts the zero point instead (`zero_point` is then None)
    column_zero_point: int | None
    windows: np.ndarray  # read-only view over the padded buffer (or the column copy)
    taps: np.ndarray
    subscripts: str
    sums_shape: tuple[int, ...]  # the einsum's output layout
    out_shape: tuple[int, ...]  # [1, OH, OW, C*M]
    out_dtype: np.dtype
    acc: np.ndarray | None  # quantized: the integer sums, before the requantization
    bias: np.ndarray | None  # float: per output channel, tiled along an output row (OW*C*M values)
    activation: int
    requantize: Callable[[np.ndarray, np.ndarray], object] | None

    def accepts(self, x: np.ndarray) -> bool:
        return x.shape == self.shape and x.dtype == self.dtype

    def run(self, call: KernelCall, x: np.ndarray) -> np.ndarray:
        if self.zero_point is None:
            np.copyto(self.interior, x[0])
        else:
            np.subtract(x[0], self.interior.dtype.type(self.zero_point), out=self.interior,
                        dtype=self.interior.dtype)
        if self.column_zero_point is not None:
            np.subtract(self.column_view, self.columns.dtype.type(self.column_zero_point), out=self.columns,
                        dtype=self.columns.dtype)
        elif self.columns is not None:
            np.copyto(self.columns, self.column_view)
        out = call.empty(self.out_shape, self.out_dtype)
        if self.acc is None:
            np.einsum(self.subscripts, self.windows, self.taps, out=out.reshape(self.sums_shape))
            add_bias_and_activate(out.reshape(self.out_shape[1], -1), self.bias, self.activation)
            return out
        np.einsum(self.subscripts, self.windows, self.taps, out=self.acc)
        channels = self.out_shape[-1]
        self.requantize(self.acc.reshape(-1, channels), out.reshape(-1, channels))
        return out


def prepare_small_depthwise(call: KernelCall, x: np.ndarray, wk: np.ndarray, bias: np.ndarray | None, p: ConvParams,
                            multiplier: int, layout: str, out_dtype: np.dtype, zero_point: int | None,
                            acc_dtype: type, requantize: Callable[[np.ndarray, np.ndarray], object] | None
                            ) -> SmallDepthwise | None:
    """The prepared operation for NHWC input `x` ([1, H, W, C]), taps `wk` [KH, KW, C, M] (float32, or
    centered integers of `acc_dtype`), float `bias` [C*M] (None when quantized or absent), the parsed
    parameters `p` and the general path's `layout` for this map: "rows" (row runs; at a stride along W
    over a copy of the taps' columns), "im2col" (the einsum over the im2col windows); None when the map
    is too large or batched (the general path runs it)."""
    n, h, w, c = x.shape
    kh, kw = wk.shape[:2]
    oc = c * multiplier
    if n != 1 or p.out_h * p.out_w * oc > SMALL_OUTPUT_ELEMENTS or p.out_h < 1 or p.out_w < 1:
        return None
    top, bottom, left, right = p.pad_top, p.pad_bottom, p.pad_left, p.pad_right
    if min(top, bottom, left, right) < 0:
        return None  # negative explicit padding crops: the general path's business
    quant = zero_point is not None
    # Quantized row runs at a stride along W center the values in their column copy, as the general path
    # does (`_depthwise_float._column_windows`): the padded buffer then keeps the 8-bit input, bordered
    # by the zero point, and no pass widens the whole input first (paired A/B in one process, int8 3x3
    # 32x32x96 stride 2 0.87-0.96x, 5x5 20x20x144 stride 2 0.90-0.92x, 3x3 16x16x144 0.98x)
    centered_columns = quant and layout == "rows" and p.stride_w > 1
    buf_dtype, fill = (x.dtype, zero_point) if centered_columns else (acc_dtype, 0)
    # kept by the runner, shared with the other prepared operations of this padded geometry (`call.kept`)
    padded = call.kept((1, h + top + bottom, w + left + right, c), buf_dtype, fill,
                       ("padded", top, bottom, left, right))
    interior = padded[0, top:top + h, left:left + w]
    columns = column_view = None
    if layout == "rows":
        run = p.out_w * c
        taps = np.ascontiguousarray(np.broadcast_to(wk[:, :, None, :, 0], (kh, kw, p.out_w, c)))
        taps = taps.reshape(kh, kw, run)
        source, s = padded[0], padded.strides[1:]
        if p.stride_w > 1:
            # `_depthwise_float._column_windows`' copy of the KW columns each tap reads, kept: column kx of
            # copied row y holds the OW input pixels kx*dil_w + ox*stride_w
            read = (p.out_h - 1) * p.stride_h + (kh - 1) * p.dilation_h + 1
            column_view = window_view(padded[0, :read], (read, kw, p.out_w, c),
                                      (s[0], s[1] * p.dilation_w, s[1] * p.stride_w, s[2]))
            columns = call.kept(column_view.shape, acc_dtype, None, "depthwise columns")
            t = columns.strides
            windows = window_view(columns, (p.out_h, kh, kw, run), (t[0] * p.stride_h, t[0] * p.dilation_h, t[1], t[3]))
        else:
            windows = window_view(source, (p.out_h, kh, kw, run), (s[0] * p.stride_h, s[0] * p.dilation_h,
                                                                   s[1] * p.dilation_w, s[2]))
        subscripts, sums_shape = "rijl,ijl->rl", (p.out_h, run)
    else:
        s = padded.strides
        windows = window_view(padded[0], (p.out_h, p.out_w, kh, kw, c),
                              (s[1] * p.stride_h, s[2] * p.stride_w, s[1] * p.dilation_h, s[2] * p.dilation_w, s[3]))
        taps = np.ascontiguousarray(wk)
        subscripts, sums_shape = "hwijc,ijcm->hwcm", (p.out_h, p.out_w, c, multiplier)
    tiled = None if bias is None else np.tile(bias, p.out_w)
    return SmallDepthwise(shape=x.shape, dtype=x.dtype, interior=interior,
                          zero_point=None if centered_columns else zero_point,
                          column_view=column_view, columns=columns,
                          column_zero_point=zero_point if centered_columns else None,
                          windows=windows, taps=taps, subscripts=subscripts, sums_shape=sums_shape,
                          out_shape=(1, p.out_h, p.out_w, oc), out_dtype=np.dtype(out_dtype),
                          acc=call.kept(sums_shape, acc_dtype, None, "sums") if quant else None,
                          bias=None if quant else tiled, activation=p.activation, requantize=requantize)
