"""BATCH_MATMUL kernel (no CTS vectors exist for feature level 6): float, int32 and int8 against a literal
per-element transcription of the quantized arithmetic."""

from __future__ import annotations

import numpy as np
import pytest

from nnconv.errors import ExecutionError
from nnconv.nnapi.enums import OperandType as T, OperationType
from nnconv.nnapi.model import Operand, Operation
from nnconv.nnapi.quantization import multiply_by_quantized_multiplier, quantize_multiplier
from nnconv.runtime.kernels import KERNELS, KernelCall

RNG = np.random.default_rng(5)


def _run(a, b, t, adj_x=False, adj_y=False, quant=((0.0, 0), (0.0, 0), (0.0, 0)), out_shape=()):
    ods = [Operand(type=t, dimensions=a.shape, scale=quant[0][0], zero_point=quant[0][1]),
           Operand(type=t, dimensions=b.shape, scale=quant[1][0], zero_point=quant[1][1]),
           Operand(type=T.BOOL, dimensions=()), Operand(type=T.BOOL, dimensions=())]
    out = Operand(type=t, dimensions=out_shape, scale=quant[2][0], zero_point=quant[2][1])
    call = KernelCall(Operation(OperationType.BATCH_MATMUL, [0, 1, 2, 3], [4]),
                      [a, b, np.array(adj_x), np.array(adj_y)], ods, [out])
    return KERNELS[OperationType.BATCH_MATMUL](call)[0]


@pytest.mark.parametrize("adj_x,adj_y", [(False, False), (True, False), (False, True), (True, True)])
def test_float_adjoints(adj_x, adj_y):
    a = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    b = RNG.standard_normal((2, 3, 5, 6)).astype(np.float32)
    aa = np.swapaxes(a, -1, -2).copy() if adj_x else a
    bb = np.swapaxes(b, -1, -2).copy() if adj_y else b
    got = _run(aa, bb, T.TENSOR_FLOAT32, adj_x, adj_y)
    np.testing.assert_allclose(got, a @ b, rtol=1e-5, atol=1e-5)


def test_int32_wraps_like_int32():
    a = np.full((2, 2), 2**20, np.int32)
    b = np.full((2, 2), 2**12, np.int32)
    got = _run(a, b, T.TENSOR_INT32)
    assert got.dtype == np.int32
    assert (got == np.int32(0)).all()  # 2 * 2^32 wraps to 0


def test_int8_matches_literal_requantization():
    a = RNG.integers(-128, 128, (3, 4, 7)).astype(np.int8)
    b = RNG.integers(-128, 128, (3, 7, 5)).astype(np.int8)
    q = ((0.05, -3), (0.02, 2), (0.4, 6))
    got = _run(a, b, T.TENSOR_QUANT8_ASYMM_SIGNED, quant=q)
    m, s = quantize_multiplier(float(np.float32(np.float32(0.05) * np.float32(0.02))) / float(np.float32(0.4)))
    expected = np.empty((3, 4, 5), np.int64)
    for i in np.ndindex(3, 4, 5):
        acc = sum((int(a[i[0], i[1], k]) + 3) * (int(b[i[0], k, i[2]]) - 2) for k in range(7))
        v = int(multiply_by_quantized_multiplier(np.array([acc]), m, s)[0]) + 6
        expected[i] = min(127, max(-128, v))
    np.testing.assert_array_equal(got, expected)


def test_inner_dimension_mismatch_fails():
    with pytest.raises(ExecutionError):
        _run(np.ones((2, 3), np.float32), np.ones((4, 2), np.float32), T.TENSOR_FLOAT32)
