"""Shared machinery of the elementwise kernels: NNAPI broadcasting, float / int32 / quant8 binary and unary
evaluation, and the reference quantized ADD/SUB/MUL pipelines.

Not a kernel module (the leading underscore keeps the loader from treating it as one); the elementwise
kernels import it.

Broadcasting (NeuralNetworksTypes.h, "broadcastable"): dimensions are aligned from the right, a missing
leading dimension counts as 1, and each pair must be equal or contain a 1 - numpy's rule, so
`np.broadcast_shapes` decides it and numpy's implicit broadcasting evaluates it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from nnconv.nnapi.enums import FuseCode, OperandType
from nnconv.nnapi.model import Operand
from nnconv.nnapi.quantization import (Requantizer, is_quant8, max_abs_offset, qrange,
                                       quantize_multiplier_smaller_than_one_exp, quantized_activation_range,
                                       round_half_away, rounding_divide_by_pot, saturating_rounding_doubling_high_mul)
from nnconv.nnapi.quant_limits import ADD_LEFT_SHIFT, add_output_multiplier, mul_output_multiplier
from nnconv.runtime.kernels._float_activation import apply_float_activation
from nnconv.runtime.kernels.registry import KernelCall

FLOAT_TYPES = (OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16)


def broadcast_shape(call: KernelCall, a: np.ndarray, b: np.ndarray, max_rank: int | None = 4) -> tuple[int, ...]:
    """The broadcast output shape of two inputs, or the runtime's OP_FAILED naming both shapes."""
    if max_rank is not None and (a.ndim > max_rank or b.ndim > max_rank):
        raise call.fail(f"inputs have rank {a.ndim} and {b.ndim}; the operation takes rank <= {max_rank}")
    if a.shape == b.shape:  # the common case, without np.broadcast_shapes' ~5 us
        return a.shape
    try:
        return tuple(np.broadcast_shapes(a.shape, b.shape))
    except ValueError:
        raise call.fail(f"input shapes {list(a.shape)} and {list(b.shape)} are not broadcastable") from None


def check_same_type(call: KernelCall, slots: tuple[int, ...] = (0, 1)) -> OperandType:
    """All listed inputs must share input 0's operand type (the spec's 'same type' rule)."""
    t = call.type(slots[0])
    for s in slots[1:]:
        if call.type(s) is not t:
            raise call.fail(f"input {s} is {call.type(s).name}, input {slots[0]} is {t.name}")
    return t


def activation_code(call: KernelCall, slot: int) -> int:
    """The FuseCode scalar in `slot`, validated (NONE, RELU, RELU1 or RELU6); read once per operation
    when it is a constant (it is in every model we emit)."""
    code = call.memo(("activation_code", slot), (slot,), lambda: int(call.scalar(slot)))
    if code not in (FuseCode.NONE, FuseCode.RELU, FuseCode.RELU1, FuseCode.RELU6):
        raise call.fail(f"input {slot}: invalid fused activation code {code}")
    return code


def float_binary(call: KernelCall, fn: Callable[[np.ndarray, np.ndarray], np.ndarray],
                 activation: int = FuseCode.NONE, max_rank: int | None = 4) -> np.ndarray:
    """fn(a, b) computed in float32 (float16 operands too, like the reference), then the activation clamp."""
    a = call.tensor(0).astype(np.float32, copy=False)
    b = call.tensor(1).astype(np.float32, copy=False)
    if max_rank is not None and (a.ndim > max_rank or b.ndim > max_rank):
        broadcast_shape(call, a, b, max_rank)  # raises the rank error
    with np.errstate(all="ignore"):  # inf/NaN results are the operation's defined float behaviour
        try:
            y = fn(a, b)
        except ValueError:  # numpy's broadcasting rule is NNAPI's (see above): these shapes are not
            broadcast_shape(call, a, b, max_rank)  # broadcastable; raises the runtime's message
            raise
    # a fresh float32 array the clamp may overwrite (fn may hand back an input, e.g. x + 0 broadcast)
    if not isinstance(y, np.ndarray) or y.dtype != np.float32 or y is a or y is b or y.base is not None:
        y = np.array(y, dtype=np.float32)
    y = apply_float_activation(y, activation)
    out_dtype = call.out_operands[0].dtype
    return y if y.dtype == out_dtype else y.astype(out_dtype)


def float_unary(call: KernelCall, fn: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """fn(x) in float32 for TENSOR_FLOAT32 / TENSOR_FLOAT16 inputs, cast back to the output type."""
    t = call.type(0)
    if t not in FLOAT_TYPES:
        raise call.fail(f"input 0 is {t.name}; the operation takes TENSOR_FLOAT32 or TENSOR_FLOAT16")
    x = call.tensor(0).astype(np.float32, copy=False)
    with np.errstate(all="ignore"):
        y = np.asarray(fn(x), dtype=np.float32)
    return y.astype(call.out_operands[0].dtype)


def int32_binary(call: KernelCall, fn: Callable[[np.ndarray, np.ndarray], np.ndarray],
                 activation: int = FuseCode.NONE, max_rank: int | None = 4) -> np.ndarray:
    """TENSOR_INT32 arithmetic with C's int32 wrap-around; the spec allows only FuseCode NONE here."""
    if activation != FuseCode.NONE:
        raise call.fail("a TENSOR_INT32 operation takes fused activation NONE only")
    a = call.tensor(0).astype(np.int32, copy=False)
    b = call.tensor(1).astype(np.int32, copy=False)
    broadcast_shape(call, a, b, max_rank)
    with np.errstate(all="ignore"):
        return np.asarray(fn(a, b)).astype(np.int32)


def offsets(call: KernelCall, slot: int) -> np.ndarray:
    """Storage values minus the zero point, as int64."""
    return call.tensor(slot).astype(np.int64) - call.in_operands[slot].zero_point


def quant_add(call: KernelCall, activation: int, subtract: bool = False) -> np.ndarray:
    """The reference quantized ADD / SUB (TFLite `AddElementwise` / `BroadcastAdd4DSlow` parameters).

    Both inputs are shifted left by 20 bits and rescaled to the common scale 2*max(s1, s2) with their own
    Q31 multiplier; the sum is rescaled to the output scale. SUB negates input 2's multiplier (so the
    rounding of its SaturatingRoundingDoublingHighMul is that of a negative multiplier, as in the reference).

    Each input's rescaled value depends on its 8-bit value only: two 256-entry tables (the reference
    functions run on every byte), gathered and summed in int32 (exact: |sum| < 2^29), then the output
    rescale is `Requantizer`'s (its float path where proven), instead of a dozen int64 passes per element.
    The gathers write into buffers from the runner's pool, which the sum then reuses.
    """
    od1, od2, out = call.in_operands[0], call.in_operands[1], call.out_operands[0]
    a, b = call.tensor(0), call.tensor(1)
    shape = broadcast_shape(call, a, b)
    plan = call.memo(("quant_add", activation, subtract), (),
                     lambda: add_plan(od1, od2, out, activation, subtract))
    if plan is None or a.dtype != od1.dtype or b.dtype != od2.dtype:
        return _quant_add_reference(call, activation, subtract)
    total = _gather_sum(call, plan, a, b, shape)
    y = call.empty(shape, out.dtype)
    plan.requantizer(total.reshape(-1, 1), out=y.reshape(-1, 1))
    call.give_back(total)
    return y


def _gather_sum(call: KernelCall, plan: "_AddPlan", a: np.ndarray, b: np.ndarray,
                shape: tuple[int, ...]) -> np.ndarray:
    """table1[a] + table2[b] in `shape`, a buffer of the runner's pool (give it back). The gathers write
    into pooled int32 buffers: fresh multi-megabyte arrays fault their pages in on every call, which cost
    more than the gathers on ResNet50's residual ADDs, and int32 halves float64's bytes."""
    first = call.empty(a.shape, plan.table1.dtype)
    np.take(plan.table1, a.view(np.uint8), out=first, mode="wrap")  # bytes index 256 entries: no bounds check
    second = call.empty(b.shape, plan.table2.dtype)
    np.take(plan.table2, b.view(np.uint8), out=second, mode="wrap")
    if first.shape == shape:
        first += second
        total = first
    else:
        total = call.empty(shape, plan.table1.dtype)
        np.add(first, second, out=total)
        call.give_back(first)
    call.give_back(second)
    return total


def quant_mul(call: KernelCall, activation: int) -> np.ndarray:
    """The reference quantized MUL: (q1 - zp1) * (q2 - zp2) rescaled by s1*s2/s_out (< 1), + zp_out.

    The product of the two float scales is rounded to float32 before the division in double, as the
    C++ `float * float` stored in a double. The integer product (|p| <= 2^16) is exact in float32; the
    rescale is `Requantizer`'s (MultiplyByQuantizedMultiplier with a right shift, as the reference)."""
    od1, od2, out = call.in_operands[0], call.in_operands[1], call.out_operands[0]
    m, sh, rq = call.memo(("quant_mul", activation), (), lambda: mul_plan(call, od1, od2, out, activation))
    a, b = call.tensor(0), call.tensor(1)
    broadcast_shape(call, a, b)
    if rq is None:
        x1, x2 = offsets(call, 0), offsets(call, 1)
        raw = rounding_divide_by_pot(saturating_rounding_doubling_high_mul(x1 * x2, m), -sh) + out.zero_point
        lo, hi = quantized_activation_range(activation, out)
        return np.clip(raw, lo, hi).astype(out.dtype)
    x1 = np.subtract(a, np.float32(od1.zero_point), dtype=np.float32)
    x2 = np.subtract(b, np.float32(od2.zero_point), dtype=np.float32)
    return requantize_flat(rq, x1 * x2, out)


def mul_plan(call: KernelCall, od1: Operand, od2: Operand, out: Operand,
              activation: int) -> tuple[int, int, Requantizer | None]:
    real = mul_output_multiplier(od1.scale, od2.scale, out.scale)
    if not 0.0 < real < 1.0:
        raise call.fail(f"quantized MUL needs input1_scale * input2_scale < output_scale (ratio {real:g})")
    m, sh = quantize_multiplier_smaller_than_one_exp(real)
    bound = max_abs_offset(od1.type, od1.zero_point) * max_abs_offset(od2.type, od2.zero_point)
    return m, sh, Requantizer.build(np.array([m]), np.array([sh]), None, out, activation, np.array([bound]))


def requantize_flat(rq: Requantizer, acc: np.ndarray, out: Operand) -> np.ndarray:
    """A one-channel `Requantizer` over every element of `acc`, in its shape."""
    y = np.empty(acc.shape, dtype=out.dtype)
    rq(acc.reshape(-1, 1), out=y.reshape(-1, 1))
    return y


@dataclass
class _AddPlan:
    table1: np.ndarray  # input 1's rescaled value by storage byte, int32
    table2: np.ndarray
    requantizer: Requantizer


def _add_multipliers(od1: Operand, od2: Operand, out: Operand,
                     subtract: bool) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int]]:
    s1, s2, so = np.float32(od1.scale), np.float32(od2.scale), np.float32(out.scale)
    twice_max = 2.0 * float(max(s1, s2))
    m1, sh1 = quantize_multiplier_smaller_than_one_exp(float(s1) / twice_max)
    m2, sh2 = quantize_multiplier_smaller_than_one_exp(float(s2) / twice_max)
    mo, sho = quantize_multiplier_smaller_than_one_exp(add_output_multiplier(s1, s2, so))
    return (m1, sh1), ((-m2 if subtract else m2), sh2), (mo, sho)


def _rescaled(x: np.ndarray, zero_point: int, multiplier: int, shift: int) -> np.ndarray:
    """One ADD input moved to the common scale: RDBPOT(SRDHM((q - zp) << 20, m), -shift)."""
    return rounding_divide_by_pot(
        saturating_rounding_doubling_high_mul((x.astype(np.int64) - zero_point) << ADD_LEFT_SHIFT, multiplier),
        -shift)


def add_plan(od1: Operand, od2: Operand, out: Operand, activation: int, subtract: bool) -> "_AddPlan | None":
    (m1, sh1), (m2, sh2), (mo, sho) = _add_multipliers(od1, od2, out, subtract)
    t1 = _rescaled(np.arange(256, dtype=np.uint8).view(od1.dtype), od1.zero_point, m1, sh1)  # by storage byte
    t2 = _rescaled(np.arange(256, dtype=np.uint8).view(od2.dtype), od2.zero_point, m2, sh2)
    bound = int(np.abs(t1).max()) + int(np.abs(t2).max())
    rq = Requantizer.build(np.array([mo]), np.array([sho]), None, out, activation, np.array([bound]))
    if rq is None:
        return None
    # int32 holds every sum: |sum| < 2^29 (8-bit offsets shifted left by 20, times multipliers below 1)
    return _AddPlan(t1.astype(np.int32), t2.astype(np.int32), rq)


def _quant_add_reference(call: KernelCall, activation: int, subtract: bool) -> np.ndarray:
    """The int64 pipeline of `quant_add`, for what its plan does not cover."""
    od1, od2, out = call.in_operands[0], call.in_operands[1], call.out_operands[0]
    (m1, sh1), (m2, sh2), (mo, sho) = _add_multipliers(od1, od2, out, subtract)
    y1 = _rescaled(call.tensor(0), od1.zero_point, m1, sh1)
    y2 = _rescaled(call.tensor(1), od2.zero_point, m2, sh2)
    raw = rounding_divide_by_pot(saturating_rounding_doubling_high_mul(y1 + y2, mo), -sho) + out.zero_point
    lo, hi = quantized_activation_range(activation, out)
    return np.clip(raw, lo, hi).astype(out.dtype)


def real_values(call: KernelCall, slot: int) -> np.ndarray:
    """Input `slot` as float32 real values: quant8 dequantized as `float(q - zp) * scale`, floats widened."""
    t = call.type(slot)
    x = call.tensor(slot)
    if is_quant8(t):
        od = call.in_operands[slot]
        return (x.astype(np.int32) - od.zero_point).astype(np.float32) * np.float32(od.scale)
    return x.astype(np.float32, copy=False)


def requantize_ref(call: KernelCall, slot: int) -> np.ndarray:
    """Input `slot` moved to the output's quantization as the reference `requantize<T>` does: the real
    value `(q - zp) * scale` is a float product, then `real / out_scale + out_zp` in double is clamped to
    the storage range and rounded half away from zero."""
    od, out = call.in_operands[slot], call.out_operands[0]
    if od.scale == out.scale and od.zero_point == out.zero_point:
        return call.tensor(slot)
    real = ((call.tensor(slot).astype(np.int32) - od.zero_point).astype(np.float32)
            * np.float32(od.scale)).astype(np.float64)
    v = real / float(np.float32(out.scale)) + out.zero_point
    lo, hi = qrange(out.type)
    return round_half_away(np.clip(v, lo, hi)).astype(out.dtype)


__all__ = ["ADD_LEFT_SHIFT", "FLOAT_TYPES", "activation_code", "broadcast_shape", "check_same_type",
           "float_binary", "float_unary", "int32_binary", "offsets", "quant_add", "quant_mul", "real_values",
           "requantize_ref"]
