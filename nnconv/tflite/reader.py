"""Reads a `.tflite` flatbuffer into the TFLite IR, through the `tflite` package over an mmap.

A file TFLite's interpreter refuses before running anything is refused too, saying why: the flatbuffers
Verifier's failures first, before anything is decoded, then InterpreterBuilder's refusals that the reader's own
checks let through (`flatbuffer_verifier.py`).

Every offset and index is range-checked, so a truncated or hostile file ends in `ModelFormatError` (never a
hang, a huge allocation or a raw flatbuffers exception): vector lengths are checked against the file size
and charged to a budget proportional to it (bounded work even when tables share one vector); buffer, tensor,
opcode and subgraph indexes (including those in IF / WHILE / CALL_ONCE options and signature defs) must
exist; control flow must not recurse. Buffers stored after the flatbuffer (`Buffer.offset`/`size`, models
over 2 GB) are supported. Constant buffers become read-only numpy views into the mmap: weights are never
copied. Sparse tensors keep their compressed values; the lowering densifies them.
"""

from __future__ import annotations

import dataclasses
import mmap
import os
import struct
from typing import Any, Callable

import flatbuffers
import numpy as np
import tflite

from nnconv.errors import ModelFormatError
from nnconv.guarded_decoder import GuardedDecoder
from nnconv.tflite.flatbuffer_verifier import find_builder_error, verify
from nnconv.tflite.int4 import packed_size
from nnconv.tflite.ir import (BLOCKWISE, NUMPY_DTYPE, DimensionMetadata, Operator, Quantization, SignatureDef,
                              Sparsity, Subgraph, Tensor, TfliteModel)
from nnconv.tflite.options_codec import decode_options
from nnconv.tflite.schema_enums import BuiltinOperator, TensorType
from nnconv.tflite.validate import validate_model

FILE_IDENTIFIER = b"TFL3"
SCHEMA_VERSION = 3  # TFLITE_SCHEMA_VERSION


def read_model(source: str | os.PathLike | bytes | bytearray | memoryview) -> TfliteModel:
    """Decodes a TFLite model from a path or from bytes."""
    path = ""
    if isinstance(source, (bytes, bytearray, memoryview)):
        buf: Any = bytes(source)
    else:
        path = os.fspath(source)
        try:
            with open(path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                if size == 0:
                    raise ModelFormatError(f"{path}: empty file, not a TFLite model")
                buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except OSError as e:
            raise ModelFormatError(f"{path}: cannot read ({e.strerror or e})") from None
    return _Decoder(buf, path or "<bytes>").decode()


class _Decoder(GuardedDecoder):
    def __init__(self, buf: Any, name: str) -> None:
        # Every vector entry of a well-formed file takes at least one byte of its own, so the entries of all
        # vectors together cannot exceed the file size; the budget allows 2x slack for writers that share
        # vectors.
        super().__init__(buf, name, "a TFLite model", 2 * len(buf) + 64)

    def values(self, arr: Any, what: str) -> tuple:
        """The entries of a numpy vector from the tflite accessors (0 when absent), charged to the budget."""
        if isinstance(arr, int):
            return ()
        self.count(int(arr.size), what, 1)
        return tuple(arr.tolist())

    def decode(self) -> TfliteModel:
        if self.size < 8:
            raise self.fail(f"only {self.size} bytes, too short for a TFLite model")
        ident = bytes(self.buf[4:8])
        if ident == b"NNAP":
            raise self.fail("is an .nnapi file written by nnconv, not a TFLite model (`nnconv run` takes it)")
        if ident != FILE_IDENTIFIER:
            raise self.fail(f"file identifier is {ident!r}, expected {FILE_IDENTIFIER!r}: not a TFLite model")
        # Every model is read as TFLite reads it: what the flatbuffers Verifier makes TFLite's interpreter refuse
        # is refused first (which also guarantees that every offset followed below lies inside the file).
        verify(self.buf, self.name, builder=False)
        root = struct.unpack_from("<I", self.buf, 0)[0]
        if root + 4 > self.size:
            raise self.fail("root table offset points past the end of the file (truncated?)")
        m = self.guarded("model header", lambda: tflite.Model.GetRootAs(self.buf, 0))
        version = self.guarded("model version", m.Version)
        if version != SCHEMA_VERSION:  # TFLite's InterpreterBuilder refuses any other (an absent field reads 0)
            raise self.fail(f"schema version {version}; TFLite reads only version {SCHEMA_VERSION} models")
        desc = self.guarded("description", lambda: (m.Description() or b"").decode("utf-8", "replace"))
        buffers = self.decode_buffers(m)
        opcodes = self.decode_opcodes(m)
        n_sub = self.count(self.guarded("subgraphs", m.SubgraphsLength), "subgraph table")
        if n_sub == 0:
            raise self.fail("the model has no subgraph")
        subgraphs = tuple(self.decode_subgraph(m, i, buffers, opcodes) for i in range(n_sub))
        self.check_subgraph_calls(subgraphs)
        sigs = self.decode_signatures(m, subgraphs)
        # Then what TFLite's InterpreterBuilder refuses that the checks above let through (a variable tensor with
        # data, a subgraph without tensors, a shape whose size TFLite cannot compute...); after them, so that where
        # both refuse a file, the reader's more precise message stands.
        if (problem := find_builder_error(self.buf)) is not None:
            raise self.fail(f"TFLite refuses this file: {problem}")
        model = TfliteModel(version=version, description=desc, subgraphs=subgraphs, signature_defs=sigs,
                            path=self.name, metadata=self.decode_metadata(m, buffers))
        validate_model(model)  # the numbers and the graph, before any rule or command uses them
        return model

    def check_subgraph_calls(self, subgraphs: tuple[Subgraph, ...]) -> None:
        """Subgraph indexes in options (IF, WHILE, CALL_ONCE, ...) exist, and no subgraph calls itself
        directly or indirectly (TFLite forbids recursion; a cycle would recurse forever in the lowering)."""
        calls: dict[int, set[int]] = {}
        for sg in subgraphs:
            for op in sg.operators:
                for field_name, value in _subgraph_fields(op.options):
                    if not 0 <= value < len(subgraphs):
                        raise self.fail(f"operator {op.index} of subgraph {sg.index} has {field_name} {value}, "
                                        f"but the model has {len(subgraphs)} subgraphs")
                    calls.setdefault(sg.index, set()).add(value)
        state: dict[int, int] = {}  # 1 = on the DFS stack, 2 = done
        for start in calls:
            if state.get(start):
                continue
            stack = [(start, iter(sorted(calls.get(start, ()))))]
            state[start] = 1
            while stack:
                node, it = stack[-1]
                nxt = next(it, None)
                if nxt is None:
                    state[node] = 2
                    stack.pop()
                elif state.get(nxt) == 1:
                    raise self.fail(f"subgraph {nxt} calls itself through control flow (recursion is not "
                                    "allowed in TFLite models)")
                elif not state.get(nxt):
                    state[nxt] = 1
                    stack.append((nxt, iter(sorted(calls.get(nxt, ())))))

    # -- buffers ----------------------------------------------------------------------------------
    def decode_buffers(self, m: Any) -> list[tuple[int, int] | None]:
        """(byte offset, size) into the file of each buffer, or None when empty."""
        def one(i: int) -> tuple[int, int] | None:
            b = m.Buffers(i)
            if b is None:
                return None
            off, size = b.Offset(), b.Size()
            if off > 1:  # data stored after the flatbuffer (models over 2 GB); offset 0/1 means none
                if off + size > self.size:
                    raise self.fail(f"buffer {i} spans bytes {off}..{off + size}, past the end of the "
                                    f"file ({self.size} bytes)")
                return (off, size) if size else None
            length = b.DataLength()
            if length == 0:
                return None
            o = b._tab.Offset(4)
            start = b._tab.Vector(o)
            if start + length > self.size:
                raise self.fail(f"buffer {i} runs past the end of the file (truncated?)")
            return start, length
        return self.entries("buffer table", m.BuffersLength, "buffer", one)

    def decode_opcodes(self, m: Any) -> list[tuple[int, str | None, int]]:
        def one(i: int) -> tuple[int, str | None, int]:
            oc = self.present(m.OperatorCodes(i), f"operator code {i}")
            # Opcode quirk: builtin codes above 127 live only in `builtin_code`; older files have only
            # the int8 `deprecated_builtin_code` (and builtin_code 0); newer writers (AI Edge Quantizer)
            # set only `builtin_code`. TFLite takes the larger of the two raw fields. The `tflite`
            # package's BuiltinCode() substitutes the deprecated field whenever the raw one is below
            # 127, which reads a builtin_code-only DEQUANTIZE as ADD (0): read the raw field instead.
            code = max(oc.DeprecatedBuiltinCode(), _raw_builtin_code(oc))
            custom = oc.CustomCode()
            return code, (custom.decode("utf-8", "replace") if custom is not None else None), oc.Version()
        return self.entries("operator codes", m.OperatorCodesLength, "operator code", one, "operator code table")

    # -- subgraphs --------------------------------------------------------------------------------
    def decode_subgraph(self, m: Any, si: int, buffers: list, opcodes: list) -> Subgraph:
        sg = self.present(self.guarded(f"subgraph {si}", lambda: m.Subgraphs(si)), f"subgraph {si}")
        n_t = self.count(self.guarded("tensor table", sg.TensorsLength), f"subgraph {si} tensor table")
        tensors = tuple(self.decode_tensor(sg, si, ti, buffers) for ti in range(n_t))
        n_op = self.count(self.guarded("operator table", sg.OperatorsLength), f"subgraph {si} operator table")
        ops = tuple(self.decode_operator(sg, si, k, n_t, opcodes) for k in range(n_op))
        inputs = self.index_vector(lambda: sg.InputsAsNumpy(), f"subgraph {si} inputs", n_t)
        outputs = self.index_vector(lambda: sg.OutputsAsNumpy(), f"subgraph {si} outputs", n_t)
        name = self.guarded("subgraph name", lambda: (sg.Name() or b"").decode("utf-8", "replace"))
        return Subgraph(index=si, name=name, tensors=_empty_constants(tensors, ops, inputs), operators=ops,
                        inputs=inputs, outputs=outputs)

    def index_vector(self, fn: Callable[[], Any], what: str, limit: int, optional: bool = False) -> tuple[int, ...]:
        arr = self.guarded(what, fn)
        if isinstance(arr, int):
            return ()
        values = tuple(int(v) for v in arr)
        for v in values:
            if v >= limit or v < (-1 if optional else 0):
                raise self.fail(f"{what} refer to tensor {v}, but the subgraph has {limit} tensors")
        return values

    def decode_tensor(self, sg: Any, si: int, ti: int, buffers: list) -> Tensor:
        def one() -> Tensor:
            t = self.present(sg.Tensors(ti), f"tensor {ti} of subgraph {si}")
            shape = tuple(int(d) for d in self.values(t.ShapeAsNumpy(), "tensor shape"))
            sig_arr = t.ShapeSignatureAsNumpy()
            sig = None if isinstance(sig_arr, int) else tuple(int(d) for d in self.values(sig_arr, "shape signature"))
            if any(d < -1 for d in shape + (sig or ())):
                raise self.fail(f"tensor {ti} of subgraph {si} has a negative extent in shape {list(shape)}")
            ttype = t.Type()
            try:
                ttype = TensorType(ttype)
            except ValueError:
                raise self.fail(f"tensor {ti} of subgraph {si} has unknown type {ttype}") from None
            name = (t.Name() or b"").decode("utf-8", "replace")
            buf_index = t.Buffer()
            if buf_index >= len(buffers):
                raise self.fail(f"tensor {ti} ('{name}') of subgraph {si} uses buffer {buf_index}, but the "
                                f"model has {len(buffers)} buffers")
            quant = self.decode_quantization(t.Quantization())
            self.check_quantization(quant, shape, f"tensor {ti} ('{name}') of subgraph {si}")
            sparsity = self.decode_sparsity(t.Sparsity())
            if sparsity is not None:
                self.check_sparsity(sparsity, shape, f"tensor {ti} ('{name}') of subgraph {si}")
            data = None
            span = buffers[buf_index]
            if span is not None:
                data = self.tensor_view(span, ttype, shape, sparsity is not None, ti, name)
            return Tensor(index=ti, name=name, shape=shape, shape_signature=sig, type=ttype, buffer=buf_index,
                          quantization=quant, sparsity=sparsity, is_variable=bool(t.IsVariable()), data=data)
        return self.guarded(f"tensor {ti} of subgraph {si}", one)

    def tensor_view(self, span: tuple[int, int], ttype: TensorType, shape: tuple[int, ...], sparse: bool,
                    ti: int, name: str) -> np.ndarray:
        off, size = span
        dtype = NUMPY_DTYPE.get(ttype)
        if ttype == TensorType.INT4 and not sparse:
            # packed two values a byte (nnconv/tflite/int4.py), kept raw; TFLite needs at least that many bytes
            n = int(np.prod(shape, dtype=np.int64)) if shape else 1
            if size < packed_size(n):
                raise self.fail(f"tensor {ti} ('{name}') has shape {list(shape)} ({n} int4 values, "
                                f"{packed_size(n)} bytes packed) but its buffer holds {size} bytes")
        if dtype is None:  # strings, resources, int4: keep the raw bytes
            return np.frombuffer(self.buf, dtype=np.uint8, count=size, offset=off)
        if size % dtype.itemsize:
            raise self.fail(f"tensor {ti} ('{name}'): buffer of {size} bytes is not a whole number of "
                            f"{dtype.name} values")
        arr = np.frombuffer(self.buf, dtype=dtype, count=size // dtype.itemsize, offset=off)
        if sparse:
            return arr  # sparse values are densified by the lowering (DENSIFY), not here
        n = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if arr.size != n:
            raise self.fail(f"tensor {ti} ('{name}') has shape {list(shape)} ({n} values) but its buffer "
                            f"holds {arr.size}")
        return arr.reshape(shape)

    def decode_quantization(self, q: Any) -> Quantization:
        if q is None:
            return Quantization()
        def vec(fn: Callable[[], Any]) -> tuple:
            return self.values(fn(), "quantization parameters")
        scale = vec(q.ScaleAsNumpy)
        zp = vec(q.ZeroPointAsNumpy)
        details = int(q.DetailsType())
        return Quantization(scale=tuple(float(s) for s in scale), zero_point=tuple(int(z) for z in zp),
                            quantized_dimension=q.QuantizedDimension(),
                            min=vec(q.MinAsNumpy), max=vec(q.MaxAsNumpy), details=details,
                            blockwise=self.decode_blockwise(q.Details()) if details == BLOCKWISE else None)

    @staticmethod
    def decode_blockwise(table: Any) -> tuple[int, int, int] | None:
        """The schema's BlockwiseQuantization table (newer than the `tflite` package): three int32 fields,
        scales (a tensor index), zero_points (a tensor index, -1 for none) and block_size, each 0 when
        absent. The lowering checks the indices against the subgraph."""
        if table is None:
            return None
        fields = []
        for slot in range(3):
            o = table.Offset(4 + 2 * slot)
            fields.append(table.Get(flatbuffers.number_types.Int32Flags, o + table.Pos) if o else 0)
        return fields[0], fields[1], fields[2]

    def check_quantization(self, q: Quantization, shape: tuple[int, ...], where: str) -> None:
        """Zero points pair with scales, and per-channel parameters lie along a real dimension of the right
        extent, so the lowering can index them without checking."""
        n = len(q.scale)
        if q.zero_point and len(q.zero_point) != n:
            raise self.fail(f"{where}: {n} quantization scales but {len(q.zero_point)} zero points")
        if n > 1:
            qd = q.quantized_dimension
            if not 0 <= qd < len(shape):
                raise self.fail(f"{where}: quantized dimension {qd} outside its rank-{len(shape)} shape")
            if shape[qd] > 0 and shape[qd] != n:
                raise self.fail(f"{where}: {n} per-channel scales along dimension {qd} of extent {shape[qd]}")

    def decode_sparsity(self, s: Any) -> Sparsity | None:
        if s is None:
            return None
        def vec(fn: Callable[[], Any]) -> tuple:
            return tuple(int(v) for v in self.values(fn(), "sparsity parameters"))
        dims = []
        for i in range(self.count(s.DimMetadataLength(), "sparsity metadata")):
            d = self.present(s.DimMetadata(i), f"sparsity dimension {i}")
            segs = idx = ()
            if d.ArraySegmentsType():
                seg_tab = d.ArraySegments()
                segs = self.sparse_index_vector(d.ArraySegmentsType(), seg_tab)
            if d.ArrayIndicesType():
                idx = self.sparse_index_vector(d.ArrayIndicesType(), d.ArrayIndices())
            dims.append(DimensionMetadata(format=d.Format(), dense_size=d.DenseSize(),
                                          array_segments=segs, array_indices=idx))
        return Sparsity(traversal_order=vec(s.TraversalOrderAsNumpy), block_map=vec(s.BlockMapAsNumpy),
                        dim_metadata=tuple(dims))

    def check_sparsity(self, sp: Sparsity, shape: tuple[int, ...], where: str) -> None:
        """The metadata describes the tensor's dense shape consistently, so densifying it cannot index out of
        range: traversal_order permutes rank + block dimensions, block_map names real dimensions, one
        DimensionMetadata per traversed dimension, CSR segments rise from 0 to the number of indices."""
        n = len(sp.traversal_order)
        if sorted(sp.traversal_order) != list(range(n)):
            raise self.fail(f"{where}: sparse traversal order {list(sp.traversal_order)} is not a permutation")
        if shape and n != len(shape) + len(sp.block_map):
            raise self.fail(f"{where}: sparse traversal order has {n} dimensions, the shape {list(shape)} and "
                            f"{len(sp.block_map)} block dimensions need {len(shape) + len(sp.block_map)}")
        if any(not 0 <= b < max(len(shape), 1) for b in sp.block_map):
            raise self.fail(f"{where}: sparse block map {list(sp.block_map)} names a dimension the tensor lacks")
        if len(sp.dim_metadata) != n:
            raise self.fail(f"{where}: {len(sp.dim_metadata)} sparse dimension metadata for {n} dimensions")
        for k, d in enumerate(sp.dim_metadata):
            if d.format == 0:
                if d.dense_size < 0:
                    raise self.fail(f"{where}: sparse dimension {k} has dense size {d.dense_size}")
            elif d.format == 1:
                segs = d.array_segments
                if (not segs or segs[0] != 0 or any(b < a for a, b in zip(segs, segs[1:]))
                        or segs[-1] != len(d.array_indices) or any(i < 0 for i in d.array_indices)):
                    raise self.fail(f"{where}: sparse dimension {k} has inconsistent CSR segments/indices")
            else:
                raise self.fail(f"{where}: sparse dimension {k} has unknown format {d.format}")

    def sparse_index_vector(self, kind: int, table: Any) -> tuple[int, ...]:
        cls = {1: tflite.Int32Vector, 2: tflite.Uint16Vector, 3: tflite.Uint8Vector}.get(kind)
        if cls is None or table is None:
            raise self.fail(f"unknown sparse index vector type {kind}")
        v = cls()
        v.Init(table.Bytes, table.Pos)
        return tuple(int(x) for x in self.values(v.ValuesAsNumpy(), "sparse index vector"))

    def decode_operator(self, sg: Any, si: int, k: int, n_tensors: int, opcodes: list) -> Operator:
        def one() -> Operator:
            op = self.present(sg.Operators(k), f"operator {k} of subgraph {si}")
            oi = op.OpcodeIndex()
            if oi >= len(opcodes):
                raise self.fail(f"operator {k} of subgraph {si} uses opcode {oi}, but the model has "
                                f"{len(opcodes)} operator codes")
            code, custom, version = opcodes[oi]
            ins = self.index_vector(op.InputsAsNumpy, f"operator {k} inputs", n_tensors, optional=True)
            outs = self.index_vector(op.OutputsAsNumpy, f"operator {k} outputs", n_tensors, optional=True)
            inter = self.index_vector(op.IntermediatesAsNumpy, f"operator {k} intermediates", n_tensors,
                                      optional=True)
            options = None
            ot = op.BuiltinOptionsType()
            if ot:
                options = decode_options("BuiltinOptions", ot, op.BuiltinOptions())
            else:
                ot2 = op.BuiltinOptions2Type() if hasattr(op, "BuiltinOptions2Type") else 0
                if ot2:
                    options = decode_options("BuiltinOptions2", ot2, op.BuiltinOptions2())
            for value in vars(options).values() if options is not None else ():
                if isinstance(value, (tuple, str)):
                    self.count(len(value), "operator options", 1)
            copts = op.CustomOptionsAsNumpy()
            custom_options = None if isinstance(copts, int) else copts.tobytes()
            if custom_options is None and code == BuiltinOperator.CUSTOM:
                custom_options = self.large_custom_options(op, k, si)
            return Operator(index=k, opcode_index=oi, builtin_code=code,
                            custom_code=custom if code == BuiltinOperator.CUSTOM else None, version=version,
                            inputs=ins, outputs=outs, intermediates=inter, options=options,
                            custom_options=custom_options)
        return self.guarded(f"operator {k} of subgraph {si}", one)

    def large_custom_options(self, op: Any, k: int, si: int) -> bytes | None:
        """Custom options stored after the flatbuffer (`large_custom_options_offset`/`size`, the layout of
        models over 2 GB), which TFLite reads when the inline vector is absent; offset 0/1 means none."""
        off, size = op.LargeCustomOptionsOffset(), op.LargeCustomOptionsSize()
        if off <= 1:
            return None
        if off + size > self.size:
            raise self.fail(f"operator {k} of subgraph {si}: custom options span bytes {off}..{off + size}, "
                            f"past the end of the file ({self.size} bytes)")
        return bytes(self.buf[off:off + size])

    def decode_metadata(self, m: Any, buffers: list[tuple[int, int] | None]) -> tuple[tuple[str, int], ...]:
        """(name, byte size) of each Model.metadata entry (min_runtime_version, TFLite Support's metadata...)."""
        def one(i: int) -> tuple[str, int]:
            entry = self.present(m.Metadata(i), f"metadata entry {i}")
            b = entry.Buffer()
            if b >= len(buffers):
                raise self.fail(f"metadata entry {i} names buffer {b}, but the model has {len(buffers)}")
            span = buffers[b]
            return (entry.Name() or b"").decode("utf-8", "replace"), span[1] if span else 0
        return tuple(self.entries("metadata table", m.MetadataLength, "metadata", one))

    def decode_signatures(self, m: Any, subgraphs: tuple[Subgraph, ...]) -> tuple[SignatureDef, ...]:
        def one(i: int) -> SignatureDef:
            s = self.present(m.SignatureDefs(i), f"signature {i}")
            si = s.SubgraphIndex()
            if si >= len(subgraphs):
                raise self.fail(f"signature {i} names subgraph {si}, which does not exist")
            n_tensors = len(subgraphs[si].tensors)

            def maps(length: Callable[[], int], get: Callable[[int], Any]) -> tuple:
                items = []
                for j in range(self.count(length(), "signature tensor map")):
                    tm = self.present(get(j), f"signature {i} tensor map {j}")
                    ti = tm.TensorIndex()
                    if ti >= n_tensors:
                        raise self.fail(f"signature {i} names tensor {ti}, but subgraph {si} has "
                                        f"{n_tensors} tensors")
                    items.append(((tm.Name() or b"").decode("utf-8", "replace"), ti))
                return tuple(items)
            key = (s.SignatureKey() or b"").decode("utf-8", "replace")
            return SignatureDef(signature_key=key, subgraph_index=si,
                                inputs=maps(s.InputsLength, s.Inputs), outputs=maps(s.OutputsLength, s.Outputs))
        return tuple(self.entries("signature defs", m.SignatureDefsLength, "signature", one, "signature table"))


def _raw_builtin_code(oc: Any) -> int:
    """`OperatorCode.builtin_code` as stored (schema default 0), without the `tflite` package's fallback."""
    o = oc._tab.Offset(10)
    return int(oc._tab.Get(flatbuffers.number_types.Int32Flags, o + oc._tab.Pos)) if o else 0


def _subgraph_fields(options: Any) -> list[tuple[str, int]]:
    """(field name, value) of every `*_subgraph_index` field of an options dataclass."""
    if options is None:
        return []
    return [(k, v) for k, v in vars(options).items() if k.endswith("subgraph_index") and isinstance(v, int)]


def _empty_constants(tensors: tuple[Tensor, ...], ops: tuple[Operator, ...], inputs: tuple[int, ...]
                     ) -> tuple[Tensor, ...]:
    """Zero-element tensors that nothing writes, as constants: a flatbuffer buffer of 0 bytes reads as "no
    data", but TensorFlow's converter writes `tf.shape` of a scalar (an int32 [0], GroupNormalization's
    BROADCAST_ARGS) that way, and TFLite runs it: a tensor without elements has its (empty) value."""
    written = set(inputs) | {o for op in ops for o in op.outputs}
    found = [t for t in tensors if t.data is None and not t.is_variable and t.index not in written
             and t.dtype is not None and t.shape and 0 in t.shape and min(t.shape) >= 0]
    if not found:
        return tensors
    out = list(tensors)
    for t in found:
        empty = np.zeros(t.shape, dtype=t.dtype)
        empty.setflags(write=False)
        out[t.index] = dataclasses.replace(t, data=empty)
    return tuple(out)
