"""Generates C source that rebuilds the models of a `.nnapi` file with the Android NDK (docs/nnapi-format.md).

The generated code calls ANeuralNetworksModel_addOperand / setOperandSymmPerChannelQuantParams /
setOperandValue (values of at most 128 bytes, embedded in the C file) / setOperandValueFromMemory (the
weights, read in place from the `.nnapi` file mapped as one ANeuralNetworksMemory, at each pool's file
offset) / setOperandValueFromModel (IF / WHILE bodies) / addOperation / identifyInputsAndOutputs /
relaxComputationFloat32toFloat16 / finish. For partition k it defines

    #define NNCONV_P<k>_MODEL_COUNT n                       main model + referenced subgraphs
    int  nnconv_p<k>_create(const ANeuralNetworksMemory* file, ANeuralNetworksModel* models[n]);
    void nnconv_p<k>_free(ANeuralNetworksModel* models[n]);

`models[0]` is the model to compile; the others are the referenced subgraphs, which the NDK requires to
outlive it. Enum values are written by their NDK names (ANEURALNETWORKS_CONV_2D), so the file compiles only
against a header that defines them, which is the point: the compiler checks the names.
"""

from __future__ import annotations

import math
import os
from typing import Iterable

import numpy as np

from nnconv.errors import ModelFormatError, NnconvError
from nnconv.nnapi.enums import OperandLifeTime, OperandType, OperationType
from nnconv.nnapi.model import Model, Operand, Subgraph
from nnconv.nnapi.serialize import NnapiFile

_L = OperandLifeTime


def operand_code(t: OperandType) -> str:
    """The NDK OperandCode name of an operand type (SUBGRAPH is ANEURALNETWORKS_MODEL in the NDK)."""
    return "ANEURALNETWORKS_MODEL" if t is OperandType.SUBGRAPH else f"ANEURALNETWORKS_{t.name}"


def operation_code(t: OperationType) -> str:
    """The NDK constant naming an operation type."""
    return f"ANEURALNETWORKS_{t.name}"


def c_float(v: float) -> str:
    """A C float literal that reads back as the same float32 value."""
    f = float(np.float32(v))
    if math.isnan(f):
        return "NAN"
    if math.isinf(f):
        return "INFINITY" if f > 0 else "(-INFINITY)"
    text = str(np.float32(f))  # numpy's shortest text that reads back as the same float32
    if "e" not in text and "." not in text:
        text += ".0"
    return text + "f"


def c_comment(text: str) -> str:
    """Text safe inside a /* */ comment on one line."""
    return text.replace("*/", "* /").replace("\n", " ").replace("\r", " ")


def _size(n: int) -> str:
    """A size_t literal (offsets into a file over 4 GiB need the long long suffix)."""
    return f"{n}u" if n < 2**32 else f"{n}ull"


def _u32_list(values: Iterable[int]) -> str:
    """Comma-separated uint32_t literals (operand indexes and dimensions)."""
    return ", ".join(f"{int(v)}u" for v in values)


def _subgraph_order(model: Model) -> list[int]:
    """Subgraph indexes (0 = main, k+1 = referenced[k]) so that each comes after every one it references:
    setOperandValueFromModel needs the referenced model already finished."""
    subgraphs = model.subgraphs()
    order: list[int] = []
    state: dict[int, int] = {}  # 1 = in progress, 2 = done

    def visit(s: int) -> None:
        if state.get(s) == 2:
            return
        if state.get(s) == 1:
            raise ModelFormatError("the referenced subgraphs of the model form a cycle, which NNAPI does not allow")
        state[s] = 1
        for od in subgraphs[s].operands:
            if od.lifetime is _L.SUBGRAPH:
                visit(od.location.offset + 1)
        state[s] = 2
        order.append(s)

    for s in range(len(subgraphs)):
        visit(s)
    return order


class _Emitter:
    def __init__(self, prefix: str, model: Model, spans: list[tuple[int, int]]) -> None:
        self.prefix = prefix
        self.model = model
        self.spans = spans
        self.lines: list[str] = []

    def w(self, line: str = "") -> None:
        self.lines.append(line)

    def operand(self, i: int, od: Operand) -> None:
        dims = od.dimensions
        self.w(f"  {{  /* operand {i}: {c_comment(od.name or '-')} {od.type.name} "
               f"{list(dims) if dims else 'scalar'} */")
        if dims:
            self.w(f"    static const uint32_t dims[] = {{{_u32_list(dims)}}};")
        self.w(f"    const ANeuralNetworksOperandType type = {{{operand_code(od.type)}, {len(dims)}u, "
               f"{'dims' if dims else 'NULL'}, {c_float(od.scale)}, {int(od.zero_point)}}};")
        self.w("    NNCONV_CHECK(ANeuralNetworksModel_addOperand(model, &type));")
        if od.channel_quant is not None:
            cq = od.channel_quant
            self.w(f"    static const float scales[] = {{{', '.join(c_float(v) for v in cq.scales)}}};")
            self.w(f"    const ANeuralNetworksSymmPerChannelQuantParams channel = {{{int(cq.channel_dim)}u, "
                   f"{len(cq.scales)}u, scales}};")
            self.w(f"    NNCONV_CHECK(ANeuralNetworksModel_setOperandSymmPerChannelQuantParams(model, {i}, "
                   "&channel));")
        loc = od.location
        if od.lifetime is _L.CONSTANT_COPY:
            self.w(f"    NNCONV_CHECK(ANeuralNetworksModel_setOperandValue(model, {i}, "
                   f"{self.prefix}values + {loc.offset}u, {_size(loc.length)}));")
        elif od.lifetime is _L.CONSTANT_REFERENCE:
            file_offset = self.spans[loc.pool_index][0] + loc.offset
            self.w(f"    /* pool {loc.pool_index} starts at byte {self.spans[loc.pool_index][0]} of the file */")
            self.w(f"    NNCONV_CHECK(ANeuralNetworksModel_setOperandValueFromMemory(model, {i}, file, "
                   f"{_size(file_offset)}, {_size(loc.length)}));")
        elif od.lifetime is _L.NO_VALUE:
            self.w(f"    NNCONV_CHECK(ANeuralNetworksModel_setOperandValue(model, {i}, NULL, 0));")
        elif od.lifetime is _L.SUBGRAPH:
            self.w(f"    NNCONV_CHECK(ANeuralNetworksModel_setOperandValueFromModel(model, {i}, "
                   f"models[{od.location.offset + 1}]));")
        self.w("  }")

    def index_call(self, call: str, code: str, ins: list[int], outs: list[int], comment: str) -> None:
        self.w(f"  {{  /* {c_comment(comment)} */")
        if ins:
            self.w(f"    static const uint32_t in[] = {{{_u32_list(ins)}}};")
        if outs:
            self.w(f"    static const uint32_t out[] = {{{_u32_list(outs)}}};")
        self.w(f"    NNCONV_CHECK({call}(model, {code}{len(ins)}u, {'in' if ins else 'NULL'}, {len(outs)}u, "
               f"{'out' if outs else 'NULL'}));")
        self.w("  }")

    def subgraph(self, s: int, sg: Subgraph) -> None:
        what = "main subgraph" if s == 0 else f"referenced subgraph {s - 1}"
        self.w(f"/* Adds the {what}: {len(sg.operands)} operands, {len(sg.operations)} operations. */")
        self.w(f"static int {self.prefix}add_subgraph_{s}(ANeuralNetworksModel* model, "
               "const ANeuralNetworksMemory* file, ANeuralNetworksModel* const* models) {")
        self.w("  (void)file;")
        self.w("  (void)models;")
        for i, od in enumerate(sg.operands):
            self.operand(i, od)
        for k, op in enumerate(sg.operations):
            src = "" if op.source_op is None else f" (TFLite op #{op.source_op})"
            self.index_call("ANeuralNetworksModel_addOperation", f"{operation_code(op.type)}, ", op.inputs,
                            op.outputs, f"operation {k}: {op.type.name}{src}")
        self.index_call("ANeuralNetworksModel_identifyInputsAndOutputs", "", sg.input_indexes,
                        sg.output_indexes, "inputs and outputs")
        if self.model.relax_computation_float32_to_float16:
            self.w("  NNCONV_CHECK(ANeuralNetworksModel_relaxComputationFloat32toFloat16(model, true));")
        self.w("  return ANEURALNETWORKS_NO_ERROR;")
        self.w("}")
        self.w()

    def emit(self) -> list[str]:
        p = self.prefix
        n = len(self.model.subgraphs())
        count = f"{p.upper()}MODEL_COUNT"
        values = bytes(self.model.operand_values)
        self.w(f"#define {count} {n}")
        self.w()
        if values:
            self.w(f"/* Model.operand_values: the CONSTANT_COPY values (at most 128 bytes each). */")
            self.w(f"static const uint8_t {p}values[{len(values)}] = {{")
            for k in range(0, len(values), 16):
                self.w("  " + ", ".join(f"0x{b:02x}" for b in values[k:k + 16]) + ",")
            self.w("};")
            self.w()
        for s, sg in enumerate(self.model.subgraphs()):
            self.subgraph(s, sg)
        order = _subgraph_order(self.model)
        self.w(f"/* Frees every model created by {p}create (NULL entries are skipped). */")
        self.w(f"void {p}free(ANeuralNetworksModel* models[{count}]) {{")
        self.w(f"  for (int k = 0; k < {count}; ++k) {{")
        self.w("    ANeuralNetworksModel_free(models[k]);")
        self.w("    models[k] = NULL;")
        self.w("  }")
        self.w("}")
        self.w()
        self.w(f"/* Builds and finishes every model; models[0] is the one to compile. `file` maps the whole .nnapi")
        self.w(" * file. Returns ANEURALNETWORKS_NO_ERROR, or the first error after freeing what was built. */")
        self.w(f"int {p}create(const ANeuralNetworksMemory* file, ANeuralNetworksModel* models[{count}]) {{")
        self.w(f"  for (int k = 0; k < {count}; ++k) models[k] = NULL;")
        self.w("  /* Referenced subgraphs first: setOperandValueFromModel needs them finished. */")
        self.w(f"  static const int order[{count}] = {{{', '.join(str(s) for s in order)}}};")
        self.w(f"  for (int k = 0; k < {count}; ++k) {{")
        self.w("    const int s = order[k];")
        self.w("    int status = ANeuralNetworksModel_create(&models[s]);")
        self.w("    if (status == ANEURALNETWORKS_NO_ERROR) {")
        self.w("      switch (s) {")
        for s in range(n):
            self.w(f"        case {s}: status = {p}add_subgraph_{s}(models[s], file, models); break;")
        self.w("        default: status = ANEURALNETWORKS_BAD_DATA; break;")
        self.w("      }")
        self.w("    }")
        self.w("    if (status == ANEURALNETWORKS_NO_ERROR) status = ANeuralNetworksModel_finish(models[s]);")
        self.w("    if (status != ANEURALNETWORKS_NO_ERROR) {")
        self.w(f"      {p}free(models);")
        self.w("      return status;")
        self.w("    }")
        self.w("  }")
        self.w("  return ANEURALNETWORKS_NO_ERROR;")
        self.w("}")
        return self.lines


def emit_c(nnapi: NnapiFile, source_name: str = "model.nnapi") -> str:
    """C source building every partition of a loaded `.nnapi` file with the NDK."""
    base = c_comment(os.path.basename(source_name))
    out = [
        f"/* Generated by nnconv ({c_comment(nnapi.producer)}) from {base}: do not edit.",
        f" * Rebuilds its {len(nnapi.partitions)} NNAPI model(s) with the Android NDK (target API level "
        f"{nnapi.api_level}).",
        " * The weights are not in this file: they are read from the .nnapi file itself, mapped once:",
        " *",
        f" *   int fd = open(\"{base}\", O_RDONLY);",
        " *   struct stat st; fstat(fd, &st);",
        " *   ANeuralNetworksMemory* file = NULL;",
        " *   ANeuralNetworksMemory_createFromFd(st.st_size, PROT_READ, fd, 0, &file);",
        " *   ANeuralNetworksModel* models[NNCONV_P0_MODEL_COUNT];",
        " *   if (nnconv_p0_create(file, models) == ANEURALNETWORKS_NO_ERROR) {",
        " *     ... ANeuralNetworksCompilation_create(models[0], &compilation) ...",
        " *   }",
        " *   nnconv_p0_free(models);  (after the compilation is freed; then free `file`)",
        " *",
        " * Operand and operation indexes equal those of the .nnapi file (docs/nnapi-format.md).",
        " */",
        "#include <math.h>",
        "#include <stdbool.h>",
        "#include <stddef.h>",
        "#include <stdint.h>",
        "",
        "#include <android/NeuralNetworks.h>",
        "",
        "#define NNCONV_CHECK(call)                          \\",
        "  do {                                              \\",
        "    const int nnconv_status_ = (call);              \\",
        "    if (nnconv_status_ != ANEURALNETWORKS_NO_ERROR) \\",
        "      return nnconv_status_;                        \\",
        "  } while (0)",
        "",
    ]
    for k, part in enumerate(nnapi.partitions):
        ins = ", ".join(f"{t.name} {t.dtype}{list(t.shape)}" for t in part.inputs)
        outs = ", ".join(f"{t.name} {t.dtype}{list(t.shape)}" for t in part.outputs)
        out.append(f"/* ---- partition {k}: TFLite subgraph {part.subgraph}, ops {c_comment(str(part.tflite_ops))}, "
                   f"API {part.api_level} */")
        out.append(f"/* inputs: {c_comment(ins)} */")
        out.append(f"/* outputs: {c_comment(outs)} */")
        spans = nnapi.pool_spans[k] if k < len(nnapi.pool_spans) else []
        out += _Emitter(f"nnconv_p{k}_", part.model, spans).emit()
        out.append("")
    return "\n".join(out)


def write_c(path: str | os.PathLike, nnapi: NnapiFile, source_name: str) -> None:
    """Writes `emit_c(nnapi)` to `path`."""
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(emit_c(nnapi, source_name))
    except OSError as e:
        raise NnconvError(f"{os.fspath(path)}: cannot write ({e.strerror or e})") from None
