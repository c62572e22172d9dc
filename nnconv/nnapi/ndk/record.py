"""Compares what the host recorder saw the generated C build (its JSON record and value blob) with the
models of the `.nnapi` file, and names the first difference.

The record (written by recorder_write.c) is {"memory_status", "file_memory", "partitions": [{"status",
"error", "models": [one per subgraph, in the order of `Model.subgraphs()`]}]}; each model lists its
operands (type code, dims, scale, zero_point, how its value was set: "none", "omitted" (NO_VALUE),
"copy" (setOperandValue, at most 128 bytes), "pointer" (setOperandValue, larger), "memory"
(setOperandValueFromMemory: memory id and offset), "model" (setOperandValueFromModel: model id), the value
bytes' place in the blob, per-channel parameters), operations, inputs and outputs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nnconv.nnapi.enums import OperandLifeTime, OperandType, OperationType
from nnconv.nnapi.model import Model, Operand, Subgraph
from nnconv.nnapi.serialize import NnapiFile

_L = OperandLifeTime
# How the generated C must set each lifetime's value (the NDK call that gives a HAL operand that lifetime).
_VALUE_KIND = {_L.TEMPORARY_VARIABLE: "none", _L.SUBGRAPH_INPUT: "none", _L.SUBGRAPH_OUTPUT: "none",
               _L.CONSTANT_COPY: "copy", _L.CONSTANT_REFERENCE: "memory", _L.NO_VALUE: "omitted",
               _L.SUBGRAPH: "model"}
_RESULT_CODES = {0: "NO_ERROR", 1: "OUT_OF_MEMORY", 2: "INCOMPLETE", 3: "UNEXPECTED_NULL", 4: "BAD_DATA",
                 5: "OP_FAILED", 6: "BAD_STATE", 7: "UNMAPPABLE"}


class Difference(Exception):
    """The first place where the C-built models differ from the `.nnapi` file."""


def result_code_name(code: int) -> str:
    return "ANEURALNETWORKS_" + _RESULT_CODES.get(code, str(code))


def _type_name(code: int) -> str:
    try:
        return OperandType(code).name
    except ValueError:
        return f"type {code}"


def _op_name(code: int) -> str:
    try:
        return OperationType(code).name
    except ValueError:
        return f"operation {code}"


def _f32(value: float) -> np.float32:
    return np.float32(value)


class _Comparer:
    def __init__(self, nnapi: NnapiFile, record: dict[str, Any], blob: bytes) -> None:
        self.nnapi = nnapi
        self.record = record
        self.blob = memoryview(blob)

    def differ(self, where: str, what: str, in_c: object, in_file: object) -> None:
        raise Difference(f"{where}: {what}: {in_c} in the C, {in_file} in the .nnapi file")

    def compare(self) -> None:
        if self.record.get("memory_status", 0) != 0:
            raise Difference("ANeuralNetworksMemory_createFromFd failed on the .nnapi file: "
                             f"{result_code_name(self.record['memory_status'])}")
        parts = self.record["partitions"]
        if len(parts) != len(self.nnapi.partitions):
            self.differ("the file", "the number of partitions", len(parts), len(self.nnapi.partitions))
        for k, (part, converted) in enumerate(zip(parts, self.nnapi.partitions)):
            if part["status"] != 0:
                raise Difference(f"partition {k}: create returned {result_code_name(part['status'])}"
                                 + (f" ({part['error']})" if part.get("error") else ""))
            self.partition(k, part["models"], converted.model)

    def partition(self, k: int, models: list[dict[str, Any]], model: Model) -> None:
        subgraphs = model.subgraphs()
        if len(models) != len(subgraphs):
            self.differ(f"partition {k}", "the number of models (main + referenced subgraphs)", len(models),
                        len(subgraphs))
        ids = [m["id"] for m in models]
        for s, (built, sg) in enumerate(zip(models, subgraphs)):
            where = f"partition {k}, {'main model' if s == 0 else f'referenced subgraph {s - 1}'}"
            if not built["finished"]:
                raise Difference(f"{where}: the model was not finished")
            if built["relaxed"] != model.relax_computation_float32_to_float16:
                self.differ(where, "relaxComputationFloat32toFloat16", built["relaxed"],
                            model.relax_computation_float32_to_float16)
            self.subgraph(where, built, sg, model, self.nnapi.pool_spans[k] if k < len(self.nnapi.pool_spans)
                          else [], ids)

    def subgraph(self, where: str, built: dict[str, Any], sg: Subgraph, model: Model,
                 spans: list[tuple[int, int]], ids: list[int]) -> None:
        if len(built["operands"]) != len(sg.operands):
            self.differ(where, "the number of operands", len(built["operands"]), len(sg.operands))
        for i, (rec, od) in enumerate(zip(built["operands"], sg.operands)):
            self.operand(f"{where}, operand {i} ({od.name or od.type.name})", rec, od, model, spans, ids)
        if len(built["operations"]) != len(sg.operations):
            self.differ(where, "the number of operations", len(built["operations"]), len(sg.operations))
        for n, (rec, op) in enumerate(zip(built["operations"], sg.operations)):
            at = f"{where}, operation {n} ({op.type.name})"
            if rec["type"] != int(op.type):
                self.differ(at, "the type", _op_name(rec["type"]), op.type.name)
            if rec["inputs"] != list(op.inputs):
                self.differ(at, "the inputs", rec["inputs"], list(op.inputs))
            if rec["outputs"] != list(op.outputs):
                self.differ(at, "the outputs", rec["outputs"], list(op.outputs))
        if built["inputs"] != list(sg.input_indexes):
            self.differ(where, "the model inputs", built["inputs"], list(sg.input_indexes))
        if built["outputs"] != list(sg.output_indexes):
            self.differ(where, "the model outputs", built["outputs"], list(sg.output_indexes))

    def operand(self, at: str, rec: dict[str, Any], od: Operand, model: Model, spans: list[tuple[int, int]],
                ids: list[int]) -> None:
        if rec["type"] != int(od.type):
            self.differ(at, "the type", _type_name(rec["type"]), od.type.name)
        if rec["dims"] != list(od.dimensions):
            self.differ(at, "the dimensions", rec["dims"], list(od.dimensions))
        if _f32(rec["scale"]) != _f32(od.scale):
            self.differ(at, "the scale", rec["scale"], od.scale)
        if rec["zero_point"] != od.zero_point:
            self.differ(at, "the zero point", rec["zero_point"], od.zero_point)
        self.channel(at, rec, od)
        expected = _VALUE_KIND[od.lifetime]
        if rec["value"] != expected:
            self.differ(at, "the value", f"set as '{rec['value']}'", f"{od.lifetime.name} (set as '{expected}')")
        loc = od.location
        if expected == "memory":
            if rec["memory"] != self.record["file_memory"]:
                self.differ(at, "the memory", f"memory {rec['memory']}", "the .nnapi file's memory")
            offset = spans[loc.pool_index][0] + loc.offset if loc.pool_index < len(spans) else None
            if rec["offset"] != offset:
                self.differ(at, "the file offset", rec["offset"], offset)
        if expected == "model" and rec["model"] != ids[loc.offset + 1]:
            self.differ(at, "the referenced model", f"model {rec['model']}",
                        f"referenced subgraph {loc.offset} (model {ids[loc.offset + 1]})")
        if expected in ("copy", "memory"):
            want = model.constant_value(od).tobytes()
            got = self.blob[rec["blob"]: rec["blob"] + rec["length"]]
            if rec["length"] != len(want):
                self.differ(at, "the value's length", rec["length"], len(want))
            if got != want:
                first = next(b for b in range(len(want)) if got[b] != want[b])
                self.differ(at, f"value byte {first}", got[first], want[first])

    def channel(self, at: str, rec: dict[str, Any], od: Operand) -> None:
        cq = od.channel_quant
        has = "channel_dim" in rec
        if has != (cq is not None):
            self.differ(at, "the per-channel quantization", "set" if has else "not set",
                        "set" if cq is not None else "not set")
        if cq is None:
            return
        if rec["channel_dim"] != cq.channel_dim:
            self.differ(at, "the channel dimension", rec["channel_dim"], cq.channel_dim)
        got, want = np.asarray(rec["scales"], np.float32), np.asarray(cq.scales, np.float32)
        if got.shape != want.shape or not np.array_equal(got, want):
            self.differ(at, "the per-channel scales", rec["scales"], list(cq.scales))


def compare_record(nnapi: NnapiFile, record: dict[str, Any], blob: bytes) -> str | None:
    """None when the recorded models equal the file's, else the first difference as one line."""
    try:
        _Comparer(nnapi, record, blob).compare()
    except Difference as d:
        return str(d)
    return None
