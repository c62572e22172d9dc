"""The prepared path of small float32 CONV_2D maps (`_conv_small`) against the general path.

Under the executor (an operation cache, filter, bias and scalars described as constants) the first call
runs `conv_nhwc` and keeps its layout prepared; later calls run the prepared steps. They must give the
general path's results bit for bit, on every run, for every layout the general path chooses: the input
rows read in place, a strided or padded 1x1 copy, KxK im2col row-major or tap-major (few input
channels), the bias inside the GEMM or after it, and `_small_pointwise`'s 1x1 maps of few pixels."""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from nnconv.nnapi.enums import OperandLifeTime
from nnconv.nnapi.enums import OperandType as T
from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.model import Operand, Operation
from nnconv.runtime.kernels import KERNELS, KernelCall
from nnconv.runtime.kernels._conv_small import CACHE_KEY, SMALL_OUTPUT_ELEMENTS

_CONV = OperationType.CONV_2D


def _constant(od: Operand) -> Operand:
    return dataclasses.replace(od, lifetime=OperandLifeTime.CONSTANT_COPY)


def _case(h, w, c, o, kh, kw, stride, dilation, pads, activation, with_bias, seed):
    rng = np.random.default_rng(seed)
    f = rng.standard_normal((o, kh, kw, c)).astype(np.float32)
    b = rng.standard_normal(o).astype(np.float32) if with_bias else None
    pt, pb, pl, pr = pads
    # explicit padding: pads l/r/t/b, strides w/h, activation, NHWC, dilations w/h
    scalars = [pl, pr, pt, pb, stride[1], stride[0], activation, 0, dilation[1], dilation[0]]
    ods = [Operand(type=T.TENSOR_FLOAT32, dimensions=(1, h, w, c)),
           _constant(Operand(type=T.TENSOR_FLOAT32, dimensions=f.shape)),
           _constant(Operand(type=T.TENSOR_FLOAT32, dimensions=(o,)) if with_bias else
                     Operand(type=T.TENSOR_FLOAT32, dimensions=(), lifetime=OperandLifeTime.NO_VALUE))]
    ods += [_constant(Operand(type=T.BOOL if i == 7 else T.INT32, dimensions=())) for i in range(len(scalars))]
    arrays = [None, f, b] + [np.array(s, np.bool_ if i == 7 else np.int32) for i, s in enumerate(scalars)]
    oh = (h + pt + pb - (kh - 1) * dilation[0] - 1) // stride[0] + 1
    ow = (w + pl + pr - (kw - 1) * dilation[1] - 1) // stride[1] + 1
    inputs = [rng.standard_normal((1, h, w, c)).astype(np.float32) for _ in range(3)]
    return ods, arrays, (oh, ow), inputs


def _compare(ods, arrays, out_shape, inputs):
    out = Operand(type=T.TENSOR_FLOAT32, dimensions=out_shape)
    cached = KernelCall(Operation(_CONV, list(range(len(arrays))), []), [], ods, [out], cache={})
    for x in inputs:
        general = KernelCall(Operation(_CONV, list(range(len(arrays))), []), [x] + arrays[1:], ods, [out])
        cached.inputs = [x] + arrays[1:]
        np.testing.assert_array_equal(KERNELS[_CONV](cached)[0], KERNELS[_CONV](general)[0])
    return cached.cache


@settings(max_examples=80, deadline=None)
@given(h=st.integers(1, 10), w=st.integers(1, 10), c=st.sampled_from([1, 3, 4, 8, 24]),
       o=st.sampled_from([1, 8, 40, 96]), kh=st.integers(1, 3), kw=st.integers(1, 3),
       stride=st.tuples(st.integers(1, 2), st.integers(1, 2)), dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)),
       pads=st.tuples(*[st.integers(0, 2)] * 4), activation=st.sampled_from([0, 1, 2, 3]), with_bias=st.booleans(),
       seed=st.integers(0, 2**16))
def test_prepared_small_conv_equals_the_general_path(h, w, c, o, kh, kw, stride, dilation, pads, activation,
                                                     with_bias, seed):
    ods, arrays, (oh, ow), inputs = _case(h, w, c, o, kh, kw, stride, dilation, pads, activation, with_bias, seed)
    if oh < 1 or ow < 1:
        return  # the filter does not fit the padded input (refused elsewhere)
    cache = _compare(ods, arrays, (1, oh, ow, o), inputs)
    assert cache[CACHE_KEY] is not None  # every case here is small: the later runs were prepared


def test_pointwise_layouts_are_prepared_and_exact():
    # 1x1 unpadded stride 1: the input rows in place (projection, bias after the GEMM), the bias row (an
    # expansion of a narrow input), the few-pixel `_small_pointwise` map; padded and strided 1x1 copies
    for h, c, o, stride, pads in [(8, 32, 8, 1, 0), (8, 8, 96, 1, 0), (2, 56, 336, 1, 0), (8, 16, 24, 2, 0),
                                  (5, 16, 24, 1, 1)]:
        ods, arrays, (oh, ow), inputs = _case(h, h, c, o, 1, 1, (stride, stride), (1, 1), (pads,) * 4, 3, True, h)
        assert _compare(ods, arrays, (1, oh, ow, o), inputs)[CACHE_KEY] is not None


def test_large_batched_or_variable_filter_convs_take_the_general_path():
    side = int((SMALL_OUTPUT_ELEMENTS // 16) ** 0.5) + 1
    ods, arrays, (oh, ow), inputs = _case(side, side, 8, 16, 3, 3, (1, 1), (1, 1), (1, 1, 1, 1), 0, True, 1)
    assert _compare(ods, arrays, (1, oh, ow, 16), inputs[:2])[CACHE_KEY] is None  # more outputs than the limit
    ods, arrays, (oh, ow), inputs = _case(4, 4, 8, 16, 3, 3, (1, 1), (1, 1), (1, 1, 1, 1), 0, True, 2)
    ods[1] = dataclasses.replace(ods[1], lifetime=OperandLifeTime.TEMPORARY_VARIABLE)  # a filter that may change
    assert CACHE_KEY not in _compare(ods, arrays, (1, oh, ow, 16), inputs[:2])
    batched = [np.concatenate([x, x]) for x in inputs[:2]]
    ods, arrays, (oh, ow), _ = _case(4, 4, 8, 16, 3, 3, (1, 1), (1, 1), (1, 1, 1, 1), 0, True, 3)
    ods[0] = dataclasses.replace(ods[0], dimensions=(2, 4, 4, 8))
    assert _compare(ods, arrays, (2, oh, ow, 16), batched)[CACHE_KEY] is None
