"""The TfLiteContext the delegate reads: every tensor as TFLite holds it after its Prepare, and every node.

The delegate never sees the `.tflite` file. It reads `TfLiteTensor`s: the type, the dims each kernel's Prepare
gave it (`tflite/prepare.py`), the legacy `params` (scale and zero point of a per-tensor quantization, 0 and 0
otherwise), the affine quantization arrays, and the allocation type, where "constant" means one thing only:
data in the model file (`kTfLiteMmapRo`, `IsConstantTensor`). A value TFLite computed at Prepare (SHAPE's
output) is not constant to the delegate, and nothing nnconv folds is either.

The float16 path (`FP16GraphPartitionHelper`) points the readers of a constant float16 DEQUANTIZE at the
float16 constant itself: `DelegateGraph.remapped` gives the node as the delegate then sees it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from typing import Mapping, Sequence

import numpy as np

from nnconv.tflite.ir import Operator, Quantization, Sparsity, Subgraph, TfliteModel
from nnconv.tflite.prepare import Allocation, PreparedSubgraph, prepare_subgraph
from nnconv.tflite.schema_enums import BuiltinOperator, TensorType

OPTIONAL = -1  # kTfLiteOptionalTensor

# TfLiteType names as the delegate's messages print them (`EXPECT_INPUT_TYPE_IN` stringifies its arguments).
TFLITE_TYPE_NAMES = {
    TensorType.FLOAT32: "kTfLiteFloat32", TensorType.FLOAT16: "kTfLiteFloat16", TensorType.INT32: "kTfLiteInt32",
    TensorType.UINT8: "kTfLiteUInt8", TensorType.INT64: "kTfLiteInt64", TensorType.STRING: "kTfLiteString",
    TensorType.BOOL: "kTfLiteBool", TensorType.INT16: "kTfLiteInt16", TensorType.COMPLEX64: "kTfLiteComplex64",
    TensorType.INT8: "kTfLiteInt8", TensorType.FLOAT64: "kTfLiteFloat64", TensorType.RESOURCE: "kTfLiteResource",
    TensorType.VARIANT: "kTfLiteVariant", TensorType.UINT32: "kTfLiteUInt32", TensorType.UINT16: "kTfLiteUInt16",
    TensorType.INT4: "kTfLiteInt4", TensorType.UINT64: "kTfLiteUInt64", TensorType.COMPLEX128: "kTfLiteComplex128",
}
# `TfLiteTypeGetName`, which the delegate's "type %s is not supported" error prints.
TYPE_GET_NAME = {
    TensorType.FLOAT32: "FLOAT32", TensorType.FLOAT16: "FLOAT16", TensorType.INT32: "INT32",
    TensorType.UINT8: "UINT8", TensorType.INT64: "INT64", TensorType.STRING: "STRING", TensorType.BOOL: "BOOL",
    TensorType.INT16: "INT16", TensorType.COMPLEX64: "COMPLEX64", TensorType.INT8: "INT8",
    TensorType.FLOAT64: "FLOAT64", TensorType.RESOURCE: "RESOURCE", TensorType.VARIANT: "VARIANT",
    TensorType.UINT32: "UINT32", TensorType.UINT16: "UINT16", TensorType.INT4: "INT4",
    TensorType.UINT64: "UINT64", TensorType.COMPLEX128: "COMPLEX128",
}


@dataclass(frozen=True)
class TensorInfo:
    """One `TfLiteTensor` as the delegate reads it."""

    index: int
    name: str
    type: TensorType
    dims: tuple[int, ...]
    signature: tuple[int, ...] | None
    quant: Quantization
    allocation: Allocation
    data: np.ndarray | None
    sparsity: Sparsity | None = None

    @property
    def constant(self) -> bool:
        """`IsConstantTensor` / `allocation_type == kTfLiteMmapRo`: data in the model file."""
        return self.allocation is Allocation.MMAP_RO

    @property
    def affine(self) -> bool:
        """`quantization.type == kTfLiteAffineQuantization`: a non-empty scale array (blockwise details make
        another quantization type)."""
        return bool(self.quant.scale) and self.quant.blockwise is None and self.quant.details == 0

    @property
    def scale(self) -> float:
        """`params.scale`: the scale of a per-tensor affine quantization, else 0."""
        return float(np.float32(self.quant.scale[0])) if self.affine and len(self.quant.scale) == 1 else 0.0

    @property
    def zero_point(self) -> int:
        return int(self.quant.zero_point[0]) if self.affine and len(self.quant.scale) == 1 \
            and self.quant.zero_point else 0

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def num_elements(self) -> int:
        return int(np.prod(self.dims, dtype=np.int64)) if self.dims else 1

    def values(self) -> np.ndarray:
        """The constant's elements, flat, in its own dtype (an empty array when it has none)."""
        if self.data is None:
            return np.zeros(0)
        return np.asarray(self.data).reshape(-1)


@dataclass(frozen=True)
class Node:
    """One node of the execution plan: `TfLiteNode` plus its registration's builtin code and version."""

    index: int
    op: int  # builtin code (BuiltinOperator value; CUSTOM for custom ops)
    version: int
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    intermediates: tuple[int, ...]
    options: object
    name: str  # e.g. "CONV_2D" or "CUSTOM(name)"
    custom_code: str | None = None


class DelegateGraph:
    """The primary subgraph as TFLite holds it when the delegate's DoPrepare runs."""

    def __init__(self, model: TfliteModel, prepared: PreparedSubgraph | None = None, subgraph: int = 0) -> None:
        self.model = model
        self.subgraph: Subgraph = model.subgraphs[subgraph]
        self.prepared = prepared if prepared is not None else prepare_subgraph(model, subgraph)
        sg, p = self.subgraph, self.prepared
        values: Mapping[int, np.ndarray] = p.values
        self.tensors: list[TensorInfo] = [
            TensorInfo(t.index, t.name, t.type, tuple(p.shapes[t.index]), t.shape_signature, t.quantization,
                       p.allocation[t.index], t.data if t.data is not None else values.get(t.index), t.sparsity)
            for t in sg.tensors]
        self.nodes: list[Node] = [
            Node(op.index, op.builtin_code, op.version, tuple(op.inputs), tuple(op.outputs),
                 tuple(op.intermediates), op.options, op.name, op.custom_code)
            for op in sg.operators]
        self.inputs: tuple[int, ...] = tuple(sg.inputs)
        self.outputs: tuple[int, ...] = tuple(sg.outputs)

    @property
    def plan(self) -> list[int]:
        """The execution plan: every node, in order (TFLite's plan before any delegate)."""
        return list(range(len(self.nodes)))

    def tensor(self, index: int) -> TensorInfo:
        return self.tensors[index]

    @cached_property
    def producers(self) -> dict[int, int]:
        return {t: n.index for n in self.nodes for t in n.outputs if t >= 0}

    # -- the float16 weight path -------------------------------------------------------------------
    def is_const_fp16_dequantize(self, node: Node) -> bool:
        """`IsDequantizeConstFloat16`."""
        return node.op == BuiltinOperator.DEQUANTIZE and bool(node.inputs) and node.inputs[0] >= 0 \
            and self.tensors[node.inputs[0]].type == TensorType.FLOAT16 and self.tensors[node.inputs[0]].constant

    def is_nonconst_fp16_dequantize(self, node: Node) -> bool:
        """`IsDequantizeNonConstFloat16`."""
        return node.op == BuiltinOperator.DEQUANTIZE and bool(node.inputs) and node.inputs[0] >= 0 \
            and self.tensors[node.inputs[0]].type == TensorType.FLOAT16 \
            and not self.tensors[node.inputs[0]].constant

    def is_const_densify(self, node: Node) -> bool:
        """`IsDensifyConstTensor`."""
        return node.op == BuiltinOperator.DENSIFY and bool(node.inputs) and node.inputs[0] >= 0 \
            and self.tensors[node.inputs[0]].constant

    @cached_property
    def fp16_constants(self) -> dict[int, int]:
        """Output of each constant float16 DEQUANTIZE -> its float16 constant (`constant_dequant_map_`)."""
        return {n.outputs[0]: n.inputs[0] for n in self.nodes
                if self.is_const_fp16_dequantize(n) and n.outputs and n.outputs[0] >= 0}

    def remapped(self, node: Node) -> Node:
        """The node reading the float16 constants directly, as `RemapFp16InputTensors` leaves it."""
        mapping = self.fp16_constants
        if not mapping or not any(t in mapping for t in node.inputs):
            return node
        return replace(node, inputs=tuple(mapping.get(t, t) for t in node.inputs))


def type_name(t: TensorType) -> str:
    return TFLITE_TYPE_NAMES.get(t, f"kTfLite{t.name.title()}")


def names(types: Sequence[TensorType]) -> str:
    return ", ".join(type_name(t) for t in types)
