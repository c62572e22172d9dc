"""Slicing: STRIDED_SLICE, SLICE, SPLIT, SPLIT_V.

TFLite's STRIDED_SLICE masks are canonicalized here into NNAPI's dense form (one begin/end/stride per input
dimension with begin, end and shrink masks): an ellipsis expands to full ranges, a shrunk axis becomes
[b, b+1) with stride 1, and new axes (which insert size-1 dimensions and consume no input dimension) are
added afterwards by a RESHAPE of the slice, an exact composition since a reshape only relabels dimensions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.driver_support import MISSING_FROM_ARMNN, NO_FLOAT16_ARMNN
from nnconv.lowering.registry import Rule, lowering_rule
from nnconv.lowering.rules._shape_common import (BASIC, BASIC_I32, BOOL, I32, check_data_movement, const_ints,
                                                 out_dims, require_const_ints)
from nnconv.lowering.rules.shape.pad import gather_chain
from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.rewrite.folds import shape as shape_folds
from nnconv.tflite.ir import Tensor
from nnconv.tflite.schema_enums import BuiltinOperator


@dataclass
class DenseSlice:
    """NNAPI STRIDED_SLICE operands for one TFLite strided slice, plus the final (TFLite) output shape."""

    begin: list[int]
    end: list[int]
    strides: list[int]
    begin_mask: int
    end_mask: int
    shrink_mask: int
    slice_shape: list[int]  # NNAPI STRIDED_SLICE output (shrunk axes removed)
    final_shape: list[int]  # with the new axes inserted


def _axis_range(dim: int, b: int, e: int, s: int, bfull: bool, efull: bool) -> range:
    """The indices one axis of a strided slice takes (TensorFlow's clamping of begin and end)."""
    lo, hi = (0, dim) if s > 0 else (-1, dim - 1)
    start = (0 if s > 0 else dim - 1) if bfull else min(max(b + dim if b < 0 else b, lo), hi)
    stop = (dim if s > 0 else -1) if efull else min(max(e + dim if e < 0 else e, lo), hi)
    return range(start, stop, s)


def axis_ranges(shape: tuple[int, ...], d: DenseSlice) -> list[range]:
    """The indices a dense slice takes along each input axis (a shrunk axis: its one index)."""
    return [_axis_range(dim, d.begin[k], d.end[k], d.strides[k], bool(d.begin_mask >> k & 1),
                        bool(d.end_mask >> k & 1)) for k, dim in enumerate(shape)]


def dense_slice(shape: tuple[int, ...], begin: list[int], end: list[int], strides: list[int],
                opts) -> DenseSlice | str:
    """Canonicalizes TFLite's sparse strided-slice spec (TensorFlow's rules); a string explains a refusal."""
    n, rank = len(begin), len(shape)
    if not len(end) == len(strides) == n:
        return "begin, end and strides differ in length"
    ell, new = opts.ellipsis_mask, opts.new_axis_mask
    if bin(ell & ((1 << n) - 1)).count("1") > 1:
        return "more than one ellipsis"
    if opts.offset:
        end = [b + e for b, e in zip(begin, end)]
    # Each entry: ("dim", b, e, s, bfull, efull, shrink) consuming one input dim, or ("new",).
    entries: list[tuple] = []
    consuming = sum(1 for i in range(n) if not (ell >> i & 1) and not (new >> i & 1))
    seen_ellipsis = False
    for i in range(n):
        if ell >> i & 1:
            seen_ellipsis = True
            entries += [("dim", 0, 0, 1, True, True, False)] * (rank - consuming)
        elif new >> i & 1:
            if opts.shrink_axis_mask >> i & 1:
                return f"entry {i} is both a new axis and shrunk"
            entries.append(("new",))
        else:
            entries.append(("dim", begin[i], end[i], strides[i], bool(opts.begin_mask >> i & 1),
                            bool(opts.end_mask >> i & 1), bool(opts.shrink_axis_mask >> i & 1)))
    if not seen_ellipsis:
        entries += [("dim", 0, 0, 1, True, True, False)] * (rank - consuming)
    dims = [e for e in entries if e[0] == "dim"]
    if len(dims) != rank:
        return f"the slice spec addresses {len(dims)} dimensions of a rank-{rank} input"
    d = DenseSlice([], [], [], 0, 0, 0, [], [])
    k = 0
    for e in entries:
        if e[0] == "new":
            d.final_shape.append(1)
            continue
        _, b, en, s, bfull, efull, shrink = e
        dim = shape[k]
        if s == 0:
            return "a stride is zero"
        if shrink:
            # TFLite takes the element at begin (0 when begin-masked) and ignores end.
            start = 0 if bfull else (b + dim if b < 0 else b)
            if not 0 <= start < dim:
                return f"shrunk index {b} is outside an axis of extent {dim}"
            d.begin.append(start)
            d.end.append(start + 1)
            d.strides.append(1)
            d.shrink_mask |= 1 << k
        else:
            d.begin.append(b)
            d.end.append(en)
            d.strides.append(s)
            d.begin_mask |= int(bfull) << k
            d.end_mask |= int(efull) << k
            size = len(_axis_range(dim, b, en, s, bfull, efull))
            d.slice_shape.append(size)
            d.final_shape.append(size)
        k += 1
    return d


@lowering_rule(BuiltinOperator.STRIDED_SLICE)
class StridedSlice(Rule):
    """TFLite STRIDED_SLICE(input, begin, end, strides) [masks] -> NNAPI STRIDED_SLICE(input, begin, end,
    strides, begin_mask, end_mask, shrink_axis_mask) (API 28), + RESHAPE when new_axis_mask inserts axes.

    Ellipsis and new-axis masks, which NNAPI lacks, are canonicalized away (module docstring); `offset`
    (end relative to begin) is resolved from the constants. Empty results are refused.
    NNAPI's STRIDED_SLICE takes neither int32 nor bool8 (at any feature level); both are exact otherwise:
    - int32 (a loop bound read from a tensor in a WHILE condition): one SLICE(input, begin, size) when every
      stride is 1, else GATHER(input, axis, constant indices) along each axis not taken whole (API 29, both
      take TENSOR_INT32), + RESHAPE to the output's rank where shrunk or new axes change it (RESHAPE takes
      TENSOR_INT32 from feature level 6, API 33; a shrunk rank-1 input needs none: NNAPI holds TFLite's
      scalar output as [1]).
    - bool (an IF predicate read from an input): NNAPI has no CAST of TENSOR_BOOL8 to another type, so
      SELECT(input, 1, 0) widens it to uint8 (TENSOR_QUANT8_ASYMM, scale 1), the STRIDED_SLICE (+ RESHAPE)
      above slices that, and NOT_EQUAL(., 0) gives bool8 back (API 29)."""

    int8_shiftable = True
    fold = shape_folds.strided_slice
    nnapi_ops = (OperationType.STRIDED_SLICE, OperationType.RESHAPE, OperationType.CAST, OperationType.SLICE,
                 OperationType.GATHER, OperationType.SELECT, OperationType.NOT_EQUAL)
    stored_values_from = 0
    min_api_level = 28
    dtypes = ("float32", "uint8", "int8", "int32", "bool")
    constraints = ("constant begin/end/strides; rank <= 4; non-empty result; int32 and bool need API 29, "
                   "int32 changing rank API 33")
    driver_notes = (NO_FLOAT16_ARMNN,)

    def check(self, c: CheckContext) -> None:
        c.require_operation(OperationType.STRIDED_SLICE)
        if not c.require_inputs(4):
            return
        x = check_data_movement(c, (*BASIC, I32, BOOL), bitcast=True)
        vals = [require_const_ints(c, i, what) for i, what in ((1, "begin"), (2, "end"), (3, "strides"))]
        if x is None or any(v is None for v in vals):
            return
        d = dense_slice(x.shape, *vals, c.options)
        if isinstance(d, str):
            c.refuse(Code.OPERAND_VALUE, f"strided slice cannot be lowered: {d}")
        elif 0 in d.slice_shape:
            c.refuse(Code.OPERAND_VALUE, "the slice is empty; NNAPI has no zero-sized tensors")
        elif d.final_shape != list(c.output().shape):
            c.refuse(Code.OPERAND_VALUE, f"computed output shape {d.final_shape} differs from the output "
                     f"tensor's {list(c.output().shape)}")
        elif x.type == BOOL:
            c.require_operation((OperationType.SELECT, OperationType.STRIDED_SLICE, OperationType.NOT_EQUAL),
                                "STRIDED_SLICE of bool (SELECT to uint8, STRIDED_SLICE, NOT_EQUAL)")
        elif x.type == I32:
            c.require_operation((OperationType.SLICE, OperationType.GATHER),
                                "STRIDED_SLICE of int32 (SLICE or GATHER: NNAPI's STRIDED_SLICE has no int32)")
            if _int32_box_shape(x.shape, d) != out_dims(c.output()):
                c.require_signature(OperationType.RESHAPE, OperandType.TENSOR_INT32,
                                    "STRIDED_SLICE of int32 that changes the rank (RESHAPE of int32, feature "
                                    "level 6)")

    def lower(self, c: LowerContext) -> None:
        x = c.input(0)
        d = dense_slice(x.shape, *[const_ints(c, c.input(i)) for i in (1, 2, 3)], c.options)
        if x.type == I32:
            _lower_int32(c, d)
        elif x.type == BOOL:
            _lower_bool(c, d)
        else:
            _emit_strided_slice(c, c.input_operand(0), d, c.output_operand())


def _emit_strided_slice(c: LowerContext, src: int, d: DenseSlice, out: int) -> None:
    """NNAPI STRIDED_SLICE of `src` into `out` (+ RESHAPE when new axes change the rank)."""
    final = c.info(out).dimensions
    needs_reshape = d.final_shape != d.slice_shape and len(d.final_shape) != len(d.slice_shape or [1])
    dst = c.temp_like(src, d.slice_shape or [1]) if needs_reshape else out
    c.emit(OperationType.STRIDED_SLICE,
           [src, c.i32_vector(d.begin), c.i32_vector(d.end), c.i32_vector(d.strides),
            c.i32(d.begin_mask), c.i32(d.end_mask), c.i32(d.shrink_mask)], [dst])
    if needs_reshape:
        c.emit(OperationType.RESHAPE, [dst, c.i32_vector(list(final))], [out])


def _int32_box_shape(shape: tuple[int, ...], d: DenseSlice) -> list[int]:
    """The shape SLICE / GATHER leave an int32 slice in: the input's rank, shrunk axes of extent 1."""
    return [len(r) for r in axis_ranges(shape, d)]


def _lower_int32(c: LowerContext, d: DenseSlice) -> None:
    """int32: SLICE (unit strides) or a GATHER per axis, then RESHAPE if the rank changes (class docstring)."""
    x, out = c.input(0), c.output_operand()
    ranges = axis_ranges(x.shape, d)
    box = [len(r) for r in ranges]
    reshaped = box != list(c.info(out).dimensions)
    dst = c.temp_like(c.input_operand(0), box) if reshaped else out
    if all(r.step == 1 or len(r) == 1 for r in ranges):  # a box (the check refuses empty slices)
        c.emit(OperationType.SLICE, [c.input_operand(0), c.i32_vector([r[0] for r in ranges]), c.i32_vector(box)],
               [dst])
    else:
        taken = [(k, np.asarray(r, dtype=np.int32)) for k, r in enumerate(ranges) if r != range(x.shape[k])]
        gather_chain(c, taken, dst=dst)
    if reshaped:
        c.emit(OperationType.RESHAPE, [dst, c.i32_vector(list(c.info(out).dimensions))], [out])


def _lower_bool(c: LowerContext, d: DenseSlice) -> None:
    """bool: SELECT to uint8 0/1, STRIDED_SLICE, NOT_EQUAL 0 (class docstring)."""
    x, out = c.input_operand(0), c.output_operand()
    dims = tuple(c.info(x).dimensions)
    u8 = OperandType.TENSOR_QUANT8_ASYMM
    ones, zeros = (c.constant(u8, np.full(dims, v, np.uint8), scale=1.0) for v in (1, 0))
    wide = c.temp(u8, dims, scale=1.0)
    c.emit(OperationType.SELECT, [x, ones, zeros], [wide])
    sliced = c.temp(u8, c.info(out).dimensions, scale=1.0)
    _emit_strided_slice(c, wide, d, sliced)
    c.emit(OperationType.NOT_EQUAL, [sliced, c.constant(u8, np.zeros(1, np.uint8), scale=1.0)], [out])


def emit_box_slice(c: LowerContext, src: int, begin: list[int], size: list[int], dst: int) -> None:
    """An axis-aligned box [begin, begin + size) of `src` into `dst` as STRIDED_SLICE with unit strides and
    no masks (API 28): what SLICE computes, one NNAPI level earlier."""
    end = [b + n for b, n in zip(begin, size)]
    c.emit(OperationType.STRIDED_SLICE, [src, c.i32_vector(begin), c.i32_vector(end), c.i32_vector([1] * len(begin)),
                                         c.i32(0), c.i32(0), c.i32(0)], [dst])


# The operation that takes a box of int32 data natively (API 29), per TFLite op checked by `_check_box_level`
_NATIVE_BOX = {"SLICE": OperationType.SLICE, "SPLIT": OperationType.SPLIT, "SPLIT_V": OperationType.SLICE}


def _check_box_level(c: CheckContext, x, what: str) -> None:
    """Native at API 29 (`_NATIVE_BOX[what]`); float/quantized also at 28 through STRIDED_SLICE (int32 has no
    STRIDED_SLICE)."""
    if x is not None and x.type == I32:
        c.require_signature(_NATIVE_BOX[what], OperandType.TENSOR_INT32, f"{what} of int32 data")
    else:
        c.require_operation(OperationType.STRIDED_SLICE, f"{what} (STRIDED_SLICE below API 29)")


@lowering_rule(BuiltinOperator.SLICE)
class Slice(Rule):
    """TFLite SLICE(input, begin, size) -> NNAPI SLICE(input, begin, size TENSOR_INT32) (API 29); a size
    of -1 ("to the end") is resolved from the static shape. At API 28, float and quantized tensors use
    STRIDED_SLICE(begin, begin + size, strides 1), the same box."""

    int8_shiftable = True
    fold = shape_folds.slice_
    nnapi_ops = (OperationType.SLICE, OperationType.STRIDED_SLICE, OperationType.CAST)
    stored_values_from = 0
    min_api_level = 28
    dtypes = ("float32", "uint8", "int8", "int32")
    constraints = "constant begin and size; rank <= 4; int32 needs API 29"
    driver_notes = (MISSING_FROM_ARMNN,)

    def check(self, c: CheckContext) -> None:
        if not c.require_inputs(3):
            return
        x = check_data_movement(c, BASIC_I32, bitcast=True)
        _check_box_level(c, x, "SLICE")
        begin, size = require_const_ints(c, 1, "begin"), require_const_ints(c, 2, "size")
        if x is None or begin is None or size is None:
            return
        if not len(begin) == len(size) == x.rank:
            c.refuse(Code.OPERAND_VALUE, f"begin {begin} and size {size} must have {x.rank} entries")
            return
        for b, s, d in zip(begin, size, x.shape):
            if b < 0 or s == 0 or s < -1 or (s != -1 and b + s > d) or b >= d:
                c.refuse(Code.OPERAND_VALUE, f"slice begin={begin} size={size} is empty or outside {list(x.shape)}")
                return

    def lower(self, c: LowerContext) -> None:
        x = c.input(0)
        begin, size = const_ints(c, c.input(1)), const_ints(c, c.input(2))
        size = [d - b if s == -1 else s for b, s, d in zip(begin, size, x.shape)]
        if c.api_level >= 29:
            c.emit(OperationType.SLICE, [c.input_operand(0), c.i32_vector(begin), c.i32_vector(size)],
                   [c.output_operand()])
        else:
            emit_box_slice(c, c.input_operand(0), begin, size, c.output_operand())


@lowering_rule(BuiltinOperator.SPLIT)
class Split(Rule):
    """TFLite SPLIT(axis, input) [num_splits] -> NNAPI SPLIT(input, axis INT32, num_splits INT32) (API 29).
    Note the operand order: TFLite's axis comes first. At API 28, float and quantized tensors use one
    STRIDED_SLICE per output."""

    int8_shiftable = True
    fold = shape_folds.split
    nnapi_ops = (OperationType.SPLIT, OperationType.STRIDED_SLICE)
    min_api_level = 28
    dtypes = ("float32", "uint8", "int8", "int32")
    constraints = "constant axis; equal splits; rank <= 4; int32 needs API 29"
    driver_notes = (MISSING_FROM_ARMNN,)

    def check(self, c: CheckContext) -> None:
        checked = _check_split(c, "SPLIT", data=1, axis_slot=0)
        if checked is None:
            return
        x, axis, _ = checked
        n = len(c.op.outputs)
        if x.shape[axis] % n:
            c.refuse(Code.OPERAND_VALUE, f"extent {x.shape[axis]} does not split into {n} parts")

    def lower(self, c: LowerContext) -> None:
        x = c.input(1)
        axis = const_ints(c, c.input(0))[0] % x.rank
        n = len(c.op.outputs)
        if c.api_level >= 29:
            c.emit(OperationType.SPLIT, [c.input_operand(1), c.i32(axis), c.i32(n)],
                   [c.output_operand(k) for k in range(n)])
            return
        _slices_along(c, c.input_operand(1), list(x.shape), axis, [x.shape[axis] // n] * n)


def _check_split(c: CheckContext, what: str, data: int, axis_slot: int,
                 sizes_slot: int | None = None) -> tuple[Tensor, int, list[int] | None] | None:
    """The checks SPLIT and SPLIT_V share: the data input (slot `data`), the level of a box (_check_box_level),
    constant split sizes (SPLIT_V's `sizes_slot`) and a constant single axis (slot `axis_slot`) in range.
    Returns (input, axis >= 0, sizes) when all hold."""
    if not c.require_inputs(max(data, axis_slot, sizes_slot or 0) + 1):
        return None
    x = check_data_movement(c, BASIC_I32, data=data)
    _check_box_level(c, x, what)
    sizes = None if sizes_slot is None else require_const_ints(c, sizes_slot, "size_splits")
    axis = require_const_ints(c, axis_slot, "axis")
    if x is None or axis is None or (sizes_slot is not None and sizes is None):
        return None
    if len(axis) != 1 or not -x.rank <= axis[0] < x.rank:
        c.refuse(Code.OPERAND_VALUE, f"axis {axis} is out of range for rank {x.rank}")
        return None
    return x, axis[0] % x.rank, sizes


def _slices_along(c: LowerContext, src: int, shape: list[int], axis: int, sizes: list[int],
                  native: bool = False) -> None:
    """Output k is the k-th consecutive part of `sizes[k]` along `axis`: NNAPI SLICE(src, begin, size) when
    `native` (API 29), else the same box as a STRIDED_SLICE (emit_box_slice, API 28)."""
    offset = 0
    for k, part in enumerate(sizes):
        begin = [0] * len(shape)
        begin[axis] = offset
        size = list(shape)
        size[axis] = part
        if native:
            c.emit(OperationType.SLICE, [src, c.i32_vector(begin), c.i32_vector(size)], [c.output_operand(k)])
        else:
            emit_box_slice(c, src, begin, size, c.output_operand(k))
        offset += part


@lowering_rule(BuiltinOperator.SPLIT_V)
class SplitV(Rule):
    """TFLite SPLIT_V(input, size_splits, axis) -> one NNAPI SLICE(input, begin, size) per output (API 29,
    where NNAPI has SLICE; the delegate waits for 30), or one STRIDED_SLICE per output at API 28 (float and
    quantized). The -1 size is resolved from the static shape."""

    int8_shiftable = True
    fold = shape_folds.split_v
    nnapi_ops = (OperationType.SLICE, OperationType.STRIDED_SLICE)
    min_api_level = 28
    dtypes = ("float32", "uint8", "int8", "int32")
    constraints = "constant size_splits and axis; no zero sizes; rank <= 4; int32 needs API 29"
    driver_notes = (MISSING_FROM_ARMNN,)

    def check(self, c: CheckContext) -> None:
        checked = _check_split(c, "SPLIT_V", data=0, axis_slot=2, sizes_slot=1)
        if checked is None:
            return
        x, axis, sizes = checked
        outs = [o.shape[axis] for o in c.outputs]
        if 0 in outs or sum(outs) != x.shape[axis]:
            c.refuse(Code.OPERAND_VALUE, f"split sizes {sizes} are empty or do not cover the axis")

    def lower(self, c: LowerContext) -> None:
        x = c.input(0)
        axis = const_ints(c, c.input(2))[0] % x.rank
        sizes = [o.shape[axis] for o in c.outputs]
        _slices_along(c, c.input_operand(0), list(x.shape), axis, sizes, native=c.api_level >= 29)
