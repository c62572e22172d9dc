"""RESHAPE (NNAPI OperationType 22).

Slots: 0 input (float32/float16/quant8 asymm/signed/int32, rank <= 4), 1 shape (TENSOR_INT32, 1-D; one
entry may be -1 and is then inferred). Data is copied unchanged; a quantized output whose parameters differ
from the input's is requantized (the reference forces them equal in `prepare`).
"""

from __future__ import annotations

import math

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.quantization import requantize_to
from nnconv.runtime.kernels.registry import KernelCall, kernel


def resolve_shape(call: KernelCall, size: int, shape: list[int]) -> list[int]:
    """Replaces the single -1 of a target shape by the extent that keeps `size` elements."""
    unknown = [k for k, d in enumerate(shape) if d == -1]
    if len(unknown) > 1 or any(d < -1 for d in shape):
        raise call.fail(f"invalid target shape {shape}")
    known = math.prod(d for d in shape if d != -1)
    if unknown:
        if known == 0 or size % known:
            raise call.fail(f"cannot infer -1 in {shape} for {size} elements")
        shape = list(shape)
        shape[unknown[0]] = size // known
    elif known != size:
        raise call.fail(f"target shape {shape} does not hold {size} elements")
    return shape


@kernel(OperationType.RESHAPE)
def reshape(call: KernelCall) -> list[np.ndarray]:
    x = call.tensor(0)
    # resolved once per input size when the target shape is a constant (it is in every model we emit)
    shape = call.memo(("reshape", x.size), (1,),
                      lambda: resolve_shape(call, x.size, [int(d) for d in call.tensor(1).reshape(-1)]))
    y = requantize_to(x.reshape(shape), call.in_operands[0], call.out_operands[0])
    return [np.ascontiguousarray(y)]
