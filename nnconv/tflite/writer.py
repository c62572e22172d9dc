"""Writes a TFLite IR back into a `.tflite` flatbuffer, over the file it was read from (`nnconv rewrite`).

The IR holds what the converter and the rewrites work on; the original file holds the rest, which the writer
copies from it unchanged: every buffer (byte for byte, at its index), the operator codes, the model's
metadata entries and `metadata_buffer` (TFLite's and MediaPipe's metadata live in buffers named there), and
the few fields the IR does not carry (`Tensor.has_rank`, `Tensor.variant_tensors`,
`Operator.mutating_variable_inputs`). Tensors keep their indices (signature defs name tensors by index), so
only operators and tensor contents come from the IR.

Buffers: a tensor the IR gives new data (`buffer` < 0 and `data`, a constant a rewrite added) gets a buffer
of its own, unless an existing buffer holds the same bytes (a reshaped view of a weight is the same bytes:
it is shared, not copied); a buffer no tensor or metadata entry names any more is written empty at its index,
so nothing else is renumbered. Buffers are written inline, 16-byte aligned, as TensorFlow's converter writes
models under 2 GB. An operator whose builtin code the IR changed (a rewrite turned a TILE into a RESHAPE) gets
an operator code for its new kind at its IR version.
"""

from __future__ import annotations

import hashlib
from typing import Any, Mapping

import flatbuffers
import numpy as np
import tflite

from nnconv.errors import EXIT_NOT_CONVERTIBLE, NnconvError
from nnconv.tflite.fb_tables import int_vector as _ints
from nnconv.tflite.fb_tables import offsets_vector as _offsets
from nnconv.tflite.fb_tables import (finish_model, write_blockwise, write_metadata, write_operator, write_operator_code,
                                     write_signature, write_sparsity)
from nnconv.tflite.ir import Operator, Quantization, Subgraph, Tensor, TfliteModel
from nnconv.tflite.schema_enums import BuiltinOperator

MAX_INLINE_BYTES = 2**31 - 1  # a flatbuffer addresses 2 GB; larger models store buffers after it
_ALIGN = 16  # keeps every constant's numpy view (and TFLite's) aligned

# (deprecated_builtin_code, builtin_code, custom_code, version): an operator code as stored
OpCode = tuple[int, int, str | None, int]


class WriteError(NnconvError):
    """The model cannot be written back (a field this writer cannot carry over): not rewritable (exit 3)."""

    exit_code = EXIT_NOT_CONVERTIBLE


def write_model(model: TfliteModel, original: bytes | bytearray | memoryview | Any,
                op_origin: Mapping[tuple[int, int], int] | None = None) -> bytes:
    """The bytes of `model` written over `original`, the file it was read from (see the module docstring).
    `op_origin` maps (subgraph, operator index in `model`) to the operator's index in `original`, for the
    fields only the file carries (an operator it does not name is new); without it an operator's index is its
    original index."""
    m = tflite.Model.GetRootAs(original, 0)
    view = memoryview(original)
    buffers = _original_buffers(m, view)
    opcodes = [_opcode(m.OperatorCodes(i)) for i in range(m.OperatorCodesLength())]
    metadata = [((m.Metadata(i).Name() or b"").decode("utf-8", "replace"), m.Metadata(i).Buffer())
                for i in range(m.MetadataLength())]
    metadata_buffer = [int(v) for v in (m.MetadataBufferAsNumpy() if m.MetadataBufferLength() else ())]
    tensor_buffers = _assign_buffers(model, buffers)
    named = {0, *(b for _, b in metadata), *metadata_buffer,
             *(b for per_sg in tensor_buffers for b in per_sg)}
    data = [buffers[i] if i in named else None for i in range(len(buffers))]
    if sum(len(d) for d in data if d is not None) > MAX_INLINE_BYTES:
        raise WriteError("models of more than 2 GB of weights cannot be rewritten (their buffers live after "
                         "the flatbuffer)")
    operator_codes = _operator_codes(model, opcodes)
    b = flatbuffers.Builder(sum(len(d) for d in data if d is not None) + 1024 * 1024)
    buf_offs = [_buffer(b, d) for d in data]
    oc_offs = [write_operator_code(b, builtin, deprecated, version, custom)
               for deprecated, builtin, custom, version in operator_codes.codes]
    sg_offs = [_subgraph(b, m.Subgraphs(sg.index), sg, tensor_buffers[k], operator_codes.index[k],
                         {i: i if op_origin is None else op_origin.get((sg.index, i)) for i in range(len(sg.operators))})
               for k, sg in enumerate(model.subgraphs)]
    sig_offs = [write_signature(b, s.signature_key, s.subgraph_index, s.inputs, s.outputs)
                for s in model.signature_defs]
    meta_offs = [write_metadata(b, name, buffer) for name, buffer in metadata]
    return finish_model(b, model.version, model.description, buf_offs, oc_offs, sg_offs, sig_offs, meta_offs,
                        metadata_buffer)


# -- buffers ------------------------------------------------------------------------------------------
def _original_buffers(m: Any, view: memoryview) -> list[memoryview | None]:
    """Each buffer's bytes in the original file (views, not copies); None when empty."""
    out: list[memoryview | None] = []
    for i in range(m.BuffersLength()):
        buf = m.Buffers(i)
        if buf.Offset() > 1:  # stored after the flatbuffer
            out.append(view[buf.Offset():buf.Offset() + buf.Size()] if buf.Size() else None)
            continue
        n = buf.DataLength()
        if not n:
            out.append(None)
            continue
        start = buf._tab.Vector(buf._tab.Offset(4))
        out.append(view[start:start + n])
    return out


def _assign_buffers(model: TfliteModel, buffers: list[memoryview | None]) -> list[list[int]]:
    """Per subgraph, each tensor's buffer index; new constants are appended to `buffers` (or share a buffer
    holding the same bytes)."""
    by_digest: dict[tuple[int, bytes], int] | None = None
    out = []
    for sg in model.subgraphs:
        indices = []
        for t in sg.tensors:
            if t.buffer >= 0 or t.data is None:
                indices.append(max(t.buffer, 0))
                continue
            raw = np.ascontiguousarray(t.data).tobytes()
            if by_digest is None:  # hash the existing buffers only when a rewrite added a constant
                by_digest = {(len(d), hashlib.sha256(d).digest()): i for i, d in enumerate(buffers) if d is not None}
            key = (len(raw), hashlib.sha256(raw).digest())
            if not raw:
                indices.append(0)
            elif key in by_digest:
                indices.append(by_digest[key])
            else:
                buffers.append(memoryview(raw))
                by_digest[key] = len(buffers) - 1
                indices.append(len(buffers) - 1)
        out.append(indices)
    return out


def _buffer(b: flatbuffers.Builder, data: memoryview | None) -> int:
    if data is None or not len(data):
        tflite.BufferStart(b)
        return tflite.BufferEnd(b)
    n = len(data)
    b.StartVector(1, n, _ALIGN)
    b.head = b.head - n
    b.Bytes[b.head:b.head + n] = data
    vec = b.EndVector()
    tflite.BufferStart(b)
    tflite.BufferAddData(b, vec)
    return tflite.BufferEnd(b)


# -- operator codes -----------------------------------------------------------------------------------
def _opcode(oc: Any) -> OpCode:
    o = oc._tab.Offset(10)  # the raw builtin_code (reader.py explains why not BuiltinCode())
    raw = int(oc._tab.Get(flatbuffers.number_types.Int32Flags, o + oc._tab.Pos)) if o else 0
    custom = oc.CustomCode()
    return (int(oc.DeprecatedBuiltinCode()), raw, custom.decode("utf-8", "replace") if custom else None,
            int(oc.Version()))


class _OperatorCodes:
    """The original operator codes, plus one per (kind, version) a rewrite introduced (a new kind, or the same
    kind at another version: a rank-5 TRANSPOSE merged to rank 4 is version 1 again)."""

    def __init__(self, codes: list[OpCode]) -> None:
        self.codes = list(codes)
        self.index: list[list[int]] = []

    def resolve(self, op: Operator) -> int:
        if 0 <= op.opcode_index < len(self.codes) and self.codes[op.opcode_index][3] == op.version and \
                _kind(self.codes[op.opcode_index]) == (op.builtin_code, op.custom_code):
            return op.opcode_index
        for i, oc in enumerate(self.codes):
            if _kind(oc) == (op.builtin_code, op.custom_code) and oc[3] == op.version:
                return i
        # both fields, as TensorFlow's converter writes them (the deprecated one saturates at 127)
        self.codes.append((min(op.builtin_code, 127), op.builtin_code, op.custom_code, op.version))
        return len(self.codes) - 1


def _kind(oc: OpCode) -> tuple[int, str | None]:
    code = max(oc[0], oc[1])
    return code, oc[2] if code == BuiltinOperator.CUSTOM else None


def _operator_codes(model: TfliteModel, codes: list[OpCode]) -> _OperatorCodes:
    found = _OperatorCodes(codes)
    found.index = [[found.resolve(op) for op in sg.operators] for sg in model.subgraphs]
    return found


# -- subgraphs ----------------------------------------------------------------------------------------
def _subgraph(b: flatbuffers.Builder, src: Any, sg: Subgraph, buffers: list[int], opcodes: list[int],
              origin: dict[int, int | None]) -> int:
    t_offs = [_tensor(b, t, buffers[t.index], src.Tensors(t.index) if t.index < src.TensorsLength() else None)
              for t in sg.tensors]
    op_offs = [_operator(b, op, opcodes[k], src.Operators(origin[k])
                         if origin[k] is not None and origin[k] < src.OperatorsLength() else None)
               for k, op in enumerate(sg.operators)]
    tensors, operators = _offsets(b, t_offs), _offsets(b, op_offs)
    ins, outs = _ints(b, sg.inputs), _ints(b, sg.outputs)
    name = b.CreateString(sg.name)
    tflite.SubGraphStart(b)
    tflite.SubGraphAddTensors(b, tensors)
    tflite.SubGraphAddOperators(b, operators)
    tflite.SubGraphAddInputs(b, ins)
    tflite.SubGraphAddOutputs(b, outs)
    tflite.SubGraphAddName(b, name)
    return tflite.SubGraphEnd(b)


def _quantization(b: flatbuffers.Builder, q: Quantization) -> int | None:
    if not (q.scale or q.zero_point or q.min or q.max or q.details):
        return None
    vecs = {name: b.CreateNumpyVector(np.asarray(values, dtype=dtype))
            for name, values, dtype in (("min", q.min, np.float32), ("max", q.max, np.float32),
                                        ("scale", q.scale, np.float32), ("zp", q.zero_point, np.int64)) if values}
    details = write_blockwise(b, q.blockwise) if q.blockwise is not None else None
    tflite.QuantizationParametersStart(b)
    if "min" in vecs:
        tflite.QuantizationParametersAddMin(b, vecs["min"])
    if "max" in vecs:
        tflite.QuantizationParametersAddMax(b, vecs["max"])
    if "scale" in vecs:
        tflite.QuantizationParametersAddScale(b, vecs["scale"])
    if "zp" in vecs:
        tflite.QuantizationParametersAddZeroPoint(b, vecs["zp"])
    if details is not None:
        tflite.QuantizationParametersAddDetailsType(b, q.details)
        tflite.QuantizationParametersAddDetails(b, details)
    tflite.QuantizationParametersAddQuantizedDimension(b, q.quantized_dimension)
    return tflite.QuantizationParametersEnd(b)


def _tensor(b: flatbuffers.Builder, t: Tensor, buffer: int, src: Any) -> int:
    if t.quantization.details and t.quantization.blockwise is None:
        raise WriteError(f"tensor '{t.name}' has quantization details this writer cannot carry over")
    name = b.CreateString(t.name)
    shape = _ints(b, t.shape)
    sig = _ints(b, t.shape_signature) if t.shape_signature is not None else None
    q = _quantization(b, t.quantization)
    sp = write_sparsity(b, t.sparsity) if t.sparsity is not None else None
    variants = _variants(b, src) if src is not None and src.VariantTensorsLength() else None
    tflite.TensorStart(b)
    tflite.TensorAddShape(b, shape)
    tflite.TensorAddType(b, int(t.type))
    tflite.TensorAddBuffer(b, buffer)
    tflite.TensorAddName(b, name)
    if q is not None:
        tflite.TensorAddQuantization(b, q)
    if t.is_variable:
        tflite.TensorAddIsVariable(b, True)
    if sp is not None:
        tflite.TensorAddSparsity(b, sp)
    if sig is not None:
        tflite.TensorAddShapeSignature(b, sig)
    if src is not None and src.HasRank():
        tflite.TensorAddHasRank(b, True)
    if variants is not None:
        tflite.TensorAddVariantTensors(b, variants)
    return tflite.TensorEnd(b)


def _variants(b: flatbuffers.Builder, src: Any) -> int:
    offs = []
    for i in range(src.VariantTensorsLength()):
        v = src.VariantTensors(i)
        shape = _ints(b, [int(d) for d in v.ShapeAsNumpy()]) if v.ShapeLength() else None
        tflite.VariantSubTypeStart(b)
        if shape is not None:
            tflite.VariantSubTypeAddShape(b, shape)
        tflite.VariantSubTypeAddType(b, v.Type())
        tflite.VariantSubTypeAddHasRank(b, v.HasRank())
        offs.append(tflite.VariantSubTypeEnd(b))
    return _offsets(b, offs)


def _operator(b: flatbuffers.Builder, op: Operator, opcode: int, src: Any) -> int:
    if op.options is None and src is not None and _same_kind(opcode, src) and (
            src.BuiltinOptionsType() or src.BuiltinOptions2Type()):
        raise WriteError(f"operator {op.index} ({op.name}) has builtin options of a kind this writer does not know")
    mutating = None
    if src is not None and _same_kind(opcode, src) and src.MutatingVariableInputsLength():
        mutating = [bool(v) for v in src.MutatingVariableInputsAsNumpy()]
    return write_operator(b, opcode, op.inputs, op.outputs, op.intermediates, op.options, op.custom_options,
                          mutating_variable_inputs=mutating)


def _same_kind(opcode: int, src: Any) -> bool:
    """The operator still has the file's operator code: a rewrite did not change its kind."""
    return src.OpcodeIndex() == opcode
