"""Flatbuffer tables that both `.tflite` writers write alike: our test builder (`builder.py`) and the
rewrite's writer (`writer.py`). Each function writes one table or vector and returns its offset."""

from __future__ import annotations

from typing import Sequence

import flatbuffers
import numpy as np
import tflite

from nnconv.tflite.ir import Sparsity


def offsets_vector(b: flatbuffers.Builder, offs: Sequence[int]) -> int:
    """A vector of tables (offsets written earlier), in order."""
    b.StartVector(4, len(offs), 4)
    for o in reversed(offs):
        b.PrependUOffsetTRelative(o)
    return b.EndVector()


def int_vector(b: flatbuffers.Builder, values: Sequence[int], dtype: type = np.int32) -> int:
    return b.CreateNumpyVector(np.asarray(list(values), dtype=dtype))


def write_signature(b: flatbuffers.Builder, key: str, subgraph: int, inputs: Sequence[tuple[str, int]],
                    outputs: Sequence[tuple[str, int]]) -> int:
    """A SignatureDef: its key, subgraph and (name, tensor index) maps."""
    def maps(items: Sequence[tuple[str, int]]) -> int:
        offs = []
        for name, index in items:
            n = b.CreateString(name)
            tflite.TensorMapStart(b)
            tflite.TensorMapAddName(b, n)
            tflite.TensorMapAddTensorIndex(b, index)
            offs.append(tflite.TensorMapEnd(b))
        return offsets_vector(b, offs)
    ins, outs = maps(inputs), maps(outputs)
    k = b.CreateString(key)
    tflite.SignatureDefStart(b)
    tflite.SignatureDefAddInputs(b, ins)
    tflite.SignatureDefAddOutputs(b, outs)
    tflite.SignatureDefAddSignatureKey(b, k)
    tflite.SignatureDefAddSubgraphIndex(b, subgraph)
    return tflite.SignatureDefEnd(b)


def write_metadata(b: flatbuffers.Builder, name: str, buffer: int) -> int:
    """A Model.metadata entry: a name and the buffer holding its bytes."""
    n = b.CreateString(name)
    tflite.MetadataStart(b)
    tflite.MetadataAddName(b, n)
    tflite.MetadataAddBuffer(b, buffer)
    return tflite.MetadataEnd(b)


def write_blockwise(b: flatbuffers.Builder, blockwise: tuple[int, int, int]) -> int:
    """The schema's BlockwiseQuantization table (scales, zero_points, block_size: three int fields); the
    `tflite` package predates it, so it is written field by field."""
    b.StartObject(3)
    for slot, value in enumerate(blockwise):
        b.PrependInt32Slot(slot, int(value), 0)
    return b.EndObject()


def write_sparsity(b: flatbuffers.Builder, sp: Sparsity) -> int:
    dims = []
    for d in sp.dim_metadata:
        vecs = []
        for values in (d.array_segments, d.array_indices):
            if d.format == 1:  # SPARSE_CSR: Int32Vector tables
                v = b.CreateNumpyVector(np.asarray(values, dtype=np.int32))
                tflite.Int32VectorStart(b)
                tflite.Int32VectorAddValues(b, v)
                vecs.append(tflite.Int32VectorEnd(b))
        tflite.DimensionMetadataStart(b)
        tflite.DimensionMetadataAddFormat(b, d.format)
        tflite.DimensionMetadataAddDenseSize(b, d.dense_size)
        if vecs:
            tflite.DimensionMetadataAddArraySegmentsType(b, 1)
            tflite.DimensionMetadataAddArraySegments(b, vecs[0])
            tflite.DimensionMetadataAddArrayIndicesType(b, 1)
            tflite.DimensionMetadataAddArrayIndices(b, vecs[1])
        dims.append(tflite.DimensionMetadataEnd(b))
    order = b.CreateNumpyVector(np.asarray(sp.traversal_order, dtype=np.int32))
    block = b.CreateNumpyVector(np.asarray(sp.block_map, dtype=np.int32)) if sp.block_map else None
    dim_vec = offsets_vector(b, dims)
    tflite.SparsityParametersStart(b)
    tflite.SparsityParametersAddTraversalOrder(b, order)
    if block is not None:
        tflite.SparsityParametersAddBlockMap(b, block)
    tflite.SparsityParametersAddDimMetadata(b, dim_vec)
    return tflite.SparsityParametersEnd(b)
