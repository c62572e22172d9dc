"""Which .tflite files the paths on a command line name (a folder stands for every model below it)."""

from __future__ import annotations

import os
import pathlib
from typing import Iterable

from nnconv.errors import NnconvError


def expand_models(paths: Iterable[str]) -> list[str]:
    """Files as given; folders contribute their .tflite files (recursively, sorted)."""
    out: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            found = sorted(str(f) for f in pathlib.Path(p).rglob("*.tflite") if f.is_file())
            if not found:
                raise NnconvError(f"{p}: folder holds no .tflite file")
            out += found
        else:
            out.append(p)
    return out
