"""RESIZE_BILINEAR (NNAPI OperationType 23). Slots: see `_resize` (input, width, height[, NCHW]
[, align_corners, half_pixel_centers]).

Types: float32, float16 (computed in float32), quant8 asymm / signed (API 29 / 30). NNAPI's reference CPU
(AOSP `packages/modules/NeuralNetworks` `common/cpu_operations/ResizeImageOps.cpp`, `frameworks/ml`
`nn/common/operations/ResizeImageOps.cpp` before it) calls TFLite's float template
`tflite::reference_ops::ResizeBilinear<T>` for every type, int8 and uint8 included, never TFLite's integer
`ResizeBilinearInteger` (which TFLite's own int8 kernels, builtin and reference, use). That template:
source position src = (x + 0.5) * scale - 0.5 with half_pixel_centers, else x * scale;
x0 = max(floor(src), 0), x1 = min(ceil(src), in - 1); the four neighbours are weighted with (src - x0) in
float32 (negative at a half-pixel border, where x0 == x1 and the two weights still sum to 1) and summed left
to right; for integer T it adds a rounding offset of 0.5 and converts with static_cast<T>, which truncates
toward zero (TensorFlow's `reference/resize_bilinear.h`, the version the NNAPI module builds against since
it includes `runtime_shape.h`). So quantized results keep the input's quantization, uint8 ones round half
up, and int8 ones below -0.5 come out one step above the nearest integer. TFLite's int8 kernels differ from
that by their Q10 positions too, which drift by up to one position step per 2048 output steps (docs/verify.md:
a 33x33 -> 257x257 resize of random int8 values, 44 LSB apart); `verify` proves such a difference is this
arithmetic alone by computing the op TFLite's way (nnconv/parity/tflite_resize.py, parity/settle.py).

Speed: the per-axis indices and weights depend only on the geometry and are kept per operation. Float is
computed separably (interpolate along one axis, then the other, the smaller intermediate first): two
gathers, two scalings and a sum per axis instead of four full-size corner products. That reorders the
float32 arithmetic of the reference's four-term sum (a few ulp, far inside the float tolerance; an inf or
NaN still spreads to exactly the outputs whose interpolation reads it with a nonzero weight, or becomes
NaN under a zero weight as in the reference). Quantized keeps the four-term sum operation for operation,
so its rounding is unchanged; only the gathers are shared (rows first, then columns).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.quantization import is_quant8, qrange
from nnconv.runtime.kernels._resize import parse_resize, resize_scale
from nnconv.runtime.kernels._spatial import nhwc_to_nchw
from nnconv.runtime.kernels.registry import KernelCall, kernel


@dataclass(frozen=True)
class _Axis:
    """Interpolation of one axis: per output coordinate its two source indices and their weights."""

    lo: np.ndarray  # intp, max(floor(src), 0)
    hi: np.ndarray  # intp, min(ceil(src), in - 1)
    w_lo: np.ndarray  # float32, 1 - (src - lo)
    w_hi: np.ndarray  # float32, src - lo


def _axis(out_size: int, in_size: int, align: bool, half: bool) -> _Axis:
    scale = resize_scale(in_size, out_size, align)
    pos = np.arange(out_size, dtype=np.float32)
    src = ((pos + np.float32(0.5)) * scale - np.float32(0.5)) if half else pos * scale
    src = src.astype(np.float32)
    lo = np.maximum(np.floor(src).astype(np.intp), 0)
    hi = np.minimum(np.ceil(src).astype(np.intp), in_size - 1)
    frac = (src - lo.astype(np.float32)).astype(np.float32)
    return _Axis(lo, hi, (np.float32(1) - frac).astype(np.float32), frac)


@dataclass(frozen=True)
class _Plan:
    rows: _Axis
    cols: _Axis
    # the column weights repeated over the channels, [1, OW*C]: a multiply over [rows, OW*C] runs one
    # contiguous broadcast, where numpy's [.., OW, C] x [OW, 1] broadcast is ~6x slower for small C
    col_w_lo: np.ndarray
    col_w_hi: np.ndarray


def _plan(shape: tuple[int, ...], out_h: int, out_w: int, align: bool, half: bool) -> _Plan:
    _n, h, w, c = shape
    cols = _axis(out_w, w, align, half)
    return _Plan(_axis(out_h, h, align, half), cols,
                 np.repeat(cols.w_lo, c).reshape(1, out_w * c), np.repeat(cols.w_hi, c).reshape(1, out_w * c))


def _lerp_rows(call: KernelCall, x: np.ndarray, ax: _Axis, out: np.ndarray) -> np.ndarray:
    """out[:, i] = x[:, lo[i]] * w_lo[i] + x[:, hi[i]] * w_hi[i] along axis 1 of NHWC `x` (whole rows)."""
    n, oh, inner = out.shape[0], out.shape[1], out.shape[2] * out.shape[3]  # explicit: N may be 0
    np.take(x, ax.lo, axis=1, out=out, mode="clip")  # indices are in range; "clip" lets take write `out` unbuffered
    other = call.empty(out.shape, np.float32)
    np.take(x, ax.hi, axis=1, out=other, mode="clip")
    flat, other_flat = out.reshape(n, oh, inner), other.reshape(n, oh, inner)
    np.multiply(flat, ax.w_lo[None, :, None], out=flat)
    np.multiply(other_flat, ax.w_hi[None, :, None], out=other_flat)
    np.add(flat, other_flat, out=flat)
    call.give_back(other)
    return out


def _lerp_cols(call: KernelCall, x: np.ndarray, plan: _Plan, out: np.ndarray) -> np.ndarray:
    """out[:, :, j] = x[:, :, lo[j]] * w_lo[j] + x[:, :, hi[j]] * w_hi[j] along axis 2 of NHWC `x`."""
    rows, inner = out.shape[0] * out.shape[1], out.shape[2] * out.shape[3]
    np.take(x, plan.cols.lo, axis=2, out=out, mode="clip")
    other = call.empty(out.shape, np.float32)
    np.take(x, plan.cols.hi, axis=2, out=other, mode="clip")
    flat, other_flat = out.reshape(rows, inner), other.reshape(rows, inner)
    np.multiply(flat, plan.col_w_lo, out=flat)
    np.multiply(other_flat, plan.col_w_hi, out=other_flat)
    np.add(flat, other_flat, out=flat)
    call.give_back(other)
    return out


def _float(call: KernelCall, x: np.ndarray, plan: _Plan, out_h: int, out_w: int) -> np.ndarray:
    """Separable float32 interpolation, the axis whose pass leaves the smaller intermediate first."""
    n, h, w, c = x.shape
    out = call.empty((n, out_h, out_w, c), np.float32)
    if out_h * w < h * out_w:
        mid = _lerp_rows(call, x, plan.rows, call.empty((n, out_h, w, c), np.float32))
        _lerp_cols(call, mid, plan, out)
    else:
        mid = _lerp_cols(call, x, plan, call.empty((n, h, out_w, c), np.float32))
        _lerp_rows(call, mid, plan.rows, out)
    call.give_back(mid)
    return out


def _quantized(call: KernelCall, x: np.ndarray, plan: _Plan, out_h: int, out_w: int) -> np.ndarray:
    """The reference's float32 expression, in C++'s order: (((A*wy0)*wx0 + (B*wy1)*wx0) + (C*wy0)*wx1) +
    (D*wy1)*wx1, then + 0.5 and a conversion toward zero (module docstring); rows are gathered and scaled once
    ([N, OH, W, C]) and each column product is one gather and one multiply."""
    n, _h, w, c = x.shape
    rows, cols = plan.rows, plan.cols
    xf = x.astype(np.float32)
    top, bottom = (call.empty((n, out_h, w, c), np.float32) for _ in range(2))
    np.take(xf, rows.lo, axis=1, out=top, mode="clip")
    np.take(xf, rows.hi, axis=1, out=bottom, mode="clip")
    np.multiply(top, rows.w_lo[None, :, None, None], out=top)  # A * wy0 (and C * wy0)
    np.multiply(bottom, rows.w_hi[None, :, None, None], out=bottom)  # B * wy1 (and D * wy1)
    terms = [call.empty((n, out_h, out_w, c), np.float32) for _ in range(4)]
    for term, src, idx, weight in ((terms[0], top, cols.lo, plan.col_w_lo), (terms[1], bottom, cols.lo, plan.col_w_lo),
                                   (terms[2], top, cols.hi, plan.col_w_hi), (terms[3], bottom, cols.hi, plan.col_w_hi)):
        np.take(src, idx, axis=2, out=term, mode="clip")
        flat = term.reshape(n * out_h, out_w * c)
        np.multiply(flat, weight, out=flat)
    y = terms[0]
    for term in terms[1:]:  # left to right, as C++ sums a + b + c + d
        np.add(y, term, out=y)
    for scratch in (top, bottom, *terms[1:]):
        call.give_back(scratch)
    lo, hi = qrange(call.out_operands[0].type)
    # static_cast<T>(sum + 0.5f): the float32 sum with the rounding offset, converted toward zero. For uint8
    # (sums >= 0) that rounds half up; an int8 sum below -0.5 comes out one step above its nearest integer
    # (-2.7 -> -2, an exact -3 -> -2), where TFLite's own int8 kernel rounds to nearest in Q10 integers.
    np.trunc(np.add(y, np.float32(0.5), out=y), out=y)
    np.clip(y, lo, hi, out=y)
    result = y.astype(call.out_operands[0].dtype)
    call.give_back(y)
    return result


@kernel(OperationType.RESIZE_BILINEAR)
def resize_bilinear(call: KernelCall) -> list[np.ndarray]:
    p = parse_resize(call)
    x = p.x
    plan: _Plan = call.memo(("resize_bilinear", x.shape), range(1, call.num_inputs),
                            lambda: _plan(x.shape, p.out_h, p.out_w, p.align_corners, p.half_pixel))
    out = call.out_operands[0]
    if is_quant8(call.type(0)):
        y = _quantized(call, x, plan, p.out_h, p.out_w)
    else:
        with np.errstate(invalid="ignore", over="ignore"):  # inf / NaN results are the defined float behaviour
            y = _float(call, x if x.dtype == np.float32 else x.astype(np.float32), plan, p.out_h, p.out_w)
        if out.dtype != np.float32:
            y16 = y.astype(out.dtype)
            call.give_back(y)
            y = y16
    if p.nchw:
        nchw = nhwc_to_nchw(y)
        call.give_back(y)
        return [nchw]
    return [y]
