"""PAD (NNAPI OperationType 32, API 28).

Slots: 0 input (float32/float16/quant8 asymm/signed, rank <= 4), 1 paddings (TENSOR_INT32 [rank, 2]:
before/after per dimension, non-negative). Floats pad with 0; quantized tensors pad with the output's
zero point (the reference's choice: the padded value is real 0).
"""

from __future__ import annotations

from dataclasses import dataclass

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


@dataclass(frozen=True)
class _PadPlan:
    """Where a padded output's pieces go: its shape, the border slabs taking the pad value (each dimension's
    before / after slab over the interior of the dimensions ahead of it, so no element is written twice)
    and the interior taking the input. Depends only on the input shape and the paddings operand, so kept
    per operation when the paddings are constant."""

    out_shape: tuple[int, ...]
    borders: tuple[tuple[slice, ...], ...]
    interior: tuple[slice, ...]


def _pad_plan(call: KernelCall, shape: tuple[int, ...]) -> _PadPlan:
    pairs = read_paddings(call, len(shape))
    out_shape = tuple(n + a + b for n, (a, b) in zip(shape, pairs))
    interior = tuple(slice(a, a + n) for n, (a, _b) in zip(shape, pairs))
    borders = []
    for d, (before, after) in enumerate(pairs):
        head, tail = interior[:d], (slice(None),) * (len(shape) - d - 1)
        if before:
            borders.append(head + (slice(0, before),) + tail)
        if after:
            borders.append(head + (slice(out_shape[d] - after, None),) + tail)
    return _PadPlan(out_shape, tuple(borders), interior)


def pad_constant(call: KernelCall, value: float | int) -> list[np.ndarray]:
    """The output from the buffer pool: `value` written only into the border slabs, then the (requantized)
    input copied into the interior once. np.pad fills everything and spends ~50 us of Python setup per
    call, most of a BlazeFace block's PAD (43 of them per face detector run)."""
    x = call.tensor(0)
    plan: _PadPlan = call.memo(("pad_plan", x.shape), (1,), lambda: _pad_plan(call, x.shape))
    y = requantize_to(x, call.in_operands[0], call.out_operands[0])
    out = call.empty(plan.out_shape, y.dtype)
    for border in plan.borders:
        out[border] = value
    out[plan.interior] = y
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
