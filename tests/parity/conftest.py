"""Fixtures shared by the parity tests."""

from __future__ import annotations

import pytest

from chain_models import add_mul_sub_chain


@pytest.fixture
def folder(tmp_path):
    """Three models, the middle one unreadable: a folder run must report the other two."""
    d = tmp_path / "models"
    d.mkdir()
    (d / "a_chain.tflite").write_bytes(add_mul_sub_chain())
    (d / "b_broken.tflite").write_bytes(b"TFL3 this is not a flatbuffer")
    (d / "c_chain.tflite").write_bytes(add_mul_sub_chain(mul_by=-2.0))
    return d
