"""Gathers: GATHER and GATHER_ND.

GATHER_ND has no NNAPI operation; with constant indices it is an exact composition (beyond the delegate):
for params of shape [d_0..d_{n-1}] and indices of shape [..., k],
    gather_nd(params, idx) == gather(reshape(params, [d_0*..*d_{k-1}, d_k..]), axis 0, ravel(idx))
where ravel(i_0..i_{k-1}) = ((i_0*d_1 + i_1)*d_2 + ...) is the row-major flat index: the reshape only
relabels the first k axes as one, and row-major flattening maps each k-tuple to the same element.
"""

from __future__ import annotations

import numpy as np

from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.driver_support import MISSING_FROM_ARMNN
from nnconv.lowering.registry import Rule, lowering_rule
from nnconv.lowering.rules._shape_common import BASIC_I32, I32, INDEX_TYPES, check_data_movement, out_dims
from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.rewrite.folds import shape as shape_folds
from nnconv.tflite.schema_enums import BuiltinOperator


MAX_SLICE_RUNS = 8  # below API 29, a constant gather costs one STRIDED_SLICE per run of indices


def index_runs(indices: list[int]) -> list[tuple[int, int, int]]:
    """Splits indices into arithmetic runs (start, count, step): [2, 1, 0, 5, 7] -> (2, 3, -1), (5, 2, 2)."""
    runs: list[tuple[int, int, int]] = []
    k = 0
    while k < len(indices):
        start = indices[k]
        if k + 1 < len(indices) and indices[k + 1] != start:
            step = indices[k + 1] - start
            count = 2
            while k + count < len(indices) and indices[k + count] - indices[k + count - 1] == step:
                count += 1
        else:
            step, count = 1, 1
        runs.append((start, count, step))
        k += count
    return runs


def _const_gather_runs(c: CheckContext) -> list[tuple[int, int, int]] | None:
    idx = c.input(1)
    if idx is None or not c.is_const(idx) or idx.rank > 1:
        return None
    return index_runs([int(v) for v in np.asarray(c.const_value(idx)).reshape(-1)])


@lowering_rule(BuiltinOperator.GATHER)
class Gather(Rule):
    """TFLite GATHER(params, indices) [axis, batch_dims] -> NNAPI GATHER(input, axis INT32, indices)
    (API 29). NNAPI's operand order puts the axis between input and indices; batch_dims must be 0; indices
    must be int32 (or constant int64 fitting int32).

    Rank-0 indices (TensorFlow's `x[i]` with a tensor i, e.g. in WHILE bodies) travel as NNAPI [1]
    tensors: GATHER then keeps the axis with extent 1 and a RESHAPE drops it (int32 params then need
    API 33, where RESHAPE takes TENSOR_INT32).

    At API 28, constant indices of rank 0 or 1 on float or quantized params become one STRIDED_SLICE per
    arithmetic run of indices (e.g. [2, 1, 0] is one slice with stride -1; a scalar index is a shrunk
    slice), CONCATENATED along the axis: the same elements in the same order (at most 8 runs)."""

    int8_shiftable = True
    fold = shape_folds.gather
    nnapi_ops = (OperationType.GATHER, OperationType.RESHAPE, OperationType.STRIDED_SLICE,
                 OperationType.CONCATENATION, OperationType.CAST)
    stored_values_from = 0
    min_api_level = 28
    dtypes = ("float32", "uint8", "int8", "int32")
    constraints = "batch_dims 0; indices rank <= 4; rank <= 4; API 28 only for few constant index runs"
    driver_notes = (MISSING_FROM_ARMNN,)

    def check(self, c: CheckContext) -> None:
        if not c.require_inputs(2):
            return
        x = check_data_movement(c, BASIC_I32, bitcast=True)
        idx = c.input(1)
        if not c.require_dtype(idx, INDEX_TYPES, "indices") or x is None:
            return
        if c.nnapi_type(idx) is None:
            c.refuse(Code.DTYPE, "non-constant int64 indices have no NNAPI type", "use int32 indices")
        c.require_rank(idx, 4, 0, "indices")
        runs = _const_gather_runs(c)
        if c.api_level < 29:
            if x.type == I32 or runs is None or len(runs) > MAX_SLICE_RUNS:
                c.require_operation(OperationType.GATHER, "GATHER (below API 29 only a few runs of constant indices on "
                                    "float or quantized data, as STRIDED_SLICEs)")
            else:
                c.require_operation((OperationType.STRIDED_SLICE, OperationType.CONCATENATION),
                                    "GATHER of constant indices (STRIDED_SLICE + CONCATENATION)")
        if idx.rank == 0 and x.type == I32:
            c.require_signature(OperationType.RESHAPE, OperandType.TENSOR_INT32,
                                "GATHER of int32 params with scalar indices (RESHAPE of int32)")
        o = c.options
        axis = o.axis if o is not None else 0
        if not -x.rank <= axis < x.rank:
            c.refuse(Code.OPTION, f"axis {axis} is out of range for rank {x.rank}")
            return
        if o is not None and o.batch_dims != 0:
            c.refuse(Code.OPTION, f"batch_dims={o.batch_dims}; NNAPI GATHER has no batch dimensions")
        if c.is_const(idx):
            v = np.asarray(c.const_value(idx))
            if v.size and (v.min() < 0 or v.max() >= x.shape[axis]):
                c.refuse(Code.OPERAND_VALUE, "constant indices are out of range")

    def lower(self, c: LowerContext) -> None:
        x = c.input(0)
        axis = (c.options.axis if c.options is not None else 0) % x.rank
        if c.api_level < 29:
            self._lower_slices(c, axis)
            return
        if c.input(1).rank > 0:
            c.emit(OperationType.GATHER, [c.input_operand(0), c.i32(axis), c.input_operand(1)], [c.output_operand()])
            return
        kept = list(x.shape)
        kept[axis] = 1
        tmp = c.temp_like(c.input_operand(0), kept)
        c.emit(OperationType.GATHER, [c.input_operand(0), c.i32(axis), c.input_operand(1)], [tmp])
        c.emit(OperationType.RESHAPE, [tmp, c.i32_vector(out_dims(c.output()))], [c.output_operand()])

    @staticmethod
    def _lower_slices(c: LowerContext, axis: int) -> None:
        x = c.input(0)
        runs = _const_gather_runs(c) or []
        shrink = c.input(1).rank == 0
        others = (1 << x.rank) - 1 - (1 << axis)  # every other axis: whole range via the masks
        parts = []
        for start, count, step in runs:
            end = start + count * step
            end_mask = others | ((1 << axis) if end < 0 else 0)  # a run down to index 0 ends "at the end"
            begin, stop, strides = [0] * x.rank, [0] * x.rank, [1] * x.rank
            begin[axis], stop[axis], strides[axis] = start, max(end, 0), step
            dims = list(x.shape)
            dims[axis] = count
            dst = c.output_operand() if len(runs) == 1 else c.temp_like(c.input_operand(0), dims)
            c.emit(OperationType.STRIDED_SLICE,
                   [c.input_operand(0), c.i32_vector(begin), c.i32_vector(stop), c.i32_vector(strides), c.i32(others),
                    c.i32(end_mask), c.i32((1 << axis) if shrink else 0)], [dst])
            parts.append(dst)
        if len(parts) > 1:
            c.emit(OperationType.CONCATENATION, [*parts, c.i32(axis)], [c.output_operand()])


@lowering_rule(BuiltinOperator.GATHER_ND)
class GatherNd(Rule):
    """TFLite GATHER_ND(params, indices [..., k]) with constant indices -> RESHAPE(params, flattened first k
    axes) + GATHER(axis 0, constant flat indices) (API 29; module docstring for the identity). With k = 1
    the RESHAPE is skipped. Beyond the delegate."""

    int8_shiftable = True
    fold = shape_folds.gather_nd
    nnapi_ops = (OperationType.RESHAPE, OperationType.GATHER)
    min_api_level = 29
    dtypes = ("float32", "uint8", "int8", "int32")
    beyond_delegate = True
    constraints = "constant in-range indices; rank <= 4; int32 params with k > 1 need API 33"

    def check(self, c: CheckContext) -> None:
        c.require_operation((OperationType.RESHAPE, OperationType.GATHER), "GATHER_ND (RESHAPE + GATHER)")
        if not c.require_inputs(2):
            return
        x = check_data_movement(c, BASIC_I32)
        idx = c.input(1)
        if not c.require_dtype(idx, INDEX_TYPES, "indices") or not c.require_const(idx, "indices") or x is None:
            return
        v = np.asarray(c.const_value(idx))
        if v.ndim < 1 or v.shape[-1] < 1 or v.shape[-1] > x.rank:
            c.refuse(Code.OPERAND_VALUE, f"indices of shape {list(v.shape)} do not index rank {x.rank}")
            return
        k = v.shape[-1]
        if v.size and ((v < 0).any() or (v >= np.asarray(x.shape[:k])).any()):
            c.refuse(Code.OPERAND_VALUE, "constant indices are out of range")
        if v.ndim == 1:
            c.refuse(Code.RANK, "indices of rank 1 give a GATHER with scalar indices, which NNAPI lacks")
        if k > 1 and x.type == I32:
            c.require_signature(OperationType.RESHAPE, OperandType.TENSOR_INT32,
                                "GATHER_ND of int32 params (RESHAPE of int32, feature level 6)")

    def lower(self, c: LowerContext) -> None:
        x = c.input(0)
        v = np.asarray(c.const_value(c.input(1))).astype(np.int64)
        k = v.shape[-1]
        flat = np.ravel_multi_index(tuple(np.moveaxis(v, -1, 0)), x.shape[:k]).astype(np.int32)
        src = c.input_operand(0)
        if k > 1:
            shape = [int(np.prod(x.shape[:k]))] + list(x.shape[k:])
            tmp = c.temp_like(src, shape)
            c.emit(OperationType.RESHAPE, [src, c.i32_vector(shape)], [tmp])
            src = tmp
        indices = c.constant(OperandType.TENSOR_INT32, flat.reshape(v.shape[:-1]))
        c.emit(OperationType.GATHER, [src, c.i32(0), indices], [c.output_operand()])
