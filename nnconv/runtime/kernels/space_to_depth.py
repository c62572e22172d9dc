"""SPACE_TO_DEPTH and DEPTH_TO_SPACE (NNAPI OperationType 19 / 5).

Slots: 0 input (float32/float16/quant8 asymm/signed, 4-D), 1 block size (INT32 scalar >= 1), [2 NCHW
layout BOOL, API 29]. SPACE_TO_DEPTH moves each block x block patch into depth ordered (row, column,
channel); DEPTH_TO_SPACE is its inverse.
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.quantization import requantize_to
from nnconv.runtime.kernels._spatial import nchw_to_nhwc, nhwc_to_nchw
from nnconv.runtime.kernels.registry import KernelCall, kernel


def _prepare(call: KernelCall) -> tuple[np.ndarray, int, bool]:
    x = call.tensor(0)
    if x.ndim != 4:
        raise call.fail(f"input must be 4-D, got {x.ndim}-D")
    b = int(call.scalar(1))
    if b < 1:
        raise call.fail(f"block size {b} must be positive")
    nchw = bool(call.opt_scalar(2, False))
    return (nchw_to_nhwc(x) if nchw else x), b, nchw


def _finish(call: KernelCall, y: np.ndarray, nchw: bool) -> list[np.ndarray]:
    y = requantize_to(y, call.in_operands[0], call.out_operands[0])
    return [nhwc_to_nchw(y) if nchw else y]


@kernel(OperationType.SPACE_TO_DEPTH)
def space_to_depth(call: KernelCall) -> list[np.ndarray]:
    x, b, nchw = _prepare(call)
    n, h, w, c = x.shape
    if h % b or w % b:
        raise call.fail(f"spatial size {h}x{w} is not a multiple of block size {b}")
    y = x.reshape(n, h // b, b, w // b, b, c).transpose(0, 1, 3, 2, 4, 5)
    return _finish(call, np.ascontiguousarray(y).reshape(n, h // b, w // b, b * b * c), nchw)


@kernel(OperationType.DEPTH_TO_SPACE)
def depth_to_space(call: KernelCall) -> list[np.ndarray]:
    x, b, nchw = _prepare(call)
    n, h, w, c = x.shape
    if c % (b * b):
        raise call.fail(f"depth {c} is not a multiple of block size squared {b * b}")
    y = x.reshape(n, h, w, b, b, c // (b * b)).transpose(0, 1, 3, 2, 4, 5)
    return _finish(call, np.ascontiguousarray(y).reshape(n, h * b, w * b, c // (b * b)), nchw)
