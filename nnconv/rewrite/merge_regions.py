"""Rank-5 elementwise regions on merged axes: Keras GroupNormalization's [N, H, W, G, C/G] moments.

Keras writes GroupNormalization through a rank-5 view [N, H, W, G, C/G] of its [N, H, W, C] input: a RESHAPE
in, elementwise arithmetic and reductions over H, W and C/G (keep_dims) for the moments, a RESHAPE back. No
NNAPI operation takes rank 5. Throughout such a region two adjacent axes are treated alike: every operand has
both at the output's extents or both at 1, and every reduction reduces both or neither.

Identity: merging two adjacent axes is a RESHAPE, which moves no element (row-major order), and it keeps
every broadcast and reduction: an operand whose two extents are (1, 1) broadcasts along the merged axis as it
did along the two, and a reduction over both is one over the merged axis. So the region is rewritten on rank
4 ([N, H*W, G, C/G]): each rank-5 tensor takes the merged shape, each rank-5 constant a merged view of its
data, the entering RESHAPEs and the BROADCAST_TOs their merged target shapes, the reductions their merged
axes; the leaving RESHAPEs name their own shape. Only regions of unquantized tensors internal to the
subgraph, made of `_ELEMENTWISE` ops, keep_dims `_REDUCERS`, BROADCAST_TO and entering / leaving RESHAPEs.
"""

from __future__ import annotations

import math

import numpy as np

from nnconv.rewrite.graph_edit import SubgraphEdit, edit_each_subgraph
from nnconv.rewrite.merge_axes import NNAPI_MAX_RANK, as_reshape
from nnconv.rewrite.registry import RewriteKind, RewriteRecord, graph_rewrite
from nnconv.rewrite.state import ConversionState
from nnconv.tflite.ir import TfliteModel
from nnconv.tflite.schema_enums import BuiltinOperator as B

_RANK = NNAPI_MAX_RANK + 1
_ELEMENTWISE = frozenset({
    B.ADD, B.SUB, B.MUL, B.DIV, B.SQUARED_DIFFERENCE, B.MAXIMUM, B.MINIMUM, B.POW, B.SQUARE, B.SQRT, B.RSQRT,
    B.EXP, B.LOG, B.ABS, B.NEG, B.LOGISTIC, B.TANH, B.RELU, B.RELU6, B.CAST, B.EQUAL, B.NOT_EQUAL, B.LESS,
    B.LESS_EQUAL, B.GREATER, B.GREATER_EQUAL, B.LOGICAL_AND, B.LOGICAL_OR, B.LOGICAL_NOT, B.SELECT_V2,
    B.ZEROS_LIKE, B.DEQUANTIZE})  # DEQUANTIZE: float16 weights (gamma, beta, epsilon) widened at run time
_REDUCERS = frozenset({B.SUM, B.MEAN, B.REDUCE_MAX, B.REDUCE_MIN, B.REDUCE_PROD})
_FIRST_AXES = (1, 2, 3, 0)  # the first axis of the pair to merge; H and W first


class _Region:
    """Operators connected through rank-5 tensors computed at run time (`dynamic`), in the current IR."""

    def __init__(self, edit: SubgraphEdit, folded: dict[int, np.ndarray], ops: list[int], dynamic: set[int]) -> None:
        self.edit, self.folded, self.ops, self.dynamic = edit, folded, sorted(ops), dynamic

    def value(self, t: int) -> np.ndarray | None:
        v = self.folded.get(t)
        return v if v is not None else self.edit.tensors[t].data

    def ints(self, t: int) -> list[int] | None:
        v = None if t < 0 else self.value(t)
        return None if v is None else [int(x) for x in np.asarray(v).reshape(-1)]

    def supported(self) -> bool:
        """Every operator of the region is one this rewrite knows, on unquantized internal tensors."""
        tensors = self.edit.tensors
        if not all(self.edit.is_internal(t) for t in self.dynamic):
            return False  # a model input or output keeps its declared rank-5 shape
        for k in self.ops:
            op = self.edit.operators[k]
            code = op.builtin_code
            if len(op.outputs) != 1 or any(tensors[t].quantization.is_quantized for t in (*op.inputs, *op.outputs)
                                           if t >= 0):
                return False
            out = op.outputs[0]
            if code == B.RESHAPE:
                if (tensors[op.inputs[0]].rank == _RANK) == (tensors[out].rank == _RANK):
                    return False  # rank 5 to rank 5: not an entry or an exit
            elif code in _REDUCERS:
                if op.options is None or not op.options.keep_dims or self.ints(op.inputs[1]) is None:
                    return False
            elif code == B.BROADCAST_TO:
                target = self.ints(op.inputs[1])
                if target is None or len(target) not in (0, _RANK):
                    return False
            elif code not in _ELEMENTWISE or out not in self.dynamic:
                return False
            if code in _ELEMENTWISE and any(t >= 0 and t not in self.dynamic and tensors[t].rank != _RANK
                                            and math.prod(tensors[t].shape) != 1 for t in op.inputs):
                return False  # a lower-rank operand would align differently once the rank drops
        return True

    def mergeable(self, a: int) -> bool:
        """Axes a and a + 1 are treated alike by every operator of the region."""
        tensors = self.edit.tensors

        def pair(t: int) -> tuple[int, int] | None:
            shape = tensors[t].shape
            return (shape[a], shape[a + 1]) if len(shape) == _RANK else None

        for k in self.ops:
            op = self.edit.operators[k]
            out = pair(op.outputs[0])
            if op.builtin_code == B.RESHAPE:
                continue
            if op.builtin_code in _REDUCERS:
                axes = {x % _RANK for x in self.ints(op.inputs[1]) or ()}
                if (a in axes) != (a + 1 in axes):
                    return False
                continue
            data = op.inputs[:1] if op.builtin_code == B.BROADCAST_TO else op.inputs
            if any(pair(t) not in (None, (1, 1), out) for t in data if t >= 0):
                return False
        return True

    def rewrite(self, a: int) -> list[RewriteRecord]:
        edit, tensors = self.edit, self.edit.tensors
        kind, sg = RewriteKind.MERGE_REGIONS, edit.sg.index

        def merged(shape: tuple[int, ...] | list[int]) -> list[int]:
            return [*shape[:a], shape[a] * shape[a + 1], *shape[a + 2:]]

        records, dropped = [], set()
        for k in self.ops:
            # a BROADCAST_TO to its input's own shape is an identity (Keras' masks broadcast a bool to its own
            # shape, which no NNAPI TILE takes): its readers read its input instead
            op = edit.operators[k]
            x, out = op.inputs[0], op.outputs[0]
            if op.builtin_code == B.BROADCAST_TO and x >= 0 and tensors[x].shape == tensors[out].shape:
                for reader in edit.consumers(out):
                    r = edit.operators[reader]
                    edit.replace_op(reader, inputs=tuple(x if t == out else t for t in r.inputs))
                dropped.add(k)
                records.append(RewriteRecord(sg, k, kind, "removed: a BROADCAST_TO to its input's own shape",
                                             removed=True))
        for k in self.ops:
            op = edit.operators[k]
            if k in dropped:
                continue
            out_shape = list(tensors[op.outputs[0]].shape)
            if op.builtin_code == B.RESHAPE:
                if len(out_shape) == _RANK:
                    as_reshape(edit, op, op.inputs[0], merged(out_shape))
                    records.append(RewriteRecord(sg, k, kind, f"RESHAPE to {merged(out_shape)} instead of "
                                                              f"rank-5 {out_shape}"))
                continue
            inputs = list(op.inputs)
            if op.builtin_code in _REDUCERS:
                axes = sorted({x % _RANK for x in self.ints(op.inputs[1]) or ()} - {a + 1})
                inputs[1] = edit.add_constant(f"{tensors[op.outputs[0]].name}/merged_axes",
                                              [x - 1 if x > a + 1 else x for x in axes])
            elif op.builtin_code == B.BROADCAST_TO and len(self.ints(op.inputs[1]) or ()) == _RANK:
                inputs[1] = edit.add_constant(f"{tensors[op.outputs[0]].name}/merged_shape",
                                              merged(self.ints(op.inputs[1]) or ()))
            for slot, t in enumerate(inputs):
                value = None if t < 0 or t in self.dynamic else self.value(t)
                if value is not None and np.ndim(value) == _RANK:
                    inputs[slot] = edit.add_constant(f"{tensors[t].name}/merged",
                                                     np.asarray(value).reshape(merged(np.shape(value))))
            if inputs != list(op.inputs):
                edit.replace_op(k, inputs=tuple(inputs))
            records.append(RewriteRecord(sg, k, kind, f"{op.name} on {merged(out_shape)}, axes {a} and {a + 1} "
                                                      "merged"))
        for t in self.dynamic:
            edit.set_shape(t, merged(tensors[t].shape))
        return records


def _regions(edit: SubgraphEdit, state: ConversionState) -> list[_Region]:
    """The groups of operators connected through rank-5 tensors computed at run time."""
    index = edit.sg.index
    dynamic = {t.index for t in edit.tensors if t.rank == _RANK and t.data is None
               and (index, t.index) not in state.folded}
    owner: dict[int, int] = {}  # tensor -> group id
    groups: dict[int, tuple[set[int], set[int]]] = {}  # group id -> (ops, tensors)
    for op in edit.operators:
        touched = [t for t in (*op.inputs, *op.outputs) if t in dynamic]
        if (not touched or (index, op.index) in state.removed
                or all((index, t) in state.folded for t in op.outputs)):  # folded: never runs (SHAPE)
            continue
        ids = sorted({owner[t] for t in touched if t in owner})
        gid = ids[0] if ids else op.index
        ops, ts = groups.setdefault(gid, (set(), set()))
        for other in ids[1:]:
            o_ops, o_ts = groups.pop(other)
            ops |= o_ops
            ts |= o_ts
        ops.add(op.index)
        ts.update(touched)
        for t in ts:
            owner[t] = gid
    folded = {t: v for (s, t), v in state.folded.items() if s == index}  # this subgraph's folded values
    return [_Region(edit, folded, list(ops), ts) for ops, ts in groups.values()]


@graph_rewrite(RewriteKind.MERGE_REGIONS, "two adjacent axes that every operation of a rank-5 region treats alike "
               "(both full or both 1; reduced together) merge into one without moving data")
def merge_regions(state: ConversionState) -> tuple[TfliteModel, list[RewriteRecord]]:
    def edit_one(edit: SubgraphEdit) -> list[RewriteRecord]:
        records: list[RewriteRecord] = []
        for region in _regions(edit, state):
            a = next((a for a in _FIRST_AXES if region.mergeable(a)), None) if region.supported() else None
            if a is not None:
                records += region.rewrite(a)
        return records
    return edit_each_subgraph(state.model, edit_one)

