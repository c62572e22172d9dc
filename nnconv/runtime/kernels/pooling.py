"""AVERAGE_POOL_2D (1), L2_POOL_2D (12), MAX_POOL_2D (17): the three 2-D poolings.

Slots, explicit padding (10 or 11 inputs): 0 input [N,H,W,C], 1..4 pad left/right/top/bottom,
5 stride_w, 6 stride_h, 7 filter_w, 8 filter_h, 9 fused activation, [10 NCHW bool].
Implicit padding (7 or 8 inputs): 1 padding scheme, 2 stride_w, 3 stride_h, 4 filter_w, 5 filter_h,
6 activation, [7 NCHW].

Only in-bounds elements take part (padding is neither summed nor counted). Output quantization equals
the input's. Quantized AVERAGE: integer sum, then the division rounded half away from zero
(`(acc ± count/2) / count`, C truncation), then the activation clamp. MAX: max then clamp. L2 (float
only): sqrt(mean of squares). float16 is computed in float32.
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.quantization import is_quant8, quantized_activation_range
from nnconv.runtime.kernels._float_activation import apply_float_activation
from nnconv.runtime.kernels._spatial import (conv_output_size, extract_patches, implicit_padding, nchw_to_nhwc,
                                             nhwc_to_nchw, pad_spatial)
from nnconv.runtime.kernels.registry import KernelCall, kernel


def _params(call: KernelCall, h: int, w: int) -> tuple[tuple[int, int, int, int], int, int, int, int, int]:
    """((top, bottom, left, right), stride_h, stride_w, filter_h, filter_w, activation)."""
    if call.num_inputs >= 10:
        pl, pr, pt, pb = (int(call.scalar(i)) for i in range(1, 5))
        sw, sh, fw, fh, act = (int(call.scalar(i)) for i in range(5, 10))
    else:
        scheme = int(call.scalar(1))
        sw, sh, fw, fh, act = (int(call.scalar(i)) for i in range(2, 7))
        if min(sw, sh, fw, fh) < 1:
            raise call.fail("strides and filter sizes must be positive")
        pl, pr = implicit_padding(w, sw, fw, 1, scheme)
        pt, pb = implicit_padding(h, sh, fh, 1, scheme)
    if min(sw, sh, fw, fh) < 1 or min(pl, pr, pt, pb) < 0:
        raise call.fail("strides and filter sizes must be positive, paddings non-negative")
    return (pt, pb, pl, pr), sh, sw, fh, fw, act


def _nchw(call: KernelCall) -> bool:
    slot = 10 if call.num_inputs >= 10 else 7
    return bool(call.opt_scalar(slot, False)) if call.num_inputs > slot else False


def _windows(call: KernelCall, x: np.ndarray, fill: float | int):
    """(windows [N,OH,OW,FH,FW,C] of the padded input and the in-bounds count [1,OH,OW,C or 1], activation).

    Both are reduced over axes (3, 4) of the strided view directly, which copies nothing."""
    n, h, w, c = x.shape
    (pt, pb, pl, pr), sh, sw, fh, fw, act = _params(call, h, w)
    oh = conv_output_size(h, fh, sh, 1, pt, pb)
    ow = conv_output_size(w, fw, sw, 1, pl, pr)
    if oh < 1 or ow < 1:
        raise call.fail("the filter is larger than the padded input")
    xp = pad_spatial(x, pt, pb, pl, pr, fill)
    win = extract_patches(xp, fh, fw, sh, sw, 1, 1, oh, ow)

    def in_bounds_count() -> np.ndarray:
        ones = pad_spatial(np.ones((1, h, w, 1), dtype=np.int64), pt, pb, pl, pr, 0)
        return extract_patches(ones, fh, fw, sh, sw, 1, 1, oh, ow).sum(axis=(3, 4))
    # depends only on the geometry: kept per operation and input shape when the parameters are constants
    count = call.memo(("pool_count", h, w), range(1, call.num_inputs), in_bounds_count)
    return win, count, act


def _run(call: KernelCall, fn) -> list[np.ndarray]:
    x = call.tensor(0)
    if x.ndim != 4:
        raise call.fail(f"input must be 4-D, got {x.ndim}-D")
    nchw = _nchw(call)
    xh = nchw_to_nhwc(x) if nchw else x
    y = fn(xh)
    return [nhwc_to_nchw(y) if nchw else y]


@kernel(OperationType.AVERAGE_POOL_2D)
def average_pool_2d(call: KernelCall) -> list[np.ndarray]:
    od = call.in_operands[0]
    out = call.out_operands[0]

    def fn(x: np.ndarray) -> np.ndarray:
        if is_quant8(od.type):
            win, count, act = _windows(call, x.astype(np.int64), 0)
            acc = win.sum(axis=(3, 4))
            half = count // 2
            # C integer division truncates toward zero: round half away from zero on both signs.
            num = np.where(acc > 0, acc + half, acc - half)
            avg = np.sign(num) * (np.abs(num) // count)
            lo, hi = quantized_activation_range(act, out)
            return np.clip(avg, lo, hi).astype(out.dtype)
        win, count, act = _windows(call, x.astype(np.float32, copy=False), 0.0)
        avg = win.sum(axis=(3, 4)) / count.astype(np.float32)
        return apply_float_activation(avg.astype(np.float32), act).astype(out.dtype)
    return _run(call, fn)


@kernel(OperationType.MAX_POOL_2D)
def max_pool_2d(call: KernelCall) -> list[np.ndarray]:
    od = call.in_operands[0]
    out = call.out_operands[0]

    def fn(x: np.ndarray) -> np.ndarray:
        if is_quant8(od.type):
            win, _count, act = _windows(call, x.astype(np.int32), np.iinfo(np.int32).min)
            lo, hi = quantized_activation_range(act, out)
            return np.clip(win.max(axis=(3, 4)), lo, hi).astype(out.dtype)
        win, _count, act = _windows(call, x.astype(np.float32, copy=False), -np.inf)
        return apply_float_activation(win.max(axis=(3, 4)), act).astype(out.dtype)
    return _run(call, fn)


@kernel(OperationType.L2_POOL_2D)
def l2_pool_2d(call: KernelCall) -> list[np.ndarray]:
    out = call.out_operands[0]
    if is_quant8(call.type(0)):
        raise call.fail("L2_POOL_2D takes float tensors only")

    def fn(x: np.ndarray) -> np.ndarray:
        xf = x.astype(np.float32)
        win, count, act = _windows(call, xf * xf, 0.0)
        y = np.sqrt(win.sum(axis=(3, 4)) / count.astype(np.float32))
        return apply_float_activation(y.astype(np.float32), act).astype(out.dtype)
    return _run(call, fn)
