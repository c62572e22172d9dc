"""Decodes builtin options from a flatbuffer table into the typed dataclasses of `options.py`, and encodes
them back (for our own `.tflite` builder). Only this module and `reader.py` touch TFLite flatbuffers."""

from __future__ import annotations

import importlib
from typing import Any

import flatbuffers
import numpy as np

from nnconv.tflite import options as opt

_NP_OF_FLAGS = {"Int32Flags": np.int32, "Int64Flags": np.int64, "Float32Flags": np.float32,
                "Int8Flags": np.int8, "Uint8Flags": np.uint8, "Int16Flags": np.int16,
                "Uint16Flags": np.uint16, "Uint32Flags": np.uint32, "Uint64Flags": np.uint64,
                "BoolFlags": np.bool_, "Float64Flags": np.float64}
_FB_CLASSES: dict[str, type] = {}


def _fb_class(name: str) -> type:
    cls = _FB_CLASSES.get(name)
    if cls is None:
        cls = getattr(importlib.import_module(f"tflite.{name}"), name)
        _FB_CLASSES[name] = cls
    return cls


def decode_options(union: str, union_type: int, table: Any) -> Any | None:
    """Returns the options dataclass for a `flatbuffers.table.Table`, or None for NONE / unknown types."""
    cls = opt.OPTIONS_BY_UNION.get((union, union_type))
    if cls is None or table is None:
        return None
    fb = _fb_class(cls.__name__)()
    fb.Init(table.Bytes, table.Pos)
    values: dict[str, Any] = {}
    for name, accessor, kind, _slot, _flags in cls.FIELDS:
        if kind == "scalar":
            values[name] = getattr(fb, accessor)()
        elif kind == "vector":
            arr = getattr(fb, accessor + "AsNumpy")()
            values[name] = None if isinstance(arr, int) else tuple(arr.tolist())
        else:
            raw = getattr(fb, accessor)()
            values[name] = None if raw is None else raw.decode("utf-8", "replace")
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
