"""Which .tflite files the paths on a command line name (a folder stands for every model below it), and
which of them one shard of a CI job takes (`--shard K/N`).

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
    out: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            found = sorted(f for f in pathlib.Path(p).rglob("*.tflite") if f.is_file())
            if not found:
                raise NnconvError(f"{p}: folder holds no .tflite file")
            out += [str(f) for f in found if shard is None or in_shard(f.relative_to(p).as_posix(), shard)]
        elif shard is None or in_shard(pathlib.PurePath(os.path.normpath(p)).as_posix(), shard):
            out.append(p)
    return out


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
