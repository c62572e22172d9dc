"""Reductions and index reductions: MEAN, SUM, REDUCE_PROD, REDUCE_MAX, REDUCE_MIN, REDUCE_ANY, REDUCE_ALL,
ARG_MAX, ARG_MIN and TOPK_V2.

NNAPI's reductions take the axes as a constant TENSOR_INT32 (a scalar TFLite axis becomes a [1] vector) and
keep_dims as an INT32 scalar (MEAN) or a BOOL scalar (REDUCE_*). A TFLite result of rank 0 becomes a [1]
tensor. Quantized MEAN keeps the input's parameters in NNAPI; a TFLite output quantized differently is
computed in float (see `Mean`).
"""

from __future__ import annotations

import math

import numpy as np

from nnconv.lowering.common import check_int8
from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.driver_support import MISSING_FROM_ARMNN
from nnconv.lowering.registry import Rule, family_rule, lowering_rule
from nnconv.lowering.rules._arith import scalar_tensor
from nnconv.lowering.rules._quant_prod import int8_prod_deviation
from nnconv.lowering.rules._shape_common import (BASIC, BASIC_I32, BOOL, F32, I32, I64, check_data_movement,
                                                 check_same_quant, const_ints, quant_params, require_const_ints,
                                                 same_quant)
from nnconv.nnapi.enums import FuseCode, OperandType, OperationType
from nnconv.nnapi.quantization import quantize_multiplier
from nnconv.rewrite.folds import arithmetic as arithmetic_folds
from nnconv.tflite.ir import Tensor
from nnconv.tflite.schema_enums import BuiltinOperator, TensorType


def _check_axes(c: CheckContext, rank: int) -> None:
    axes = require_const_ints(c, 1, "axis")
    if axes is not None and any(not -rank <= a < rank for a in axes):
        c.refuse(Code.OPERAND_VALUE, f"axes {axes} are out of range for rank {rank}")
    elif axes is not None:
        _check_reduced_size(c, {a % rank for a in axes})


def _check_reduced_size(c: CheckContext, axes: set[int]) -> None:
    """The output holds one value per kept position of the input (TFLite sizes it so in Prepare): a corrupt
    declared output shape would otherwise divide the count of reduced values by zero in the lowering."""
    x, y = c.input(0), c.output()
    if x is None or x.has_dynamic_shape or y.has_dynamic_shape:
        return
    kept = math.prod(d for k, d in enumerate(x.shape) if k not in axes)
    if math.prod(y.shape) != kept:
        c.refuse(Code.OPERAND_VALUE, f"output '{y.name}' {list(y.shape)} holds {math.prod(y.shape)} values; "
                 f"reducing {list(x.shape)} over axes {sorted(axes)} gives {kept}")


def _keep_dims(c: CheckContext) -> bool:
    return bool(c.options.keep_dims) if c.options is not None else False


def _is_spatial_mean(c: CheckContext) -> bool:
    """A mean over H and W of a 4-D NHWC tensor (global average pooling), with equal quantization."""
    x = c.input(0)
    if x is None or x.rank != 4 or not c.is_const(c.input(1)):
        return False
    axes = {a % 4 for a in const_ints(c, c.input(1))}
    return axes == {1, 2} and (x.type == F32 or same_quant(x, c.output()))



def _check_float_or_quant_reduction(c: CheckContext) -> Tensor | None:
    """Checks shared by MEAN and SUM: (input, constant axes), float32 or 8-bit input with the output of the
    same dtype, rank 1..4, static shapes, the int8 policy and the axes. Returns the input, or None when the
    op is too malformed to check further."""
    if not c.require_inputs(2):
        return None
    x = c.input(0)
    if not c.require_dtype(x, BASIC):
        return None
    c.require_dtype(c.output(), (x.type,), "output")
    c.require_rank(x, 4, 1)
    c.require_static_shapes()
    check_int8(c)
    _check_axes(c, x.rank)
    return x


@lowering_rule(BuiltinOperator.MEAN)
class Mean(Rule):
    """TFLite MEAN(input, axis) [keep_dims] -> NNAPI MEAN(input, axes TENSOR_INT32, keep_dims INT32)
    (API 28, quantized too: the CTS has V1_1 quant8 MEAN cases, although the delegate waits for 29).

    At API 27 a mean over H and W of a 4-D NHWC tensor (global average pooling, e.g. squeeze-excite
    blocks) is AVERAGE_POOL_2D with a H x W VALID window, plus a RESHAPE to [N, C] without keep_dims; a
    quantized one (input and output quantized alike) is that at every level: NNAPI's quantized MEAN
    truncates the average where AVERAGE_POOL_2D rounds it (measured against TFLite on [7, 7, 16] maps: 1 LSB
    on ~50% of the outputs with MEAN, ~2% with AVERAGE_POOL_2D, whose rounding half up is close to, though
    not exactly, TFLite's requantized sum; on 2x2 maps TFLite's two roundings make ceil(acc / 4), up to
    half the outputs 1 LSB apart, which verify's rerun proves arithmetic only: parity/tflite_kernels.py's
    `int8_mean`, which recognizes this form).
    NNAPI's quantized MEAN keeps the input's scale and zero point (and truncates the average). When TFLite's
    output is quantized differently, requantizing that truncated result (the delegate's ADD) loses up to
    s_in / s_out output steps, so nnconv instead computes DEQUANTIZE -> float MEAN -> QUANTIZE into the
    output (API 29). For int8, the float mean then reproduces the integer arithmetic of TFLite's quantized
    mean (`_lower_int8_mean`), which double-rounds: it differed from the single float rounding by 1 LSB on
    ~5% of a Keras classifier's pooled features."""

    int8_shiftable = True
    nnapi_ops = (OperationType.MEAN, OperationType.DEQUANTIZE, OperationType.QUANTIZE,
                 OperationType.AVERAGE_POOL_2D, OperationType.RESHAPE, OperationType.MUL, OperationType.ADD,
                 OperationType.SUB, OperationType.FLOOR, OperationType.MINIMUM)
    dtypes = ("float32", "uint8", "int8")
    constraints = ("constant axes; rank <= 4; API 27 only for H,W means of 4-D tensors; differing output "
                   "quantization needs API 29")

    def check(self, c: CheckContext) -> None:
        x = _check_float_or_quant_reduction(c)
        if x is None:
            return
        if x.type != F32 and not (x.quantization.scale and c.output().quantization.scale):
            c.refuse(Code.QUANTIZATION, "quantized input and output need a scale")
            return
        if x.type != F32 and not same_quant(x, c.output()):
            c.require_operation((OperationType.DEQUANTIZE, OperationType.MEAN, OperationType.QUANTIZE),
                                "quantized MEAN with an output quantized differently from its input")
        elif not _is_spatial_mean(c):
            c.require_operation(OperationType.MEAN,
                                "MEAN (at API 27 only the H,W mean of a 4-D tensor, as AVERAGE_POOL_2D)")

    def lower(self, c: LowerContext) -> None:
        x, out_t = c.input(0), c.output()
        out = c.output_operand()
        if c.api_level < 28 or (x.type != F32 and _is_spatial_mean(c)):
            n, h, w, ch = x.shape
            pooled = out if _keep_dims(c) else c.temp_like(c.input_operand(0), [n, 1, 1, ch])
            c.emit(OperationType.AVERAGE_POOL_2D, [c.input_operand(0), c.i32(2), c.i32(1), c.i32(1), c.i32(w), c.i32(h),
                                                   c.i32(0)], [pooled])
            if pooled != out:
                c.emit(OperationType.RESHAPE, [pooled, c.i32_vector(c.info(out).dimensions)], [out])
            return
        axes = c.i32_vector(const_ints(c, c.input(1)))
        keep = c.i32(int(_keep_dims(c)))
        if x.type == F32 or same_quant(x, out_t):
            c.emit(OperationType.MEAN, [c.input_operand(0), axes, keep], [out])
            return
        x_f = c.temp(OperandType.TENSOR_FLOAT32, c.info(c.input_operand(0)).dimensions)
        c.emit(OperationType.DEQUANTIZE, [c.input_operand(0)], [x_f])
        mean_f = c.temp(OperandType.TENSOR_FLOAT32, c.info(out).dimensions)
        c.emit(OperationType.MEAN, [x_f, axes, keep], [mean_f])
        if x.type == TensorType.INT8:
            mean_f = _int8_mean_rounding(c, mean_f)
        c.emit(OperationType.QUANTIZE, [mean_f], [out])


def _int8_mean_rounding(c: LowerContext, mean_f: int) -> int:
    """The float mean of the dequantized input (= acc * s_in / n, acc = sum(q - zp_in)) turned into what TFLite's
    int8 MEAN computes, times s_out, so that the final QUANTIZE recovers its integer exactly.

    TFLite (reference kernels, and the optimized ones except for a 4-D H,W mean with keep_dims): M, s =
    QuantizeMultiplier(s_in / s_out); sh = min(floor(log2 n), 32, 31 + s); M' = (M << sh) // n; s' = s - sh;
    out = MultiplyByQuantizedMultiplier(acc, M', s') + zp_out. It rounds once in its saturating rounding
    doubling high multiply: r = floor(v + 0.5), v = acc * k, k = M' * 2^max(s', 0) / 2^31 (the nudge of a
    negative product, 1 - 2^30, sends negative ties towards zero: ties go up for both signs); and with s' < 0
    once more in its rounding divide by 2^-s': round(r * 2^s') half away from zero (r * 2^s' is exact).
    In float32, acc is recovered exactly by rounding mean * n / s_in, and v = acc * float32(k):
    - float32(k) == k: true ties (ratios of few significant bits) are exact ties in float32 too, rounded up;
    - float32(k) < k (or >): every float32 v is at most ~1e-7 relative below (above) the true one in magnitude,
      so a float32 v on an exact tie is a true value just past it (just short of it): rounded half away from
      zero (towards zero). A true tie is impossible then (it needs k of few significant bits). This is what
      collapses onto ties in practice: a ratio just off a simple one, like 0.1 / 0.01 in float32 scales."""
    c.explain("int8 mean, exact")
    x_t, out_t = c.input(0), c.output()
    s_in, s_out = float(np.float32(x_t.quantization.scale[0])), float(np.float32(out_t.quantization.scale[0]))
    n = math.prod(x_t.shape) // max(1, math.prod(out_t.shape))
    mult, shift = quantize_multiplier(s_in / s_out)
    sh = min(n.bit_length() - 1, 32, 31 + shift)
    mult2, shift2 = (mult << sh) // n, shift - sh
    dims = c.info(mean_f).dimensions

    def op(kind: OperationType, a: int, b: int | None = None, fused: bool = True,
           activation: FuseCode = FuseCode.NONE) -> int:
        t = c.temp(OperandType.TENSOR_FLOAT32, dims)
        c.emit(kind, [a] + ([] if b is None else [b]) + ([c.i32(activation)] if fused else []), [t])
        return t

    half, zero = scalar_tensor(c, 0.5), scalar_tensor(c, 0.0)

    def round_half_up(t: int) -> int:
        return op(OperationType.FLOOR, op(OperationType.ADD, t, half), fused=False)

    def round_half_away(t: int) -> int:
        """FLOOR(RELU(t + 0.5)) - FLOOR(RELU(0.5 - t)), the RELUs fused into the ADD and SUB: for t >= 0 the
        first term is floor(t + 0.5) and the second 0 (0.5 - t < 1); for t < 0 the first is 0 and the second
        floor(-t + 0.5)."""
        up = op(OperationType.FLOOR, op(OperationType.ADD, t, half, activation=FuseCode.RELU), fused=False)
        down = op(OperationType.FLOOR, op(OperationType.SUB, half, t, activation=FuseCode.RELU), fused=False)
        return op(OperationType.SUB, up, down)

    def round_half_to_zero(t: int) -> int:
        """FLOOR(MIN(t + 0.5, 0)) - FLOOR(MIN(0.5 - t, 0)): floor(t + 0.5) for t < -0.5, -floor(0.5 - t) =
        ceil(t - 0.5) for t > 0.5, 0 in between."""
        def part(a: int, b: int, kind: OperationType) -> int:
            return op(OperationType.FLOOR, op(OperationType.MINIMUM, op(kind, a, b), zero, fused=False),
                      fused=False)
        return op(OperationType.SUB, part(t, half, OperationType.ADD), part(half, t, OperationType.SUB))

    # acc is an integer and the float estimate lies within 0.5 of it (no tie): rounding recovers it exactly,
    # removing the dequantization error.
    acc = round_half_up(op(OperationType.MUL, mean_f, scalar_tensor(c, n / s_in)))
    k = mult2 / 2.0**31 * 2.0**max(shift2, 0)
    k32 = float(np.float32(k))
    v = op(OperationType.MUL, acc, scalar_tensor(c, k))
    r = round_half_up(v) if k32 == k else round_half_away(v) if k32 < k else round_half_to_zero(v)
    if shift2 < 0:
        r = round_half_away(op(OperationType.MUL, r, scalar_tensor(c, 2.0**shift2)))
    return op(OperationType.MUL, r, scalar_tensor(c, s_out))


class _Reduce(Rule):
    """TFLite <op>(input, axis) [keep_dims] -> NNAPI REDUCE_<op>(input, axes TENSOR_INT32, keep_dims BOOL)
    (API 29)."""

    min_api_level = 29
    nnapi_op: OperationType
    allowed: tuple = (F32,)

    def check(self, c: CheckContext) -> None:
        c.require_operation(self.nnapi_op)
        if not c.require_inputs(2):
            return
        x = check_data_movement(c, self.allowed)
        if x is None:
            return
        c.require_rank(x, 4, 1)
        _check_axes(c, x.rank)

    def lower(self, c: LowerContext) -> None:
        axes = c.i32_vector(const_ints(c, c.input(1)))
        c.emit(self.nnapi_op, [c.input_operand(0), axes, c.boolean(_keep_dims(c))], [c.output_operand()])


@lowering_rule(BuiltinOperator.SUM)
class Sum(_Reduce):
    """TFLite SUM(input, axis) [keep_dims] -> NNAPI REDUCE_SUM(input, axes TENSOR_INT32, keep_dims BOOL)
    (API 29). NNAPI's REDUCE_SUM is float only, so a quantized SUM becomes DEQUANTIZE -> REDUCE_SUM ->
    QUANTIZE into the output's parameters (all API 29): the float sum of the dequantized values is
    requantized once, as TFLite's int32-accumulating kernel does (within one output step)."""

    int8_shiftable = True
    fold = arithmetic_folds.sum_
    nnapi_ops = (OperationType.REDUCE_SUM, OperationType.DEQUANTIZE, OperationType.QUANTIZE)
    nnapi_op = OperationType.REDUCE_SUM
    allowed = BASIC
    dtypes = ("float32", "uint8", "int8")
    constraints = "constant axes; rank <= 4; quantized through float"

    def check(self, c: CheckContext) -> None:
        c.require_operation(OperationType.REDUCE_SUM)
        x = _check_float_or_quant_reduction(c)
        if x is None:
            return

    def lower(self, c: LowerContext) -> None:
        if c.input(0).type == F32:
            super().lower(c)
        else:
            _lower_via_float(c, OperationType.REDUCE_SUM)


def _lower_via_float(c: LowerContext, op: OperationType) -> None:
    """A quantized reduction as DEQUANTIZE -> float `op` (REDUCE_SUM / REDUCE_PROD) -> QUANTIZE (API 29)."""
    axes = c.i32_vector(const_ints(c, c.input(1)))
    x_f = c.temp(OperandType.TENSOR_FLOAT32, c.info(c.input_operand(0)).dimensions)
    c.emit(OperationType.DEQUANTIZE, [c.input_operand(0)], [x_f])
    reduced = c.temp(OperandType.TENSOR_FLOAT32, c.info(c.output_operand()).dimensions)
    c.emit(op, [x_f, axes, c.boolean(_keep_dims(c))], [reduced])
    c.emit(OperationType.QUANTIZE, [reduced], [c.output_operand()])


@lowering_rule(BuiltinOperator.REDUCE_PROD)
class ReduceProd(_Reduce):
    """TFLite REDUCE_PROD(input, axis) [keep_dims] -> NNAPI REDUCE_PROD(input, axes TENSOR_INT32, keep_dims
    BOOL) (API 29), float only in NNAPI.

    int8 becomes DEQUANTIZE -> REDUCE_PROD -> QUANTIZE into the output's parameters (API 29), the exact
    product rounded once. TFLite's kernel rounds after every multiplication instead (`_quant_prod`), so the
    two agree within 1 LSB only while those roundings cannot add up to a step: the rule computes that bound
    from the input zero point, the scales and the count n of values reduced per output, and refuses beyond
    it (and where TFLite's int32 partial products may wrap). Measured against TFLite (4,096 rows each):
    n = 2 and n = 3 within 1 LSB where the bound holds (0.11 and 0.62); n = 4 up to 8 LSB off and n = 8 up
    to 255 (wrapped), both refused by it. One value per output (n = 1) is refused too: TFLite's optimized
    kernel then copies the stored values and its reference kernel requantizes them."""

    int8_shiftable = True
    fold = arithmetic_folds.reduce_prod
    nnapi_ops = (OperationType.REDUCE_PROD, OperationType.DEQUANTIZE, OperationType.QUANTIZE)
    nnapi_op = OperationType.REDUCE_PROD
    allowed = (F32, TensorType.INT8)
    dtypes = ("float32", "int8")
    constraints = ("constant axes; rank <= 4; int8 through float where TFLite's per-step rounding stays within "
                   "1 LSB of it (few values per output)")

    def check(self, c: CheckContext) -> None:
        if c.input(0) is None or c.input(0).type != TensorType.INT8:
            super().check(c)
            return
        c.require_operation((OperationType.DEQUANTIZE, OperationType.REDUCE_PROD, OperationType.QUANTIZE),
                            "int8 REDUCE_PROD (DEQUANTIZE, REDUCE_PROD, QUANTIZE)")
        x, y = _check_float_or_quant_reduction(c), c.output()
        if x is None or y.type != x.type or x.has_dynamic_shape or y.has_dynamic_shape:
            return
        if not (x.quantization.scale and y.quantization.scale):
            c.refuse(Code.QUANTIZATION, "int8 input and output need a scale")
            return
        n = math.prod(x.shape) // max(1, math.prod(y.shape))
        if n == 1:
            # measured: TFLite's optimized kernel copies the stored values, its reference kernel requantizes them
            c.refuse(Code.QUANTIZATION, "int8 REDUCE_PROD of one value per output: TFLite's optimized kernel "
                     "copies the stored values while its reference kernel requantizes them; no form matches both",
                     hint="drop the REDUCE_PROD over extent-1 axes (a RESHAPE at most)")
            return
        (s_in, zp), (s_out, _) = quant_params(x), quant_params(y)
        bound, wraps = int8_prod_deviation(zp, s_in, s_out, n)
        if wraps or bound >= 1.0:
            why = wraps or f"its roundings can move the result by up to {bound:.3g} output steps"
            c.refuse(Code.QUANTIZATION, f"int8 REDUCE_PROD of {n} values per output: TFLite rounds after each "
                     f"multiplication (by s_in / s_out^(1/{n}) = {s_in / s_out ** (1 / n):.3g}) and {why}, so the "
                     "float product (DEQUANTIZE, REDUCE_PROD, QUANTIZE) cannot stay within 1 LSB of it",
                     hint="keep the REDUCE_PROD in float when quantizing, or reduce fewer values per output")

    def lower(self, c: LowerContext) -> None:
        if c.input(0).type == F32:
            super().lower(c)
        else:
            _lower_via_float(c, OperationType.REDUCE_PROD)


@lowering_rule(BuiltinOperator.REDUCE_MAX)
class ReduceMax(_Reduce):
    """TFLite REDUCE_MAX(input, axis) [keep_dims] -> NNAPI REDUCE_MAX(input, axes TENSOR_INT32, keep_dims
    BOOL) (API 29). Quantized inputs and outputs must share their parameters. Below API 29 the maximum over
    H and W of a 4-D NHWC tensor is MAX_POOL_2D with a H x W VALID window (+ RESHAPE without keep_dims),
    exact for every type since a maximum only selects a stored value."""

    int8_shiftable = True
    fold = arithmetic_folds.reduce_max
    nnapi_ops = (OperationType.REDUCE_MAX, OperationType.MAX_POOL_2D, OperationType.RESHAPE)
    nnapi_op = OperationType.REDUCE_MAX
    min_api_level = 27
    allowed = BASIC
    dtypes = ("float32", "uint8", "int8")
    constraints = "constant axes; rank <= 4; same input/output quantization; below API 29 only H,W of 4-D"

    def check(self, c: CheckContext) -> None:
        x = c.input(0)
        spatial = (x is not None and x.rank == 4 and c.is_const(c.input(1))
                   and {a % 4 for a in const_ints(c, c.input(1))} == {1, 2})
        if spatial and c.api_level < 29:
            if not c.require_inputs(2):
                return
            check_data_movement(c, self.allowed)
            return
        super().check(c)

    def lower(self, c: LowerContext) -> None:
        if c.api_level >= 29:
            super().lower(c)
            return
        n, h, w, ch = c.input(0).shape
        out = c.output_operand()
        pooled = out if _keep_dims(c) else c.temp_like(c.input_operand(0), [n, 1, 1, ch])
        c.emit(OperationType.MAX_POOL_2D, [c.input_operand(0), c.i32(2), c.i32(1), c.i32(1), c.i32(w), c.i32(h),
                                           c.i32(0)],
               [pooled])
        if pooled != out:
            c.emit(OperationType.RESHAPE, [pooled, c.i32_vector(c.info(out).dimensions)], [out])


@lowering_rule(BuiltinOperator.REDUCE_MIN)
class ReduceMin(_Reduce):
    int8_shiftable = True
    fold = arithmetic_folds.reduce_min
    __doc__ = _Reduce.__doc__ + " Quantized inputs and outputs must share their parameters."
    nnapi_op = OperationType.REDUCE_MIN
    allowed = BASIC
    dtypes = ("float32", "uint8", "int8")
    constraints = "constant axes; rank <= 4; same input/output quantization"


# The boolean reductions: TENSOR_BOOL8 only.
_BOOL_REDUCE = {"allowed": (BOOL,), "dtypes": ("bool",), "constraints": "bool; constant axes; rank <= 4"}
ReduceAny = family_rule(_Reduce, BuiltinOperator.REDUCE_ANY, nnapi_op=OperationType.REDUCE_ANY,
                        doc_more=" On TENSOR_BOOL8.", driver_notes=(MISSING_FROM_ARMNN,), **_BOOL_REDUCE)
ReduceAll = family_rule(_Reduce, BuiltinOperator.REDUCE_ALL, nnapi_op=OperationType.REDUCE_ALL,
                        doc_more=" On TENSOR_BOOL8. Beyond the delegate, which does not lower REDUCE_ALL.",
                        beyond_delegate=True, **_BOOL_REDUCE)


def _check_indexed_input(c: CheckContext, op: OperationType) -> Tensor | None:
    """ARG_MAX / ARG_MIN / TOPK_V2 (API 29): the input and a second operand, the input float32 / uint8 / int8 /
    int32 of rank 1..4. Returns the input, None when the checks cannot go on."""
    c.require_operation(op)
    if not c.require_inputs(2):
        return None
    x = c.input(0)
    if not c.require_dtype(x, BASIC_I32):
        return None
    c.require_rank(x, 4, 1)
    return x


class _ArgReduce(Rule):
    """TFLite ARG_MAX / ARG_MIN(input, axis) [output_type] -> NNAPI ARGMAX / ARGMIN(input, axis INT32
    scalar) (API 29). NNAPI's output is TENSOR_INT32; TensorFlow's default int64 output is carried as
    TENSOR_INT32 too (indices always fit; the delegate refuses it), converted back to int64 at the model
    boundary."""

    int8_shiftable = True
    min_api_level = 29
    dtypes = ("float32", "uint8", "int8", "int32")
    constraints = "constant axis; rank <= 4"
    nnapi_op: OperationType

    def check(self, c: CheckContext) -> None:
        x = _check_indexed_input(c, self.nnapi_op)
        if x is None:
            return
        c.require_dtype(c.output(), (I32, I64), "output")
        c.require_static_shapes()
        check_int8(c)
        axis = require_const_ints(c, 1, "axis")
        if axis is not None and (len(axis) != 1 or not -x.rank <= axis[0] < x.rank):
            c.refuse(Code.OPERAND_VALUE, f"axis {axis} must be one axis of a rank-{x.rank} tensor")

    def lower(self, c: LowerContext) -> None:
        axis = const_ints(c, c.input(1))[0] % c.input(0).rank
        c.emit(self.nnapi_op, [c.input_operand(0), c.i32(axis)], [c.output_operand()])


ArgMax = family_rule(_ArgReduce, BuiltinOperator.ARG_MAX, nnapi_op=OperationType.ARGMAX)


ArgMin = family_rule(_ArgReduce, BuiltinOperator.ARG_MIN, nnapi_op=OperationType.ARGMIN)


@lowering_rule(BuiltinOperator.TOPK_V2)
class TopKV2(Rule):
    """TFLite TOPK_V2(input, k) -> NNAPI TOPK_V2(input, k INT32 scalar) -> (values, indices TENSOR_INT32)
    (API 29). Both search the last axis; equal values keep the lower index first."""

    int8_shiftable = True
    nnapi_ops = (OperationType.TOPK_V2,)
    min_api_level = 29
    dtypes = ("float32", "uint8", "int8", "int32")
    constraints = "constant k; int32 indices; rank <= 4"
    driver_notes = (MISSING_FROM_ARMNN,)

    def check(self, c: CheckContext) -> None:
        x = _check_indexed_input(c, OperationType.TOPK_V2)
        if x is None:
            return
        check_same_quant(c, x, c.output(0), "values")
        c.require_dtype(c.output(1), (I32,), "indices")
        c.require_static_shapes()
        check_int8(c)
        k = require_const_ints(c, 1, "k")
        if k is not None and (len(k) != 1 or not 1 <= k[0] <= x.shape[-1]):
            c.refuse(Code.OPERAND_VALUE, f"k={k} must be in [1, {x.shape[-1]}]")

    def lower(self, c: LowerContext) -> None:
        k = const_ints(c, c.input(1))[0]
        c.emit(OperationType.TOPK_V2, [c.input_operand(0), c.i32(k)], [c.output_operand(0), c.output_operand(1)])
