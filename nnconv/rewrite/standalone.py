"""The rewrite stage's result as a model TFLite runs on its own: what `nnconv rewrite` writes.

nnconv's converter reads the stage's result through the `ConversionState`: folded values beside the IR,
operators marked removed, int64 tensors carried as int32 by the lowering. A `.tflite` file has to say all of
that in TFLite's own terms, which this module does for the primary subgraph (the one TFLite's NNAPI delegate
sees; the others are kept as they were):

- a folded tensor that comes from a static shape (a SHAPE of a tensor computed at run time, and what is
  folded from it) becomes a constant holding its value, and an operator all of whose outputs are such (or
  that a graph rewrite made dead) is dropped: TFLite then reads the value from the file instead of computing
  it, and the tensor keeps its index and name, so whoever reads it still can. Folds of constants alone are
  left to TFLite: the converter left them on purpose (float16 weights behind a DEQUANTIZE);
- the other subgraphs (WHILE / IF bodies) as the graph rewrites left them, when a step asks for them: only the
  loop list writes of `rewrite/list_set_item.py` change them;
- an operator a rewrite turned into another kind (a rank-5 TILE into a RESHAPE) takes the version the model
  already uses for that kind, or 1; a data-movement operator a merge took to rank 4 takes the version TFLite
  gives it there (`tflite/op_versions.py`: a rank-5 TRANSPOSE is version 4, the delegate takes up to 2);
- `pin_shapes`: every shape becomes static at the model's input shapes. Identity: at fixed input shapes,
  TFLite's Prepare sizes every tensor from them; a -1 in a `shape_signature` only tells TFLite an extent may
  change on a resize, and makes some kernels (SLICE, TOPK_V2, ...) defer sizing to Invoke, where they compute
  the same extents. Folding a SHAPE bakes the input shapes in, so the inputs lose their -1 too: TFLite's
  strict resize then refuses another shape instead of computing with stale constants;
- `narrow_int64`: the int64 index tensors the stage carries as int32 (`rewrite/int64_indices.py`: values
  that index an axis fit int32, and TFLite refuses any other) become int32 tensors: the CAST producing them
  casts to int32, an ARG_MAX / ARG_MIN writes int32 (its `output_type`). TFLite's NNAPI delegate cannot add
  an INT64 operand and fails the whole delegation on one.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from nnconv.rewrite.folds import FOLDS
from nnconv.rewrite.state import ConversionState
from nnconv.tflite.ir import Operator, Subgraph, Tensor, TfliteModel
from nnconv.tflite.op_versions import data_movement_version
from nnconv.tflite.options import ArgMaxOptions, ArgMinOptions, CastOptions
from nnconv.tflite.prepare import prepare_subgraph
from nnconv.tflite.schema_enums import BuiltinOperator as B
from nnconv.tflite.schema_enums import TensorType

NEW_BUFFER = -1  # the writer gives such a tensor's data a buffer (tflite/writer.py)


@dataclass(frozen=True)
class Change:
    """One change to report: the operator (its index in the model the step started from, None for a tensor
    alone), what was done and by which rewrite."""

    op: int | None
    kind: str
    note: str


@dataclass
class Standalone:
    """A model TFLite runs without nnconv: `origin[k]` is the index, in the model the rewrite started from,
    of the primary subgraph's operator k."""

    model: TfliteModel
    origin: dict[int, int]
    changes: list[Change] = field(default_factory=list)
    body_origins: dict[int, dict[int, int]] = field(default_factory=dict)  # subgraph -> {new op: old op}


def standalone_model(state: ConversionState, base: TfliteModel, bodies: bool = False) -> Standalone:
    """`state`'s rewritten primary subgraph (folded values as constants, dead operators dropped) over `base`,
    the model the state was made from; with `bodies`, the other subgraphs as the graph rewrites left them too
    (their dead operators dropped; nothing folded into them)."""
    sg, base_sg = state.model.subgraphs[0], base.subgraphs[0]
    folded = _shape_derived(sg, {t: v for (s, t), v in state.folded.items() if s == 0})
    removed = {k for s, k in state.removed if s == 0}
    removed |= {op.index for op in sg.operators if op.outputs and all(o in folded for o in op.outputs if o >= 0)}
    tensors = list(sg.tensors)
    changes = [Change(r.op_index, r.kind.value, r.note) for r in state.rewrites if r.subgraph == 0]
    for op in sg.operators:
        if op.index not in removed:
            continue
        for o in op.outputs:
            if o in folded:
                value = folded[o]
                tensors[o] = dataclasses.replace(tensors[o], data=value, buffer=NEW_BUFFER,
                                                 shape=tuple(value.shape), shape_signature=None)
        if not any(c.op == op.index and c.note.startswith("removed") for c in changes):
            outs = ", ".join(f"'{tensors[o].name}'" for o in op.outputs if o >= 0)
            changes.append(Change(op.index, "fold", f"removed: {outs} folded into a constant"))
    for op in sg.operators:
        now_constant = [t for t in dict.fromkeys(op.inputs) if t in folded]
        if op.index not in removed and now_constant:
            names = ", ".join(f"'{tensors[t].name}'" for t in now_constant)
            changes.append(Change(op.index, "fold", f"reads {names} as a constant"))
    versions = {op.builtin_code: op.version for op in base_sg.operators}
    rewritten = {r.op_index for r in state.rewrites if r.subgraph == 0}
    kept: list[Operator] = []
    origin: dict[int, int] = {}
    for op in sg.operators:
        if op.index in removed:
            continue
        before = base_sg.operators[op.index] if op.index < len(base_sg.operators) else None
        if before is not None and before.builtin_code != op.builtin_code:
            op = dataclasses.replace(op, version=versions.get(op.builtin_code, 1))
        elif op.index in rewritten and op.inputs and op.inputs[0] >= 0:
            x = tensors[op.inputs[0]]  # a merge changed its rank: the version that says so changes with it
            op = dataclasses.replace(op, version=data_movement_version(op.builtin_code, x.type, x.rank) or op.version)
        origin[len(kept)] = op.index
        kept.append(dataclasses.replace(op, index=len(kept)))
    main = dataclasses.replace(sg, tensors=tuple(tensors), operators=tuple(kept))
    others, body_origins = list(base.subgraphs[1:]), {}
    if bodies:
        others = []
        for body in state.model.subgraphs[1:]:
            dead = {k for s, k in state.removed if s == body.index}
            ops = [op for op in body.operators if op.index not in dead]
            body_origins[body.index] = {k: op.index for k, op in enumerate(ops)}
            others.append(dataclasses.replace(body, operators=tuple(dataclasses.replace(op, index=k)
                                                                     for k, op in enumerate(ops))))
        changes += [Change(None, r.kind.value, f"subgraph {r.subgraph} '{state.model.subgraphs[r.subgraph].name}' "
                                               f"op #{r.op_index}: {r.note}") for r in state.rewrites if r.subgraph]
    model = dataclasses.replace(base, subgraphs=(main, *others))
    return Standalone(model, origin, sorted(changes, key=lambda c: (c.op is None, c.op or 0)), body_origins)


def _shape_derived(sg: Subgraph, folded: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
    """The folded values that come from a static shape: a SHAPE / RANK of a tensor computed at run time, and
    what is folded from them. The rest folds constants TensorFlow's converter left unfolded on purpose (float16
    weights behind a DEQUANTIZE keep the file small; the delegate reads them itself): left as they are."""
    derived: set[int] = set()
    for op in sg.operators:
        if not op.outputs or not all(o in folded for o in op.outputs if o >= 0):
            continue
        fold = FOLDS.get(op.builtin_code)
        rooted = fold is not None and fold.shape_only and op.inputs and op.inputs[0] >= 0 \
            and sg.tensors[op.inputs[0]].data is None
        if rooted or any(t in derived for t in op.inputs):
            derived.update(o for o in op.outputs if o >= 0)
    return {t: v for t, v in folded.items() if t in derived}


def pin_shapes(model: TfliteModel) -> tuple[TfliteModel, list[Change]]:
    """Every -1 of the primary subgraph's signatures fixed (see the module docstring): the inputs' at their
    shapes, the others' at the extents TFLite's Prepare computes (only when it prepares every node: a shape
    it has not computed stays as declared, with its -1)."""
    sg = model.subgraphs[0]
    if not any(t.has_dynamic_signature for t in sg.tensors):
        return model, []
    tensors = list(sg.tensors)
    changes = []
    for i in sg.inputs:
        t = tensors[i]
        if t.has_dynamic_signature:
            changes.append(Change(None, "static-shapes", f"input '{t.name}' fixed at {list(t.shape)} (signature "
                                                         f"{list(t.shape_signature or ())})"))
            tensors[i] = dataclasses.replace(t, shape_signature=None)
    pinned = _with_tensors(model, sg, tensors)
    prepared = prepare_subgraph(pinned)
    if prepared.failure is None and prepared.dynamic_tensor is None:
        for t in tensors:
            if t.has_dynamic_signature and t.data is None:
                tensors[t.index] = dataclasses.replace(t, shape=tuple(prepared.shapes[t.index]), shape_signature=None)
        pinned = _with_tensors(model, sg, tensors)
    return pinned, changes


def narrow_int64(state: ConversionState, model: TfliteModel) -> tuple[TfliteModel, list[Change]]:
    """The int64 index tensors of `state.int64_as_int32` (found on `model`) as int32 tensors, where TFLite
    can say so: written by a CAST, ARG_MAX or ARG_MIN and neither an input nor an output of the subgraph."""
    sg = model.subgraphs[0]
    tensors, operators = list(sg.tensors), list(sg.operators)
    producers = {o: op for op in sg.operators for o in op.outputs if o >= 0}
    changes = []
    for s, t in sorted(state.int64_as_int32):
        op = producers.get(t)
        if s != 0 or op is None or t in sg.inputs or t in sg.outputs or tensors[t].type != TensorType.INT64:
            continue
        if op.builtin_code == B.CAST:
            options = op.options if isinstance(op.options, CastOptions) else None
            if options is not None:
                operators[op.index] = dataclasses.replace(
                    op, options=dataclasses.replace(options, out_data_type=int(TensorType.INT32)))
        elif op.builtin_code in (B.ARG_MAX, B.ARG_MIN):
            cls = ArgMaxOptions if op.builtin_code == B.ARG_MAX else ArgMinOptions
            operators[op.index] = dataclasses.replace(op, options=cls(output_type=int(TensorType.INT32)))
        else:
            continue
        tensors[t] = dataclasses.replace(tensors[t], type=TensorType.INT32)
        changes.append(Change(op.index, "int64-indices", f"{op.name} writes '{tensors[t].name}' as int32: it is "
                                                         "only read as indices"))
    if not changes:
        return model, []
    main = dataclasses.replace(sg, tensors=tuple(tensors), operators=tuple(operators))
    return dataclasses.replace(model, subgraphs=(main, *model.subgraphs[1:])), changes


def _with_tensors(model: TfliteModel, sg: Subgraph, tensors: list[Tensor]) -> TfliteModel:
    return dataclasses.replace(model, subgraphs=(dataclasses.replace(sg, tensors=tuple(tensors)),
                                                 *model.subgraphs[1:]))
