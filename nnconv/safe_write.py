"""Every file nnconv writes (`.nnapi`, `.npz`, `.c`, reports) goes through `atomic_output`.

The bytes go to a temporary file in the target's own directory (so the final rename cannot cross file
systems), are flushed and fsynced, and only then renamed over the target: a failed, size-limited or
interrupted write never leaves a truncated file where the old one was, and a reader that has the old file
mapped keeps its bytes. The temporary file is removed on every failure path, Ctrl-C (KeyboardInterrupt)
included.

We only ever replace regular files. A symbolic link is followed to the file it names (the link stays a
link, its target gets the new bytes); a link to nothing, a directory, a device, a FIFO or a socket is
refused with a one-line `OutputError` (exit 2) instead of being replaced by a regular file (as root,
`-o /dev/full` used to turn the device node into a file).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from typing import BinaryIO, Iterator

from nnconv.errors import OutputError


def output_target(path: str | os.PathLike) -> str:
    """The regular file `path` stands for (links followed); raises OutputError when we must not write it."""
    name = os.fspath(path)
    if not name:
        raise OutputError("the output path is empty")
    target = os.path.realpath(name) if os.path.islink(name) else name
    try:
        st = os.stat(target)
    except FileNotFoundError:
        if target != name:
            raise OutputError(f"{name}: is a symbolic link to {target}, which does not exist; refusing to "
                              "create a file through it") from None
        parent = os.path.dirname(os.path.abspath(target))
        if not os.path.isdir(parent):
            raise OutputError(f"{name}: directory {parent} does not exist") from None
        return target
    except OSError as e:
        raise OutputError(f"{name}: cannot write ({e.strerror or e})") from None
    if stat.S_ISDIR(st.st_mode):
        raise OutputError(f"{name}: is a directory; give a file name")
    if not stat.S_ISREG(st.st_mode):
        raise OutputError(f"{name}: is not a regular file ({_kind(st.st_mode)}); refusing to replace it")
    return target


def _kind(mode: int) -> str:
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a plain file"


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike) -> Iterator[BinaryIO]:
    """Yields a binary file; on a normal exit its bytes replace `path` atomically. Any exception inside the
    block (or while finishing) removes the temporary file and leaves `path` untouched; an OSError becomes
    OutputError naming `path`."""
    name = os.fspath(path)
    target = output_target(name)
    directory = os.path.dirname(os.path.abspath(target))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=directory)
    except OSError as e:
        raise OutputError(f"{name}: cannot write ({e.strerror or e})") from None
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, _mode_for(target))
        os.replace(tmp, target)
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(e, OSError):
            raise OutputError(f"{name}: cannot write ({e.strerror or e})") from None
        raise
    _sync_directory(directory)


def write_bytes(path: str | os.PathLike, data: bytes | memoryview) -> None:
    """Writes `data` to `path` atomically (see `atomic_output`)."""
    with atomic_output(path) as f:
        f.write(data)


def write_text(path: str | os.PathLike, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def _mode_for(target: str) -> int:
    """An existing file keeps its permissions; a new one gets what open() would give it (0666 & ~umask),
    not mkstemp's 0600."""
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _sync_directory(directory: str) -> None:
    """Makes the rename durable (best effort: some file systems cannot fsync a directory)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
