"""PRELU (NNAPI OperationType 71): x >= 0 ? x : alpha * x, alpha broadcast against the input.

Slots: 0 input, 1 alpha (same type, broadcastable). Types: TENSOR_FLOAT32, TENSOR_FLOAT16,
TENSOR_QUANT8_ASYMM, TENSOR_QUANT8_ASYMM_SIGNED. Quantized: the non-negative branch rescales (x - zp) by
s_in / s_out, the negative one rescales (x - zp) * (alpha - zp_alpha) by s_in * s_alpha / s_out, both with
`MultiplyByQuantizedMultiplier`, then saturate to the output type.
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.quantization import is_quant8, multiply_by_quantized_multiplier, qrange, quantize_multiplier
from nnconv.runtime.kernels._elementwise import FLOAT_TYPES, broadcast_shape, check_same_type, offsets
from nnconv.runtime.kernels.registry import KernelCall, kernel


@kernel(OperationType.PRELU)
def prelu(call: KernelCall) -> list[np.ndarray]:
    t = check_same_type(call)
    out = call.out_operands[0]
    x, alpha = call.tensor(0), call.tensor(1)
    broadcast_shape(call, x, alpha, max_rank=None)
    if t in FLOAT_TYPES:
        xf, af = x.astype(np.float32), alpha.astype(np.float32)
        return [np.where(xf >= 0, xf, xf * af).astype(out.dtype)]
    if not is_quant8(t):
        raise call.fail(f"input 0 has unsupported type {t.name}")
    od_x, od_a = call.in_operands[0], call.in_operands[1]
    s_x, s_a, s_o = np.float32(od_x.scale), np.float32(od_a.scale), np.float32(out.scale)
    m_pos, sh_pos = quantize_multiplier(float(s_x) / float(s_o))
    m_neg, sh_neg = quantize_multiplier(float(np.float32(s_x * s_a)) / float(s_o))
    xi, ai = offsets(call, 0), offsets(call, 1)
    pos = multiply_by_quantized_multiplier(xi, m_pos, sh_pos)
    neg = multiply_by_quantized_multiplier(xi * ai, m_neg, sh_neg)
    y = np.where(xi >= 0, pos, neg) + out.zero_point
    lo, hi = qrange(out.type)
    return [np.clip(y, lo, hi).astype(out.dtype)]
