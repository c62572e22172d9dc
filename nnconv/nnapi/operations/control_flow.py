"""IF and WHILE: what the runtime checks of a control-flow operation against the subgraphs it references
(Android validates these two itself, before the operation files' validators).

Every operand that crosses into or out of a referenced subgraph must be *compatible* with the operand on
the other side: the same type, scale, zero point and per-channel parameters, and dimensions that agree
wherever both are known (an empty shape, or a 0 extent, is unknown). The kernels rely on it: a branch
whose input is declared int8 runs int8 kernels on whatever array the IF passes it.

IF: slots 0 condition (TENSOR_BOOL8 of shape [1]), 1 then-branch and 2 else-branch (SUBGRAPH references),
3.. the branch inputs. Each branch takes exactly the operation's inputs from slot 3 on and returns exactly
its outputs.

WHILE: slots 0 condition and 1 body (SUBGRAPH references), 2.. the loop variables: m input-output, then k
state-only, then n input-only (m = the number of outputs, at least 1). The condition takes the m + k + n
values and returns one TENSOR_BOOL8 of shape [1]; the body takes them too and returns m + k new values,
each compatible with the value it replaces, and the first m with the operation's outputs.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Sequence

from nnconv.nnapi.enums import OperandLifeTime, OperandType, OperationType
from nnconv.nnapi.model import Operand, Subgraph
from nnconv.nnapi.operations.spec import operation
from nnconv.nnapi.operations.validation import default_feature_level
from nnconv.nnapi.operations.view import OperationView


class IfSlot(IntEnum):
    """IF: the condition, the two branches, then the branch inputs from slot 3 on."""
    CONDITION = 0
    THEN = 1
    ELSE = 2
    FIRST_INPUT = 3


class WhileSlot(IntEnum):
    """WHILE: the condition and body subgraphs, then the loop variables from slot 2 on."""
    CONDITION = 0
    BODY = 1
    FIRST_INPUT = 2


@operation(OperationType.IF, level=4, inputs=IfSlot, calls_subgraphs=True)
def validate_if(view: OperationView, feature_level: int) -> int:
    if len(view.in_operands) < 3 or not view.out_operands:
        raise view.refuse(f"takes at least 3 inputs and 1 output, got {len(view.in_operands)} and "
                          f"{len(view.out_operands)}")
    _condition(view, view.input(IfSlot.CONDITION), view.describe(IfSlot.CONDITION))
    outer_in = view.in_operands[IfSlot.FIRST_INPUT:]
    for slot in (IfSlot.THEN, IfSlot.ELSE):
        branch = _referenced(view, slot)
        where = view.describe(slot)
        _counts(view, where, branch, len(outer_in), len(view.out_operands), exact_outputs=True)
        _all_compatible(view, where, "input", branch.input_indexes, branch, outer_in, IfSlot.FIRST_INPUT)
        _all_compatible(view, where, "output", branch.output_indexes, branch, view.out_operands, None)
    return default_feature_level(view)


@operation(OperationType.WHILE, level=4, inputs=WhileSlot, calls_subgraphs=True)
def validate_while(view: OperationView, feature_level: int) -> int:
    if len(view.in_operands) < 3 or not view.out_operands:
        raise view.refuse(f"takes at least 3 inputs and 1 output, got {len(view.in_operands)} and "
                          f"{len(view.out_operands)}")
    outer_in = view.in_operands[WhileSlot.FIRST_INPUT:]
    m = len(view.out_operands)
    cond = _referenced(view, WhileSlot.CONDITION)
    where = view.describe(WhileSlot.CONDITION)
    _counts(view, where, cond, len(outer_in), 1, exact_outputs=True)
    _all_compatible(view, where, "input", cond.input_indexes, cond, outer_in, WhileSlot.FIRST_INPUT)
    _condition(view, cond.operands[cond.output_indexes[0]], f"{where} output 0")
    body = _referenced(view, WhileSlot.BODY)
    where = view.describe(WhileSlot.BODY)
    _counts(view, where, body, len(outer_in), m, exact_outputs=False)
    _all_compatible(view, where, "input", body.input_indexes, body, outer_in, WhileSlot.FIRST_INPUT)
    _all_compatible(view, where, "output", body.output_indexes[:m], body, view.out_operands, None)
    for k, (i, o) in enumerate(zip(body.input_indexes, body.output_indexes)):
        reason = _mismatch(body.operands[o], body.operands[i])
        if reason:
            raise view.refuse(f"{where} output {k} ({body.operands[o].describe()}) does not match its input "
                              f"{k} ({body.operands[i].describe()}), the loop variable it replaces: {reason}")
    return default_feature_level(view)


def _condition(view: OperationView, od: Operand | None, where: str) -> None:
    if od is None or od.type is not OperandType.TENSOR_BOOL8 or tuple(od.dimensions) != (1,):
        got = "omitted" if od is None else od.describe()
        raise view.refuse(f"{where} must be a TENSOR_BOOL8 of shape [1], got {got}")


def _referenced(view: OperationView, slot: IntEnum) -> Subgraph:
    od = view.input(slot)
    referenced = view.model.referenced if view.model is not None else []
    if od is None or od.lifetime is not OperandLifeTime.SUBGRAPH or not 0 <= od.location.offset < len(referenced):
        raise view.refuse(f"{view.describe(slot)} must reference a subgraph of the model")
    return referenced[od.location.offset]


def _counts(view: OperationView, where: str, sg: Subgraph, inputs: int, outputs: int, exact_outputs: bool) -> None:
    """The subgraph takes `inputs` values and returns `outputs` (WHILE's body: from `outputs` up to its
    input count, the state-only variables)."""
    n_in, n_out = len(sg.input_indexes), len(sg.output_indexes)
    ok_out = n_out == outputs if exact_outputs else outputs <= n_out <= n_in
    if n_in != inputs or not ok_out:
        wanted = f"{outputs}" if exact_outputs else f"{outputs} to {inputs}"
        raise view.refuse(f"{where} takes {n_in} inputs and returns {n_out} values; the operation passes "
                          f"{inputs} and needs {wanted}")


def _all_compatible(view: OperationView, where: str, kind: str, inner: Sequence[int], sg: Subgraph,
                    outer: Sequence[Operand | None], first_slot: int | None) -> None:
    for k, (i, od) in enumerate(zip(inner, outer)):
        outer_name = f"output {k}" if first_slot is None else view.describe(first_slot + k)
        if od is None:
            raise view.refuse(f"{outer_name} is omitted; {where} {kind} {k} needs a value")
        reason = _mismatch(sg.operands[i], od)
        if reason:
            raise view.refuse(f"{where} {kind} {k} ({sg.operands[i].describe()}) does not match the "
                              f"operation's {outer_name} ({od.describe()}): {reason}")


def _mismatch(a: Operand, b: Operand) -> str:
    """Why two operands are not compatible, or "" (the same type, quantization and dimensions where both
    are known)."""
    if a.type is not b.type:
        return "another type"
    if a.dimensions and b.dimensions and (len(a.dimensions) != len(b.dimensions) or any(
            x and y and x != y for x, y in zip(a.dimensions, b.dimensions))):
        return "other dimensions"
    if a.scale != b.scale or a.zero_point != b.zero_point or a.channel_quant != b.channel_quant:
        return "other quantization"
    return ""
