"""HARD_SWISH (NNAPI OperationType 99): x * relu6(x + 3) / 6.

Slots: 0 input. Types: TENSOR_FLOAT32, TENSOR_FLOAT16 (float32 math), TENSOR_QUANT8_ASYMM and
TENSOR_QUANT8_ASYMM_SIGNED with any output quantization: the reference's int16 fixed-point algorithm
(`nnconv/nnapi/hard_swish_quant.py`, shared with the lowering's table below API 30).
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.hard_swish_quant import hard_swish_quant8
from nnconv.nnapi.quantization import is_quant8, qrange
from nnconv.nnapi.quant_limits import hard_swish_output_multiplier
from nnconv.runtime.kernels._elementwise import FLOAT_TYPES
from nnconv.runtime.kernels._quant8_table import via_quant8_table
from nnconv.runtime.kernels.registry import KernelCall, kernel

def _hard_swish_quant(call: KernelCall) -> np.ndarray:
    od, out = call.in_operands[0], call.out_operands[0]
    if hard_swish_output_multiplier(od.scale, out.scale)[1] > 0:
        raise call.fail("output scale too small: the output multiplier must not exceed 1")
    lo, hi = qrange(out.type)
    return hard_swish_quant8(call.tensor(0), od.scale, od.zero_point, out.scale, out.zero_point, lo, hi
                             ).astype(out.dtype)


@kernel(OperationType.HARD_SWISH)
def hard_swish(call: KernelCall) -> list[np.ndarray]:
    t = call.type(0)
    out = call.out_operands[0]
    if t in FLOAT_TYPES:
        # x * min(6, max(0, x + 3)) / 6 in float32, in TFLite's order, the steps in place in one pooled
        # buffer: 4 passes, the clamp as one ndarray.clip (np.maximum / np.minimum with a scalar run about
        # 3x slower a pass here); 2.2x faster than the 5-pass form on 14x14x672, the same bits.
        x = call.tensor(0)
        y = call.empty(x.shape, np.float32)
        np.add(x, np.float32(3), out=y, dtype=np.float32)
        y.clip(np.float32(0), np.float32(6), out=y)
        np.multiply(y, x, out=y, dtype=np.float32)
        np.true_divide(y, np.float32(6), out=y)
        return [y if out.dtype == np.float32 else y.astype(out.dtype)]
    if is_quant8(t):
        if out.type is not t:
            raise call.fail(f"output is {out.type.name}, input is {t.name}")
        return [via_quant8_table(call, _hard_swish_quant)]
    raise call.fail(f"input 0 has unsupported type {t.name}")
