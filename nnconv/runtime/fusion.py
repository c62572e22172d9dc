"""Plan-level fusion of the executor: operation pairs that one kernel runs in a single pass over memory.

The only pattern is swish (SiLU), `MUL(x, LOGISTIC(x))`, which TFLite stores as two operations: EfficientNet-B0
has 49 of them on maps of up to 112x112x96. Fused, `x / (1 + exp(-x))` is computed into one buffer at the
MUL's place in the order and the LOGISTIC's output never exists, which saves the MUL's pass over memory and
the LOGISTIC's buffer (`nnconv.runtime.kernels.logistic.float32_swish`).

The runner fuses only when nothing can observe the intermediate or the order: no trace (per-op parity and
`run --trace` read every operation's output), no relaxed float16 simulation (which rounds the logistic to
float16 before the MUL reads it) and no kernel override of LOGISTIC or MUL (tests inject faulty kernels).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from nnconv.nnapi.enums import FuseCode, OperandLifeTime, OperandType, OperationType
from nnconv.nnapi.model import Subgraph

_L = OperandLifeTime
_FUSE_CODES = (FuseCode.NONE, FuseCode.RELU, FuseCode.RELU1, FuseCode.RELU6)


@dataclass(frozen=True)
class SwishPair:
    """A float32 `MUL(x, LOGISTIC(x))`: the two operations' indexes, x's operand and the MUL's activation
    operand (slot 2 of the MUL, a constant)."""

    logistic: int
    mul: int
    x: int
    activation: int


def swish_pairs(sg: Subgraph, constant: Callable[[int], np.ndarray]) -> list[SwishPair]:
    """The swish pairs of `sg`. `constant(operand index)` reads a constant operand's value (the MUL's fused
    activation must be a constant, valid FuseCode). The LOGISTIC's output must be a float32 temporary read
    by that MUL alone (not a subgraph output), with x, the LOGISTIC's input, as the MUL's other operand."""
    readers: dict[int, list[int]] = {}
    for k, op in enumerate(sg.operations):
        for i in op.inputs:
            readers.setdefault(i, []).append(k)
    outputs = set(sg.output_indexes)
    pairs = []
    for k, op in enumerate(sg.operations):
        if op.type is not OperationType.LOGISTIC or len(op.inputs) != 1 or len(op.outputs) != 1:
            continue
        x, s = op.inputs[0], op.outputs[0]
        users = readers.get(s, [])
        if len(users) != 1 or s in outputs or sg.operands[s].lifetime is not _L.TEMPORARY_VARIABLE:
            continue
        m = users[0]
        mul = sg.operations[m]
        if (mul.type is not OperationType.MUL or m <= k or len(mul.inputs) != 3 or len(mul.outputs) != 1
                or sorted(mul.inputs[:2]) != sorted([x, s])):
            continue
        if (any(sg.operands[i].type is not OperandType.TENSOR_FLOAT32 for i in (x, s, mul.outputs[0]))
                or sg.operands[x].lifetime is _L.NO_VALUE):
            continue
        act = mul.inputs[2]
        if sg.operands[act].lifetime not in (_L.CONSTANT_COPY, _L.CONSTANT_REFERENCE):
            continue
        code = constant(act)
        if code is None or code.size != 1 or int(code.reshape(-1)[0]) not in _FUSE_CODES:
            continue  # left to the MUL kernel, which names the invalid code
        pairs.append(SwishPair(logistic=k, mul=m, x=x, activation=act))
    return pairs
