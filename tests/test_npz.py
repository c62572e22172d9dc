"""The .npz loader (nnconv.npz): checked from the zip and .npy headers before any array is inflated."""

from __future__ import annotations

import io
import struct
import tracemalloc
import zipfile

import numpy as np
import pytest

from nnconv.errors import InputDataError
from nnconv.npz import load_npz, save_npz

LIMIT = 64 << 20


def npy_header(descr: str, shape: tuple, fortran: bool = False) -> bytes:
    return raw_header(repr({"descr": descr, "fortran_order": fortran, "shape": shape}).encode())


def raw_header(text: bytes) -> bytes:
    """A version 1.0 .npy header holding `text` as its dict, padded as numpy pads it."""
    pad = 64 - (10 + len(text) + 1) % 64
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text) + pad + 1) + text + b" " * pad + b"\n"


def archive(tmp_path, members: dict[str, bytes], method: int = zipfile.ZIP_STORED) -> str:
    p = tmp_path / "in.npz"
    with zipfile.ZipFile(p, "w", method) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return str(p)


def refused(path: str, limit: int = LIMIT) -> str:
    with pytest.raises(InputDataError) as e:
        load_npz(path, limit)
    msg = str(e.value)
    assert "\n" not in msg
    return msg


def test_round_trip(tmp_path):
    arrays = {"image": np.arange(12, dtype=np.float32).reshape(3, 4), "model/ids:0": np.arange(3, dtype=np.int64)}
    save_npz(tmp_path / "a.npz", arrays)
    got = load_npz(str(tmp_path / "a.npz"), LIMIT)
    assert set(got) == set(arrays)
    for k, v in arrays.items():
        np.testing.assert_array_equal(got[k], v)
        assert got[k].dtype == v.dtype


def test_compressed_archives_load(tmp_path):
    np.savez_compressed(tmp_path / "c.npz", x=np.ones((5, 5), np.int8))
    assert load_npz(str(tmp_path / "c.npz"), LIMIT)["x"].sum() == 25


def test_text_file_is_not_an_npz(tmp_path):
    p = tmp_path / "in.npz"
    p.write_text("a,b,c\n1,2,3\n")
    assert refused(str(p)).endswith("not an .npz file (np.savez writes one)")


def test_bare_npy_says_what_to_pass(tmp_path):
    np.save(tmp_path / "x.npy", np.zeros(3))
    assert "single .npy array" in refused(str(tmp_path / "x.npy"))


def test_pickled_object_arrays_are_refused_without_unpickling(tmp_path):
    payload = b"\x80\x04cbuiltins\nexec\n."  # would run code if unpickled
    msg = refused(archive(tmp_path, {"x.npy": npy_header("|O", (1,)) + payload}))
    assert "holds Python objects (pickled data)" in msg


@pytest.mark.parametrize("descr", ["<U8", "|V4", "<M8[s]"])
def test_non_numeric_dtypes_are_refused(tmp_path, descr):
    assert "not a numeric array" in refused(archive(tmp_path, {"x.npy": npy_header(descr, (2,)) + b"\0" * 64}))


def test_a_huge_declared_shape_is_refused_from_the_header(tmp_path):
    msg = refused(archive(tmp_path, {"x.npy": npy_header("<f4", (1 << 20, 1 << 20))}))
    assert "over the 64 MiB allowed (--max-memory)" in msg and "[1048576, 1048576]" in msg


def test_a_deflate_bomb_is_refused_before_inflating(tmp_path):
    """256 MiB of zeros deflate to ~250 KiB; the declared member size is over the bound, so nothing is
    inflated: the loader stays small."""
    path = archive(tmp_path, {"x.npy": npy_header("<f4", (64 << 20,)) + bytes(256 << 20)}, zipfile.ZIP_DEFLATED)
    tracemalloc.start()
    msg = refused(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert "declares 256 MiB, over the 64 MiB allowed" in msg
    assert peak < 8 << 20  # what was allocated, not how long it took: a loaded machine is slow, not wrong


def test_header_and_member_size_must_agree(tmp_path):
    msg = refused(archive(tmp_path, {"x.npy": npy_header("<f4", (100,)) + b"\0" * 8}))
    assert "declares shape [100] float32 (400 bytes) but its member holds 8" in msg


@pytest.mark.parametrize("members,fragment", [
    pytest.param({"x.npy": b"garbage" * 20}, "not a readable .npy array", id="not-npy"),
    pytest.param({"notes.txt": b"hello"}, "member 'notes.txt' is not an .npy array", id="other-member"),
    pytest.param({"x.npy": npy_header("<f4", (-1,))}, "negative extent", id="negative-shape"),
    # an unterminated header dict: numpy's fallback re-tokenizes it and raises tokenize.TokenError (the
    # fuzzer's splice of an .npz header; was exit 4)
    pytest.param({"x.npy": raw_header(b"{'descr': '<f4', 'fortran_order': False, 'shape': (3,") + b"\0" * 12},
                 "not a readable .npy array", id="unterminated-header"),
])
def test_malformed_members(tmp_path, members, fragment):
    assert fragment in refused(archive(tmp_path, members))


def test_truncated_and_corrupt_archives(tmp_path):
    save_npz(tmp_path / "a.npz", {"x": np.arange(1000, dtype=np.float32)})
    data = (tmp_path / "a.npz").read_bytes()
    (tmp_path / "t.npz").write_bytes(data[:-30])
    assert "not a readable .npz file" in refused(str(tmp_path / "t.npz"))
    flipped = bytearray(data)
    flipped[200] ^= 0xFF  # inside the array bytes: the CRC check fails
    (tmp_path / "f.npz").write_bytes(bytes(flipped))
    assert "not a readable .npz file" in refused(str(tmp_path / "f.npz"))


def test_missing_file_and_directory(tmp_path):
    assert refused(str(tmp_path / "nope.npz")).endswith("no such file")
    assert "is a directory" in refused(str(tmp_path))


def test_the_total_of_all_members_is_bounded(tmp_path):
    f = io.BytesIO()
    np.savez(f, a=np.zeros(1000, np.float64), b=np.zeros(1000, np.float64))
    (tmp_path / "two.npz").write_bytes(f.getvalue())
    assert load_npz(str(tmp_path / "two.npz"), 20_000)
    assert "over the" in refused(str(tmp_path / "two.npz"), 12_000)


def test_an_npy_sample_over_the_memory_bound_is_one_line(tmp_path):
    """`verify --dataset` reads `.npy` samples with `load_npy`; one over `--max-memory` raised NameError (a helper
    it called was never imported) instead of saying how much it needs."""
    from nnconv.npz import load_npy
    path = tmp_path / "sample.npy"
    np.save(path, np.zeros((64, 64), np.float32))
    with pytest.raises(InputDataError, match=r"needs 16 KiB, over the 1 KiB allowed \(--max-memory\)"):
        load_npy(str(path), max_bytes=1024)
    assert load_npy(str(path), max_bytes=1 << 20).shape == (64, 64)
