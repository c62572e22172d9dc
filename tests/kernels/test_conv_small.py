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
from nnconv.runtime.kernels.conv_2d import FLOAT_CONV_BLOCK_BYTES

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


def test_large_in_place_pointwise_convs_are_prepared_while_one_block():
    """A float 1x1 convolution reading its input rows in place keeps no buffer: prepared at any size the
    general path runs as one GEMM (64x64x24 -> 32: 131,072 outputs), not past that (two blocks)."""
    for side, c, o, activation in [(64, 24, 32, 1), (40, 16, 24, 0)]:
        ods, arrays, (oh, ow), inputs = _case(side, side, c, o, 1, 1, (1, 1), (1, 1), (0,) * 4, activation, True, side)
        assert oh * ow * o > SMALL_OUTPUT_ELEMENTS
        assert _compare(ods, arrays, (1, oh, ow, o), inputs)[CACHE_KEY] is not None
    side = int((2 * FLOAT_CONV_BLOCK_BYTES // 8 // 16) ** 0.5) + 1  # two blocks of the general path at least
    ods, arrays, (oh, ow), inputs = _case(side, side, 8, 16, 1, 1, (1, 1), (1, 1), (0,) * 4, 0, True, 4)
    assert _compare(ods, arrays, (1, oh, ow, 16), inputs[:2])[CACHE_KEY] is None
    # a padded (copied) 1x1 input of the same size as the first: the copy would be kept, not prepared
    ods, arrays, (oh, ow), inputs = _case(62, 62, 24, 32, 1, 1, (1, 1), (1, 1), (1,) * 4, 1, True, 5)
    assert _compare(ods, arrays, (1, oh, ow, 32), inputs[:2])[CACHE_KEY] is None


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


@settings(max_examples=80, deadline=None)
@given(h=st.integers(1, 9), w=st.integers(1, 9), c=st.sampled_from([1, 3, 8, 24, 72]),
       o=st.sampled_from([1, 8, 40, 200]), kh=st.integers(1, 3), kw=st.integers(1, 3),
       stride=st.tuples(st.integers(1, 2), st.integers(1, 2)), pads=st.tuples(*[st.integers(0, 2)] * 4),
       activation=st.sampled_from([0, 1, 3]), signed=st.booleans(), per_channel=st.booleans(),
       seed=st.integers(0, 2**16))
def test_prepared_small_quant_conv_equals_the_general_path(h, w, c, o, kh, kw, stride, pads, activation, signed,
                                                           per_channel, seed):
    _quant_case(h, w, c, o, kh, kw, stride, pads, activation, signed, per_channel, seed)


def _quant_case(h, w, c, o, kh, kw, stride, pads, activation, signed, per_channel, seed, zp=None):
    # int8 / uint8, per-tensor or per-channel filters, any zero point: the layouts of conv_nhwc's quantized
    # path (a folded or centered input, the scaled filter of narrow inputs, exact float32 chunks of long
    # reductions, `_small_quant_pointwise`) prepared, against the general path
    from nnconv.nnapi.model import SymmPerChannelQuantParams
    pt, pb, pl, pr = pads
    oh = (h + pt + pb - kh) // stride[0] + 1
    ow = (w + pl + pr - kw) // stride[1] + 1
    if oh < 1 or ow < 1:
        return
    rng = np.random.default_rng(seed)
    t = T.TENSOR_QUANT8_ASYMM_SIGNED if signed else T.TENSOR_QUANT8_ASYMM
    info = np.iinfo(np.int8 if signed else np.uint8)
    zp = int(rng.integers(info.min, info.max + 1)) if zp is None else zp
    if per_channel:
        f = rng.integers(-127, 128, (o, kh, kw, c)).astype(np.int8)
        fod = Operand(type=T.TENSOR_QUANT8_SYMM_PER_CHANNEL, dimensions=f.shape, scale=0.0, zero_point=0,
                      channel_quant=SymmPerChannelQuantParams(
                          scales=list(rng.uniform(0.002, 0.02, o).astype(np.float32)), channel_dim=0))
    else:
        f = rng.integers(info.min, info.max + 1, (o, kh, kw, c)).astype(info.dtype)
        fod = Operand(type=t, dimensions=f.shape, scale=0.01, zero_point=int(rng.integers(info.min, info.max + 1)))
    b = rng.integers(-30000, 30000, o).astype(np.int32)
    scalars = [pl, pr, pt, pb, stride[1], stride[0], activation, 0, 1, 1]
    ods = [Operand(type=t, dimensions=(1, h, w, c), scale=0.05, zero_point=zp), _constant(fod),
           _constant(Operand(type=T.TENSOR_INT32, dimensions=b.shape, scale=0.0, zero_point=0))]
    ods += [_constant(Operand(type=T.BOOL if i == 7 else T.INT32, dimensions=())) for i in range(len(scalars))]
    arrays = [None, f, b] + [np.array(s, np.bool_ if i == 7 else np.int32) for i, s in enumerate(scalars)]
    out = Operand(type=t, dimensions=(1, oh, ow, o), scale=float(rng.uniform(0.5, 4.0)),
                  zero_point=int(rng.integers(info.min, info.max + 1)))
    cached = KernelCall(Operation(_CONV, list(range(len(arrays))), []), [], ods, [out], cache={})
    for _ in range(3):
        x = rng.integers(info.min, info.max + 1, (1, h, w, c)).astype(info.dtype)
        general = KernelCall(Operation(_CONV, list(range(len(arrays))), []), [x] + arrays[1:], ods, [out])
        cached.inputs = [x] + arrays[1:]
        np.testing.assert_array_equal(KERNELS[_CONV](cached)[0], KERNELS[_CONV](general)[0])
    return cached.cache


def test_quant_layouts_are_prepared():
    from nnconv.runtime.kernels._conv_quant import QuantFilter
    seen = set()
    # a per-tensor filter over 3 channels (the scaled filter), a reduction of 2304 terms (float32 chunks),
    # 1x1 few pixels (`_small_quant_pointwise`), a strided 3x3; uint8 with a centred zero point over 1440
    # terms: the raw products would need float64, the centered ones not (no fold: the input is centered)
    for args, per_channel, signed, zp in [((4, 4, 3, 64, 3, 3, (1, 1), (1, 1, 1, 1)), False, False, None),
                                          ((4, 4, 3, 64, 3, 3, (1, 1), (1, 1, 1, 1)), False, True, None),
                                          ((4, 4, 256, 16, 3, 3, (1, 1), (1, 1, 1, 1)), True, True, None),
                                          ((2, 2, 56, 336, 1, 1, (1, 1), (0, 0, 0, 0)), True, False, None),
                                          ((9, 9, 24, 40, 3, 3, (2, 2), (0, 1, 0, 1)), True, True, None),
                                          ((4, 4, 160, 16, 3, 3, (1, 1), (1, 1, 1, 1)), True, False, 128),
                                          ((2, 2, 1440, 16, 1, 1, (1, 1), (0, 0, 0, 0)), True, False, 128)]:
        cache = _quant_case(*args, 3, signed, per_channel, 7, zp)
        assert cache[CACHE_KEY] is not None
        qf = next(v for v in cache.values() if isinstance(v, QuantFilter))
        seen.add("scaled" if qf.scaled is not None else "chunks" if qf.chunks is not None else "plain")
        seen.add("folded" if qf.folded else "centered")
    assert seen == {"scaled", "chunks", "plain", "folded", "centered"}
