"""Activations: RELU, RELU6, RELU_N1_TO_1, RELU_0_TO_1, LOGISTIC, TANH, ELU, HARD_SWISH, PRELU, LEAKY_RELU, GELU.

Quantized activations: NNAPI's RELU family keeps the input's quantization on its output, LOGISTIC forces
(1/256, 0) (int8: -128) and TANH (1/128, 128) (int8: 0) - the same fixed output ranges TFLite requires.
When a TFLite RELU has different input and output quantization, it becomes ADD(x, real 0) with the
RELU as fused activation, which requantizes and clamps in one operation.
"""

from __future__ import annotations

from typing import Callable, ClassVar

import numpy as np

from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.driver_support import NO_SIGNED_INT8_ARMNN
from nnconv.lowering.registry import Rule, family_rule, lowering_rule
from nnconv.lowering.rules._arith import (F32, I8, U8, check_common, check_fixed_output_quant, is_quant, negate,
                                          requantize, same_quant, scalar_tensor, via_float)
from nnconv.nnapi.enums import FuseCode, OperandType, OperationType
from nnconv.nnapi.hard_swish_quant import hard_swish_quant8
from nnconv.nnapi.operations.activations import LOGISTIC_OUTPUT, TANH_OUTPUT
from nnconv.nnapi.quant_limits import (hard_swish_output_multiplier, sigmoid_input_multiplier,
                                       sigmoid_saturation_radius)
from nnconv.nnapi.quantization import qrange
from nnconv.tflite.ir import Tensor
from nnconv.tflite.schema_enums import BuiltinOperator


class _Relu(Rule):
    """TFLite <OP>(x) -> NNAPI <OP>(x) (API 27, float32 / uint8 / int8). Quantized with an output quantization
    different from the input's: ADD(x, real 0, fuse code <OP>), since NNAPI's <OP> output keeps the input's."""

    int8_shiftable = True
    fuse: ClassVar[FuseCode]
    dtypes = ("float32", "uint8", "int8")
    constraints = "rank <= 4"

    def check(self, c: CheckContext) -> None:
        check_common(c, 1, (F32, U8, I8))

    def lower(self, c: LowerContext) -> None:
        x_t, y_t = c.input(0), c.output(0)
        if is_quant(x_t) and not same_quant(x_t, y_t):
            requantize(c, c.input_operand(0), c.output_operand(0), self.fuse)
            return
        c.emit(self.nnapi_ops[0], [c.input_operand(0)], [c.output_operand(0)])


Relu = family_rule(_Relu, BuiltinOperator.RELU, fuse=FuseCode.RELU, nnapi_ops=(OperationType.RELU, OperationType.ADD))


Relu6 = family_rule(_Relu, BuiltinOperator.RELU6, fuse=FuseCode.RELU6,
                    nnapi_ops=(OperationType.RELU6, OperationType.ADD))


ReluN1To1 = family_rule(_Relu, BuiltinOperator.RELU_N1_TO_1, fuse=FuseCode.RELU1,
                        nnapi_ops=(OperationType.RELU1, OperationType.ADD))


@lowering_rule(BuiltinOperator.RELU_0_TO_1)
class Relu0To1(Rule):
    """TFLite RELU_0_TO_1(x) = clamp(x, 0, 1) -> NNAPI RELU1 then RELU (API 27): clamping to [-1, 1] and then
    to [0, inf) is clamping to [0, 1], bound for bound also on quantized values. Quantized with another output
    quantization: ADD(x, real 0, RELU1) requantizes into the output's parameters first."""

    nnapi_ops = (OperationType.RELU1, OperationType.RELU, OperationType.ADD)
    dtypes = ("float32", "uint8", "int8")
    constraints = "rank <= 4"
    beyond_delegate = True

    def check(self, c: CheckContext) -> None:
        # Clamps commute with the +128 shift, so int8 may travel as uint8 below API 30 like RELU1 / RELU.
        check_common(c, 1, (F32, U8, I8), int8_shiftable=True)

    def lower(self, c: LowerContext) -> None:
        x_t, y_t = c.input(0), c.output(0)
        out = c.output_operand(0)
        tmp = c.temp_like(out)
        if is_quant(x_t) and not same_quant(x_t, y_t):
            requantize(c, c.input_operand(0), tmp, FuseCode.RELU1)
        else:
            c.emit(OperationType.RELU1, [c.input_operand(0)], [tmp])
        c.emit(OperationType.RELU, [tmp], [out])


_NNAPI_QUANT8 = {U8: OperandType.TENSOR_QUANT8_ASYMM, I8: OperandType.TENSOR_QUANT8_ASYMM_SIGNED}


class _Sigmoidal(Rule):
    """TFLite OP(x) -> NNAPI OP(x). Quantized outputs must have the fixed range both TFLite and NNAPI use.

    TFLite computes a quantized LOGISTIC / TANH as a lookup table filled in float (each input byte
    dequantized, f in float32, rounded to the output's steps); NNAPI's reference evaluates it in fixed point.
    The two agree within 1 LSB except for input scales the fixed-point kernel handles badly, which go
    through float instead (DEQUANTIZE, float OP, QUANTIZE: TFLite's table within 1 LSB; API 29): a scale
    too small for its Q4.27 rescaling (refused by its prepare), or one so large that it returns the extreme
    output from a radius where f is not yet extreme (`_saturates_early`)."""

    int8_shiftable = True
    nnapi_op: ClassVar[OperationType]
    quant_api: ClassVar[int] = 27
    # NNAPI quant8 type -> the (scale, zero point) the operation prescribes for its output (nnapi/operations,
    # which the validator and the kernel read too); TFLite's uint8 / int8 are those types.
    fixed_output: ClassVar[dict[OperandType, tuple[float, int]]]
    function: ClassVar[Callable[[np.ndarray], np.ndarray]]  # the real function, as TFLite's float table has it
    dtypes = ("float32", "uint8", "int8")

    def check(self, c: CheckContext) -> None:
        if not check_common(c, 1, (F32, U8, I8)):
            return
        y = c.output(0)
        if is_quant(y):
            c.require_api(self.quant_api, f"quantized {self.op.name}")  # hand-written: per rule (quant_api)
            check_fixed_output_quant(c, self.op.name, y, *self.fixed_output[_NNAPI_QUANT8[y.type]])
            why = self._through_float(c.input(0), y)
            if why:
                scale = c.input(0).quantization.scale[0]
                what = f"quantized {self.op.name} with input scale {scale:g} ({why}) through float"
                if c.require_operation((OperationType.DEQUANTIZE, self.nnapi_op, OperationType.QUANTIZE), what):
                    c.note(f"{what}: DEQUANTIZE, {self.op.name}, QUANTIZE (within 1 LSB of TFLite)")

    def lower(self, c: LowerContext) -> None:
        if self._through_float(c.input(0), c.output(0)):
            via_float(c, c.input_operand(0), c.output_operand(0), lambda f, g: c.emit(self.nnapi_op, [f], [g]))
            return
        c.emit(self.nnapi_op, [c.input_operand(0)], [c.output_operand(0)])

    def _through_float(self, x: Tensor | None, y: Tensor | None) -> str:
        """Why the quantized `x` -> `y` goes through float ("" when it does not)."""
        if x is None or y is None or not is_quant(x) or x.quantization.is_per_channel:
            return ""
        if not sigmoid_input_multiplier(x.quantization.scale[0]) > 1.0:
            return ("scale * 2^27 is not above 1, which the reference's fixed-point kernel refuses; TFLite's "
                    "lookup table computes it")
        return self._saturates_early(x, y)

    def _saturates_early(self, x: Tensor, y: Tensor) -> str:
        """The reference returns the output's extreme for every |q - zero point| >= its saturation radius
        (`sigmoid_saturation_radius`). Where TFLite's table is more than 1 LSB from that extreme at the
        radius (an input scale above ~4), it differs by up to 128 LSB (EfficientNet-B0 int8 with random
        batch-norm statistics has sigmoid inputs of scale 8.6: the reference gives sigmoid(0) = 0)."""
        scale, zero_point = float(x.quantization.scale[0]), int(x.quantization.zero_point[0])
        radius = sigmoid_saturation_radius(scale)
        lo, hi = qrange(_NNAPI_QUANT8[x.type])
        out_scale, out_zero_point = self.fixed_output[_NNAPI_QUANT8[y.type]]

        def table(centered: int) -> int:  # TFLite's lookup-table entry for q - zero point = centered
            real = self.function(np.float32(scale) * np.float32(centered))
            return int(np.clip(np.round(real / np.float32(out_scale)) + out_zero_point, lo, hi))

        # the reference tests q - zp <= -radius (the minimum) before q - zp >= radius (the maximum)
        low_wrong = lo - zero_point <= -radius and table(-radius) > lo + 1
        high_wrong = 0 < radius <= hi - zero_point and table(radius) < hi - 1
        if not (low_wrong or high_wrong):
            return ""
        return (f"the reference returns the extreme output from |q - zero point| >= {radius}, where TFLite's lookup "
                "table is not yet extreme")


@lowering_rule(BuiltinOperator.LOGISTIC)
class Logistic(_Sigmoidal):
    """TFLite LOGISTIC(x) -> NNAPI LOGISTIC(x) (API 27); quantized output (1/256, 0), int8 (1/256, -128)."""

    nnapi_op = OperationType.LOGISTIC
    nnapi_ops = (OperationType.LOGISTIC, OperationType.DEQUANTIZE, OperationType.QUANTIZE)
    fixed_output = LOGISTIC_OUTPUT
    function = staticmethod(lambda v: np.float32(1) / (np.float32(1) + np.exp(-v)))
    constraints = ("quantized output scale 1/256; an input scale beyond the reference's fixed point (below 2^-27, "
                   "above ~4) through float from API 29")


@lowering_rule(BuiltinOperator.TANH)
class Tanh(_Sigmoidal):
    """TFLite TANH(x) -> NNAPI TANH(x) (float32 API 27, quantized API 29); quantized output (1/128, 128),
    int8 (1/128, 0)."""

    nnapi_op = OperationType.TANH
    nnapi_ops = (OperationType.TANH, OperationType.DEQUANTIZE, OperationType.QUANTIZE)
    quant_api = 29
    fixed_output = TANH_OUTPUT
    function = staticmethod(np.tanh)
    constraints = ("quantized needs API 29 and output scale 1/128; an input scale beyond the reference's fixed "
                   "point (below 2^-27, from 8) through float")


# ELU below API 30: RELU(x) + EXP(MINIMUM(x, 0)) - 1
_ELU_COMPOSITE = (OperationType.RELU, OperationType.MINIMUM, OperationType.EXP, OperationType.ADD)


@lowering_rule(BuiltinOperator.ELU)
class Elu(Rule):
    """TFLite ELU(x) -> NNAPI ELU(x, alpha = 1.0) (API 30, float32). TFLite's int8 ELU (a lookup table of
    quantize(elu(dequantize(q)))) becomes DEQUANTIZE, ELU, QUANTIZE (`via_float`).

    At API 29, where NNAPI has no ELU, the identity elu(x) = max(x, 0) + (exp(min(x, 0)) - 1) gives
    RELU, MINIMUM, EXP and two ADDs (float32, or int8 through float): exp(m) - 1 instead of TFLite's
    expm1(m) costs at most ~1e-7 absolute near 0, far inside the float tolerance and invisible after
    quantization."""

    nnapi_ops = (OperationType.ELU, OperationType.DEQUANTIZE, OperationType.QUANTIZE, OperationType.RELU,
                 OperationType.MINIMUM, OperationType.EXP, OperationType.ADD)
    min_api_level = 29
    dtypes = ("float32", "int8")
    constraints = "float32; int8 through float; API 29 as RELU + EXP(MINIMUM) - 1"
    driver_notes = (NO_SIGNED_INT8_ARMNN,)

    def check(self, c: CheckContext) -> None:
        quant = is_quant(c.input(0))
        # int8 goes through DEQUANTIZE/QUANTIZE, exact on the uint8 + 128 form that carries int8 below API 30
        if check_common(c, 1, (F32, I8), max_rank=4 if quant else None, int8_shiftable=True):
            if c.api_level < 30 and c.require_operation(_ELU_COMPOSITE,
                                                        "ELU (below API 30 as RELU(x) + EXP(MINIMUM(x, 0)) - 1)"):
                c.note("NNAPI has ELU from API 30: lowered as RELU(x) + EXP(MINIMUM(x, 0)) - 1")

    def lower(self, c: LowerContext) -> None:
        def elu(x: int, out: int) -> None:
            if c.api_level >= 30:
                c.emit(OperationType.ELU, [x, c.f32(1.0)], [out])
            else:
                _elu_composite(c, x, out)
        if is_quant(c.input(0)):
            via_float(c, c.input_operand(0), c.output_operand(0), elu)
        else:
            elu(c.input_operand(0), c.output_operand(0))


def _elu_composite(c: LowerContext, x: int, out: int) -> None:
    """Float32 ELU as RELU(x) + (EXP(MINIMUM(x, 0)) - 1) (see `Elu`)."""
    none = c.i32(FuseCode.NONE)
    negative, exp, exp_m1, positive = (c.temp_like(out) for _ in range(4))
    c.emit(OperationType.MINIMUM, [x, scalar_tensor(c, 0.0)], [negative])
    c.emit(OperationType.EXP, [negative], [exp])
    c.emit(OperationType.ADD, [exp, scalar_tensor(c, -1.0), none], [exp_m1])
    c.emit(OperationType.RELU, [x], [positive])
    c.emit(OperationType.ADD, [positive, exp_m1, none], [out])


def _hard_swish_composite(c: LowerContext, x: int, out: int) -> None:
    """Float32 HARD_SWISH from MUL / MUL / MUL / ADD (see `HardSwish`)."""
    none = c.i32(FuseCode.NONE)
    s1, s2, s3 = c.temp_like(out), c.temp_like(out), c.temp_like(out)
    c.emit(OperationType.MUL, [x, scalar_tensor(c, 1.0 / 3.0), c.i32(FuseCode.RELU1)], [s1])
    c.emit(OperationType.MUL, [x, scalar_tensor(c, 0.5), none], [s2])
    c.emit(OperationType.MUL, [s1, s2, none], [s3])
    c.emit(OperationType.ADD, [s2, s3, none], [out])


@lowering_rule(BuiltinOperator.HARD_SWISH)
class HardSwish(Rule):
    """TFLite HARD_SWISH(x) = x * relu6(x + 3) / 6 -> NNAPI HARD_SWISH(x) from API 30 (float32, uint8, int8).

    Below API 30, float32 uses TFLite's NNAPI delegate composite, exact as an identity:
    s1 = MUL(x, 1/3, RELU1) = clamp(x/3, -1, 1), s2 = MUL(x, 1/2), s3 = MUL(s1, s2), y = ADD(s2, s3)
    = x/2 * (1 + clamp(x/3, -1, 1)) = x * clamp((x + 3)/6, 0, 1) = x * relu6(x + 3) / 6.
    Numerically it rounds differently (1/3 is not a float32; four roundings instead of three): measured on
    [-8, 8], max |diff| to TFLite 4.8e-7 (native HARD_SWISH: 9.5e-7), but near x = -3 the sum cancels
    (x/2 and x/2 * clamp(x/3) almost opposite), so tiny results there can be off by many ulps relative to
    themselves. Quantized at API 29, exactly: an 8-bit input has 256 values, so the reference's own
    fixed-point HARD_SWISH (`nnapi/hard_swish_quant.py`, the kernel's code) is evaluated on all of them at
    conversion time into a constant table quantized as the output, and the op becomes
    GATHER(table, axis 0, CAST(x) to TENSOR_INT32): NNAPI's CAST of a quant8 tensor takes the stored value
    and ignores scale and zero point, so each element looks its own result up, bit for bit what API 30's
    HARD_SWISH computes (int8 carried as uint8 + 128 indexes the table of the shifted operands). An output
    scale so small that the fixed-point output multiplier exceeds 1 is refused at every level, as TFLite's
    and NNAPI's kernels refuse it at prepare time. The delegate's all-8-bit composite would lose more than
    the 1 LSB the parity policy allows."""

    int8_shiftable = True
    nnapi_ops = (OperationType.HARD_SWISH, OperationType.MUL, OperationType.ADD, OperationType.CAST,
                 OperationType.GATHER)
    dtypes = ("float32", "uint8", "int8")
    constraints = "quantized needs API 29"

    def check(self, c: CheckContext) -> None:
        if not check_common(c, 1, (F32, U8, I8)):
            return
        x, out = c.input(0), c.output(0)
        if is_quant(x):
            c.require_operation((OperationType.CAST, OperationType.GATHER),
                                "quantized HARD_SWISH (API 30) or its lookup table (CAST / GATHER)")
            if hard_swish_output_multiplier(x.quantization.scale[0], out.quantization.scale[0])[1] > 0:
                c.refuse(Code.QUANTIZATION, f"quantized HARD_SWISH output scale {out.quantization.scale[0]:g} is "
                         f"too small for input scale {x.quantization.scale[0]:g}: the fixed-point output "
                         "multiplier (input_scale / 128) / output_scale exceeds 1, which TFLite and NNAPI refuse")

    def lower(self, c: LowerContext) -> None:
        x, out = c.input_operand(0), c.output_operand(0)
        if c.api_level >= 30:
            c.emit(OperationType.HARD_SWISH, [x], [out])
        elif is_quant(c.input(0)):
            _hard_swish_table(c, x, out)
        else:
            _hard_swish_composite(c, x, out)


def _hard_swish_table(c: LowerContext, x: int, out: int) -> None:
    """Quantized HARD_SWISH below API 30 as GATHER(256-entry table, 0, CAST(x)) (see `HardSwish`); x and
    out are TENSOR_QUANT8_ASYMM there (int8 travels as uint8 + 128)."""
    xd, od = c.info(x), c.info(out)
    lo, hi = qrange(od.type)
    stored = np.arange(256)  # every stored value of a TENSOR_QUANT8_ASYMM input, in index order
    table = hard_swish_quant8(stored, xd.scale, xd.zero_point, od.scale, od.zero_point, lo, hi)
    lookup = c.constant(od.type, table.astype(od.dtype), scale=od.scale, zero_point=od.zero_point)
    index = c.temp(OperandType.TENSOR_INT32, list(xd.dimensions))
    c.emit(OperationType.CAST, [x], [index])
    c.emit(OperationType.GATHER, [lookup, c.i32(0), index], [out])


def _prelu_float_composite(c: LowerContext, x: int, neg_alpha: int, out: int) -> None:
    """PRELU below API 29 (float32): ADD(RELU(x), MUL(RELU(-x), -alpha)).

    Exact: for x >= 0 the second term is 0 (or -0) and the sum is x; for x < 0 RELU(x) is 0 and
    (-alpha) * (-x) equals alpha * x bit for bit (negation is exact). Only the sign of a zero output may
    differ (+0 instead of -0)."""
    od = c.info(out)
    pos, neg = c.temp_like(x), c.temp_like(x)
    c.emit(OperationType.RELU, [x], [pos])
    c.emit(OperationType.RELU, [negate(c, x)], [neg])
    scaled = c.temp(od.type, list(od.dimensions))
    c.emit(OperationType.MUL, [neg, neg_alpha, c.i32(FuseCode.NONE)], [scaled])
    c.emit(OperationType.ADD, [pos, scaled, c.i32(FuseCode.NONE)], [out])


@lowering_rule(BuiltinOperator.PRELU)
class Prelu(Rule):
    """TFLite PRELU(x, alpha) -> NNAPI PRELU(x, alpha) (API 29), alpha broadcast against x alike in both.
    Quantized alpha may have its own scale and zero point.

    Below API 29, float32 PRELU with a constant alpha uses the exact composite
    ADD(RELU(x), MUL(RELU(-x), -alpha)) (see `_prelu_float_composite`), -alpha computed at conversion."""

    nnapi_ops = (OperationType.PRELU, OperationType.RELU, OperationType.MUL, OperationType.NEG,
                 OperationType.ADD)
    dtypes = ("float32", "uint8", "int8")
    constraints = "quantized needs API 29; float below API 29 needs a constant alpha and rank <= 4"
    int8_shiftable = True

    def check(self, c: CheckContext) -> None:
        if not check_common(c, 2, (F32, U8, I8), max_rank=None):
            return
        if c.api_level < 29:
            if is_quant(c.input(0)):
                c.require_operation(OperationType.PRELU, "quantized PRELU")
            elif not c.is_const(c.input(1)):
                c.require_operation(OperationType.PRELU, "PRELU with a non-constant alpha")
            else:
                for t in (c.input(0), c.input(1), c.output(0)):
                    c.require_rank(t, 4, 0)

    def lower(self, c: LowerContext) -> None:
        x, out = c.input_operand(0), c.output_operand(0)
        if c.api_level >= 29:
            c.emit(OperationType.PRELU, [x, c.input_operand(1)], [out])
            return
        alpha = np.asarray(c.const_value(c.input(1)), dtype=np.float32)
        shape = c.input(1).shape or (1,)
        neg_alpha = c.constant(OperandType.TENSOR_FLOAT32, (-alpha).reshape(shape))
        _prelu_float_composite(c, x, neg_alpha, out)


@lowering_rule(BuiltinOperator.LEAKY_RELU)
class LeakyRelu(Rule):
    """TFLite LEAKY_RELU(x; alpha) -> NNAPI PRELU(x, [alpha]) with a [1] constant alpha (API 29), as the
    delegate does. Quantized alpha is stored as one step of a scale |alpha| (value 1 at zero point 0, or
    value 0 at zero point 1 for a negative uint8 alpha), so the PRELU multiplier is s_in * |alpha| / s_out.

    Below API 29, float32 uses the exact PRELU composite with the constant -alpha."""

    int8_shiftable = True
    nnapi_ops = (OperationType.PRELU, OperationType.RELU, OperationType.MUL, OperationType.ADD)
    dtypes = ("float32", "uint8", "int8")
    constraints = "quantized needs API 29; rank <= 4 below API 29"

    def check(self, c: CheckContext) -> None:
        if not check_common(c, 1, (F32, U8, I8), max_rank=None if c.api_level >= 29 else 4):
            return
        if is_quant(c.input(0)):
            c.require_operation(OperationType.PRELU, "quantized LEAKY_RELU (PRELU)")

    def _alpha_operand(self, c: LowerContext, x: int) -> int:
        alpha = float(c.options.alpha)
        od = c.info(x)
        if not od.type.is_quantized:
            return c.constant(OperandType.TENSOR_FLOAT32, np.asarray([alpha], dtype=np.float32))
        scale = abs(alpha) or 1.0
        if alpha == 0:
            q, zp = 0, 0
        elif alpha > 0:
            q, zp = 1, 0
        elif od.type is OperandType.TENSOR_QUANT8_ASYMM:
            q, zp = 0, 1
        else:
            q, zp = -1, 0
        return c.constant(od.type, np.asarray([q], dtype=od.dtype), scale=scale, zero_point=zp)

    def lower(self, c: LowerContext) -> None:
        x, out = c.input_operand(0), c.output_operand(0)
        if c.api_level >= 29:
            c.emit(OperationType.PRELU, [x, self._alpha_operand(c, x)], [out])
            return
        neg_alpha = c.constant(OperandType.TENSOR_FLOAT32, np.asarray([-float(c.options.alpha)], dtype=np.float32))
        _prelu_float_composite(c, x, neg_alpha, out)


@lowering_rule(BuiltinOperator.GELU)
class Gelu(Rule):
    """TFLite GELU(x), float32, composed of NNAPI arithmetic (NNAPI has no GELU):

    approximate (API 27): 0.5 * x * (1 + TANH(sqrt(2/pi) * (x + 0.044715 * x^3))), TFLite's own formula;
    exact erf form (API 29): 0.5 * (x + |x| * erf(|x| / sqrt 2)) (erf is odd, so x * erf(x / sqrt 2) equals
    |x| * erf(|x| / sqrt 2)), with erf(z) = 1 - t (a1 + t (a2 + t (a3 + t (a4 + t a5)))) exp(-z^2),
    t = 1 / (1 + p z) (Abramowitz & Stegun 7.1.26, |error| <= 1.5e-7). Neither is bit-exact: both agree with
    TFLite to float32 rounding (and the erf approximation's 1.5e-7 * |x| / 2). Quantized GELU (a lookup table
    in TFLite) runs the float form between DEQUANTIZE and QUANTIZE (API 29)."""

    nnapi_ops = (OperationType.MUL, OperationType.ADD, OperationType.TANH, OperationType.ABS, OperationType.DIV,
                 OperationType.EXP, OperationType.SUB, OperationType.DEQUANTIZE, OperationType.QUANTIZE)
    dtypes = ("float32", "uint8", "int8")
    constraints = "rank <= 4; the erf form and quantized GELU need API 29"
    beyond_delegate = True

    # Abramowitz & Stegun 7.1.26 coefficients.
    P = 0.3275911
    A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)

    def check(self, c: CheckContext) -> None:
        if not check_common(c, 1, (F32, U8, I8), int8_shiftable=True):
            return
        if is_quant(c.input(0)):
            c.require_operation((OperationType.DEQUANTIZE, OperationType.QUANTIZE),
                                "quantized GELU (DEQUANTIZE / QUANTIZE)")
        elif not c.options.approximate:
            c.require_operation((OperationType.ABS, OperationType.EXP), "GELU with erf (ABS / EXP)")

    def lower(self, c: LowerContext) -> None:
        if is_quant(c.input(0)):
            via_float(c, c.input_operand(0), c.output_operand(0), lambda f, g: self._float(c, f, g))
        else:
            self._float(c, c.input_operand(0), c.output_operand(0))

    def _float(self, c: LowerContext, x: int, out: int) -> None:
        none = c.i32(FuseCode.NONE)

        def op(kind: OperationType, *args: int) -> int:
            t = c.temp_like(out)
            fused = (none,) if kind in (OperationType.ADD, OperationType.SUB, OperationType.MUL,
                                        OperationType.DIV) else ()
            c.emit(kind, [*args, *fused], [t])
            return t

        def k(v: float) -> int:
            return scalar_tensor(c, v)

        if c.options.approximate:
            x3 = op(OperationType.MUL, op(OperationType.MUL, x, x), x)
            inner = op(OperationType.ADD, x, op(OperationType.MUL, x3, k(0.044715)))
            th = op(OperationType.TANH, op(OperationType.MUL, inner, k(float(np.sqrt(2.0 / np.pi)))))
            half_x = op(OperationType.MUL, x, k(0.5))
            c.emit(OperationType.MUL, [half_x, op(OperationType.ADD, th, k(1.0)), none], [out])
            return
        a = op(OperationType.ABS, x)
        z = op(OperationType.MUL, a, k(float(1.0 / np.sqrt(2.0))))
        t = op(OperationType.DIV, k(1.0), op(OperationType.ADD, op(OperationType.MUL, z, k(self.P)), k(1.0)))
        poly = op(OperationType.MUL, t, k(self.A[4]))
        for coef in reversed(self.A[:4]):
            poly = op(OperationType.MUL, t, op(OperationType.ADD, poly, k(coef)))
        neg_z2 = op(OperationType.MUL, op(OperationType.MUL, z, z), k(-1.0))
        erf = op(OperationType.SUB, k(1.0), op(OperationType.MUL, poly, op(OperationType.EXP, neg_z2)))
        total = op(OperationType.ADD, x, op(OperationType.MUL, a, erf))
        c.emit(OperationType.MUL, [total, k(0.5), none], [out])
