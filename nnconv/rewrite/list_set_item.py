"""A loop's lowered TensorListSetItem as one SELECT_V2 of a row, so recurrent layers that return sequences
keep static shapes inside their WHILE body.

TensorFlow lowers `list = list.write(i, item)` (Keras RNN layers with `return_sequences=True`, tf.map_fn,
TensorArray writes) to a CONCATENATION of the rows before i, the item and the rows after i, cut by two
SLICEs whose begin/size vectors are built at run time from the step index:

    head = SLICE(L, [0, 0, ..], CONCATENATION(RESHAPE(i, [1]), [-1, -1, ..]))      L[0:i]
    tail = SLICE(L, CONCATENATION(RESHAPE(i + 1, [1]), [0, 0, ..]), [-1, -1, ..])  L[i+1:]
    out  = CONCATENATION(head, item, tail, axis 0)

head and tail have data-dependent shapes, which no NNAPI model can hold. Identity, for 0 <= i < N (the
loop's own bound; TensorFlow's list writes are bounds-checked):

    concat(L[0:i], item, L[i+1:]) == where(arange(N) == i, item, L)   (item broadcast along axis 0)

Rewrite: the first RESHAPE becomes EQUAL(arange(N) as [N, 1, ..], i) (a bool row mask), the CONCATENATION
becomes SELECT_V2(mask, item, L), and the other five ops are removed. Values are only copied, so the
result is exact for every dtype; quantized item, list and output must share one scale and zero point (as
SELECT_V2 requires; a CONCATENATION that requantizes is left alone).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from nnconv.rewrite.state import ConversionState
from nnconv.rewrite.graph_edit import SubgraphEdit
from nnconv.rewrite.registry import RewriteKind, RewriteRecord, graph_rewrite
from nnconv.tflite.ir import Operator, Tensor, TfliteModel
from nnconv.tflite.options import ConcatenationOptions, EqualOptions, SelectV2Options
from nnconv.tflite.schema_enums import BuiltinOperator as B
from nnconv.tflite.schema_enums import TensorType


def _const(state: ConversionState, edit: SubgraphEdit, tensor: int) -> np.ndarray | None:
    if tensor < 0:
        return None
    value = state.folded.get((edit.sg.index, tensor))
    return value if value is not None else edit.tensors[tensor].data


def _producer(edit: SubgraphEdit, tensor: int, kind: B) -> Operator | None:
    op = edit.producer(tensor)
    if op is None or op.builtin_code != kind or len(op.outputs) != 1:
        return None
    return edit.operators[op.index]


def _index_vector(state: ConversionState, edit: SubgraphEdit, tensor: int, rest: int, fill: int
                  ) -> tuple[int, list[Operator]] | None:
    """For `tensor` = CONCATENATION(RESHAPE(k, [1]), [fill] * rest): (k, [the RESHAPE, the CONCATENATION])."""
    concat = _producer(edit, tensor, B.CONCATENATION)
    if concat is None or len(concat.inputs) != 2:
        return None
    tail = _const(state, edit, concat.inputs[1])
    if tail is None or tail.size != rest or np.any(tail != fill):
        return None
    reshape = _producer(edit, concat.inputs[0], B.RESHAPE)
    if reshape is None or reshape.inputs[0] < 0 or edit.tensors[reshape.inputs[0]].shape not in ((), (1,)):
        return None
    return reshape.inputs[0], [reshape, concat]


def _is_plus_one(state: ConversionState, edit: SubgraphEdit, j: int, i: int) -> bool:
    add = _producer(edit, j, B.ADD)
    if add is None or len(add.inputs) != 2 or i not in add.inputs:
        return False
    if getattr(add.options, "fused_activation_function", 0):
        return False
    other = _const(state, edit, add.inputs[1] if add.inputs[0] == i else add.inputs[0])
    return other is not None and other.size == 1 and int(other.reshape(-1)[0]) == 1


def _same_values(*tensors: Tensor) -> bool:
    first = tensors[0]
    return all(t.type == first.type and t.quantization.scale == first.quantization.scale
               and t.quantization.zero_point == first.quantization.zero_point for t in tensors)


def _match(state: ConversionState, edit: SubgraphEdit, concat: Operator) -> tuple[int, list[Operator]] | None:
    """(step index tensor, the six ops computing head and tail) when `concat` is a lowered list write."""
    o = concat.options
    # (options of another kind: a corrupt model whose opcode no longer matches its options table)
    if len(concat.inputs) != 3 or not isinstance(o, ConcatenationOptions) or o.axis != 0 \
            or o.fused_activation_function:
        return None
    head, item, tail = concat.inputs
    h_op, t_op = _producer(edit, head, B.SLICE), _producer(edit, tail, B.SLICE)
    if h_op is None or t_op is None or h_op.inputs[0] != t_op.inputs[0] or item < 0:
        return None
    lst = h_op.inputs[0]
    out_t, lst_t, item_t = edit.tensors[concat.outputs[0]], edit.tensors[lst], edit.tensors[item]
    rank = lst_t.rank
    if (rank < 1 or out_t.shape != lst_t.shape or item_t.shape != (1,) + lst_t.shape[1:]
            or not _same_values(out_t, lst_t, item_t)):
        return None
    h_begin, t_size = _const(state, edit, h_op.inputs[1]), _const(state, edit, t_op.inputs[2])
    if h_begin is None or np.any(h_begin != 0) or t_size is None or np.any(t_size != -1):
        return None
    sized = _index_vector(state, edit, h_op.inputs[2], rank - 1, -1)
    begun = _index_vector(state, edit, t_op.inputs[1], rank - 1, 0)
    if sized is None or begun is None or not _is_plus_one(state, edit, begun[0], sized[0]):
        return None
    dead = [sized[1][0], sized[1][1], h_op, begun[1][0], begun[1][1], t_op]
    inside = {op.index for op in dead} | {concat.index}
    for op in dead:  # every intermediate is read by the pattern alone
        out = op.outputs[0]
        if not edit.is_internal(out) or any(k not in inside for k in edit.consumers(out)):
            return None
    if edit.tensors[sized[0]].type != TensorType.INT32:
        return None
    return sized[0], dead


@graph_rewrite(RewriteKind.LIST_SET_ITEM, "concat(L[0:i], item, L[i+1:]) == where(arange(N) == i, item, L) "
               "for 0 <= i < N")
def list_set_item(state: ConversionState) -> tuple[TfliteModel, list[RewriteRecord]]:
    records: list[RewriteRecord] = []
    subgraphs = []
    kind = RewriteKind.LIST_SET_ITEM
    for sg in state.model.subgraphs:
        edit = SubgraphEdit(sg)
        for concat in sg.operators:
            if concat.builtin_code != B.CONCATENATION:
                continue
            found = _match(state, edit, concat)
            if found is None:
                continue
            step, dead = found
            lst = dead[2].inputs[0]
            n, rank = edit.tensors[lst].shape[0], edit.tensors[lst].rank
            rows = edit.add_constant(f"{edit.tensors[lst].name}/row_index",
                                     np.arange(n, dtype=np.int32).reshape((n,) + (1,) * (rank - 1)))
            mask = edit.add_tensor(f"{edit.tensors[lst].name}/row_mask", (n,) + (1,) * (rank - 1),
                                   edit.tensors[step], type=TensorType.BOOL)
            first = dead[0]
            edit.replace_op(first.index, builtin_code=int(B.EQUAL), inputs=(rows, step), outputs=(mask,),
                            options=EqualOptions())
            edit.replace_op(concat.index, builtin_code=int(B.SELECT_V2),
                            inputs=(mask, concat.inputs[1], lst), options=SelectV2Options())
            records.append(RewriteRecord(sg.index, first.index, kind, f"EQUAL(arange({n}), step): the row mask"))
            records.append(RewriteRecord(sg.index, concat.index, kind,
                                         f"SELECT_V2(row mask, item, list) writes row i of op #{concat.index}"))
            records += [RewriteRecord(sg.index, op.index, kind, f"removed: part of the list write at op "
                                      f"#{concat.index}", removed=True) for op in dead[1:]]
        subgraphs.append(edit.finish())
    return dataclasses.replace(state.model, subgraphs=tuple(subgraphs)), records
