"""Elementwise arithmetic: ADD, SUB, MUL, DIV, ADD_N, SQUARE, SQUARED_DIFFERENCE, MAXIMUM, MINIMUM, POW, the
float unary functions (ABS, EXP, LOG, RSQRT, SQRT, SIN, COS, NEG, FLOOR, CEIL, ROUND), CAST, ZEROS_LIKE,
FLOOR_DIV, FLOOR_MOD, SIGN.
(TFLite has no ONES_LIKE builtin: models express it as FILL, another family's rule.)

Broadcasting: TFLite and NNAPI broadcast alike (dimensions aligned from the right, 1 stretches), so
operands pass through unchanged; rank-0 tensors become [1] tensors through the operand policy, which
broadcast the same way. NNAPI limits the binary arithmetic ops to rank 4.

Compositions used below API levels that lack an operation are exact in float32 (each is justified next to
its rule): -x = x * -1 only flips the sign bit; relu(x) + relu(-x) has one zero term; x + (-0.0) == x.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.registry import Rule, lowering_rule
from nnconv.lowering.rules._arith import (F32, I8, I32, U8, check_common, is_quant, nnapi_dims, quant_params,
                                          same_quant, scalar_tensor, via_float)
from nnconv.nnapi.enums import FuseCode, OperandType, OperationType
from nnconv.tflite.schema_enums import ActivationFunctionType, BuiltinOperator, TensorType

F16 = TensorType.FLOAT16
# Fused activations that clamp (RELU, RELU_N1_TO_1, RELU6); the others compute nothing in TFLite's kernels.
_CLAMPING_ACTIVATIONS = (ActivationFunctionType.RELU, ActivationFunctionType.RELU_N1_TO_1,
                         ActivationFunctionType.RELU6)


def negate(c: LowerContext, x: int) -> int:
    """-x of a float operand: NEG from API 29, MUL(x, -1) before (exact: only the sign bit changes)."""
    t = c.temp_like(x)
    if c.api_level >= 29:
        c.emit(OperationType.NEG, [x], [t])
    else:
        c.emit(OperationType.MUL, [x, scalar_tensor(c, -1.0), c.i32(FuseCode.NONE)], [t])
    return t


# -- binary arithmetic with a fused activation -----------------------------------------------------
class _FusedBinary(Rule):
    """TFLite OP(x, y) with fused activation -> NNAPI OP(input1 = x, input2 = y, fuse code). The RELU family
    maps to the same FuseCode; TANH / SIGMOID become NONE, because TFLite's arithmetic kernels ignore them
    (`LowerContext.fused_output`): the NNAPI graph computes what the interpreter computes. SIGN_BIT is
    refused, as for every op with a fused activation (`CheckContext.check_fused_activation`).
    `pot_scale_int16` (ADD / SUB) concerns int16 tensors only, which `check_common` refuses."""

    nnapi_op: ClassVar[OperationType]
    float_api: ClassVar[int] = 27
    quant_api: ClassVar[int | None] = 27  # None: no quantized form
    int32_api: ClassVar[int | None] = 30
    int8_shiftable: ClassVar[bool | None] = None  # None: the delegate's list decides

    def check(self, c: CheckContext) -> None:
        allowed = [F32]
        if self.quant_api is not None:
            allowed += [U8, I8]
        if self.int32_api is not None:
            allowed.append(I32)
        if not check_common(c, 2, allowed, int8_shiftable=self.int8_shiftable):
            return
        x = c.input(0)
        name = self.op.name
        act = c.options.fused_activation_function
        if x.type == F32:
            c.require_api(self.float_api, f"float32 {name}")
        elif is_quant(x):
            c.require_api(self.quant_api, f"quantized {name}")
            self.check_quant(c)
        else:  # int32
            c.require_api(self.int32_api, f"int32 {name}")
            if act in _CLAMPING_ACTIVATIONS:
                c.refuse(Code.OPTION, f"int32 {name} takes no fused activation in NNAPI")
        c.check_fused_activation(act)

    def check_quant(self, c: CheckContext) -> None:
        """Extra constraints of the quantized form (none by default)."""

    def lower(self, c: LowerContext) -> None:
        x, y = c.in_(0), c.in_(1)
        fused = c.fused_output(c.options.fused_activation_function)
        c.emit(self.nnapi_op, [x, y, c.i32(fused.code)], [fused.operand])
        fused.finish()


@lowering_rule(BuiltinOperator.ADD)
class Add(_FusedBinary):
    """TFLite ADD(x, y) -> NNAPI ADD(x, y, fuse code). Quantized inputs may each have their own scale and
    zero point; NNAPI's reference pipeline (left shift 20, per-input multipliers) is TFLite's."""

    nnapi_op = OperationType.ADD
    nnapi_ops = (OperationType.ADD,)
    dtypes = ("float32", "uint8", "int8", "int32")
    constraints = "rank <= 4; int32 needs API 30 and no fused activation"


@lowering_rule(BuiltinOperator.SUB)
class Sub(_FusedBinary):
    """TFLite SUB(x, y) -> NNAPI SUB(x, y, fuse code) (API 28 float, 29 quantized, 30 int32)."""

    nnapi_op = OperationType.SUB
    nnapi_ops = (OperationType.SUB,)
    min_api_level = 28
    float_api = 28
    quant_api = 29
    dtypes = ("float32", "uint8", "int8", "int32")
    constraints = "rank <= 4; API 28 float, 29 quantized, 30 int32 (no fused activation)"


def _quant_binary_via_float(c: LowerContext, op: OperationType) -> None:
    """Quantized OP(x, y) evaluated in float32: DEQUANTIZE both inputs, OP with the fused activation, then
    QUANTIZE into the output (API 29). The float result is rounded once, so it lies within 1 LSB of TFLite's
    integer pipeline."""
    x, y = c.in_(0), c.in_(1)
    fused = c.fused_output(c.options.fused_activation_function)
    fx = c.temp(OperandType.TENSOR_FLOAT32, list(c.info(x).dimensions))
    fy = c.temp(OperandType.TENSOR_FLOAT32, list(c.info(y).dimensions))
    fz = c.temp(OperandType.TENSOR_FLOAT32, list(c.info(fused.operand).dimensions))
    c.emit(OperationType.DEQUANTIZE, [x], [fx])
    c.emit(OperationType.DEQUANTIZE, [y], [fy])
    c.emit(op, [fx, fy, c.i32(fused.code)], [fz])
    c.emit(OperationType.QUANTIZE, [fz], [fused.operand])
    fused.finish()


def _mul_scales_ok(c: CheckContext) -> bool:
    s1, s2, so = (quant_params(t)[0] for t in (c.input(0), c.input(1), c.output(0)))
    return float(np.float32(so)) > float(np.float32(np.float32(s1) * np.float32(s2)))


@lowering_rule(BuiltinOperator.MUL)
class Mul(_FusedBinary):
    """TFLite MUL(x, y) -> NNAPI MUL(x, y, fuse code). Quantized: NNAPI requires
    output_scale > input1_scale * input2_scale (its multiplier must be below 1); when a model breaks that,
    the product is computed in float32 between DEQUANTIZE and QUANTIZE instead (API 29)."""

    nnapi_op = OperationType.MUL
    nnapi_ops = (OperationType.MUL, OperationType.DEQUANTIZE, OperationType.QUANTIZE)
    dtypes = ("float32", "uint8", "int8", "int32")
    constraints = "rank <= 4; quantized with output scale <= product of input scales needs API 29; int32 API 30"

    def check_quant(self, c: CheckContext) -> None:
        if not _mul_scales_ok(c):
            c.require_api(29, "quantized MUL with output scale <= product of input scales (float form)",
                          "raise --api-level to 29, or requantize the model's output range")

    def lower(self, c: LowerContext) -> None:
        if is_quant(c.input(0)) and not _mul_scales_ok(c):
            _quant_binary_via_float(c, OperationType.MUL)
        else:
            super().lower(c)


@lowering_rule(BuiltinOperator.DIV)
class Div(_FusedBinary):
    """TFLite DIV(x, y) -> NNAPI DIV(x, y, fuse code), float32 from API 28.

    int32 is refused: TFLite truncates the quotient toward zero while NNAPI's int32 DIV floors it.
    Quantized DIV is refused: NNAPI has none, and a float form (DEQUANTIZE / DIV / QUANTIZE) would not match
    TFLite's uint8 / int8 kernel, which was measured to saturate some small quotients (e.g. 0.1 / 2.04 gives
    the maximum instead of 0.05)."""

    nnapi_op = OperationType.DIV
    nnapi_ops = (OperationType.DIV,)
    min_api_level = 28
    float_api = 28
    quant_api = None
    int32_api = None
    dtypes = ("float32",)
    constraints = "float32 only; rank <= 4"


@lowering_rule(BuiltinOperator.ADD_N)
class AddN(Rule):
    """TFLite ADD_N(x0, x1, ..., xk) -> a chain of NNAPI ADDs ((x0 + x1) + x2) + ..., TFLite's summation
    order, so float results are identical. One input: ADD(x0, -0.0), an exact copy."""

    nnapi_ops = (OperationType.ADD,)
    dtypes = ("float32", "int32")
    constraints = "rank <= 4; int32 needs API 30"
    beyond_delegate = True

    def check(self, c: CheckContext) -> None:
        if not check_common(c, (1, 64), (F32, I32)):
            return
        if c.input(0).type == I32:
            c.require_api(30, "int32 ADD_N (int32 ADD)")

    def lower(self, c: LowerContext) -> None:
        n = len(c.op.inputs)
        out = c.out(0)
        if n == 1:
            x = c.in_(0)
            zero = scalar_tensor(c, -0.0) if c.input(0).type == F32 else scalar_tensor(c, 0, OperandType.TENSOR_INT32)
            c.emit(OperationType.ADD, [x, zero, c.i32(FuseCode.NONE)], [out])
            return
        acc = c.in_(0)
        for k in range(1, n):
            dst = out if k == n - 1 else c.temp_like(out)
            c.emit(OperationType.ADD, [acc, c.in_(k), c.i32(FuseCode.NONE)], [dst])
            acc = dst


@lowering_rule(BuiltinOperator.SQUARE)
class Square(Rule):
    """TFLite SQUARE(x) -> NNAPI MUL(x, x, NONE): the same single float32 rounding of x * x."""

    nnapi_ops = (OperationType.MUL,)
    dtypes = ("float32",)
    constraints = "float32; rank <= 4"
    beyond_delegate = True

    def check(self, c: CheckContext) -> None:
        check_common(c, 1, (F32,))

    def lower(self, c: LowerContext) -> None:
        x = c.in_(0)
        c.emit(OperationType.MUL, [x, x, c.i32(FuseCode.NONE)], [c.out(0)])


@lowering_rule(BuiltinOperator.SQUARED_DIFFERENCE)
class SquaredDifference(Rule):
    """TFLite SQUARED_DIFFERENCE(x, y) = (x - y)^2 -> NNAPI SUB(x, y) then MUL(d, d).

    float32: API 28 (SUB); at API 27 the difference is ADD(x, MUL(y, -1)), exact since x + (-y) is x - y.
    int32: API 30. int8 (TFLite has no uint8 kernel): DEQUANTIZE both inputs, SUB and MUL in float32, then
    QUANTIZE (API 29). The delegate's all-8-bit form (an 8-bit difference spanning +-sqrt(max output))
    measured 2 LSB off TFLite's integer kernel; the float form rounds the exact square once."""

    nnapi_ops = (OperationType.SUB, OperationType.MUL, OperationType.ADD, OperationType.DEQUANTIZE,
                 OperationType.QUANTIZE)
    dtypes = ("float32", "int8", "int32")
    constraints = "rank <= 4; int8 needs API 29, int32 API 30"

    def check(self, c: CheckContext) -> None:
        if not check_common(c, 2, (F32, I8, I32)):
            return
        t = c.input(0).type
        if t == I8:
            c.require_api(29, "quantized SQUARED_DIFFERENCE (DEQUANTIZE / QUANTIZE)")
        elif t == I32:
            c.require_api(30, "int32 SQUARED_DIFFERENCE")

    def lower(self, c: LowerContext) -> None:
        x, y, out = c.in_(0), c.in_(1), c.out(0)
        od = c.info(out)
        dims = list(od.dimensions)
        none = c.i32(FuseCode.NONE)
        if od.type.is_quantized:
            fx = c.temp(OperandType.TENSOR_FLOAT32, list(c.info(x).dimensions))
            fy = c.temp(OperandType.TENSOR_FLOAT32, list(c.info(y).dimensions))
            c.emit(OperationType.DEQUANTIZE, [x], [fx])
            c.emit(OperationType.DEQUANTIZE, [y], [fy])
            d, sq = c.temp(OperandType.TENSOR_FLOAT32, dims), c.temp(OperandType.TENSOR_FLOAT32, dims)
            c.emit(OperationType.SUB, [fx, fy, none], [d])
            c.emit(OperationType.MUL, [d, d, none], [sq])
            c.emit(OperationType.QUANTIZE, [sq], [out])
            return
        d = c.temp(od.type, dims)
        if c.api_level >= 28:
            c.emit(OperationType.SUB, [x, y, none], [d])
        else:
            c.emit(OperationType.ADD, [x, negate(c, y), none], [d])
        c.emit(OperationType.MUL, [d, d, none], [out])


@lowering_rule(BuiltinOperator.POW)
class Pow(Rule):
    """TFLite POW(base, exponent) -> NNAPI POW(base, exponent), float32, API 29 (int32 POW has no NNAPI form)."""

    nnapi_ops = (OperationType.POW,)
    min_api_level = 29
    dtypes = ("float32",)
    constraints = "float32 only"

    def check(self, c: CheckContext) -> None:
        if check_common(c, 2, (F32,), max_rank=None):
            c.require_api(29, "POW")

    def lower(self, c: LowerContext) -> None:
        c.emit(OperationType.POW, [c.in_(0), c.in_(1)], [c.out(0)])


class _MinMax(Rule):
    """TFLite OP(x, y) -> NNAPI OP(x, y) (API 29). Quantized: TFLite compares the stored integers, NNAPI the
    values requantized to the output, which agree only when both inputs and the output share their
    quantization; other cases are refused."""

    nnapi_op: ClassVar[OperationType]
    min_api_level = 29
    dtypes = ("float32", "uint8", "int8", "int32")
    constraints = "quantized inputs and output must share scale and zero point"

    def check(self, c: CheckContext) -> None:
        if not check_common(c, 2, (F32, U8, I8, I32), max_rank=None):
            return
        c.require_api(29, self.op.name)
        if is_quant(c.input(0)) and not same_quant(c.input(0), c.input(1), c.output(0)):
            c.refuse(Code.QUANTIZATION, f"quantized {self.op.name} needs one scale and zero point for both "
                     "inputs and the output (TFLite compares stored values)")

    def lower(self, c: LowerContext) -> None:
        c.emit(self.nnapi_op, [c.in_(0), c.in_(1)], [c.out(0)])


@lowering_rule(BuiltinOperator.MAXIMUM)
class Maximum(_MinMax):
    __doc__ = _MinMax.__doc__.replace("OP", "MAXIMUM")
    nnapi_op = OperationType.MAXIMUM
    nnapi_ops = (OperationType.MAXIMUM,)


@lowering_rule(BuiltinOperator.MINIMUM)
class Minimum(_MinMax):
    __doc__ = _MinMax.__doc__.replace("OP", "MINIMUM")
    nnapi_op = OperationType.MINIMUM
    nnapi_ops = (OperationType.MINIMUM,)


# -- unary float functions -------------------------------------------------------------------------
class _UnaryFloat(Rule):
    """TFLite OP(x) -> NNAPI OP(x), float32 (API 29). TFLite's int8 OP (a lookup table) becomes DEQUANTIZE,
    OP, QUANTIZE (`via_float`, API 29; int8 travels as uint8 + 128 below API 30)."""

    nnapi_op: ClassVar[OperationType]
    min_api_level = 29
    quant_api: ClassVar[int | None] = 29  # None: no quantized form
    dtypes = ("float32", "int8")
    constraints = "float32; int8 through float"
    max_rank: ClassVar[int | None] = None

    def check(self, c: CheckContext) -> None:
        allowed = (F32, I8) if self.quant_api is not None else (F32,)
        quant = is_quant(c.input(0))
        # DEQUANTIZE / QUANTIZE take rank <= 4; their int8 operands may travel as uint8 + 128.
        if not check_common(c, 1, allowed, max_rank=4 if quant else self.max_rank, int8_shiftable=True):
            return
        c.require_api(self.min_api_level, self.op.name)
        if is_quant(c.input(0)):
            c.require_api(self.quant_api, f"int8 {self.op.name} (DEQUANTIZE / QUANTIZE)")

    def emit_float(self, c: LowerContext, x: int, out: int) -> None:
        c.emit(self.nnapi_op, [x], [out])

    def lower(self, c: LowerContext) -> None:
        if is_quant(c.input(0)):
            via_float(c, c.in_(0), c.out(0), lambda f, g: self.emit_float(c, f, g))
        else:
            self.emit_float(c, c.in_(0), c.out(0))


def _unary(op: BuiltinOperator, nn_op: OperationType, doc: str, quant: bool = True) -> type[Rule]:
    attrs = {"__doc__": doc, "nnapi_op": nn_op, "__module__": __name__,
             "nnapi_ops": (nn_op, OperationType.DEQUANTIZE, OperationType.QUANTIZE) if quant else (nn_op,)}
    if not quant:
        attrs.update(quant_api=None, dtypes=("float32",), constraints="float32 only")
    cls = type(op.name.title().replace("_", ""), (_UnaryFloat,), attrs)
    return lowering_rule(op)(cls)


Exp = _unary(BuiltinOperator.EXP, OperationType.EXP, "TFLite EXP(x) -> NNAPI EXP(x), float32 (int8 through "
             "float), API 29.")
Log = _unary(BuiltinOperator.LOG, OperationType.LOG, "TFLite LOG(x) -> NNAPI LOG(x), float32 (int8 through "
             "float), API 29.")
Sqrt = _unary(BuiltinOperator.SQRT, OperationType.SQRT, "TFLite SQRT(x) -> NNAPI SQRT(x), float32 (int8 "
              "through float), API 29.")
Rsqrt = _unary(BuiltinOperator.RSQRT, OperationType.RSQRT, "TFLite RSQRT(x) -> NNAPI RSQRT(x), float32 (int8 "
               "through float), API 29.")
Sin = _unary(BuiltinOperator.SIN, OperationType.SIN, "TFLite SIN(x) -> NNAPI SIN(x), float32, API 29.",
             quant=False)


@lowering_rule(BuiltinOperator.FLOOR)
class Floor(_UnaryFloat):
    """TFLite FLOOR(x) -> NNAPI FLOOR(x), float32 from API 27 (rank <= 4)."""

    nnapi_op = OperationType.FLOOR
    nnapi_ops = (OperationType.FLOOR,)
    min_api_level = 27
    quant_api = None
    max_rank = 4
    dtypes = ("float32",)
    constraints = "float32; rank <= 4"


@lowering_rule(BuiltinOperator.COS)
class Cos(_UnaryFloat):
    """TFLite COS(x) -> NNAPI SUB(pi/2, x) then SIN (API 29), the delegate's identity cos(x) = sin(pi/2 - x).
    Not bit-exact: pi/2 is rounded to float32 and pi/2 - x rounds once (absolute error ~1e-7 per unit of x)."""

    nnapi_ops = (OperationType.SUB, OperationType.SIN)
    quant_api = None
    dtypes = ("float32",)
    constraints = "float32 only"

    def lower(self, c: LowerContext) -> None:
        x, out = c.in_(0), c.out(0)
        t = c.temp_like(out)
        c.emit(OperationType.SUB, [scalar_tensor(c, float(np.float32(np.pi / 2))), x, c.i32(FuseCode.NONE)], [t])
        c.emit(OperationType.SIN, [t], [out])


@lowering_rule(BuiltinOperator.NEG)
class Neg(Rule):
    """TFLite NEG(x) -> NNAPI NEG(x) (API 29; float32 or int32). Below API 29, float32 NEG is
    MUL(x, [-1]) (exact: multiplying by -1 only flips the sign bit)."""

    nnapi_ops = (OperationType.NEG, OperationType.MUL)
    dtypes = ("float32", "int32")
    constraints = "int32 needs API 29"

    def check(self, c: CheckContext) -> None:
        if check_common(c, 1, (F32, I32), max_rank=None) and c.input(0).type == I32:
            c.require_api(29, "int32 NEG")
        if c.api_level < 29 and c.input(0) is not None:
            c.require_rank(c.input(0), 4, 0)  # the MUL form

    def lower(self, c: LowerContext) -> None:
        x, out = c.in_(0), c.out(0)
        if c.api_level >= 29:
            c.emit(OperationType.NEG, [x], [out])
        else:
            c.emit(OperationType.MUL, [x, scalar_tensor(c, -1.0), c.i32(FuseCode.NONE)], [out])


@lowering_rule(BuiltinOperator.ABS)
class Abs(Rule):
    """TFLite ABS(x) -> NNAPI ABS(x) (API 29 float32, API 30 int32; int8 through float: DEQUANTIZE, ABS,
    QUANTIZE at API 29, within 1 LSB of TFLite's requantizing int8 kernel).

    Below API 29, float32 ABS is ADD(RELU(x), RELU(MUL(x, -1))): exact, since for every x one of the two
    RELUs is 0 and the other is |x|."""

    nnapi_ops = (OperationType.ABS, OperationType.RELU, OperationType.MUL, OperationType.ADD,
                 OperationType.DEQUANTIZE, OperationType.QUANTIZE)
    dtypes = ("float32", "int8", "int32")
    constraints = "rank <= 4 below API 29; int8 needs API 29, int32 API 30"

    def check(self, c: CheckContext) -> None:
        quant = is_quant(c.input(0))
        if not check_common(c, 1, (F32, I8, I32), max_rank=4 if quant else None, int8_shiftable=True):
            return
        if c.input(0).type == I32:
            c.require_api(30, "int32 ABS")
        elif quant:
            c.require_api(29, "int8 ABS (DEQUANTIZE / ABS / QUANTIZE)")
        elif c.api_level < 29:
            c.require_rank(c.input(0), 4, 0)

    def lower(self, c: LowerContext) -> None:
        x, out = c.in_(0), c.out(0)
        if is_quant(c.input(0)):
            via_float(c, x, out, lambda f, g: c.emit(OperationType.ABS, [f], [g]))
            return
        if c.api_level >= 29:
            c.emit(OperationType.ABS, [x], [out])
            return
        pos, neg = c.temp_like(out), c.temp_like(out)
        c.emit(OperationType.RELU, [x], [pos])
        c.emit(OperationType.RELU, [negate(c, x)], [neg])
        c.emit(OperationType.ADD, [pos, neg, c.i32(FuseCode.NONE)], [out])


@lowering_rule(BuiltinOperator.CEIL)
class Ceil(Rule):
    """TFLite CEIL(x) -> -FLOOR(-x): NEG / FLOOR / NEG from API 29, MUL(-1) / FLOOR / MUL(-1) before.
    Exact: ceil(x) == -floor(-x) in IEEE arithmetic (negation is exact), including the sign of zero."""

    nnapi_ops = (OperationType.NEG, OperationType.FLOOR, OperationType.MUL)
    dtypes = ("float32",)
    constraints = "float32; rank <= 4"
    beyond_delegate = True

    def check(self, c: CheckContext) -> None:
        check_common(c, 1, (F32,))

    def lower(self, c: LowerContext) -> None:
        x, out = c.in_(0), c.out(0)
        f = c.temp_like(out)
        c.emit(OperationType.FLOOR, [negate(c, x)], [f])
        if c.api_level >= 29:
            c.emit(OperationType.NEG, [f], [out])
        else:
            c.emit(OperationType.MUL, [f, scalar_tensor(c, -1.0), c.i32(FuseCode.NONE)], [out])


# -- CAST and constant-producing ops ---------------------------------------------------------------
@lowering_rule(BuiltinOperator.CAST)
class Cast(Rule):
    """TFLite CAST(x) -> NNAPI CAST(x) (API 29) among float32, float16, int32 and uint8.

    Both cast stored values (a uint8 tensor's quantization is ignored) and truncate floats toward zero.
    Out-of-range values differ: NNAPI clamps to [0, 255] when casting to uint8, TFLite wraps.
    NNAPI's CAST has no bool form; these are exact compositions (API 29):
    x -> bool is NOT_EQUAL(x, [0]) (the 0 stored with x's own quantization, so stored values compare);
    bool -> y is SELECT(x, ones, zeros) with constants of x's shape.
    CastOptions' in_data_type / out_data_type repeat the tensor types, which are what TFLite's kernel reads,
    so the rule reads the tensor types too."""

    nnapi_ops = (OperationType.CAST, OperationType.NOT_EQUAL, OperationType.SELECT, OperationType.LOGICAL_OR)
    min_api_level = 29
    dtypes = ("float32", "float16", "int32", "uint8", "bool")
    constraints = "float32/float16/int32/uint8/bool; values cast to uint8 are clamped to [0, 255]"

    def check(self, c: CheckContext) -> None:
        if not check_common(c, 1, (F32, F16, I32, U8, TensorType.BOOL), max_rank=None, same_type=False):
            return
        c.require_dtype(c.output(0), (F32, F16, I32, U8, TensorType.BOOL), "output")
        c.require_api(29, "CAST")

    def lower(self, c: LowerContext) -> None:
        x, out = c.in_(0), c.out(0)
        src, dst = c.info(x), c.info(out)
        if src.type is dst.type is OperandType.TENSOR_BOOL8:
            c.emit(OperationType.LOGICAL_OR, [x, c.constant(src.type, np.zeros(1, np.bool_))], [out])
        elif dst.type is OperandType.TENSOR_BOOL8:
            zero = c.constant(src.type, np.zeros(1, src.dtype), scale=src.scale, zero_point=src.zero_point)
            c.emit(OperationType.NOT_EQUAL, [x, zero], [out])
        elif src.type is OperandType.TENSOR_BOOL8:
            dims = tuple(src.dimensions)
            ones = c.constant(dst.type, np.ones(dims, dst.dtype), scale=dst.scale, zero_point=dst.zero_point)
            zeros = c.constant(dst.type, np.zeros(dims, dst.dtype), scale=dst.scale, zero_point=dst.zero_point)
            c.emit(OperationType.SELECT, [x, ones, zeros], [out])
        else:
            c.emit(OperationType.CAST, [x], [out])


class _FillLike(Rule):
    """TFLite OP(x) with a static shape -> a constant of x's shape that consumers read directly, with no
    NNAPI operation. When the output is a model output (which NNAPI cannot make a constant) the constant is
    copied by an exact identity op: float32 ADD(c, [-0.0]) (API 27), int32 MAXIMUM(c, [INT32_MIN]) (API 29)."""

    fill_value: ClassVar[float]
    nnapi_ops = (OperationType.ADD, OperationType.MAXIMUM)
    dtypes = ("float32", "int32")
    constraints = "static shape; an int32 model output needs API 29"
    beyond_delegate = True

    def check(self, c: CheckContext) -> None:
        if not check_common(c, 1, (F32, I32), max_rank=None):
            return
        if c.op.outputs[0] in c.subgraph.outputs:
            if c.output(0).type == I32:
                c.require_api(29, f"{self.op.name} into an int32 model output (MAXIMUM copy)")
            else:
                c.require_rank(c.output(0), 4, 0, "output")  # the ADD copy

    def lower(self, c: LowerContext) -> None:
        t = c.output(0)
        ntype = OperandType.TENSOR_FLOAT32 if t.type == F32 else OperandType.TENSOR_INT32
        value = np.full(nnapi_dims(t), self.fill_value, dtype=np.float32 if t.type == F32 else np.int32)
        const = c.constant(ntype, value, name=t.name)
        if c.op.outputs[0] not in c.subgraph.outputs:
            c.alias(c.op.outputs[0], const)
        elif t.type == F32:
            c.emit(OperationType.ADD, [const, scalar_tensor(c, -0.0), c.i32(FuseCode.NONE)], [c.out(0)])
        else:
            lowest = c.constant(OperandType.TENSOR_INT32, np.asarray([-(1 << 31)], np.int32))
            c.emit(OperationType.MAXIMUM, [const, lowest], [c.out(0)])


@lowering_rule(BuiltinOperator.ZEROS_LIKE)
class ZerosLike(_FillLike):
    __doc__ = _FillLike.__doc__.replace("OP", "ZEROS_LIKE")
    fill_value = 0


# -- integer-style division and sign (beyond the delegate) -------------------------------------------
@lowering_rule(BuiltinOperator.FLOOR_DIV)
class FloorDiv(Rule):
    """TFLite FLOOR_DIV(x, y) = floor(x / y).

    float32 (API 28): FLOOR(DIV(x, y)), exact: TFLite computes `std::floor(x / y)` the same way.
    int32 (API 30): NNAPI's int32 DIV, which already floors (TFLite's int32 kernel computes the floor of
    the exact quotient); a zero divisor makes TFLite fail and NNAPI return 0."""

    nnapi_ops = (OperationType.DIV, OperationType.FLOOR)
    min_api_level = 28
    dtypes = ("float32", "int32")
    constraints = "rank <= 4; float32 API 28, int32 API 30"
    beyond_delegate = True

    def check(self, c: CheckContext) -> None:
        if not check_common(c, 2, (F32, I32)):
            return
        if c.input(0).type == F32:
            c.require_api(28, "float32 FLOOR_DIV (DIV)")
        else:
            c.require_api(30, "int32 FLOOR_DIV (int32 DIV)")

    def lower(self, c: LowerContext) -> None:
        x, y, out = c.in_(0), c.in_(1), c.out(0)
        none = c.i32(FuseCode.NONE)
        if c.input(0).type == I32:
            c.emit(OperationType.DIV, [x, y, none], [out])
            return
        q = c.temp_like(out)
        c.emit(OperationType.DIV, [x, y, none], [q])
        c.emit(OperationType.FLOOR, [q], [out])


@lowering_rule(BuiltinOperator.FLOOR_MOD)
class FloorMod(Rule):
    """TFLite FLOOR_MOD(x, y) for int32 (API 30): SUB(x, MUL(DIV(x, y), y)) with NNAPI's flooring int32 DIV,
    exactly TFLite's result (x - floor(x / y) * y, the remainder with the divisor's sign). The float form is
    refused: x - floor(x / y) * y rounds where TFLite's fmod does not."""

    nnapi_ops = (OperationType.DIV, OperationType.MUL, OperationType.SUB)
    min_api_level = 30
    dtypes = ("int32",)
    constraints = "int32 only; rank <= 4"
    beyond_delegate = True

    def check(self, c: CheckContext) -> None:
        if check_common(c, 2, (I32,)):
            c.require_api(30, "int32 FLOOR_MOD (int32 DIV / MUL / SUB)")

    def lower(self, c: LowerContext) -> None:
        x, y, out = c.in_(0), c.in_(1), c.out(0)
        none = c.i32(FuseCode.NONE)
        q, p = c.temp_like(out), c.temp_like(out)
        c.emit(OperationType.DIV, [x, y, none], [q])
        c.emit(OperationType.MUL, [q, y, none], [p])
        c.emit(OperationType.SUB, [x, p, none], [out])


@lowering_rule(BuiltinOperator.SIGN)
class Sign(Rule):
    """TFLite SIGN(x) = (x > 0) - (x < 0) for float32 / int32 (API 29), as
    SELECT(GREATER(x, 0), 1, SELECT(LESS(x, 0), -1, 0)) with constants of x's shape: exact, NaN gives 0
    like TFLite."""

    nnapi_ops = (OperationType.GREATER, OperationType.LESS, OperationType.SELECT)
    min_api_level = 29
    dtypes = ("float32", "int32")
    constraints = "float32 / int32"
    beyond_delegate = True

    def check(self, c: CheckContext) -> None:
        if check_common(c, 1, (F32, I32), max_rank=None):
            c.require_api(29, "SIGN (comparisons and SELECT)")

    def lower(self, c: LowerContext) -> None:
        x, out = c.in_(0), c.out(0)
        od = c.info(out)
        dims = tuple(od.dimensions)

        def full(v: float) -> int:
            return c.constant(od.type, np.full(dims, v, dtype=od.dtype))
        zero = c.constant(od.type, np.zeros(1, od.dtype))
        pos = c.temp(OperandType.TENSOR_BOOL8, list(dims))
        neg = c.temp(OperandType.TENSOR_BOOL8, list(dims))
        c.emit(OperationType.GREATER, [x, zero], [pos])
        c.emit(OperationType.LESS, [x, zero], [neg])
        low = c.temp_like(out)
        c.emit(OperationType.SELECT, [neg, full(-1), full(0)], [low])
        c.emit(OperationType.SELECT, [pos, full(1), low], [out])


@lowering_rule(BuiltinOperator.ROUND)
class Round(Rule):
    """TFLite ROUND(x): to nearest, ties to even (float32), API 29, exactly:
    with a = ABS(x), r = SUB(ADD(a, 2^23), 2^23): for a < 2^23 the sum lies in [2^23, 2^24), where float32's
    spacing is 1, so the IEEE addition itself rounds a to an integer with ties to even, and the subtraction
    is exact; the sign comes back with SELECT(LESS(x, 0), NEG(r), r). From 2^23 every float32 is an
    integer, so y = SELECT(LESS(a, 2^23), signed r, x), which also keeps NaN and inf."""

    nnapi_ops = (OperationType.ABS, OperationType.ADD, OperationType.SUB, OperationType.NEG, OperationType.LESS,
                 OperationType.SELECT)
    min_api_level = 29
    dtypes = ("float32",)
    constraints = "float32; rank <= 4"
    beyond_delegate = True

    TWO_23 = 2.0 ** 23

    def check(self, c: CheckContext) -> None:
        if check_common(c, 1, (F32,)):
            c.require_api(29, "ROUND (ABS / NEG / LESS / SELECT)")

    def lower(self, c: LowerContext) -> None:
        x, out = c.in_(0), c.out(0)
        dims = list(c.info(out).dimensions)
        none = c.i32(FuseCode.NONE)
        magic = scalar_tensor(c, self.TWO_23)
        a, shifted, r, neg_r, signed = (c.temp_like(out) for _ in range(5))
        negative, small = c.temp(OperandType.TENSOR_BOOL8, dims), c.temp(OperandType.TENSOR_BOOL8, dims)
        c.emit(OperationType.ABS, [x], [a])
        c.emit(OperationType.ADD, [a, magic, none], [shifted])
        c.emit(OperationType.SUB, [shifted, magic, none], [r])
        c.emit(OperationType.NEG, [r], [neg_r])
        c.emit(OperationType.LESS, [x, scalar_tensor(c, 0.0)], [negative])
        c.emit(OperationType.SELECT, [negative, neg_r, r], [signed])
        c.emit(OperationType.LESS, [a, magic], [small])
        c.emit(OperationType.SELECT, [small, signed, x], [out])
