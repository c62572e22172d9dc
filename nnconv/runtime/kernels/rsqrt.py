"""RSQRT (NNAPI OperationType 83): elementwise 1 / sqrt(x).

Slots: 0 input. Types: TENSOR_FLOAT32, TENSOR_FLOAT16 (computed in float32, cast back); from feature level
7, TENSOR_QUANT8_ASYMM and TENSOR_QUANT8_ASYMM_SIGNED, whose output has its own scale and zero point.

Quantized, the reference (Elementwise.cpp's `makeQuantized`) works per element in float32, not in fixed
point: x = (q - zp_in) * scale_in, y = 1.f / std::sqrt(x), then zp_out + std::round(y / scale_out) clamped
into the type as std::max(min, std::min(max, v)), the formula of Quantize.cpp (`quantization.quantize`).
Each step here is that float32 operation (IEEE-exact, so the bits are the reference's), run once per 8-bit
value through a 256-entry table. The corners follow from it: a zero input gives +inf and a negative one NaN
(sqrt of a negative), and both end at the type's maximum, since std::min(max, NaN) returns its first
argument.
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.operations.elementwise import ElementwiseSlot
from nnconv.nnapi.quantization import is_quant8, quantize
from nnconv.runtime.kernels._elementwise import float_unary
from nnconv.runtime.kernels._quant8_table import via_quant8_table
from nnconv.runtime.kernels.registry import KernelCall, kernel


def _quantized(call: KernelCall) -> np.ndarray:
    src, out = call.in_operands[ElementwiseSlot.INPUT], call.out_operands[0]
    x = (call.tensor(ElementwiseSlot.INPUT).astype(np.int32) - np.int32(src.zero_point)).astype(np.float32)
    with np.errstate(all="ignore"):  # 0 -> inf, negative -> NaN: `quantize` clamps both to the maximum
        y = np.float32(1) / np.sqrt(x * np.float32(src.scale))
        return quantize(y, out)


@kernel(OperationType.RSQRT)
def rsqrt(call: KernelCall) -> list[np.ndarray]:
    if is_quant8(call.type(ElementwiseSlot.INPUT)):
        if call.out_operands[0].type is not call.type(ElementwiseSlot.INPUT):
            raise call.fail(f"output 0 is {call.out_operands[0].type.name}, input 0 is "
                            f"{call.type(ElementwiseSlot.INPUT).name}")
        return [via_quant8_table(call, _quantized)]
    return [float_unary(call, lambda x: np.float32(1) / np.sqrt(x))]
