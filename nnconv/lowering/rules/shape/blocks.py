"""Ops that move spatial blocks: SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND, SPACE_TO_DEPTH, DEPTH_TO_SPACE."""

from __future__ import annotations

import numpy as np

from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.registry import Rule, lowering_rule
from nnconv.lowering.rules._shape_common import BASIC, FS, check_data_movement, const_ints, require_const_ints
from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.tflite.ir import Tensor
from nnconv.tflite.schema_enums import BuiltinOperator


def check_block_op(c: CheckContext, name: str, amounts: str) -> tuple[Tensor, list[int], list[int]] | None:
    """The checks SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND share (API 28; NNAPI takes 4-D NHWC only): input 0 a
    3-D or 4-D data-movement input, input 1 a constant block_shape of one positive value per spatial axis
    (1 or 2), input 2 constant non-negative `amounts` (paddings or crops, [axes, 2]). Returns (input,
    block, amounts) when all hold, both widened to two spatial axes (a 3-D [N, L, C] input runs as [N, L, 1,
    C] with block [b, 1]: TensorFlow's converter writes a dilated Conv1D that way)."""
    c.require_operation(OperationType[name], name)
    if not c.require_inputs(3):
        return None
    x = check_data_movement(c, BASIC)
    if x is None or not c.require_rank(x, 4, 3):
        return None
    spatial = x.rank - 2
    block = require_const_ints(c, 1, "block_shape")
    values = require_const_ints(c, 2, amounts)
    if block is not None and (len(block) != spatial or min(block) < 1):
        c.refuse(Code.OPERAND_VALUE, f"block_shape {block} must be {spatial} positive values")
        block = None
    if values is not None and (len(values) != 2 * spatial or min(values) < 0):
        c.refuse(Code.OPERAND_VALUE, f"{amounts} {values} must be {spatial}x2 non-negative values")
        values = None
    if block is None or values is None:
        return None
    return x, _two_axes(x, block, 1), _two_axes(x, values, 0, 0)


def _two_axes(x: Tensor, values: list[int], *width_axis: int) -> list[int]:
    """Block shape or amounts of the 3-D input `x` widened with the unit W axis of its 4-D view."""
    return list(values) if x.rank == 4 else [*values, *width_axis]


def _as_4d(c: LowerContext) -> tuple[int, tuple[int, ...]]:
    """Input 0 as a 4-D NHWC operand: itself, or a 3-D [N, L, C] reshaped to [N, L, 1, C]."""
    x = c.input(0)
    if x.rank == 4:
        return c.input_operand(0), x.shape
    shape = (x.shape[0], x.shape[1], 1, x.shape[2])
    wide = c.temp_like(c.input_operand(0), shape)
    c.emit(OperationType.RESHAPE, [c.input_operand(0), c.i32_vector(shape)], [wide])
    return wide, shape


def _into_output(c: LowerContext, shape: list[int]) -> tuple[int, bool]:
    """Where a 4-D result of `shape` goes: the output itself, or (3-D output) a temporary to reshape."""
    if c.output(0).rank == 4:
        return c.output_operand(), False
    return c.temp_like(c.output_operand(), shape), True


def _finish_3d(c: LowerContext, result: int, reshape: bool) -> None:
    if reshape:
        c.emit(OperationType.RESHAPE, [result, c.i32_vector(c.output(0).shape)], [c.output_operand()])


@lowering_rule(BuiltinOperator.SPACE_TO_BATCH_ND)
class SpaceToBatchNd(Rule):
    """TFLite SPACE_TO_BATCH_ND(input, block_shape, paddings) -> NNAPI SPACE_TO_BATCH_ND (API 28).

    NNAPI takes 4-D NHWC only: a 3-D [N, L, C] input (a dilated Conv1D) is reshaped to [N, L, 1, C] with
    block [b, 1] and no padding along the unit axis, and the result back to 3-D. Quantized padding is the
    zero point in both."""

    int8_shiftable = True
    nnapi_ops = (OperationType.SPACE_TO_BATCH_ND, OperationType.RESHAPE)
    min_api_level = 28
    dtypes = FS
    constraints = "3-D or 4-D input; constant block shape and paddings"

    def check(self, c: CheckContext) -> None:
        check_block_op(c, "SPACE_TO_BATCH_ND", "paddings")

    def lower(self, c: LowerContext) -> None:
        block = _two_axes(c.input(0), const_ints(c, c.input(1)), 1)
        pads = _two_axes(c.input(0), const_ints(c, c.input(2)), 0, 0)
        x, (n, h, w, ch) = _as_4d(c)
        shape = [n * block[0] * block[1], (h + pads[0] + pads[1]) // block[0], (w + pads[2] + pads[3]) // block[1], ch]
        out, reshape = _into_output(c, shape)
        c.emit(OperationType.SPACE_TO_BATCH_ND,
               [x, c.i32_vector(block), c.constant(OperandType.TENSOR_INT32, np.asarray(pads, np.int32).reshape(2, 2))],
               [out])
        _finish_3d(c, out, reshape)


@lowering_rule(BuiltinOperator.BATCH_TO_SPACE_ND)
class BatchToSpaceNd(Rule):
    """TFLite BATCH_TO_SPACE_ND(input, block_shape, crops) -> NNAPI BATCH_TO_SPACE_ND(input, block_shape)
    (API 28). NNAPI has no crops: non-zero crops (the delegate refuses them) become a STRIDED_SLICE of the
    uncropped result, since cropping is taking the box [top, H - bottom) x [left, W - right). A 3-D input
    runs as [N, L, 1, C] with block [b, 1] (see SPACE_TO_BATCH_ND)."""

    int8_shiftable = True
    nnapi_ops = (OperationType.BATCH_TO_SPACE_ND, OperationType.STRIDED_SLICE, OperationType.RESHAPE)
    min_api_level = 28
    dtypes = FS
    constraints = "3-D or 4-D input; constant block shape and crops"

    def check(self, c: CheckContext) -> None:
        checked = check_block_op(c, "BATCH_TO_SPACE_ND", "crops")
        if checked is None:
            return
        x, block, crops = checked
        h, w = x.shape[1], (x.shape[2] if x.rank == 4 else 1)
        if crops[0] + crops[1] >= h * block[0] or crops[2] + crops[3] >= w * block[1]:
            c.refuse(Code.OPERAND_VALUE, f"crops {crops} leave an empty result")

    def lower(self, c: LowerContext) -> None:
        block = _two_axes(c.input(0), const_ints(c, c.input(1)), 1)
        crops = _two_axes(c.input(0), const_ints(c, c.input(2)), 0, 0)
        x, (n, h, w, ch) = _as_4d(c)
        full = [n // (block[0] * block[1]), h * block[0], w * block[1], ch]
        cropped = [full[0], full[1] - crops[0] - crops[1], full[2] - crops[2] - crops[3], ch]
        out, reshape = _into_output(c, cropped)
        if not any(crops):
            c.emit(OperationType.BATCH_TO_SPACE_ND, [x, c.i32_vector(block)], [out])
            _finish_3d(c, out, reshape)
            return
        tmp = c.temp_like(x, full)
        c.emit(OperationType.BATCH_TO_SPACE_ND, [x, c.i32_vector(block)], [tmp])
        begin = [0, crops[0], crops[2], 0]
        end = [full[0], full[1] - crops[1], full[2] - crops[3], full[3]]
        c.emit(OperationType.STRIDED_SLICE, [tmp, c.i32_vector(begin), c.i32_vector(end), c.i32_vector([1] * 4),
                                             c.i32(0), c.i32(0), c.i32(0)], [out])
        _finish_3d(c, out, reshape)


class _BlockRearrange(Rule):
    """Shared by SPACE_TO_DEPTH and DEPTH_TO_SPACE: (input [N,H,W,C]) [block_size] -> NNAPI (input,
    block_size INT32) (API 27). Both use TensorFlow's DCR ordering."""

    int8_shiftable = True
    min_api_level = 27
    dtypes = FS
    constraints = "4-D input; block size >= 1"
    nnapi_op: OperationType
    stored_values_from = 0

    def check(self, c: CheckContext) -> None:
        x = check_data_movement(c, BASIC, bitcast=True)
        if x is None or not c.require_rank(x, 4, 4):
            return
        b = c.options.block_size if c.options is not None else 0
        if b < 1:
            c.refuse(Code.OPTION, f"block_size {b} must be at least 1")

    def lower(self, c: LowerContext) -> None:
        c.emit(self.nnapi_op, [c.input_operand(0), c.i32(c.options.block_size)], [c.output_operand()])


@lowering_rule(BuiltinOperator.SPACE_TO_DEPTH)
class SpaceToDepth(_BlockRearrange):
    __doc__ = _BlockRearrange.__doc__
    nnapi_ops = (OperationType.SPACE_TO_DEPTH, OperationType.CAST)
    nnapi_op = OperationType.SPACE_TO_DEPTH


@lowering_rule(BuiltinOperator.DEPTH_TO_SPACE)
class DepthToSpace(_BlockRearrange):
    __doc__ = _BlockRearrange.__doc__
    nnapi_ops = (OperationType.DEPTH_TO_SPACE, OperationType.CAST)
    nnapi_op = OperationType.DEPTH_TO_SPACE
