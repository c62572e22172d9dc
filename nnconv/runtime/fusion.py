"""Plan-level fusion of the executor: operation pairs that one step runs, so that the first one's output
never exists as a tensor.

- Swish (SiLU), `MUL(x, LOGISTIC(x))`, which TFLite stores as two operations (EfficientNet-B0 has 49 of
  them on maps of up to 112x112x96): fused, `x / (1 + exp(-x))` is computed into one buffer at the MUL's
  place, which saves the MUL's pass over memory and the LOGISTIC's buffer
  (`nnconv.runtime.kernels.logistic.float32_swish`).
- A per-channel scale feeding a convolution, `CONV_2D(MUL(x, gate))` with `gate` one value per input
  channel (the squeeze-excite scale of EfficientNet and MobileNetV3): fused, the convolution runs on x with
  its filter scaled along the input channels, `conv(x * g, W) = conv(x, W * g)` (zero padding stays zero),
  so the MUL's pass over the whole map becomes one over the much smaller filter. Only where the filter is
  smaller than the map (`SCALED_FILTER_MAX_SHARE`); the sums differ from the unfused pair by float rounding
  only (each product rounds once where the pair rounds twice).

The runner fuses only when nothing can observe the intermediate or the order: no trace (per-op parity and
`run --trace` read every operation's output), no relaxed float16 simulation (which rounds each
intermediate to float16) and no kernel override of the operations involved (tests inject faulty kernels).
The fused step sits at the second operation's place; the first one's inputs stay alive until then.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Sequence

import numpy as np

from nnconv.nnapi.enums import FuseCode, OperandLifeTime, OperandType, OperationType
from nnconv.nnapi.model import Operation, Subgraph
from nnconv.runtime.kernels.logistic import float32_swish
from nnconv.runtime.kernels.registry import KernelCall

_L = OperandLifeTime
_FUSE_CODES = (FuseCode.NONE, FuseCode.RELU, FuseCode.RELU1, FuseCode.RELU6)
FUSED_TYPES = frozenset({OperationType.LOGISTIC, OperationType.MUL, OperationType.CONV_2D})

# The scaled filter (O*KH*KW*C values) costs a pass like the MUL's over the map (N*H*W*C values) but also
# a fresh filter matrix for the convolution every run: fused only while it is at most half the map.
SCALED_FILTER_MAX_SHARE = 0.5


@dataclass(frozen=True)
class Fusion:
    """One step in place of two operations: `first` (absorbed: never runs as itself, its output never
    exists) and `second` (the step's place in the order and its outputs). The step's kernel `fn` reads
    `inputs` (operand indexes) in that order; `name` is what the profile calls it."""

    first: int
    second: int
    inputs: tuple[int, ...]
    fn: Callable[[KernelCall], list[np.ndarray]]
    name: str


def plan_fusions(sg: Subgraph, constant: Callable[[int], np.ndarray | None],
                 conv_kernel: Callable[[KernelCall], list[np.ndarray]]) -> list[Fusion]:
    """The fusions of `sg`, no operation in two of them. `constant(operand index)` reads a constant
    operand's value; `conv_kernel` is the CONV_2D kernel the scaled-filter step calls."""
    readers: dict[int, list[int]] = {}
    for k, op in enumerate(sg.operations):
        for i in op.inputs:
            readers.setdefault(i, []).append(k)
    outputs = set(sg.output_indexes)

    def only_reader(operand: int) -> int | None:
        """The one operation reading `operand`, a temporary that is not a subgraph output, else None."""
        users = readers.get(operand, [])
        if len(users) != 1 or operand in outputs or sg.operands[operand].lifetime is not _L.TEMPORARY_VARIABLE:
            return None
        return users[0]

    def constant_code(operand: int) -> int | None:
        """A constant INT32 scalar's value (a FuseCode or a layout flag), else None."""
        if sg.operands[operand].lifetime not in (_L.CONSTANT_COPY, _L.CONSTANT_REFERENCE):
            return None
        v = constant(operand)
        return None if v is None or v.size != 1 else int(v.reshape(-1)[0])

    def float32(*operands: int) -> bool:
        return all(sg.operands[i].type is OperandType.TENSOR_FLOAT32 for i in operands)

    fusions: list[Fusion] = []
    taken: set[int] = set()
    for k, op in enumerate(sg.operations):
        if k in taken or len(op.outputs) != 1:
            continue
        m = only_reader(op.outputs[0])
        if m is None or m <= k or m in taken:
            continue
        second = sg.operations[m]
        fusion = (_swish(sg, k, op, m, second, float32, constant_code)
                  or _scaled_conv(sg, k, op, m, second, float32, constant_code, conv_kernel))
        if fusion is not None:
            fusions.append(fusion)
            taken.update((k, m))
    return fusions


def _swish(sg: Subgraph, k: int, op: Operation, m: int, mul: Operation, float32, constant_code) -> Fusion | None:
    """LOGISTIC(x) -> s, MUL(x, s) or MUL(s, x) with a valid constant activation, all float32."""
    if (op.type is not OperationType.LOGISTIC or mul.type is not OperationType.MUL or len(op.inputs) != 1
            or len(mul.inputs) != 3 or len(mul.outputs) != 1):
        return None
    x, s = op.inputs[0], op.outputs[0]
    if (sorted(mul.inputs[:2]) != sorted([x, s]) or not float32(x, s, mul.outputs[0])
            or sg.operands[x].lifetime is _L.NO_VALUE):
        return None
    if constant_code(mul.inputs[2]) not in _FUSE_CODES:
        return None  # left to the MUL kernel, which names the invalid code
    return Fusion(first=k, second=m, inputs=(x, mul.inputs[2]), fn=float32_swish, name="LOGISTIC+MUL")


def _scaled_conv(sg: Subgraph, k: int, mul: Operation, m: int, conv: Operation, float32, constant_code,
                 conv_kernel) -> Fusion | None:
    """MUL(x, g) -> h (activation NONE; g one value per channel of x) read only as CONV_2D's input 0, an
    NHWC float32 convolution whose filter is at most SCALED_FILTER_MAX_SHARE of x's size."""
    if (mul.type is not OperationType.MUL or conv.type is not OperationType.CONV_2D or len(mul.inputs) != 3
            or len(conv.inputs) < 7 or conv.inputs[0] != mul.outputs[0] or mul.outputs[0] in conv.inputs[1:]):
        return None
    a, b = mul.inputs[:2]
    x, gate = (a, b) if sg.operands[a].dimensions == sg.operands[mul.outputs[0]].dimensions else (b, a)
    xd, gd, wd = sg.operands[x].dimensions, sg.operands[gate].dimensions, sg.operands[conv.inputs[1]].dimensions
    if (not float32(x, gate, conv.inputs[1], mul.outputs[0], conv.outputs[0]) or len(xd) != 4 or len(wd) != 4
            or not all(d > 0 for d in (*xd, *gd, *wd)) or xd != sg.operands[mul.outputs[0]].dimensions
            or any(d != 1 for d in gd[:-1]) or not gd or gd[-1] != xd[-1] or wd[-1] != xd[-1]):
        return None
    if constant_code(mul.inputs[2]) != FuseCode.NONE or _conv_is_nchw(sg, conv, constant_code):
        return None
    if np.prod(wd) > SCALED_FILTER_MAX_SHARE * np.prod(xd):
        return None
    return Fusion(first=k, second=m, inputs=(x, gate, *conv.inputs[1:]), fn=_scaled_filter_conv(conv_kernel),
                  name="MUL+CONV_2D")


def _conv_is_nchw(sg: Subgraph, conv: Operation, constant_code) -> bool:
    """CONV_2D's layout flag: slot 10 in the explicit-padding form (slot 7 holds an INT32 stride there),
    slot 7 in the implicit one; absent means NHWC. A non-constant flag counts as NCHW (not fused)."""
    n = len(conv.inputs)
    explicit = n >= 10 and sg.operands[conv.inputs[7]].type is OperandType.INT32
    slot = 10 if explicit else 7
    return n > slot and constant_code(conv.inputs[slot]) != 0


def _scaled_filter_conv(conv_kernel: Callable[[KernelCall], list[np.ndarray]]
                        ) -> Callable[[KernelCall], list[np.ndarray]]:
    """The fused step's kernel. Slots: 0 x, 1 gate (one value per channel), 2.. the CONV_2D's slots 1.. .
    It calls the CONV_2D kernel on x with the filter times the gate along its last (input channel) axis;
    the filter's operand is described to it as a temporary, so that nothing derived from the scaled filter
    is kept from run to run."""

    def run(call: KernelCall) -> list[np.ndarray]:
        inner = call.cache.get("scaled_conv_call") if call.cache is not None else None
        if inner is None:
            in_operands: Sequence = [call.in_operands[0],
                                     replace(call.in_operands[2], lifetime=_L.TEMPORARY_VARIABLE),
                                     *call.in_operands[3:]]
            inner = KernelCall(operation=call.operation, inputs=[], in_operands=list(in_operands),
                               out_operands=call.out_operands, runner=call.runner, cache=call.cache)
            if call.cache is not None:
                call.cache["scaled_conv_call"] = inner
        gate = call.tensor(1).reshape(-1)
        inner.inputs = [call.tensor(0), call.tensor(2) * gate, *call.inputs[3:]]
        try:
            return conv_kernel(inner)
        finally:
            inner.inputs = []

    return run
