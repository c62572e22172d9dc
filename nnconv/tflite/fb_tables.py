"""Flatbuffer tables that both `.tflite` writers write alike: our test builder (`builder.py`) and the
rewrite's writer (`writer.py`). Each function writes one table or vector and returns its offset."""

from __future__ import annotations

from typing import Any, Sequence

import flatbuffers
import numpy as np
import tflite

from nnconv.tflite.ir import Sparsity
from nnconv.tflite.options_codec import encode_options


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


def write_operator_code(b: flatbuffers.Builder, builtin: int | None, deprecated: int | None, version: int,
                        custom: str | None) -> int:
    """An OperatorCode with the fields given (None: the field left out, as some writers leave it)."""
    cc = b.CreateString(custom) if custom is not None else None
    tflite.OperatorCodeStart(b)
    if deprecated is not None:
        tflite.OperatorCodeAddDeprecatedBuiltinCode(b, deprecated)
    if builtin is not None:
        tflite.OperatorCodeAddBuiltinCode(b, builtin)
    tflite.OperatorCodeAddVersion(b, version)
    if cc is not None:
        tflite.OperatorCodeAddCustomCode(b, cc)
    return tflite.OperatorCodeEnd(b)


def write_operator(b: flatbuffers.Builder, opcode: int, inputs: Sequence[int], outputs: Sequence[int],
                   intermediates: Sequence[int], options: Any, custom_options: bytes | None,
                   large_custom_options: tuple[int, int] | None = None,
                   mutating_variable_inputs: Sequence[bool] | None = None) -> int:
    """An Operator: its tensors, builtin options (a dataclass of `options.py`, in whichever union holds
    it), custom options inline or stored after the flatbuffer (`large_custom_options`: offset, size)."""
    ins, outs = int_vector(b, inputs), int_vector(b, outputs)
    inter = int_vector(b, intermediates) if intermediates else None
    copts = (b.CreateNumpyVector(np.frombuffer(custom_options, np.uint8))
             if custom_options and large_custom_options is None else None)
    mutating = (b.CreateNumpyVector(np.asarray(mutating_variable_inputs, dtype=np.bool_))
                if mutating_variable_inputs is not None else None)
    opts = encode_options(b, options) if options is not None else None
    tflite.OperatorStart(b)
    tflite.OperatorAddOpcodeIndex(b, opcode)
    tflite.OperatorAddInputs(b, ins)
    tflite.OperatorAddOutputs(b, outs)
    if inter is not None:
        tflite.OperatorAddIntermediates(b, inter)
    if copts is not None:
        tflite.OperatorAddCustomOptions(b, copts)
    if large_custom_options is not None:
        tflite.OperatorAddLargeCustomOptionsOffset(b, large_custom_options[0])
        tflite.OperatorAddLargeCustomOptionsSize(b, large_custom_options[1])
    if mutating is not None:
        tflite.OperatorAddMutatingVariableInputs(b, mutating)
    if opts is not None:
        if options.UNION == "BuiltinOptions":
            tflite.OperatorAddBuiltinOptionsType(b, options.UNION_TYPE)
            tflite.OperatorAddBuiltinOptions(b, opts)
        else:
            tflite.OperatorAddBuiltinOptions2Type(b, options.UNION_TYPE)
            tflite.OperatorAddBuiltinOptions2(b, opts)
    return tflite.OperatorEnd(b)


def finish_model(b: flatbuffers.Builder, version: int, description: str, buffers: Sequence[int],
                 codes: Sequence[int], subgraphs: Sequence[int], signatures: Sequence[int],
                 metadata: Sequence[int], metadata_buffer: Sequence[int] = ()) -> bytes:
    """The Model table over the tables written before (offsets), finished with TFLite's file identifier."""
    desc = b.CreateString(description)
    vectors = [offsets_vector(b, offs) for offs in (buffers, codes, subgraphs, signatures, metadata)]
    meta_buf = int_vector(b, metadata_buffer) if metadata_buffer else None
    tflite.ModelStart(b)
    tflite.ModelAddVersion(b, version)
    tflite.ModelAddOperatorCodes(b, vectors[1])
    tflite.ModelAddSubgraphs(b, vectors[2])
    tflite.ModelAddDescription(b, desc)
    tflite.ModelAddBuffers(b, vectors[0])
    if meta_buf is not None:
        tflite.ModelAddMetadataBuffer(b, meta_buf)
    if signatures:
        tflite.ModelAddSignatureDefs(b, vectors[3])
    if metadata:
        tflite.ModelAddMetadata(b, vectors[4])
    b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
    return bytes(b.Output())
