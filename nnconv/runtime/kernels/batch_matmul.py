"""BATCH_MATMUL (NNAPI OperationType 102, feature level 6 = API 33).

Slots: 0 lhs [..., M, K] (or [..., K, M] with adj_x), 1 rhs [..., K, N] (or [..., N, K] with adj_y),
2 adj_x BOOL, 3 adj_y BOOL; ranks 2..4, equal batch dimensions. Output [..., M, N].
Types: float32, float16 (computed in float32), int32 (wrapping int32 products), quant8 asymm signed /
asymm: int32 accumulation of (q - zp) products, requantized by lhs_scale * rhs_scale / out_scale
(QuantizeMultiplier, double-rounding MBQM), + output zero point, clamped.
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.nnapi.quantization import is_quant8, requantize_accumulator
from nnconv.runtime.kernels._fixedpoint import wrap32
from nnconv.runtime.kernels.registry import KernelCall, kernel


@kernel(OperationType.BATCH_MATMUL)
def batch_matmul(call: KernelCall) -> list[np.ndarray]:
    a, b = call.tensor(0), call.tensor(1)
    adj_x = bool(call.opt_scalar(2, False)) if call.num_inputs > 2 else False
    adj_y = bool(call.opt_scalar(3, False)) if call.num_inputs > 3 else False
    if not (2 <= a.ndim <= 4 and 2 <= b.ndim <= 4):
        raise call.fail(f"ranks must be 2..4, got {a.ndim} and {b.ndim}")
    if adj_x:
        a = np.swapaxes(a, -1, -2)
    if adj_y:
        b = np.swapaxes(b, -1, -2)
    if a.shape[-1] != b.shape[-2]:
        raise call.fail(f"inner dimensions differ: {a.shape[-1]} and {b.shape[-2]}")
    a_od, b_od, out = call.in_operands[0], call.in_operands[1], call.out_operands[0]
    if is_quant8(a_od.type):
        acc = np.matmul(a.astype(np.int64) - a_od.zero_point, b.astype(np.int64) - b_od.zero_point)
        # the multipliers and shifts (TFLite's single rounding is its FULLY_CONNECTED's: `ConvRequantization`)
        m, s = call.conv_requantization(a_od.scale, np.asarray([b_od.scale]), out.scale)[:2]
        return [requantize_accumulator(acc, m, s, out, 0)]
    if a_od.type is OperandType.TENSOR_INT32:
        return [wrap32(np.matmul(a.astype(np.int64), b.astype(np.int64))).astype(np.int32)]
    return [np.matmul(a.astype(np.float32), b.astype(np.float32)).astype(out.dtype)]
