"""Control flow: WHILE and IF, whose TFLite subgraphs become referenced NNAPI subgraphs (feature level 4,
API 30; TFLite's NNAPI delegate does not lower either op).

A subgraph's operators are checked here, as part of the WHILE / IF check, so every problem inside a body or
branch is reported with its own subgraph and operator index, and the lowest API level found for the
control-flow op accounts for its contents. Lowering goes through `LowerContext.lower_subgraph`, which
lowers each TFLite subgraph once as a referenced NNAPI subgraph and returns its SUBGRAPH operand.

NNAPI's subgraph outputs must be written by an operation of that subgraph (and be distinct operands),
while TFLite subgraphs often return an input unchanged or a constant. A WHILE body returning a loop
variable unchanged is a loop invariant, lowered as an NNAPI input-only operand (see `While`). Any other
such output (an IF branch passing a value through, a cond returning a bool loop variable, a body swapping
variables, a constant, a value returned twice) gets an exact copy operation in the referenced subgraph:
RESHAPE to its own shape for float and quant8 tensors, ADD of a zero for int32, LOGICAL_AND with itself
for bool; other types are refused, as is a value whose type has no NNAPI operand type.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.driver_support import CONTROL_FLOW_UNTESTED
from nnconv.lowering.registry import Rule, lowering_rule
from nnconv.nnapi.builder import SubgraphBuilder
from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.tflite.ir import Subgraph
from nnconv.tflite.schema_enums import BuiltinOperator, TensorType

CONTROL_FLOW_API = 30

# The exact copy operation used for a subgraph output that no operation computes, by operand type.
_RESHAPE_COPY = (OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16, OperandType.TENSOR_QUANT8_ASYMM,
                 OperandType.TENSOR_QUANT8_ASYMM_SIGNED)
COPY_OPS = (OperationType.RESHAPE, OperationType.ADD, OperationType.LOGICAL_AND)


def copyable(t: OperandType | None) -> bool:
    """Whether an operand of type `t` can be copied by one exact NNAPI operation."""
    return t in _RESHAPE_COPY or t in (OperandType.TENSOR_INT32, OperandType.TENSOR_BOOL8)


def needs_copy(sg: Subgraph, skip: frozenset[int] = frozenset()) -> list[int]:
    """Output positions of `sg` that no operation computes (inputs, constants) or that repeat an earlier
    output, except the positions in `skip`."""
    produced = {o for op in sg.operators for o in op.outputs}
    seen: set[int] = set()
    out = []
    for k, t in enumerate(sg.outputs):
        if k in skip:
            continue
        if t not in produced or t in sg.inputs or t in seen:
            out.append(k)
        seen.add(t)
    return out


def _subgraph(c: CheckContext, index: int, role: str) -> Subgraph | None:
    subgraphs = c.model.subgraphs
    if not 0 < index < len(subgraphs) or index == c.subgraph.index:
        c.refuse(Code.OPTION, f"{role} subgraph index {index} is not a valid subgraph of this model")
        return None
    return subgraphs[index]


def check_subgraph(c: CheckContext, sg: Subgraph, role: str, n_inputs: int, n_outputs: int | None,
                   invariant: frozenset[int] = frozenset()) -> None:
    """Arity, I/O types and pass-through outputs of a referenced subgraph (except the positions in
    `invariant`, which the caller handles), then every operator's own check."""
    if len(sg.inputs) != n_inputs:
        c.refuse(Code.OPERAND_VALUE, f"{role} subgraph {sg.index} takes {len(sg.inputs)} inputs, the op "
                 f"passes {n_inputs}")
    if n_outputs is not None and len(sg.outputs) != n_outputs:
        c.refuse(Code.OPERAND_VALUE, f"{role} subgraph {sg.index} returns {len(sg.outputs)} values, the op "
                 f"expects {n_outputs}")
    probe = CheckContext(c.state, sg, c.op)
    for t in (*sg.inputs, *sg.outputs):
        tensor = sg.tensors[t]
        if probe.nnapi_type(tensor) is None:
            c.refuse(Code.DTYPE, f"{role} subgraph {sg.index} carries '{tensor.name}' of type "
                     f"{tensor.type.name.lower()}, which has no NNAPI operand type")
    for k in needs_copy(sg, invariant):
        tensor = sg.tensors[sg.outputs[k]]
        if not copyable(probe.nnapi_type(tensor)):
            c.refuse(Code.OPERAND_VALUE, f"{role} subgraph {sg.index} returns '{tensor.name}' without computing "
                     f"it, and a {tensor.type.name.lower()} value cannot be copied by an NNAPI operation",
                     "compute the value in the subgraph")
    for op in sg.operators:
        for d in c.check_nested(sg, op):
            # Keep the inner op's own index and subgraph, and say where it is in the message, since reports
            # list the diagnostic under the control-flow op.
            where = f"{role} subgraph {sg.index}, op #{op.index} {op.name}: "
            c.diagnostics.append(replace(d, message=where + d.message))


def _check_io_types(c: CheckContext) -> None:
    for t in [*c.inputs, *c.outputs]:
        if t is not None and c.nnapi_type(t) is None:
            c.refuse(Code.DTYPE, f"'{t.name}' of type {t.type.name.lower()} has no NNAPI operand type")
    c.require_static_shapes()  # as every other lowering: the values crossing the op have fixed shapes


def loop_invariants(sg: Subgraph) -> list[int]:
    """Positions j where a WHILE body returns its input j unchanged (a loop-invariant variable)."""
    return [j for j, t in enumerate(sg.outputs) if j < len(sg.inputs) and sg.inputs[j] == t]


@lowering_rule(BuiltinOperator.WHILE)
class While(Rule):
    """TFLite WHILE(v_0 .. v_n-1) -> (v_0' .. v_n-1') with cond and body subgraphs -> NNAPI WHILE slots
    0 cond (SUBGRAPH), 1 body (SUBGRAPH), 2.. the loop variables; outputs the final values.

    TFLite's body returns every variable, including loop invariants it passes through unchanged (TF's
    while_loop lowering does this for every captured tensor). NNAPI subgraph outputs must be computed, but
    NNAPI has "input-only" loop operands for exactly this case: the variables the body computes become
    NNAPI's m input-output operands (in order), the invariants follow them as input-only operands (k = 0),
    and both referenced subgraphs are lowered with their inputs in that order, the body returning the m
    computed values only. The WHILE's outputs for the invariants are the WHILE's inputs themselves: their
    TFLite tensors get a copy of the input operand, made once outside the loop. The cond subgraph returns
    TFLite's bool scalar, which the operand policy makes the TENSOR_BOOL8 [1] that NNAPI requires.
    Execution is bounded by the executor's loop timeout (kernels/while_.py)."""

    nnapi_ops = (OperationType.WHILE, *COPY_OPS)
    min_api_level = CONTROL_FLOW_API
    dtypes = ("float32", "int32", "uint8", "int8", "bool")
    constraints = "API 30; every cond/body op checked; loop invariants become input-only operands"
    beyond_delegate = True
    driver_notes = (CONTROL_FLOW_UNTESTED,)

    def describe_lowering(self, api_level: int) -> tuple[OperationType, ...]:
        return (OperationType.WHILE,)  # the copy operations appear only for pass-through values

    def check(self, c: CheckContext) -> None:
        c.require_operation(OperationType.WHILE, "WHILE (NNAPI control flow)")
        o = c.options
        if o is None:
            c.refuse(Code.OPTION, "WHILE without options")
            return
        n = len(c.op.inputs)
        if len(c.op.outputs) != n or any(i < 0 for i in c.op.inputs):
            c.refuse(Code.OPERAND_VALUE, "WHILE must have as many outputs as loop variables, none omitted")
            return
        _check_io_types(c)
        cond = _subgraph(c, o.cond_subgraph_index, "cond")
        body = _subgraph(c, o.body_subgraph_index, "body")
        invariant = frozenset(loop_invariants(body)) if body is not None else frozenset()
        if body is not None:
            check_subgraph(c, body, "body", n, n, invariant)
            if len(invariant) == n:
                c.refuse(Code.OPERAND_VALUE, "the WHILE body changes no loop variable; NNAPI needs at least one "
                         "computed output")
            for j in invariant:
                if c.op.outputs[j] in c.subgraph.outputs and not copyable(c.nnapi_type(c.output(j))):
                    c.refuse(Code.OPERAND_VALUE, f"loop-invariant WHILE output '{c.output(j).name}' is a "
                             "subgraph output of a type no NNAPI operation can copy")
        if cond is not None:
            check_subgraph(c, cond, "cond", n, 1)
            if len(cond.outputs) == 1:
                flag = cond.tensors[cond.outputs[0]]
                if flag.type != TensorType.BOOL or any(d != 1 for d in flag.shape):
                    c.refuse(Code.DTYPE, f"the cond subgraph must return one bool, it returns "
                             f"{flag.type.name.lower()}{list(flag.shape)}")

    def lower(self, c: LowerContext) -> None:
        o = c.options
        n = len(c.op.inputs)
        body_sg = c.model.subgraphs[o.body_subgraph_index]
        cond_sg = c.model.subgraphs[o.cond_subgraph_index]
        invariant = set(loop_invariants(body_sg))
        computed = [j for j in range(n) if j not in invariant]
        order = computed + sorted(invariant)
        cond = lower_referenced(c, cond_sg, order, [0])
        body = lower_referenced(c, body_sg, order, computed)
        ins = [cond, body] + [c.input_operand(j) for j in order]
        c.emit(OperationType.WHILE, ins, [c.output_operand(j) for j in computed])
        for j in invariant:
            # The final value is the input itself: a copy of it (outside the loop) when NNAPI can copy the
            # type, so the tensor may also be a model or partition output; else the input operand itself.
            value = c.input_operand(j)
            if copyable(c.info(value).type):
                value = _copy(c.sg, value, c.op.index)
            c.lowering.operands[c.op.outputs[j]] = value


def lower_referenced(c: LowerContext, sg: Subgraph, order: list[int], outputs: list[int]) -> int:
    """The SUBGRAPH operand of TFLite subgraph `sg` lowered with its inputs taken in `order` and its outputs
    at positions `outputs`. The plain case goes through `lower_subgraph` (lowered once, shared); otherwise
    a dedicated referenced subgraph is built, with a copy operation for each output no operation computes."""
    plain = order == list(range(len(sg.inputs))) and outputs == list(range(len(sg.outputs)))
    if plain and not needs_copy(sg):
        return c.lower_subgraph(sg.index)
    ref, lowering = c.new_referenced_subgraph(sg.index)
    builder = lowering.builder
    in_operands = [lowering.operand_for(sg.inputs[j]) for j in order]
    lowering.lower_ops(sg.operators)
    out_operands: list[int] = []
    for k in outputs:
        operand = lowering.operand_for(sg.outputs[k])
        if builder.operand(operand).is_constant or operand in in_operands or operand in out_operands:
            operand = _copy(builder, operand, c.op.index)
        out_operands.append(operand)
    builder.set_io(in_operands, out_operands)
    return c.sg.add_subgraph_ref(ref, name=f"subgraph{sg.index}")


def _copy(builder: SubgraphBuilder, operand: int, source_op: int) -> int:
    """A new operand holding exactly the value of `operand`, written by one NNAPI operation."""
    od = builder.operand(operand)
    new = builder.add_tensor(od.type, od.dimensions, scale=od.scale, zero_point=od.zero_point,
                             name=f"{od.name}/copy")
    if od.type is OperandType.TENSOR_BOOL8:
        builder.add_operation(OperationType.LOGICAL_AND, [operand, operand], [new], source_op)
    elif od.type is OperandType.TENSOR_INT32:
        zero = builder.add_constant(OperandType.TENSOR_INT32, np.zeros(1, np.int32))
        builder.add_operation(OperationType.ADD, [operand, zero, builder.add_scalar(0)], [new], source_op)
    else:
        shape = builder.add_constant(OperandType.TENSOR_INT32, np.asarray(od.dimensions or (1,), np.int32))
        builder.add_operation(OperationType.RESHAPE, [operand, shape], [new], source_op)
    return new


@lowering_rule(BuiltinOperator.IF)
class If(Rule):
    """TFLite IF(cond, x_0 .. x_n-1) with then / else subgraphs -> NNAPI IF slots 0 cond (TENSOR_BOOL8 [1]),
    1 then (SUBGRAPH), 2 else (SUBGRAPH), 3.. the n branch inputs; outputs the branch's outputs."""

    nnapi_ops = (OperationType.IF, *COPY_OPS)
    min_api_level = CONTROL_FLOW_API
    dtypes = ("bool", "float32", "int32", "uint8", "int8")
    constraints = "API 30; one-element bool condition; every branch op checked; pass-through values copied"
    beyond_delegate = True
    driver_notes = (CONTROL_FLOW_UNTESTED,)

    def describe_lowering(self, api_level: int) -> tuple[OperationType, ...]:
        return (OperationType.IF,)  # the copy operations appear only for pass-through values

    def check(self, c: CheckContext) -> None:
        c.require_operation(OperationType.IF, "IF (NNAPI control flow)")
        o = c.options
        if o is None or not c.op.inputs:
            c.refuse(Code.OPTION, "IF without options or condition")
            return
        cond = c.input(0)
        if cond is None or cond.type != TensorType.BOOL or any(d != 1 for d in cond.shape):
            c.refuse(Code.DTYPE, "the IF condition must be a single bool")
        if any(i < 0 for i in c.op.inputs):
            c.refuse(Code.MISSING_OPERAND, "IF inputs cannot be omitted")
            return
        _check_io_types(c)
        n_in, n_out = len(c.op.inputs) - 1, len(c.op.outputs)
        for index, role in ((o.then_subgraph_index, "then"), (o.else_subgraph_index, "else")):
            sg = _subgraph(c, index, role)
            if sg is not None:
                check_subgraph(c, sg, role, n_in, n_out)

    def lower(self, c: LowerContext) -> None:
        o = c.options
        refs = []
        for index in (o.then_subgraph_index, o.else_subgraph_index):
            sg = c.model.subgraphs[index]
            refs.append(lower_referenced(c, sg, list(range(len(sg.inputs))), list(range(len(sg.outputs)))))
        then_ref, else_ref = refs
        ins = [c.input_operand(0), then_ref, else_ref] + [c.input_operand(i) for i in range(1, len(c.op.inputs))]
        c.emit(OperationType.IF, ins, [c.output_operand(i) for i in range(len(c.op.outputs))])
