"""Reading model inputs from, and writing outputs to, .npz files, with one-line errors (exit 2)."""

from __future__ import annotations

import zipfile

import numpy as np

from nnconv.errors import InputDataError, NnconvError


def load_npz(path: str) -> dict[str, np.ndarray]:
    """The arrays of an .npz file by key; any unreadable file is an InputDataError (exit 2)."""
    try:
        data = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise InputDataError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputDataError(f"{path}: is a directory, not an .npz file") from None
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as e:
        raise InputDataError(f"{path}: not a readable .npz file ({_reason(e)})") from None
    if isinstance(data, np.ndarray):  # a bare .npy: say what is expected rather than guessing its name
        raise InputDataError(f"{path}: is a single .npy array; pass an .npz (np.savez) with one array per input")
    try:
        with data:
            return {k: data[k] for k in data.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError, KeyError) as e:
        raise InputDataError(f"{path}: not a readable .npz file ({_reason(e)})") from None


def _reason(e: BaseException) -> str:
    return " ".join(str(e).split()) or type(e).__name__


def save_npz(path: str, arrays: dict[str, np.ndarray]) -> None:
    try:
        with open(path, "wb") as f:
            np.savez(f, **arrays)
    except OSError as e:
        raise NnconvError(f"{path}: cannot write ({e.strerror or e})") from None
