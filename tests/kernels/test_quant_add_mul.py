"""Quantized ADD / SUB / MUL (`quant_add`, `quant_mul`: per-input tables and `Requantizer`'s float path)
equal the reference's int64 pipeline written out with the fixed-point helpers, on every pair of input
bytes, for hypothesis-drawn scales, zero points and activations, and on a broadcast."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st
import numpy as np

from nnconv.nnapi.enums import FuseCode, OperandType, OperationType
from nnconv.nnapi.model import Operand, Operation
from nnconv.nnapi.quant_limits import ADD_LEFT_SHIFT, add_output_multiplier, mul_output_multiplier
from nnconv.nnapi.quantization import (quantize_multiplier_smaller_than_one_exp, quantized_activation_range,
                                       rounding_divide_by_pot, saturating_rounding_doubling_high_mul)
from nnconv.runtime.kernels._elementwise import quant_add, quant_mul
from nnconv.runtime.kernels.registry import KernelCall

TYPES = {OperandType.TENSOR_QUANT8_ASYMM: np.uint8, OperandType.TENSOR_QUANT8_ASYMM_SIGNED: np.int8}
scales = st.floats(1e-3, 2.0)
zero_points = st.integers(0, 255)
activations = st.sampled_from([FuseCode.NONE, FuseCode.RELU, FuseCode.RELU1, FuseCode.RELU6])


def _mbqm_right(x: np.ndarray, m: int, sh: int) -> np.ndarray:
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(x, m), -sh)


def reference_add(x1, x2, od1, od2, out, act, subtract) -> np.ndarray:
    s1, s2, so = np.float32(od1.scale), np.float32(od2.scale), np.float32(out.scale)
    twice_max = 2.0 * float(max(s1, s2))
    m1, sh1 = quantize_multiplier_smaller_than_one_exp(float(s1) / twice_max)
    m2, sh2 = quantize_multiplier_smaller_than_one_exp(float(s2) / twice_max)
    mo, sho = quantize_multiplier_smaller_than_one_exp(add_output_multiplier(s1, s2, so))
    y1 = _mbqm_right((x1.astype(np.int64) - od1.zero_point) << ADD_LEFT_SHIFT, m1, sh1)
    y2 = _mbqm_right((x2.astype(np.int64) - od2.zero_point) << ADD_LEFT_SHIFT, -m2 if subtract else m2, sh2)
    lo, hi = quantized_activation_range(act, out)
    return np.clip(_mbqm_right(y1 + y2, mo, sho) + out.zero_point, lo, hi).astype(out.dtype)


def reference_mul(x1, x2, od1, od2, out, act) -> np.ndarray:
    m, sh = quantize_multiplier_smaller_than_one_exp(mul_output_multiplier(od1.scale, od2.scale, out.scale))
    p = (x1.astype(np.int64) - od1.zero_point) * (x2.astype(np.int64) - od2.zero_point)
    lo, hi = quantized_activation_range(act, out)
    return np.clip(_mbqm_right(p, m, sh) + out.zero_point, lo, hi).astype(out.dtype)


def _call(op: OperationType, x1, x2, ods: list[Operand]) -> KernelCall:
    return KernelCall(Operation(op, [0, 1], [2]), [x1, x2], ods[:2], ods[2:], cache={})


def _operands(t, params):
    dtype = TYPES[t]
    shift = 128 if dtype is np.int8 else 0
    return [Operand(t, [], s, zp - shift) for s, zp in params]


def _every_pair(dtype):
    domain = np.arange(256, dtype=np.uint8).view(dtype)
    return np.repeat(domain, 256), np.tile(domain, 256)


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(list(TYPES)), st.tuples(scales, zero_points), st.tuples(scales, zero_points),
       st.tuples(scales, zero_points), activations, st.booleans())
def test_add_and_sub_on_every_pair(t, p1, p2, po, act, subtract) -> None:
    ods = _operands(t, [p1, p2, po])
    x1, x2 = _every_pair(TYPES[t])
    call = _call(OperationType.SUB if subtract else OperationType.ADD, x1, x2, ods)
    np.testing.assert_array_equal(quant_add(call, act, subtract), reference_add(x1, x2, *ods, act, subtract))


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(list(TYPES)), st.tuples(scales, zero_points), st.tuples(scales, zero_points),
       st.tuples(st.floats(1e-4, 0.99), zero_points), activations)
def test_mul_on_every_pair(t, p1, p2, po, act) -> None:
    """po: (s1*s2/s_out, zero point): the multiplier the kernel takes is below 1."""
    ods = _operands(t, [p1, p2, (p1[0] * p2[0] / po[0], po[1])])
    if not 0.0 < mul_output_multiplier(ods[0].scale, ods[1].scale, ods[2].scale) < 1.0:
        return  # the kernel refuses these (tested in test_elementwise_kernels)
    x1, x2 = _every_pair(TYPES[t])
    np.testing.assert_array_equal(quant_mul(_call(OperationType.MUL, x1, x2, ods), act),
                                  reference_mul(x1, x2, *ods, act))


def test_broadcast_and_memo() -> None:
    """A squeeze-excite style broadcast [1, 5, 7, 16] x [1, 1, 1, 16], run twice from one memo."""
    t = OperandType.TENSOR_QUANT8_ASYMM_SIGNED
    ods = _operands(t, [(0.05, 130), (0.004, 0), (0.02, 120)])
    rng = np.random.default_rng(0)
    x1 = rng.integers(-128, 128, (1, 5, 7, 16)).astype(np.int8)
    x2 = rng.integers(-128, 128, (1, 1, 1, 16)).astype(np.int8)
    for op in (OperationType.MUL, OperationType.ADD):
        call = _call(op, x1, x2, ods)
        for _ in range(2):
            got = quant_mul(call, FuseCode.NONE) if op is OperationType.MUL else quant_add(call, FuseCode.NONE)
            want = (reference_mul(x1, x2, *ods, FuseCode.NONE) if op is OperationType.MUL
                    else reference_add(x1, x2, *ods, FuseCode.NONE, False))
            assert got.shape == (1, 5, 7, 16)
            np.testing.assert_array_equal(got, want)
        assert len(call.cache) == 1
