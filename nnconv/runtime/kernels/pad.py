"""PAD (NNAPI OperationType 32, API 28).

Slots: 0 input (float32/float16/quant8 asymm/signed, rank <= 4), 1 paddings (TENSOR_INT32 [rank, 2]:
before/after per dimension, non-negative). Floats pad with 0; quantized tensors pad with the output's
zero point (the reference's choice: the padded value is real 0).
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.quantization import is_quant8, requantize_to
from nnconv.runtime.kernels.registry import KernelCall, kernel


def read_paddings(call: KernelCall, rank: int, slot: int = 1) -> list[tuple[int, int]]:
    """The [rank, 2] paddings operand as (before, after) pairs; negative amounts fail."""
    p = call.tensor(slot)
    if p.size != 2 * rank:
        raise call.fail(f"paddings have shape {list(p.shape)}, expected [{rank}, 2]")
    pairs = [(int(a), int(b)) for a, b in p.reshape(rank, 2)]
    if any(a < 0 or b < 0 for a, b in pairs):
        raise call.fail(f"paddings {pairs} must be non-negative")
    return pairs


def pad_constant(call: KernelCall, value: float | int) -> list[np.ndarray]:
    """The output from the buffer pool: `value` written only into the border slabs of each dimension, then
    the (requantized) input copied into the interior once. np.pad fills everything and spends ~50 us of
    Python setup per call, most of a BlazeFace block's PAD (43 of them per face detector run)."""
    x = call.tensor(0)
    pairs = read_paddings(call, x.ndim)
    y = requantize_to(x, call.in_operands[0], call.out_operands[0])
    out = call.empty(tuple(n + a + b for n, (a, b) in zip(y.shape, pairs)), y.dtype)
    interior = tuple(slice(a, a + n) for n, (a, _b) in zip(y.shape, pairs))
    for d, (before, after) in enumerate(pairs):
        # dimensions before d: their interior only (their borders are filled by their own slabs)
        head, tail = interior[:d], (slice(None),) * (y.ndim - d - 1)
        if before:
            out[head + (slice(0, before),) + tail] = value
        if after:
            out[head + (slice(out.shape[d] - after, None),) + tail] = value
    out[interior] = y
    return [out]


@kernel(OperationType.PAD)
def pad(call: KernelCall) -> list[np.ndarray]:
    out = call.out_operands[0]
    return pad_constant(call, out.zero_point if is_quant8(out.type) else 0)


@kernel(OperationType.PAD_V2)
def pad_v2(call: KernelCall) -> list[np.ndarray]:
    """Slot 2 is the pad value: FLOAT32 / FLOAT16 for float tensors, INT32 (a quantized value) otherwise."""
    value = call.scalar(2)
    out = call.out_operands[0]
    if is_quant8(out.type):
        lo, hi = (0, 255) if out.dtype == np.uint8 else (-128, 127)
        if not lo <= int(value) <= hi:
            raise call.fail(f"pad value {value} is outside the {out.type.name} range")
    return pad_constant(call, value)
