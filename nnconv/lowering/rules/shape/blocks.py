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
    4-D data-movement input, input 1 a constant block_shape of two positive values, input 2 constant 2x2
    non-negative `amounts` (paddings or crops). Returns (input, block, amounts) when all hold."""
    c.require_api(28, name)
    if not c.require_inputs(3):
        return None
    x = check_data_movement(c, BASIC)
    if x is None or not c.require_rank(x, 4, 4):
        return None
    block = require_const_ints(c, 1, "block_shape")
    values = require_const_ints(c, 2, amounts)
    if block is not None and (len(block) != 2 or min(block) < 1):
        c.refuse(Code.OPERAND_VALUE, f"block_shape {block} must be two positive values")
        block = None
    if values is not None and (len(values) != 4 or min(values) < 0):
        c.refuse(Code.OPERAND_VALUE, f"{amounts} {values} must be 2x2 non-negative values")
        values = None
    return None if block is None or values is None else (x, block, values)


@lowering_rule(BuiltinOperator.SPACE_TO_BATCH_ND)
class SpaceToBatchNd(Rule):
    """TFLite SPACE_TO_BATCH_ND(input, block_shape [2], paddings [2, 2]) -> NNAPI SPACE_TO_BATCH_ND (API 28).

    NNAPI takes 4-D NHWC only. Quantized padding is the zero point in both."""

    nnapi_ops = (OperationType.SPACE_TO_BATCH_ND,)
    min_api_level = 28
    dtypes = FS
    constraints = "4-D input; constant block shape and paddings"

    def check(self, c: CheckContext) -> None:
        check_block_op(c, "SPACE_TO_BATCH_ND", "paddings")

    def lower(self, c: LowerContext) -> None:
        pads = np.asarray(const_ints(c, c.input(2)), dtype=np.int32).reshape(2, 2)
        c.emit(OperationType.SPACE_TO_BATCH_ND,
               [c.in_(0), c.i32_vector(const_ints(c, c.input(1))), c.constant(OperandType.TENSOR_INT32, pads)],
               [c.out()])


@lowering_rule(BuiltinOperator.BATCH_TO_SPACE_ND)
class BatchToSpaceNd(Rule):
    """TFLite BATCH_TO_SPACE_ND(input, block_shape [2], crops [2, 2]) -> NNAPI BATCH_TO_SPACE_ND(input,
    block_shape) (API 28). NNAPI has no crops: non-zero crops (the delegate refuses them) become a
    STRIDED_SLICE of the uncropped result, since cropping is taking the box [top, H - bottom) x
    [left, W - right)."""

    nnapi_ops = (OperationType.BATCH_TO_SPACE_ND, OperationType.STRIDED_SLICE)
    min_api_level = 28
    dtypes = FS
    constraints = "4-D input; constant block shape and crops"

    def check(self, c: CheckContext) -> None:
        checked = check_block_op(c, "BATCH_TO_SPACE_ND", "crops")
        if checked is None:
            return
        x, block, crops = checked
        if crops[0] + crops[1] >= x.shape[1] * block[0] or crops[2] + crops[3] >= x.shape[2] * block[1]:
            c.refuse(Code.OPERAND_VALUE, f"crops {crops} leave an empty result")

    def lower(self, c: LowerContext) -> None:
        block = const_ints(c, c.input(1))
        crops = const_ints(c, c.input(2))
        if not any(crops):
            c.emit(OperationType.BATCH_TO_SPACE_ND, [c.in_(0), c.i32_vector(block)], [c.out()])
            return
        n, h, w, ch = c.input(0).shape
        full = [n // (block[0] * block[1]), h * block[0], w * block[1], ch]
        tmp = c.temp_like(c.in_(0), full)
        c.emit(OperationType.BATCH_TO_SPACE_ND, [c.in_(0), c.i32_vector(block)], [tmp])
        begin = [0, crops[0], crops[2], 0]
        end = [full[0], full[1] - crops[1], full[2] - crops[3], full[3]]
        c.emit(OperationType.STRIDED_SLICE, [tmp, c.i32_vector(begin), c.i32_vector(end), c.i32_vector([1] * 4),
                                             c.i32(0), c.i32(0), c.i32(0)], [c.out()])


class _BlockRearrange(Rule):
    """Shared by SPACE_TO_DEPTH and DEPTH_TO_SPACE: (input [N,H,W,C]) [block_size] -> NNAPI (input,
    block_size INT32) (API 27). Both use TensorFlow's DCR ordering."""

    min_api_level = 27
    dtypes = FS
    constraints = "4-D input; block size >= 1"
    nnapi_op: OperationType

    def check(self, c: CheckContext) -> None:
        x = check_data_movement(c, BASIC)
        if x is None or not c.require_rank(x, 4, 4):
            return
        b = c.options.block_size if c.options is not None else 0
        if b < 1:
            c.refuse(Code.OPTION, f"block_size {b} must be at least 1")

    def lower(self, c: LowerContext) -> None:
        c.emit(self.nnapi_op, [c.in_(0), c.i32(c.options.block_size)], [c.out()])


@lowering_rule(BuiltinOperator.SPACE_TO_DEPTH)
class SpaceToDepth(_BlockRearrange):
    __doc__ = _BlockRearrange.__doc__
    nnapi_ops = (OperationType.SPACE_TO_DEPTH,)
    nnapi_op = OperationType.SPACE_TO_DEPTH


@lowering_rule(BuiltinOperator.DEPTH_TO_SPACE)
class DepthToSpace(_BlockRearrange):
    __doc__ = _BlockRearrange.__doc__
    nnapi_ops = (OperationType.DEPTH_TO_SPACE,)
    nnapi_op = OperationType.DEPTH_TO_SPACE
