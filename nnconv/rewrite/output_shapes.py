"""Output shapes the converter left undeclared, filled in as TFLite's kernels compute them at Prepare.

TensorFlow's converter writes some sequence ops with an output of unknown shape (`shape = []`, e.g. a
UNIDIRECTIONAL_SEQUENCE_RNN legalized from an OpHint stub without shape annotations). TFLite's interpreter
does not read a declared output shape: each kernel's Prepare resizes its output from the input shapes. NNAPI
operands need their dimensions at compilation, so this rewrite gives such an output the shape the kernel
would compute, from static input shapes:

- UNIDIRECTIONAL_SEQUENCE_RNN: [max_time, batch, num_units] time-major, [batch, max_time, num_units] else,
  num_units = weights.shape[0] (input 1, [num_units, input_size]);
- UNIDIRECTIONAL_SEQUENCE_LSTM: the same with n_output = recurrent_to_output_weights.shape[1] (input 8,
  [n_cell, n_output]).

Identity: the output of the op is the tensor its kernel resized, so the declared shape was never used.
Only an undeclared output (rank 0, which a sequence op never produces) of an op whose inputs are static is
given a shape; a declared shape that disagrees is left for validation to report (a corrupt file, exit 2).
"""

from __future__ import annotations

from nnconv.rewrite.graph_edit import SubgraphEdit, edit_each_subgraph
from nnconv.rewrite.registry import RewriteKind, RewriteRecord, graph_rewrite
from nnconv.rewrite.state import ConversionState
from nnconv.tflite.ir import Operator, TfliteModel
from nnconv.tflite.schema_enums import BuiltinOperator as B

# op -> the input slot whose shape[axis] is the number of output features
_FEATURES_FROM = {B.UNIDIRECTIONAL_SEQUENCE_RNN: (1, 0), B.UNIDIRECTIONAL_SEQUENCE_LSTM: (8, 1)}


def sequence_output_shape(edit: SubgraphEdit, op: Operator) -> tuple[int, ...] | None:
    """The shape TFLite's kernel gives output 0 of a sequence op: the input's [time, batch] (or [batch,
    time]) leading axes and the feature count of its weights; None when an input it needs is not static."""
    slot, axis = _FEATURES_FROM[op.builtin_code]
    if len(op.inputs) <= slot or op.inputs[0] < 0 or op.inputs[slot] < 0:
        return None
    x, w = edit.tensors[op.inputs[0]], edit.tensors[op.inputs[slot]]
    if x.rank != 3 or w.rank != 2 or x.has_dynamic_shape or w.has_dynamic_shape:
        return None
    return (x.shape[0], x.shape[1], w.shape[axis])


@graph_rewrite(RewriteKind.OUTPUT_SHAPES, "a TFLite kernel resizes its output at Prepare: the declared output "
               "shape is never read")
def output_shapes(state: ConversionState) -> tuple[TfliteModel, list[RewriteRecord]]:
    def edit_one(edit: SubgraphEdit) -> list[RewriteRecord]:
        records: list[RewriteRecord] = []
        for op in edit.sg.operators:
            if op.builtin_code not in _FEATURES_FROM or not op.outputs or op.outputs[0] < 0:
                continue
            out = edit.tensors[op.outputs[0]]
            shape = sequence_output_shape(edit, op)
            if shape is None or out.rank != 0:
                continue
            edit.set_shape(out.index, shape)
            records.append(RewriteRecord(edit.sg.index, op.index, RewriteKind.OUTPUT_SHAPES,
                                         f"output '{out.name}' declared {list(out.shape)}, computed {list(shape)} "
                                         "as TFLite's kernel does"))
        return records
    return edit_each_subgraph(state.model, edit_one)
