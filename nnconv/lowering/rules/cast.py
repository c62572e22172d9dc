"""CAST between dtypes, and ZEROS_LIKE (a constant of its input's shape)."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.lowering.driver_support import NO_SIGNED_INT8_ARMNN
from nnconv.lowering.registry import Rule, lowering_rule
from nnconv.lowering.rules._arith import F16, F32, I32, U8, check_common, nnapi_dims, scalar_tensor
from nnconv.nnapi.enums import FuseCode, OperandType, OperationType
from nnconv.rewrite.folds import arithmetic as arithmetic_folds
from nnconv.tflite.schema_enums import BuiltinOperator, TensorType


@lowering_rule(BuiltinOperator.CAST)
class Cast(Rule):
    """TFLite CAST(x) -> NNAPI CAST(x) (API 29) among float32, float16, int32 and uint8.

    Both cast stored values (a uint8 tensor's quantization is ignored) and truncate floats toward zero.
    Out-of-range values differ: NNAPI clamps to [0, 255] when casting to uint8, TFLite wraps.
    NNAPI's CAST has no bool form; these are exact compositions (API 29):
    x -> bool is NOT_EQUAL(x, [0]) (the 0 stored with x's own quantization, so stored values compare);
    bool -> y is SELECT(x, ones, zeros) with constants of x's shape.
    CastOptions' in_data_type / out_data_type repeat the tensor types, which are what TFLite's kernel reads,
    so the rule reads the tensor types too. An int64 output that the int64-indices rewrite carries as int32
    (it is only read as indices) is a CAST to TENSOR_INT32."""

    fold = arithmetic_folds.cast
    nnapi_ops = (OperationType.CAST, OperationType.NOT_EQUAL, OperationType.SELECT, OperationType.LOGICAL_OR)
    min_api_level = 29
    dtypes = ("float32", "float16", "int32", "uint8", "bool")
    constraints = ("float32/float16/int32/uint8/bool, int64 indices as int32; values cast to uint8 are clamped "
                   "to [0, 255]")
    driver_notes = (NO_SIGNED_INT8_ARMNN,)

    def check(self, c: CheckContext) -> None:
        if not check_common(c, 1, (F32, F16, I32, U8, TensorType.BOOL), max_rank=None, same_type=False):
            return
        out = c.output(0)
        if not (out is not None and out.type == TensorType.INT64 and c.nnapi_type(out) is not None):
            c.require_dtype(out, (F32, F16, I32, U8, TensorType.BOOL), "output")
        c.require_operation(OperationType.CAST)

    def lower(self, c: LowerContext) -> None:
        x, out = c.input_operand(0), c.output_operand(0)
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
                c.require_signature(OperationType.MAXIMUM, OperandType.TENSOR_INT32,
                                    f"{self.op.name} into an int32 model output (MAXIMUM copy)")
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
            c.emit(OperationType.ADD, [const, scalar_tensor(c, -0.0), c.i32(FuseCode.NONE)], [c.output_operand(0)])
        else:
            lowest = c.constant(OperandType.TENSOR_INT32, np.asarray([-(1 << 31)], np.int32))
            c.emit(OperationType.MAXIMUM, [const, lowest], [c.output_operand(0)])


@lowering_rule(BuiltinOperator.ZEROS_LIKE)
class ZerosLike(_FillLike):
    __doc__ = _FillLike.__doc__.replace("OP", "ZEROS_LIKE")
    fold = arithmetic_folds.zeros_like
    fill_value = 0
