"""Reading and writing the `.npz` files of `run` and `verify`, defensively.

An `.npz` is a zip archive of `.npy` members (numpy's `np.savez`). Before any array is decompressed, every
member is checked from its headers alone: the zip directory (a member name ending in `.npy`, its declared
uncompressed size) and the `.npy` header (a numeric dtype, never Python objects, which numpy would unpickle;
a shape whose byte size matches the declared member size). The total is held to a byte bound (`--max-memory`)
so a header claiming a huge shape, or a small deflate bomb, is refused with its figure instead of being
inflated: the zip reader never returns more bytes than a member declares, and the declared sizes were
checked. Anything that is not such an archive is "not an .npz file". Every problem is one `InputDataError`
line (exit 2).
"""

from __future__ import annotations

import os
import zipfile
from tokenize import TokenError
from typing import Mapping

import numpy as np

from nnconv.errors import InputDataError, reading
from nnconv.fmt import format_bytes
from nnconv.safe_write import atomic_output

_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a local file header, or the end record of an empty archive
_NPY_MAGIC = b"\x93NUMPY"
_NUMERIC_KINDS = frozenset("biufc")  # bool, signed, unsigned, float, complex


def load_npz(path: str, max_bytes: int) -> dict[str, np.ndarray]:
    """The arrays of an `.npz` by key (the member name without `.npy`); at most `max_bytes` in total."""
    with reading(path, "an .npz file", InputDataError):
        f = open(path, "rb")
    with f:
        magic = f.read(6)
        if magic.startswith(_NPY_MAGIC):
            raise InputDataError(f"{path}: is a single .npy array; pass an .npz (np.savez) with one array per "
                                 "input")
        if magic[:4] not in _ZIP_MAGIC:
            raise InputDataError(f"{path}: not an .npz file (np.savez writes one)")
        f.seek(0)
        try:
            with zipfile.ZipFile(f) as z:
                members = _check_members(path, z, max_bytes)
                return {key: _read_member(path, z, info, dtype, shape) for key, info, dtype, shape in members}
        # zipfile raises NotImplementedError for an unsupported compression method and RuntimeError for an
        # encrypted member: both are a file we cannot read, one line and exit 2 like the rest.
        except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, ValueError, NotImplementedError,
                RuntimeError, IndexError, KeyError, UnicodeDecodeError) as e:  # what zipfile raises on damage
            raise InputDataError(f"{path}: not a readable .npz file ({_reason(e)})") from None


def _check_members(path: str, z: zipfile.ZipFile, max_bytes: int
                   ) -> list[tuple[str, zipfile.ZipInfo, np.dtype, tuple[int, ...]]]:
    members = []
    total = 0
    for info in z.infolist():
        name = info.filename
        if info.is_dir() or not name.endswith(".npy"):
            raise InputDataError(f"{path}: member '{name}' is not an .npy array; not an .npz file of arrays")
        if info.file_size > max_bytes - total:
            raise InputDataError(f"{path}: member '{name}' declares {format_bytes(info.file_size)}, over the "
                                 f"{format_bytes(max_bytes)} allowed (--max-memory)")
        with z.open(info) as member:  # reads (inflates) only the first bytes: the .npy header
            dtype, shape, header_size = _read_header(path, name, member)
        nbytes = int(np.prod(shape, dtype=np.float64)) * dtype.itemsize
        if nbytes > max_bytes - total:
            raise InputDataError(f"{path}: array '{name[:-4]}' of shape {list(shape)} {dtype} needs "
                                 f"{format_bytes(nbytes)}, over the {format_bytes(max_bytes)} allowed (--max-memory)")
        if header_size + nbytes != info.file_size:
            raise InputDataError(f"{path}: array '{name[:-4]}' declares shape {list(shape)} {dtype} "
                                 f"({nbytes} bytes) but its member holds {info.file_size - header_size}")
        total += nbytes
        members.append((name[:-4], info, dtype, shape))
    return members


def _read_header(path: str, name: str, member: object) -> tuple[np.dtype, tuple[int, ...], int]:
    fmt = np.lib.format
    try:
        version = fmt.read_magic(member)
        if version == (1, 0):
            shape, fortran, dtype = fmt.read_array_header_1_0(member)
        elif version in ((2, 0), (3, 0)):
            shape, fortran, dtype = fmt.read_array_header_2_0(member)
        else:
            raise ValueError(f"unknown .npy version {version}")
    # numpy parses the header dict with ast.literal_eval and, when that fails, re-tokenizes it for old
    # files: an unterminated header then raises tokenize.TokenError; a deeply nested one RecursionError.
    except (ValueError, EOFError, SyntaxError, TypeError, IndexError, KeyError, MemoryError, TokenError,
            RecursionError) as e:
        raise InputDataError(f"{path}: member '{name}' is not a readable .npy array ({_reason(e)})") from None
    if dtype.hasobject:
        raise InputDataError(f"{path}: array '{name[:-4]}' holds Python objects (pickled data); nnconv reads "
                             "numeric arrays only")
    if dtype.kind not in _NUMERIC_KINDS or dtype.fields is not None or dtype.subdtype is not None:
        raise InputDataError(f"{path}: array '{name[:-4]}' has dtype {dtype}, not a numeric array")
    if any(d < 0 for d in shape):
        raise InputDataError(f"{path}: array '{name[:-4]}' has a negative extent in shape {list(shape)}")
    return dtype, tuple(int(d) for d in shape), member.tell()  # type: ignore[attr-defined]


def _read_member(path: str, z: zipfile.ZipFile, info: zipfile.ZipInfo, dtype: np.dtype,
                 shape: tuple[int, ...]) -> np.ndarray:
    with z.open(info) as member:
        array = np.lib.format.read_array(member, allow_pickle=False)
    if array.dtype != dtype or array.shape != shape:  # cannot differ from the header read above
        raise InputDataError(f"{path}: array '{info.filename[:-4]}' changed between reads")
    return array


def load_npy(path: str, max_bytes: int) -> np.ndarray:
    """One `.npy` array (a `verify --dataset` sample), checked from its header as `.npz` members are: numeric,
    within `max_bytes`, as long as the file."""
    try:
        f = open(path, "rb")
    except OSError as e:
        raise InputDataError(f"{path}: cannot read ({e.strerror or e})") from None
    with f:
        dtype, shape, header_size = _read_header(path, os.path.basename(path), f)
        nbytes = int(np.prod(shape, dtype=np.float64)) * dtype.itemsize
        if nbytes > max_bytes:
            raise InputDataError(f"{path}: array of shape {list(shape)} {dtype} needs {format_bytes(nbytes)}, over "
                                 f"the {format_bytes(max_bytes)} allowed (--max-memory)")
        if header_size + nbytes != os.fstat(f.fileno()).st_size:
            raise InputDataError(f"{path}: array declares shape {list(shape)} {dtype} ({nbytes} bytes) but the "
                                 "file holds another size")
        f.seek(0)
        try:
            return np.lib.format.read_array(f, allow_pickle=False)
        except (ValueError, OSError, EOFError) as e:
            raise InputDataError(f"{path}: not a readable .npy array ({_reason(e)})") from None


def save_npz(path: str | os.PathLike, arrays: Mapping[str, np.ndarray]) -> None:
    """Writes `arrays` as an uncompressed `.npz`, atomically (nnconv.safe_write)."""
    with atomic_output(path) as f:
        np.savez(f, **arrays)


def _reason(e: BaseException) -> str:
    return " ".join(str(e).split()) or type(e).__name__
