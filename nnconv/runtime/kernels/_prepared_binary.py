"""Float32 ADD / SUB / MUL / DIV prepared once per operation.

The general path (`_elementwise.float_binary`) re-derives on every call what cannot change between runs
of one operation: the operand types, the fused activation, the broadcast shape, its error state (~4 us of
Python a call, most of an operation on a few hundred values: residual ADDs of MobileNets' 7x7 blocks,
the 2x2..8x8 maps of MediaPipe's landmark heads). Under the executor (an operation with a cache and a
constant activation) those are read on the first call; each run is then the ufunc into a buffer of the
output's shape and the clamp. Same ufunc, same clamp (`apply_float_activation`'s): the same bits as the
general path. The executor runs kernels with numpy's floating-point errors silenced (inf and NaN are the
operations' defined results), so no error state is set here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nnconv.nnapi.enums import FuseCode, OperandType
from nnconv.runtime.kernels._float_activation import float_activation_range
from nnconv.runtime.kernels.registry import KernelCall

CACHE_KEY = "float32_binary"
_F32 = np.dtype(np.float32)


@dataclass(frozen=True)
class PreparedBinary:
    a_shape: tuple[int, ...]
    b_shape: tuple[int, ...]
    out_shape: tuple[int, ...]
    clamp: tuple[float, float] | None  # the fused activation's bounds; None for FuseCode NONE


def prepared_float32_binary(call: KernelCall, ufunc: np.ufunc, activation_slot: int | None) -> np.ndarray | None:
    """ufunc(input 0, input 1) then the fused activation in slot `activation_slot` (None: no activation
    slot), when the operation is prepared for these inputs; None sends the call to the general path (no
    cache, another type or shape, a non-constant activation, shapes that do not broadcast: the general
    path then reports them)."""
    cache = call.cache
    if cache is None:
        return None
    prepared = cache.get(CACHE_KEY)
    if prepared is None:
        prepared = cache[CACHE_KEY] = _prepare(call, activation_slot)
    if prepared is False:
        return None
    a, b = call.inputs[0], call.inputs[1]
    if (a.__class__ is not np.ndarray or b.__class__ is not np.ndarray or a.shape != prepared.a_shape
            or b.shape != prepared.b_shape or a.dtype != _F32 or b.dtype != _F32):
        return None
    out = call.empty(prepared.out_shape, _F32)
    ufunc(a, b, out=out)
    if prepared.clamp is not None:
        out.clip(*prepared.clamp, out=out)
    return out


def _prepare(call: KernelCall, activation_slot: int | None) -> PreparedBinary | bool:
    """The operation's run-invariant facts, or False when it must take the general path for good."""
    if len(call.inputs) < 2 or call.inputs[0] is None or call.inputs[1] is None:
        return False
    if not (len(call.in_operands) >= 2 and call.in_operands[0] is not None and call.in_operands[1] is not None
            and call.in_operands[0].type is OperandType.TENSOR_FLOAT32
            and call.in_operands[1].type is OperandType.TENSOR_FLOAT32
            and call.out_operands and call.out_operands[0].type is OperandType.TENSOR_FLOAT32):
        return False
    code = FuseCode.NONE
    if activation_slot is not None:
        if not (call.has(activation_slot) and call.is_constant(activation_slot)):
            return False
        code = int(call.scalar(activation_slot))
        if code not in (FuseCode.NONE, FuseCode.RELU, FuseCode.RELU1, FuseCode.RELU6):
            return False  # the general path reports the invalid code
    a, b = call.inputs[0], call.inputs[1]
    if a.ndim > 4 or b.ndim > 4:
        return False
    try:
        shape = tuple(np.broadcast_shapes(a.shape, b.shape))
    except ValueError:
        return False
    return PreparedBinary(a.shape, b.shape, shape,
                          None if code == FuseCode.NONE else float_activation_range(code))
