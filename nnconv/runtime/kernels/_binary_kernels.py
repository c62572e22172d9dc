"""Kernel factories of the elementwise binary families whose members differ by one function: ADD, SUB and MUL
(the ufunc, the quantized pipeline), MAXIMUM and MINIMUM (the pick), LOGICAL_AND and LOGICAL_OR (the ufunc).
Each member's module is one line that registers `factory(OperationType.X, ...)`."""

from __future__ import annotations

from typing import Callable

import numpy as np

from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.nnapi.operations.arithmetic import BinarySlot
from nnconv.nnapi.quantization import is_quant8
from nnconv.runtime.kernels._elementwise import (FLOAT_TYPES, activation_code, broadcast_shape, check_same_type,
                                                 float_binary, int32_binary)
from nnconv.runtime.kernels._minmax import min_max
from nnconv.runtime.kernels._prepared_binary import prepared_float32_binary
from nnconv.runtime.kernels._prepared_quant_binary import prepared_quant8_binary
from nnconv.runtime.kernels._quant8_table import via_quant8_pair_table
from nnconv.runtime.kernels.registry import KernelCall, KernelFn, kernel

_ACTIVATION = int(BinarySlot.ACTIVATION)
# (call, fused activation) -> the quantized result of ADD / SUB / MUL (`_elementwise.quant_add`, `quant_mul`)
QuantBinary = Callable[[KernelCall, int], np.ndarray]


def arithmetic_kernel(op_type: OperationType, ufunc: np.ufunc, name: str, quant: QuantBinary) -> KernelFn:
    """Registers the kernel of ADD, SUB or MUL (`name`: "add", "sub", "mul"): under the executor the prepared
    float32 or quant8 path, else float (float16 computed in float32), quant8 through the pair table or
    `quant`, or INT32 (wrap-around, activation NONE only). Slots: `BinarySlot`."""
    def run(call: KernelCall) -> list[np.ndarray]:
        y = prepared_float32_binary(call, ufunc, _ACTIVATION)  # under the executor: the prepared path
        if y is None:
            y = prepared_quant8_binary(call, name)  # and the quant8 one, for outputs no table serves
        if y is not None:
            return [y]
        t = check_same_type(call)
        act = activation_code(call, _ACTIVATION)
        if t in FLOAT_TYPES:
            return [float_binary(call, ufunc, act)]
        if is_quant8(t):
            return [via_quant8_pair_table(call, lambda c: quant(c, act), (name, act))]
        if t is OperandType.TENSOR_INT32:
            return [int32_binary(call, ufunc, act)]
        raise call.fail(f"input 0 has unsupported type {t.name}")
    return kernel(op_type)(run)


def min_max_kernel(op_type: OperationType, pick: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> KernelFn:
    """Registers the kernel of MAXIMUM or MINIMUM: `pick(a, b)` elementwise (`_minmax.min_max`)."""
    def run(call: KernelCall) -> list[np.ndarray]:
        return [min_max(call, pick)]
    return kernel(op_type)(run)


def logical_kernel(op_type: OperationType, ufunc: np.ufunc) -> KernelFn:
    """Registers the kernel of LOGICAL_AND or LOGICAL_OR: `ufunc` of two broadcastable TENSOR_BOOL8 tensors."""
    def run(call: KernelCall) -> list[np.ndarray]:
        if check_same_type(call) is not OperandType.TENSOR_BOOL8:
            raise call.fail(f"input 0 is {call.type(0).name}; the operation takes TENSOR_BOOL8")
        a, b = call.tensor(BinarySlot.INPUT1), call.tensor(BinarySlot.INPUT2)
        broadcast_shape(call, a, b, max_rank=None)
        return [ufunc(a, b)]
    return kernel(op_type)(run)
