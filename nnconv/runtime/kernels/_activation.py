"""Shared parts of the activation kernels (RELU/RELU1/RELU6 clamps, quantized LOGISTIC/TANH input rescaling).

Not a kernel module; imported by relu.py, relu1.py, relu6.py, logistic.py, tanh.py.
"""

from __future__ import annotations

from typing import Callable, Mapping

import numpy as np

from nnconv.nnapi.enums import FuseCode, OperandType, OperationType
from nnconv.nnapi.quantization import (is_quant8, multiply_by_quantized_multiplier_greater_than_one, qrange,
                                       quantize_multiplier_greater_than_one, quantized_activation_range,
                                       requantize_to)
from nnconv.nnapi.quant_limits import SIGMOID_INPUT_INTEGER_BITS, calculate_input_radius, sigmoid_input_multiplier
from nnconv.runtime.kernels._elementwise import FLOAT_TYPES
from nnconv.runtime.kernels._quant8_table import via_quant8_table
from nnconv.runtime.kernels.registry import KernelCall, KernelFn, kernel


def check_rank(call: KernelCall, x: np.ndarray, max_rank: int = 4) -> None:
    """Rejects an input of rank above `max_rank` (NNAPI's activations take rank <= 4)."""
    if x.ndim > max_rank:
        raise call.fail(f"input 0 has rank {x.ndim}; the operation takes rank <= {max_rank}")


def relu_family(call: KernelCall, code: FuseCode) -> list[np.ndarray]:
    """RELU / RELU1 / RELU6: a float clamp, or a clamp of the quantized storage values at the bounds
    quantized with the input's scale and zero point (the reference's reluXQuant8).

    The spec gives the quantized output the input's scale and zero point at every feature level, and the
    reference CPU's prepare hands the output the input's parameters whatever it declares. A model output
    declared otherwise fails the reference's execution, and the validator refuses it
    (nnapi/operations/activations.py). A temporary declared otherwise runs there: the reference overwrites
    the temporary's parameters with the input's, so its readers get the clamped values exactly. This
    executor keeps each operand's declared parameters for its readers, so the clamped values are carried
    into them (`requantize_to`: within half an output step of the reference's real values; the readers'
    own arithmetic then uses the declared scale where the reference uses the input's)."""
    x = call.tensor(0)
    check_rank(call, x)
    t = call.type(0)
    out = call.out_operands[0]
    if t in FLOAT_TYPES:
        return [standalone_float_clamp(x, code, call.empty(x.shape, out.dtype))]
    if is_quant8(t):
        od = call.in_operands[0]
        if out.type is not t:
            raise call.fail(f"output 0 is {out.type.name}, input 0 is {t.name}")
        lo, hi = quantized_activation_range(code, od)
        clamped = x.clip(lo, hi, out=call.empty(x.shape, out.dtype))
        if np.float32(out.scale) == np.float32(od.scale) and out.zero_point == od.zero_point:
            return [clamped]
        return [requantize_to(clamped, od, out)]
    raise call.fail(f"input 0 has unsupported type {t.name}")


STANDALONE_BOUNDS = {FuseCode.RELU: (0.0, np.inf), FuseCode.RELU1: (-1.0, 1.0), FuseCode.RELU6: (0.0, 6.0)}


def standalone_float_clamp(x: np.ndarray, code: FuseCode, out: np.ndarray) -> np.ndarray:
    """The standalone RELU / RELU1 / RELU6 of the reference, std::min(std::max(lo, x), hi), into `out` (which
    may be `x` itself; float32 or float16, the bounds are exact in both): NaN compares false, so
    std::max(lo, NaN) is lo, and std::max(0.0f, -0.0f) returns its first argument, +0.0. A fused activation
    (`_float_activation.apply_float_activation`, the reference's std::max(x, lo) order) keeps both NaN and
    -0.0 instead, which is why a fused step cannot hand a RELU to its producer's activation slot.

    ndarray.clip with both bounds is one SIMD pass (about 4x cheaper than np.fmax or np.maximum with a
    scalar, whose signed-zero results also depend on numpy's SIMD code); numpy's clip propagates NaN and
    may keep -0.0, so -0.0 becomes +0.0 by adding +0.0 (x + 0.0 == x for every other x) and NaN, found
    by one max() reduction (which propagates NaN), becomes lo where it occurs."""
    lo, hi = STANDALONE_BOUNDS[code]
    lo_t, hi_t = out.dtype.type(lo), out.dtype.type(hi)
    x.clip(lo_t, hi_t, out=out)
    if out.size == 0:
        return out
    if lo == 0.0:
        np.add(out, lo_t, out=out)
    if np.isnan(out.max()):
        np.copyto(out, lo_t, where=np.isnan(out))
    return out


def rescaled_q4(call: KernelCall) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(centered input, its Q4.27 rescaling, mask of |centered| < radius) for quantized LOGISTIC / TANH.

    input_real_multiplier = input_scale * 2^27 must exceed 1 (`QuantizeMultiplierGreaterThanOne`);
    inputs beyond `CalculateInputRadius` saturate the function and skip the fixed-point evaluation."""
    od = call.in_operands[0]
    real = sigmoid_input_multiplier(od.scale)
    if not real > 1.0:
        raise call.fail(f"input scale {od.scale:g} is too small for the fixed-point evaluation")
    m, left_shift = quantize_multiplier_greater_than_one(real)
    radius = calculate_input_radius(SIGMOID_INPUT_INTEGER_BITS, left_shift)
    centered = call.tensor(0).astype(np.int64) - od.zero_point
    inside = (centered > -radius) & (centered < radius)
    # Values outside the radius are replaced by 0 before rescaling so nothing overflows; they are masked.
    q4 = multiply_by_quantized_multiplier_greater_than_one(np.where(inside, centered, 0), m, left_shift)
    return centered, q4, inside


def fixed_quant_output(call: KernelCall, prescribed: dict[OperandType, tuple[float, int]]) -> tuple[int, int, int]:
    """For quantized LOGISTIC / TANH: the output's (zero point, lowest, highest storage value) after checking
    it has the (scale, zero point) the operation prescribes for the input's type (`prescribed`, from
    nnapi/operations/activations.py)."""
    t = call.type(0)
    if t not in prescribed:
        raise call.fail(f"input 0 has unsupported type {t.name}")
    scale, zero_point = prescribed[t]
    check_fixed_output(call, scale, zero_point)
    lo, hi = qrange(t)
    return zero_point, lo, hi


def check_fixed_output(call: KernelCall, scale: float, zero_point: int) -> None:
    """Rejects a quantized output whose (scale, zero point) is not the fixed one the operation prescribes."""
    out = call.out_operands[0]
    if np.float32(out.scale) != np.float32(scale) or out.zero_point != zero_point:
        raise call.fail(f"the quantized output must have scale {scale:g} and zero point {zero_point}, "
                        f"got {out.scale:g} and {out.zero_point}")


def q4_activation(call: KernelCall, float_fn: Callable[[KernelCall, np.ndarray], np.ndarray],
                  fixed_output: Mapping[OperandType, tuple[float, int]],
                  from_q4: Callable[[np.ndarray], np.ndarray]) -> list[np.ndarray]:
    """LOGISTIC / TANH: `float_fn(call, x)` on float tensors; quantized, the reference fixed-point pipeline,
    run once per 8-bit value by via_quant8_table: the input rescaled to Q4.27 (`rescaled_q4`), `from_q4` of it
    in output steps, + the output zero point prescribed by `fixed_output`, clamped; saturated outside the
    input radius."""
    x = call.tensor(0)
    check_rank(call, x)
    if call.type(0) in FLOAT_TYPES:
        return [float_fn(call, x)]
    out = call.out_operands[0]
    zp, lo, hi = fixed_quant_output(call, fixed_output)

    def quantized(c: KernelCall) -> np.ndarray:
        centered, q4, inside = rescaled_q4(c)
        y = np.clip(from_q4(q4) + zp, lo, hi)  # logistic's 1.0 (256) is not representable: the top value
        y = np.where(inside, y, np.where(centered > 0, hi, lo))
        return y.astype(out.dtype)

    return [via_quant8_table(call, quantized)]


def relu_kernel(op_type: OperationType, code: FuseCode) -> KernelFn:
    """Registers the kernel of RELU, RELU1 or RELU6: `relu_family` with the clamp of fuse code `code`."""
    def run(call: KernelCall) -> list[np.ndarray]:
        return relu_family(call, code)
    run.__name__ = op_type.name.lower()
    return kernel(op_type)(run)
