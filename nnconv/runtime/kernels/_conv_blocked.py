"""The general path of `conv_2d.conv_nhwc`: a convolution as blocked GEMMs, for the layout (`ConvPlan`) the
dispatcher chose.

Output rows are computed in blocks: per block, the im2col rows (a strided view of the padded input,
gathered and cast in one copy; a 1x1 convolution reads the input rows directly), one BLAS matmul per
group, then bias + activation (float, in place) or the fused requantization (quantized) into the output,
all while the block is in cache. Quantized: products in float32 or float64 BLAS, exact by the filter's
bound (see `_conv_quant.quant_filter`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from nnconv.nnapi.quantization import requantize_accumulator
from nnconv.runtime.kernels._conv_quant import QuantFilter
from nnconv.runtime.kernels._float_activation import add_bias_and_activate
from nnconv.runtime.kernels._spatial import extract_patches, pad_spatial
from nnconv.runtime.kernels.registry import KernelCall

if TYPE_CHECKING:
    from nnconv.nnapi.model import Operand
    from nnconv.runtime.kernels.conv_2d import ConvParams


@dataclass(kw_only=True)
class ConvPlan:
    """How `conv_nhwc` runs one operation: the GEMM's operands and dtype, the block size and the epilogue."""

    groups: int
    kh: int
    kw: int
    cg: int  # input channels per group
    o: int  # output channels
    dtype: type  # the GEMM's dtype
    rows_dtype: np.dtype  # of the rows the im2col reads (the padded, maybe centered, input)
    mats: list  # per group the [K, O/G] filter matrix ([K + 1, O] with the bias row); [None] when chunked
    bias: np.ndarray | None  # float: the bias the epilogue adds (tiled along an output row), else None
    bias_row: bool  # float: the bias is the filter matrix's last row, read against a column of ones
    direct: bool  # 1x1, one group: the (padded, centered) input rows are the GEMM's operand
    in_place: bool  # ... and read where they are (stride 1, contiguous)
    tap_major: bool  # one group, KxK over few channels: the im2col block is [K (+1), pixels]
    block_h: int  # output rows per block
    qf: QuantFilter | None = None  # quantized: the filter's constant-derived data

    @property
    def quant(self) -> bool:
        return self.qf is not None

    @property
    def scaled(self) -> bool:
        """Quantized with the scaled filter: a column of ones after the im2col rows meets kappa's row."""
        return self.qf is not None and self.qf.scaled is not None

    @property
    def chunked(self) -> bool:
        return self.qf is not None and self.qf.chunks is not None

    @property
    def one_by_one(self) -> bool:
        return self.kh == self.kw == 1


def blocked_conv(call: KernelCall, x: np.ndarray, p: ConvParams, plan: ConvPlan) -> np.ndarray:
    """The convolution of NHWC `x` (float32, or the quantized storage values) by `plan`, block by block."""
    in_od, out_od = call.in_operands[0], call.out_operands[0]
    xs, scratch = _padded_rows(call, x, p, plan)
    n, c, o = x.shape[0], x.shape[3], plan.o
    quant, qf, kh, kw = plan.quant, plan.qf, plan.kh, plan.kw
    ones = plan.bias_row or plan.scaled
    out = call.empty((n, p.out_h, p.out_w, o), out_od.dtype if quant else np.float32)
    cols_buf: np.ndarray | None = None
    ow, block_h = p.out_w, plan.block_h
    acc_buf = np.empty((block_h * ow, o), dtype=np.float64 if plan.chunked else plan.dtype) \
        if quant or plan.groups > 1 else None
    part_buf = np.empty((block_h * ow, o), dtype=np.float32) if plan.chunked else None
    patches = None if plan.one_by_one else extract_patches(xs, kh, kw, p.stride_h, p.stride_w, p.dilation_h,
                                                           p.dilation_w, p.out_h, p.out_w)
    for i in range(n):
        for r0 in range(0, p.out_h, block_h):
            r1 = min(p.out_h, r0 + block_h)
            rows = (r1 - r0) * ow
            if plan.one_by_one:
                view = xs[i, r0 * p.stride_h:(r1 - 1) * p.stride_h + 1:p.stride_h,
                          0:(ow - 1) * p.stride_w + 1:p.stride_w]
            else:
                view = patches[i, r0:r1]
            if plan.direct and view.flags.c_contiguous:
                cols = view.reshape(rows, c)
            elif plan.tap_major:
                if cols_buf is None:
                    cols_buf = call.empty((kh * kw * c + ones, block_h * ow), plan.dtype)
                    scratch.append(cols_buf)
                    if ones:
                        cols_buf[-1] = 1
                np.copyto(cols_buf[:kh * kw * c, :rows].reshape(kh, kw, c, r1 - r0, ow), view.transpose(2, 3, 4, 0, 1))
                cols = cols_buf[:, :rows].T
            else:
                if cols_buf is None:
                    # pooled: a block of im2col rows is megabytes, which a fresh array faults in every run
                    cols_buf = call.empty((block_h * ow, kh * kw * c + ones), plan.dtype)
                    scratch.append(cols_buf)
                    if ones:
                        cols_buf[:, -1] = 1
                cols = cols_buf[:rows]
                np.copyto(cols[:, :kh * kw * c].reshape(view.shape), view, casting="unsafe")
            dest = out[i, r0:r1].reshape(rows, o)
            acc = dest if not quant and plan.groups == 1 else acc_buf[:rows]
            _gemm(plan, cols, acc, part_buf, rows)
            if quant:
                _requantize_block(plan, acc, dest, out_od, p.activation)
                continue
            if plan.groups > 1:
                dest[...] = acc
            add_bias_and_activate(out[i, r0:r1].reshape(r1 - r0, ow * o), None if plan.bias_row else plan.bias,
                                  p.activation)
    for block in scratch:
        call.give_back(block)
    return out if quant or out_od.dtype == np.float32 else out.astype(out_od.dtype)


def _padded_rows(call: KernelCall, x: np.ndarray, p: ConvParams, plan: ConvPlan) -> tuple[np.ndarray, list]:
    """The input the im2col reads, padded (scratch from the buffer pool) and, quantized without the folded
    zero point, centered; and the scratch blocks to give back."""
    zero_point = call.in_operands[0].zero_point
    if not plan.quant:
        xs = pad_spatial(x, p.pad_top, p.pad_bottom, p.pad_left, p.pad_right, 0, call.empty)
        return xs, [] if xs is x else [xs]
    # padded with the zero point: 0 after centering or after the fold
    xs = pad_spatial(x, p.pad_top, p.pad_bottom, p.pad_left, p.pad_right, zero_point, call.empty)
    scratch = [] if xs is x else [xs]
    if not plan.qf.folded:
        centered = call.empty(xs.shape, plan.rows_dtype)
        np.subtract(xs, plan.rows_dtype.type(zero_point), out=centered, dtype=plan.rows_dtype)
        xs = centered
        scratch.append(centered)
    return xs, scratch


def _gemm(plan: ConvPlan, cols: np.ndarray, acc: np.ndarray, part_buf: np.ndarray | None, rows: int) -> None:
    """acc = cols @ filter: one matmul, one per group, or the exact float32 chunks summed in float64."""
    qf = plan.qf
    if plan.chunked:
        # each run's float32 product is exact; their sum, exact in float64
        for j, ((k0, k1), part_mat) in enumerate(zip(qf.chunks, qf.chunk_mats)):
            part = part_buf[:rows]
            np.matmul(cols[:, k0:k1], part_mat, out=part)
            if j:
                acc += part
            else:
                np.copyto(acc, part)
    elif plan.groups == 1:
        np.matmul(cols, plan.mats[0], out=acc)
    else:
        taps = cols.reshape(rows, plan.kh * plan.kw, plan.cg * plan.groups)
        og, k = plan.o // plan.groups, plan.kh * plan.kw * plan.cg
        for g in range(plan.groups):
            acc[:, g * og:(g + 1) * og] = taps[:, :, g * plan.cg:(g + 1) * plan.cg].reshape(rows, k) @ plan.mats[g]


def _requantize_block(plan: ConvPlan, acc: np.ndarray, dest: np.ndarray, out_od: Operand, activation: int) -> None:
    """The quantized epilogue: the scaled filter's clamp, the fused requantizer, or the reference's steps."""
    qf = plan.qf
    if plan.scaled:
        qf.requantizer.fast(acc, dest, scaled=True)
    elif qf.requantizer is not None:
        qf.requantizer(acc, out=dest)
    else:
        r = np.rint(acc).astype(np.int64)
        if qf.bias is not None:
            r += qf.bias
        dest[...] = requantize_accumulator(r, qf.multipliers, qf.shifts, out_od, activation, qf.single_rounding)
