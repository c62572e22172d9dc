"""Which .tflite files the paths on a command line name (a folder stands for every model below it), the
name each is shown under, and which of them one shard of a CI job takes (`--shard K/N`).

Sharding is a function of each model's key alone, so shards are disjoint, cover every model exactly once,
and agree across runs and machines: the key is the model's path relative to the folder given (for a file
named directly, its path as given), with `/` separators; its SHA-256 picks the shard. Adding a model never
moves the others between shards."""

from __future__ import annotations

import hashlib
import os
import pathlib
import re
from typing import Iterable

from nnconv.errors import NnconvError


def expand_models(paths: Iterable[str], shard: tuple[int, int] | None = None) -> list[str]:
    """Files as given; folders contribute their .tflite files (recursively, sorted). `shard` (K, N): only the
    models of shard K of N (1-based, see the module docstring)."""
    return [path for path, _ in named_models(paths, shard)]


def named_models(paths: Iterable[str], shard: tuple[int, int] | None = None) -> list[tuple[str, str]]:
    """(path to open, name to show) per model. A file keeps the path as given; a folder's models are named
    relative to that folder (`face_detection.tflite`, `sub/x.tflite`), as the user knows them, whatever the
    folder's own path. When two folders hold models of the same relative name, every model of those folders
    is named by its full path instead, so that no two rows look alike. Names are decided over all the models,
    before `shard` keeps its own, so a model has the same name in every shard."""
    found: list[tuple[str, str, str, str]] = []  # (path, name, the folder it was found in or "", shard key)
    for p in paths:
        if os.path.isdir(p):
            files = sorted(f for f in pathlib.Path(p).rglob("*.tflite") if f.is_file())
            if not files:
                raise NnconvError(f"{p}: folder holds no .tflite file")
            found += [(str(f), f.relative_to(p).as_posix(), p, f.relative_to(p).as_posix()) for f in files]
        else:
            found.append((p, p, "", pathlib.PurePath(os.path.normpath(p)).as_posix()))
    names = [name for _, name, _, _ in found]
    clashing = {folder for _, name, folder, _ in found if folder and names.count(name) > 1}
    return [(path, path if folder in clashing else name) for path, name, folder, key in found
            if shard is None or in_shard(key, shard)]


def in_shard(key: str, shard: tuple[int, int]) -> bool:
    """Whether the model of `key` belongs to shard K of N: SHA-256 of the key, modulo N (stable everywhere,
    unlike Python's salted hash())."""
    k, n = shard
    digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).digest()
    return int.from_bytes(digest[:8], "big") % n == k - 1


def parse_shard(text: str) -> tuple[int, int]:
    """`K/N` with 1 <= K <= N as (K, N); anything else is an NnconvError naming the expected form."""
    match = re.fullmatch(r"([0-9]{1,9})/([0-9]{1,9})", text.strip())
    if match is None:
        raise NnconvError(f"--shard {text!r}: expected K/N, e.g. 1/4 (shard K of N, 1 <= K <= N)")
    k, n = int(match.group(1)), int(match.group(2))
    if not 1 <= k <= n:
        raise NnconvError(f"--shard {text}: K must be between 1 and N ({n})")
    return k, n
