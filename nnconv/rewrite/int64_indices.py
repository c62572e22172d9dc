"""int64 index tensors carried as int32: NNAPI has no 64-bit integer operand type.

TensorFlow's default index type is int64: `tf.argmax` returns int64, `tf.gather` keeps int64 indices, and
`tf.cast(..., tf.int64)` feeds indices. A non-constant int64 tensor becomes TENSOR_INT32 (the lowering's
`nnapi_type`, through `ConversionState.int64_as_int32`) when its values provably fit int32:

- ARG_MAX / ARG_MIN outputs: an index into an axis of a tensor, whose extent is below 2^31;
- a tensor every reader of which takes it as GATHER indices: every valid index lies in
  [-extent, extent) of an axis (TFLite's kernels refuse any other at run time), so the int32 value of
  every input TFLite computes a result for is the int64 value itself. Such a tensor is a model input (the
  executor narrows it at the boundary) or the output of a CAST, which then casts to int32 directly
  (truncation toward zero, as TFLite's static_cast to int64 does for every value that fits).

A model output stays exact either way: int32 widens back to int64 at the boundary. Constants need no
rewrite (the lowering checks that their values fit). The records name the CAST and the index readers.
"""

from __future__ import annotations

from nnconv.rewrite.registry import RewriteKind, RewriteRecord, graph_rewrite
from nnconv.rewrite.state import ConversionState
from nnconv.tflite.ir import Subgraph, TfliteModel
from nnconv.tflite.schema_enums import BuiltinOperator as B
from nnconv.tflite.schema_enums import TensorType

# (operator, input slot) pairs that read indices: an out-of-range value is a run-time error in TFLite.
# GATHER_ND is not among them: its lowering needs constant indices, which are narrowed without a rewrite.
INDEX_SLOTS = {(B.GATHER, 1)}
# ops whose int64 output is an index by construction
INDEX_PRODUCERS = (B.ARG_MAX, B.ARG_MIN)


def _readers(sg: Subgraph) -> dict[int, list[tuple[int, int]]]:
    """tensor -> [(operator index, input slot)] of every operator reading it."""
    found: dict[int, list[tuple[int, int]]] = {}
    for op in sg.operators:
        for slot, t in enumerate(op.inputs):
            if t >= 0:
                found.setdefault(t, []).append((op.index, slot))
    return found


@graph_rewrite(RewriteKind.INT64_INDICES, "an index valid for an axis of fewer than 2^31 elements fits int32, "
               "and TFLite refuses any other")
def int64_indices(state: ConversionState) -> tuple[TfliteModel, list[RewriteRecord]]:
    records: list[RewriteRecord] = []
    kind = RewriteKind.INT64_INDICES
    for sg in state.model.subgraphs:
        readers = _readers(sg)
        producers = {t: op for op in sg.operators for t in op.outputs if t >= 0}
        for t in sg.tensors:
            if t.type != TensorType.INT64 or t.data is not None or (sg.index, t.index) in state.folded:
                continue
            producer = producers.get(t.index)
            if producer is not None and producer.builtin_code in INDEX_PRODUCERS:
                state.int64_as_int32.add((sg.index, t.index))  # indices by construction: nothing to report
                continue
            reads = readers.get(t.index, [])
            if not reads or t.index in sg.outputs:
                continue
            if any((sg.operators[op].builtin_code, slot) not in INDEX_SLOTS for op, slot in reads):
                continue
            if producer is not None and producer.builtin_code != B.CAST:
                continue
            state.int64_as_int32.add((sg.index, t.index))
            if producer is not None:
                records.append(RewriteRecord(sg.index, producer.index, kind,
                                             f"casts to int32: '{t.name}' is only read as indices"))
            for op, _ in reads:
                records.append(RewriteRecord(sg.index, op, kind, f"int64 indices '{t.name}' read as int32"))
    return state.model, records
