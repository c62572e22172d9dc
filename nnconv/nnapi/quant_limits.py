"""Quantization parameters the NNAPI reference CPU refuses when it prepares an operation.

The reference implementation turns some real-valued rescaling factors into fixed-point multipliers with
helpers that only accept a range (`QuantizeMultiplierGreaterThanOne`, `QuantizeMultiplierSmallerThanOne`);
parameters outside it make the operation fail whatever the input values, while TFLite's own kernels (which
use a lookup table or the general `QuantizeMultiplier`) run them. The lowering rules test these limits at
check time to choose an exact alternative lowering (DEQUANTIZE -> float op -> QUANTIZE) before the
runtime's own validation (`runtime/kernels`' validators) would refuse the operation.
"""

from __future__ import annotations

import numpy as np

SOFTMAX_SCALED_DIFF_INTEGER_BITS = 5
SIGMOID_INPUT_INTEGER_BITS = 4  # LOGISTIC and TANH evaluate their input in Q4.27


def softmax_input_multiplier(beta: float, input_scale: float) -> float:
    """SOFTMAX's beta * input_scale * 2^26 (capped at 2^31 - 1), which must be greater than 1."""
    real = float(np.float32(beta)) * float(np.float32(input_scale)) * (1 << (31 - SOFTMAX_SCALED_DIFF_INTEGER_BITS))
    return min(real, (1 << 31) - 1.0)


def sigmoid_input_multiplier(input_scale: float) -> float:
    """LOGISTIC's and TANH's input_scale * 2^27, which must be greater than 1."""
    return float(np.float32(input_scale)) * float(1 << (31 - SIGMOID_INPUT_INTEGER_BITS))


def mul_output_multiplier(scale1: float, scale2: float, output_scale: float) -> float:
    """Quantized MUL's input1_scale * input2_scale / output_scale (the product rounded to float32 first, as
    the C++ `float * float` stored in a double), which must lie in (0, 1)."""
    product = float(np.float32(np.float32(scale1) * np.float32(scale2)))
    return product / float(np.float32(output_scale))
