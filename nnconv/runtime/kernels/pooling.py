"""AVERAGE_POOL_2D (1), L2_POOL_2D (12), MAX_POOL_2D (17): the three 2-D poolings.

Slots: `window.PoolExplicitSlot` (10 or 11 inputs: input [N,H,W,C], pads left/right/top/bottom, strides,
filter_w, filter_h, fused activation, [NCHW]) or `PoolImplicitSlot` (7 or 8: a padding scheme instead of the
pads), read by `window.POOL_2D`.

Only in-bounds elements take part (padding is neither summed nor counted). Output quantization equals
the input's. Quantized AVERAGE: integer sum, then the division rounded half away from zero
(`(acc ± count/2) / count`, C truncation), then the activation clamp. MAX: max then clamp. L2 (float
only): sqrt(mean of squares). float16 is computed in float32.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.operations import window
from nnconv.nnapi.quantization import is_quant8, qrange, quantized_activation_range
from nnconv.runtime.kernels._float_activation import apply_float_activation
from nnconv.runtime.kernels._spatial import (conv_output_size, extract_patches, implicit_padding, nchw_to_nhwc,
                                             nhwc_to_nchw, pad_spatial, window_params)
from nnconv.runtime.kernels.registry import KernelCall, kernel


def _params(call: KernelCall, h: int, w: int) -> tuple[tuple[int, int, int, int], int, int, int, int, int]:
    """((top, bottom, left, right), stride_h, stride_w, filter_h, filter_w, activation)."""
    wp = window_params(call, window.POOL_2D)
    sw, sh, fw, fh, act = (int(v) for v in (wp.stride_w, wp.stride_h, wp.filter_w, wp.filter_h, wp.activation))
    if wp.explicit:
        pl, pr, pt, pb = (int(v) for v in (wp.pad_left, wp.pad_right, wp.pad_top, wp.pad_bottom))
    else:
        if min(sw, sh, fw, fh) < 1:
            raise call.fail("strides and filter sizes must be positive")
        pl, pr = implicit_padding(w, sw, fw, 1, int(wp.padding_scheme))
        pt, pb = implicit_padding(h, sh, fh, 1, int(wp.padding_scheme))
    if min(sw, sh, fw, fh) < 1 or min(pl, pr, pt, pb) < 0:
        raise call.fail("strides and filter sizes must be positive, paddings non-negative")
    return (pt, pb, pl, pr), sh, sw, fh, fw, act


@dataclass(frozen=True)
class _Geometry:
    pads: tuple[int, int, int, int]  # top, bottom, left, right
    stride_h: int
    stride_w: int
    filter_h: int
    filter_w: int
    out_h: int
    out_w: int
    activation: int


def _geometry(call: KernelCall, h: int, w: int) -> _Geometry:
    """The window geometry, kept per operation and input size when the parameters are constants."""
    def make() -> _Geometry:
        pads, sh, sw, fh, fw, act = _params(call, h, w)
        pt, pb, pl, pr = pads
        oh = conv_output_size(h, fh, sh, 1, pt, pb)
        ow = conv_output_size(w, fw, sw, 1, pl, pr)
        if oh < 1 or ow < 1:
            raise call.fail("the filter is larger than the padded input")
        return _Geometry(pads, sh, sw, fh, fw, oh, ow, act)
    return call.memo(("pool_geometry", h, w), range(1, call.num_inputs), make)


def _reduce_windows(call: KernelCall, x: np.ndarray, g: _Geometry, fill: float | int, ufunc: np.ufunc,
                    dtype: type) -> np.ndarray:
    """ufunc-reduction of every window, [N, OH, OW, C] in `dtype` (a pooled buffer), in whole-array steps
    over strided slices of the padded input instead of one reduction over the six-dimensional window view
    (slow for small windows). Either tap by tap into the output (FH*FW - 1 steps of output size, the
    reference's row-major order), or separably, along one axis with FW (or FH) slices and then the other,
    whichever costs least (elements and numpy inner loops, measured: 2x2 stride-2 windows go tap by tap,
    3x3 ones separably, W first at stride 2 on few channels). max is exact in any order; integer sums in
    float32 are exact below 2**24 (callers check); separable float sums are re-associated per row (within
    the float tolerance)."""
    n, _h, _w, c = x.shape
    if g.out_h == g.out_w == 1 and not any(g.pads):
        # one window (global pooling): rows first, [N, FW, C] with FW*C-wide steps, then the columns (a single
        # reduction over H*W would step C elements at a time: 10x slower at 128x128x16)
        out = call.empty((n, 1, 1, c), dtype)
        rows = ufunc.reduce(x[:, :g.filter_h, :g.filter_w], axis=1, dtype=dtype)
        ufunc.reduce(rows, axis=1, out=out.reshape(n, c))
        return out
    xp = pad_spatial(x, *g.pads, fill, call.empty)
    hp, wp = xp.shape[1], xp.shape[2]
    span_h, span_w = (g.out_h - 1) * g.stride_h + 1, (g.out_w - 1) * g.stride_w + 1
    out = call.empty((n, g.out_h, g.out_w, c), dtype)
    # Cost of a step: its elements plus ~16 per inner loop numpy runs (a loop spans C values, or a whole
    # row's W*C when the slice steps W by 1); slices along H keep whole rows.
    runs_w = 1 if g.stride_w == 1 else g.out_w
    per_output_row = g.out_w * c + 16 * runs_w
    tap_cost = g.filter_h * g.filter_w * g.out_h * per_output_row
    w_first = g.filter_w * hp * per_output_row + g.filter_h * g.out_h * (g.out_w * c + 16)
    h_first = g.filter_h * g.out_h * (wp * c + 16) + g.filter_w * g.out_h * per_output_row
    if tap_cost <= min(w_first, h_first):
        taps = [xp[:, i:i + span_h:g.stride_h, j:j + span_w:g.stride_w]
                for i in range(g.filter_h) for j in range(g.filter_w)]
        if len(taps) == 1:
            np.copyto(out, taps[0], casting="unsafe")
        else:
            ufunc(taps[0], taps[1], out=out, dtype=dtype)
        for tap in taps[2:]:
            ufunc(out, tap, out=out, dtype=dtype)
        if xp is not x:
            call.give_back(xp)
        return out
    if w_first <= h_first:
        mid = call.empty((n, hp, g.out_w, c), dtype)
        np.copyto(mid, xp[:, :, 0:span_w:g.stride_w], casting="unsafe")
        for k in range(1, g.filter_w):
            ufunc(mid, xp[:, :, k:k + span_w:g.stride_w], out=mid, casting="unsafe")
        np.copyto(out, mid[:, 0:span_h:g.stride_h])
        for k in range(1, g.filter_h):
            ufunc(out, mid[:, k:k + span_h:g.stride_h], out=out)
    else:
        mid = call.empty((n, g.out_h, wp, c), dtype)
        np.copyto(mid, xp[:, 0:span_h:g.stride_h], casting="unsafe")
        for k in range(1, g.filter_h):
            ufunc(mid, xp[:, k:k + span_h:g.stride_h], out=mid, casting="unsafe")
        np.copyto(out, mid[:, :, 0:span_w:g.stride_w])
        for k in range(1, g.filter_w):
            ufunc(out, mid[:, :, k:k + span_w:g.stride_w], out=out)
    call.give_back(mid)
    if xp is not x:
        call.give_back(xp)
    return out


def _in_bounds_count(call: KernelCall, g: _Geometry, h: int, w: int) -> np.ndarray | float:
    """Elements of each window inside the input, as float32 [1, OH, OW, 1], or one float when every window
    is whole (VALID, or SAME without partial windows); depends only on the geometry, so kept per operation
    and input shape when the parameters are constants."""
    def count() -> np.ndarray | float:
        pt, pb, pl, pr = g.pads
        ones = pad_spatial(np.ones((1, h, w, 1), dtype=np.int64), pt, pb, pl, pr, 0)
        per_window = extract_patches(ones, g.filter_h, g.filter_w, g.stride_h, g.stride_w, 1, 1, g.out_h,
                                     g.out_w).sum(axis=(3, 4)).astype(np.float32)
        first = float(per_window.reshape(-1)[0])
        return first if (per_window == first).all() else per_window
    return call.memo(("pool_count", h, w), range(1, call.num_inputs), count)


def _run(call: KernelCall, pool: Callable[[KernelCall, np.ndarray, _Geometry], np.ndarray]) -> list[np.ndarray]:
    """`pool(call, x, geometry)` on the NHWC input (an NCHW one transposed there and back)."""
    x = call.tensor(0)
    if x.ndim != 4:
        raise call.fail(f"input must be 4-D, got {x.ndim}-D")
    nchw = window_params(call, window.POOL_2D).nchw
    xh = nchw_to_nhwc(x) if nchw else x
    y = pool(call, xh, _geometry(call, xh.shape[1], xh.shape[2]))
    if not nchw:
        return [y]
    result = nhwc_to_nchw(y)
    call.give_back(y)  # the NHWC result was pooled scratch
    return [result]


def _quantized_average(call: KernelCall, x: np.ndarray, g: _Geometry) -> np.ndarray:
    """The reference: the integer window sum, then (acc +- count//2) / count in C integer division, i.e.
    acc / count rounded half away from zero. Here the sum is exact in float (float32 below 2**24) and the
    rounding is trunc(q + 0.5 - signbit(q)) of the float quotient q (the +0.5 and the -1 two float steps),
    the truncation being the float -> int cast after the clamp (trunc and a clamp to integers commute): a
    tie acc / count = k + 1/2 is exact in float all the way, and any other quotient lies at least
    1 / (2 count) from the nearest k + 1/2, more than the float32 error of the division and the two steps
    for |q| <= 256 (3 * 2**-17) while count <= 2**14; larger windows use float64."""
    out = call.out_operands[0]
    dtype = np.float32 if g.filter_h * g.filter_w <= 2 ** 14 else np.float64
    q = _reduce_windows(call, x, g, 0, np.add, dtype)
    # a window wholly in the padding sums to 0 and averages to 0
    np.divide(q, np.maximum(_in_bounds_count(call, g, x.shape[1], x.shape[2]), 1), out=q)
    negative = np.signbit(q) if out.dtype != np.uint8 else None  # uint8: q >= 0
    np.add(q, dtype(0.5), out=q)
    if negative is not None:
        np.subtract(q, negative, out=q)  # -0.5 in all: copysign(0.5, q) at a quarter of np.copysign's cost
    lo, hi = quantized_activation_range(g.activation, out)
    if (lo, hi) != qrange(out.type):  # an average of in-range values rounds into the range by itself
        np.clip(q, lo, hi, out=q)
    y = q.astype(out.dtype)  # truncates toward zero
    call.give_back(q)
    return y


def _average(call: KernelCall, x: np.ndarray, g: _Geometry) -> np.ndarray:
    if is_quant8(call.in_operands[0].type):
        return _quantized_average(call, x, g)
    acc = _reduce_windows(call, x, g, 0.0, np.add, np.float32)
    count = _in_bounds_count(call, g, x.shape[1], x.shape[2])
    with np.errstate(invalid="ignore", divide="ignore"):  # inf / NaN inputs and empty windows as in C
        np.divide(acc, count, out=acc)
    y = apply_float_activation(acc, g.activation).astype(call.out_operands[0].dtype, copy=False)
    if y is not acc:
        call.give_back(acc)
    return y


def _max(call: KernelCall, x: np.ndarray, g: _Geometry) -> np.ndarray:
    out = call.out_operands[0]
    if is_quant8(call.in_operands[0].type):
        # max of the stored values in their own type; the padding is the type's minimum, never above an
        # in-bounds element (a window wholly in the padding clamps to the activation's low end, as before)
        y = _reduce_windows(call, x, g, np.iinfo(x.dtype).min, np.maximum, x.dtype)
        lo, hi = quantized_activation_range(g.activation, out)
        return np.clip(y, lo, hi, out=y) if (lo, hi) != qrange(out.type) else y
    y = _reduce_windows(call, x.astype(np.float32, copy=False), g, -np.inf, np.maximum, np.float32)
    result = apply_float_activation(y, g.activation).astype(out.dtype, copy=False)
    if result is not y:  # float16: the float32 buffer goes back to the pool
        call.give_back(y)
    return result


def _l2(call: KernelCall, x: np.ndarray, g: _Geometry) -> np.ndarray:
    xf = x.astype(np.float32)
    acc = _reduce_windows(call, xf * xf, g, 0.0, np.add, np.float32)
    with np.errstate(invalid="ignore", divide="ignore"):
        y = np.sqrt(acc / _in_bounds_count(call, g, x.shape[1], x.shape[2]))
    call.give_back(acc)
    return apply_float_activation(y.astype(np.float32), g.activation).astype(call.out_operands[0].dtype)


@kernel(OperationType.AVERAGE_POOL_2D)
def average_pool_2d(call: KernelCall) -> list[np.ndarray]:
    return _run(call, _average)


@kernel(OperationType.MAX_POOL_2D)
def max_pool_2d(call: KernelCall) -> list[np.ndarray]:
    return _run(call, _max)


@kernel(OperationType.L2_POOL_2D)
def l2_pool_2d(call: KernelCall) -> list[np.ndarray]:
    if is_quant8(call.type(0)):
        raise call.fail("L2_POOL_2D takes float tensors only")
    return _run(call, _l2)
