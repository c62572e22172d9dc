"""Quantized CONV_2D kernel paths against the integer definition, bit for bit: the float64 scaled-filter GEMM
of narrow inputs (the requantization's multiply-add inside the GEMM) and the float32 GEMM with the
requantizer after it."""

from __future__ import annotations

import numpy as np
import pytest

from nnconv.nnapi.enums import FuseCode, OperationType
from nnconv.nnapi.enums import OperandLifeTime as L
from nnconv.nnapi.enums import OperandType as T
from nnconv.nnapi.model import Operand, Operation, SymmPerChannelQuantParams
from nnconv.nnapi.quantization import conv_multipliers, requantize_accumulator
from nnconv.runtime.kernels import KERNELS, KernelCall

RNG = np.random.default_rng(21)


def _conv(x, w, b, scales, pads, stride, activation, t, x_zp, out_zp):
    """Runs the CONV_2D kernel (explicit padding) and returns its output and the call (for its memo)."""
    xin = Operand(type=t, dimensions=x.shape, scale=0.05, zero_point=x_zp)
    filt = Operand(type=T.TENSOR_QUANT8_SYMM_PER_CHANNEL, dimensions=w.shape, scale=0.0, zero_point=0,
                   lifetime=L.CONSTANT_COPY,
                   channel_quant=SymmPerChannelQuantParams(scales=list(scales), channel_dim=0))
    bias = Operand(type=T.TENSOR_INT32, dimensions=b.shape, scale=0.0, zero_point=0, lifetime=L.CONSTANT_COPY)
    scalars = [*pads, stride, stride, activation]  # pad l/r/t/b, strides w/h, activation
    ods = [xin, filt, bias] + [Operand(type=T.INT32, dimensions=()) for _ in scalars]
    arrays = [x, w, b] + [np.array(s, np.int32) for s in scalars]
    oh = (x.shape[1] + pads[2] + pads[3] - w.shape[1]) // stride + 1
    ow = (x.shape[2] + pads[0] + pads[1] - w.shape[2]) // stride + 1
    out = Operand(type=t, dimensions=(x.shape[0], oh, ow, w.shape[0]), scale=0.3, zero_point=out_zp)
    call = KernelCall(Operation(OperationType.CONV_2D, list(range(len(arrays))), []), arrays, ods, [out], cache={})
    return KERNELS[OperationType.CONV_2D](call)[0], call


def _definition(x, w, b, scales, pads, stride, out, x_zp):
    """int64 sums of (x - zp) * w over the zero-padded centered input, + bias, and the multipliers."""
    xp = np.pad(x.astype(np.int64) - x_zp, ((0, 0), (pads[2], pads[3]), (pads[0], pads[1]), (0, 0)))
    _o, kh, kw, _c = w.shape
    n, oh, ow = out.shape[:3]
    acc = np.zeros(out.shape, np.int64)
    for ky in range(kh):
        for kx in range(kw):
            tap = xp[:, ky:ky + (oh - 1) * stride + 1:stride, kx:kx + (ow - 1) * stride + 1:stride]
            acc += tap @ w[:, ky, kx, :].astype(np.int64).T
    m, sh = conv_multipliers(0.05, scales, 0.3)
    return acc + b, m, sh


def _check_against_definition(x, w, b, scales, kernel, stride, activation, t, x_zp, out_zp):
    """Runs the kernel (padding kernel - 1 on the right and top), asserts its output equals the integer
    definition's, and returns the output and the memoized QuantFilters."""
    pads = (0, kernel - 1, kernel - 1, 0)
    got, call = _conv(x, w, b, scales, pads, stride, activation, t, x_zp, out_zp)
    acc, m, sh = _definition(x, w, b, scales, pads, stride, got, x_zp)
    np.testing.assert_array_equal(got, requantize_accumulator(acc, m, sh, call.out_operands[0], activation))
    return got, [v for k, v in call.cache.items() if isinstance(k, tuple) and k[0] == "conv"]


@pytest.mark.parametrize("t,x_zp,out_zp", [(T.TENSOR_QUANT8_ASYMM_SIGNED, -3, 5), (T.TENSOR_QUANT8_ASYMM, 131, 120)])
@pytest.mark.parametrize("kernel,channels,out_channels,stride,activation,scaled", [
    (1, 8, 48, 1, FuseCode.NONE, True),  # the scaled-filter GEMM, with the negative-side correction
    (1, 8, 48, 2, FuseCode.RELU6, True),
    (2, 3, 64, 1, FuseCode.RELU, True),  # an im2col KxK filter, padded with the zero point
    (3, 16, 24, 1, FuseCode.NONE, False),  # K = 144: the float32 GEMM and the requantizer
    (3, 3, 8, 2, FuseCode.NONE, True),  # an RGB stem: tap-major im2col rows and the scaled filter
    (3, 3, 5, 1, FuseCode.RELU, True),
])
def test_quant_conv_paths_equal_the_integer_definition(t, x_zp, out_zp, kernel, channels, out_channels, stride,
                                                       activation, scaled):
    info = np.iinfo(np.int8 if t is T.TENSOR_QUANT8_ASYMM_SIGNED else np.uint8)
    x = RNG.integers(info.min, info.max + 1, (2, 9, 7, channels)).astype(info.dtype)
    w = RNG.integers(-127, 128, (out_channels, kernel, kernel, channels)).astype(np.int8)
    b = RNG.integers(-4000, 4000, out_channels).astype(np.int32)
    scales = RNG.uniform(0.002, 0.03, out_channels).astype(np.float32)
    got, filters = _check_against_definition(x, w, b, scales, kernel, stride, activation, t, x_zp, out_zp)
    assert len(filters) == 1 and (filters[0].scaled is not None) == scaled


@pytest.mark.parametrize("t,x_zp,out_zp", [(T.TENSOR_QUANT8_ASYMM_SIGNED, -3, 5), (T.TENSOR_QUANT8_ASYMM, 131, 120)])
@pytest.mark.parametrize("kernel,channels,stride,activation", [
    (3, 300, 1, FuseCode.NONE),
    (1, 2100, 2, FuseCode.RELU6),
    (2, 700, 1, FuseCode.RELU),
])
def test_long_reductions_in_exact_float32_runs_equal_the_integer_definition(t, x_zp, out_zp, kernel, channels,
                                                                           stride, activation):
    """Sums of |w| * max|x| beyond 2^24 (float32's exact integers): float32 GEMMs over runs of the reduction,
    each exact, summed in float64, with filters of extreme magnitude."""
    info = np.iinfo(np.int8 if t is T.TENSOR_QUANT8_ASYMM_SIGNED else np.uint8)
    x = RNG.integers(info.min, info.max + 1, (2, 5, 7, channels)).astype(info.dtype)
    w = (RNG.choice([-1, 1], (6, kernel, kernel, channels)) * RNG.integers(100, 128, (6, kernel, kernel, channels)))
    w = w.astype(np.int8)
    b = RNG.integers(-4000, 4000, 6).astype(np.int32)
    scales = RNG.uniform(2e-4, 6e-4, 6).astype(np.float32)
    got, filters = _check_against_definition(x, w, b, scales, kernel, stride, activation, t, x_zp, out_zp)
    assert len(filters) == 1 and filters[0].chunks is not None and len(filters[0].chunks) > 1
    assert len(np.unique(got)) > 10  # the outputs span many levels, not one clamp bound


@pytest.mark.parametrize("x_zp", [-128, 127])
def test_zero_point_at_the_range_end_folds_into_a_narrower_float32_gemm(x_zp):
    """An int8 input whose zero point sits at an end of the range (-128 after a RELU) centers to 0..255,
    where the raw values stay within +-128: with sum|w| * 128 < 2^24 <= sum|w| * 255 the folded bias
    makes the product float32 (raw) where the centered one needs float64; bit for bit the definition."""
    t = T.TENSOR_QUANT8_ASYMM_SIGNED
    x = RNG.integers(-128, 128, (2, 7, 5, 128)).astype(np.int8)
    x[0, 0, 0] = x_zp  # the zero point itself, and both extremes, occur
    x[0, 0, 1], x[0, 0, 2] = -128, 127
    w = (RNG.choice([-1, 1], (5, 3, 3, 128)) * RNG.integers(60, 111, (5, 3, 3, 128))).astype(np.int8)
    raw_sum = np.abs(w.reshape(5, -1).astype(np.int64)).sum(axis=1).max()
    assert raw_sum * 128 < (1 << 24) <= raw_sum * 255
    b = RNG.integers(-4000, 4000, 5).astype(np.int32)
    scales = RNG.uniform(1e-4, 4e-4, 5).astype(np.float32)
    for activation in (FuseCode.NONE, FuseCode.RELU6):
        got, filters = _check_against_definition(x, w, b, scales, 3, 1, activation, t, x_zp, 5)
        assert len(filters) == 1 and filters[0].folded and filters[0].dtype is np.float32
        assert filters[0].chunks is None and len(np.unique(got)) > 10


@pytest.mark.parametrize("t,x_zp,out_zp", [(T.TENSOR_QUANT8_ASYMM_SIGNED, -3, 5), (T.TENSOR_QUANT8_ASYMM, 131, 120)])
@pytest.mark.parametrize("shape,out_channels,big_filter", [
    ((1, 1, 1, 37), 11, False),  # a squeeze-excite convolution on a pooled map
    ((2, 4, 8, 19), 7, False),  # 64 pixels: the most the small path takes
    ((1, 1, 1, 700), 5, True),  # raw sums beyond float32 where centered ones fit: not folded
])
def test_small_pointwise_equals_the_integer_definition(t, x_zp, out_zp, shape, out_channels, big_filter):
    """A 1x1 convolution on at most SMALL_POINTWISE_PIXELS pixels (one matmul, then the requantizer)."""
    info = np.iinfo(np.int8 if t is T.TENSOR_QUANT8_ASYMM_SIGNED else np.uint8)
    x = RNG.integers(info.min, info.max + 1, shape).astype(info.dtype)
    low = 110 if big_filter else 1
    w = (RNG.choice([-1, 1], (out_channels, 1, 1, shape[3])) * RNG.integers(low, 128, (out_channels, 1, 1, shape[3])))
    w = w.astype(np.int8)
    b = RNG.integers(-4000, 4000, out_channels).astype(np.int32)
    scales = RNG.uniform(0.002, 0.03, out_channels).astype(np.float32) / (20 if big_filter else 1)
    for activation in (FuseCode.NONE, FuseCode.RELU):
        got, filters = _check_against_definition(x, w, b, scales, 1, 1, activation, t, x_zp, out_zp)
        assert len(filters) == 1 and filters[0].folded != (big_filter and info.min == 0)


@pytest.mark.parametrize("t,x_zp,out_zp", [
    (T.TENSOR_QUANT8_ASYMM_SIGNED, -128, -6),  # input zero points at the ends of the range
    (T.TENSOR_QUANT8_ASYMM_SIGNED, 127, 9),
    (T.TENSOR_QUANT8_ASYMM, 0, 120),
    (T.TENSOR_QUANT8_ASYMM, 255, 133),
])
@pytest.mark.parametrize("channels,out_channels,activation,scaled", [
    (40, 96, FuseCode.NONE, True),  # K + 1 = 41 <= O / 2: the scaled filter beyond round 3's K + 1 <= 32
    (96, 200, FuseCode.RELU6, True),
    (99, 200, FuseCode.RELU, True),  # K + 1 = 100, the most it takes
    (100, 202, FuseCode.NONE, False),  # K + 1 = 101: the float32 GEMM and the requantizer
    (48, 97, FuseCode.RELU1, False),  # O < 2(K + 1)
])
def test_wide_expansions_take_the_scaled_filter_bit_for_bit(t, x_zp, out_zp, channels, out_channels, activation,
                                                            scaled):
    """1x1 expansions to at least twice K + 1 (K + 1 <= SCALED_FILTER_MAX_K1) take the float64 GEMM by [W *
    alpha; kappa]; per-channel filters with the extreme values, every activation, both zero-point extremes:
    equal to the integer definition."""
    info = np.iinfo(np.int8 if t is T.TENSOR_QUANT8_ASYMM_SIGNED else np.uint8)
    x = RNG.integers(info.min, info.max + 1, (1, 8, 8, channels)).astype(info.dtype)  # 64 pixels: the fewest
    x[0, 0, 0], x[0, 0, 1] = info.min, info.max
    w = np.clip(np.round(RNG.normal(0, 12, (out_channels, 1, 1, channels))), -127, 127).astype(np.int8)
    w[:, 0, 0, 0] = RNG.choice([-127, 127], out_channels)
    b = RNG.integers(-40000, 40000, out_channels).astype(np.int32)
    scales = RNG.uniform(0.001, 0.02, out_channels).astype(np.float32)
    got, filters = _check_against_definition(x, w, b, scales, 1, 1, activation, t, x_zp, out_zp)
    assert len(filters) == 1 and (filters[0].scaled is not None) == scaled
    assert len(np.unique(got)) > (4 if activation == FuseCode.RELU1 else 10)  # many levels, not a clamp bound


def test_few_pixels_keep_the_float32_gemm_for_wider_filters():
    """Below SCALED_FILTER_MIN_PIXELS output pixels only round 3's limits (K + 1 <= 32, O >= 4(K + 1)) take the
    scaled filter: there the GEMM reads mostly the filter, which float64 doubles."""
    t = T.TENSOR_QUANT8_ASYMM_SIGNED
    for shape, channels, out_channels, scaled in [((1, 7, 9), 40, 96, False), ((1, 2, 3), 20, 96, True)]:
        x = RNG.integers(-128, 128, (*shape, channels)).astype(np.int8)
        w = np.clip(np.round(RNG.normal(0, 12, (out_channels, 1, 1, channels))), -127, 127).astype(np.int8)
        b = RNG.integers(-40000, 40000, out_channels).astype(np.int32)
        scales = RNG.uniform(0.001, 0.02, out_channels).astype(np.float32)
        _got, filters = _check_against_definition(x, w, b, scales, 1, 1, FuseCode.NONE, t, -7, 3)
        assert len(filters) == 1 and (filters[0].scaled is not None) == scaled


def test_a_bias_near_the_int32_limit_keeps_the_wrapping_definition():
    """A bias that can carry the accumulator past int32 (the reference wraps it): no fused requantizer and
    so no scaled filter on a shape that would take one; the integer path's wrapped sums, bit for bit."""
    t = T.TENSOR_QUANT8_ASYMM_SIGNED
    x = RNG.integers(-128, 128, (1, 8, 9, 40)).astype(np.int8)
    w = RNG.integers(-127, 128, (96, 1, 1, 40)).astype(np.int8)
    b = np.full(96, np.iinfo(np.int32).max - 1000, np.int32)
    b[::2] = np.iinfo(np.int32).min + 1000
    scales = RNG.uniform(1e-9, 2e-9, 96).astype(np.float32)
    _got, filters = _check_against_definition(x, w, b, scales, 1, 1, FuseCode.NONE, t, -3, 5)
    assert len(filters) == 1 and filters[0].requantizer is None and filters[0].scaled is None
