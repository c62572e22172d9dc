"""Float32 CONV_2D on small maps, prepared once per operation.

On a map of a few thousand output values (MobileNets' 7x7 and 14x14 blocks, the 2x2..16x16 maps of
MediaPipe's landmark models) the GEMM takes a few microseconds and `conv_nhwc`'s per-call setup (~20-30 us:
its layout decisions, the padded copy and its border fills, the im2col buffer and its column of ones, memo
lookups) dominates. Here that setup runs on the first call and is kept in the operation's cache: the
layout `conv_nhwc` would choose, a zero-bordered padded buffer and an im2col buffer with its ones set once,
and the filter matrix and tiled bias (the very arrays `conv_nhwc` memoizes). A run copies the input into
the padded buffer, gathers the im2col rows, runs one matmul and the epilogue.

These maps are one of `conv_nhwc`'s row blocks and every step is its own (the same copy layout, the same
matrix operands, the bias inside the GEMM or after it as there; 1x1 maps of at most SMALL_POINTWISE_PIXELS
as `_small_pointwise`), so the results are the general path's, bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from nnconv.runtime.kernels._float_activation import add_bias_and_activate
from nnconv.runtime.kernels._spatial import extract_patches

if TYPE_CHECKING:
    from nnconv.runtime.kernels.conv_2d import ConvParams
    from nnconv.runtime.kernels.registry import KernelCall

SMALL_OUTPUT_ELEMENTS = 1 << 14  # output values at most (the kept buffers stay a few tens of KiB)
SMALL_IM2COL_ELEMENTS = 1 << 16  # im2col values at most (one of conv_nhwc's blocks)
CACHE_KEY = "conv_small"


@dataclass
class SmallFloatConv:
    """The prepared operation: `run(call, x)` -> the output, for the input `accepts` says it was made for."""

    shape: tuple[int, ...]
    reads_rows: bool  # the input's rows are the GEMM's operand (1x1, stride 1, unpadded, no bias row)
    interior: np.ndarray | None  # the input's place in the kept padded buffer
    view: np.ndarray | None  # the im2col windows [OH, OW, KH, KW, C] (1x1: rows [OH, OW, C]) over it
    cols: np.ndarray | None  # the kept im2col buffer: [K (+1), OH*OW] tap-major, else [OH*OW, K (+1)]
    tap_major: bool
    mat: np.ndarray  # [K (+1 bias row), O]
    bias: np.ndarray | None  # tiled along an output row, when not inside the GEMM
    activation: int
    out_shape: tuple[int, int, int, int]

    def accepts(self, x: np.ndarray) -> bool:
        return (x.__class__ is np.ndarray and x.shape == self.shape and x.dtype == np.float32
                and (not self.reads_rows or x.flags.c_contiguous))

    def run(self, call: KernelCall, x: np.ndarray) -> np.ndarray:
        _one, oh, ow, o = self.out_shape
        out = call.empty(self.out_shape, np.float32)
        if self.reads_rows:
            cols = x.reshape(oh * ow, self.shape[3])
        else:
            np.copyto(self.interior, x[0])
            view, buf = self.view, self.cols
            if self.tap_major:
                k = view.shape[2] * view.shape[3] * view.shape[4]
                np.copyto(buf[:k].reshape(view.shape[2:] + view.shape[:2]), view.transpose(2, 3, 4, 0, 1))
                cols = buf.T
            else:
                k = int(np.prod(view.shape[2:]))
                np.copyto(buf[:, :k].reshape(view.shape), view, casting="unsafe")
                cols = buf
        np.matmul(cols, self.mat, out=out.reshape(oh * ow, o))
        add_bias_and_activate(out.reshape(oh, ow * o), self.bias, self.activation)
        return out


def prepare_small_conv(x: np.ndarray, kh: int, kw: int, o: int, p: ConvParams, mat: np.ndarray,
                       bias_row: bool, reads_rows: bool, tap_major: bool,
                       bias: np.ndarray | None) -> SmallFloatConv | None:
    """The prepared operation for NHWC float32 input `x` ([1, H, W, C]) with the layout `conv_nhwc` chose
    (`mat` its filter matrix, with the bias row when `bias_row`; `bias` tiled when it follows the GEMM);
    None when the map is batched or not small."""
    n, h, w, c = x.shape
    k = kh * kw * c
    rows = p.out_h * p.out_w
    if (n != 1 or rows * o > SMALL_OUTPUT_ELEMENTS or rows * (k + 1) > SMALL_IM2COL_ELEMENTS or rows < 1
            or min(p.pad_top, p.pad_bottom, p.pad_left, p.pad_right) < 0):
        return None
    interior = view = cols = None
    if not reads_rows:
        padded = np.zeros((1, h + p.pad_top + p.pad_bottom, w + p.pad_left + p.pad_right, c), np.float32)
        interior = padded[0, p.pad_top:p.pad_top + h, p.pad_left:p.pad_left + w]
        if kh == kw == 1:
            view = padded[0, 0:(p.out_h - 1) * p.stride_h + 1:p.stride_h, 0:(p.out_w - 1) * p.stride_w + 1:p.stride_w]
        else:
            view = extract_patches(padded, kh, kw, p.stride_h, p.stride_w, p.dil_h, p.dil_w, p.out_h, p.out_w)[0]
        extra = int(bias_row)
        cols = np.empty((k + extra, rows) if tap_major else (rows, k + extra), np.float32)
        if extra:
            (cols[-1] if tap_major else cols[:, -1])[...] = 1
    return SmallFloatConv(shape=x.shape, reads_rows=reads_rows, interior=interior, view=view, cols=cols,
                          tap_major=tap_major, mat=mat, bias=None if bias_row else bias, activation=p.activation,
                          out_shape=(1, p.out_h, p.out_w, o))
