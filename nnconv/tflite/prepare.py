"""What TFLite's interpreter knows about every tensor right after `AllocateTensors` prepared the nodes.

TFLite's NNAPI delegate decides node by node from this state: each tensor's dims as the kernels' `Prepare`
resized them (a declared `shape` is only the starting point), its allocation type (a constant is only a
kTfLiteMmapRo buffer; a value a kernel computed at Prepare, SHAPE's say, is kTfLitePersistentRo and not
"constant" to IsConstantTensor) and whether preparation stopped at a dynamic-sized tensor, which makes
`ModifyGraphWithDelegate` refuse every static-shape delegate ("Attempting to use a delegate that only
supports static-sized tensors with a graph that has dynamic-sized tensors (tensor#N ...)").

`prepare_subgraph` replays `Subgraph::PrepareOpsStartingAt` (LiteRT f67457790c9c, `tflite/core/subgraph.cc`)
before any delegate: tensors start as `InterpreterBuilder::ParseTensors` sets them up; nodes are prepared in
execution order (the file's operator order) by the kernels of `prepare_kernels.py` and `prepare_values.py`,
which follow `tflite/kernels/*.cc`; preparation stops after the first node with a dynamic output, or one
that returned kTfLiteOutputShapeNotKnown (RESHAPE with a computed shape), and at the first failing node. Nodes
after a stop are not prepared: their outputs keep the declared shapes, as TFLite's do until Invoke.

Control flow: WHILE and IF prepare their bodies (recursively, from the caller's input shapes and types) and
take their output shapes from them, or mark them dynamic, exactly as `while.cc` / `if.cc` do. CALL_ONCE has
no outputs. Ops without a modelled Prepare (listed in `prepare_kernels.py`) keep the declared shapes.
"""

from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from nnconv.tflite import prepare_dynamic, prepare_misc, prepare_nn, prepare_values  # noqa: F401  (fill KERNELS)
from nnconv.tflite.ir import Operator, TfliteModel
from nnconv.tflite.kernel_refusals import prepare_refusal
from nnconv.tflite.prepare_kernels import REGISTERED_CUSTOM, load_failure
from nnconv.tflite.prepare_node import (CUSTOM_KERNELS, KERNELS, OUTPUT_SHAPE_NOT_KNOWN, Allocation, Node,
                                        PrepareFailure, Shape, State, Unmodelled, kernel)
from nnconv.tflite.schema_enums import BuiltinOperator as B
from nnconv.tflite.schema_enums import TensorType

__all__ = ["Allocation", "PreparedSubgraph", "prepare_subgraph"]

_MAX_DEPTH = 16  # bodies nest this deep at most; the reader already refuses recursive control flow


@dataclass(frozen=True, eq=False)  # numpy values have no plain ==
class PreparedSubgraph:
    """One subgraph's tensors after TFLite's `AllocateTensors` ran each kernel's Prepare (no delegate).

    `dynamic_tensor` is TFLite's `dynamic_tensor_index_` when preparation found a dynamic-sized tensor (the
    tensor#N of the delegate's refusal): the first dynamic output of the node that stopped preparation, or a
    subgraph output that is dynamic from the start (a string output). It is -1 when a RESHAPE could not size
    its output (kTfLiteOutputShapeNotKnown): TFLite then stops and refuses static delegates too, but names
    no tensor. `dynamic_node` is the execution-plan index of the node that stopped preparation."""

    shapes: tuple[tuple[int, ...], ...]
    allocation: tuple[Allocation, ...]
    values: Mapping[int, np.ndarray]
    dynamic_tensor: int | None
    dynamic_node: int | None
    prepared_nodes: int
    failure: str | None
    # Custom ops TFLite's stock op resolver lacks, as (node, the error stock TFLite gives): the app that runs
    # the model must register them, so preparation goes on as if it had (their outputs keep their shapes)
    unresolved_custom_ops: tuple[tuple[int, str], ...] = ()

    @property
    def has_dynamic_tensors(self) -> bool:
        return self.dynamic_tensor is not None


@dataclass
class _Run:
    """The outcome of one subgraph's AllocateTensors, as `PrepareOpsStartingAt` leaves it."""

    state: State
    has_dynamic: bool = False
    dynamic_tensor: int = -1
    dynamic_node: int | None = None
    prepared: int = 0
    failure: str | None = None
    unresolved_custom_ops: list[tuple[int, str]] = field(default_factory=list)


def prepare_subgraph(model: TfliteModel, subgraph: int = 0) -> PreparedSubgraph:
    """Simulates `AllocateTensors` on `subgraph` (its inputs at their declared shapes)."""
    if not 0 <= subgraph < len(model.subgraphs):
        raise ValueError(f"the model has no subgraph {subgraph}")
    failure = load_failure(model)
    if failure is not None:
        # InterpreterBuilder refuses the model before any Prepare: nothing is resized
        run = _Run(State(model.subgraphs[subgraph].tensors), failure=failure)
    else:
        run = _simulate(model, subgraph, None, 0)
    dynamic = run.dynamic_tensor if run.has_dynamic and run.failure is None else None
    st = run.state
    return PreparedSubgraph(
        shapes=tuple(st.shapes), allocation=tuple(st.alloc), values=types.MappingProxyType(dict(st.values)),
        dynamic_tensor=dynamic, dynamic_node=run.dynamic_node if dynamic is not None else None,
        prepared_nodes=run.prepared, failure=run.failure, unresolved_custom_ops=tuple(run.unresolved_custom_ops))


def _simulate(model: TfliteModel, si: int, inputs: Sequence[tuple[Shape, TensorType] | None] | None,
              depth: int) -> _Run:
    """One subgraph's `AllocateTensors`. `inputs`: for a control-flow body, the (dims, type) its caller
    copies onto each subgraph input (None: an input the body does not use, which TFLite leaves alone)."""
    sg = model.subgraphs[si]
    state = State(sg.tensors, model, si, depth)
    if inputs is not None:
        for t, given in zip(sg.inputs, inputs):
            if given is not None and t >= 0:
                state.shapes[t], state.types[t] = given
                state.values.pop(t, None)
                if given[1] not in (TensorType.RESOURCE, TensorType.VARIANT):
                    # a body's inputs are kTfLiteCustom (the caller's buffers): never constant to a kernel
                    state.alloc[t] = Allocation.ARENA_RW
    run = _Run(state)
    # A subgraph output that is dynamic from the start (a string) marks the graph dynamic even when no
    # node stops preparation: inputs forwarded unchanged are never seen by a kernel
    for t in sg.outputs:
        if t >= 0 and state.alloc[t] == Allocation.DYNAMIC:
            run.has_dynamic, run.dynamic_tensor = True, t
            break
    for i, op in enumerate(sg.operators):
        node = Node(state, op, i)
        try:
            status = _prepare_node(node)
        except UnresolvedCustomOp as e:
            run.unresolved_custom_ops.append((i, str(e)))
            status = None
        except PrepareFailure as e:
            run.failure = f"{e}\nNode number {i} ({_op_name(op)}) failed to prepare."
            return run
        except (Unmodelled, IndexError, KeyError, ValueError, TypeError, OverflowError, ZeroDivisionError):
            # a case not followed, or a file malformed beyond what the kernel checks (where TFLite reads
            # garbage memory): the node's outputs keep what they had, and preparation goes on
            status = None
        run.prepared = i + 1
        for t in op.outputs:
            if t >= 0 and t not in node.dropped and state.alloc[t] == Allocation.DYNAMIC:
                run.has_dynamic, run.dynamic_tensor, run.dynamic_node = True, t, i
                return run
        if status == OUTPUT_SHAPE_NOT_KNOWN:
            run.has_dynamic, run.dynamic_node = True, i
            return run
    return run


class UnresolvedCustomOp(Exception):
    """A custom op TFLite's stock op resolver lacks (stock TFLite fails to prepare it with this message). A
    model that has one runs only in an app that registers it (or links the Flex delegate), so the app's
    interpreter is what is simulated: the op is not modelled, its outputs keep their declared shapes."""


def _prepare_node(node: Node) -> object:
    op = node.op
    if op.builtin_code == B.CUSTOM:
        name = op.custom_code or ""
        if name not in REGISTERED_CUSTOM:
            if name.startswith("Flex"):
                raise UnresolvedCustomOp("Select TensorFlow op(s), included in the given model, is(are) not supported "
                                     "by this interpreter. Make sure you apply/link the Flex delegate before "
                                     "inference.")
            raise UnresolvedCustomOp(f"Encountered unresolved custom op: {name}.")
        fn = CUSTOM_KERNELS.get(name)
    else:
        fn = KERNELS.get(op.builtin_code)
        refusal = _quantization_refusal(node)
        if refusal:
            raise PrepareFailure(refusal)
    if fn is None:
        return None  # not modelled: the outputs keep their declared shapes
    return fn(node)


def _quantization_refusal(node: Node) -> str | None:
    op = node.op
    act = node.param("fused_activation_function")
    tensors = node.state.tensors
    pick = (lambda ts: [tensors[t] if 0 <= t < len(tensors) else None for t in ts])
    return prepare_refusal(op.builtin_code, act, pick(op.inputs), pick(op.outputs))


def _op_name(op: Operator) -> str:
    return op.custom_code or "" if op.builtin_code == B.CUSTOM else op.name


# -- control flow: the kernels that prepare other subgraphs ---------------------------------------
def _body(node: Node, index: int, what: str) -> tuple[TfliteModel, int]:
    model: TfliteModel = node.state.model
    node.ensure(0 <= index < len(model.subgraphs), f"op_data->{what}_subgraph_index < subgraphs->size()")
    if node.state.depth >= _MAX_DEPTH:
        raise Unmodelled("control flow nested too deep")
    return model, index


def _used_inputs(model: TfliteModel, si: int) -> set[int]:
    """Tensors GetInputTensorsCount counts: inputs of some node, or subgraph outputs."""
    sg = model.subgraphs[si]
    return {t for op in sg.operators for t in op.inputs if t >= 0} | set(sg.outputs)


def _run_body(node: Node, model: TfliteModel, si: int, sources: Sequence[int], prune: bool) -> _Run:
    """Copies the caller's `sources` dims and types onto the body's inputs (RemoveUnusedInputs first when
    `prune`) and runs its AllocateTensors; a failure inside fails this node too."""
    sg = model.subgraphs[si]
    used = _used_inputs(model, si) if prune else None
    given = [None if (used is not None and t not in used) else (node.shape(s), node.type(s))
             for t, s in zip(sg.inputs, sources)]
    run = _simulate(model, si, given, node.state.depth + 1)
    if run.failure is not None:
        raise PrepareFailure(run.failure)
    return run


@kernel(B.WHILE)
def _while(node: Node) -> None:
    o = node.options
    node.ensure_eq(node.n_out, node.n_in, "node->outputs->size", "num_inputs")
    model, cond = _body(node, o.cond_subgraph_index, "cond")
    _, body = _body(node, o.body_subgraph_index, "body")
    node.ensure(cond != body, "op_data->cond_subgraph_index != op_data->body_subgraph_index")
    csg, bsg = model.subgraphs[cond], model.subgraphs[body]
    node.ensure_eq(len(csg.inputs), node.n_in, "cond_subgraph->inputs().size()", "num_inputs")
    node.ensure_eq(len(csg.outputs), 1, "cond_subgraph->outputs().size()", "1")
    node.ensure_eq(len(bsg.inputs), node.n_in, "body_subgraph->inputs().size()", "num_inputs")
    node.ensure_eq(len(bsg.outputs), node.n_in, "body_subgraph->outputs().size()", "num_inputs")
    sources = [node.input(k) for k in range(node.n_in)]
    crun = _run_body(node, model, cond, sources, prune=True)
    c_out = csg.outputs[0]
    if crun.state.alloc[c_out] != Allocation.DYNAMIC:
        node.ensure(crun.state.types[c_out] == TensorType.BOOL, "cond_output->type == kTfLiteBool")
        node.ensure(crun.state.shapes[c_out] in ((), (1,)), "cond_output is a scalar or [1]")
    # An output that the body passes through unchanged and nothing reads is dropped from the node
    # (node->outputs->data[i] = kTfLiteOptionalTensor): it is neither resized nor checked for dynamism
    used_here = _used_inputs(model, node.state.subgraph)
    dropped = {node.op.outputs[i] for i in range(node.n_in)
               if bsg.inputs[i] == bsg.outputs[i] and node.op.outputs[i] >= 0
               and node.op.outputs[i] not in used_here
               and bsg.tensors[bsg.inputs[i]].type not in (TensorType.STRING, TensorType.RESOURCE,
                                                            TensorType.VARIANT)}
    node.dropped = dropped
    brun = _run_body(node, model, body, sources, prune=False)
    bst = brun.state
    dynamic = brun.has_dynamic
    if not dynamic:
        for i in range(node.n_in):
            bi, bo = bsg.inputs[i], bsg.outputs[i]
            node.ensure(bst.types[bi] == bst.types[bo], "body_input->type == body_output->type")
            node.ensure(bst.alloc[bo] != Allocation.DYNAMIC, "!IsDynamicTensor(body_output)")
            if bst.shapes[bi] != bst.shapes[bo]:
                # while.cc lets a scalar become [1] (or back) across the loop without going dynamic
                first = (bst.shapes[bi][0] if bst.shapes[bi] else 0) + (bst.shapes[bo][0] if bst.shapes[bo] else 0)
                if first != 1:
                    dynamic = True
                    break
    for i, t in enumerate(node.op.outputs):
        if t < 0 or t in dropped:
            continue
        if dynamic:
            node.set_dynamic(t)
        else:
            node.resize(t, bst.shapes[bsg.outputs[i]])


@kernel(B.IF)
def _if(node: Node) -> None:
    o = node.options
    node.ensure(node.n_in > 0, "node->inputs->size > 0")
    c = node.input(0)
    node.ensure(node.type(c) == TensorType.BOOL, "cond->type == kTfLiteBool")
    node.ensure_eq(node.numel(c), 1, "NumElements(cond)", "1")
    model, then_i = _body(node, o.then_subgraph_index, "then")
    _, else_i = _body(node, o.else_subgraph_index, "else")
    for si in (then_i, else_i):
        node.ensure_eq(len(model.subgraphs[si].inputs), node.n_in - 1, "num_inputs", "subgraph->inputs().size()")
        node.ensure_eq(len(model.subgraphs[si].outputs), node.n_out, "num_outputs", "subgraph->outputs().size()")
    sources = [node.input(k) for k in range(1, node.n_in)]
    runs = [_run_body(node, model, si, sources, prune=True) for si in (then_i, else_i)]
    outs = [[r.state.shapes[t] for t in model.subgraphs[si].outputs] for r, si in zip(runs, (then_i, else_i))]
    dynamic = any(r.has_dynamic for r in runs) or outs[0] != outs[1]
    for i, t in enumerate(node.op.outputs):
        if t < 0:
            continue
        if dynamic:
            node.set_dynamic(t)
        else:
            node.resize(t, outs[0][i])


@kernel(B.CALL_ONCE)
def _call_once(node: Node) -> None:
    model, si = _body(node, node.options.init_subgraph_index, "init")
    node.ensure(si != node.state.subgraph, "op_data->init_subgraph_index != this_subgraph->GetSubgraphIndex()")
    node.arity(0, 0)
    node.ensure_eq(len(model.subgraphs[si].inputs), 0, "init_subgraph->inputs().size()", "0")
    node.ensure_eq(len(model.subgraphs[si].outputs), 0, "init_subgraph->outputs().size()", "0")
