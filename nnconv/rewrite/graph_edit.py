"""Editing one TFLite subgraph of the frozen IR: consumers, new constants, changed shapes and operators.

Rewrites keep every operator at its index (reports, partition plans and per-op parity refer to TFLite's
operator indices) and every existing tensor at its index; new constants are appended after the model's own
tensors, so they never collide with a tensor TFLite's interpreter knows.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence, TypeVar

import numpy as np

from nnconv.tflite.ir import TENSOR_TYPE_OF_DTYPE, Operator, Quantization, Subgraph, Tensor, TfliteModel
from nnconv.tflite.schema_enums import TensorType

NO_BUFFER = -1  # appended constants have no buffer in the file; their data lives in `Tensor.data`


class SubgraphEdit:
    """Mutable copy of a subgraph's tensor and operator lists; `finish()` returns the new Subgraph."""

    def __init__(self, sg: Subgraph) -> None:
        self.sg = sg
        self.tensors: list[Tensor] = list(sg.tensors)
        self.operators: list[Operator] = list(sg.operators)
        self._consumers: dict[int, list[int]] | None = None
        self.changed = False

    def consumers(self, tensor: int) -> list[int]:
        """Indices of the operators (of the original subgraph) reading `tensor`."""
        if self._consumers is None:
            found: dict[int, list[int]] = {}
            for op in self.sg.operators:
                for t in dict.fromkeys(op.inputs):
                    if t >= 0:
                        found.setdefault(t, []).append(op.index)
            self._consumers = found
        return self._consumers.get(tensor, [])

    def producer(self, tensor: int) -> Operator | None:
        return next((op for op in self.sg.operators if tensor in op.outputs), None)

    def is_internal(self, tensor: int) -> bool:
        """True when the tensor is neither an input nor an output of the subgraph."""
        return tensor not in self.sg.inputs and tensor not in self.sg.outputs

    def add_constant(self, name: str, value: np.ndarray | Sequence[int]) -> int:
        """Appends a constant tensor (int32 for Python integer lists) and returns its index."""
        arr = np.asarray(value, dtype=np.int32) if not isinstance(value, np.ndarray) else value
        arr = np.ascontiguousarray(arr)
        arr.setflags(write=False)
        index = len(self.tensors)
        self.tensors.append(Tensor(index=index, name=name, shape=tuple(arr.shape), shape_signature=None,
                                   type=TENSOR_TYPE_OF_DTYPE[arr.dtype], buffer=NO_BUFFER, data=arr))
        self.changed = True
        return index

    def add_tensor(self, name: str, shape: Sequence[int], like: Tensor, type: TensorType | None = None) -> int:
        """Appends a computed tensor of `shape` with `like`'s type (or `type`, unquantized) and quantization."""
        index = len(self.tensors)
        quant = like.quantization if type is None else Quantization()
        self.tensors.append(Tensor(index=index, name=name, shape=tuple(int(d) for d in shape),
                                   shape_signature=None, type=like.type if type is None else type,
                                   buffer=NO_BUFFER, quantization=quant))
        self.changed = True
        return index

    def set_shape(self, tensor: int, shape: Sequence[int]) -> None:
        t = self.tensors[tensor]
        self.tensors[tensor] = dataclasses.replace(t, shape=tuple(int(d) for d in shape), shape_signature=None)
        self.changed = True

    def replace_op(self, op_index: int, **changes: Any) -> None:
        """Changes fields of an operator (inputs, builtin_code, options, ...), keeping its index."""
        self.operators[op_index] = dataclasses.replace(self.operators[op_index], **changes)
        self.changed = True

    def finish(self) -> Subgraph:
        if not self.changed:
            return self.sg
        return dataclasses.replace(self.sg, tensors=tuple(self.tensors), operators=tuple(self.operators))


R = TypeVar("R")


def edit_each_subgraph(model: TfliteModel, edit_one: Callable[[SubgraphEdit], list[R]]) -> tuple[TfliteModel, list[R]]:
    """`edit_one` on an edit of every subgraph in turn: the model with the edited subgraphs, and what the
    calls returned (a rewrite's records), in subgraph order."""
    found: list[R] = []
    subgraphs = []
    for sg in model.subgraphs:
        edit = SubgraphEdit(sg)
        found += edit_one(edit)
        subgraphs.append(edit.finish())
    return dataclasses.replace(model, subgraphs=tuple(subgraphs)), found
