"""The prepared path of small depthwise convolutions (`_depthwise_small`) against the general path.

The executor gives each operation a cache and describes filters, biases and scalars as constants; the
kernel then prepares small maps once and reuses the preparation on later runs. A call without a cache
(or with a non-constant filter) takes the general path, which the other depthwise tests check against
the definition: the prepared path must give its results bit for bit, on every run (a kept padded buffer
must not leak one run's input into the next)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nnconv.nnapi.enums import OperandLifeTime
from nnconv.nnapi.enums import OperandType as T
from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.model import Operand, Operation, SymmPerChannelQuantParams
from nnconv.runtime.kernels import KERNELS, KernelCall
from nnconv.runtime.kernels._depthwise_small import CACHE_KEY, SMALL_OUTPUT_ELEMENTS

_DW = OperationType.DEPTHWISE_CONV_2D


def _constant(od: Operand) -> Operand:
    return dataclasses.replace(od, lifetime=OperandLifeTime.CONSTANT_COPY)


def _run_both(ods, out, arrays, inputs):
    """Outputs of the general path and of a cached call (prepared on its first run) for each input."""
    cached = KernelCall(Operation(_DW, list(range(len(arrays))), []), [], ods, [out], cache={})
    pairs = []
    for x in inputs:
        general = KernelCall(Operation(_DW, list(range(len(arrays))), []), [x] + arrays[1:], ods, [out])
        cached.inputs = [x] + arrays[1:]
        pairs.append((KERNELS[_DW](general)[0], KERNELS[_DW](cached)[0].copy()))
    return pairs, cached.cache


def _quant_operands(t, zp, hwc, f, b, scales, pads, stride, activation):
    """Operands and arrays of a quant8 DEPTHWISE_CONV_2D (explicit padding, multiplier 1, NHWC) whose input
    (slot 0, left None in the arrays) has shape [1, *hwc] and zero point `zp`, filter `f` per channel."""
    pt, pb, pl, pr = pads
    scalars = [pl, pr, pt, pb, stride[1], stride[0], 1, activation, 0, 1, 1]
    ods = [Operand(type=t, dimensions=(1, *hwc), scale=0.05, zero_point=zp),
           _constant(Operand(type=T.TENSOR_QUANT8_SYMM_PER_CHANNEL, dimensions=f.shape, scale=0.0, zero_point=0,
                             channel_quant=SymmPerChannelQuantParams(scales=list(scales), channel_dim=3))),
           _constant(Operand(type=T.TENSOR_INT32, dimensions=b.shape, scale=0.0, zero_point=0))]
    ods += [_constant(Operand(type=T.BOOL if i == 8 else T.INT32, dimensions=())) for i in range(len(scalars))]
    arrays = [None, f, b] + [np.array(s, np.bool_ if i == 8 else np.int32) for i, s in enumerate(scalars)]
    return ods, arrays


def _geometry(h, w, kh, kw, stride, dilation, pads):
    sh, sw = stride
    dh, dw = dilation
    pt, pb, pl, pr = pads
    oh = (h + pt + pb - (kh - 1) * dh - 1) // sh + 1
    ow = (w + pl + pr - (kw - 1) * dw - 1) // sw + 1
    return oh, ow


@settings(max_examples=60, deadline=None)
@given(h=st.integers(1, 9), w=st.integers(1, 9), channels=st.sampled_from([1, 3, 16, 64]),
       multiplier=st.sampled_from([1, 1, 2]), kh=st.integers(1, 4), kw=st.integers(1, 4),
       stride=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)), pads=st.tuples(*[st.integers(0, 3)] * 4),
       activation=st.sampled_from([0, 1, 2, 3]), seed=st.integers(0, 2**16))
def test_prepared_float_depthwise_equals_the_general_path(h, w, channels, multiplier, kh, kw, stride, dilation,
                                                          pads, activation, seed):
    oh, ow = _geometry(h, w, kh, kw, stride, dilation, pads)
    if oh < 1 or ow < 1:
        return  # the filter does not fit the padded input (refused elsewhere)
    rng = np.random.default_rng(seed)
    oc = channels * multiplier
    f = rng.standard_normal((1, kh, kw, oc)).astype(np.float32)
    b = rng.standard_normal(oc).astype(np.float32)
    pt, pb, pl, pr = pads
    # explicit padding: pads l/r/t/b, strides w/h, multiplier, activation, NHWC, dilations w/h
    scalars = [pl, pr, pt, pb, stride[1], stride[0], multiplier, activation, 0, dilation[1], dilation[0]]
    ods = [Operand(type=T.TENSOR_FLOAT32, dimensions=(1, h, w, channels)),
           _constant(Operand(type=T.TENSOR_FLOAT32, dimensions=f.shape)),
           _constant(Operand(type=T.TENSOR_FLOAT32, dimensions=b.shape))]
    ods += [_constant(Operand(type=T.BOOL if i == 8 else T.INT32, dimensions=())) for i in range(len(scalars))]
    arrays = [None, f, b] + [np.array(s, np.bool_ if i == 8 else np.int32) for i, s in enumerate(scalars)]
    out = Operand(type=T.TENSOR_FLOAT32, dimensions=(1, oh, ow, oc))
    inputs = [rng.standard_normal((1, h, w, channels)).astype(np.float32) for _ in range(3)]
    pairs, cache = _run_both(ods, out, arrays, inputs)
    # every case here is small: prepared, unless the general path takes its per-tap passes (its own sums)
    per_tap = not (multiplier == 1 and (stride == (1, 1) or oh * ow > 64)) and oc < 64 and oh * ow > 64
    assert (cache[CACHE_KEY] is None) == per_tap
    for general, prepared in pairs:
        np.testing.assert_array_equal(prepared, general)


@settings(max_examples=40, deadline=None)
@given(h=st.integers(1, 9), w=st.integers(1, 9), channels=st.sampled_from([1, 8, 24]),
       kh=st.integers(1, 3), kw=st.integers(1, 3), stride=st.tuples(st.integers(1, 2), st.integers(1, 2)),
       pads=st.tuples(*[st.integers(0, 2)] * 4), activation=st.sampled_from([0, 1, 3]),
       signed=st.booleans(), seed=st.integers(0, 2**16))
def test_prepared_quant_depthwise_equals_the_general_path(h, w, channels, kh, kw, stride, pads, activation,
                                                          signed, seed):
    oh, ow = _geometry(h, w, kh, kw, stride, (1, 1), pads)
    if oh < 1 or ow < 1:
        return
    rng = np.random.default_rng(seed)
    t = T.TENSOR_QUANT8_ASYMM_SIGNED if signed else T.TENSOR_QUANT8_ASYMM
    info = np.iinfo(np.int8 if signed else np.uint8)
    zp = int(rng.integers(info.min, info.max + 1))
    f = rng.integers(-127, 128, (1, kh, kw, channels)).astype(np.int8)
    b = rng.integers(-3000, 3000, channels).astype(np.int32)
    scales = rng.uniform(0.002, 0.02, channels).astype(np.float32)
    ods, arrays = _quant_operands(t, zp, (h, w, channels), f, b, scales, pads, stride, activation)
    out = Operand(type=t, dimensions=(1, oh, ow, channels), scale=0.08, zero_point=int(info.min) // 2 + 60)
    inputs = [rng.integers(info.min, info.max + 1, (1, h, w, channels)).astype(info.dtype) for _ in range(3)]
    pairs, cache = _run_both(ods, out, arrays, inputs)
    assert cache[CACHE_KEY] is not None
    for general, prepared in pairs:
        np.testing.assert_array_equal(prepared, general)


@pytest.mark.parametrize("signed,zp", [(True, -128), (True, 127), (False, 0), (False, 255)])
@pytest.mark.parametrize("k,stride", [(3, (2, 2)), (5, (1, 2)), (3, (2, 3))])
def test_strided_quant_row_runs_center_in_their_column_copy(signed, zp, k, stride):
    """Row runs at a stride along W keep the 8-bit input in the padded buffer (the border its zero point)
    and subtract the zero point in the column copy: the general path's bits on every run, with the zero
    point at either end of the range and the input's extremes present."""
    rng = np.random.default_rng(zp + 128 + 7 * k)
    t = T.TENSOR_QUANT8_ASYMM_SIGNED if signed else T.TENSOR_QUANT8_ASYMM
    info = np.iinfo(np.int8 if signed else np.uint8)
    h, w, channels = 21, 21, 24  # > EINSUM_MAX_PIXELS output pixels at every stride: the row runs
    pads = (k // 2, k // 2, k // 2, k // 2)
    oh, ow = _geometry(h, w, k, k, stride, (1, 1), pads)
    f = rng.integers(-127, 128, (1, k, k, channels)).astype(np.int8)
    f[0, 0, 0] = 127
    b = rng.integers(-30000, 30000, channels).astype(np.int32)
    scales = rng.uniform(0.002, 0.02, channels).astype(np.float32)
    ods, arrays = _quant_operands(t, zp, (h, w, channels), f, b, scales, pads, stride, 0)
    out = Operand(type=t, dimensions=(1, oh, ow, channels), scale=0.3, zero_point=int(info.min) + 100)
    inputs = [rng.integers(info.min, info.max + 1, (1, h, w, channels)).astype(info.dtype) for _ in range(3)]
    inputs[0][0, 0, :2] = info.min
    inputs[0][0, -1, -2:] = info.max
    pairs, cache = _run_both(ods, out, arrays, inputs)
    small = cache[CACHE_KEY]
    assert small is not None and small.column_zero_point == zp and small.zero_point is None
    assert small.interior.dtype == info.dtype
    for general, prepared in pairs:
        np.testing.assert_array_equal(prepared, general)
    assert len(np.unique(pairs[0][0])) > 10


def test_large_batched_or_variable_filter_take_the_general_path():
    rng = np.random.default_rng(3)

    def cache_after(shape, constant_filter=True):
        f = rng.standard_normal((1, 3, 3, shape[3])).astype(np.float32)
        b = np.zeros(shape[3], np.float32)
        scalars = [1, 1, 1, 1, 0]  # SAME, strides 1/1, multiplier 1, NONE
        fod = Operand(type=T.TENSOR_FLOAT32, dimensions=f.shape)
        ods = [Operand(type=T.TENSOR_FLOAT32, dimensions=shape), _constant(fod) if constant_filter else fod,
               _constant(Operand(type=T.TENSOR_FLOAT32, dimensions=b.shape))]
        ods += [_constant(Operand(type=T.INT32, dimensions=())) for _ in scalars]
        arrays = [rng.standard_normal(shape).astype(np.float32), f, b] + [np.array(s, np.int32) for s in scalars]
        call = KernelCall(Operation(_DW, list(range(len(arrays))), []), arrays, ods,
                          [Operand(type=T.TENSOR_FLOAT32, dimensions=shape)], cache={})
        KERNELS[_DW](call)
        return call.cache

    assert cache_after((1, 4, 4, 8))[CACHE_KEY] is not None
    side = int((SMALL_OUTPUT_ELEMENTS // 8) ** 0.5) + 1
    assert cache_after((1, side, side, 8))[CACHE_KEY] is None  # more output values than the limit
    assert cache_after((2, 4, 4, 8))[CACHE_KEY] is None  # batched
    assert CACHE_KEY not in cache_after((1, 4, 4, 8), constant_filter=False)  # a filter that may change
