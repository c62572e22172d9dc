"""Control flow: WHILE and IF, whose TFLite subgraphs become referenced NNAPI subgraphs (feature level 4,
API 30; TFLite's NNAPI delegate does not lower either op).

A subgraph's operators are checked here, as part of the WHILE / IF check, so every problem inside a body or
branch is reported with its own subgraph and operator index, and the lowest API level found for the
control-flow op accounts for its contents. Lowering goes through `LowerContext.lower_subgraph`, which
lowers each TFLite subgraph once as a referenced NNAPI subgraph and returns its SUBGRAPH operand.

NNAPI's subgraph outputs must be written by an operation of that subgraph. A WHILE body returning a loop
variable unchanged is a loop invariant, lowered as an NNAPI input-only operand (see `While`); any other
output that is an input or a constant (an IF branch passing a value through, a body swapping variables)
is refused, as is an int64 or other type without an NNAPI operand type among the loop variables / values.
"""

from __future__ import annotations

from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.registry import Rule, lowering_rule
from nnconv.nnapi.enums import OperationType
from nnconv.tflite.ir import Subgraph
from nnconv.tflite.schema_enums import BuiltinOperator, TensorType

CONTROL_FLOW_API = 30


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
    from nnconv.lowering.convert import check_op  # the driver imports the rules; import it lazily

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
    produced = {o for op in sg.operators for o in op.outputs}
    for k, t in enumerate(sg.outputs):
        if k in invariant:
            continue
        if t not in produced or t in sg.inputs:
            c.refuse(Code.OPERAND_VALUE, f"{role} subgraph {sg.index} returns '{sg.tensors[t].name}' without "
                     "computing it (an input passed through or a constant); NNAPI subgraph outputs must be "
                     "written by an operation", "compute the value in the subgraph (e.g. x + 0)")
    for op in sg.operators:
        c.diagnostics.extend(check_op(c.state, sg, op))


def _check_io_types(c: CheckContext) -> None:
    for t in [*c.inputs, *c.outputs]:
        if t is not None and c.nnapi_type(t) is None:
            c.refuse(Code.DTYPE, f"'{t.name}' of type {t.type.name.lower()} has no NNAPI operand type")


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
    computed values only. The WHILE's outputs for the invariants are the WHILE's inputs themselves, so
    their TFLite tensors are aliased to the input operands. The cond subgraph returns TFLite's bool
    scalar, which the operand policy makes the TENSOR_BOOL8 [1] that NNAPI requires. Execution is bounded
    by the executor's loop timeout (kernels/while_.py)."""

    nnapi_ops = (OperationType.WHILE,)
    min_api_level = CONTROL_FLOW_API
    dtypes = ("float32", "int32", "uint8", "int8", "bool")
    constraints = "API 30; every cond/body op checked; loop invariants become input-only operands"
    beyond_delegate = True

    def check(self, c: CheckContext) -> None:
        c.require_api(CONTROL_FLOW_API, "WHILE (NNAPI control flow)")
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
                if c.op.outputs[j] in c.subgraph.outputs:
                    c.refuse(Code.OPERAND_VALUE, f"loop-invariant WHILE output '{c.output(j).name}' is a "
                             "subgraph output; it would pass an input through unchanged")
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
        invariant = set(loop_invariants(body_sg))
        if not invariant:
            cond = c.lower_subgraph(o.cond_subgraph_index)
            body = c.lower_subgraph(o.body_subgraph_index)
            ins = [cond, body] + [c.in_(i) for i in range(n)]
            c.emit(OperationType.WHILE, ins, [c.out(i) for i in range(n)])
            return
        computed = [j for j in range(n) if j not in invariant]
        order = computed + sorted(invariant)
        cond_sg = c.model.subgraphs[o.cond_subgraph_index]
        cond = _lower_reordered(c, cond_sg, order, list(cond_sg.outputs))
        body = _lower_reordered(c, body_sg, order, [body_sg.outputs[j] for j in computed])
        ins = [cond, body] + [c.in_(j) for j in order]
        c.emit(OperationType.WHILE, ins, [c.out(j) for j in computed])
        for j in invariant:
            c.lowering.operands[c.op.outputs[j]] = c.in_(j)  # the final value is the input itself


def _lower_reordered(c: LowerContext, sg: Subgraph, order: list[int], outputs: list[int]) -> int:
    """Lowers TFLite subgraph `sg` as a new referenced NNAPI subgraph whose inputs are sg's inputs taken in
    `order` and whose outputs are `outputs`; returns the SUBGRAPH operand."""
    from nnconv.lowering.convert import SubgraphLowering  # the driver imports the rules; import lazily

    converter = c.lowering.converter
    ref, builder = converter.builder.add_referenced()
    SubgraphLowering(converter, sg, builder).lower(sg.operators, [sg.inputs[j] for j in order], outputs)
    return c.sg.add_subgraph_ref(ref, name=f"subgraph{sg.index}_reordered")


@lowering_rule(BuiltinOperator.IF)
class If(Rule):
    """TFLite IF(cond, x_0 .. x_n-1) with then / else subgraphs -> NNAPI IF slots 0 cond (TENSOR_BOOL8 [1]),
    1 then (SUBGRAPH), 2 else (SUBGRAPH), 3.. the n branch inputs; outputs the branch's outputs."""

    nnapi_ops = (OperationType.IF,)
    min_api_level = CONTROL_FLOW_API
    dtypes = ("bool", "float32", "int32", "uint8", "int8")
    constraints = "API 30; one-element bool condition; branch outputs must be computed (no pass-through)"
    beyond_delegate = True

    def check(self, c: CheckContext) -> None:
        c.require_api(CONTROL_FLOW_API, "IF (NNAPI control flow)")
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
        then_ref = c.lower_subgraph(o.then_subgraph_index)
        else_ref = c.lower_subgraph(o.else_subgraph_index)
        ins = [c.in_(0), then_ref, else_ref] + [c.in_(i) for i in range(1, len(c.op.inputs))]
        c.emit(OperationType.IF, ins, [c.out(i) for i in range(len(c.op.outputs))])
