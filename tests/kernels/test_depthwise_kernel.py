"""DEPTHWISE_CONV_2D kernel beyond the CTS vectors: the int64 accumulator branch of very large filters,
cross-checked against CONV_2D (a one-channel depthwise convolution is a one-channel convolution)."""

from __future__ import annotations

import numpy as np

from nnconv.runtime.kernels import KERNELS, KernelCall
from nnconv.nnapi.enums import OperandType as T
from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.model import Operand, Operation

RNG = np.random.default_rng(9)


def _call(op, x, w, b, scalars, out_shape):
    ods = [Operand(type=T.TENSOR_QUANT8_ASYMM, dimensions=x.shape, scale=0.5, zero_point=0),
           Operand(type=T.TENSOR_QUANT8_ASYMM, dimensions=w.shape, scale=0.5, zero_point=255),
           Operand(type=T.TENSOR_INT32, dimensions=b.shape, scale=0.25, zero_point=0)]
    ods += [Operand(type=T.INT32, dimensions=()) for _ in scalars]
    out = Operand(type=T.TENSOR_QUANT8_ASYMM, dimensions=out_shape, scale=2.0**20, zero_point=7)
    arrays = [x, w, b] + [np.array(s, np.int32) for s in scalars]
    call = KernelCall(Operation(op, list(range(len(arrays))), []), arrays, ods, [out])
    return KERNELS[op](call)[0]


def test_depthwise_huge_filter_uses_exact_int64_accumulation():
    # 183 x 183 = 33489 taps of 255 * 255: the sum exceeds int32, so the kernel must widen.
    k = 183
    x = np.full((1, k, k, 1), 255, np.uint8)
    w = np.zeros((1, k, k, 1), np.uint8)  # (0 - 255) * (255 - 0) per tap
    x[0, 0, 0, 0] = RNG.integers(0, 255)
    b = np.zeros(1, np.int32)
    valid = [2, 1, 1, 0]  # VALID, strides 1, activation NONE
    dw = _call(OperationType.DEPTHWISE_CONV_2D, x, w, b, valid[:3] + [1, 0], (1, 1, 1, 1))
    conv = _call(OperationType.CONV_2D, x, w, b, valid, (1, 1, 1, 1))
    acc = int(x.astype(np.int64).sum()) * -255
    assert acc < -(2**31)
    np.testing.assert_array_equal(dw, conv)
    assert dw.reshape(()) != 7  # the large negative accumulator moved the output off the zero point
