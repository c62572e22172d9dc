"""CONV_2D on small maps (float32 and quant8), prepared once per operation.

On a map of a few thousand output values (MobileNets' 7x7 and 14x14 blocks, the 2x2..16x16 maps of
MediaPipe's landmark models) the GEMM takes a few microseconds and `conv_nhwc`'s per-call setup (~20-30 us:
its layout decisions, the padded (and centered) copy and its border fills, the im2col buffer and its
column of ones, the accumulator buffers, memo lookups) dominates. Here that setup runs on the first call and
is kept in the operation's cache: the layout `conv_nhwc` chose, a padded buffer whose border (0, or the
input zero point where the quantized filter folds it) is written once, an im2col buffer whose ones are set
once, the accumulators, and the filter matrices, tiled bias and requantizer `conv_nhwc` memoizes (the very
same arrays). A run copies (and centers) the input into the padded buffer, gathers the im2col rows, runs
the matmul (or its exact float32 chunks) and the epilogue (bias and clamp, or the requantization).

These maps are one of `conv_nhwc`'s row blocks and every step is its own, on operands of the same layout,
so the results are the general path's bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from nnconv.runtime.kernels._float_activation import add_bias_and_activate
from nnconv.runtime.kernels._spatial import extract_patches

if TYPE_CHECKING:
    from nnconv.runtime.kernels._conv_blocked import ConvPlan
    from nnconv.runtime.kernels.conv_2d import ConvParams
    from nnconv.runtime.kernels.registry import KernelCall

SMALL_OUTPUT_ELEMENTS = 1 << 15  # output values at most (see _depthwise_small's measure of this limit)
SMALL_IM2COL_ELEMENTS = 1 << 16  # im2col values at most (one of conv_nhwc's blocks)
CACHE_KEY = "conv_small"

# (accumulators [rows, O], output rows [rows, O]) -> None: the epilogue of a quantized layout
Requantize = Callable[[np.ndarray, np.ndarray], object]
FLOAT32 = np.dtype(np.float32)  # a float layout's buffer and output dtype


@dataclass(kw_only=True)
class ConvLayout:
    """What `conv_nhwc` chose for one operation (one group, one block): the matrix operands and epilogue.
    The defaults are a float32 layout with nothing quantized: a quantized one names its `zero_point`,
    `requantize` and `out_dtype` (and `chunks`, `border` where they apply). Built by `of_plan` (the general
    path's `ConvPlan`) or `pointwise` (a 1x1 convolution reading its input's rows)."""

    kh: int
    kw: int
    o: int
    mat: np.ndarray | None  # [K (+1), O]; None where the float32 `chunks` replace it
    activation: int
    dtype: type = np.float32  # the GEMM's dtype (float32, or float64 for an exact quantized product)
    ones: bool = False  # a column of ones after the im2col rows (the float bias row, or the scaled filter's kappa)
    reads_rows: bool = False  # 1x1 stride 1 unpadded: the (centered) input rows are the GEMM's operand
    tap_major: bool = False
    buffer_dtype: np.dtype = FLOAT32  # of the padded buffer the input is copied (or centered) into
    zero_point: int | None = None  # quantized: the input zero point subtracted there, None: a plain copy
    border: float | int = 0  # the padding value in the buffer (0, or the zero point where the filter folds it)
    chunks: list[tuple[tuple[int, int], np.ndarray]] | None = None  # quantized: exact float32 runs of the reduction
    bias: np.ndarray | None = None  # float: tiled along an output row, when not inside the GEMM
    requantize: Requantize | None = None  # quantized: the fused requantization
    out_dtype: np.dtype = FLOAT32

    @classmethod
    def of_plan(cls, plan: ConvPlan, activation: int, **quantized: Any) -> ConvLayout:
        """The general path's layout of a one-group `plan`; `quantized`: the fields a quantized plan adds."""
        return cls(kh=plan.kh, kw=plan.kw, o=plan.o, mat=plan.mats[0], activation=activation, dtype=plan.dtype,
                   ones=plan.bias_row or plan.scaled, reads_rows=plan.direct and plan.in_place,
                   tap_major=plan.tap_major, buffer_dtype=plan.rows_dtype, bias=plan.bias, **quantized)

    @classmethod
    def pointwise(cls, mat: np.ndarray, activation: int, dtype: type = np.float32, **epilogue: Any) -> ConvLayout:
        """A 1x1 convolution whose GEMM reads the input's rows with the [C, O] `mat`: x's own rows, or their
        copy in the GEMM's `dtype` (centered where a quantized layout gives `zero_point`). `epilogue`: the
        float bias, or the quantized fields."""
        return cls(kh=1, kw=1, o=mat.shape[1], mat=mat, activation=activation, dtype=dtype,
                   buffer_dtype=np.dtype(dtype), reads_rows=True, **epilogue)


@dataclass
class SmallConv:
    """The prepared operation: `run(call, x)` -> the output, for the input `accepts` says it was made for."""

    shape: tuple[int, ...]
    dtype: np.dtype
    layout: ConvLayout
    interior: np.ndarray | None  # the input's place in the kept padded buffer (None: x's rows read in place)
    rows_view: np.ndarray | None  # the GEMM operand when it is the buffer's own rows
    view: np.ndarray | None  # the im2col windows [OH, OW, KH, KW, C] (1x1: rows [OH, OW, C]) over the buffer
    cols: np.ndarray | None  # the kept im2col buffer: [K (+1), OH*OW] tap-major, else [OH*OW, K (+1)]
    acc: np.ndarray | None  # quantized: the accumulators
    part: np.ndarray | None  # quantized, chunked: one run's float32 product
    out_shape: tuple[int, int, int, int]

    def accepts(self, x: np.ndarray) -> bool:
        return (x.__class__ is np.ndarray and x.shape == self.shape and x.dtype == self.dtype
                and (self.interior is not None or x.flags.c_contiguous))

    def run(self, call: KernelCall, x: np.ndarray) -> np.ndarray:
        lay = self.layout
        _one, oh, ow, o = self.out_shape
        rows = oh * ow
        out = call.empty(self.out_shape, lay.out_dtype)
        if self.interior is None:
            cols = x.reshape(rows, self.shape[3])
        else:
            if lay.zero_point is None:
                np.copyto(self.interior, x[0])
            else:
                np.subtract(x[0], lay.buffer_dtype.type(lay.zero_point), out=self.interior, dtype=lay.buffer_dtype)
            cols = self.rows_view if self.rows_view is not None else self._gather()
        dest = out.reshape(rows, o)
        if lay.requantize is None:
            np.matmul(cols, lay.mat, out=dest)
            add_bias_and_activate(out.reshape(oh, ow * o), lay.bias, lay.activation)
            return out
        acc = self.acc
        if lay.chunks is None:
            np.matmul(cols, lay.mat, out=acc)
        else:
            # each run's float32 product is exact; their sum, exact in float64 (as conv_nhwc)
            for j, ((k0, k1), part_mat) in enumerate(lay.chunks):
                np.matmul(cols[:, k0:k1], part_mat, out=self.part)
                if j:
                    acc += self.part
                else:
                    np.copyto(acc, self.part)
        lay.requantize(acc, dest)
        return out

    def _gather(self) -> np.ndarray:
        view, buf = self.view, self.cols
        if self.layout.tap_major:
            k = view.shape[2] * view.shape[3] * view.shape[4]
            np.copyto(buf[:k].reshape(view.shape[2:] + view.shape[:2]), view.transpose(2, 3, 4, 0, 1))
            return buf.T
        k = buf.shape[1] - self.layout.ones
        np.copyto(buf[:, :k].reshape(view.shape), view, casting="unsafe")
        return buf


def prepare_small_conv(call: KernelCall, x: np.ndarray, p: ConvParams, layout: ConvLayout,
                       rows_in_place: bool, one_block: bool = False) -> SmallConv | None:
    """The prepared operation for NHWC input `x` ([1, H, W, C]) and the `layout` conv_nhwc chose
    (`rows_in_place`: its GEMM reads x's own rows, no copy); None when the map is batched or not small.
    `one_block`: conv_nhwc runs the whole map as one GEMM. A float 1x1 convolution reading x's rows in
    place keeps no buffer at all, so it is prepared at any size conv_nhwc runs as one block (one GEMM either
    way, the same bits): MediaPipe's landmark models run 1x1 convolutions on 32x32 to 128x128 maps."""
    n, h, w, c = x.shape
    kh, kw, o = layout.kh, layout.kw, layout.o
    k = kh * kw * c
    rows = p.out_h * p.out_w
    small = rows * o <= SMALL_OUTPUT_ELEMENTS and rows * (k + 1) <= SMALL_IM2COL_ELEMENTS
    keeps_nothing = rows_in_place and layout.requantize is None and one_block
    if (n != 1 or not (small or keeps_nothing) or rows < 1
            or min(p.pad_top, p.pad_bottom, p.pad_left, p.pad_right) < 0):
        return None
    interior = rows_view = view = cols = None
    if not rows_in_place:
        # kept by the runner, shared with the other prepared operations of this padded geometry (`call.kept`)
        padded = call.kept((1, h + p.pad_top + p.pad_bottom, w + p.pad_left + p.pad_right, c), layout.buffer_dtype,
                           layout.border, ("padded", p.pad_top, p.pad_bottom, p.pad_left, p.pad_right))
        interior = padded[0, p.pad_top:p.pad_top + h, p.pad_left:p.pad_left + w]
        if layout.reads_rows:
            rows_view = padded[0].reshape(rows, c)
        elif kh == kw == 1:
            view = padded[0, 0:(p.out_h - 1) * p.stride_h + 1:p.stride_h, 0:(p.out_w - 1) * p.stride_w + 1:p.stride_w]
        else:
            view = extract_patches(padded, kh, kw, p.stride_h, p.stride_w, p.dilation_h, p.dilation_w, p.out_h,
                                   p.out_w)[0]
        if rows_view is None:
            extra = int(layout.ones)
            cols = call.kept((k + extra, rows) if layout.tap_major else (rows, k + extra), layout.dtype, None,
                             ("im2col", layout.tap_major, extra))
            if extra:  # the users of this buffer write the K rows (columns) before it, never this one
                (cols[-1] if layout.tap_major else cols[:, -1])[...] = 1
    quant = layout.requantize is not None
    chunked = quant and layout.chunks is not None
    return SmallConv(shape=x.shape, dtype=x.dtype, layout=layout, interior=interior, rows_view=rows_view,
                     view=view, cols=cols,
                     acc=call.kept((rows, o), np.float64 if chunked else layout.dtype, None, "sums") if quant else None,
                     part=call.kept((rows, o), np.float32, None, "chunk product") if chunked else None,
                     out_shape=(1, p.out_h, p.out_w, o))
