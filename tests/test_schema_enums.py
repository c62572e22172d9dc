"""Enum values every byte boundary depends on agree with their schemas: the `tflite` package and our generated
`schema_enums` against TFLite's schema.fbs (tests/data/seeds), and the .nnapi schema against
nnconv.nnapi.enums."""

from __future__ import annotations

import pathlib
import re

import pytest
import tflite

from nnconv.nnapi import enums as nn
from nnconv.nnapi.fbs.OperandLifeTime import OperandLifeTime as FbLifeTime
from nnconv.nnapi.fbs.OperandType import OperandType as FbOperandType
from nnconv.tflite import schema_enums

SCHEMA_SEED = pathlib.Path(__file__).resolve().parent / "data" / "seeds" / "tflite_schema.fbs.txt"


def parse_enum(text: str, name: str) -> dict[str, int]:
    """Members of `enum <name> : <type> { ... }` in a .fbs text; implicit values count up from the last one.
    The seed is a source-viewer page: each line starts with its line number, which is stripped first."""
    lines = [re.sub(r"^\d+", "", line) for line in text.splitlines()]
    src = "\n".join(re.sub(r"//.*", "", line) for line in lines)
    m = re.search(rf"\benum\s+{name}\s*:\s*\w+\s*\{{(.*?)\}}", src, re.S)
    assert m, f"enum {name} not found"
    members: dict[str, int] = {}
    value = -1
    for item in m.group(1).split(","):
        item = item.strip()
        if not item:
            continue
        key, _, explicit = item.partition("=")
        value = int(explicit) if explicit.strip() else value + 1
        members[key.strip()] = value
    return members


def package_enum(cls: type) -> dict[str, int]:
    return {k: v for k, v in vars(cls).items() if not k.startswith("_") and isinstance(v, int)}


@pytest.fixture
def schema_text() -> str:
    return SCHEMA_SEED.read_text(encoding="utf-8", errors="replace")


def test_parser_reads_the_seed(schema_text):
    ops = parse_enum(schema_text, "BuiltinOperator")
    assert ops["ADD"] == 0 and ops["CONV_2D"] == 3 and ops["PLACEHOLDER_FOR_GREATER_OP_CODES"] == 127
    assert ops["ASSIGN_VARIABLE"] == 144 and len(ops) == 145
    assert parse_enum(schema_text, "TensorType")["INT8"] == 9
    assert parse_enum("enum E : byte { A, B = 5, C }", "E") == {"A": 0, "B": 5, "C": 6}


@pytest.mark.parametrize("enum_name,package_cls,ours", [
    ("BuiltinOperator", tflite.BuiltinOperator, schema_enums.BuiltinOperator),
    ("TensorType", tflite.TensorType, schema_enums.TensorType),
])
def test_tflite_enums_agree_with_schema(schema_text, enum_name, package_cls, ours):
    schema = parse_enum(schema_text, enum_name)
    package = package_enum(package_cls)
    our = {m.name: int(m) for m in ours}
    for name, value in schema.items():
        assert package.get(name) == value, f"tflite.{enum_name}.{name} = {package.get(name)}, schema says {value}"
        assert our.get(name) == value, f"schema_enums.{enum_name}.{name} = {our.get(name)}, schema says {value}"
    # Newer packages may add members after the seed's last value, never renumber or rename older ones.
    top = max(schema.values())
    assert {k: v for k, v in package.items() if v <= top} == schema
    assert {k: v for k, v in our.items() if v <= top} == schema


@pytest.mark.parametrize("fb_cls,ours", [(FbOperandType, nn.OperandType), (FbLifeTime, nn.OperandLifeTime)])
def test_nnapi_schema_enums_agree_with_nnconv(fb_cls, ours):
    assert package_enum(fb_cls) == {m.name: int(m) for m in ours}
