"""Atomic, safe outputs (nnconv.safe_write): all or nothing, regular files only, no temp file left behind."""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import stat

import numpy as np
import pytest

from nnconv.errors import OutputError
from nnconv.nnapi import serialize
from nnconv.npz import save_npz
from nnconv.safe_write import atomic_output, write_bytes


@contextlib.contextmanager
def file_size_limit(nbytes: int):
    """RLIMIT_FSIZE (what `ulimit -f` sets): writes past it fail with EFBIG (Python ignores SIGXFSZ)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    old_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (nbytes, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, old_handler)


def leftovers(directory) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def test_replaces_a_file_whole_and_keeps_its_permissions(tmp_path):
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")
    os.chmod(target, 0o640)
    write_bytes(target, b"new bytes")
    assert target.read_bytes() == b"new bytes"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert leftovers(tmp_path) == []


def test_a_new_file_gets_umask_permissions_not_0600(tmp_path):
    old = os.umask(0o022)
    try:
        write_bytes(tmp_path / "new.bin", b"x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.bin").stat().st_mode) == 0o644


@pytest.mark.parametrize("error", [RuntimeError("boom"), KeyboardInterrupt()], ids=["exception", "ctrl-c"])
def test_a_failure_inside_leaves_the_old_file_and_no_temp(tmp_path, error):
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")
    with pytest.raises(type(error)):
        with atomic_output(target) as f:
            f.write(b"half")
            raise error
    assert target.read_bytes() == b"old"
    assert leftovers(tmp_path) == []


def test_a_size_limit_gives_one_line_and_keeps_the_old_file(tmp_path):
    target = tmp_path / "out.npz"
    target.write_bytes(b"old")
    with file_size_limit(4096), pytest.raises(OutputError) as e:
        save_npz(target, {"x": np.zeros(10_000, np.float32)})
    assert "cannot write" in str(e.value) and "\n" not in str(e.value)
    assert target.read_bytes() == b"old"
    assert leftovers(tmp_path) == []


def test_a_symlink_is_followed_to_its_regular_file(tmp_path):
    real = tmp_path / "real.bin"
    real.write_bytes(b"old")
    link = tmp_path / "link.bin"
    link.symlink_to(real)
    write_bytes(link, b"new")
    assert link.is_symlink() and real.read_bytes() == b"new"


def test_a_dangling_symlink_is_refused(tmp_path):
    link = tmp_path / "link.bin"
    link.symlink_to(tmp_path / "missing.bin")
    with pytest.raises(OutputError, match="symbolic link .* does not exist"):
        write_bytes(link, b"x")
    assert not (tmp_path / "missing.bin").exists()


@pytest.mark.parametrize("target,fragment", [
    pytest.param("/dev/null", "not a regular file (a device)", id="device"),
    pytest.param(".", "is a directory", id="directory"),
    pytest.param("no/such/dir/out.bin", "does not exist", id="missing-directory"),
])
def test_non_regular_targets_are_refused(tmp_path, monkeypatch, target, fragment):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(OutputError) as e:
        write_bytes(target, b"x")
    assert fragment in str(e.value)
    assert os.path.exists("/dev/null") and stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(OutputError, match="a FIFO"):
        write_bytes(fifo, b"x")


def test_nnapi_save_is_atomic_on_failure(tmp_path):
    """A write that fails while the pools are written (here a file-size limit) leaves the previous .nnapi."""
    from harness import single_op_model
    import nnconv
    from nnconv.tflite.options import AddOptions
    from nnconv.tflite.schema_enums import BuiltinOperator
    m = single_op_model(BuiltinOperator.ADD, [("x", (64, 256), np.float32), ("k", np.ones((64, 256), np.float32))],
                        [("y", (64, 256), np.float32)], AddOptions())
    converted = nnconv.convert(m, api_level=30).converted
    target = tmp_path / "m.nnapi"
    target.write_bytes(b"previous")
    with file_size_limit(16384), pytest.raises(OutputError, match="cannot write"):
        serialize.save(target, [converted])
    assert target.read_bytes() == b"previous" and leftovers(tmp_path) == []
    serialize.save(target, [converted])
    assert serialize.load(target).partitions[0].model.main.operations
