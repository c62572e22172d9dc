"""FULLY_CONNECTED (NNAPI OperationType 9).

Slots: 0 input [..., input_size] (rank >= 2, flattened to [batch, input_size] with
input_size = weights.dim[1]), 1 weights [num_units, input_size], 2 bias [num_units] (may be omitted from
API 30 for float), 3 fused activation. Output [batch, num_units].
Types: float32, float16 (computed in float32), quant8 asymm / asymm signed with an int32 bias: the int32
accumulator of (q - zp) products plus the bias, requantized by the reference convolution multiplier.
"""

from __future__ import annotations

import numpy as np

from nnconv.kernels.common import (apply_float_activation, conv_multipliers, exact_int_matmul, is_quant8,
                                   requantize_accumulator)
from nnconv.kernels.registry import KernelCall, kernel
from nnconv.nnapi.enums import OperationType


@kernel(OperationType.FULLY_CONNECTED)
def fully_connected(call: KernelCall) -> list[np.ndarray]:
    x, w = call.tensor(0), call.tensor(1)
    b = call.inputs[2] if call.num_inputs > 2 else None
    act = int(call.scalar(3))
    if w.ndim != 2:
        raise call.fail(f"weights must be 2-D, got {w.ndim}-D")
    if x.ndim < 2:
        raise call.fail(f"input must have rank >= 2, got {x.ndim}")
    units, input_size = w.shape
    if x.size % input_size:
        raise call.fail(f"input of {x.size} elements is not a multiple of input_size {input_size}")
    if b is not None and b.shape != (units,):
        raise call.fail(f"bias shape {list(b.shape)} differs from [{units}]")
    x2 = x.reshape(-1, input_size)
    in_od, w_od, out_od = call.in_operands[0], call.in_operands[1], call.out_operands[0]
    if is_quant8(in_od.type):
        acc = exact_int_matmul(x2.astype(np.int32) - in_od.zero_point, (w.astype(np.int32) - w_od.zero_point).T)
        if b is not None:
            acc = acc + b.astype(np.int64)
        m, s = conv_multipliers(in_od.scale, np.asarray([w_od.scale]), out_od.scale)
        return [requantize_accumulator(acc, m, s, out_od, act)]
    acc = x2.astype(np.float32) @ w.astype(np.float32).T
    if b is not None:
        acc = acc + b.astype(np.float32)
    return [apply_float_activation(acc, act).astype(out_od.dtype)]
