"""Rank-5 data-movement chains rewritten on merged axes, so every tensor has rank <= 4.

TensorFlow's converter writes several Keras idioms through rank-5 tensors, which no NNAPI operation takes:
`tf.repeat(x, r, axis)` (and Keras 3's UpSampling2D) as RESHAPE/EXPAND_DIMS -> TILE -> RESHAPE, a channel
shuffle as RESHAPE -> TRANSPOSE -> RESHAPE, and RESHAPE -> RESHAPE through a rank-5 shape. Such a chain
only moves data, and the rank-5 layout is an artefact: adjacent axes that the middle op treats alike can be
merged into one, which leaves the element order of every tensor unchanged.

Identities (row-major order; `merge` of adjacent axes is a RESHAPE, free of data movement):
- TILE: for axes a, b with multiples (m, 1), tile([A, B], (m, 1)) viewed as [m*A*B] equals
  tile([A*B], m): element i*B + j of the result is x[(i mod A)*B + j] = x[(i*B + j) mod A*B]. So every axis
  with multiple 1 merges into the axis before it, and each merged axis takes the first axis' multiple.
- TRANSPOSE: axes of extent 1 can be dropped, and output axes j, j+1 with perm[j+1] = perm[j] + 1 come
  from adjacent input axes in the same order, so they move as one merged axis.
- RESHAPE -> RESHAPE: the intermediate shape is irrelevant; it becomes one axis.
- DEQUANTIZE / QUANTIZE with per-tensor parameters: each output element is one function of the input
  element at the same position (q -> (q - zp) * s, x -> clamp(round(x / s) + zp), q -> requantized q), so
  they commute with any data movement, and merged axes do not change what they compute. AI Edge Quantizer's
  static int8 models put them inside the chain (EXPAND_DIMS -> DEQUANTIZE -> TILE -> QUANTIZE -> RESHAPE
  for a Keras UpSampling2D): a run of them after the first op or after the middle op takes the merged shape
  of the tensor it reads. Per-channel parameters name an axis, which merging would move: left alone.
The chain is rewritten only when its first op is a RESHAPE or EXPAND_DIMS of a rank <= 4 tensor, every
rank-5 tensor is internal and read by the chain alone, and the last ops are RESHAPE or SQUEEZE back to
rank <= 4; the producer and consumers become RESHAPEs to and from the merged shapes.
"""

from __future__ import annotations

import numpy as np

from nnconv.rewrite.state import ConversionState
from nnconv.rewrite.graph_edit import SubgraphEdit, edit_each_subgraph
from nnconv.rewrite.registry import RewriteKind, RewriteRecord, graph_rewrite
from nnconv.tflite.ir import Operator, Subgraph, TfliteModel
from nnconv.tflite.options import ReshapeOptions
from nnconv.tflite.schema_enums import BuiltinOperator as B

NNAPI_MAX_RANK = 4
_PRODUCERS = (B.RESHAPE, B.EXPAND_DIMS)
_CONSUMERS = (B.RESHAPE, B.SQUEEZE)
_ELEMENTWISE = (B.DEQUANTIZE, B.QUANTIZE)  # per-tensor: commute with data movement (module docstring)


def merge_tile(shape: list[int], reps: list[int]) -> tuple[list[int], list[int]]:
    """(merged input shape, merged multiples): every axis with multiple 1 joins the axis before it."""
    dims: list[int] = []
    multiples: list[int] = []
    for k, (d, m) in enumerate(zip(shape, reps)):
        if k > 0 and m == 1:
            dims[-1] *= d
        else:
            dims.append(d)
            multiples.append(m)
    return dims, multiples


def merge_transpose(shape: list[int], perm: list[int]) -> tuple[list[int], list[int]]:
    """(merged input shape, merged perm): extent-1 axes dropped, runs of consecutive axes merged."""
    kept = [k for k, d in enumerate(shape) if d != 1]
    if not kept:
        return [1], [0]
    renumber = {k: n for n, k in enumerate(kept)}
    p = [renumber[a] for a in perm if shape[a] != 1]
    runs: list[list[int]] = []  # input axes of each merged output axis, in output order
    for a in p:
        if runs and runs[-1][-1] + 1 == a:
            runs[-1].append(a)
        else:
            runs.append([a])
    by_input = sorted(range(len(runs)), key=lambda r: runs[r][0])
    dims = [int(np.prod([shape[kept[a]] for a in runs[r]], dtype=np.int64)) for r in by_input]
    position = {r: n for n, r in enumerate(by_input)}
    return dims, [position[r] for r in range(len(runs))]


def _ints(state: ConversionState, sg: Subgraph, tensor: int) -> list[int] | None:
    if tensor < 0:
        return None
    value = state.folded.get((sg.index, tensor))
    if value is None:
        value = sg.tensors[tensor].data
    return None if value is None else [int(v) for v in np.asarray(value).reshape(-1)]


def as_reshape(edit: SubgraphEdit, op: Operator, source: int, target: list[int]) -> None:
    """Makes `op` a RESHAPE of `source` to `target` (a constant shape input and the same option)."""
    shape_t = edit.add_constant(f"{edit.sg.tensors[op.outputs[0]].name}/merged_shape", target)
    edit.replace_op(op.index, builtin_code=int(B.RESHAPE), inputs=(source, shape_t),
                    options=ReshapeOptions(new_shape=tuple(target)))


def _elementwise_run(edit: SubgraphEdit, tensor: int) -> list[int]:
    """`tensor`, then the outputs of the per-tensor DEQUANTIZE / QUANTIZE ops that follow it one after
    another, each the only reader of the tensor before it and not a subgraph input or output; the chain
    continues from the last one."""
    run = [tensor]
    while len(edit.consumers(run[-1])) == 1:
        op = edit.operators[edit.consumers(run[-1])[0]]
        if op.builtin_code not in _ELEMENTWISE or len(op.outputs) != 1 or op.inputs[0] != run[-1]:
            break
        out = op.outputs[0]
        if out < 0 or not edit.is_internal(out) or any(
                q is not None and q.is_per_channel for q in (edit.tensors[run[-1]].quantization,
                                                              edit.tensors[out].quantization)):
            break
        run.append(out)
    return run


def _rewrite_chain(state: ConversionState, edit: SubgraphEdit, producer: Operator) -> list[RewriteRecord]:
    """Rewrites the chain starting at `producer` (current IR in `edit`); returns what it changed."""
    tensors, ops = edit.tensors, edit.operators
    x, a = producer.inputs[0], producer.outputs[0]
    a_t = tensors[a]
    if x < 0 or tensors[x].rank > NNAPI_MAX_RANK or not edit.is_internal(a):
        return []
    a_run = _elementwise_run(edit, a)  # a, then what DEQUANTIZE / QUANTIZE make of it
    if len(edit.consumers(a_run[-1])) != 1:
        return []
    middle: Operator | None = ops[edit.consumers(a_run[-1])[0]]
    b_dims: list[int] | None = None
    param: list[int] = []
    if middle.builtin_code in _CONSUMERS:
        middle, b_run = None, a_run
        a_dims = [int(np.prod(a_t.shape, dtype=np.int64))]
    elif (middle.builtin_code in (B.TILE, B.TRANSPOSE) and len(middle.outputs) == 1
          and middle.inputs[0] == a_run[-1]):
        b = middle.outputs[0]
        values = _ints(state, edit.sg, middle.inputs[1]) if len(middle.inputs) > 1 else None
        if values is None or len(values) != a_t.rank or not edit.is_internal(b):
            return []
        if middle.builtin_code == B.TILE:
            a_dims, param = merge_tile(list(a_t.shape), values)
            b_dims = [d * m for d, m in zip(a_dims, param)]
        else:
            if sorted(p % a_t.rank for p in values) != list(range(a_t.rank)):
                return []
            a_dims, param = merge_transpose(list(a_t.shape), [p % a_t.rank for p in values])
            b_dims = [a_dims[p] for p in param]
        b_run = _elementwise_run(edit, b)
    else:
        return []
    b = b_run[-1]
    # Consumers go back to rank <= 4, or (a RESHAPE) start the next rank-5 chain, rewritten in its turn.
    consumers = [ops[k] for k in edit.consumers(b)]
    if not consumers or any(op.inputs[0] != b or op.builtin_code not in _CONSUMERS
                            or (tensors[op.outputs[0]].rank > NNAPI_MAX_RANK and op.builtin_code != B.RESHAPE)
                            for op in consumers):
        return []
    if len(a_dims) > NNAPI_MAX_RANK or (b_dims is not None and len(b_dims) > NNAPI_MAX_RANK):
        return []
    kind = RewriteKind.MERGE_AXES
    records = [RewriteRecord(edit.sg.index, producer.index, kind,
                             f"RESHAPE to {a_dims} instead of rank-{a_t.rank} {list(a_t.shape)}")]
    as_reshape(edit, producer, x, a_dims)
    for t in a_run:
        edit.set_shape(t, a_dims)
    records += _elementwise_records(edit, a_run, a_dims)
    if middle is not None and b_dims is not None:
        what = "multiples" if middle.builtin_code == B.TILE else "perm"
        param_t = edit.add_constant(f"{tensors[middle.outputs[0]].name}/merged_{what}", param)
        edit.replace_op(middle.index, inputs=(a_run[-1], param_t))
        for t in b_run:
            edit.set_shape(t, b_dims)
        records.append(RewriteRecord(edit.sg.index, middle.index, kind,
                                     f"{middle.name} of {a_dims} by {what} {param} on merged axes"))
        records += _elementwise_records(edit, b_run, b_dims)
    for op in consumers:
        as_reshape(edit, op, b, list(tensors[op.outputs[0]].shape))
        records.append(RewriteRecord(edit.sg.index, op.index, kind, f"RESHAPE from merged {b_dims or a_dims}"))
    return records


def _elementwise_records(edit: SubgraphEdit, run: list[int], dims: list[int]) -> list[RewriteRecord]:
    """The records of the DEQUANTIZE / QUANTIZE ops that write run[1:], now on `dims`."""
    writers = [edit.operators[edit.consumers(t)[0]] for t in run[:-1]]
    return [RewriteRecord(edit.sg.index, op.index, RewriteKind.MERGE_AXES, f"{op.name} on merged {dims}")
            for op in writers]


@graph_rewrite(RewriteKind.MERGE_AXES, "adjacent axes that a TILE (multiple 1) or TRANSPOSE (kept order) "
               "treats alike merge into one without moving data; per-tensor (de)quantization commutes with it")
def merge_axes(state: ConversionState) -> tuple[TfliteModel, list[RewriteRecord]]:
    def edit_one(edit: SubgraphEdit) -> list[RewriteRecord]:
        records: list[RewriteRecord] = []
        for k in range(len(edit.operators)):
            op = edit.operators[k]  # as earlier chains left it (a chain's last RESHAPE may start the next)
            if (op.builtin_code in _PRODUCERS and len(op.outputs) == 1 and op.outputs[0] >= 0 and op.inputs
                    and edit.tensors[op.outputs[0]].rank > NNAPI_MAX_RANK):
                records += _rewrite_chain(state, edit, op)
        return records
    return edit_each_subgraph(state.model, edit_one)
