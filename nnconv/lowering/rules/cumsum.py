"""CUMSUM: a running sum along one axis, as a matrix product with a constant triangular matrix."""

from __future__ import annotations

import math

import numpy as np

from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.registry import Rule, lowering_rule
from nnconv.lowering.rules._arith import F32, I32
from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.tflite.schema_enums import BuiltinOperator

# The triangular matrix holds length^2 float32 values: beyond this axis length it would outweigh the model.
MAX_CUMSUM_LENGTH = 1024


def cumsum_matrix(length: int, exclusive: bool, reverse: bool) -> np.ndarray:
    """FULLY_CONNECTED weights [out, in] of a running sum over `length` elements: out[i] = sum of in[j] over
    j <= i (j < i when exclusive), or over j >= i (j > i) when reversed."""
    i, j = np.indices((length, length))
    if reverse:
        keep = j > i if exclusive else j >= i
    else:
        keep = j < i if exclusive else j <= i
    return keep.astype(np.float32)


@lowering_rule(BuiltinOperator.CUMSUM)
class Cumsum(Rule):
    """TFLite CUMSUM(input, axis) with exclusive / reverse -> NNAPI FULLY_CONNECTED(x, W, 0) over the axis,
    W the constant 0/1 triangular matrix of `cumsum_matrix` (exclusive and reverse only change which
    entries are 1).

    FULLY_CONNECTED contracts the last axis: another axis is moved last by TRANSPOSE (API 28) and back
    afterwards; the [rows, length] result is reshaped to the input's shape. NNAPI has no cumulative op.
    Tolerance: every product is x * 1 or x * 0 (exact), only the order of the additions differs from
    TFLite's sequential loop, so the error is that of a float sum (within the float policy, rtol 1e-4 of
    the range). TensorFlow writes int8 CUMSUM as DEQUANTIZE -> float CUMSUM -> QUANTIZE, which lowers op by
    op; int32 / int64 CUMSUM is refused (FULLY_CONNECTED has no integer form).
    """

    nnapi_ops = (OperationType.FULLY_CONNECTED, OperationType.RESHAPE, OperationType.TRANSPOSE)
    dtypes = ("float32",)
    constraints = f"float32; constant axis; axis length <= {MAX_CUMSUM_LENGTH}; not the last axis from API 28"
    beyond_delegate = True

    def check(self, c: CheckContext) -> None:
        if not c.require_inputs(2):
            return
        x, axis_t = c.input(0), c.input(1)
        ok = c.require_dtype(x, (F32,)) & c.require_dtype(c.output(0), (F32,), "output")
        ok &= c.require_rank(x, 4, 1)
        c.require_static_shapes()
        if not (ok and c.require_dtype(axis_t, (I32,), "axis") and c.require_const(axis_t, "axis")):
            return
        axis = int(np.asarray(c.const_value(axis_t)).reshape(-1)[0]) % x.rank
        length = x.shape[axis]
        if length > MAX_CUMSUM_LENGTH:
            c.refuse(Code.OPERAND_VALUE, f"CUMSUM over {length} elements: its {length}x{length} triangular matrix would "
                     f"exceed the {MAX_CUMSUM_LENGTH}x{MAX_CUMSUM_LENGTH} bound")
        if axis != x.rank - 1:
            c.require_operation(OperationType.TRANSPOSE, "CUMSUM over an axis other than the last (TRANSPOSE)")

    def lower(self, c: LowerContext) -> None:
        x_t = c.input(0)
        o = c.options
        rank = x_t.rank
        axis = int(np.asarray(c.const_value(c.input(1))).reshape(-1)[0]) % rank
        length = x_t.shape[axis]
        weights = c.constant(OperandType.TENSOR_FLOAT32,
                             cumsum_matrix(length, bool(o and o.exclusive), bool(o and o.reverse)))
        bias = c.constant(OperandType.TENSOR_FLOAT32, np.zeros(length, np.float32))
        x, out = c.input_operand(0), c.output_operand(0)
        perm = [d for d in range(rank) if d != axis] + [axis]
        moved_shape = [x_t.shape[d] for d in perm]
        if axis != rank - 1:
            moved = c.temp_like(x, moved_shape)
            c.emit(OperationType.TRANSPOSE, [x, c.i32_vector(perm)], [moved])
            x = moved
        elif rank == 1:  # FULLY_CONNECTED takes rank 2 and up
            row = c.temp_like(x, (1, length))
            c.emit(OperationType.RESHAPE, [x, c.i32_vector([1, length])], [row])
            x = row
        rows = math.prod(moved_shape[:-1])
        summed = c.temp_like(out, (rows, length)) if rank != 2 or axis != 1 else out
        c.emit(OperationType.FULLY_CONNECTED, [x, weights, bias, c.i32(0)], [summed])
        if summed == out:
            return
        if axis == rank - 1:
            c.emit(OperationType.RESHAPE, [summed, c.i32_vector(x_t.shape)], [out])
            return
        unflat = c.temp_like(out, moved_shape)
        c.emit(OperationType.RESHAPE, [summed, c.i32_vector(moved_shape)], [unflat])
        c.emit(OperationType.TRANSPOSE, [unflat, c.i32_vector(list(np.argsort(perm)))], [out])
