"""Which .tflite files the paths on a command line name (a folder stands for every model below it), and the
name each is shown under."""

from __future__ import annotations

import os
import pathlib
from typing import Iterable

from nnconv.errors import NnconvError


def expand_models(paths: Iterable[str]) -> list[str]:
    """Files as given; folders contribute their .tflite files (recursively, sorted)."""
    return [path for path, _ in named_models(paths)]


def named_models(paths: Iterable[str]) -> list[tuple[str, str]]:
    """(path to open, name to show) per model. A file keeps the path as given; a folder's models are named
    relative to that folder (`face_detection.tflite`, `sub/x.tflite`), as the user knows them, whatever the
    folder's own path. When two folders hold models of the same relative name, every model of those folders
    is named by its full path instead, so that no two rows look alike."""
    found: list[tuple[str, str, str]] = []  # (path, name, the folder it was found in or "")
    for p in paths:
        if os.path.isdir(p):
            files = sorted(f for f in pathlib.Path(p).rglob("*.tflite") if f.is_file())
            if not files:
                raise NnconvError(f"{p}: folder holds no .tflite file")
            found += [(str(f), f.relative_to(p).as_posix(), p) for f in files]
        else:
            found.append((p, p, ""))
    names = [name for _, name, _ in found]
    clashing = {folder for _, name, folder in found if folder and names.count(name) > 1}
    return [(path, path if folder in clashing else name) for path, name, folder in found]
