"""Geometry shared by the kernels: the windowed operations' parameters, implicit padding and output sizes
of windowed ops, the im2col view, spatial padding, NCHW <-> NHWC layout, and axis normalization."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np

from nnconv.errors import ExecutionError
from nnconv.nnapi.enums import PaddingCode
from nnconv.nnapi.operations.window import WindowParams, WindowSignature

if TYPE_CHECKING:
    from nnconv.runtime.kernels.registry import KernelCall


def window_params(call: KernelCall, signature: WindowSignature) -> WindowParams:
    """A windowed operation's scalars, read once by its signature (`nnapi/operations/window.py`); memoized
    per operation when they are constants."""
    return call.memo(("window_params",), range(signature.first_scalar, call.num_inputs),
                     lambda: signature.parse(call.num_inputs, call.type, call.scalar, call.opt_scalar))


def implicit_padding(in_size: int, stride: int, filter_size: int, dilation: int, scheme: int) -> tuple[int, int]:
    """(head, tail) padding of one spatial axis for an implicit padding scheme.

    SAME: out = ceil(in / stride); the total padding is split with the smaller half first.
    """
    if scheme == PaddingCode.VALID:
        return 0, 0
    if scheme != PaddingCode.SAME:
        raise ExecutionError(f"invalid padding scheme {scheme}")
    eff = (filter_size - 1) * dilation + 1
    out = (in_size + stride - 1) // stride
    need = max((out - 1) * stride + eff - in_size, 0)
    return need // 2, need - need // 2


def conv_output_size(in_size: int, filter_size: int, stride: int, dilation: int, head: int, tail: int) -> int:
    eff = (filter_size - 1) * dilation + 1
    return (in_size - eff + stride + head + tail) // stride


def window_view(x: np.ndarray, shape: tuple[int, ...], strides: tuple[int, ...]) -> np.ndarray:
    """A read-only view of `x`'s memory from its first element with the given shape and byte strides (the
    caller keeps every element inside `x`). Over a C-contiguous `x` it is an ndarray over x's buffer (~1 us
    a call) rather than np.lib.stride_tricks.as_strided (~5 us: convolutions build one or two per call)."""
    if x.flags.c_contiguous:
        view = np.ndarray(shape, x.dtype, buffer=x, strides=strides)
        view.flags.writeable = False
        return view
    return np.lib.stride_tricks.as_strided(x, shape=shape, strides=strides, writeable=False)


def extract_patches(x: np.ndarray, kh: int, kw: int, stride_h: int, stride_w: int, dil_h: int, dil_w: int,
                    out_h: int, out_w: int) -> np.ndarray:
    """A zero-copy [N, OH, OW, KH, KW, C] view of the (already padded) NHWC input: the im2col windows."""
    n, _h, _w, c = x.shape
    s = x.strides
    return window_view(x, (n, out_h, out_w, kh, kw, c),
                       (s[0], s[1] * stride_h, s[2] * stride_w, s[1] * dil_h, s[2] * dil_w, s[3]))


def pad_spatial(x: np.ndarray, top: int, bottom: int, left: int, right: int, value: float | int = 0,
                empty: Callable[[tuple[int, ...], np.dtype], np.ndarray] = np.empty) -> np.ndarray:
    """Pads H and W of an NHWC array (negative amounts crop). Writes the interior once and only the border
    strips with `value` (np.pad costs a Python-level setup of ~50 us per call and fills everything).
    Returns `x` itself when nothing is padded; else a new array from `empty` (a kernel passes
    `call.empty` to take it from the buffer pool and gives it back after use)."""
    if top == bottom == left == right == 0:
        return x
    x = x[:, max(-top, 0): x.shape[1] - max(-bottom, 0), max(-left, 0): x.shape[2] - max(-right, 0), :]
    t, b, l, r = max(top, 0), max(bottom, 0), max(left, 0), max(right, 0)
    n, h, w, c = x.shape
    out = empty((n, h + t + b, w + l + r, c), x.dtype)
    out[:, :t] = value
    out[:, t + h:] = value
    out[:, t:t + h, :l] = value
    out[:, t:t + h, l + w:] = value
    out[:, t:t + h, l:l + w] = x
    return out


def nchw_to_nhwc(x: np.ndarray) -> np.ndarray:
    return np.transpose(x, (0, 2, 3, 1))


def nhwc_to_nchw(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.transpose(x, (0, 3, 1, 2)))


def normalize_axis(axis: int, rank: int, fail: Callable[[str], Exception]) -> int:
    """An axis in [-rank, rank) as a non-negative index; anything else raises `fail(message)`."""
    if not -rank <= axis < rank:
        raise fail(f"axis {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0


def nhwc_input(call: KernelCall, nchw_slot: int) -> tuple[np.ndarray, bool]:
    """Input 0, 4-D, as NHWC (transposed when the optional BOOL in `nchw_slot` says NCHW), and that flag."""
    x = call.tensor(0)
    if x.ndim != 4:
        raise call.fail(f"input must be 4-D, got {x.ndim}-D")
    nchw = bool(call.opt_scalar(nchw_slot, False))
    return (nchw_to_nhwc(x) if nchw else x), nchw
