"""Ops that repeat values: TILE, FILL, BROADCAST_TO."""

from __future__ import annotations

import numpy as np

from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.driver_support import MISSING_FROM_ARMNN
from nnconv.lowering.registry import Rule, lowering_rule
from nnconv.lowering.rules._shape_common import (BASIC, BASIC_I32, F32, FS, FSI, I32, check_data_movement, const_ints,
                                                 out_dims, require_const_ints)
from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.rewrite.folds import shape as shape_folds
from nnconv.tflite.schema_enums import BuiltinOperator


def concat_tile(c: LowerContext, src: int, dims: list[int], reps: list[int]) -> None:
    """Tiles `src` (of shape `dims`) into the op's output with one CONCATENATION of m copies per axis
    repeated m > 1 times (API 27): tiling an axis m times is concatenating m copies along it."""
    axes = [k for k, m in enumerate(reps) if m > 1]
    dims = list(dims)
    for n, k in enumerate(axes):
        dims[k] *= reps[k]
        dst = c.output_operand() if n == len(axes) - 1 else c.temp_like(src, dims)
        c.emit(OperationType.CONCATENATION, [src] * reps[k] + [c.i32(k)], [dst])
        src = dst


@lowering_rule(BuiltinOperator.TILE)
class Tile(Rule):
    """TFLite TILE(input, multiples) -> NNAPI TILE(input, multiples TENSOR_INT32) (API 29).

    Below API 29 (float and quantized): one CONCATENATION of m copies per axis tiled m > 1 times
    (`concat_tile`), which is the definition of tiling. int32 needs TILE."""

    fold = shape_folds.tile
    nnapi_ops = (OperationType.TILE, OperationType.CONCATENATION, OperationType.CAST)
    stored_values_from = 0
    dtypes = FSI
    constraints = "constant multiples; rank <= 4; int32 needs API 29"
    driver_notes = (MISSING_FROM_ARMNN,)
    int8_shiftable = True

    def check(self, c: CheckContext) -> None:
        if not c.require_inputs(2):
            return
        x = check_data_movement(c, BASIC_I32, bitcast=True)
        reps = require_const_ints(c, 1, "multiples")
        if x is not None and reps is not None and (len(reps) != x.rank or min(reps, default=1) < 1):
            c.refuse(Code.OPERAND_VALUE, f"multiples {reps} must be {x.rank} positive values")
        if x is not None and x.type == I32:
            c.require_signature(OperationType.TILE, OperandType.TENSOR_INT32, "TILE of int32 data")
        if reps is not None and all(m == 1 for m in reps):
            c.require_operation(OperationType.TILE, "TILE by all-ones multiples (an identity TILE)")

    def lower(self, c: LowerContext) -> None:
        reps = const_ints(c, c.input(1))
        if c.api_level >= 29:
            c.emit(OperationType.TILE, [c.input_operand(0), c.i32_vector(reps)], [c.output_operand()])
        else:
            concat_tile(c, c.input_operand(0), list(c.input(0).shape), reps)


@lowering_rule(BuiltinOperator.FILL)
class Fill(Rule):
    """TFLite FILL(dims, value) -> NNAPI FILL(dims TENSOR_INT32, value scalar) (API 30).

    With constant inputs FILL is normally folded; this lowering serves model outputs and --no-fold."""

    fold = shape_folds.fill
    nnapi_ops = (OperationType.FILL,)
    min_api_level = 30
    dtypes = ("int32", "int64")
    constraints = "constant dims and value; float32 or int32 value"

    def check(self, c: CheckContext) -> None:
        c.require_operation(OperationType.FILL)
        if not c.require_inputs(2):
            return
        dims = require_const_ints(c, 0, "dims")
        v = c.input(1)
        if c.require_dtype(v, (F32, I32), "value") and c.require_const(v, "value"):
            c.require(np.asarray(c.const_value(v)).size == 1, Code.OPERAND_VALUE, "value must be a scalar")
        c.require_rank(c.output(), 4, what="output")
        if dims is not None and any(d < 1 for d in dims):
            c.refuse(Code.OPERAND_VALUE, f"dims {dims} must be positive")

    def lower(self, c: LowerContext) -> None:
        v = np.asarray(c.const_value(c.input(1))).reshape(-1)[0]
        scalar = c.f32(float(v)) if c.input(1).type == F32 else c.i32(int(v))
        c.emit(OperationType.FILL, [c.i32_vector(out_dims(c.output())), scalar], [c.output_operand()])


@lowering_rule(BuiltinOperator.BROADCAST_TO)
class BroadcastTo(Rule):
    """TFLite BROADCAST_TO(input, shape) -> RESHAPE (when the rank grows) + TILE (API 29), or + one
    CONCATENATION per broadcast axis below API 29 (API 27). Beyond the delegate.

    Identity: broadcasting [d_0..d_k] to [D_0..D_n] equals reshaping to [1]*(n-k) + [d_0..d_k] (a pure
    relabelling) and tiling each axis by D_i / d_i, which is D_i where d_i = 1 and 1 where d_i = D_i."""

    int8_shiftable = True
    fold = shape_folds.broadcast_to
    nnapi_ops = (OperationType.RESHAPE, OperationType.TILE, OperationType.CONCATENATION)
    dtypes = FS
    beyond_delegate = True
    constraints = "static shapes; output rank <= 4; something to broadcast below API 29"

    def check(self, c: CheckContext) -> None:
        x = check_data_movement(c, BASIC)
        out = c.output()
        if x is None or x.rank > out.rank:
            return
        padded = [1] * (out.rank - x.rank) + list(x.shape)
        if any(d != 1 and d != o for d, o in zip(padded, out.shape)):
            c.refuse(Code.OPERAND_VALUE, f"shape {list(x.shape)} does not broadcast to {list(out.shape)}")
        elif list(padded) == list(out.shape) and out.rank == x.rank:
            c.require_operation(OperationType.TILE, "BROADCAST_TO its own shape (an identity TILE)")

    def lower(self, c: LowerContext) -> None:
        x, out = c.input(0), c.output()
        padded = [1] * (out.rank - x.rank) + list(x.shape)
        reps = [o // d for o, d in zip(out.shape, padded)]
        src = c.input_operand(0)
        if out.rank != x.rank:
            if all(m == 1 for m in reps):
                c.emit(OperationType.RESHAPE, [src, c.i32_vector(padded)], [c.output_operand()])
                return
            tmp = c.temp_like(src, padded)
            c.emit(OperationType.RESHAPE, [src, c.i32_vector(padded)], [tmp])
            src = tmp
        if c.api_level >= 29:
            c.emit(OperationType.TILE, [src, c.i32_vector(reps)], [c.output_operand()])
        else:
            concat_tile(c, src, padded, reps)
