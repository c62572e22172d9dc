"""Quant8 ADD / SUB / MUL prepared once per operation, for the outputs the byte tables never serve.

Below `PAIR_TABLE_REPEAT_MIN_ELEMENTS` output values, and without a one-element constant input (a 256-entry
table serves that one), `via_quant8_pair_table` runs the kernel's own pipeline on every call, and each call
re-derives what cannot change between runs: the operand types, the fused activation, the broadcast shape,
the table decision, the memoized plan (~25 us of Python, more than the arithmetic of an EfficientNet or
MobileNetV3 squeeze-excite gate: 52 such MULs in the zoo's int8 EfficientNet). Under the executor (an
operation with a cache, a constant activation) those are read on the first call; a run is the general
path's own arithmetic on the same memoized plan: `quant_add`'s two table gathers and their sum, or
`quant_mul`'s centered float32 product, then the plan's `Requantizer`. Same steps, same bits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from nnconv.errors import ExecutionError
from nnconv.nnapi.enums import FuseCode
from nnconv.nnapi.model import Operand
from nnconv.nnapi.quantization import Requantizer, is_quant8
from nnconv.runtime.kernels._elementwise import add_plan, mul_plan, requantize_flat
from nnconv.runtime.kernels._quant8_table import PAIR_TABLE_REPEAT_MIN_ELEMENTS
from nnconv.runtime.kernels.registry import KernelCall

CACHE_KEY = "quant8_binary"


@dataclass(frozen=True)
class PreparedQuant8Binary:
    a_shape: tuple[int, ...]
    b_shape: tuple[int, ...]
    dtype: np.dtype  # of both inputs' storage
    run: Callable[[np.ndarray, np.ndarray], np.ndarray]


def prepared_quant8_binary(call: KernelCall, kind: str, activation_slot: int = 2) -> np.ndarray | None:
    """ADD (`kind` "add"), SUB ("sub") or MUL ("mul") of quant8 inputs 0 and 1 when the operation is
    prepared for these inputs; None sends the call to the general path (no cache, another type or shape,
    an output the tables serve, a plan the general path refuses: it then reports it)."""
    cache = call.cache
    if cache is None:
        return None
    prepared = cache.get(CACHE_KEY)
    if prepared is None:
        prepared = cache[CACHE_KEY] = _prepare(call, kind, activation_slot)
    if prepared is False:
        return None
    a, b = call.inputs[0], call.inputs[1]
    if (a.__class__ is not np.ndarray or b.__class__ is not np.ndarray or a.shape != prepared.a_shape
            or b.shape != prepared.b_shape or a.dtype != prepared.dtype or b.dtype != prepared.dtype):
        return None
    return prepared.run(a, b)


def _prepare(call: KernelCall, kind: str, activation_slot: int) -> PreparedQuant8Binary | bool:
    """The operation's run-invariant facts, or False when it takes the general path for good."""
    ods = call.in_operands
    if (len(call.inputs) < 2 or len(ods) < 2 or ods[0] is None or ods[1] is None or not call.out_operands
            or not is_quant8(ods[0].type) or ods[1].type is not ods[0].type
            or call.out_operands[0].type is not ods[0].type):
        return False
    if not (call.has(activation_slot) and call.is_constant(activation_slot)):
        return False
    act = int(call.scalar(activation_slot))
    if act not in (FuseCode.NONE, FuseCode.RELU, FuseCode.RELU1, FuseCode.RELU6):
        return False
    a, b = call.inputs[0], call.inputs[1]
    if (a is None or b is None or a.dtype != ods[0].dtype or b.dtype != ods[0].dtype or a.ndim > 4 or b.ndim > 4
            or any(x.size == 1 and call.is_constant(slot) for slot, x in ((0, a), (1, b)))):
        return False
    try:
        shape = tuple(np.broadcast_shapes(a.shape, b.shape))
    except ValueError:
        return False
    if math.prod(shape) >= PAIR_TABLE_REPEAT_MIN_ELEMENTS:
        return False
    out = call.out_operands[0]
    try:
        run = _mul(call, act, out, shape) if kind == "mul" else _add(call, act, out, kind == "sub", shape)
    except ExecutionError:
        return False  # the general path raises it again, on this call
    return False if run is None else PreparedQuant8Binary(a.shape, b.shape, a.dtype, run)


def _mul(call: KernelCall, act: int, out: Operand,
         shape: tuple[int, ...]) -> Callable[[np.ndarray, np.ndarray], np.ndarray] | None:
    od1, od2 = call.in_operands[0], call.in_operands[1]
    _m, _sh, rq = call.memo(("quant_mul", act), (), lambda: mul_plan(call, od1, od2, out, act))
    if rq is None:
        return None
    zp1, zp2 = np.float32(od1.zero_point), np.float32(od2.zero_point)
    requantize = _flat_requantizer(rq, out, shape)

    def run(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return requantize(np.subtract(a, zp1, dtype=np.float32) * np.subtract(b, zp2, dtype=np.float32))
    return run


def _add(call: KernelCall, act: int, out: Operand, subtract: bool,
         shape: tuple[int, ...]) -> Callable[[np.ndarray, np.ndarray], np.ndarray] | None:
    od1, od2 = call.in_operands[0], call.in_operands[1]
    plan = call.memo(("quant_add", act, subtract), (), lambda: add_plan(od1, od2, out, act, subtract))
    if plan is None:
        return None
    t1, t2 = plan.table1, plan.table2
    requantize = _flat_requantizer(plan.requantizer, out, shape)

    def run(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        total = np.take(t1, a.view(np.uint8), mode="wrap")
        second = np.take(t2, b.view(np.uint8), mode="wrap")
        if total.shape == shape:
            total += second
        else:
            total = total + second
        return requantize(total)
    return run


def _flat_requantizer(rq: Requantizer, out: Operand, shape: tuple[int, ...]) -> Callable[[np.ndarray], np.ndarray]:
    """`requantize_flat(rq, acc, out)` for accumulators of `shape`: the float requantizer bound to that size
    where it takes it (`FloatRequantizer.bind`: the same passes without the per-call dispatch)."""
    bound = rq.fast.bind(math.prod(shape)) if rq.fast is not None else None
    if bound is None:
        return lambda acc: requantize_flat(rq, acc, out)

    def requantize(acc: np.ndarray) -> np.ndarray:
        y = np.empty(acc.shape, dtype=out.dtype)
        bound(acc.reshape(-1, 1), y.reshape(-1, 1))
        return y
    return requantize
