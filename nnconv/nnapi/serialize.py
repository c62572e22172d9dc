"""Writes and reads `.nnapi` files: converted NNAPI models plus their weights (docs/nnapi-format.md).

A file is a flatbuffer (schema/nnapi.fbs, identifier "NNAP") followed by the memory pools, each starting
at a multiple of 64 bytes. `load` mmaps the file and hands out the pools as read-only numpy views of the
mapping, so weights are never copied. Every count, offset and index of a loaded file is checked against
the file size before use: a truncated, corrupt or hostile file raises `ModelFormatError` with one line,
never a flatbuffers exception, a hang or an allocation sized by the file's claims.
"""

from __future__ import annotations

import json
import math
import mmap
import os
import struct
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence, TypeVar

import flatbuffers
import numpy as np

from nnconv.errors import ModelFormatError, ModelValidationError, NnconvError, reading
from nnconv.guarded_decoder import GuardedDecoder
from nnconv.nnapi.enums import OperandLifeTime, OperandType, OperationType
from nnconv.nnapi.levels import MAX_API_LEVEL, MIN_API_LEVEL, feature_level
from nnconv.nnapi.fbs import ConvertedModel as FbConvertedModel
from nnconv.nnapi.fbs import DataLocation as FbDataLocation
from nnconv.nnapi.fbs import IoTensor as FbIoTensor
from nnconv.nnapi.fbs import Model as FbModel
from nnconv.nnapi.fbs import NnapiFile as FbNnapiFile
from nnconv.nnapi.fbs import Operand as FbOperand
from nnconv.nnapi.fbs import Operation as FbOperation
from nnconv.nnapi.fbs import PoolSpan as FbPoolSpan
from nnconv.nnapi.fbs import Subgraph as FbSubgraph
from nnconv.nnapi.fbs import SymmPerChannelQuantParams as FbChannelQuant
from nnconv.nnapi.model import DataLocation, Model, Operand, Operation, Subgraph, SymmPerChannelQuantParams
from nnconv.nnapi.program import INT8_SHIFT, ConvertedModel, IoTensor
from nnconv.nnapi.validate import operation_refusals, validate_model
from nnconv.safe_write import atomic_output

FILE_IDENTIFIER = b"NNAP"
FORMAT_VERSION = 1
POOL_ALIGNMENT = 64  # a cache line, and more than any NNAPI operand type or SIMD load needs
_UINT32_MAX = 2**32 - 1
# The numpy dtype names an IoTensor may carry (what TFLite tensors map to); anything else is corrupt.
_IO_DTYPES = frozenset({"float32", "float16", "float64", "int8", "uint8", "int16", "uint16", "int32", "uint32",
                        "int64", "uint64", "bool", "complex64", "complex128"})
_T = TypeVar("_T")
_E = TypeVar("_E")


@dataclass
class NnapiFile:
    """A loaded `.nnapi` file. `buffer` is the read-only mmap every pool is a view of."""

    partitions: list[ConvertedModel]
    plan: dict | None
    api_level: int
    format_version: int = FORMAT_VERSION
    producer: str = ""
    buffer: Any = None
    # (file offset, size) of each pool of each partition: what NDK code passes to setOperandValueFromMemory.
    pool_spans: list[list[tuple[int, int]]] = field(default_factory=list)


def _align(n: int, to: int = POOL_ALIGNMENT) -> int:
    return (n + to - 1) // to * to


def _pool_bytes(pool: object) -> memoryview:
    """The bytes of a pool (any buffer-protocol object), C-contiguous, without copying when possible."""
    mv = memoryview(pool)  # type: ignore[arg-type]
    if not mv.c_contiguous:
        mv = memoryview(np.ascontiguousarray(pool))
    return mv.cast("B")


# -- save -------------------------------------------------------------------------------------------
def save(path: str | os.PathLike, converted_models: Sequence[ConvertedModel], plan: dict | None = None) -> None:
    """Writes one or more converted models (one per partition) and an optional partition plan to `path`."""
    from nnconv.version import __version__
    if not converted_models:
        raise NnconvError("nothing to save: no converted model")
    pools = [[_pool_bytes(p) for p in cm.model.pools] for cm in converted_models]
    plan_json = json.dumps(plan) if plan is not None else None
    api_level = max(cm.api_level for cm in converted_models)

    # Pool offsets are absolute, so they depend on the flatbuffer's size. That size does not depend on
    # the offsets (PoolSpan is a fixed-size struct), so build once with zeros to learn it, then again.
    def build(spans: list[list[tuple[int, int]]]) -> bytes:
        return _Writer().file(converted_models, spans, plan_json, api_level, f"nnconv {__version__}")

    zero_spans = [[(0, p.nbytes) for p in ps] for ps in pools]
    head = build(zero_spans)
    spans: list[list[tuple[int, int]]] = []
    pos = _align(len(head))
    for ps in pools:
        row = []
        for p in ps:
            row.append((pos, p.nbytes))
            pos = _align(pos + p.nbytes)
        spans.append(row)
    fb = build(spans)
    if len(fb) != len(head):  # cannot happen with fixed-size structs; refuse rather than write garbage
        raise NnconvError("internal error: the .nnapi header changed size between layout passes")
    # Beside the target and renamed (nnconv.safe_write): a failed write never leaves a truncated .nnapi
    # behind, and a process that has the old file mapped keeps reading the old bytes.
    with atomic_output(path) as f:
        f.write(fb)
        written = len(fb)
        for ps, row in zip(pools, spans):
            for p, (off, size) in zip(ps, row):
                f.write(b"\0" * (off - written))
                f.write(p)
                written = off + size


class _Writer:
    """Serializes the in-memory IR into one flatbuffer (schema/nnapi.fbs)."""

    def __init__(self) -> None:
        self.b = flatbuffers.Builder(4096)

    def u32_vector(self, values: Sequence[int], what: str) -> int:
        arr = np.asarray(list(values), dtype=np.int64)
        if arr.size and (arr.min() < 0 or arr.max() > _UINT32_MAX):
            raise NnconvError(f"cannot save: {what} {arr.tolist()} does not fit in uint32")
        return self.b.CreateNumpyVector(arr.astype(np.uint32))

    def offsets(self, offs: Sequence[int]) -> int:
        self.b.StartVector(4, len(offs), 4)
        for o in reversed(offs):
            self.b.PrependUOffsetTRelative(o)
        return self.b.EndVector()

    def operand(self, od: Operand) -> int:
        b = self.b
        dims = self.u32_vector(od.dimensions, f"operand '{od.name}' dimensions")
        name = b.CreateString(od.name)
        cq = None
        if od.channel_quant is not None:
            scales = b.CreateNumpyVector(np.asarray(od.channel_quant.scales, dtype=np.float64))
            FbChannelQuant.Start(b)
            FbChannelQuant.AddChannelDim(b, od.channel_quant.channel_dim)
            FbChannelQuant.AddScales(b, scales)
            cq = FbChannelQuant.End(b)
        loc = od.location
        for v in (loc.pool_index, loc.offset, loc.length, od.number_of_consumers):
            if not 0 <= v <= _UINT32_MAX:
                raise NnconvError(f"cannot save: operand '{od.name}' location {loc} does not fit in uint32")
        FbOperand.Start(b)
        FbOperand.AddType(b, int(od.type))
        FbOperand.AddDimensions(b, dims)
        FbOperand.AddNumberOfConsumers(b, od.number_of_consumers)
        FbOperand.AddScale(b, float(od.scale))
        FbOperand.AddZeroPoint(b, int(od.zero_point))
        FbOperand.AddLifetime(b, int(od.lifetime))
        FbOperand.AddLocation(b, FbDataLocation.CreateDataLocation(b, loc.pool_index, loc.offset, loc.length))
        if cq is not None:
            FbOperand.AddChannelQuant(b, cq)
        FbOperand.AddName(b, name)
        return FbOperand.End(b)

    def operation(self, op: Operation) -> int:
        b = self.b
        ins = self.u32_vector(op.inputs, f"{op.type.name} inputs")
        outs = self.u32_vector(op.outputs, f"{op.type.name} outputs")
        FbOperation.Start(b)
        FbOperation.AddType(b, int(op.type))
        FbOperation.AddInputs(b, ins)
        FbOperation.AddOutputs(b, outs)
        FbOperation.AddSourceOp(b, -1 if op.source_op is None else int(op.source_op))
        return FbOperation.End(b)

    def subgraph(self, sg: Subgraph) -> int:
        b = self.b
        operands = self.offsets([self.operand(od) for od in sg.operands])
        operations = self.offsets([self.operation(op) for op in sg.operations])
        ins = self.u32_vector(sg.input_indexes, "subgraph inputs")
        outs = self.u32_vector(sg.output_indexes, "subgraph outputs")
        FbSubgraph.Start(b)
        FbSubgraph.AddOperands(b, operands)
        FbSubgraph.AddOperations(b, operations)
        FbSubgraph.AddInputIndexes(b, ins)
        FbSubgraph.AddOutputIndexes(b, outs)
        return FbSubgraph.End(b)

    def model(self, m: Model, spans: list[tuple[int, int]]) -> int:
        b = self.b
        main = self.subgraph(m.main)
        referenced = self.offsets([self.subgraph(sg) for sg in m.referenced])
        values = bytes(m.operand_values)
        b.StartVector(1, len(values), 16)  # 16-byte aligned so values can be viewed as any scalar type
        b.head = b.head - len(values)
        b.Bytes[b.head:b.head + len(values)] = values
        operand_values = b.EndVector()
        FbModel.StartPoolsVector(b, len(spans))
        for off, size in reversed(spans):
            FbPoolSpan.CreatePoolSpan(b, off, size)
        pools = b.EndVector()
        FbModel.Start(b)
        FbModel.AddMain(b, main)
        FbModel.AddReferenced(b, referenced)
        FbModel.AddOperandValues(b, operand_values)
        FbModel.AddPools(b, pools)
        FbModel.AddRelaxComputationFloat32ToFloat16(b, bool(m.relax_computation_float32_to_float16))
        return FbModel.End(b)

    def io(self, t: IoTensor) -> int:
        b = self.b
        name = b.CreateString(t.name)
        dtype = b.CreateString(t.dtype)
        shape = b.CreateNumpyVector(np.asarray(t.shape, dtype=np.int32))
        FbIoTensor.Start(b)
        FbIoTensor.AddName(b, name)
        FbIoTensor.AddTfliteTensor(b, int(t.tflite_tensor))
        FbIoTensor.AddDtype(b, dtype)
        FbIoTensor.AddShape(b, shape)
        FbIoTensor.AddOffset(b, int(t.offset))
        FbIoTensor.AddScale(b, float(t.scale))
        FbIoTensor.AddZeroPoint(b, int(t.zero_point))
        if t.variable:
            FbIoTensor.AddVariable(b, True)
        return FbIoTensor.End(b)

    def converted(self, cm: ConvertedModel, spans: list[tuple[int, int]]) -> int:
        b = self.b
        model = self.model(cm.model, spans)
        ins = self.offsets([self.io(t) for t in cm.inputs])
        outs = self.offsets([self.io(t) for t in cm.outputs])
        ops = b.CreateNumpyVector(np.asarray(cm.tflite_ops, dtype=np.int32))
        FbConvertedModel.Start(b)
        FbConvertedModel.AddModel(b, model)
        FbConvertedModel.AddInputs(b, ins)
        FbConvertedModel.AddOutputs(b, outs)
        FbConvertedModel.AddApiLevel(b, int(cm.api_level))
        FbConvertedModel.AddTfliteOps(b, ops)
        FbConvertedModel.AddSubgraph(b, int(cm.subgraph))
        return FbConvertedModel.End(b)

    def file(self, cms: Sequence[ConvertedModel], spans: list[list[tuple[int, int]]], plan_json: str | None,
             api_level: int, producer: str) -> bytes:
        b = self.b
        parts = self.offsets([self.converted(cm, row) for cm, row in zip(cms, spans)])
        prod = b.CreateString(producer)
        plan = b.CreateString(plan_json) if plan_json is not None else None
        FbNnapiFile.Start(b)
        FbNnapiFile.AddFormatVersion(b, FORMAT_VERSION)
        FbNnapiFile.AddProducer(b, prod)
        FbNnapiFile.AddApiLevel(b, int(api_level))
        FbNnapiFile.AddPartitions(b, parts)
        if plan is not None:
            FbNnapiFile.AddPlan(b, plan)
        b.Finish(FbNnapiFile.End(b), file_identifier=FILE_IDENTIFIER)
        return bytes(b.Output())


# -- load -------------------------------------------------------------------------------------------
def load(path: str | os.PathLike) -> NnapiFile:
    """Maps a `.nnapi` file and decodes it; pools are zero-copy views of the mapping."""
    name = os.fspath(path)
    with reading(name, "an .nnapi file", ModelFormatError), open(name, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size < 8:
            raise ModelFormatError(f"{name}: {size} bytes, too short for an .nnapi file")
        buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    return loads(buf, name)


def loads(buf: Any, name: str = "<bytes>") -> NnapiFile:
    """Decodes an `.nnapi` file held in `buf` (bytes, or an mmap); pools are views of `buf`."""
    return _Decoder(buf, name).decode()


class _Decoder(GuardedDecoder):
    """Reads the flatbuffer defensively: every access is guarded and every count charged to a budget."""

    def __init__(self, buf: Any, name: str) -> None:
        # Each vector element of a well-formed file takes at least one distinct byte, so the claimed
        # entries of all vectors together cannot exceed the file size.
        super().__init__(buf, name, "an .nnapi file", len(buf))
        self.spans: list[list[tuple[int, int]]] = []

    def array(self, fn: Callable[[], Any], what: str, dtype: Any) -> np.ndarray:
        """A numpy vector (copied out of the file: these are small index and shape vectors)."""
        a = self.guarded(what, fn)
        if isinstance(a, int):  # flatbuffers returns 0 for an absent vector
            return np.zeros(0, dtype=dtype)
        self.count(a.size, what, a.dtype.itemsize)
        return np.array(a, dtype=dtype)

    def string(self, fn: Callable[[], bytes | None], what: str) -> str:
        raw = self.guarded(what, fn)
        if raw is None:
            return ""
        self.count(len(raw), what, 1)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail(f"{what} is not UTF-8 text") from None

    def enum(self, cls: Callable[[int], _E], fn: Callable[[], int], where: str, kind: str) -> _E:
        """The `kind` enum field of `where`, read by `fn`; a value the enum does not know is a format error."""
        value = self.guarded(f"{where} {kind}", fn)
        try:
            return cls(value)
        except ValueError:
            raise self.fail(f"{where} has unknown {kind} {value}") from None

    def table_vector(self, length: Callable[[], int], get: Callable[[int], _T], what: str) -> list[_T]:
        n = self.count(self.guarded(what, length), what, 4)
        out = []
        for i in range(n):
            out.append(self.present(self.guarded(f"{what}[{i}]", lambda i=i: get(i)), f"{what}[{i}]"))
        return out

    def decode(self) -> NnapiFile:
        ident = bytes(self.buf[4:8])
        if ident == b"TFL3":
            raise self.fail("is a TFLite model, not an .nnapi file (convert it first: nnconv convert MODEL -o "
                            "OUT.nnapi)")
        if ident != FILE_IDENTIFIER:
            raise self.fail(f"file identifier is {ident!r}, expected {FILE_IDENTIFIER!r}: not an .nnapi file")
        root = struct.unpack_from("<I", self.buf, 0)[0]
        if root + 4 > self.size:
            raise self.fail("root table offset points past the end of the file (truncated?)")
        f = self.guarded("file header", lambda: FbNnapiFile.NnapiFile.GetRootAs(self.buf, 0))
        version = self.guarded("format version", f.FormatVersion)
        if version != FORMAT_VERSION:
            raise self.fail(f"format version {version}, this nnconv reads version {FORMAT_VERSION} "
                            "(convert the model again with this nnconv)")
        producer = self.string(f.Producer, "producer")
        api_level = self.guarded("API level", f.ApiLevel)
        self.check_api_level(api_level, "file")
        parts_fb = self.table_vector(f.PartitionsLength, f.Partitions, "partition table")
        if not parts_fb:
            raise self.fail("the file holds no model")
        partitions = [self.converted(p, k) for k, p in enumerate(parts_fb)]
        plan = None
        plan_text = self.string(f.Plan, "partition plan")
        if plan_text:
            try:
                plan = json.loads(plan_text)
            except (ValueError, RecursionError):
                raise self.fail("the partition plan is not valid JSON") from None
            if not isinstance(plan, dict):
                raise self.fail("the partition plan is not a JSON object")
        return NnapiFile(partitions=partitions, plan=plan, api_level=api_level, format_version=version,
                         producer=producer, buffer=self.buf, pool_spans=self.spans)

    def check_api_level(self, level: int, what: str) -> None:
        if not MIN_API_LEVEL <= level <= MAX_API_LEVEL:
            raise self.fail(f"{what} targets API level {level}, outside {MIN_API_LEVEL}..{MAX_API_LEVEL}")

    def converted(self, p: Any, k: int) -> ConvertedModel:
        where = f"partition {k}"
        m_fb = self.guarded(f"{where} model", p.Model)
        if m_fb is None:
            raise self.fail(f"{where} has no model")
        model = self.model(m_fb, where)
        inputs = [self.io(t, f"{where} input {i}")
                  for i, t in enumerate(self.table_vector(p.InputsLength, p.Inputs, f"{where} inputs"))]
        outputs = [self.io(t, f"{where} output {i}")
                   for i, t in enumerate(self.table_vector(p.OutputsLength, p.Outputs, f"{where} outputs"))]
        if len(inputs) != len(model.main.input_indexes) or len(outputs) != len(model.main.output_indexes):
            raise self.fail(f"{where} describes {len(inputs)} inputs and {len(outputs)} outputs, its model has "
                            f"{len(model.main.input_indexes)} and {len(model.main.output_indexes)}")
        for kind, specs, indexes in (("input", inputs, model.main.input_indexes),
                                     ("output", outputs, model.main.output_indexes)):
            for spec, idx in zip(specs, indexes):
                if 0 <= idx < len(model.main.operands):
                    self.check_io_shape(spec, model.main.operands[idx].dimensions, f"{where} {kind}")
        api_level = self.guarded(f"{where} API level", p.ApiLevel)
        self.check_api_level(api_level, where)
        ops = self.array(p.TfliteOpsAsNumpy, f"{where} TFLite ops", np.int64)
        subgraph = self.guarded(f"{where} subgraph", p.Subgraph)
        try:
            validate_model(model)
        except ModelValidationError as e:
            raise self.fail(f"{where}: {e}") from None
        # What Android checks before it compiles a model (each operation's validate): in a file from
        # elsewhere (hand-made or corrupt), a refused operation is bad input, not a bug of the converter.
        refusals = operation_refusals(model, feature_level(api_level))
        if refusals:
            more = f" (and {len(refusals) - 1} more)" if len(refusals) > 1 else ""
            raise self.fail(f"{where}: the NNAPI runtime refuses {refusals[0]}{more}")
        return ConvertedModel(model=model, inputs=inputs, outputs=outputs, api_level=api_level,
                              tflite_ops=[int(v) for v in ops], subgraph=subgraph)

    def check_io_shape(self, spec: IoTensor, dims: tuple[int, ...], where: str) -> None:
        """The declared I/O shape fits the operand (unknown extents, 0 or -1, match anything; a TFLite scalar
        is carried as a [1] operand)."""
        if not spec.shape or not dims:
            return
        if len(spec.shape) != len(dims) or any(s > 0 and d > 0 and s != d for s, d in zip(spec.shape, dims)):
            raise self.fail(f"{where} '{spec.name}' has shape {list(spec.shape)}, but its operand has "
                            f"dimensions {list(dims)}")

    def io(self, t: Any, where: str) -> IoTensor:
        name = self.string(t.Name, f"{where} name")
        dtype = self.string(t.Dtype, f"{where} dtype")
        if dtype not in _IO_DTYPES:
            raise self.fail(f"{where} ('{name}') has unknown dtype {dtype!r}")
        shape = self.array(t.ShapeAsNumpy, f"{where} shape", np.int64)
        if shape.size and shape.min() < -1:
            raise self.fail(f"{where} ('{name}') has a negative extent in shape {shape.tolist()}")
        offset = self.guarded(where, t.Offset)
        if offset not in (0, INT8_SHIFT) or (offset and dtype != "int8"):
            # the only shift nnconv writes: int8 carried as uint8 below API 30
            raise self.fail(f"{where} ('{name}') has value offset {offset}; only 0, or {INT8_SHIFT} for int8, "
                            "are valid")
        scale = self.guarded(where, t.Scale)
        if not math.isfinite(scale) or scale < 0:
            raise self.fail(f"{where} ('{name}') has scale {scale!r}, not a finite non-negative number")
        return IoTensor(name=name, tflite_tensor=self.guarded(where, t.TfliteTensor), dtype=dtype,
                        shape=tuple(int(d) for d in shape), offset=offset, scale=scale,
                        zero_point=self.guarded(where, t.ZeroPoint), variable=bool(self.guarded(where, t.Variable)))

    def model(self, m: Any, where: str) -> Model:
        main_fb = self.guarded(f"{where} main subgraph", m.Main)
        if main_fb is None:
            raise self.fail(f"{where} has no main subgraph")
        main = self.subgraph(main_fb, f"{where} main subgraph")
        refs = self.table_vector(m.ReferencedLength, m.Referenced, f"{where} referenced subgraphs")
        referenced = [self.subgraph(sg, f"{where} referenced subgraph {i}") for i, sg in enumerate(refs)]
        values = self.array(m.OperandValuesAsNumpy, f"{where} operand values", np.uint8)
        n_pools = self.count(self.guarded(f"{where} pools", m.PoolsLength), f"{where} pool table", 16)
        pools = []
        spans: list[tuple[int, int]] = []
        self.spans.append(spans)
        for i in range(n_pools):
            span = self.guarded(f"{where} pool {i}", lambda i=i: m.Pools(i))
            off, size = self.guarded(f"{where} pool {i}", lambda: (span.Offset(), span.Size()))
            if off % POOL_ALIGNMENT or off < 8 or off > self.size or size > self.size - off:
                raise self.fail(f"{where} pool {i} claims bytes {off}..{off + size}, outside the file's "
                                f"{self.size} bytes or not {POOL_ALIGNMENT}-byte aligned (truncated?)")
            # A read-only view of the mapping: the weights stay on disk until a kernel touches them.
            pools.append(np.frombuffer(self.buf, dtype=np.uint8, count=size, offset=off))
            spans.append((off, size))
        relax = self.guarded(f"{where} relax flag", m.RelaxComputationFloat32ToFloat16)
        return Model(main=main, referenced=referenced, operand_values=bytearray(values.tobytes()), pools=pools,
                     relax_computation_float32_to_float16=bool(relax))

    def subgraph(self, sg: Any, where: str) -> Subgraph:
        operands = [self.operand(od, f"{where} operand {i}") for i, od in
                    enumerate(self.table_vector(sg.OperandsLength, sg.Operands, f"{where} operands"))]
        operations = [self.operation(op, f"{where} operation {i}") for i, op in
                      enumerate(self.table_vector(sg.OperationsLength, sg.Operations, f"{where} operations"))]
        ins = self.array(sg.InputIndexesAsNumpy, f"{where} inputs", np.int64)
        outs = self.array(sg.OutputIndexesAsNumpy, f"{where} outputs", np.int64)
        return Subgraph(operands=operands, operations=operations, input_indexes=[int(i) for i in ins],
                        output_indexes=[int(o) for o in outs])

    def operand(self, od: Any, where: str) -> Operand:
        otype = self.enum(OperandType, od.Type, where, "operand type")
        lifetime = self.enum(OperandLifeTime, od.Lifetime, where, "lifetime")
        dims = self.array(od.DimensionsAsNumpy, f"{where} dimensions", np.int64)
        loc_fb = self.guarded(f"{where} location", od.Location)
        loc = DataLocation()
        if loc_fb is not None:
            loc = DataLocation(*self.guarded(f"{where} location",
                                             lambda: (loc_fb.PoolIndex(), loc_fb.Offset(), loc_fb.Length())))
        cq = None
        cq_fb = self.guarded(f"{where} channel quantization", od.ChannelQuant)
        if cq_fb is not None:
            scales = self.array(cq_fb.ScalesAsNumpy, f"{where} channel scales", np.float64)
            cq = SymmPerChannelQuantParams(channel_dim=self.guarded(where, cq_fb.ChannelDim),
                                           scales=tuple(float(s) for s in scales))
        return Operand(type=otype, dimensions=tuple(int(d) for d in dims), scale=self.guarded(where, od.Scale),
                       zero_point=self.guarded(where, od.ZeroPoint), lifetime=lifetime, location=loc,
                       channel_quant=cq, number_of_consumers=self.guarded(where, od.NumberOfConsumers),
                       name=self.string(od.Name, f"{where} name"))

    def operation(self, op: Any, where: str) -> Operation:
        otype = self.enum(OperationType, op.Type, where, "operation type")
        ins = self.array(op.InputsAsNumpy, f"{where} inputs", np.int64)
        outs = self.array(op.OutputsAsNumpy, f"{where} outputs", np.int64)
        src = self.guarded(f"{where} source op", op.SourceOp)
        return Operation(type=otype, inputs=[int(i) for i in ins], outputs=[int(o) for o in outs],
                         source_op=None if src < 0 else src)
