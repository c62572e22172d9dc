"""The two questions nnconv answers, one per target. Every report says which one it answers for.

- `delegate` (the default): what TFLite's own NNAPI delegate does with the model on a phone - which nodes it
  takes, the partitions it forms, the NNAPI graph it builds, and how it fails (`nnconv/delegate/`).
- `nnconv`: what nnconv's own converter does, which goes beyond the delegate (graph rewrites, emulated ops,
  the NDK C path: `nnconv/lowering/`). A model it converts runs on a phone through nnconv's `.nnapi` file or
  generated C, not through the delegate.
"""

from __future__ import annotations

import enum


class Target(str, enum.Enum):
    DELEGATE = "delegate"
    NNCONV = "nnconv"

    @property
    def description(self) -> str:
        if self is Target.DELEGATE:
            return "TFLite's NNAPI delegate (what phones run)"
        return "nnconv's own converter (beyond the delegate)"

    @classmethod
    def parse(cls, text: "str | Target") -> "Target":
        try:
            return cls(str(text.value if isinstance(text, Target) else text).strip().lower())
        except ValueError:
            raise ValueError(f"{text!r} is not a target: give 'delegate' or 'nnconv'") from None


DEFAULT_TARGET = Target.DELEGATE
