"""Elementwise quant8 kernels through memoized tables: 256 entries for one input, 256 x 256 for two."""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Callable, Hashable

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

    def make() -> np.ndarray:
        # entry k is the result for the value whose storage byte is k (int8: k - 256 above 127), so the
        # storage bytes index the table directly
        domain = np.arange(256, dtype=np.uint8).view(x.dtype)
        return np.asarray(compute(dataclasses.replace(call, inputs=[domain, *call.inputs[1:]], cache=None)))

    table = call.memo(("quant8_table", compute.__name__), (), make)
    out = call.empty(x.shape, table.dtype)
    # mode="wrap" skips take's bounds check (bytes cannot leave 0..255): 2.5x faster than the checked gather
    np.take(table, x.view(np.uint8), out=out, mode="wrap")
    return out


# Below this many output elements a binary quant8 kernel computes directly on its first run: building its
# 65536-entry table costs about as much as computing that many elements, and a model run once (verify) would
# pay it per op.
PAIR_TABLE_MIN_ELEMENTS = 1 << 16
# From an operation's second run on (a model run repeatedly), the table also serves outputs of at least this
# many elements: the direct pipeline costs ~6 ns per element plus ~30 us per call there (NASNetMobile int8's
# 28x28x44 ADDs 210 us), the gather ~2 ns, so the one-off build is paid back within a few runs.
PAIR_TABLE_REPEAT_MIN_ELEMENTS = 1 << 12


def via_quant8_pair_table(call: "KernelCall", compute: Callable[["KernelCall"], np.ndarray],
                          key: Hashable) -> np.ndarray:
    """Applies an elementwise (q1, q2) -> q kernel on two broadcastable quant8 inputs of one type through a
    memoized 256 x 256 table indexed by the two input bytes.

    Like `via_quant8_table`: `compute` (the kernel's own integer pipeline) runs once on every pair of input
    values, so the result has its bits exactly; each run is then an index computation and a gather instead
    of a dozen int64 passes. `key` names every non-constant value `compute` reads besides inputs 0 and 1
    (the fused activation). Small outputs, and shapes that do not broadcast (`compute` reports them), are
    computed directly (`PAIR_TABLE_MIN_ELEMENTS`)."""
    a, b = call.tensor(0), call.tensor(1)
    try:
        shape = a.shape if a.shape == b.shape else np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        return compute(call)
    if a.dtype != b.dtype:
        return compute(call)
    for slot, scalar, other in ((1, b, a), (0, a, b)):
        if scalar.size == 1 and call.is_constant(slot):
            # one constant value (x * 1/6, x + 3): a unary op of the other input, 256 entries
            return _via_constant_operand(call, compute, key, slot, scalar, other, shape)
    size = math.prod(shape)
    if size < PAIR_TABLE_MIN_ELEMENTS and (size < PAIR_TABLE_REPEAT_MIN_ELEMENTS or not _ran_before(call, key)):
        return compute(call)

    def make() -> np.ndarray:
        # byte k of the table's row/column is the value whose storage byte is k (int8: k - 256 above 127)
        domain = np.arange(256, dtype=np.uint8).view(a.dtype)
        pairs = [np.repeat(domain, 256), np.tile(domain, 256)]
        return np.asarray(compute(dataclasses.replace(call, inputs=[*pairs, *call.inputs[2:]], cache=None)))

    table = call.memo(("quant8_pair_table", key), (), make)
    index = np.empty(shape, dtype=np.uint16)
    np.left_shift(a.view(np.uint8), np.uint16(8), out=index, dtype=np.uint16)
    np.bitwise_or(index, b.view(np.uint8), out=index, dtype=np.uint16)
    out = call.empty(shape, table.dtype)
    np.take(table, index, out=out, mode="wrap")  # indices are < 65536 by construction: no bounds check
    return out


def _ran_before(call: "KernelCall", key: Hashable) -> bool:
    """True when this operation ran before (its memo remembers the first run); False without a memo."""
    if call.cache is None:
        return False
    seen = ("quant8_pair_table_ran", key)
    if seen in call.cache:
        return True
    call.cache[seen] = True
    return False


def _via_constant_operand(call: "KernelCall", compute: Callable[["KernelCall"], np.ndarray], key: Hashable,
                          slot: int, scalar: np.ndarray, other: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """`compute` with the one-element constant input `slot` fixed, as a 256-entry table of the other input
    (by storage byte), memoized per operation (the constant never changes)."""

    def make() -> np.ndarray:
        domain = np.arange(256, dtype=np.uint8).view(other.dtype)
        fixed = np.broadcast_to(scalar.reshape(-1)[:1], (256,))
        inputs = [fixed, domain] if slot == 0 else [domain, fixed]
        return np.asarray(compute(dataclasses.replace(call, inputs=[*inputs, *call.inputs[2:]], cache=None)))

    table = call.memo(("quant8_constant_table", key, slot), (slot,), make)
    out = call.empty(shape, table.dtype)
    index = (other if other.shape == shape else np.broadcast_to(other, shape)).view(np.uint8)
    np.take(table, index, out=out, mode="wrap")
    return out
