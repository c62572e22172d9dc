"""The reference's quantized HARD_SWISH arithmetic (TFLite `reference_ops::HardSwish`, NNAPI HardSwish.cpp).

The input moves to a "hires" scale (x 2^7), a "reluish" factor in [0, 1] is derived from it on the scale
where 3.0 is 32768, and their product is rescaled to the output, all in int16 fixed point. Shared by the
HARD_SWISH kernel and by the lowering below API 30, which has no HARD_SWISH and looks the 256 results up in
a table (`lowering/rules/activations.py`), so both compute the same bits.
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.quant_limits import hard_swish_output_multiplier
from nnconv.nnapi.quantization import quantize_multiplier, rounding_divide_by_pot

I16_MIN, I16_MAX = -(1 << 15), (1 << 15) - 1


def _srdhm16(a: np.ndarray, b: int) -> np.ndarray:
    """gemmlowp's int16 SaturatingRoundingDoublingHighMul: the nudge of 2^14 (1 - 2^14 for a negative
    product) and a division by 2^15 truncating toward zero are, for both signs, (ab + 2^14) >> 15."""
    ab = np.asarray(a, dtype=np.int64) * np.int64(b)
    return np.where((np.asarray(a) == I16_MIN) & (b == I16_MIN), I16_MAX, (ab + (1 << 14)) >> 15)


def _sdhm16(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """16-bit SaturatingDoublingHighMul: like SaturatingRoundingDoublingHighMul but truncating toward zero."""
    ab = np.asarray(a, dtype=np.int64) * np.asarray(b, dtype=np.int64)
    res = np.where(ab >= 0, ab >> 15, -((-ab) >> 15))
    return np.where((a == I16_MIN) & (b == I16_MIN), I16_MAX, res)


def _saturating_left_shift16(x: np.ndarray, amount: int) -> np.ndarray:
    return np.clip(np.asarray(x, dtype=np.int64) << amount, I16_MIN, I16_MAX)


def _int16_multiplier(m32: int) -> int:
    """`DownScaleInt32ToInt16Multiplier`: round a Q31 multiplier to Q15, saturating."""
    if m32 >= (1 << 31) - 1 - (1 << 15):
        return I16_MAX
    return (m32 + (1 << 15)) >> 16


def hard_swish_quant8(values: np.ndarray, in_scale: float, in_zero_point: int, out_scale: float,
                      out_zero_point: int, lo: int, hi: int) -> np.ndarray:
    """HARD_SWISH of stored 8-bit `values` (int64, clamped to the output's storage range [lo, hi]). The
    caller has checked that the output multiplier does not exceed 1 (`hard_swish_output_multiplier`)."""
    # The reference computes these ratios in float before widening them for QuantizeMultiplier.
    hires_input_scale = np.float32(1.0 / 128.0) * np.float32(in_scale)
    reluish_scale = np.float32(3.0 / 32768.0)
    out_m32, out_exp = hard_swish_output_multiplier(in_scale, out_scale)
    rel_m32, rel_exp = quantize_multiplier(float(hires_input_scale / reluish_scale))
    out_m16, rel_m16 = _int16_multiplier(out_m32), _int16_multiplier(rel_m32)

    hires = (np.asarray(values).astype(np.int64) - in_zero_point) * (1 << 7)
    on_preshift_output = _srdhm16(hires, out_m16)
    reluish = hires
    if rel_exp > 0:
        reluish = _saturating_left_shift16(reluish, rel_exp - 1)
    reluish = _srdhm16(reluish, rel_m16)
    if rel_exp > 0:
        reluish = _saturating_left_shift16(reluish, 1)
    if rel_exp < 0:
        reluish = rounding_divide_by_pot(reluish, -rel_exp)
    reluish = (reluish + (1 << 15)) >> 1  # [-1, 1] -> [0, 1]
    y = rounding_divide_by_pot(_sdhm16(reluish, on_preshift_output), -out_exp) + out_zero_point
    return np.clip(y, lo, hi)
