"""Device profiles: what one NNAPI device (a driver) takes, per NNAPI operation and operand type, and where
that knowledge comes from (docs/devices.md describes the JSON format, version `FORMAT_VERSION`).

A profile says, per NNAPI operation, which operand types the device takes: `input_types` constrain the type
of the operation's input 0 (the data operand the NNAPI spec's "supported tensor OperandCode" lists refer
to), `output_types` that of output 0 (DEQUANTIZE, QUANTIZE, CAST change the type). Several entries for one
operation add up. An operation missing from the profile is refused, as a driver's
`getSupportedOperations` answers false for it. A device's feature level also bounds what it takes: an
operation that needs a higher NNAPI feature level with its operands (the runtime's own validation,
`nnapi/operations`) is refused. `all_operations: true` is the NNAPI reference CPU: everything the spec
takes at the level checked.

Shipped profiles live in `data/` (package data) and are named by their file name without `.json`
(`armnn-hal1.3`, `reference`); a user's profile is a path, or a folder of profiles.
"""

from __future__ import annotations

import json
import os
import pathlib
from dataclasses import dataclass, field
from typing import Any

from nnconv.errors import NnconvError
from nnconv.nnapi.enums import OperandType, OperationType

FORMAT = "nnconv-device-profile"
FORMAT_VERSION = 1
DATA_DIR = pathlib.Path(__file__).resolve().parent / "data"
DEVICE_TYPES = ("UNKNOWN", "OTHER", "CPU", "GPU", "ACCELERATOR")  # the NDK's DeviceTypeCode order
SOURCE_KINDS = ("published", "probe", "spec", "hand-written")
MAX_PROFILE_BYTES = 16 * 1024 * 1024  # a profile is a few kB; a probe of a large model a few hundred


class ProfileError(NnconvError):
    """A device profile that cannot be read or does not follow the format (exit 2)."""


@dataclass(frozen=True)
class OperationSupport:
    """One entry of a profile: `operation` taken when its input 0 / output 0 types are among these (None:
    any type)."""

    operation: OperationType
    input_types: frozenset[OperandType] | None = None
    output_types: frozenset[OperandType] | None = None
    note: str = ""

    def takes(self, input_type: OperandType | None, output_type: OperandType | None) -> bool:
        return ((self.input_types is None or input_type is None or input_type in self.input_types)
                and (self.output_types is None or output_type is None or output_type in self.output_types))

    def to_json(self) -> dict:
        out: dict[str, Any] = {"operation": self.operation.name}
        if self.input_types is not None:
            out["input_types"] = sorted(t.name for t in self.input_types)
        if self.output_types is not None:
            out["output_types"] = sorted(t.name for t in self.output_types)
        if self.note:
            out["note"] = self.note
        return out


@dataclass(frozen=True)
class DeviceProfile:
    """What one device takes. `feature_level` None: whatever level the model is checked at."""

    name: str
    device_name: str
    device_type: str
    feature_level: int | None
    source: dict
    all_operations: bool = False
    operations: tuple[OperationSupport, ...] = ()
    notes: tuple[str, ...] = ()
    path: str = ""  # the file it was read from ("" for one built in memory)
    extra: dict = field(default_factory=dict)  # other top-level fields (a probe's observations), kept as read

    def entries(self, operation: OperationType) -> list[OperationSupport]:
        return [e for e in self.operations if e.operation is operation]

    def refusal(self, operation: OperationType, input_type: OperandType | None,
                output_type: OperandType | None) -> str | None:
        """None when the device takes `operation` with these operand types, else why not (type-wise only;
        the caller checks the feature level)."""
        if self.all_operations:
            return None
        entries = self.entries(operation)
        if not entries:
            return f"{operation.name} is not among the operations {self.name} takes"
        if any(e.takes(input_type, output_type) for e in entries):
            return None
        return f"{self.name} takes {operation.name} only with {_describe_types(entries)}"

    @property
    def source_line(self) -> str:
        text = self.source.get("description", "")
        ref = self.source.get("reference", "")
        return f"{text} ({ref})" if ref and text else (text or ref)

    def to_json(self) -> dict:
        out: dict[str, Any] = {"format": FORMAT, "format_version": FORMAT_VERSION, "name": self.name,
                               "device": {"name": self.device_name, "type": self.device_type,
                                          "feature_level": self.feature_level},
                               "source": self.source, "all_operations": self.all_operations,
                               "operations": [e.to_json() for e in self.operations]}
        if self.notes:
            out["notes"] = list(self.notes)
        out.update(self.extra)
        return out

    def summary_json(self) -> dict:
        """What `nnconv devices --format json` and a device report say about the profile."""
        return {"name": self.name, "device": {"name": self.device_name, "type": self.device_type,
                                              "feature_level": self.feature_level},
                "source": self.source, "all_operations": self.all_operations,
                "operations": len({e.operation for e in self.operations}), "path": self.path}


def _describe_types(entries: list[OperationSupport]) -> str:
    parts = []
    for e in entries:
        ins = "any input" if e.input_types is None else "input " + "/".join(sorted(t.name for t in e.input_types))
        outs = "" if e.output_types is None else " -> " + "/".join(sorted(t.name for t in e.output_types))
        parts.append(ins + outs)
    return "; ".join(parts)


# -- reading ----------------------------------------------------------------------------------------
def _types(value: Any, where: str) -> frozenset[OperandType] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ProfileError(f"{where}: expected a list of NNAPI operand type names")
    unknown = [v for v in value if v not in OperandType.__members__]
    if unknown:
        raise ProfileError(f"{where}: unknown operand type {unknown[0]!r}")
    return frozenset(OperandType[v] for v in value)


def _entry(raw: Any, where: str) -> OperationSupport:
    if not isinstance(raw, dict) or not isinstance(raw.get("operation"), str):
        raise ProfileError(f"{where}: expected an object with an \"operation\" name")
    name = raw["operation"]
    if name not in OperationType.__members__:
        raise ProfileError(f"{where}: unknown NNAPI operation {name!r}")
    note = raw.get("note", "")
    return OperationSupport(OperationType[name], _types(raw.get("input_types"), f"{where} ({name}) input_types"),
                            _types(raw.get("output_types"), f"{where} ({name}) output_types"),
                            note if isinstance(note, str) else "")


_KNOWN_KEYS = {"format", "format_version", "name", "device", "source", "all_operations", "operations", "notes"}


def profile_from_json(data: Any, where: str, path: str = "") -> DeviceProfile:
    """A profile from its parsed JSON; ProfileError (naming `where`) when it does not follow the format."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ProfileError(f"{where}: not a device profile (\"format\" must be \"{FORMAT}\")")
    version = data.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= FORMAT_VERSION:
        raise ProfileError(f"{where}: format_version {version!r} is not one this nnconv reads "
                           f"(1..{FORMAT_VERSION})")
    device, source = data.get("device"), data.get("source")
    if not isinstance(device, dict) or not isinstance(source, dict):
        raise ProfileError(f"{where}: \"device\" and \"source\" must be objects")
    level = device.get("feature_level")
    if level is not None and (not isinstance(level, int) or isinstance(level, bool) or not 1 <= level <= 8):
        raise ProfileError(f"{where}: device feature_level {level!r} is not an NNAPI feature level 1..8 or null")
    dtype = device.get("type", "UNKNOWN")
    if dtype not in DEVICE_TYPES:
        raise ProfileError(f"{where}: device type {dtype!r} is not one of {', '.join(DEVICE_TYPES)}")
    ops = data.get("operations", [])
    if not isinstance(ops, list):
        raise ProfileError(f"{where}: \"operations\" must be a list")
    notes = data.get("notes", [])
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise ProfileError(f"{where}: \"name\" must be a non-empty string")
    return DeviceProfile(name=name, device_name=str(device.get("name", name)), device_type=dtype,
                         feature_level=level, source=source, all_operations=data.get("all_operations") is True,
                         operations=tuple(_entry(e, f"{where}: operations[{i}]") for i, e in enumerate(ops)),
                         notes=tuple(n for n in notes if isinstance(n, str)) if isinstance(notes, list) else (),
                         path=path, extra={k: v for k, v in data.items() if k not in _KNOWN_KEYS})


def load_profile(path: str | os.PathLike) -> DeviceProfile:
    """Reads one profile file (ProfileError on anything unreadable or malformed)."""
    p = pathlib.Path(path)
    try:
        if p.stat().st_size > MAX_PROFILE_BYTES:
            raise ProfileError(f"{path}: larger than {MAX_PROFILE_BYTES} bytes, not a device profile")
        data = json.loads(p.read_text(encoding="utf-8"))
    except OSError as e:
        raise ProfileError(f"{path}: cannot read the device profile ({e.strerror or e})") from None
    except (ValueError, RecursionError) as e:
        raise ProfileError(f"{path}: not JSON ({e})") from None
    return profile_from_json(data, str(path), str(path))


def shipped_names() -> list[str]:
    """The names of the profiles shipped with nnconv, sorted."""
    return sorted(p.stem for p in DATA_DIR.glob("*.json"))


def shipped_profiles() -> list[DeviceProfile]:
    return [load_profile(DATA_DIR / f"{name}.json") for name in shipped_names()]


def resolve_profiles(specs: tuple[str, ...] | list[str]) -> list[DeviceProfile]:
    """`--device` values: a shipped profile's name, a profile file, or a folder of `*.json` profiles (sorted
    by file name). A name that is neither is an error listing the shipped names."""
    found: list[DeviceProfile] = []
    for spec in specs:
        if spec in shipped_names() and not os.path.exists(spec):
            found.append(load_profile(DATA_DIR / f"{spec}.json"))
        elif os.path.isdir(spec):
            files = sorted(pathlib.Path(spec).glob("*.json"))
            if not files:
                raise ProfileError(f"--device {spec}: the folder holds no .json device profile")
            found += [load_profile(f) for f in files]
        elif os.path.exists(spec):
            found.append(load_profile(spec))
        else:
            raise ProfileError(f"--device {spec}: neither a shipped profile ({', '.join(shipped_names())}) nor a "
                               "file or folder")
    names = [p.name for p in found]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ProfileError(f"--device: two profiles are named {duplicates[0]!r}; give each device once")
    return found
