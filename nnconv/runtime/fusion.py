"""Plan-level fusion of the executor: operations that one step runs, so that the absorbed operations'
outputs never exist as tensors.

- Swish (SiLU), `MUL(x, LOGISTIC(x))`, which TFLite stores as two operations (EfficientNet-B0 has 49 of
  them on maps of up to 112x112x96): fused, `x / (1 + exp(-x))` is computed into one buffer at the MUL's
  place, which saves the MUL's pass over memory and the LOGISTIC's buffer
  (`nnconv.runtime.kernels.logistic.float32_swish`).
- A byte function: elementwise operations (`BYTE_OPS`) whose values all derive from one quant8 tensor x and
  one-value constants, ending in a quant8 output, are a function of x's byte alone: one gather from a
  256-entry table that the operations' own kernels fill once, with the chain's bits exactly
  (`nnconv.runtime.fused_kernels.byte_function`). EfficientNet-B0 int8 has 34 quant8 swishes
  `MUL(x, LOGISTIC(x))` and 17 sigmoids that its lowering sends through float, DEQUANTIZE -> LOGISTIC ->
  QUANTIZE (15 of them then a swish MUL: four operations, one gather); a quant8 MUL + ADD by one-value
  constants is one too.
- A per-channel scale feeding a convolution, `CONV_2D(MUL(x, gate))` with `gate` one value per input
  channel (the squeeze-excite scale of EfficientNet and MobileNetV3): fused, the convolution runs on x with
  its filter scaled along the input channels, `conv(x * g, W) = conv(x, W * g)` (zero padding stays zero),
  so the MUL's pass over the whole map becomes one over the smaller filter. Only where the filter is
  not larger than the map (`SCALED_FILTER_MAX_SHARE`); the sums differ from the unfused pair by float
  rounding only (each product rounds once where the pair rounds twice).
- The operation computing such a gate, a LOGISTIC or a MUL by a one-value constant (MobileNetV3's hard
  sigmoid) read by that MUL alone, is absorbed too: the step computes the gate (C values) itself, which
  saves an operation's fixed cost per squeeze-excite block (`nnconv.runtime.fused_kernels`).
- Affine, `ADD(MUL(x, scale), shift)` with constant scale and shift (DenseNet-121's 120 batch
  normalizations, the input scaling of MobileNets): the ADD and its activation run in place in the MUL's
  product, the same arithmetic without a second buffer. Quant8 (DenseNet-121 int8's 64 of them, scale and
  shift one value or one per channel): one gather from a [channel, input byte] table that the MUL and ADD
  kernels themselves fill once, so the pair's bits exactly (`nnconv.runtime.fused_kernels.quant8_affine`).
- A standalone activation after the operation producing its input, `RELU / RELU1 / RELU6 / PRELU` of an
  ADD, CONV_2D or DEPTHWISE_CONV_2D (MediaPipe's face and palm detectors and landmark models keep 17-53 of
  them, TFLite not having fused them: PRELU has no fused form, and their RELUs follow residual ADDs): the
  activation runs in place on the producer's fresh output, which saves its buffer, its operation's fixed
  cost and a pass over memory. The same kernels compute the same bits (`nnconv.runtime.fused_kernels`);
  the producer's own activation slot is not used, because a fused clamp keeps NaN and -0.0 where the
  standalone RELU's std::max(lo, x) gives lo and +0.0. The NNAPI graph itself stays as lowered.

The runner fuses only when nothing can observe the intermediates or the order: no trace (per-op parity and
`run --trace` read every operation's output), no relaxed float16 simulation (which rounds each
intermediate to float16) and no kernel override of the operations involved (tests inject faulty kernels).
The fused step sits at the last operation's place; the absorbed ones' inputs stay alive until then.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np

from nnconv.nnapi.enums import FuseCode, OperandLifeTime, OperandType, OperationType
from nnconv.nnapi.model import Operation, Subgraph
from nnconv.nnapi.operations import SPECS, operations_where, window
from nnconv.nnapi.operations.arithmetic import BinarySlot
from nnconv.nnapi.operations.window import ConvImplicitSlot as ConvSlot
from nnconv.runtime.fused_kernels import (Kernel, affine, clamp_epilogue, gated_mul, prelu_epilogue,
                                          byte_function, quant8_affine,
                                          scaled_filter_conv, with_epilogue)
from nnconv.runtime.kernels.logistic import float32_swish

_L = OperandLifeTime
_FUSE_CODES = (FuseCode.NONE, FuseCode.RELU, FuseCode.RELU1, FuseCode.RELU6)
_ACTIVATION = BinarySlot.ACTIVATION  # ADD / MUL's fused activation slot
_QUANT8 = (OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED)
_O = OperationType
# the standalone clamps and their FuseCode (`OperationSpec.fused_as`)
_CLAMPS = {op: spec.fused_as for op, spec in SPECS.items() if spec.fused_as is not None}
# The producers whose output a standalone activation may finish in place (the fused kernels' epilogues).
EPILOGUE_PRODUCERS = frozenset({_O.ADD, _O.CONV_2D, _O.DEPTHWISE_CONV_2D})
# Elementwise operations whose output element depends on the same element of their inputs only (and on
# one-value constants), with the input's shape (`OperationSpec.byte_op`): a chain of them from one quant8
# tensor is a byte function.
BYTE_OPS = operations_where(lambda spec: spec.byte_op)
# Every operation some fused step absorbs: the patterns' members (swish, squeeze-excite, affine, epilogues).
FUSED_TYPES = frozenset({_O.LOGISTIC, _O.MUL, _O.CONV_2D, _O.ADD, _O.DEPTHWISE_CONV_2D, _O.PRELU, *_CLAMPS, *BYTE_OPS})

# The scaled filter (O*KH*KW*C values) costs a pass like the MUL's over the map (N*H*W*C values) but also
# a fresh filter matrix for the convolution every run: fused only while it is no larger than the map.
# Measured per pair in situ: 112x112x32 -> 16 666 -> 395 us (share 0.002), 14x14x672 -> 112 460 -> 445 us
# (share 0.57).
SCALED_FILTER_MAX_SHARE = 1.0


@dataclass(frozen=True)
class Fusion:
    """One step in place of several operations: `absorbed` (never run as themselves, their outputs never
    exist) and `at` (the step's place in the order and its outputs). The step's kernel `fn` reads `inputs`
    (operand indexes) in that order; `name` is what the profile calls it."""

    absorbed: tuple[int, ...]
    at: int
    inputs: tuple[int, ...]
    fn: Kernel
    name: str


class _Graph:
    """What the patterns ask of a subgraph: readers of operands, constants, types."""

    def __init__(self, sg: Subgraph, constant: Callable[[int], np.ndarray | None]) -> None:
        self.sg = sg
        self.constant = constant
        self.readers: dict[int, list[int]] = {}
        self.producer: dict[int, int] = {}
        for k, op in enumerate(sg.operations):
            for i in op.inputs:
                self.readers.setdefault(i, []).append(k)
            for o in op.outputs:
                self.producer[o] = k
        self.outputs = set(sg.output_indexes)

    def only_reader(self, operand: int) -> int | None:
        """The one operation reading `operand`, a temporary that is not a subgraph output, else None."""
        users = self.readers.get(operand, [])
        if (len(users) != 1 or operand in self.outputs
                or self.sg.operands[operand].lifetime is not _L.TEMPORARY_VARIABLE):
            return None
        return users[0]

    def constant_value(self, operand: int) -> np.ndarray | None:
        if self.sg.operands[operand].lifetime not in (_L.CONSTANT_COPY, _L.CONSTANT_REFERENCE):
            return None
        return self.constant(operand)

    def constant_int(self, operand: int) -> int | None:
        """A constant one-value operand's value as an int (a FuseCode, a layout flag), else None."""
        v = self.constant_value(operand)
        return None if v is None or v.size != 1 else int(v.reshape(-1)[0])

    def float32(self, *operands: int) -> bool:
        return all(self.sg.operands[i].type is OperandType.TENSOR_FLOAT32 for i in operands)

    def dims(self, operand: int) -> tuple[int, ...]:
        return tuple(self.sg.operands[operand].dimensions)


def plan_fusions(sg: Subgraph, constant: Callable[[int], np.ndarray | None],
                 kernels: Mapping[OperationType, Kernel]) -> list[Fusion]:
    """The fusions of `sg`, no operation in two of them. `constant(operand index)` reads a constant
    operand's value; `kernels` are the runner's, which the fused steps call for the operations they
    contain (CONV_2D for the scaled filter, the producers of activation epilogues)."""
    g = _Graph(sg, constant)
    conv_kernel = kernels[OperationType.CONV_2D]
    fusions: list[Fusion] = []
    taken: set[int] = set()
    # quant8 chains first, from the end: the longest chain ending at an operation takes its members
    for k in range(len(sg.operations) - 1, -1, -1):
        f = None if k in taken else _byte_function(g, k, kernels)
        if f is not None and not taken & {*f.absorbed, f.at}:
            fusions.append(f)
            taken.update((*f.absorbed, f.at))
    for k, op in enumerate(sg.operations):  # swish first: its MUL is no gate's
        if k in taken:
            continue
        f = _swish(g, k, op)
        if f is not None and not taken & {*f.absorbed, f.at}:
            fusions.append(f)
            taken.update((*f.absorbed, f.at))
    for k, op in enumerate(sg.operations):
        if k in taken:
            continue
        f = _channel_scale(g, k, op, conv_kernel) or _affine(g, k, op, kernels)
        if f is not None and not taken & {*f.absorbed, f.at}:
            fusions.append(f)
            taken.update((*f.absorbed, f.at))
    for k, op in enumerate(sg.operations):
        f = None if k in taken else _activation_epilogue(g, k, op, kernels)
        if f is not None and not taken & {*f.absorbed, f.at}:
            fusions.append(f)
            taken.update((*f.absorbed, f.at))
    return fusions


def _activation_epilogue(g: _Graph, k: int, op: Operation, kernels: Mapping[OperationType, Kernel]) -> Fusion | None:
    """RELU / RELU1 / RELU6 (x) or PRELU(x, alpha) whose x is the one output of an ADD, CONV_2D or
    DEPTHWISE_CONV_2D read by this operation alone, all float32 with known dimensions, x's own shape
    the activation's output shape (alpha broadcasting to it)."""
    if op.type not in _CLAMPS and op.type is not _O.PRELU:
        return None
    if len(op.inputs) != (2 if op.type is _O.PRELU else 1) or len(op.outputs) != 1:
        return None
    x, y = op.inputs[0], op.outputs[0]
    p = g.producer.get(x)
    if p is None or p >= k or g.only_reader(x) != k:
        return None
    prod = g.sg.operations[p]
    if prod.type not in EPILOGUE_PRODUCERS or list(prod.outputs) != [x] or prod.type not in kernels:
        return None
    xd = g.dims(x)
    if not g.float32(x, y) or not xd or not all(d > 0 for d in xd) or g.dims(y) != xd:
        return None
    if op.type is _O.PRELU:
        alpha = op.inputs[1]
        if alpha == x or not g.float32(alpha) or not all(d > 0 for d in g.dims(alpha)):
            return None
        try:
            if np.broadcast_shapes(xd, g.dims(alpha)) != xd:
                return None
        except ValueError:
            return None
        epilogue = prelu_epilogue(len(prod.inputs))
    else:
        epilogue = clamp_epilogue(_CLAMPS[op.type])
    operands = g.sg.operands
    fn = with_epilogue(kernels[prod.type], prod, [operands[x]], epilogue)
    return Fusion(absorbed=(p,), at=k, inputs=(*prod.inputs, *op.inputs[1:]), fn=fn,
                  name=f"{prod.type.name}+{op.type.name}")


def _swish(g: _Graph, k: int, op: Operation) -> Fusion | None:
    """LOGISTIC(x) -> s, MUL(x, s) or MUL(s, x) with a valid constant activation, all float32."""
    if op.type is not OperationType.LOGISTIC or len(op.inputs) != 1 or len(op.outputs) != 1:
        return None
    x, s = op.inputs[0], op.outputs[0]
    m = g.only_reader(s)
    if m is None or m <= k:
        return None
    mul = g.sg.operations[m]
    if mul.type is not OperationType.MUL or len(mul.inputs) != 3 or len(mul.outputs) != 1:
        return None
    if sorted(mul.inputs[:2]) != sorted([x, s]) or g.sg.operands[x].lifetime is _L.NO_VALUE:
        return None
    if g.constant_int(mul.inputs[_ACTIVATION]) not in _FUSE_CODES:
        return None  # left to the MUL kernel, which names the invalid code
    if not g.float32(x, s, mul.outputs[0]):
        return None  # quant8: `_byte_function`
    return Fusion(absorbed=(k,), at=m, inputs=(x, mul.inputs[_ACTIVATION]), fn=float32_swish, name="LOGISTIC+MUL")


def _byte_function(g: _Graph, k: int, kernels: Mapping[OperationType, Kernel]) -> Fusion | None:
    """The elementwise operations (`BYTE_OPS`) ending at operation k whose values all derive from one quant8
    tensor x, when k's output is quant8 of x's shape and there are at least two: walking back from k, an
    operand joins when it is a temporary read by the group alone and made by a `BYTE_OPS` operation of x's
    shape; every other operand read must be x or a one-value constant (a scalar activation, a MUL's constant
    factor), so the group is a function of x's byte alone (`byte_function`'s table)."""
    ops, operands = g.sg.operations, g.sg.operands
    op = ops[k]
    if op.type not in BYTE_OPS or len(op.outputs) != 1 or operands[op.outputs[0]].type not in _QUANT8:
        return None
    members, sources, constants, stack = {k}, set(), set(), [k]
    while stack:
        for t in ops[stack.pop()].inputs:
            if t < 0 or t in sources or t in constants:
                continue
            value = g.constant_value(t)
            if value is not None:
                if value.size != 1:
                    return None  # varies along an axis: not a function of the byte alone
                constants.add(t)
                continue
            p = g.producer.get(t)
            if (p is not None and ops[p].type in BYTE_OPS and len(ops[p].outputs) == 1 and p not in members
                    and operands[t].lifetime is _L.TEMPORARY_VARIABLE and t not in g.outputs
                    and set(g.readers.get(t, ())) <= members):
                members.add(p)
                stack.append(p)
            elif p is None or p not in members:
                sources.add(t)
    if len(members) < 2 or len(sources) != 1:
        return None
    x = next(iter(sources))
    xd = g.dims(x)
    if (operands[x].type not in _QUANT8 or not xd or not all(d > 0 for d in xd)
            or any(g.dims(ops[m].outputs[0]) != xd for m in members)
            or not {ops[m].type for m in members} <= kernels.keys()):
        return None
    # members read nothing a later member writes (the subgraph's order is a topological one)
    order = sorted(members)
    inputs = (x, *sorted(constants))
    fn = byte_function([ops[m] for m in order], list(operands), x, op.outputs[0],
                       {t: slot for slot, t in enumerate(inputs)}, kernels)
    return Fusion(absorbed=tuple(order[:-1]), at=k, inputs=inputs, fn=fn,
                  name="+".join(ops[m].type.name for m in order))


def _channel_scale(g: _Graph, m: int, mul: Operation, conv_kernel: Kernel) -> Fusion | None:
    """MUL(x, gate) (either order; gate one value per channel of a float32 x, valid constant activation)
    with the gate's producer absorbed when it can be, and the MUL itself folded into the CONV_2D reading
    its output when that can be; None when neither applies."""
    if mul.type is not OperationType.MUL or len(mul.inputs) != 3 or len(mul.outputs) != 1:
        return None
    h = mul.outputs[0]
    a, b = mul.inputs[:2]
    x, gate = (a, b) if g.dims(a) == g.dims(h) else (b, a)
    xd, gd = g.dims(x), g.dims(gate)
    if (not g.float32(x, gate, h) or not xd or not gd or xd != g.dims(h) or not all(d > 0 for d in (*xd, *gd))
            or any(d != 1 for d in gd[:-1]) or gd[-1] != xd[-1] or x == gate):
        return None
    act = g.constant_int(mul.inputs[_ACTIVATION])
    if act not in _FUSE_CODES:
        return None
    kind, gate_inputs, absorbed = _gate_source(g, gate, m)
    conv = _scaled_conv_target(g, x, h, act)
    if conv is not None:
        c = g.sg.operations[conv]
        return Fusion(absorbed=(*absorbed, m), at=conv, inputs=(x, *gate_inputs, *c.inputs[1:]),
                      fn=scaled_filter_conv(kind, conv_kernel),
                      name="GATE+MUL+CONV_2D" if absorbed else "MUL+CONV_2D")
    if not absorbed:
        return None
    return Fusion(absorbed=absorbed, at=m, inputs=(x, *gate_inputs, mul.inputs[_ACTIVATION]), fn=gated_mul(kind),
                  name="GATE+MUL")


def _gate_source(g: _Graph, gate: int, m: int) -> tuple[str, tuple[int, ...], tuple[int, ...]]:
    """How the step reads the gate: ("logistic", (its input,), (LOGISTIC,)) or ("scale", (g, c), (MUL,))
    when the gate is a temporary read only by the MUL at `m` and made by a float32 LOGISTIC or by a MUL of
    a tensor with a one-value float32 constant (activation NONE); else ("direct", (gate,), ())."""
    direct = ("direct", (gate,), ())
    p = g.producer.get(gate)
    if p is None or g.only_reader(gate) != m:
        return direct
    op = g.sg.operations[p]
    if op.type is OperationType.LOGISTIC and len(op.inputs) == 1 and g.float32(op.inputs[0]) \
            and g.dims(op.inputs[0]) == g.dims(gate):
        return "logistic", (op.inputs[0],), (p,)
    if op.type is OperationType.MUL and len(op.inputs) == 3 and g.constant_int(op.inputs[_ACTIVATION]) == FuseCode.NONE:
        for t, c in (op.inputs[:2], op.inputs[1::-1]):
            cv = g.constant_value(c)
            if (cv is not None and cv.size == 1 and g.float32(t, c) and g.dims(t) == g.dims(gate)
                    and g.constant_value(t) is None):
                return "scale", (t, c), (p,)
    return direct


def _affine(g: _Graph, m: int, mul: Operation, kernels: Mapping[OperationType, Kernel]) -> Fusion | None:
    """MUL(x, scale) (either order, activation NONE) -> h read only by ADD(h, shift) (either order, valid
    constant activation), scale and shift constants broadcasting to x's own shape, which is h's and the
    ADD output's: all float32, or all quant8 of one type with scale and shift one value or one per
    channel (the last axis; `quant8_affine`'s table)."""
    if mul.type is not OperationType.MUL or len(mul.inputs) != 3 or len(mul.outputs) != 1:
        return None
    h = mul.outputs[0]
    a = g.only_reader(h)
    if a is None or a <= m or g.constant_int(mul.inputs[_ACTIVATION]) != FuseCode.NONE:
        return None
    add = g.sg.operations[a]
    if add.type is not OperationType.ADD or len(add.inputs) != 3 or len(add.outputs) != 1:
        return None
    x, scale = _tensor_and_constant(g, mul.inputs[:2])
    hh, shift = _tensor_and_constant(g, add.inputs[:2])
    if x is None or hh != h or g.constant_int(add.inputs[_ACTIVATION]) not in _FUSE_CODES:
        return None
    xd = g.dims(x)
    y = add.outputs[0]
    if not xd or not all(d > 0 for d in xd) or g.dims(h) != xd or g.dims(y) != xd:
        return None
    try:
        if np.broadcast_shapes(xd, g.dims(scale), g.dims(shift)) != xd:
            return None
    except ValueError:
        return None
    if g.float32(x, scale, h, shift, y):
        return Fusion(absorbed=(m,), at=a, inputs=(x, scale, shift, add.inputs[_ACTIVATION]), fn=affine, name="MUL+ADD")
    types = {g.sg.operands[i].type for i in (x, scale, h, shift, y)}
    per_channel = all(math.prod(g.dims(c)[:-1]) == 1 for c in (scale, shift))
    if len(types) != 1 or types.pop() not in _QUANT8 or not per_channel or not {_O.MUL, _O.ADD} <= kernels.keys():
        return None
    fn = quant8_affine(mul, add, g.sg.operands[h], list(mul.inputs).index(x), list(add.inputs).index(h),
                       kernels[_O.MUL], kernels[_O.ADD])
    return Fusion(absorbed=(m,), at=a, inputs=(*mul.inputs, shift, add.inputs[_ACTIVATION]), fn=fn, name="MUL+ADD")


def _tensor_and_constant(g: _Graph, pair: list[int]) -> tuple[int | None, int | None]:
    """(the non-constant operand, the constant one) of a binary operation's two inputs, else (None, None)."""
    a, b = pair
    ca, cb = g.constant_value(a) is not None, g.constant_value(b) is not None
    if ca == cb:
        return None, None
    return (b, a) if ca else (a, b)


def _scaled_conv_target(g: _Graph, x: int, h: int, act: int) -> int | None:
    """The CONV_2D that reads h = x * gate (activation NONE) as its input only, when its filter can take
    the scale: float32 NHWC, x 4-D, filter at most SCALED_FILTER_MAX_SHARE of x's size."""
    c = g.only_reader(h)
    if c is None or act != FuseCode.NONE:
        return None
    conv = g.sg.operations[c]
    s = ConvSlot  # INPUT, FILTER and the least count are the same in both forms
    if (conv.type is not OperationType.CONV_2D or len(conv.inputs) <= s.ACTIVATION or len(conv.outputs) != 1
            or conv.inputs[s.INPUT] != h or h in conv.inputs[s.FILTER:]):
        return None
    xd, wd = g.dims(x), g.dims(conv.inputs[s.FILTER])
    if (len(xd) != 4 or len(wd) != 4 or not all(d > 0 for d in wd) or wd[-1] != xd[-1]
            or not g.float32(conv.inputs[s.FILTER], conv.outputs[0]) or _conv_is_nchw(g, conv)):
        return None
    if np.prod(wd) > SCALED_FILTER_MAX_SHARE * np.prod(xd):
        return None
    return c


def _conv_is_nchw(g: _Graph, conv: Operation) -> bool:
    """CONV_2D's layout flag, in the slot of its form (`window.CONV_2D`); absent means NHWC. A non-constant
    flag counts as NCHW (not fused)."""
    n = len(conv.inputs)
    slot = window.CONV_2D.form(n, lambda i: g.sg.operands[conv.inputs[i]].type).NCHW
    return n > slot and g.constant_int(conv.inputs[slot]) != 0
