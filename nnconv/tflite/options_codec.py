"""Decodes builtin options from a flatbuffer table into the typed dataclasses of `options.py`, and encodes
them back (for our own `.tflite` builder). Only this module and `reader.py` touch TFLite flatbuffers.

Each dataclass's `FIELDS` gives every field's vtable slot and flatbuffers number type, so the table is read
directly (what the `tflite` package's generated accessors do field by field); an absent field reads as
the dataclass default, which the generator copied from the schema."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import flatbuffers
import numpy as np
from flatbuffers import number_types

from nnconv.tflite import options as opt

_NP_OF_FLAGS = {"Int32Flags": np.int32, "Int64Flags": np.int64, "Float32Flags": np.float32,
                "Int8Flags": np.int8, "Uint8Flags": np.uint8, "Int16Flags": np.int16,
                "Uint16Flags": np.uint16, "Uint32Flags": np.uint32, "Uint64Flags": np.uint64,
                "BoolFlags": np.bool_, "Float64Flags": np.float64}


@functools.cache
def _defaults(cls: type) -> dict[str, Any]:
    return {f.name: f.default for f in dataclasses.fields(cls)}


def _vtable_offset(slot: int) -> int:
    """The vtable entry of field `slot`: after the vtable's own size and the table's size (2 bytes each)."""
    return 4 + 2 * slot


def decode_options(union: str, union_type: int, table: Any) -> Any | None:
    """Returns the options dataclass for a `flatbuffers.table.Table`, or None for NONE / unknown types."""
    cls = opt.OPTIONS_BY_UNION.get((union, union_type))
    if cls is None or table is None:
        return None
    defaults = _defaults(cls)
    values: dict[str, Any] = {}
    for name, _accessor, kind, slot, flags in cls.FIELDS:
        o = table.Offset(_vtable_offset(slot))
        if not o:
            values[name] = defaults[name]
        elif kind == "scalar":
            values[name] = table.Get(getattr(number_types, flags + "Flags"), o + table.Pos)
        elif kind == "vector":
            values[name] = tuple(table.GetVectorAsNumpy(getattr(number_types, flags), o).tolist())
        else:
            values[name] = table.String(o + table.Pos).decode("utf-8", "replace")
    return cls(**values)


def encode_options(builder: flatbuffers.Builder, options: Any) -> int:
    """Writes an options dataclass as a table and returns its offset."""
    cls = type(options)
    offsets: dict[str, int] = {}
    for name, _accessor, kind, _slot, flags in cls.FIELDS:
        value = getattr(options, name)
        if value is None:
            continue
        if kind == "vector":
            offsets[name] = builder.CreateNumpyVector(np.asarray(value, dtype=_NP_OF_FLAGS[flags]))
        elif kind == "string":
            offsets[name] = builder.CreateString(value)
    builder.StartObject(cls.NUM_SLOTS)
    for name, _accessor, kind, slot, flags in cls.FIELDS:
        value = getattr(options, name)
        if kind == "scalar":
            # ForceDefaults-like behaviour is unnecessary: an absent slot reads back as the default.
            getattr(builder, f"Prepend{flags}Slot")(slot, value, None)
        elif name in offsets:
            builder.PrependUOffsetTRelativeSlot(slot, offsets[name], 0)
    return builder.EndObject()
