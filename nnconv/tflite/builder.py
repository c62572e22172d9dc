"""Our own `.tflite` writer, for tests and fixtures: builds models op by op without TensorFlow.

    b = TfliteBuilder()
    x = b.input("x", (1, 5, 7, 3), np.float32)
    w = b.const("w", weights)
    y = b.tensor("y", (1, 5, 7, 4), np.float32)
    b.op(BuiltinOperator.CONV_2D, [x, w, bias], [y], Conv2DOptions(padding=Padding.SAME, stride_w=1, stride_h=1))
    b.output(y)
    data = b.finish()            # bytes of a valid TFL3 flatbuffer

Quantized tensors take `quant=QuantParams(scale, zero_point, quantized_dimension)`. Extra subgraphs (for
WHILE / IF bodies) come from `b.subgraph()`, which returns a builder with the same methods.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import flatbuffers
import numpy as np
import tflite

from nnconv.tflite.fb_tables import (finish_model, int_vector, offsets_vector, write_blockwise, write_metadata,
                                     write_operator, write_operator_code, write_signature, write_sparsity)
from nnconv.tflite.int4 import pack_int4
from nnconv.tflite.ir import TENSOR_TYPE_OF_DTYPE, Sparsity
from nnconv.tflite.schema_enums import BuiltinOperator, TensorType


@dataclass(frozen=True)
class QuantParams:
    scale: float | Sequence[float]
    zero_point: int | Sequence[int] = 0
    quantized_dimension: int = 0
    # (scales tensor, zero points tensor or -1, block size): written as the `details` union's
    # BlockwiseQuantization table, as AI Edge Quantizer writes blockwise int4 weights
    blockwise: tuple[int, int, int] | None = None


@dataclass
class _TensorSpec:
    name: str
    shape: tuple[int, ...]
    type: TensorType
    buffer: int
    quant: QuantParams | None
    shape_signature: tuple[int, ...] | None
    is_variable: bool = False
    sparsity: Sparsity | None = None


@dataclass
class _OpSpec:
    opcode: int
    inputs: list[int]
    outputs: list[int]
    options: Any
    intermediates: list[int] = field(default_factory=list)
    custom_options: bytes | None = None


_OPCODE_FIELDS = ("both", "builtin_only", "deprecated_only")


def _align(n: int, to: int) -> int:
    return (n + to - 1) // to * to


def tensor_type_of(dtype: Any) -> TensorType:
    if isinstance(dtype, TensorType):
        return dtype
    return TENSOR_TYPE_OF_DTYPE[np.dtype(dtype)]


class SubgraphBuilder:
    def __init__(self, owner: "TfliteBuilder", name: str = "") -> None:
        self._owner = owner
        self.name = name
        self.tensors: list[_TensorSpec] = []
        self.ops: list[_OpSpec] = []
        self.inputs: list[int] = []
        self.outputs: list[int] = []

    def tensor(self, name: str, shape: Sequence[int], dtype: Any, quant: QuantParams | None = None,
               shape_signature: Sequence[int] | None = None, is_variable: bool = False) -> int:
        """A tensor computed by an operator (no buffer data)."""
        self.tensors.append(_TensorSpec(name, tuple(int(d) for d in shape), tensor_type_of(dtype),
                                        self._owner.add_buffer(None), quant,
                                        None if shape_signature is None else tuple(shape_signature),
                                        is_variable))
        return len(self.tensors) - 1

    def input(self, name: str, shape: Sequence[int], dtype: Any, quant: QuantParams | None = None,
              shape_signature: Sequence[int] | None = None) -> int:
        """A subgraph input."""
        t = self.tensor(name, shape, dtype, quant, shape_signature)
        self.inputs.append(t)
        return t

    def const(self, name: str, value: Any, dtype: Any = None, quant: QuantParams | None = None,
              shape: Sequence[int] | None = None, sparsity: Sparsity | None = None) -> int:
        """A constant tensor; `dtype` defaults to the array's own dtype. With `sparsity`, `value` holds only
        the stored (non-zero) values and `shape` gives the dense shape."""
        arr = np.asarray(value, dtype=dtype)
        ttype = tensor_type_of(arr.dtype)
        self.tensors.append(_TensorSpec(name, tuple(arr.shape if shape is None else shape), ttype,
                                        self._owner.add_buffer(np.ascontiguousarray(arr).tobytes()), quant,
                                        None, sparsity=sparsity))
        return len(self.tensors) - 1

    def const_int4(self, name: str, values: Any, quant: QuantParams | None = None) -> int:
        """An INT4 constant: int values in -8..7, packed two a byte as TFLite stores them."""
        arr = np.asarray(values)
        return self.copied_tensor(name, arr.shape, TensorType.INT4, pack_int4(arr), quant)

    def copied_tensor(self, name: str, shape: Sequence[int], tensor_type: TensorType, data: bytes | None,
                      quant: QuantParams | None = None, shape_signature: Sequence[int] | None = None,
                      is_variable: bool = False) -> int:
        """A tensor given as a read model holds it: its TFLite type and its buffer's raw bytes (None: no
        data), for rewriting an existing model (e.g. the float twin of `nnconv.parity.twin`)."""
        self.tensors.append(_TensorSpec(name, tuple(int(d) for d in shape), tensor_type, self._owner.add_buffer(data),
                                        quant, None if shape_signature is None else tuple(shape_signature),
                                        is_variable))
        return len(self.tensors) - 1

    def output(self, *tensors: int) -> None:
        self.outputs.extend(tensors)

    def op(self, opcode: BuiltinOperator | int, inputs: Sequence[int], outputs: Sequence[int],
           options: Any = None, version: int = 1, custom_code: str | None = None,
           intermediates: Sequence[int] = (), custom_options: bytes | None = None) -> None:
        """An operator; `-1` in `inputs` is an omitted optional input."""
        idx = self._owner.opcode_index(int(opcode), version, custom_code)
        self.ops.append(_OpSpec(idx, list(inputs), list(outputs), options, list(intermediates), custom_options))


class TfliteBuilder(SubgraphBuilder):
    """Builds a whole model; its own methods build subgraph 0."""

    def __init__(self, description: str = "nnconv test model") -> None:
        super().__init__(self, "main")
        self.description = description
        self.buffers: list[bytes | None] = [None]  # buffer 0 is the conventional empty buffer
        self.opcodes: list[tuple[int, int, str | None]] = []
        self.subgraphs: list[SubgraphBuilder] = [self]
        self.signatures: list[tuple[str, int]] = []
        self.metadata: list[tuple[str, int]] = []  # (name, buffer): TFLite's and MediaPipe's metadata entries

    def subgraph(self, name: str = "") -> SubgraphBuilder:
        sb = SubgraphBuilder(self, name)
        self.subgraphs.append(sb)
        return sb

    def subgraph_index(self, sb: SubgraphBuilder) -> int:
        return self.subgraphs.index(sb)

    def add_buffer(self, data: bytes | None) -> int:
        if data is None:
            return 0
        self.buffers.append(data)
        return len(self.buffers) - 1

    def opcode_index(self, code: int, version: int, custom_code: str | None) -> int:
        key = (code, version, custom_code)
        if key not in self.opcodes:
            self.opcodes.append(key)
        return self.opcodes.index(key)

    def add_signature(self, key: str = "serving_default", subgraph_index: int = 0) -> None:
        self.signatures.append((key, subgraph_index))

    def add_metadata(self, name: str, data: bytes) -> None:
        """A Model.metadata entry naming a buffer that holds `data` (TFLite Support's "TFLITE_METADATA",
        "min_runtime_version", ...)."""
        self.metadata.append((name, self.add_buffer(data)))

    # -- serialization ----------------------------------------------------------------------------
    def finish(self, *, opcode_fields: str = "both", buffers_after: bool = False) -> bytes:
        """The model's bytes. The layout options write what other writers write, so tests cover every form
        TFLite reads:
        - `opcode_fields`: "both" (TensorFlow's converter: `deprecated_builtin_code` saturated at 127 and
          `builtin_code`), "builtin_only" (AI Edge Quantizer and litert-torch: the deprecated field left at
          0), or "deprecated_only" (files from before schema 3a; codes above 127 cannot be written so).
        - `buffers_after`: every non-empty buffer stored after the flatbuffer, 16-byte aligned, and named by
          `Buffer.offset`/`size`, and custom options by `Operator.large_custom_options_offset`/`size` (the
          converter's layout for models over 2 GB)."""
        if opcode_fields not in _OPCODE_FIELDS:
            raise ValueError(f"opcode_fields must be one of {', '.join(_OPCODE_FIELDS)}, not {opcode_fields!r}")
        if opcode_fields == "deprecated_only" and any(code > 127 for code, _, _ in self.opcodes):
            raise ValueError("operator codes above 127 exist only in builtin_code")
        if not buffers_after:
            return self._serialize(opcode_fields, None)
        # Offsets and sizes are fixed-width scalars that are always written, so the flatbuffer has the same
        # length whatever their values: measure it with placeholders, then write the real offsets.
        blobs = [d for d in self.buffers if d] + [op.custom_options for sg in self.subgraphs for op in sg.ops
                                                  if op.custom_options]
        head = len(self._serialize(opcode_fields, iter([(2**40, len(d)) for d in blobs])))
        spans, end = [], _align(head, 16)
        for data in blobs:
            spans.append((end, len(data)))
            end = _align(end + len(data), 16)
        flat = self._serialize(opcode_fields, iter(spans))
        if len(flat) != head:
            raise RuntimeError("the flatbuffer changed length when its buffer offsets were filled in")
        out = bytearray(end)
        out[:head] = flat
        for (offset, size), data in zip(spans, blobs):
            out[offset:offset + size] = data
        return bytes(out)

    def _serialize(self, opcode_fields: str, external: Iterator[tuple[int, int]] | None) -> bytes:
        """The flatbuffer. With `external`, the (offset, size) of each non-empty buffer and then of each
        operator's custom options, in order, stored after the flatbuffer; without it, data inline."""
        b = flatbuffers.Builder(1024)
        buf_offs = []
        for data in self.buffers:
            if data and external is not None:
                offset, size = next(external)
                tflite.BufferStart(b)
                tflite.BufferAddOffset(b, offset)
                tflite.BufferAddSize(b, size)
            elif data:
                b.StartVector(1, len(data), 16)  # 16-byte alignment keeps every numpy view aligned
                b.head = b.head - len(data)
                b.Bytes[b.head:b.head + len(data)] = data
                vec = b.EndVector()
                tflite.BufferStart(b)
                tflite.BufferAddData(b, vec)
            else:
                tflite.BufferStart(b)
            buf_offs.append(tflite.BufferEnd(b))
        oc_offs = []
        for code, version, custom in self.opcodes:
            # Opcode quirk: the int8 deprecated field saturates at 127 (PLACEHOLDER_FOR_GREATER_OP_CODES).
            oc_offs.append(write_operator_code(b, code if opcode_fields != "deprecated_only" else None,
                                               min(code, 127) if opcode_fields != "builtin_only" else None,
                                               version, custom))
        sg_offs = [self._write_subgraph(b, sg, external) for sg in self.subgraphs]
        sig_offs = [self._write_signature(b, key, si) for key, si in self.signatures]
        meta_offs = [write_metadata(b, name, buffer) for name, buffer in self.metadata]
        return finish_model(b, 3, self.description, buf_offs, oc_offs, sg_offs, sig_offs, meta_offs)

    def _write_signature(self, b: flatbuffers.Builder, key: str, si: int) -> int:
        sg = self.subgraphs[si]
        return write_signature(b, key, si, [(sg.tensors[t].name, t) for t in sg.inputs],
                               [(sg.tensors[t].name, t) for t in sg.outputs])

    def _write_subgraph(self, b: flatbuffers.Builder, sg: SubgraphBuilder,
                        external: Iterator[tuple[int, int]] | None) -> int:
        t_offs = []
        for t in sg.tensors:
            name = b.CreateString(t.name)
            shape = int_vector(b, t.shape)
            sig = int_vector(b, t.shape_signature) if t.shape_signature is not None else None
            q = None
            if t.quant is not None:
                scales = np.atleast_1d(np.asarray(t.quant.scale, dtype=np.float32))
                zps = np.atleast_1d(np.asarray(t.quant.zero_point, dtype=np.int64))
                if zps.size == 1 and scales.size > 1:
                    zps = np.repeat(zps, scales.size)
                sv = b.CreateNumpyVector(scales)
                zv = b.CreateNumpyVector(zps)
                details = write_blockwise(b, t.quant.blockwise) if t.quant.blockwise else None
                tflite.QuantizationParametersStart(b)
                if details is not None:
                    tflite.QuantizationParametersAddDetailsType(b, 2)  # QuantizationDetails.BlockwiseQuantization
                    tflite.QuantizationParametersAddDetails(b, details)
                tflite.QuantizationParametersAddScale(b, sv)
                tflite.QuantizationParametersAddZeroPoint(b, zv)
                tflite.QuantizationParametersAddQuantizedDimension(b, t.quant.quantized_dimension)
                q = tflite.QuantizationParametersEnd(b)
            sp = write_sparsity(b, t.sparsity) if t.sparsity is not None else None
            tflite.TensorStart(b)
            tflite.TensorAddShape(b, shape)
            if sp is not None:
                tflite.TensorAddSparsity(b, sp)
            tflite.TensorAddType(b, int(t.type))
            tflite.TensorAddBuffer(b, t.buffer)
            tflite.TensorAddName(b, name)
            if q is not None:
                tflite.TensorAddQuantization(b, q)
            if sig is not None:
                tflite.TensorAddShapeSignature(b, sig)
            if t.is_variable:
                tflite.TensorAddIsVariable(b, True)
            t_offs.append(tflite.TensorEnd(b))
        op_offs = []
        for op in sg.ops:
            large = next(external) if op.custom_options and external is not None else None
            op_offs.append(write_operator(b, op.opcode, op.inputs, op.outputs, op.intermediates, op.options,
                                          op.custom_options, large))
        vecs = []
        for offs in (t_offs, op_offs):
            vecs.append(offsets_vector(b, offs))
        ins = int_vector(b, sg.inputs)
        outs = int_vector(b, sg.outputs)
        name = b.CreateString(sg.name)
        tflite.SubGraphStart(b)
        tflite.SubGraphAddTensors(b, vecs[0])
        tflite.SubGraphAddOperators(b, vecs[1])
        tflite.SubGraphAddInputs(b, ins)
        tflite.SubGraphAddOutputs(b, outs)
        tflite.SubGraphAddName(b, name)
        return tflite.SubGraphEnd(b)
