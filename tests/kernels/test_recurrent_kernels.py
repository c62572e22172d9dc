"""Unit tests of the recurrent kernels' helpers: int16 gemmlowp fixed point and the farmhash fingerprint."""

from __future__ import annotations

import numpy as np
import pytest

from nnconv.runtime.kernels._fixedpoint import FP16 as fp
from nnconv.runtime.kernels._farmhash import fingerprint64


@pytest.mark.parametrize("integer_bits", [3, 4])
def test_int16_logistic_and_tanh_track_the_float_functions(integer_bits):
    raw = np.arange(-32768, 32768, 7, dtype=np.int64)
    x = raw / float(1 << (15 - integer_bits))
    logistic = fp.logistic(raw, integer_bits) / 32768.0
    tanh = fp.tanh(raw, integer_bits) / 32768.0
    assert np.abs(logistic - 1 / (1 + np.exp(-x))).max() < 2e-4
    assert np.abs(tanh - np.tanh(x)).max() < 4e-4
    assert fp.logistic(np.array([0]), integer_bits)[0] == 1 << 14  # exactly one half
    assert fp.tanh(np.array([0]), integer_bits)[0] == 0


def test_int16_saturating_product_of_minus_one_by_minus_one():
    assert fp.mul(np.array([-32768]), -32768)[0] == 32767
    assert fp.mul(np.array([16384]), 16384)[0] == 8192  # 0.5 * 0.5 = 0.25 in Q0.15


def test_fingerprint64_of_empty_key_is_k2():
    # farmhash's hash of zero bytes is its constant k2.
    assert int(fingerprint64(np.zeros((1, 0), np.uint8))[0]) == 0x9AE16A3B2F90404F


@pytest.mark.parametrize("length", [1, 3, 4, 7, 8, 16, 17, 32, 33, 64, 65, 128, 200])
def test_fingerprint64_is_row_wise_and_sensitive_to_every_byte(length):
    rng = np.random.default_rng(length)
    keys = rng.integers(0, 256, (6, length)).astype(np.uint8)
    whole = fingerprint64(keys)
    one_by_one = np.array([fingerprint64(keys[k:k + 1])[0] for k in range(6)], dtype=np.uint64)
    assert np.array_equal(whole, one_by_one)
    flipped = keys.copy()
    flipped[:, length - 1] ^= 1
    assert not np.any(fingerprint64(flipped) == whole)
    assert len(set(whole.tolist())) == 6
