"""Unrolling a sequence op below API 29 into single-step cells (LSTM or RNN) chained through their state."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.registry import Rule
from nnconv.lowering.rules.recurrent.common import unread
from nnconv.nnapi.enums import OperandType, OperationType


# NNAPI has the sequence ops from API 29. Below, a sequence of T steps becomes T single-step cells chained
# through their state outputs: STRIDED_SLICE (API 28, with shrink_axis_mask) cuts each step's [B, I] input
# out of the sequence, and one CONCATENATION + RESHAPE stacks the [B, U] step outputs back into the
# [B, T, U] / [T, B, U] sequence. The arithmetic per step is the sequence op's, so results are identical.
UNROLL_OPS = (OperationType.STRIDED_SLICE, OperationType.CONCATENATION, OperationType.RESHAPE)


# Time steps an unrolled lowering emits at most: each step is a few NNAPI operations, so a corrupt or
# absurd sequence length (a fuzzed 2^30 steps once hung check) must not be unrolled.
MAX_UNROLLED_STEPS = 4096


def check_unroll_steps(c: CheckContext, always: bool = False) -> None:
    """Refuses unrolling the op's input-0 sequence into more than MAX_UNROLLED_STEPS steps: below API 29
    (the native sequence op's level) for float ops, at every level for those that are `always` unrolled
    (the int8 sequence LSTM)."""
    x = c.input(0)
    if x is None or x.rank != 3 or not (always or c.api_level < 29):
        return
    steps = x.shape[0 if c.options is not None and getattr(c.options, "time_major", False) else 1]
    if steps <= MAX_UNROLLED_STEPS:
        return
    what = f"unrolling {steps} time steps into one NNAPI operation group each (at most {MAX_UNROLLED_STEPS})"
    if always:
        c.refuse(Code.OPERAND_VALUE, what)
    else:
        c.require_api(29, what)  # hand-written: the native sequence operations' level, for any of them


class UnrolledSequence(Rule):
    """A sequence op NNAPI has from API 29 and that is unrolled into `cell_op` steps at API 28."""

    cell_op: ClassVar[OperationType]
    native_ops: ClassVar[tuple[OperationType, ...]]
    min_api_level = 28

    def describe_lowering(self, api_level: int) -> tuple[OperationType, ...]:
        if api_level < 29:
            return (OperationType.STRIDED_SLICE, self.cell_op, OperationType.CONCATENATION, OperationType.RESHAPE)
        return self.native_ops


def unroll_inputs(c: LowerContext, time_major: bool, slot: int = 0) -> list[int]:
    """Each time step's [B, I] operand, sliced out of the sequence held by input `slot`."""
    return unroll_operand(c, c.input_operand(slot), [int(d) for d in c.input(slot).shape], time_major)


def unroll_operand(c: LowerContext, x: int, shape: list[int], time_major: bool) -> list[int]:
    """Each time step's [B, I] operand, sliced out of the sequence operand `x` of `shape`."""
    axis = 0 if time_major else 1
    batch, n_in = shape[1 - axis], shape[2]
    strides = c.i32_vector([1, 1, 1])
    steps = []
    for t in range(shape[axis]):
        begin, end = [0, 0, 0], list(shape)
        begin[axis], end[axis] = t, t + 1
        step = c.temp_like(x, (batch, n_in), name=f"op{c.op.index}_x{x}_t{t}")
        c.emit(OperationType.STRIDED_SLICE, [x, c.i32_vector(begin), c.i32_vector(end), strides, c.i32(0),
                                             c.i32(0), c.i32(1 << axis)], [step])
        steps.append(step)
    return steps


def cross_linked_steps(c: LowerContext, time_major: bool, aux_slot: int) -> list[int]:
    """Per-step [B, I + A] slices of the input and aux sequences joined on the last axis: with weights
    joined as [W | W_aux], one cell input computes x W^T + aux W_aux^T (cross-linking without aux slots)."""
    shape = [int(d) for d in c.input(0).shape]
    shape[2] += int(c.input(aux_slot).shape[2])
    joined = c.temp_like(c.input_operand(0), shape, name=f"op{c.op.index}_input_and_aux")
    c.emit(OperationType.CONCATENATION, [c.input_operand(0), c.input_operand(aux_slot), c.i32(2)], [joined])
    return unroll_operand(c, joined, shape, time_major)


def joined_weight(c: LowerContext, w_slot: int, aux_slot: int) -> int:
    """The constant [W | W_aux] for a cross-linked cell (an omitted W stays omitted: the CIFG input gate)."""
    w, a = c.input(w_slot), c.input(aux_slot)
    if w is None:
        return c.no_value(OperandType.TENSOR_FLOAT32)
    value = np.concatenate([np.asarray(c.const_value(w), np.float32), np.asarray(c.const_value(a), np.float32)],
                           axis=1)
    return c.constant(OperandType.TENSOR_FLOAT32, value, name=f"{w.name}|{a.name}")


def stack_outputs(c: LowerContext, steps: list[int], time_major: bool, out: int | None = None) -> int:
    """Stacks per-step [B, U] outputs (in time order) into a [B, T, U] / [T, B, U] sequence, written to
    `out` (default: the op's output 0, else a new temporary); returns the sequence operand."""
    batch, units = c.info(steps[0]).dimensions
    shape = [len(steps), batch, units] if time_major else [batch, len(steps), units]
    if out is None:
        out = c.temp_like(steps[0], shape, name=f"op{c.op.index}_seq")
    if len(steps) == 1:
        joined = steps[0]
    else:
        dims = (len(steps) * batch, units) if time_major else (batch, len(steps) * units)
        joined = c.temp_like(steps[0], dims, name=f"op{c.op.index}_steps")
        c.emit(OperationType.CONCATENATION, [*steps, c.i32(0 if time_major else 1)], [joined])
    c.emit(OperationType.RESHAPE, [joined, c.i32_vector(shape)], [out])
    return out


def emit_bidirectional_outputs(c: LowerContext, fw: list[int], bw: list[int], time_major: bool,
                               merge: bool) -> None:
    """The op's outputs from the forward and backward per-step outputs (both in time order): two sequences,
    or one concatenated on the last axis when merging."""
    if not merge:
        stack_outputs(c, fw, time_major, c.output_operand(0))
        stack_outputs(c, bw, time_major, c.output_operand(1))
        return
    fw_seq, bw_seq = stack_outputs(c, fw, time_major), stack_outputs(c, bw, time_major)
    c.emit(OperationType.CONCATENATION, [fw_seq, bw_seq, c.i32(2)], [c.output_operand(0)])


def unrolled_lstm(c: LowerContext, xs: list[int], weights: list[int], h: int, cell: int, params: list[int],
                  cifg: bool, reverse: bool = False) -> list[int]:
    """One NNAPI LSTM per step of `xs`, chained through the state outputs; the outputs in time order."""
    batch, n_out = c.info(h).dimensions
    n_cell = c.info(cell).dimensions[1]
    outs: dict[int, int] = {}
    for t in (reversed(range(len(xs))) if reverse else range(len(xs))):
        tag = f"{'bw' if reverse else 'fw'}{t}"
        step = [unread(c, h, (batch, (3 if cifg else 4) * n_cell), f"scratch_{tag}"),
                unread(c, h, (batch, n_out), f"h_{tag}"), unread(c, cell, (batch, n_cell), f"c_{tag}"),
                unread(c, h, (batch, n_out), f"y_{tag}")]
        c.emit(OperationType.LSTM, [xs[t], *weights, h, cell, *params], step)
        h, cell = step[1], step[2]
        outs[t] = step[3]
    return [outs[t] for t in range(len(xs))]


def unrolled_rnn(c: LowerContext, xs: list[int], weights: list[int], h: int, act: int,
                 reverse: bool = False) -> list[int]:
    """One NNAPI RNN per step of `xs`, chained through the hidden state; the outputs in time order."""
    outs: dict[int, int] = {}
    for t in (reversed(range(len(xs))) if reverse else range(len(xs))):
        tag = f"{'bw' if reverse else 'fw'}{t}"
        h_next = unread(c, h, c.info(h).dimensions, f"h_{tag}")
        y_t = unread(c, h, c.info(h).dimensions, f"y_{tag}")
        c.emit(OperationType.RNN, [xs[t], *weights, h, act], [h_next, y_t])
        h = h_next
        outs[t] = y_t
    return [outs[t] for t in range(len(xs))]


def check_unrolled_bidirectional(c: CheckContext, pairs: list[tuple[int, int]], op_name: str) -> None:
    """Below API 29 a bidirectional op is unrolled into single-step cells, which have no aux input: with aux
    weights (cross-linking), each (weight slot, aux weight slot) pair in `pairs` is joined into one constant
    matrix, so both must be constant and given together."""
    if c.api_level >= 29:
        return
    c.require_api(28, f"{op_name} (unrolled into single-step cells below API 29)")  # hand-written: the unrolled form's
    if all(c.input(a) is None for _, a in pairs):
        return
    for w_slot, a_slot in pairs:
        w, a = c.input(w_slot), c.input(a_slot)
        if (w is None) != (a is None):
            c.refuse(Code.MISSING_OPERAND, f"inputs {w_slot} and {a_slot}: a weight and its aux weight must be "
                     "both given or both omitted")
        elif w is not None and not (c.is_const(w) and c.is_const(a)):
            c.refuse(Code.NON_CONSTANT, f"cross-linked {op_name} below API 29 joins weights {w_slot} and "
                     f"{a_slot} into one constant; both must be constant", "raise --api-level to 29")
