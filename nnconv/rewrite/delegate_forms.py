"""Operator-level rewrites into operators TFLite's NNAPI delegate takes at a lower level than the original,
each an exact identity (`nnconv rewrite`'s "delegate-ops" step; nnconv's own converter lowers the originals
itself, so its pipeline does not run these).

- REVERSE_V2 -> GATHER. The delegate maps REVERSE_V2 only from API 34 (NNAPI's REVERSE, feature level 7);
  TensorFlow writes one per direction of a Keras Bidirectional RNN. GATHER is taken from API 29. Identity,
  for an axis a of static extent n: reverse(x, a)[..., i, ...] = x[..., n-1-i, ...] = gather(x, [n-1, ..., 0],
  axis=a)[..., i, ...]. Both only move values, so the result is the same tensor for every type and
  quantization (input and output keep their parameters).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from nnconv.rewrite.graph_edit import SubgraphEdit
from nnconv.rewrite.standalone import Change
from nnconv.tflite.ir import TfliteModel
from nnconv.tflite.options import GatherOptions
from nnconv.tflite.schema_enums import BuiltinOperator as B
from nnconv.tflite.schema_enums import TensorType

# the types the delegate's GATHER takes (its Validate), with the operator version TFLite gives each
_GATHER_VERSION = {TensorType.FLOAT32: 1, TensorType.INT32: 1, TensorType.UINT8: 1, TensorType.INT8: 2}


def reverse_as_gather(model: TfliteModel) -> tuple[TfliteModel, list[Change]]:
    """Every REVERSE_V2 of the primary subgraph along one constant axis of a static shape, as a GATHER."""
    edit = SubgraphEdit(model.subgraphs[0])
    changes = []
    for op in edit.sg.operators:
        if op.builtin_code != B.REVERSE_V2 or len(op.inputs) != 2 or len(op.outputs) != 1 or min(op.inputs) < 0:
            continue
        x, axis_t = edit.tensors[op.inputs[0]], edit.tensors[op.inputs[1]]
        version = _GATHER_VERSION.get(x.type)
        if version is None or axis_t.data is None or axis_t.data.size != 1 or x.has_dynamic_shape \
                or x.has_dynamic_signature:
            continue
        axis = int(axis_t.data.reshape(-1)[0])
        axis = axis + x.rank if axis < 0 else axis
        if not 0 <= axis < x.rank:
            continue
        n = x.shape[axis]
        indices = edit.add_constant(f"{edit.tensors[op.outputs[0]].name}/reversed_indices",
                                    np.arange(n - 1, -1, -1, dtype=np.int32))
        edit.replace_op(op.index, builtin_code=int(B.GATHER), inputs=(op.inputs[0], indices),
                        options=GatherOptions(axis=axis, batch_dims=0), version=version)
        changes.append(Change(op.index, "reverse-as-gather", f"GATHER of indices [{n - 1}..0] along axis {axis}: "
                                                             "the delegate takes GATHER from API 29"))
    if not changes:
        return model, []
    return dataclasses.replace(model, subgraphs=(edit.finish(), *model.subgraphs[1:])), changes
