"""Generates C source that rebuilds the models of a `.nnapi` file with the Android NDK (docs/nnapi-format.md).

The generated code calls ANeuralNetworksModel_addOperand / setOperandSymmPerChannelQuantParams /
setOperandValue (values of at most 128 bytes, embedded in the C file) / setOperandValueFromMemory (the
weights, read in place from the `.nnapi` file mapped as one ANeuralNetworksMemory, at each pool's file
offset) / setOperandValueFromModel (IF / WHILE bodies) / addOperation / identifyInputsAndOutputs /
relaxComputationFloat32toFloat16 / finish. Every external symbol starts with a prefix (by default the
model file's name, see `c_prefix_for`), so several converted models link into one app. For partition k
the header beside the `.c` declares

    #define PREFIX_P<k>_MODEL_COUNT n                       main model + referenced subgraphs
    int  prefix_p<k>_create(const ANeuralNetworksMemory* file, ANeuralNetworksModel* models[n]);
    void prefix_p<k>_free(ANeuralNetworksModel* models[n]);

`models[0]` is the model to compile; the others are the referenced subgraphs, which the NDK requires to
outlive it. Enum values are written by their NDK names (ANEURALNETWORKS_CONV_2D), so the file compiles only
against a header that defines them, which is the point: the compiler checks the names.
"""

from __future__ import annotations

import math
import os
import re
from typing import Iterable

import numpy as np

from nnconv.errors import ModelFormatError, NnconvError
from nnconv.nnapi.enums import OperandLifeTime, OperandType, OperationType
from nnconv.nnapi.model import Model, Operand, Subgraph
from nnconv.nnapi.serialize import NnapiFile
from nnconv.safe_write import output_target, write_text
from nnconv.fmt import plural

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


_C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def c_prefix_for(path: str | os.PathLike) -> str:
    """The default symbol prefix of a model: its file name without extension, made a C identifier
    (`mobilenet_v2-int8.tflite` -> `mobilenet_v2_int8`; a leading digit gets `m_`)."""
    stem = os.path.splitext(os.path.basename(os.fspath(path)))[0]
    name = re.sub(r"[^A-Za-z0-9_]+", "_", stem).strip("_")
    if not name:
        return "model"
    # Identifiers starting with `_` + capital or `__` are reserved for the implementation; a digit
    # cannot start one.
    return f"m_{name}" if name[0].isdigit() else name


def check_c_prefix(prefix: str) -> str:
    """`prefix` when it can start C identifiers of the generated code; a one-line NnconvError otherwise."""
    if not _C_IDENTIFIER.match(prefix) or prefix.startswith("_"):
        raise NnconvError(f"--c-prefix {prefix!r} is not a C identifier (letters, digits and '_', not starting "
                          "with a digit or '_')")
    return prefix


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
    def __init__(self, prefix: str, check: str, model: Model, spans: list[tuple[int, int]]) -> None:
        self.prefix = prefix  # `<c prefix>_p<k>_`
        self.check = check  # the name of the status-checking macro
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
        self.w(f"    {self.check}(ANeuralNetworksModel_addOperand(model, &type));")
        if od.channel_quant is not None:
            cq = od.channel_quant
            self.w(f"    static const float scales[] = {{{', '.join(c_float(v) for v in cq.scales)}}};")
            self.w(f"    const ANeuralNetworksSymmPerChannelQuantParams channel = {{{int(cq.channel_dim)}u, "
                   f"{len(cq.scales)}u, scales}};")
            self.w(f"    {self.check}(ANeuralNetworksModel_setOperandSymmPerChannelQuantParams(model, {i}, "
                   "&channel));")
        loc = od.location
        if od.lifetime is _L.CONSTANT_COPY:
            self.w(f"    {self.check}(ANeuralNetworksModel_setOperandValue(model, {i}, "
                   f"{self.prefix}values + {loc.offset}u, {_size(loc.length)}));")
        elif od.lifetime is _L.CONSTANT_REFERENCE:
            file_offset = self.spans[loc.pool_index][0] + loc.offset
            self.w(f"    /* pool {loc.pool_index} starts at byte {self.spans[loc.pool_index][0]} of the file */")
            self.w(f"    {self.check}(ANeuralNetworksModel_setOperandValueFromMemory(model, {i}, file, "
                   f"{_size(file_offset)}, {_size(loc.length)}));")
        elif od.lifetime is _L.NO_VALUE:
            self.w(f"    {self.check}(ANeuralNetworksModel_setOperandValue(model, {i}, NULL, 0));")
        elif od.lifetime is _L.SUBGRAPH:
            self.w(f"    {self.check}(ANeuralNetworksModel_setOperandValueFromModel(model, {i}, "
                   f"models[{od.location.offset + 1}]));")
        self.w("  }")

    def index_call(self, call: str, code: str, ins: list[int], outs: list[int], comment: str) -> None:
        self.w(f"  {{  /* {c_comment(comment)} */")
        # The runtime refuses NULL index lists even when their count is 0, and C has no empty arrays.
        self.w(f"    static const uint32_t in[] = {{{_u32_list(ins) or '0u'}}};")
        self.w(f"    static const uint32_t out[] = {{{_u32_list(outs) or '0u'}}};")
        self.w(f"    {self.check}({call}(model, {code}{len(ins)}u, in, {len(outs)}u, out));")
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
            self.w(f"  {self.check}(ANeuralNetworksModel_relaxComputationFloat32toFloat16(model, true));")
        self.w("  return ANEURALNETWORKS_NO_ERROR;")
        self.w("}")
        self.w()

    def emit(self) -> list[str]:
        p = self.prefix
        n = len(self.model.subgraphs())
        count = f"{p.upper()}MODEL_COUNT"
        values = bytes(self.model.operand_values)
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


def _partition_comment(nnapi: NnapiFile, k: int) -> list[str]:
    part = nnapi.partitions[k]
    ins = ", ".join(f"{t.name} {t.dtype}{list(t.shape)}" for t in part.inputs)
    outs = ", ".join(f"{t.name} {t.dtype}{list(t.shape)}" for t in part.outputs)
    return [f"/* ---- partition {k}: TFLite subgraph {part.subgraph}, ops {c_comment(str(part.tflite_ops))}, "
            f"API {part.api_level}",
            f" * inputs: {c_comment(ins)}",
            f" * outputs: {c_comment(outs)} */"]


def header_guard(prefix: str) -> str:
    return f"{prefix.upper()}_NNAPI_H"


def emit_header(nnapi: NnapiFile, prefix: str, source_name: str = "model.nnapi") -> str:
    """The declarations of `emit_c`'s source: one create/free pair and model count per partition."""
    base = c_comment(os.path.basename(source_name))
    guard = header_guard(prefix)
    out = [
        f"/* Generated by nnconv ({c_comment(nnapi.producer)}) from {base}: do not edit.",
        f" * Builds its {plural(len(nnapi.partitions), 'NNAPI model')} with the Android NDK (target API level "
        f"{nnapi.api_level}),",
        " * reading the weights from the .nnapi file itself, mapped once:",
        " *",
        f" *   int fd = open(\"{base}\", O_RDONLY);",
        " *   struct stat st; fstat(fd, &st);",
        " *   ANeuralNetworksMemory* file = NULL;",
        " *   ANeuralNetworksMemory_createFromFd(st.st_size, PROT_READ, fd, 0, &file);",
        f" *   ANeuralNetworksModel* models[{prefix.upper()}_P0_MODEL_COUNT];",
        f" *   if ({prefix}_p0_create(file, models) == ANEURALNETWORKS_NO_ERROR) {{",
        " *     ... ANeuralNetworksCompilation_create(models[0], &compilation) ...",
        " *   }",
        f" *   {prefix}_p0_free(models);  (after the compilation is freed; then free `file`)",
        " *",
        " * Operand and operation indexes equal those of the .nnapi file (docs/nnapi-format.md).",
        " */",
        f"#ifndef {guard}",
        f"#define {guard}",
        "",
        "#include <android/NeuralNetworks.h>",
        "",
        "#ifdef __cplusplus",
        'extern "C" {',
        "#endif",
        "",
        f"#define {prefix.upper()}_PARTITION_COUNT {len(nnapi.partitions)}",
        "",
    ]
    for k, part in enumerate(nnapi.partitions):
        p, count = f"{prefix}_p{k}_", f"{prefix.upper()}_P{k}_MODEL_COUNT"
        out += _partition_comment(nnapi, k)
        out += [f"#define {count} {len(part.model.subgraphs())}",
                f"/* Builds and finishes every model; models[0] is the one to compile. `file` maps the whole "
                ".nnapi file.",
                " * Returns ANEURALNETWORKS_NO_ERROR, or the first error after freeing what was built. */",
                f"int {p}create(const ANeuralNetworksMemory* file, ANeuralNetworksModel* models[{count}]);",
                f"/* Frees every model created by {p}create (NULL entries are skipped). */",
                f"void {p}free(ANeuralNetworksModel* models[{count}]);",
                ""]
    out += ["#ifdef __cplusplus", "}", "#endif", "", f"#endif /* {guard} */", ""]
    return "\n".join(out)


def emit_c(nnapi: NnapiFile, prefix: str = "model", source_name: str = "model.nnapi",
           header_name: str = "model.h") -> str:
    """C source building every partition of a loaded `.nnapi` file with the NDK; it includes
    `header_name` (`emit_header`'s text) for its declarations."""
    check = f"{prefix.upper()}_CHECK"
    out = [
        f"/* Generated by nnconv ({c_comment(nnapi.producer)}) from {c_comment(os.path.basename(source_name))}: "
        f"do not edit. Declarations and use: {c_comment(header_name)}. */",
        "#include <math.h>",
        "#include <stdbool.h>",
        "#include <stddef.h>",
        "#include <stdint.h>",
        "",
        f'#include "{header_name}"',
        "",
    ]
    macro = [f"#define {check}(call)", "  do {", "    const int nnconv_status_ = (call);",
             "    if (nnconv_status_ != ANEURALNETWORKS_NO_ERROR)", "      return nnconv_status_;"]
    width = max(len(line) for line in macro) + 1
    out += [line.ljust(width) + "\\" for line in macro] + ["  } while (0)", ""]
    for k, part in enumerate(nnapi.partitions):
        out += _partition_comment(nnapi, k)
        spans = nnapi.pool_spans[k] if k < len(nnapi.pool_spans) else []
        out += _Emitter(f"{prefix}_p{k}_", check, part.model, spans).emit()
        out.append("")
    out += [f"#undef {check}", ""]
    return "\n".join(out)


def header_path_for(c_path: str | os.PathLike) -> str:
    """The header written beside a generated `.c` file: same name, `.h`."""
    root, _ = os.path.splitext(os.fspath(c_path))
    return root + ".h"


def write_c(path: str | os.PathLike, nnapi: NnapiFile, source_name: str, prefix: str | None = None) -> str:
    """Writes `emit_c(nnapi)` to `path` and `emit_header(nnapi)` beside it (returned), each atomically
    (nnconv.safe_write) so that no half-written source is left behind. `prefix` defaults to `c_prefix_for`
    of `source_name`."""
    prefix = check_c_prefix(prefix if prefix is not None else c_prefix_for(source_name))
    header = header_path_for(path)
    texts = {header: emit_header(nnapi, prefix, source_name),
             os.fspath(path): emit_c(nnapi, prefix, source_name, os.path.basename(header))}
    for target in texts:
        output_target(target)  # refuse a directory or device before writing either file
    for target, text in texts.items():
        write_text(target, text)
    return header
