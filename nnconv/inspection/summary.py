"""What is inside a `.tflite` or `.nnapi` file, as plain data (dicts of JSON types) for `nnconv inspect`.

`summarize(path)` reads either kind (by its file identifier) and returns the summary: operations by
type, tensors/operands, constants by size (for `.nnapi`, split by lifetime: CONSTANT_COPY values live in
the model, CONSTANT_REFERENCE ones in the file's pools), subgraphs, signatures, metadata, and for `.nnapi`
the provenance (producer, format version, target level, the partition plan). `op_rows` lists every
operation for `--ops`. Rendering is in `render.py` and `dot.py`.
"""

from __future__ import annotations

import collections
import os
from typing import Any

from nnconv.errors import ModelFormatError, NnconvError
from nnconv.nnapi import serialize
from nnconv.nnapi.enums import OperandLifeTime
from nnconv.nnapi.serialize import NnapiFile
from nnconv.tflite import read_model
from nnconv.tflite.ir import Tensor, TfliteModel

LARGEST_CONSTANTS = 5  # how many of the biggest constants the summary names


def file_kind(path: str | os.PathLike) -> str:
    """'tflite' or 'nnapi', from the file identifier at bytes 4..8 (not the extension)."""
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except IsADirectoryError:
        raise NnconvError(f"{os.fspath(path)}: is a directory, not a model file") from None
    except OSError as e:
        raise NnconvError(f"{os.fspath(path)}: cannot read ({e.strerror or e})") from None
    ident = head[4:8]
    if ident == serialize.FILE_IDENTIFIER:
        return "nnapi"
    if ident == b"TFL3":
        return "tflite"
    raise ModelFormatError(f"{os.fspath(path)}: neither a TFLite model (TFL3) nor an .nnapi file (NNAP): "
                           f"identifier {ident!r}")


def load(path: str | os.PathLike) -> TfliteModel | NnapiFile:
    return read_model(path) if file_kind(path) == "tflite" else serialize.load(path)


def _tensor_text(t: Tensor) -> dict[str, Any]:
    """A tensor's name, dtype and shape, and its `shape_signature` when it leaves extents open (-1): those
    can be chosen at conversion with --input-shape."""
    entry: dict[str, Any] = {"name": t.name, "dtype": t.type.name.lower(), "shape": list(t.shape)}
    if t.has_dynamic_signature:
        entry["shape_signature"] = list(t.shape_signature or ())
    return entry


def _constants(items: list[tuple[str, int, str]]) -> dict[str, Any]:
    """Count, bytes and the largest of (name, bytes, description) constants."""
    items = sorted(items, key=lambda c: -c[1])
    return {"count": len(items), "bytes": sum(c[1] for c in items),
            "largest": [{"name": n, "bytes": b, "type": d} for n, b, d in items[:LARGEST_CONSTANTS]]}


def summarize_tflite(model: TfliteModel, path: str) -> dict[str, Any]:
    ops = collections.Counter(op.name for sg in model.subgraphs for op in sg.operators)
    constants = [(t.name, int(t.data.nbytes), f"{t.type.name.lower()}{list(t.shape)}")
                 for sg in model.subgraphs for t in sg.tensors if t.data is not None]
    return {
        "file": os.fspath(path), "format": "tflite", "schema_version": model.version,
        "description": model.description,
        "operations": sum(ops.values()), "ops_by_type": dict(ops.most_common()),
        "tensors": sum(len(sg.tensors) for sg in model.subgraphs),
        "constants": _constants(constants),
        "subgraphs": [{"index": sg.index, "name": sg.name, "operators": len(sg.operators), "tensors": len(sg.tensors),
                       "inputs": [_tensor_text(sg.tensors[i]) for i in sg.inputs],
                       "outputs": [_tensor_text(sg.tensors[i]) for i in sg.outputs]} for sg in model.subgraphs],
        "signatures": [{"key": s.signature_key, "subgraph": s.subgraph_index, "inputs": [n for n, _ in s.inputs],
                        "outputs": [n for n, _ in s.outputs]} for s in model.signature_defs],
        "metadata": [{"name": n, "bytes": b} for n, b in model.metadata],
    }


def summarize_nnapi(nnapi: NnapiFile, path: str) -> dict[str, Any]:
    ops: collections.Counter[str] = collections.Counter()
    by_lifetime: dict[str, list[tuple[str, int, str]]] = {"CONSTANT_COPY": [], "CONSTANT_REFERENCE": []}
    partitions = []
    for k, part in enumerate(nnapi.partitions):
        subgraphs = part.model.subgraphs()
        for sg in subgraphs:
            ops.update(op.type.name for op in sg.operations)
            for i, od in enumerate(sg.operands):
                if od.lifetime in (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE):
                    by_lifetime[od.lifetime.name].append((od.name or f"p{k} operand {i}", od.location.length,
                                                          od.describe()))
        partitions.append({
            "index": k, "api_level": part.api_level, "tflite_subgraph": part.subgraph,
            "tflite_ops": list(part.tflite_ops), "relaxed_fp16": part.model.relax_computation_float32_to_float16,
            "operands": sum(len(sg.operands) for sg in subgraphs),
            "operations": sum(len(sg.operations) for sg in subgraphs),
            "referenced_subgraphs": len(part.model.referenced),
            "pool_bytes": sum(size for _, size in nnapi.pool_spans[k]) if k < len(nnapi.pool_spans) else 0,
            "inputs": [{"name": t.name, "dtype": t.dtype, "shape": list(t.shape)} for t in part.inputs],
            "outputs": [{"name": t.name, "dtype": t.dtype, "shape": list(t.shape)} for t in part.outputs],
        })
    plan = nnapi.plan or {}
    return {
        "file": os.fspath(path), "format": "nnapi",
        "provenance": {"producer": nnapi.producer, "format_version": nnapi.format_version,
                       "api_level": nnapi.api_level, "source_model": plan.get("model"),
                       "partial": nnapi.plan is not None and not plan.get("whole"),
                       "coverage": (None if not plan or plan.get("whole") else
                                    {"ops_delegated": plan.get("ops_delegated"), "ops_total": plan.get("ops_total"),
                                     "percent": plan.get("coverage")})},
        "operations": sum(ops.values()), "ops_by_type": dict(ops.most_common()),
        "operands": sum(p["operands"] for p in partitions),
        "subgraphs": sum(1 + p["referenced_subgraphs"] for p in partitions),
        "constants": {lifetime: _constants(items) for lifetime, items in by_lifetime.items()},
        "partitions": partitions,
    }


def summary_of(loaded: TfliteModel | NnapiFile, path: str | os.PathLike) -> dict[str, Any]:
    """The summary of a loaded file (`load(path)`)."""
    if isinstance(loaded, TfliteModel):
        return summarize_tflite(loaded, os.fspath(path))
    return summarize_nnapi(loaded, os.fspath(path))


def summarize(path: str | os.PathLike) -> dict[str, Any]:
    """The summary of a `.tflite` or `.nnapi` file."""
    return summary_of(load(path), path)


def op_rows(loaded: TfliteModel | NnapiFile) -> list[dict[str, Any]]:
    """One row per operation: where it is, its type, and what it reads and writes (tensor names for
    `.tflite`; operand indexes and types for `.nnapi`, with the TFLite op it came from)."""
    rows: list[dict[str, Any]] = []
    if isinstance(loaded, TfliteModel):
        for sg in loaded.subgraphs:
            for op in sg.operators:
                rows.append({"subgraph": sg.index, "index": op.index, "op": op.name,
                             "inputs": [sg.tensors[i].name if i >= 0 else "-" for i in op.inputs],
                             "outputs": [sg.tensors[i].name for i in op.outputs]})
        return rows
    for k, part in enumerate(loaded.partitions):
        for s, sg in enumerate(part.model.subgraphs()):
            for n, op in enumerate(sg.operations):
                rows.append({"partition": k, "subgraph": s, "index": n, "op": op.type.name,
                             "inputs": [f"{i}:{sg.operands[i].describe()}" for i in op.inputs],
                             "outputs": [f"{i}:{sg.operands[i].describe()}" for i in op.outputs],
                             "tflite_op": op.source_op})
    return rows
