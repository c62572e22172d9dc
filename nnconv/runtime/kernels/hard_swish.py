"""HARD_SWISH (NNAPI OperationType 99): x * relu6(x + 3) / 6.

Slots: 0 input. Types: TENSOR_FLOAT32, TENSOR_FLOAT16 (float32 math), TENSOR_QUANT8_ASYMM and
TENSOR_QUANT8_ASYMM_SIGNED with any output quantization: the reference's int16 fixed-point algorithm
(TFLite `reference_ops::HardSwish`): the input moves to a "hires" scale (x 2^7), a "reluish" factor in
[0, 1] is derived from it on the scale where 3.0 is 32768, and their product is rescaled to the output.
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.quantization import is_quant8, qrange, quantize_multiplier, rounding_divide_by_pot
from nnconv.nnapi.quant_limits import hard_swish_output_multiplier
from nnconv.runtime.kernels._elementwise import FLOAT_TYPES
from nnconv.runtime.kernels._fixedpoint import FP16, I16_MAX, I16_MIN
from nnconv.runtime.kernels._quant8_table import via_quant8_table
from nnconv.runtime.kernels.registry import KernelCall, kernel

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


def _hard_swish_quant(call: KernelCall) -> np.ndarray:
    od, out = call.in_operands[0], call.out_operands[0]
    # The reference computes these ratios in float before widening them for QuantizeMultiplier.
    hires_input_scale = np.float32(1.0 / 128.0) * np.float32(od.scale)
    reluish_scale = np.float32(3.0 / 32768.0)
    out_m32, out_exp = hard_swish_output_multiplier(od.scale, out.scale)
    if out_exp > 0:
        raise call.fail("output scale too small: the output multiplier must not exceed 1")
    rel_m32, rel_exp = quantize_multiplier(float(hires_input_scale / reluish_scale))
    out_m16, rel_m16 = _int16_multiplier(out_m32), _int16_multiplier(rel_m32)

    hires = (call.tensor(0).astype(np.int64) - od.zero_point) * (1 << 7)
    on_preshift_output = FP16.mul(hires, out_m16)
    reluish = hires
    if rel_exp > 0:
        reluish = _saturating_left_shift16(reluish, rel_exp - 1)
    reluish = FP16.mul(reluish, rel_m16)
    if rel_exp > 0:
        reluish = _saturating_left_shift16(reluish, 1)
    if rel_exp < 0:
        reluish = rounding_divide_by_pot(reluish, -rel_exp)
    reluish = (reluish + (1 << 15)) >> 1  # [-1, 1] -> [0, 1]
    y = rounding_divide_by_pot(_sdhm16(reluish, on_preshift_output), -out_exp) + out.zero_point
    lo, hi = qrange(out.type)
    return np.clip(y, lo, hi).astype(out.dtype)


@kernel(OperationType.HARD_SWISH)
def hard_swish(call: KernelCall) -> list[np.ndarray]:
    t = call.type(0)
    out = call.out_operands[0]
    if t in FLOAT_TYPES:
        # x * min(6, max(0, x + 3)) / 6 in float32, the steps in place in one pooled buffer (no temporaries)
        x = call.tensor(0)
        y = call.empty(x.shape, np.float32)
        np.add(x, np.float32(3), out=y, dtype=np.float32)
        np.maximum(np.float32(0), y, out=y)
        np.minimum(np.float32(6), y, out=y)
        np.multiply(x, y, out=y, dtype=np.float32)
        y /= np.float32(6)
        return [y if out.dtype == np.float32 else y.astype(out.dtype)]
    if is_quant8(t):
        if out.type is not t:
            raise call.fail(f"output is {out.type.name}, input is {t.name}")
        return [via_quant8_table(call, _hard_swish_quant)]
    raise call.fail(f"input 0 has unsupported type {t.name}")
