"""Elementwise quant8 -> quant8 kernels through a memoized 256-entry table."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Callable

import numpy as np

if TYPE_CHECKING:
    from nnconv.runtime.kernels.registry import KernelCall


def via_quant8_table(call: "KernelCall", compute: Callable[["KernelCall"], np.ndarray]) -> np.ndarray:
    """Applies an elementwise quant8 -> quant8 kernel through a 256-entry table.

    An 8-bit input has only 256 possible values, so `compute` (the kernel's own fixed-point arithmetic) is
    run once on all of them, with input 0 replaced, and each run is then one gather: the same bits, without
    redoing the integer pipeline per element. The table depends only on the operands' static quantization
    parameters, so it is memoized per operation."""
    x = call.tensor(0)
    signed = x.dtype == np.int8

    def make() -> np.ndarray:
        domain = (np.arange(-128, 128) if signed else np.arange(256)).astype(x.dtype)
        return np.asarray(compute(dataclasses.replace(call, inputs=[domain, *call.inputs[1:]], cache=None)))

    table = call.memo(("quant8_table", compute.__name__), (), make)
    return table[x.view(np.uint8) ^ np.uint8(0x80) if signed else x]
