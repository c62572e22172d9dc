"""What a driver running a float32 model with `relaxComputationFloat32toFloat16` does to values, as the
executor simulates it (`Executor(..., relaxed_fp16=True)`, `nnconv verify --relax-fp16`).

NNAPI lets such a driver compute float32 operations "with a range and precision as low as that of the
IEEE 754 16-bit floating-point format" (NeuralNetworksTypes.h, relaxComputationFloat32toFloat16); TFLite's
NNAPI delegate sets it for `allow_fp16`. The simulation is exactly this, and nothing else:

1. fp16 storage: every TENSOR_FLOAT32 value is rounded to the nearest float16 (round half to even, values
   beyond 65504 become +-inf) where a driver would store it: the model inputs, every constant (weights and
   biases included), and every operation output.
2. fp16 arithmetic for single-rounding operations: each operation computes in float32 on the rounded
   inputs and its result is rounded to float16. For operations whose result is one IEEE operation of its
   inputs (ADD, SUB, MUL, DIV, MAXIMUM, MINIMUM, RELU*, ABS, NEG, SQRT, and data movement ops) this is
   bit-identical to computing in float16, since float32 carries more than twice float16's 11 significant
   bits plus two (double rounding is innocuous).
3. Accumulating operations (CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, BATCH_MATMUL, reductions,
   SOFTMAX, normalizations, transcendental functions) accumulate in float32 and round once at the end:
   this models drivers that keep a float32 accumulator (most GPU and NPU drivers do), not a driver that
   accumulates in float16, whose error on long dot products would be larger.

Quantized, integer and boolean operands are untouched, as is TENSOR_FLOAT16 (already float16).
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperandType


def fp16_storage(value: np.ndarray, operand_type: OperandType) -> np.ndarray:
    """`value` as a relaxed driver stores it: float32 tensors rounded to float16 (and back to float32,
    the dtype the kernels and the NNAPI operand declare); anything else unchanged."""
    if operand_type is not OperandType.TENSOR_FLOAT32 or value is None:
        return value
    with np.errstate(over="ignore"):
        return np.asarray(value).astype(np.float16).astype(np.float32)
