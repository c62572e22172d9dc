"""Ops that change only the shape: RESHAPE, SQUEEZE, EXPAND_DIMS, and SHAPE (normally folded away, see `Shape`)."""

from __future__ import annotations

import numpy as np

from nnconv.lowering.context import STATIC_SHAPES_HINT, CheckContext, LowerContext
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.registry import Rule, lowering_rule
from nnconv.lowering.rules._shape_common import (BASIC, BASIC_I32, FS, FSI, I32, check_data_movement, const_ints,
                                                 out_dims, require_const_ints)
from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.rewrite.folds import shape as shape_folds
from nnconv.tflite.schema_enums import BuiltinOperator


def _resolve_shape(shape: list[int], size: int) -> list[int] | None:
    """TFLite's RESHAPE target with its single -1 resolved; None when no shape holds `size` elements."""
    if shape.count(-1) > 1 or any(d < -1 for d in shape):
        return None
    known = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
    if -1 in shape:
        if known == 0 or size % known:
            return None
        return [size // known if d == -1 else d for d in shape]
    return shape if known == size else None


@lowering_rule(BuiltinOperator.RESHAPE)
class Reshape(Rule):
    """TFLite RESHAPE(input, shape?) [new_shape option] -> NNAPI RESHAPE(input, shape TENSOR_INT32).

    The target comes from the constant (or folded) shape input, else from the `new_shape` option; its -1 is
    resolved here and checked against the output tensor, and NNAPI gets the resolved static shape (a rank-0
    result becomes [1], NNAPI's smallest tensor). TENSOR_INT32 data needs feature level 6 (API 33).
    """

    int8_shiftable = True
    fold = shape_folds.reshape
    nnapi_ops = (OperationType.RESHAPE, OperationType.CAST)
    stored_values_from = 0
    dtypes = FSI
    constraints = "constant or folded shape; rank <= 4; int32 data needs API 33"

    def check(self, c: CheckContext) -> None:
        if not c.require_inputs(1, 2):
            return
        x = check_data_movement(c, BASIC_I32, bitcast=True)
        if x is None:
            return
        if x.type == I32:
            c.require_signature(OperationType.RESHAPE, OperandType.TENSOR_INT32,
                                "RESHAPE of int32 data (feature level 6)")
        shape_t = c.input(1)
        if shape_t is not None:
            if not c.require_const(shape_t, "shape"):
                return
            target = const_ints(c, shape_t)
        elif c.options is not None and c.options.new_shape is not None:
            target = list(c.options.new_shape)
        else:
            c.refuse(Code.MISSING_OPERAND, "RESHAPE has neither a shape input nor a new_shape option")
            return
        size = int(np.prod(x.shape, dtype=np.int64))
        resolved = _resolve_shape(target, size)
        if resolved is None or resolved != list(c.output().shape):
            c.refuse(Code.OPERAND_VALUE, f"shape {target} does not give output shape {list(c.output().shape)} "
                     f"for input shape {list(x.shape)}")

    def lower(self, c: LowerContext) -> None:
        c.emit(OperationType.RESHAPE, [c.input_operand(0), c.i32_vector(out_dims(c.output()))], [c.output_operand()])


@lowering_rule(BuiltinOperator.SQUEEZE)
class Squeeze(Rule):
    """TFLite SQUEEZE(input) [squeeze_dims] -> NNAPI SQUEEZE(input, squeeze dims TENSOR_INT32) (API 28).

    The squeezed dimensions are always passed explicitly (every size-1 dimension when the option is
    empty), since an empty dims operand is not accepted at API 28. At API 27, and for a squeeze that removes
    nothing, it is a RESHAPE to the output shape: removing size-1 dimensions only relabels the data."""

    fold = shape_folds.squeeze
    nnapi_ops = (OperationType.SQUEEZE, OperationType.RESHAPE, OperationType.CAST)
    stored_values_from = 0
    dtypes = FS
    constraints = "rank <= 4; squeezed dimensions must be 1; RESHAPE at API 27"
    int8_shiftable = True

    def check(self, c: CheckContext) -> None:
        x = check_data_movement(c, BASIC, bitcast=True)
        if x is None:
            return
        dims = list(c.options.squeeze_dims or ()) if c.options is not None else []
        if any(not -x.rank <= d < x.rank or x.shape[d] != 1 for d in dims):
            c.refuse(Code.OPERAND_VALUE, f"squeeze_dims {dims} name dimensions of {list(x.shape)} that are not 1")

    def lower(self, c: LowerContext) -> None:
        x = c.input(0)
        dims = list(c.options.squeeze_dims or ()) if c.options is not None else []
        axes = sorted({d % x.rank for d in dims}) if dims else [k for k, d in enumerate(x.shape) if d == 1]
        if axes and c.api_level >= 28:
            c.emit(OperationType.SQUEEZE, [c.input_operand(0), c.i32_vector(axes)], [c.output_operand()])
        else:
            c.emit(OperationType.RESHAPE, [c.input_operand(0), c.i32_vector(out_dims(c.output()))],
                   [c.output_operand()])


@lowering_rule(BuiltinOperator.EXPAND_DIMS)
class ExpandDims(Rule):
    """TFLite EXPAND_DIMS(input, axis) -> NNAPI EXPAND_DIMS(input, axis INT32 scalar) (API 29).

    The constant axis (int32 or int64) is normalized to [0, rank] and passed as a scalar. Below API 29 a
    float or quantized tensor gets a RESHAPE to the output shape instead (inserting a size-1 dimension only
    relabels the data); int32 data needs EXPAND_DIMS (RESHAPE takes TENSOR_INT32 only from API 33)."""

    int8_shiftable = True
    fold = shape_folds.expand_dims
    nnapi_ops = (OperationType.EXPAND_DIMS, OperationType.RESHAPE)
    dtypes = FSI
    constraints = "constant axis; output rank <= 4; int32 needs API 29"

    def check(self, c: CheckContext) -> None:
        if not c.require_inputs(2):
            return
        x = check_data_movement(c, BASIC_I32)
        axis = require_const_ints(c, 1, "axis")
        if x is not None and axis is not None and (len(axis) != 1 or not -x.rank - 1 <= axis[0] <= x.rank):
            c.refuse(Code.OPERAND_VALUE, f"axis {axis} is out of range for rank {x.rank}")
        if x is not None and x.type == I32:
            c.require_signature(OperationType.EXPAND_DIMS, OperandType.TENSOR_INT32, "EXPAND_DIMS of int32 data")

    def lower(self, c: LowerContext) -> None:
        if c.api_level < 29:
            c.emit(OperationType.RESHAPE, [c.input_operand(0), c.i32_vector(out_dims(c.output()))],
                   [c.output_operand()])
            return
        axis = const_ints(c, c.input(1))[0] % (c.input(0).rank + 1)
        c.emit(OperationType.EXPAND_DIMS, [c.input_operand(0), c.i32(axis)], [c.output_operand()])


@lowering_rule(BuiltinOperator.SHAPE)
class Shape(Rule):
    """TFLite SHAPE(input) of a statically shaped tensor is a constant, which constant folding
    (rewrite/folding.py) substitutes for every consumer. This rule only runs when the op was not folded:
    its output is a model output (which the converter must compute) or folding is disabled. The known
    shape is then produced by NNAPI ADD(constant shape, 0) on TENSOR_INT32 (API 30), exact for any value.
    A dynamic input shape cannot be lowered (NNAPI has no SHAPE operation)."""

    fold = shape_folds.shape
    nnapi_ops = (OperationType.ADD,)
    min_api_level = 30
    dtypes = ("float32", "uint8", "int8", "int32", "bool")
    constraints = "static input shape (otherwise folded away); int32 output; unfolded needs API 30"

    def check(self, c: CheckContext) -> None:
        x = c.input(0)
        if x is None:
            c.refuse(Code.MISSING_OPERAND, "SHAPE has no input")
            return
        if x.has_dynamic_shape:
            c.refuse(Code.DYNAMIC_SHAPE, f"SHAPE of '{x.name}', whose shape {list(x.shape_signature or ())} is "
                     "only known at run time; NNAPI has no SHAPE operation", STATIC_SHAPES_HINT)
            return
        c.require_dtype(c.output(), (I32,), "output", hint="an int64 SHAPE result is only usable when folded")
        c.require_signature(OperationType.ADD, OperandType.TENSOR_INT32,
                            "an unfolded SHAPE (ADD of a constant on TENSOR_INT32)")

    def lower(self, c: LowerContext) -> None:
        emit_known_int32(c, c.input(0).shape)


def emit_known_int32(c: LowerContext, values: tuple[int, ...] | list[int]) -> None:
    """The op's int32 output, known at conversion, as NNAPI ADD(constant, 0) on TENSOR_INT32 (API 30): NNAPI
    has no operation that writes a constant into a model output ([1] for an empty shape)."""
    known = c.constant(OperandType.TENSOR_INT32, np.asarray(values or (1,), dtype=np.int32))
    zero = c.constant(OperandType.TENSOR_INT32, np.zeros(1, np.int32))
    c.emit(OperationType.ADD, [known, zero, c.i32(0)], [c.output_operand()])


@lowering_rule(BuiltinOperator.BROADCAST_ARGS)
class BroadcastArgs(Rule):
    """TFLite BROADCAST_ARGS(shape0, shape1): the shape the two broadcast to. Keras 3 writes it between
    SHAPEs and BROADCAST_TOs (its GroupNormalization's weighted moments); with static shapes both inputs are
    constants and folding substitutes the result for every consumer. This rule runs only when it was not
    folded: its output is a model output, then the known result is NNAPI ADD(constant, 0) on TENSOR_INT32
    (API 30), as for SHAPE. Shapes known only at run time cannot be lowered (NNAPI has no such operation)."""

    fold = shape_folds.broadcast_args
    nnapi_ops = (OperationType.ADD,)
    min_api_level = 30
    dtypes = ("int32",)
    constraints = "constant shapes that broadcast (otherwise folded away); int32 output; unfolded needs API 30"

    def check(self, c: CheckContext) -> None:
        shapes = [require_const_ints(c, i, f"shape {i}") for i in (0, 1)]
        if shapes[0] is None or shapes[1] is None:
            return
        try:
            np.broadcast_shapes(tuple(shapes[0]), tuple(shapes[1]))
        except ValueError:
            c.refuse(Code.OPERAND_VALUE, f"shapes {shapes[0]} and {shapes[1]} do not broadcast")
            return
        c.require_dtype(c.output(), (I32,), "output", hint="an int64 BROADCAST_ARGS result is only usable when folded")
        c.require_signature(OperationType.ADD, OperandType.TENSOR_INT32,
                            "an unfolded BROADCAST_ARGS (ADD of a constant on TENSOR_INT32)")

    def lower(self, c: LowerContext) -> None:
        emit_known_int32(c, np.broadcast_shapes(tuple(const_ints(c, c.input(0))), tuple(const_ints(c, c.input(1)))))
