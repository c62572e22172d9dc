"""Reading model inputs from, and writing outputs to, .npz files for the CLI: `nnconv.npz` checks every
archive from its zip and .npy headers before inflating anything, under a memory bound (`--max-memory`, by
default half of physical RAM, `nnconv.limits`), and writes outputs atomically; errors are one line, exit 2."""

from __future__ import annotations

import os
from typing import Mapping

import numpy as np

from nnconv import npz
from nnconv.limits import default_max_memory


def load_npz(path: str, max_bytes: int | None = None) -> dict[str, np.ndarray]:
    """The arrays of an .npz file by key, at most `max_bytes` in all (default: `--max-memory`'s default); an
    unreadable, hostile or oversized file is an InputDataError."""
    return npz.load_npz(path, max_bytes=default_max_memory() if max_bytes is None else max_bytes)


def save_npz(path: str | os.PathLike, arrays: Mapping[str, np.ndarray]) -> None:
    npz.save_npz(path, arrays)
