"""L2_NORMALIZATION (NNAPI OperationType 11).

Slots: 0 input (rank <= 4; rank 4 only before API 29), [1 axis INT32, default -1].
Float: x / max(sqrt(sum x^2), 1e-6) along the axis (float16 computed in float32).
Quant8 asymm (output forced to scale 1/128, zero point 128) and asymm signed (1/128, 0), as the reference:
sum = Σ (q - zp)^2 in int32; (inv, shift) = GetInvSqrtQuantizedMultiplierExp(sum, reverse_shift=-1);
out = MBQM_SmallerThanOneExp(128 * (q - zp), inv, shift) + output zero point, clamped.
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.quantization import (INT32_MAX, is_quant8, qrange, rounding_divide_by_pot,
                                       saturating_rounding_doubling_high_mul as srdhm)
from nnconv.runtime.kernels._fixedpoint import rescale, saturating_rounding_multiply_by_pot, wrap32
from nnconv.runtime.kernels.registry import KernelCall, kernel
from nnconv.runtime.kernels.softmax import count_leading_zeros32, softmax_axis

HALF_SQRT_2_Q0 = 1518500250  # sqrt(2)/2 in Q0.31
ONE_AND_HALF_Q3 = (1 << 28) + (1 << 27)  # 1.5 in Q3.28
ONE_Q3 = 1 << 28


def inv_sqrt_quantized_multiplier_exp(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`GetInvSqrtQuantizedMultiplierExp(x, -1)` element-wise: (multiplier, left shift <= 0) with
    multiplier * 2^shift ~ 1 / sqrt(x), by five Newton-Raphson steps in Q3.28."""
    x = np.asarray(x, dtype=np.int64)
    small = x <= 1
    v = np.where(small, 2, x)
    shift = np.full(v.shape, 11, dtype=np.int64)
    for _ in range(2):  # v < 2^31 needs at most two divisions by 4 to fall below 2^29
        big = v >= (1 << 29)
        v = np.where(big, v // 4, v)
        shift = shift + big
    max_left_shift_bits = count_leading_zeros32(v) - 1
    left_shift_bit_pairs = max_left_shift_bits // 2 - 1
    shift = shift - left_shift_bit_pairs
    v = v << (2 * left_shift_bit_pairs)
    fixed_input = v >> 1
    half_input = saturating_rounding_multiply_by_pot(fixed_input, -1)
    y = np.full(v.shape, ONE_Q3, dtype=np.int64)
    for _ in range(5):
        y3 = rescale(srdhm(srdhm(y, y), y), 9, 3)
        y = rescale(wrap32(srdhm(ONE_AND_HALF_Q3, y) - srdhm(half_input, y3)), 6, 3)
    inv = srdhm(y, HALF_SQRT_2_Q0)
    neg = shift < 0
    inv = np.where(neg, wrap32(inv << np.where(neg, -shift, 0)), inv)
    shift = np.where(neg, 0, shift)
    inv = np.where(small, INT32_MAX, inv)
    shift = np.where(small, 0, shift)
    return inv, -shift  # reverse_shift = -1 turns the right shift into a left shift


@kernel(OperationType.L2_NORMALIZATION)
def l2_normalization(call: KernelCall) -> list[np.ndarray]:
    x = call.tensor(0)
    if x.ndim < 1 or x.ndim > 4:
        raise call.fail(f"input rank {x.ndim} is outside 1..4")
    axis = softmax_axis(call, 1, x.ndim)
    in_od, out = call.in_operands[0], call.out_operands[0]
    if is_quant8(in_od.type):
        lo, hi = qrange(out.type)
        expected_zp = 128 if lo == 0 else 0
        if np.float32(out.scale) != np.float32(1.0 / 128) or out.zero_point != expected_zp:
            raise call.fail(f"quantized output must have scale 1/128 and zero point {expected_zp}")
        d = x.astype(np.int64) - in_od.zero_point
        total = wrap32((d * d).sum(axis=axis, keepdims=True))
        inv, ls = inv_sqrt_quantized_multiplier_exp(total)
        y = rounding_divide_by_pot(srdhm(d * 128, inv), -ls) + expected_zp
        return [np.clip(y, lo, hi).astype(out.dtype)]
    xf = x.astype(np.float32)
    # The norm is floored at 1e-6 (as TFLite's kernel and the API 30 reference), so zeros stay zeros.
    norm = np.maximum(np.sqrt((xf * xf).sum(axis=axis, keepdims=True)), np.float32(1e-6))
    y = xf / norm
    return [y.astype(out.dtype)]
