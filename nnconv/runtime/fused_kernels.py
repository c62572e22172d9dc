"""Kernels of the executor's fused steps (`nnconv.runtime.fusion`) that stand for a per-channel scale:
x * gate followed by a convolution (the filter scaled instead), and a gate computed from the operation
that produced it (a squeeze-excite's LOGISTIC, or its hard sigmoid's constant MUL) inside the step; the
affine step, a MUL by a constant then an ADD of a constant (a batch normalization TFLite kept); a chain
of elementwise operations on one quant8 tensor as one table; and a standalone activation run in place on
the output of the operation that produced its input.

Slots of a fused step: 0 x, then the gate's slots (`GATE_SLOTS`: the gate itself; the LOGISTIC's input;
the MUL's two inputs), then the rest of the absorbing operation's inputs (the MUL's fused activation, or
the CONV_2D's slots 1.. ).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Mapping

import numpy as np

from nnconv.nnapi.enums import FuseCode, OperandLifeTime, OperationType
from nnconv.nnapi.model import Operand, Operation
from nnconv.runtime.kernels._activation import standalone_float_clamp
from nnconv.runtime.kernels._float_activation import apply_float_activation
from nnconv.runtime.kernels.logistic import float32_logistic
from nnconv.runtime.kernels.prelu import float32_prelu
from nnconv.runtime.kernels.registry import KernelCall

Kernel = Callable[[KernelCall], list[np.ndarray]]

# how the gate is read: as it is, as LOGISTIC(g), or as MUL(g, c) (c a one-value constant, activation NONE)
GATE_SLOTS = {"direct": 1, "logistic": 1, "scale": 2}


def gate_values(call: KernelCall, kind: str) -> np.ndarray:
    """The gate of a fused step, flat (one value per channel), computed as the absorbed operation's own
    kernel computes it in float32: 1 / (1 + exp(-g)) in LOGISTIC's order, g * c as MUL's product."""
    g = call.tensor(1)
    if kind == "direct":
        return g.reshape(-1)
    if kind == "logistic":
        return float32_logistic(g, np.empty(g.shape, np.float32)).reshape(-1)
    with np.errstate(all="ignore"):
        return np.multiply(g, call.tensor(2), dtype=np.float32).reshape(-1)


def gated_mul(kind: str) -> Kernel:
    """MUL(x, gate) with the gate computed here: x * gate along the last axis, then the MUL's fused
    activation (its slot follows the gate's)."""
    act_slot = 1 + GATE_SLOTS[kind]

    def run(call: KernelCall) -> list[np.ndarray]:
        x = call.tensor(0)
        y = call.empty(x.shape, np.float32)
        with np.errstate(all="ignore"):
            np.multiply(x, gate_values(call, kind), out=y)
        return [apply_float_activation(y, int(call.scalar(act_slot)))]

    return run


def scaled_filter_conv(kind: str, conv_kernel: Kernel) -> Kernel:
    """CONV_2D(x * gate) as the CONV_2D kernel on x with the filter times the gate along its last (input
    channel) axis. The filter's operand is described to the kernel as a temporary, so that nothing derived
    from the scaled filter is kept from run to run."""
    first = 1 + GATE_SLOTS[kind]  # the CONV_2D's filter slot in the fused step

    def run(call: KernelCall) -> list[np.ndarray]:
        inner = call.cache.get("scaled_conv_call") if call.cache is not None else None
        if inner is None:
            in_operands = [call.in_operands[0],
                           replace(call.in_operands[first], lifetime=OperandLifeTime.TEMPORARY_VARIABLE),
                           *call.in_operands[first + 1:]]
            inner = KernelCall(operation=call.operation, inputs=[], in_operands=in_operands,
                               out_operands=call.out_operands, runner=call.runner, cache=call.cache)
            if call.cache is not None:
                call.cache["scaled_conv_call"] = inner
        inner.inputs = [call.tensor(0), call.tensor(first) * gate_values(call, kind), *call.inputs[first + 1:]]
        try:
            return conv_kernel(inner)
        finally:
            inner.inputs = []

    return run


def affine(call: KernelCall) -> list[np.ndarray]:
    """MUL(x, scale) then ADD(., shift), both constants broadcast over x: x * scale, then + shift and the
    ADD's fused activation in place in that product, the same roundings in the same order as the two
    kernels, without the MUL's output as a separate buffer. Slots: 0 x, 1 scale, 2 shift, 3 the ADD's
    activation."""
    with np.errstate(all="ignore"):
        y = np.multiply(call.tensor(0), call.tensor(1), dtype=np.float32)
        np.add(y, call.tensor(2), out=y)
    return [apply_float_activation(y, int(call.scalar(3)))]


# A quantized affine step's table indexes fit uint16 up to this many channels (256 entries each).
UINT16_TABLE_CHANNELS = 256
# Elements per block of a quantized affine step's gather.
AFFINE_BLOCK_ELEMENTS = 1 << 15


def quant8_affine(mul: Operation, add: Operation, product: Operand, x_slot: int, product_slot: int,
                  mul_kernel: Kernel, add_kernel: Kernel) -> Kernel:
    """ADD(MUL(x, scale), shift) on quant8 x, scale and shift constants with one value or one per channel
    (last axis): one gather from a table [channel, storage byte of x] -> output storage.

    The table is what the MUL and ADD kernels themselves compute (their own integer pipelines, run once on
    every byte value of every channel, the intermediate in the MUL output's quantization), so the step
    has the pair's bits by construction; it replaces the MUL's and the ADD's passes (DenseNet-121 int8's
    batch normalizations: 56x56x256 MUL 1.2 + ADD 1.0 ms -> one gather). Slots of the step: 0..2 the
    MUL's inputs (x in `x_slot`), 3 the ADD's other input (shift), 4 the ADD's activation; in the ADD the
    product sits in `product_slot`. `product` is the MUL output's operand."""
    const_slots = tuple(s for s in range(5) if s != x_slot)

    def table(call: KernelCall, x: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        channels = max(call.tensor(1 - x_slot).size, call.tensor(3).size)
        # every storage byte (int8: k - 256 above 127) in every channel: [256, C], as many leading 1s as
        # x has axes (the constants broadcast against x's rank)
        domain = np.arange(256, dtype=np.uint8).view(x.dtype)
        grid = np.broadcast_to(domain[:, None], (256, channels)).reshape((1,) * max(0, x.ndim - 2) + (256, channels))
        mul_inputs = list(call.inputs[:3])
        mul_inputs[x_slot] = grid
        h = mul_kernel(KernelCall(operation=mul, inputs=mul_inputs, in_operands=list(call.in_operands[:3]),
                                  out_operands=[product]))[0]
        add_inputs = [call.inputs[3], call.inputs[3], call.inputs[4]]
        add_inputs[product_slot] = h
        add_operands = [call.in_operands[3], call.in_operands[3], call.in_operands[4]]
        add_operands[product_slot] = product
        y = add_kernel(KernelCall(operation=add, inputs=add_inputs, in_operands=add_operands,
                                  out_operands=list(call.out_operands)))[0]
        flat = np.ascontiguousarray(np.broadcast_to(y, grid.shape).reshape(256, channels).T).reshape(-1)
        if channels == 1:
            return flat, None
        index_dtype = np.uint16 if channels <= UINT16_TABLE_CHANNELS else np.uint32
        return flat, np.arange(channels, dtype=index_dtype) * index_dtype(256)

    def run(call: KernelCall) -> list[np.ndarray]:
        x = call.tensor(x_slot)
        flat, base = call.memo(("quant8_affine", x.dtype.str, x.ndim), const_slots, lambda: table(call, x))
        out = call.empty(x.shape, flat.dtype)
        if base is None:
            np.take(flat, x.view(np.uint8), out=out, mode="wrap")  # bytes index 256 entries
            return [out]
        if x.ndim == 0 or x.shape[-1] != base.size:
            raise call.fail(f"input shape {list(x.shape)} does not end in the constants' {base.size} channels")
        # entry c * 256 + byte, per block of rows so that the indexes stay in cache; "wrap" skips take's
        # bounds check (indexes < 256 C by construction)
        channels = base.size
        rows = x.size // channels
        block = max(1, AFFINE_BLOCK_ELEMENTS // channels)
        index = np.empty((min(rows, block), channels), base.dtype)
        src, dst = x.reshape(rows, channels).view(np.uint8), out.reshape(rows, channels)
        for r0 in range(0, rows, block):
            r1 = min(rows, r0 + block)
            part = index[:r1 - r0]
            np.copyto(part, src[r0:r1])
            np.add(part, base, out=part)
            np.take(flat, part, out=dst[r0:r1], mode="wrap")
        return [out]

    return run


def byte_function(members: list[Operation], operands: list[Operand], x: int, y: int, slots: dict[int, int],
                  kernels: Mapping[OperationType, Kernel]) -> Kernel:
    """Elementwise operations `members` (in order) whose values all derive from one quant8 operand `x`,
    ending in quant8 `y`: one gather from a 256-entry table [storage byte of x] -> storage of y.

    Nothing else varies between runs (their other inputs are one-value constants), so y is a function of
    x's byte alone: the table is what the members' own kernels compute on all 256 bytes, run once in
    order, so the step has the group's bits by construction, one pass instead of one or more per member and
    no intermediate buffers (a quant8 swish MUL(x, LOGISTIC(x)); a LOGISTIC through float, DEQUANTIZE ->
    LOGISTIC -> QUANTIZE, and its swish MUL). `slots` maps each operand the members read to its slot in the
    step (x in slot 0, then the constants)."""

    def table(call: KernelCall) -> np.ndarray:
        values = {x: np.arange(256, dtype=np.uint8).view(operands[x].dtype)}  # entry k: the value of byte k
        for op in members:
            inputs = [values[t] if t in values else (None if t < 0 else call.inputs[slots[t]]) for t in op.inputs]
            outs = kernels[op.type](KernelCall(operation=op, inputs=inputs,
                                               in_operands=[operands[t] if t >= 0 else None for t in op.inputs],
                                               out_operands=[operands[o] for o in op.outputs]))
            values[op.outputs[0]] = np.asarray(outs[0])
        return values[y].reshape(256)

    def run(call: KernelCall) -> list[np.ndarray]:
        x_value = call.tensor(0)
        flat = call.memo(("byte_function", x_value.dtype.str), range(1, len(call.inputs)), lambda: table(call))
        out = call.empty(x_value.shape, flat.dtype)
        np.take(flat, x_value.view(np.uint8), out=out, mode="wrap")  # bytes cannot leave 0..255: no bounds check
        return [out]

    return run


Epilogue = Callable[[KernelCall, np.ndarray], np.ndarray]


def clamp_epilogue(code: FuseCode) -> Epilogue:
    """A standalone RELU / RELU1 / RELU6 (`code`) in place: the reference's std::min(std::max(lo, x), hi),
    NaN -> lo and -0.0 -> +0.0, which the producer's own fused activation (std::max(x, lo)) would not do."""
    return lambda call, y: standalone_float_clamp(y, code, y)


def prelu_epilogue(alpha_slot: int) -> Epilogue:
    """A float32 PRELU in place, its alpha in the fused step's slot `alpha_slot`."""
    return lambda call, y: float32_prelu(call, y, call.tensor(alpha_slot), y, alpha_slot)


def with_epilogue(producer: Kernel, op: Operation, out_operands: list[Operand], epilogue: Epilogue) -> Kernel:
    """The producing operation `op` (its kernel `producer`, its output operands) then `epilogue` on its one
    output in place, while that output is fresh in cache and before anything else could read it. Slots of
    the step: the producer's inputs in order (described as the step's call describes them, so that an
    input the runner folded into a constant is one to the producer's memo too), then the activation's
    other inputs (PRELU's alpha). The producer keeps its own memo (a dict inside the step's)."""
    n = len(op.inputs)

    def run(call: KernelCall) -> list[np.ndarray]:
        inner = call.cache.get("producer_call") if call.cache is not None else None
        if inner is None:
            inner = KernelCall(operation=op, inputs=[], in_operands=call.in_operands[:n], out_operands=out_operands,
                               runner=call.runner, cache={} if call.cache is not None else None)
            if call.cache is not None:
                call.cache["producer_call"] = inner
        inner.inputs = call.inputs[:n]
        try:
            y = producer(inner)[0]
        finally:
            inner.inputs = []
        # in place only on a buffer of its own: a kernel may hand back a constant or a view of an input
        # (only inputs of y's size can be y: filters, biases and scalars are not looked at)
        if (y.__class__ is not np.ndarray or y.dtype != np.float32 or not y.flags.writeable
                or any(a is not None and a.size == y.size and np.may_share_memory(y, a) for a in call.inputs[:n])):
            fresh = call.empty(np.shape(y), np.float32)
            fresh[...] = y
            y = fresh
        return [epilogue(call, y)]

    return run
