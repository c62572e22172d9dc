"""Helpers shared by the elementwise / activation / comparison / quantize / softmax / normalization rule
modules.

Not a rule module (the leading underscore keeps the loader from importing it as one).
"""

from __future__ import annotations

from typing import Callable, Iterable

import numpy as np

from nnconv.lowering.common import BOOL, F16, F32, FLOAT_OR_QUANT8, I8, I32, U8, check_int8  # noqa: F401 (re-exported)
from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.registry import Rule
from nnconv.nnapi.enums import FuseCode, OperandType, OperationType
from nnconv.tflite.ir import Tensor
from nnconv.tflite.schema_enums import TensorType

QUANT = (U8, I8)


def is_quant(t: Tensor | None) -> bool:
    return t is not None and t.type in QUANT


def quant_params(t: Tensor) -> tuple[float, int]:
    q = t.quantization
    return (q.scale[0] if q.scale else 0.0), (q.zero_point[0] if q.zero_point else 0)


def same_quant(*tensors: Tensor) -> bool:
    """True when all tensors share the same type, scale and zero point."""
    first = tensors[0]
    return all(t.type == first.type and quant_params(t) == quant_params(first) for t in tensors[1:])


def check_fixed_output_quant(c: CheckContext, what: str, out: Tensor, scale: float, zero_point: int) -> None:
    """Refuses a quantized output whose (scale, zero point) is not the fixed one NNAPI prescribes for the op:
    LOGISTIC, TANH, SOFTMAX and L2_NORMALIZATION compute in fixed point onto a known output range (as
    TFLite's kernels do), and NNAPI's validation rejects any other output quantization."""
    got_scale, got_zp = quant_params(out)
    if np.float32(got_scale) != np.float32(scale) or got_zp != zero_point:
        c.refuse(Code.QUANTIZATION, f"quantized {what} output must have scale {scale:g} and zero point "
                 f"{zero_point}, got {got_scale:g} and {got_zp}")


def check_fixed_quant_io(c: CheckContext, what: str, scale: float, zero_points: dict[TensorType, int],
                         quant_api: int | None = None) -> Tensor | None:
    """The input checks of an op with a fixed quantized output (SOFTMAX, L2_NORMALIZATION): one float32 /
    uint8 / int8 input of rank 1..4 and static shape, an output of its type, quantized needing `quant_api`
    (None: any level) and onto (`scale`, `zero_points[type]`). Returns the input, None without one."""
    if not c.require_inputs(1):
        return None
    x, out = c.input(0), c.output(0)
    if c.require_dtype(x, FLOAT_OR_QUANT8):
        c.require_dtype(out, (x.type,), "output")
        if x.type != TensorType.FLOAT32:
            if quant_api is not None:
                c.require_api(quant_api, f"quantized {what}")  # the caller's level (its rule's quantized form)
            check_fixed_output_quant(c, what, out, scale, zero_points[x.type])
    c.require_rank(x, 4, 1)
    c.require_static_shapes()
    return x


def check_common(c: CheckContext, n_inputs: int | tuple[int, int], allowed: Iterable[TensorType],
                 max_rank: int | None = 4, same_type: bool = True, int8_shiftable: bool | None = None) -> bool:
    """Input count, dtype of every data input (and the output when `same_type`), rank, static shapes and
    per-tensor quantization. Records every problem; returns False when later checks would be meaningless.
    `int8_shiftable` overrides the delegate's list of ops whose int8 tensors may travel as uint8 + 128."""
    lo, hi = (n_inputs, n_inputs) if isinstance(n_inputs, int) else n_inputs
    if not c.require_inputs(lo, hi):
        return False
    omitted = [k for k in range(lo) if c.input(k) is None]
    if omitted:  # a mandatory input written as -1 (a corrupt model): nothing to check it against
        c.refuse(Code.MISSING_OPERAND, f"input {omitted[0]} is omitted (-1) but the op needs it")
        return False
    allowed = tuple(allowed)
    ok = True
    tensors = [t for t in c.inputs if t is not None]
    if same_type:
        tensors.append(c.output(0))
    for k, t in enumerate(tensors):
        what = "output" if same_type and k == len(tensors) - 1 else f"input {k}"
        ok &= c.require_dtype(t, allowed, what)
        if max_rank is not None:
            ok &= c.require_rank(t, max_rank, 0, what)
        if t.type in QUANT and t.quantization.is_per_channel:
            c.refuse(Code.QUANTIZATION, f"{what} '{t.name}' is quantized per channel; the operation takes "
                     "per-tensor quantization")
            ok = False
    if same_type and ok:
        types = {t.type for t in tensors}
        if len(types) > 1:
            c.refuse(Code.DTYPE, "inputs and output must share one element type, got "
                     + "/".join(sorted(TensorType(x).name.lower() for x in types)))
            ok = False
    c.require_static_shapes()
    check_int8(c, int8_shiftable)
    return ok


def zero_point_constant(c: LowerContext, like: int) -> int:
    """A [1] constant of `like`'s type, scale and zero point holding the real value 0."""
    od = c.info(like)
    if od.type.is_quantized:
        return c.constant(od.type, np.asarray([od.zero_point], dtype=od.dtype), scale=od.scale,
                          zero_point=od.zero_point)
    if od.type is OperandType.TENSOR_INT32:
        return c.constant(od.type, np.zeros(1, np.int32))
    # -0.0 is the float identity of addition (x + -0.0 == x for every x, including -0.0).
    return c.constant(od.type, np.asarray([-0.0], dtype=np.float32))


def scalar_tensor(c: LowerContext, value: float, type_: OperandType = OperandType.TENSOR_FLOAT32) -> int:
    """A [1] float32 (or int32) constant tensor (NNAPI broadcasts it)."""
    dt = np.int32 if type_ is OperandType.TENSOR_INT32 else np.float32
    return c.constant(type_, np.asarray([value], dtype=dt))


def requantize(c: LowerContext, src: int, dst: int, activation: FuseCode = FuseCode.NONE) -> None:
    """dst = src moved to dst's scale / zero point (and clamped by a FuseCode): ADD(src, real 0).

    The reference quantized ADD rescales exactly when both inputs share one scale, and otherwise rounds
    once more than TFLite's single MultiplyByQuantizedMultiplier: the results agree within 1 LSB."""
    c.emit(OperationType.ADD, [src, zero_point_constant(c, src), c.i32(activation)], [dst])


def broadcast_shape(*shapes: Iterable[int]) -> tuple[int, ...]:
    """numpy / TFLite / NNAPI broadcasting (right-aligned, 1 stretches); raises ValueError if incompatible."""
    return tuple(int(d) for d in np.broadcast_shapes(*[tuple(s) for s in shapes]))


def nnapi_dims(t: Tensor) -> tuple[int, ...]:
    """The operand dimensions the policy gives a tensor (rank 0 becomes [1])."""
    return tuple(t.shape) if t.shape else (1,)


def emit_last_axis_op_as_rows(c: LowerContext, op: OperationType, params: list[int], leading: tuple[int, ...] = ()
                              ) -> None:
    """OP(input 0, *params) over the last axis, applied to the input viewed as `leading` + [rows, last axis]
    (RESHAPE in, OP, RESHAPE back), for NNAPI 1.0/1.1 forms that take only some ranks. Exact: a last-axis
    normalization reads each row on its own, so the rows' layout does not matter."""
    x_t = c.input(0)
    rows = int(np.prod(x_t.shape[:-1], dtype=np.int64))
    shape = (*leading, rows, x_t.shape[-1])
    xs, out = c.temp_like(c.input_operand(0), shape), c.output_operand(0)
    ys = c.temp_like(out, shape)
    c.emit(OperationType.RESHAPE, [c.input_operand(0), c.i32_vector(shape)], [xs])
    c.emit(op, [xs, *params], [ys])
    c.emit(OperationType.RESHAPE, [ys, c.i32_vector(x_t.shape)], [out])


def via_float(c: LowerContext, x: int, out: int, emit: Callable[[int, int], None]) -> None:
    """A quantized op evaluated in float32: DEQUANTIZE x, `emit(float_in, float_out)`, QUANTIZE into out (API 29).

    TFLite's 8-bit kernels of transcendental functions are lookup tables filled with
    quantize(f(dequantize(q))), which is what this computes; the results agree within 1 LSB (a tie in the
    final rounding may fall either way)."""
    c.explain("through float, within 1 LSB")
    f = c.temp(OperandType.TENSOR_FLOAT32, list(c.info(x).dimensions))
    g = c.temp(OperandType.TENSOR_FLOAT32, list(c.info(out).dimensions))
    c.emit(OperationType.DEQUANTIZE, [x], [f])
    emit(f, g)
    c.emit(OperationType.QUANTIZE, [g], [out])


def negate(c: LowerContext, x: int) -> int:
    """-x of a float operand: NEG from API 29, MUL(x, -1) before (exact: only the sign bit changes)."""
    t = c.temp_like(x)
    if c.api_level >= 29:
        c.emit(OperationType.NEG, [x], [t])
    else:
        c.emit(OperationType.MUL, [x, scalar_tensor(c, -1.0), c.i32(FuseCode.NONE)], [t])
    return t


class FloatOnlyBeyondDelegate(Rule):
    """A float32-only rule of one input of rank <= 4 that TFLite's NNAPI delegate does not lower (SQUARE,
    CEIL): the dtype, constraints and check they share."""

    dtypes = ("float32",)
    constraints = "float32; rank <= 4"
    beyond_delegate = True

    def check(self, c: CheckContext) -> None:
        check_common(c, 1, (F32,))
