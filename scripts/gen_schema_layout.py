"""Writes nnconv/tflite/schema_layout.py, the field layout of TFLite's schema that the flatbuffer verifier
(nnconv/tflite/flatbuffer_verifier.py) walks, from the schema text itself. From a clone of LiteRT
(github.com/google-ai-edge/LiteRT):

    git -C LITERT show HEAD:tflite/converter/schema/schema.fbs > schema.fbs
    python scripts/gen_schema_layout.py schema.fbs --commit "$(git -C LITERT rev-parse HEAD)" \\
        --check-python SITE_PACKAGES/ai_edge_litert/schema_py_generated.py > nnconv/tflite/schema_layout.py

and, to check the parsing against flatc's own output for the same schema (without RUNTIME_FIELDS, below):

    git -C LITERT show HEAD:tflite/converter/schema/schema_generated.h > schema_generated.h
    python scripts/gen_schema_layout.py schema.fbs --schema-only --check-generated schema_generated.h > /dev/null

For every table it lists, in the order flatc's C++ generator emits the clauses of `T::Verify`, each field that
the generated code verifies: its vtable offset (4 + 2 * field id), and how it is verified (a scalar of N
bytes, a string, a vector of N-byte elements, a vector of strings or of tables, a table, a union). Deprecated
fields are left out, as flatc leaves them out of `Verify`. `--check-generated` compares the result with the
`Verify` methods of the schema_generated.h flatc wrote for the same schema (VerifyField<T>(verifier, VT_X,
align), VerifyOffset, VerifyVector, VerifyString, VerifyVectorOfTables, VerifyTable, Verify<Union>), so a
parsing mistake here cannot go unnoticed.

Only the subset of the flatbuffers schema language that TFLite's schema uses is understood (tables, enums,
unions of tables, scalars, strings, vectors, `deprecated`, `required`, `id`); anything else (structs, nested
flatbuffers, 64-bit offsets, vectors of unions) stops the script rather than being guessed at.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field

SCALAR_SIZES = {
    "bool": 1, "byte": 1, "ubyte": 1, "int8": 1, "uint8": 1,
    "short": 2, "ushort": 2, "int16": 2, "uint16": 2,
    "int": 4, "uint": 4, "float": 4, "int32": 4, "uint32": 4, "float32": 4,
    "long": 8, "ulong": 8, "double": 8, "int64": 8, "uint64": 8, "float64": 8,
}
# flatc's C++ type names, for --check-generated
CPP_TYPES = {1: ("int8_t", "uint8_t"), 2: ("int16_t", "uint16_t"), 4: ("int32_t", "uint32_t", "float"),
             8: ("int64_t", "uint64_t", "double")}

# Fields that the TFLite runtime nnconv is checked against (ai-edge-litert 2.3.0's interpreter) verifies but the
# LiteRT mirror's schema.fbs does not declare (yet): found with --check-python against the wheel's
# ai_edge_litert/schema_py_generated.py, the Python flatc wrote from the schema that runtime was built with, and
# confirmed on the interpreter (a FullyConnectedOptions whose quant_spec vector claims 2^31 - 256 bytes is "not
# a valid Flatbuffer buffer"). Appended after the table's last field, where the runtime's schema has them.
RUNTIME_FIELDS = {
    "BlockwiseQuantization": "block_shape:[int];",
    "FullyConnectedOptions": "quant_spec:[ubyte];",
}

_TOKEN = re.compile(r'\s+|//[^\n]*|/\*.*?\*/|("(?:[^"\\]|\\.)*")|([A-Za-z_][A-Za-z0-9_.]*|[-+]?[0-9][0-9A-Za-z_.+-]*'
                    r'|[-+]?\.[0-9]+|[{}()\[\]:;,=])', re.S)


@dataclass
class Field:
    name: str
    type: str           # "int", "string", "[float]", "Conv2DOptions"...
    attrs: dict[str, str | None]
    id: int = -1


@dataclass
class Schema:
    tables: dict[str, list[Field]] = field(default_factory=dict)
    enums: dict[str, str] = field(default_factory=dict)            # enum -> underlying scalar type
    enum_max: dict[str, int] = field(default_factory=dict)         # enum -> its largest value
    unions: dict[str, list[tuple[int, str]]] = field(default_factory=dict)  # union -> (type value, table)
    root: str = ""
    identifier: str = ""


def tokenize(text: str) -> list[str]:
    out, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise SystemExit(f"schema: cannot read {text[pos:pos + 40]!r}")
        tok = m.group(1) or m.group(2)
        if tok:
            out.append(tok)
        pos = m.end()
    return out


class Parser:
    def __init__(self, tokens: list[str]) -> None:
        self.toks, self.i = tokens, 0

    def peek(self) -> str:
        return self.toks[self.i] if self.i < len(self.toks) else ""

    def take(self, expected: str | None = None) -> str:
        tok = self.peek()
        if expected is not None and tok != expected:
            raise SystemExit(f"schema: expected {expected!r}, found {tok!r} (token {self.i})")
        self.i += 1
        return tok

    def attrs(self) -> dict[str, str | None]:
        out: dict[str, str | None] = {}
        if self.peek() != "(":
            return out
        self.take("(")
        while self.peek() != ")":
            key = self.take()
            value = None
            if self.peek() == ":":
                self.take(":")
                value = self.take()
            out[key] = value
            if self.peek() == ",":
                self.take(",")
        self.take(")")
        return out

    def parse(self) -> Schema:
        s = Schema()
        while self.peek():
            kw = self.take()
            if kw in ("namespace", "include", "attribute", "file_extension"):
                while self.take() != ";":
                    pass
            elif kw == "file_identifier":
                s.identifier = self.take().strip('"')
                self.take(";")
            elif kw == "root_type":
                s.root = self.take()
                self.take(";")
            elif kw == "enum":
                name = self.take()
                self.take(":")
                s.enums[name] = self.take()
                self.attrs()
                s.enum_max[name] = max(v for v, _ in self.union_members(start=-1))
            elif kw == "union":
                name = self.take()
                self.attrs()
                s.unions[name] = self.union_members()
            elif kw == "table":
                name = self.take()
                self.attrs()
                s.tables[name] = self.table_fields()
            else:  # struct, rpc_service, ...: not in TFLite's schema; refuse rather than guess their layout
                raise SystemExit(f"schema: {kw!r} declarations are not supported by this generator")
        return s

    def union_members(self, start: int = 0) -> list[tuple[int, str]]:
        """(value, name) of each member of a union (NONE is 0, members count from 1) or of an enum (from 0)."""
        self.take("{")
        members, value = [], start
        while self.peek() != "}":
            name = self.take()
            if self.peek() == ":":  # `Alias: Table`
                self.take(":")
                name = self.take()
            value += 1
            if self.peek() == "=":
                self.take("=")
                value = int(self.take(), 0)
            self.attrs()  # a deprecated member keeps its value and is still verified by flatc's code
            members.append((value, name))
            if self.peek() == ",":
                self.take(",")
        self.take("}")
        return members

    def table_fields(self) -> list[Field]:
        self.take("{")
        fields = []
        while self.peek() != "}":
            name = self.take()
            self.take(":")
            if self.peek() == "[":
                self.take("[")
                ftype = "[" + self.take() + "]"
                if self.peek() == ":":  # fixed-length arrays belong to structs only
                    raise SystemExit(f"schema: array field {name} is not supported")
                self.take("]")
            else:
                ftype = self.take()
            if self.peek() == "=":
                self.take("=")
                self.take()
            fields.append(Field(name, ftype, self.attrs()))
            self.take(";")
        self.take("}")
        return fields


def slots(s: Schema, fields: list[Field]) -> list[Field]:
    """Fields with their ids, in id order (flatc's order for the vtable and for Verify). A union takes two
    ids: its `_type` field (a ubyte) at id - 1, and the value."""
    explicit = [f for f in fields if "id" in f.attrs]
    if explicit and len(explicit) != len(fields):
        raise SystemExit("schema: either all fields of a table have an id or none")
    out, next_id = [], 0
    for f in fields:
        is_union = f.type in s.unions
        fid = int(f.attrs["id"] or 0) if explicit else next_id + (1 if is_union else 0)
        if is_union:
            out.append(Field(f.name + "_type", "ubyte", {k: v for k, v in f.attrs.items() if k == "deprecated"},
                             fid - 1))
        out.append(Field(f.name, f.type, f.attrs, fid))
        next_id = fid + 1
    return sorted(out, key=lambda f: f.id)


def scalar_size(s: Schema, t: str) -> int | None:
    if t in SCALAR_SIZES:
        return SCALAR_SIZES[t]
    if t in s.enums:
        return SCALAR_SIZES[s.enums[t]]
    return None


def layout(s: Schema) -> dict[str, list[tuple]]:
    """table -> [(name, vtable offset, kind, arg, required)] in Verify's order; kinds as in schema_layout.py."""
    out: dict[str, list[tuple]] = {}
    for tname, fields in s.tables.items():
        rows = []
        for f in slots(s, fields):
            for attr in ("nested_flatbuffer", "offset64", "flexbuffer"):
                if attr in f.attrs:
                    raise SystemExit(f"schema: {tname}.{f.name}: attribute {attr} is not supported")
            if "deprecated" in f.attrs:
                continue
            vt = 4 + 2 * f.id
            req = "required" in f.attrs
            t = f.type
            size = scalar_size(s, t)
            if size is not None:
                rows.append((f.name, vt, "SCALAR", size, req))
            elif t == "string":
                rows.append((f.name, vt, "STRING", 0, req))
            elif t in s.tables:
                rows.append((f.name, vt, "TABLE", t, req))
            elif t in s.unions:
                rows.append((f.name, vt, "UNION", t, req))
            elif t.startswith("["):
                inner = t[1:-1]
                isize = scalar_size(s, inner)
                if isize is not None:
                    rows.append((f.name, vt, "VECTOR", isize, req))
                elif inner == "string":
                    rows.append((f.name, vt, "VECTOR_OF_STRINGS", 0, req))
                elif inner in s.tables:
                    rows.append((f.name, vt, "VECTOR_OF_TABLES", inner, req))
                else:
                    raise SystemExit(f"schema: {tname}.{f.name}: vector of {inner} is not supported")
            else:
                raise SystemExit(f"schema: {tname}.{f.name}: type {t} is not supported")
        out[tname] = rows
    for uname, members in s.unions.items():
        for _, table in members:
            if table not in s.tables:
                raise SystemExit(f"schema: union {uname} holds {table}, which is not a table")
    return out


# -- cross-check with flatc's C++ output -------------------------------------------------------------------------
_VERIFY = re.compile(r"struct (\w+) FLATBUFFERS_FINAL_CLASS : private ::flatbuffers::Table \{(.*?)\n\};", re.S)
_VT = re.compile(r"\b(VT_\w+) = (\d+)")
_CLAUSE = re.compile(r"(VerifyField(?:Required)?<(\w+)>\(verifier, (VT_\w+), (\d+)\)"
                     r"|VerifyOffset(Required)?\(verifier, (VT_\w+)\)"
                     r"|verifier\.(VerifyVectorOfTables|VerifyVectorOfStrings|VerifyVector|VerifyString|VerifyTable)"
                     r"\((\w+)\(\)\)"
                     r"|Verify(\w+)\(verifier, (\w+)\(\), (\w+)_type\(\)\))")


def from_generated(header: str) -> dict[str, list[tuple]]:
    """The same rows as `layout`, read back from the Verify methods of flatc's schema_generated.h."""
    out: dict[str, list[tuple]] = {}
    for m in _VERIFY.finditer(header):
        name, body = m.group(1), m.group(2)
        vts = {k: int(v) for k, v in _VT.findall(body)}
        # what each accessor returns: a vector's element type, a table's name
        returns = {}
        for vec, table, acc in re.findall(r"const (?:::flatbuffers::Vector<(.+?)>|tflite::(\w+)) \*(\w+)\(\) const \{",
                                          body):
            returns[acc] = vec or table
        verify = body[body.index("bool Verify("):]
        verify = verify[:verify.index("verifier.EndTable()")]
        rows: list[tuple] = []
        pending = (0, False)  # the last VerifyOffset's (vtable offset, required), for the clause verifying its target
        for c in _CLAUSE.finditer(verify):
            if c.group(2):
                ctype, vt, align = c.group(2), vts[c.group(3)], int(c.group(4))
                size = _cpp_size(ctype)
                if size != align:
                    raise SystemExit(f"{name}: alignment {align} for a {ctype}")
                rows.append((c.group(3)[3:].lower(), vt, "SCALAR", size, "Required" in c.group(1)))
            elif c.group(6):
                pending = (vts[c.group(6)], bool(c.group(5)))
            elif c.group(7):
                vt, req = pending
                kind = {"VerifyVector": "VECTOR", "VerifyString": "STRING", "VerifyTable": "TABLE",
                        "VerifyVectorOfTables": "VECTOR_OF_TABLES",
                        "VerifyVectorOfStrings": "VECTOR_OF_STRINGS"}[c.group(7)]
                ret = returns.get(c.group(8), "")
                if kind == "VECTOR":
                    # a vector of tables or strings is verified as 4-byte offsets, then element by element
                    arg: int | str = 0 if "Offset<" in ret else _cpp_size(ret)
                elif kind in ("TABLE", "VECTOR_OF_TABLES"):
                    arg = re.sub(r".*tflite::(\w+)>?", r"\1", ret)
                else:
                    arg = 0
                if kind in ("VECTOR_OF_TABLES", "VECTOR_OF_STRINGS"):  # follows the VerifyVector of the same field
                    rows[-1] = (rows[-1][0], vt, kind, arg, req)
                else:
                    rows.append((c.group(8), vt, kind, arg, req))
            elif c.group(9):
                vt, req = pending
                rows.append((c.group(10), vt, "UNION", c.group(9), req))
        out[name] = rows
    return out


def _cpp_size(ctype: str) -> int:
    for size, names in CPP_TYPES.items():
        if ctype in names or ctype == "bool" and size == 1:
            return size
    raise SystemExit(f"schema_generated.h: unknown element type {ctype}")


def check_generated(ours: dict[str, list[tuple]], header: str) -> None:
    theirs = from_generated(header)
    if set(theirs) != set(ours):
        raise SystemExit(f"tables differ: {sorted(set(theirs) ^ set(ours))}")
    for name, rows in ours.items():
        a = [r[1:] for r in rows]
        b = [r[1:] for r in theirs[name]]
        if a != b:
            raise SystemExit(f"table {name}: the schema gives {a}, schema_generated.h verifies {b}")
    unions = set(re.findall(r"inline bool Verify(\w+)\(::flatbuffers::VerifierTemplate<B> &verifier, "
                            r"const void \*obj, \w+ type\)", header))
    used = {r[3] for rows in ours.values() for r in rows if r[2] == "UNION"}
    if unions != used:
        raise SystemExit(f"unions differ: {sorted(unions ^ used)}")
    print(f"checked {len(ours)} tables and {len(unions)} unions against schema_generated.h", file=sys.stderr)


def check_python(s: Schema, py: str) -> None:
    """Compares the number of fields of every table with a flatc Python module (`XStart` calls
    `builder.StartObject(n)`), which is how RUNTIME_FIELDS were found; stops on any difference."""
    starts = dict(re.findall(r"def (\w+)Start\(builder\):\s*\n\s*builder\.StartObject\((\d+)\)", py))
    for name, fields in s.tables.items():
        n = max((f.id for f in slots(s, fields)), default=-1) + 1
        if name not in starts or int(starts[name]) != n:
            raise SystemExit(f"table {name}: {n} fields here, {starts.get(name, 'no table')} in the Python module")
    print(f"checked the field counts of {len(s.tables)} tables against the Python module", file=sys.stderr)


# -- output -------------------------------------------------------------------------------------------------------
def render(s: Schema, rows: dict[str, list[tuple]], commit: str, added: list[str]) -> str:
    names = list(s.tables)
    index = {n: i for i, n in enumerate(names)}
    lines = [
        f'"""TFLite\'s schema as the flatbuffer verifier walks it. Generated by scripts/gen_schema_layout.py from',
        f"tflite/converter/schema/schema.fbs of LiteRT {commit or '(unknown commit)'}: do not edit.",
    ]
    if added:
        lines += ["With the fields the runtime also verifies (RUNTIME_FIELDS there):", ", ".join(added) + "."]
    lines += [
        "",
        "TABLES[i] = (name, fields): fields in the order of flatc's generated `Verify`, each (name, vtable offset,",
        "kind, arg, required); arg is the size of a scalar or of a vector's elements, the index in TABLES of a",
        "table or of a vector's tables, the index in UNIONS of a union. UNIONS[i] = (name, {type value: table",
        'index}); a union value\'s `_type` field is the SCALAR just before it. Deprecated fields are not verified."""',
        "",
        "from __future__ import annotations",
        "",
        f"FILE_IDENTIFIER = {s.identifier.encode()!r}",
        f"ROOT_TABLE = {index[s.root]}  # {s.root}",
        f"BUILTIN_OPERATOR_MAX = {s.enum_max.get('BuiltinOperator', -1)}  # the largest BuiltinOperator value",
        "SCALAR, STRING, VECTOR, VECTOR_OF_STRINGS, VECTOR_OF_TABLES, TABLE, UNION = range(7)",
        "",
        "TABLES: tuple[tuple[str, tuple[tuple[str, int, int, int, bool], ...]], ...] = (",
    ]
    unames = list(s.unions)
    for i, name in enumerate(names):
        fields = []
        for fname, vt, kind, arg, req in rows[name]:
            if kind in ("TABLE", "VECTOR_OF_TABLES"):
                arg = index[arg]
            elif kind == "UNION":
                arg = unames.index(arg)
            fields.append(f"({fname!r}, {vt}, {kind}, {arg}, {req})")
        body = ", ".join(fields) + ("," if len(fields) == 1 else "")
        lines.append(f"    ({name!r}, ({body})),  # {i}")
    lines.append(")")
    lines.append("")
    lines.append("UNIONS: tuple[tuple[str, dict[int, int]], ...] = (")
    for uname in unames:
        members = [f"{v}: {index[t]}" for v, t in s.unions[uname]]
        row = f"    ({uname!r}, {{"
        for k, m in enumerate(members):
            piece = m + (", " if k + 1 < len(members) else "")
            if len(row) + len(piece.rstrip()) > 118:
                lines.append(row.rstrip())
                row = "        "
            row += piece
        lines.append(row + "}),")
    lines.append(")")
    return "\n".join(_wrap(ln) for ln in lines) + "\n"


def _wrap(line: str, width: int = 120) -> str:
    """Breaks a long table row after a field tuple, indenting the continuation; a trailing `# i` comment stays
    on the last line."""
    body, sep, comment = line.partition("  # ")
    tail = sep + comment
    if len(line) <= width:
        return line
    out, cur = [], ""
    for part in re.split(r"(?<=\)), ", body):
        piece = part if not cur else cur + ", " + part
        if len(piece) + 1 + len(tail) > width and cur:
            out.append(cur + ",")
            cur = "        " + part
        else:
            cur = piece
    out.append(cur + tail)
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("schema", help="TFLite's schema.fbs")
    ap.add_argument("--commit", default="", help="the LiteRT commit the schema comes from, for the header")
    ap.add_argument("--check-generated", metavar="HEADER", help="flatc's schema_generated.h for the same schema")
    ap.add_argument("--schema-only", action="store_true",
                    help="leave out RUNTIME_FIELDS (with --check-generated on the mirror's own header)")
    ap.add_argument("--check-python", metavar="PY", help="a runtime's schema_py_generated.py: compare field counts")
    args = ap.parse_args()
    with open(args.schema, encoding="utf-8") as f:
        schema = Parser(tokenize(f.read())).parse()
    if not args.schema_only:
        for table, decl in RUNTIME_FIELDS.items():
            known = {f.name for f in schema.tables[table]}
            added = Parser(tokenize("{" + decl + "}")).table_fields()
            schema.tables[table] += [f for f in added if f.name not in known]
    if args.check_python:
        with open(args.check_python, encoding="utf-8") as f:
            check_python(schema, f.read())
    rows = layout(schema)
    if args.check_generated:
        with open(args.check_generated, encoding="utf-8") as f:
            check_generated(rows, f.read())
    added = [] if args.schema_only else [f"{t}.{d.split(':')[0]}" for t, d in RUNTIME_FIELDS.items()]
    sys.stdout.write(render(schema, rows, args.commit, added))


if __name__ == "__main__":
    main()
