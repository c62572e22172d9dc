"""Fused activations of float kernels: the clamp bounds of a FuseCode and the in-place clamp."""

from __future__ import annotations

import numpy as np

from nnconv.errors import ExecutionError
from nnconv.nnapi.enums import FuseCode


def float_activation_range(code: int) -> tuple[float, float]:
    if code == FuseCode.NONE:
        return -np.inf, np.inf
    if code == FuseCode.RELU:
        return 0.0, np.inf
    if code == FuseCode.RELU1:
        return -1.0, 1.0
    if code == FuseCode.RELU6:
        return 0.0, 6.0
    raise ExecutionError(f"invalid fused activation code {code}")


def apply_float_activation(x: np.ndarray, code: int) -> np.ndarray:
    """The clamp of a FuseCode, in place when `x` is writeable. ndarray.clip rather than np.clip: the
    function's wrapper costs ~2 us per call, and convolutions clamp block by block (hundreds of calls per
    model run); np.maximum / np.minimum with a scalar bound run ~3x slower than clip's loop here."""
    lo, hi = float_activation_range(code)
    if code == FuseCode.NONE:
        return x
    return x.clip(lo, hi, out=x if x.flags.writeable else None)


def add_bias_and_activate(dest: np.ndarray, bias: np.ndarray | None, code: int) -> None:
    """The float epilogue of a convolution block, in place: + bias (per output channel, or a bias already
    tiled to `dest`'s last axis), then the fused activation's clamp."""
    if bias is not None:
        np.add(dest, bias, out=dest)
    apply_float_activation(dest, code)
