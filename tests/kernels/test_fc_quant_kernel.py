"""Quantized FULLY_CONNECTED whose accumulators exceed float32's exact range: the reduction runs as float32
chunks (`float32_chunks`), each exact, summed in float64, bit for bit the integer definition."""

from __future__ import annotations

import numpy as np
import pytest

from nnconv.nnapi.enums import FuseCode, OperationType
from nnconv.nnapi.enums import OperandLifeTime as L
from nnconv.nnapi.enums import OperandType as T
from nnconv.nnapi.model import Operand, Operation
from nnconv.nnapi.quantization import conv_multipliers, requantize_accumulator
from nnconv.runtime.kernels import KERNELS, KernelCall
from nnconv.runtime.kernels._matmul import float32_chunks

RNG = np.random.default_rng(5)


def test_chunks_cover_the_reduction_below_2_to_24():
    bounds = RNG.integers(0, 1 << 16, 1500) * 16
    chunks = float32_chunks(bounds)
    assert chunks[0][0] == 0 and chunks[-1][1] == 1500
    assert all(a[1] == b[0] for a, b in zip(chunks, chunks[1:]))
    assert all(int(bounds[k0:k1].sum()) < (1 << 24) for k0, k1 in chunks) and len(chunks) > 1
    assert float32_chunks(np.array([1 << 24])) is None


@pytest.mark.parametrize("t,x_zp,act", [(T.TENSOR_QUANT8_ASYMM_SIGNED, -128, FuseCode.NONE),
                                        (T.TENSOR_QUANT8_ASYMM, 0, FuseCode.RELU)])
def test_chunked_fully_connected_equals_the_integer_definition(t, x_zp, act):
    info = np.iinfo(np.int8 if t is T.TENSOR_QUANT8_ASYMM_SIGNED else np.uint8)
    units, size = 40, 1300  # |acc| up to 1300 * 127 * 255 > 2^24: float64 weights, chunked in float32
    x = RNG.integers(info.min, info.max + 1, (3, size)).astype(info.dtype)
    w = RNG.choice([-127, 127], (units, size)).astype(info.dtype if t is T.TENSOR_QUANT8_ASYMM_SIGNED else np.int8)
    w_zp = 0 if t is T.TENSOR_QUANT8_ASYMM_SIGNED else 128
    w = (w.astype(np.int64) + w_zp).astype(info.dtype)
    b = RNG.integers(-5000, 5000, units).astype(np.int32)
    # row 0 at the extremes where unit 0's weights are positive: its accumulator goes past 2^24
    x[0] = np.where(w[0].astype(np.int64) > w_zp, info.max, x_zp).astype(info.dtype)
    ods = [Operand(type=t, dimensions=x.shape, scale=0.02, zero_point=x_zp),
           Operand(type=t, dimensions=w.shape, scale=0.01, zero_point=w_zp, lifetime=L.CONSTANT_COPY),
           Operand(type=T.TENSOR_INT32, dimensions=b.shape, scale=0.0002, zero_point=0, lifetime=L.CONSTANT_COPY),
           Operand(type=T.INT32, dimensions=())]
    out = Operand(type=t, dimensions=(3, units), scale=40.0, zero_point=x_zp + 3)
    call = KernelCall(Operation(OperationType.FULLY_CONNECTED, [0, 1, 2, 3], []), [x, w, b, np.array(act, np.int32)],
                      ods, [out], cache={})
    got = KERNELS[OperationType.FULLY_CONNECTED](call)[0]
    acc = (x.astype(np.int64) - x_zp) @ (w.astype(np.int64) - w_zp).T + b
    m, sh = conv_multipliers(0.02, np.asarray([0.01]), 40.0)
    np.testing.assert_array_equal(got, requantize_accumulator(acc, m, sh, out, act))
    assert np.abs(acc).max() >= 1 << 24  # beyond float32: the chunked path ran
    assert [v for k, v in call.cache.items() if k[0] == "fc"][0].chunks is not None
