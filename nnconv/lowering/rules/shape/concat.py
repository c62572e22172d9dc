"""Joining and splitting along an axis: CONCATENATION, PACK, UNPACK."""

from __future__ import annotations

from nnconv.lowering.common import check_int8
from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.driver_support import MISSING_FROM_ARMNN, NATIVE_PACK_ARMNN
from nnconv.lowering.registry import Rule, lowering_rule
from nnconv.lowering.rules._shape_common import (BASIC, BASIC_I32, FS, FSI, I32, I8, U8, check_data_movement,
                                                 check_same_quant, out_dims)
from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.rewrite.folds import shape as shape_folds
from nnconv.tflite.schema_enums import ActivationFunctionType, BuiltinOperator


_ACT_OPS = {ActivationFunctionType.RELU: OperationType.RELU,
            ActivationFunctionType.RELU_N1_TO_1: OperationType.RELU1,
            ActivationFunctionType.RELU6: OperationType.RELU6}


@lowering_rule(BuiltinOperator.CONCATENATION)
class Concatenation(Rule):
    """TFLite CONCATENATION(x0..xn-1) [axis, fused activation] -> NNAPI CONCATENATION(x0..xn-1, axis).

    The axis is normalized (negative axes need API 29 in NNAPI). NNAPI has no fused activation here: RELU,
    RELU_N1_TO_1 and RELU6 become a trailing RELU / RELU1 / RELU6 op. Quantized inputs whose scale or zero
    point differ from the output's are requantized by NNAPI from API 29 (before, all must match).
    """

    int8_shiftable = True
    fold = shape_folds.concatenation
    nnapi_ops = (OperationType.CONCATENATION, OperationType.RELU, OperationType.RELU1, OperationType.RELU6)
    dtypes = FS
    constraints = "rank <= 4; fused activation NONE/RELU/RELU1/RELU6; mixed quantization needs API 29"

    def check(self, c: CheckContext) -> None:
        out = c.output()
        if not c.require_dtype(out, BASIC, "output"):
            return
        c.require_rank(out, 4, 1, "output")
        for i, t in enumerate(c.inputs):
            if not c.require_dtype(t, (out.type,), f"input {i}"):
                return
        c.require_static_shapes()
        check_int8(c)
        axis = c.options.axis if c.options is not None else 0
        if not -out.rank <= axis < out.rank:
            c.refuse(Code.OPTION, f"axis {axis} is out of range for rank {out.rank}")
        act = c.options.fused_activation_function if c.options is not None else 0
        if act != ActivationFunctionType.NONE and act not in _ACT_OPS:
            c.refuse(Code.OPTION, f"fused activation {act} after CONCATENATION is not lowered")
        if out.type in (U8, I8) and any(t is not None and (t.quantization.scale, t.quantization.zero_point)
                                        != (out.quantization.scale, out.quantization.zero_point)
                                        for t in c.inputs):
            # hand-written: requantizing inputs is a rule of CONCATENATION's validator (level 3), not a spec fact
            c.require_api(29, "CONCATENATION of inputs quantized differently from the output")

    def lower(self, c: LowerContext) -> None:
        out_t = c.output()
        axis = (c.options.axis if c.options is not None else 0) % out_t.rank
        act = c.options.fused_activation_function if c.options is not None else 0
        ins = [c.input_operand(i) for i in range(len(c.op.inputs))]
        out = c.output_operand()
        dst = out if act == ActivationFunctionType.NONE else c.temp_like(out)
        c.emit(OperationType.CONCATENATION, [*ins, c.i32(axis)], [dst])
        if dst != out:
            c.emit(_ACT_OPS[act], [dst], [out])


@lowering_rule(BuiltinOperator.PACK)
class Pack(Rule):
    """TFLite PACK(x0..xn-1) [axis] -> NNAPI PACK(axis INT32, x0..xn-1) from feature level 6 (API 33);
    below, each input is RESHAPEd to insert the new size-1 axis and the results are CONCATENATED along it
    (API 27, so earlier than the delegate's 30; any axis, including the last; no int32)."""

    int8_shiftable = True
    fold = shape_folds.pack
    nnapi_ops = (OperationType.PACK, OperationType.RESHAPE, OperationType.CONCATENATION)
    dtypes = FSI
    constraints = "output rank <= 4; int32 needs API 33"
    driver_notes = (NATIVE_PACK_ARMNN,)

    def check(self, c: CheckContext) -> None:
        out = c.output()
        x = c.input(0)
        if not c.require_dtype(x, BASIC_I32):
            return
        c.require_rank(out, 4, what="output")
        for i, t in enumerate(c.inputs):
            if c.require_dtype(t, (x.type,), f"input {i}"):
                check_same_quant(c, t, out)
        c.require_static_shapes()
        check_int8(c)
        if x.type == I32:
            c.require_operation(OperationType.PACK, "PACK of int32 tensors (feature level 6)")

    def lower(self, c: LowerContext) -> None:
        out_t = c.output()
        axis = (c.options.axis if c.options is not None else 0) % out_t.rank
        ins = [c.input_operand(i) for i in range(len(c.op.inputs))]
        if c.api_level >= 33:
            c.emit(OperationType.PACK, [c.i32(axis), *ins], [c.output_operand()])
            return
        x = c.input(0)
        expanded = list(x.shape[:axis]) + [1] + list(x.shape[axis:])
        parts = []
        for src in ins:
            tmp = c.temp_like(src, expanded)
            c.emit(OperationType.RESHAPE, [src, c.i32_vector(expanded)], [tmp])
            parts.append(tmp)
        c.emit(OperationType.CONCATENATION, [*parts, c.i32(axis)], [c.output_operand()])


@lowering_rule(BuiltinOperator.UNPACK)
class Unpack(Rule):
    """TFLite UNPACK(input) [num, axis] -> one NNAPI STRIDED_SLICE per output taking index k of the axis
    with its shrink bit set, which removes the axis (API 28, earlier than the delegate's RESHAPE + SPLIT at
    30; any axis). int32 data, which STRIDED_SLICE lacks, uses SPLIT + RESHAPE per output (API 33, where
    RESHAPE takes TENSOR_INT32)."""

    fold = shape_folds.unpack
    nnapi_ops = (OperationType.STRIDED_SLICE, OperationType.SPLIT, OperationType.RESHAPE)
    min_api_level = 28
    dtypes = FSI
    constraints = "input rank 1..4; int32 needs API 33"
    driver_notes = (MISSING_FROM_ARMNN,)
    int8_shiftable = True

    def check(self, c: CheckContext) -> None:
        x = check_data_movement(c, BASIC_I32)
        if x is None:
            return
        c.require_rank(x, 4, 1)
        if x.type == I32:
            c.require_signature(OperationType.RESHAPE, OperandType.TENSOR_INT32,
                                "UNPACK of int32 tensors (SPLIT + RESHAPE of int32, feature level 6)")
        else:
            c.require_operation(OperationType.STRIDED_SLICE, "UNPACK (STRIDED_SLICE per output)")

    def lower(self, c: LowerContext) -> None:
        x = c.input(0)
        axis = (c.options.axis if c.options is not None else 0) % x.rank
        n = len(c.op.outputs)
        src = c.input_operand(0)
        if x.type != I32:
            full = (1 << x.rank) - 1 - (1 << axis)  # every other axis: whole range
            for k in range(n):
                begin = [0] * x.rank
                begin[axis] = k
                end = list(x.shape)
                end[axis] = k + 1
                c.emit(OperationType.STRIDED_SLICE,
                       [src, c.i32_vector(begin), c.i32_vector(end), c.i32_vector([1] * x.rank), c.i32(full),
                        c.i32(full), c.i32(1 << axis)], [c.output_operand(k)])
            return
        part_shape = list(x.shape)
        part_shape[axis] = 1
        parts = [src]
        if n > 1:
            parts = [c.temp_like(src, part_shape) for _ in range(n)]
            c.emit(OperationType.SPLIT, [src, c.i32(axis), c.i32(n)], parts)
        for k, part in enumerate(parts):
            c.emit(OperationType.RESHAPE, [part, c.i32_vector(out_dims(c.output(k)))], [c.output_operand(k)])
