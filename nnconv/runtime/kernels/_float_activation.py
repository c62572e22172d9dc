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
    lo, hi = float_activation_range(code)
    if code == FuseCode.NONE:
        return x
    return np.clip(x, lo, hi, out=x if x.flags.writeable else None)


def add_bias_and_activate(dest: np.ndarray, bias: np.ndarray | None, code: int) -> None:
    """The float epilogue of a convolution block, in place: + bias (per output channel), then the fused
    activation's clamp."""
    if bias is not None:
        dest += bias
    apply_float_activation(dest, code)
