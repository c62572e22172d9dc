"""Shape and data-movement ops: RESHAPE, SQUEEZE, EXPAND_DIMS, CONCATENATION, PAD, PADV2, MIRROR_PAD,
TRANSPOSE, SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND, SPACE_TO_DEPTH, DEPTH_TO_SPACE, TILE, FILL, REVERSE_V2,
BROADCAST_TO, PACK, UNPACK and SHAPE (normally folded away, see `Shape`).

These ops move stored values without arithmetic, so quantized inputs and outputs must share their
parameters (CONCATENATION excepted: NNAPI requantizes mismatched inputs from API 29). Parameters NNAPI
needs at compilation time (shapes, paddings, permutations, axes) must be constant or folded.
"""

from __future__ import annotations

import numpy as np

from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.registry import Rule, lowering_rule
from nnconv.lowering.rules._shape_common import (BASIC, BASIC_I32, F32, I32, I8, U8, check_data_movement,
                                                  check_same_quant, const_ints, out_dims, require_const_ints)
from nnconv.lowering.common import check_int8
from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.tflite.schema_enums import ActivationFunctionType, BuiltinOperator

FS = ("float32", "uint8", "int8")
FSI = ("float32", "uint8", "int8", "int32")


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

    nnapi_ops = (OperationType.RESHAPE,)
    dtypes = FSI
    constraints = "constant or folded shape; rank <= 4; int32 data needs API 33"

    def check(self, c: CheckContext) -> None:
        if not c.require_inputs(1, 2):
            return
        x = check_data_movement(c, BASIC_I32)
        if x is None:
            return
        if x.type == I32:
            c.require_api(33, "RESHAPE of int32 data (feature level 6)")
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
        c.emit(OperationType.RESHAPE, [c.in_(0), c.i32_vector(out_dims(c.output()))], [c.out()])


@lowering_rule(BuiltinOperator.SQUEEZE)
class Squeeze(Rule):
    """TFLite SQUEEZE(input) [squeeze_dims] -> NNAPI SQUEEZE(input, squeeze dims TENSOR_INT32) (API 28).

    The squeezed dimensions are always passed explicitly (every size-1 dimension when the option is
    empty), since an empty dims operand is not accepted at API 28. At API 27, and for a squeeze that removes
    nothing, it is a RESHAPE to the output shape: removing size-1 dimensions only relabels the data."""

    nnapi_ops = (OperationType.SQUEEZE, OperationType.RESHAPE)
    dtypes = FS
    constraints = "rank <= 4; squeezed dimensions must be 1; RESHAPE at API 27"

    def check(self, c: CheckContext) -> None:
        x = check_data_movement(c, BASIC)
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
            c.emit(OperationType.SQUEEZE, [c.in_(0), c.i32_vector(axes)], [c.out()])
        else:
            c.emit(OperationType.RESHAPE, [c.in_(0), c.i32_vector(out_dims(c.output()))], [c.out()])


@lowering_rule(BuiltinOperator.EXPAND_DIMS)
class ExpandDims(Rule):
    """TFLite EXPAND_DIMS(input, axis) -> NNAPI EXPAND_DIMS(input, axis INT32 scalar) (API 29).

    The constant axis (int32 or int64) is normalized to [0, rank] and passed as a scalar. Below API 29 a
    float or quantized tensor gets a RESHAPE to the output shape instead (inserting a size-1 dimension only
    relabels the data); int32 data needs EXPAND_DIMS (RESHAPE takes TENSOR_INT32 only from API 33)."""

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
            c.require_api(29, "EXPAND_DIMS of int32 data")

    def lower(self, c: LowerContext) -> None:
        if c.api_level < 29:
            c.emit(OperationType.RESHAPE, [c.in_(0), c.i32_vector(out_dims(c.output()))], [c.out()])
            return
        axis = const_ints(c, c.input(1))[0] % (c.input(0).rank + 1)
        c.emit(OperationType.EXPAND_DIMS, [c.in_(0), c.i32(axis)], [c.out()])


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
            c.require_api(29, "CONCATENATION of inputs quantized differently from the output")

    def lower(self, c: LowerContext) -> None:
        out_t = c.output()
        axis = (c.options.axis if c.options is not None else 0) % out_t.rank
        act = c.options.fused_activation_function if c.options is not None else 0
        ins = [c.in_(i) for i in range(len(c.op.inputs))]
        out = c.out()
        dst = out if act == ActivationFunctionType.NONE else c.temp_like(out)
        c.emit(OperationType.CONCATENATION, [*ins, c.i32(axis)], [dst])
        if dst != out:
            c.emit(_ACT_OPS[act], [dst], [out])


def _check_paddings(c: CheckContext, rank: int) -> list[int] | None:
    pads = require_const_ints(c, 1, "paddings")
    if pads is None:
        return None
    if len(pads) != 2 * rank or any(p < 0 for p in pads):
        c.refuse(Code.OPERAND_VALUE, f"paddings {pads} must be {rank}x2 non-negative values")
        return None
    return pads


def _paddings_operand(c: LowerContext) -> int:
    pads = np.asarray(const_ints(c, c.input(1)), dtype=np.int32).reshape(-1, 2)
    return c.constant(OperandType.TENSOR_INT32, pads)


def _no_zero_sized(c: CheckContext) -> None:
    x = c.input(0)
    if x is not None and 0 in x.shape:
        c.refuse(Code.OPERAND_VALUE, f"input '{x.name}' has a zero-sized dimension")


def concat_pad(c: LowerContext, pads: list[int], fill: float | int) -> None:
    """Constant padding as one CONCATENATION per padded axis of [block before, x, block after] (API 27),
    the blocks being constants holding `fill` (a stored value) with the input's type and quantization, so
    that NNAPI's quantized CONCATENATION (which needs equal parameters before API 29) copies them as is."""
    src = c.in_(0)
    od = c.info(src)
    dims = list(od.dimensions)
    axes = [k for k in range(len(dims)) if pads[2 * k] or pads[2 * k + 1]]
    for n, k in enumerate(axes):
        parts = []
        for amount in (pads[2 * k], None, pads[2 * k + 1]):
            if amount is None:
                parts.append(src)
            elif amount:
                block = list(dims)
                block[k] = amount
                parts.append(c.constant(od.type, np.full(block, fill, dtype=od.dtype), scale=od.scale,
                                        zero_point=od.zero_point))
        dims[k] += pads[2 * k] + pads[2 * k + 1]
        dst = c.out() if n == len(axes) - 1 else c.temp_like(src, dims)
        c.emit(OperationType.CONCATENATION, [*parts, c.i32(k)], [dst])
        src = dst


def _check_pad_common(c: CheckContext, x) -> list[int] | None:
    _no_zero_sized(c)
    pads = _check_paddings(c, x.rank)
    if pads is not None and not any(pads) and c.api_level < 28:
        c.require_api(28, "PAD without any padding (an identity PAD)")
    return pads


@lowering_rule(BuiltinOperator.PAD)
class Pad(Rule):
    """TFLite PAD(input, paddings [rank, 2]) -> NNAPI PAD(input, paddings) (API 28).

    Both pad quantized tensors with the zero point (real 0), floats with 0. Quantized PAD is in NNAPI 1.1
    (API 28; the CTS has V1_1 quant8 PAD cases) although the delegate waits for API 29. At API 27 the
    padding is built from CONCATENATIONs with constant blocks (`concat_pad`), exact as it only copies."""

    nnapi_ops = (OperationType.PAD, OperationType.CONCATENATION)
    dtypes = FS
    constraints = "constant paddings; rank <= 4; CONCATENATIONs at API 27"

    def check(self, c: CheckContext) -> None:
        if not c.require_inputs(2):
            return
        x = check_data_movement(c, BASIC)
        if x is None:
            return
        _check_pad_common(c, x)

    def lower(self, c: LowerContext) -> None:
        if c.api_level >= 28:
            c.emit(OperationType.PAD, [c.in_(0), _paddings_operand(c)], [c.out()])
        else:
            concat_pad(c, const_ints(c, c.input(1)), c.info(c.in_(0)).zero_point)


@lowering_rule(BuiltinOperator.PADV2)
class PadV2(Rule):
    """TFLite PADV2(input, paddings, constant_values?) -> NNAPI PAD_V2(input, paddings, value) (API 29).

    The pad value is a FLOAT32 scalar for float tensors and the stored integer (INT32 scalar, +128 when int8
    is carried as uint8) for quantized ones, which is what TFLite pads with (TFLite requires the value to
    carry the output's quantization). Without a value: PAD. Below API 29 the padding is built from
    CONCATENATIONs with constant blocks of the value (`concat_pad`, API 27)."""

    nnapi_ops = (OperationType.PAD_V2, OperationType.PAD, OperationType.CONCATENATION)
    dtypes = FS
    constraints = "constant paddings and value; rank <= 4; CONCATENATIONs below API 29"

    def check(self, c: CheckContext) -> None:
        if not c.require_inputs(2, 3):
            return
        x = check_data_movement(c, BASIC)
        if x is None:
            return
        v = c.input(2)
        if v is not None and c.require_dtype(v, (x.type,), "constant_values") and \
                c.require_const(v, "constant_values"):
            c.require(np.asarray(c.const_value(v)).size == 1, Code.OPERAND_VALUE,
                      "constant_values must hold one value")
        _check_pad_common(c, x)

    def lower(self, c: LowerContext) -> None:
        v = c.input(2)
        if v is None:
            Pad.lower(self, c)  # type: ignore[arg-type]
            return
        value = np.asarray(c.const_value(v)).reshape(-1)[0]
        stored = float(value) if v.type == F32 else int(value) + (128 if c.int8_shifted(c.input(0)) else 0)
        if c.api_level < 29:
            concat_pad(c, const_ints(c, c.input(1)), stored)
            return
        scalar = c.f32(stored) if v.type == F32 else c.i32(stored)
        c.emit(OperationType.PAD_V2, [c.in_(0), _paddings_operand(c), scalar], [c.out()])


def mirror_indices(n: int, before: int, after: int, mode: int) -> np.ndarray:
    """Source index of every position of one mirror-padded axis: REFLECT (0) mirrors around the edge
    element, SYMMETRIC (1) repeats it. E.g. n=4, 2 + 2 REFLECT: [2, 1, 0, 1, 2, 3, 2, 1]."""
    edge = 1 if mode == 0 else 0
    head = np.arange(before, 0, -1) - 1 + edge
    tail = n - 1 - edge - np.arange(after)
    return np.concatenate([head, np.arange(n), tail]).astype(np.int32)


def _gather_chain(c: LowerContext, per_axis: list[tuple[int, np.ndarray]]) -> None:
    """GATHER(x, axis, constant indices) for each (axis, indices), the last one into the output."""
    src = c.in_(0)
    dims = list(c.info(src).dimensions)
    for k, (axis, idx) in enumerate(per_axis):
        dims[axis] = len(idx)
        dst = c.out() if k == len(per_axis) - 1 else c.temp_like(src, dims)
        c.emit(OperationType.GATHER, [src, c.i32(axis), c.constant(OperandType.TENSOR_INT32, idx)], [dst])
        src = dst


@lowering_rule(BuiltinOperator.MIRROR_PAD)
class MirrorPad(Rule):
    """TFLite MIRROR_PAD(input, paddings) [mode] -> NNAPI MIRROR_PAD(input, paddings, mode INT32) from
    feature level 7 (API 34); REFLECT = 0 and SYMMETRIC = 1 in both.

    Below (from API 29, beyond the delegate): one GATHER per padded axis with constant source indices
    (`mirror_indices`), an exact composition since mirror padding only copies elements."""

    nnapi_ops = (OperationType.MIRROR_PAD, OperationType.GATHER)
    min_api_level = 29
    dtypes = FSI
    constraints = "constant paddings within the input extents; no zero-sized dimensions; GATHERs below API 34"

    def check(self, c: CheckContext) -> None:
        c.require_api(29, "MIRROR_PAD (GATHER per axis below API 34)")
        if not c.require_inputs(2):
            return
        x = check_data_movement(c, BASIC_I32)
        if x is None:
            return
        _no_zero_sized(c)
        pads = _check_paddings(c, x.rank)
        mode = c.options.mode if c.options is not None else 0
        if pads is not None:
            limit = [d - 1 if mode == 0 else d for d in x.shape]
            if any(max(pads[2 * k], pads[2 * k + 1]) > limit[k] for k in range(x.rank)):
                c.refuse(Code.OPERAND_VALUE, f"paddings {pads} exceed what mirroring {list(x.shape)} allows")

    def lower(self, c: LowerContext) -> None:
        mode = c.options.mode if c.options is not None else 0
        if c.api_level >= 34:
            c.emit(OperationType.MIRROR_PAD, [c.in_(0), _paddings_operand(c), c.i32(mode)], [c.out()])
            return
        x = c.input(0)
        pads = const_ints(c, c.input(1))
        per_axis = [(k, mirror_indices(x.shape[k], pads[2 * k], pads[2 * k + 1], mode))
                    for k in range(x.rank) if pads[2 * k] or pads[2 * k + 1]]
        if not per_axis:  # nothing padded: an identity gather keeps the output computed
            per_axis = [(0, np.arange(x.shape[0], dtype=np.int32))]
        _gather_chain(c, per_axis)


@lowering_rule(BuiltinOperator.TRANSPOSE)
class Transpose(Rule):
    """TFLite TRANSPOSE(input, perm) -> NNAPI TRANSPOSE(input, perm TENSOR_INT32) (API 28)."""

    nnapi_ops = (OperationType.TRANSPOSE,)
    min_api_level = 28
    dtypes = FS
    constraints = "constant perm; rank <= 4"

    def check(self, c: CheckContext) -> None:
        c.require_api(28, "TRANSPOSE")
        if not c.require_inputs(2):
            return
        x = check_data_movement(c, BASIC)
        perm = require_const_ints(c, 1, "perm")
        if x is not None and perm is not None and sorted(p % max(x.rank, 1) for p in perm) != list(range(x.rank)):
            c.refuse(Code.OPERAND_VALUE, f"perm {perm} is not a permutation of {x.rank} dimensions")

    def lower(self, c: LowerContext) -> None:
        rank = c.input(0).rank
        perm = [p % rank for p in const_ints(c, c.input(1))]
        c.emit(OperationType.TRANSPOSE, [c.in_(0), c.i32_vector(perm)], [c.out()])


@lowering_rule(BuiltinOperator.SPACE_TO_BATCH_ND)
class SpaceToBatchNd(Rule):
    """TFLite SPACE_TO_BATCH_ND(input, block_shape [2], paddings [2, 2]) -> NNAPI SPACE_TO_BATCH_ND (API 28).

    NNAPI takes 4-D NHWC only. Quantized padding is the zero point in both."""

    nnapi_ops = (OperationType.SPACE_TO_BATCH_ND,)
    min_api_level = 28
    dtypes = FS
    constraints = "4-D input; constant block shape and paddings"

    def check(self, c: CheckContext) -> None:
        c.require_api(28, "SPACE_TO_BATCH_ND")
        if not c.require_inputs(3):
            return
        x = check_data_movement(c, BASIC)
        if x is None or not c.require_rank(x, 4, 4):
            return
        block = require_const_ints(c, 1, "block_shape")
        pads = require_const_ints(c, 2, "paddings")
        if block is not None and (len(block) != 2 or min(block) < 1):
            c.refuse(Code.OPERAND_VALUE, f"block_shape {block} must be two positive values")
        if pads is not None and (len(pads) != 4 or min(pads) < 0):
            c.refuse(Code.OPERAND_VALUE, f"paddings {pads} must be 2x2 non-negative values")

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
        c.require_api(28, "BATCH_TO_SPACE_ND")
        if not c.require_inputs(3):
            return
        x = check_data_movement(c, BASIC)
        if x is None or not c.require_rank(x, 4, 4):
            return
        block = require_const_ints(c, 1, "block_shape")
        crops = require_const_ints(c, 2, "crops")
        if block is not None and (len(block) != 2 or min(block) < 1):
            c.refuse(Code.OPERAND_VALUE, f"block_shape {block} must be two positive values")
        elif crops is not None and (len(crops) != 4 or min(crops) < 0 or crops[0] + crops[1] >= x.shape[1] * block[0]
                                    or crops[2] + crops[3] >= x.shape[2] * block[1]):
            c.refuse(Code.OPERAND_VALUE, f"crops {crops} must be 2x2 non-negative values leaving a non-empty result")

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


def concat_tile(c: LowerContext, src: int, dims: list[int], reps: list[int]) -> None:
    """Tiles `src` (of shape `dims`) into the op's output with one CONCATENATION of m copies per axis
    repeated m > 1 times (API 27): tiling an axis m times is concatenating m copies along it."""
    axes = [k for k, m in enumerate(reps) if m > 1]
    dims = list(dims)
    for n, k in enumerate(axes):
        dims[k] *= reps[k]
        dst = c.out() if n == len(axes) - 1 else c.temp_like(src, dims)
        c.emit(OperationType.CONCATENATION, [src] * reps[k] + [c.i32(k)], [dst])
        src = dst


@lowering_rule(BuiltinOperator.TILE)
class Tile(Rule):
    """TFLite TILE(input, multiples) -> NNAPI TILE(input, multiples TENSOR_INT32) (API 29).

    Below API 29 (float and quantized): one CONCATENATION of m copies per axis tiled m > 1 times
    (`concat_tile`), which is the definition of tiling. int32 needs TILE."""

    nnapi_ops = (OperationType.TILE, OperationType.CONCATENATION)
    dtypes = FSI
    constraints = "constant multiples; rank <= 4; int32 needs API 29"

    def check(self, c: CheckContext) -> None:
        if not c.require_inputs(2):
            return
        x = check_data_movement(c, BASIC_I32)
        reps = require_const_ints(c, 1, "multiples")
        if x is not None and reps is not None and (len(reps) != x.rank or min(reps, default=1) < 1):
            c.refuse(Code.OPERAND_VALUE, f"multiples {reps} must be {x.rank} positive values")
        if x is not None and x.type == I32:
            c.require_api(29, "TILE of int32 data")
        if reps is not None and all(m == 1 for m in reps):
            c.require_api(29, "TILE by all-ones multiples (an identity TILE)")

    def lower(self, c: LowerContext) -> None:
        reps = const_ints(c, c.input(1))
        if c.api_level >= 29:
            c.emit(OperationType.TILE, [c.in_(0), c.i32_vector(reps)], [c.out()])
        else:
            concat_tile(c, c.in_(0), list(c.input(0).shape), reps)


@lowering_rule(BuiltinOperator.FILL)
class Fill(Rule):
    """TFLite FILL(dims, value) -> NNAPI FILL(dims TENSOR_INT32, value scalar) (API 30).

    With constant inputs FILL is normally folded; this lowering serves model outputs and --no-fold."""

    nnapi_ops = (OperationType.FILL,)
    min_api_level = 30
    dtypes = ("int32", "int64")
    constraints = "constant dims and value; float32 or int32 value"

    def check(self, c: CheckContext) -> None:
        c.require_api(30, "FILL")
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
        c.emit(OperationType.FILL, [c.i32_vector(out_dims(c.output())), scalar], [c.out()])


@lowering_rule(BuiltinOperator.REVERSE_V2)
class ReverseV2(Rule):
    """TFLite REVERSE_V2(input, axis) -> NNAPI REVERSE(input, axis TENSOR_INT32 [1]) per reversed axis from
    feature level 7 (API 34). Below (from API 29, beyond the delegate): GATHER(input, axis, [n-1..0]) per
    axis, exact since reversing only reorders elements. Several axes chain one op per axis."""

    nnapi_ops = (OperationType.REVERSE, OperationType.GATHER)
    min_api_level = 29
    dtypes = FSI
    constraints = "constant axes; rank <= 4; GATHER below API 34"

    def check(self, c: CheckContext) -> None:
        c.require_api(29, "REVERSE_V2 (GATHER below API 34)")
        if not c.require_inputs(2):
            return
        x = check_data_movement(c, BASIC_I32)
        axes = require_const_ints(c, 1, "axis")
        if x is not None and axes is not None and (not axes or any(not -x.rank <= a < x.rank for a in axes)):
            c.refuse(Code.OPERAND_VALUE, f"axis {axes} must name axes of a rank-{x.rank} tensor")

    def lower(self, c: LowerContext) -> None:
        x = c.input(0)
        axes = sorted({a % x.rank for a in const_ints(c, c.input(1))})
        if c.api_level < 34:
            _gather_chain(c, [(a, np.arange(x.shape[a] - 1, -1, -1, dtype=np.int32)) for a in axes])
            return
        src = c.in_(0)
        for k, a in enumerate(axes):
            dst = c.out() if k == len(axes) - 1 else c.temp_like(src)
            c.emit(OperationType.REVERSE, [src, c.i32_vector([a])], [dst])
            src = dst


@lowering_rule(BuiltinOperator.BROADCAST_TO)
class BroadcastTo(Rule):
    """TFLite BROADCAST_TO(input, shape) -> RESHAPE (when the rank grows) + TILE (API 29), or + one
    CONCATENATION per broadcast axis below API 29 (API 27). Beyond the delegate.

    Identity: broadcasting [d_0..d_k] to [D_0..D_n] equals reshaping to [1]*(n-k) + [d_0..d_k] (a pure
    relabelling) and tiling each axis by D_i / d_i, which is D_i where d_i = 1 and 1 where d_i = D_i."""

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
            c.require_api(29, "BROADCAST_TO its own shape (an identity TILE)")

    def lower(self, c: LowerContext) -> None:
        x, out = c.input(0), c.output()
        padded = [1] * (out.rank - x.rank) + list(x.shape)
        reps = [o // d for o, d in zip(out.shape, padded)]
        src = c.in_(0)
        if out.rank != x.rank:
            if all(m == 1 for m in reps):
                c.emit(OperationType.RESHAPE, [src, c.i32_vector(padded)], [c.out()])
                return
            tmp = c.temp_like(src, padded)
            c.emit(OperationType.RESHAPE, [src, c.i32_vector(padded)], [tmp])
            src = tmp
        if c.api_level >= 29:
            c.emit(OperationType.TILE, [src, c.i32_vector(reps)], [c.out()])
        else:
            concat_tile(c, src, padded, reps)


@lowering_rule(BuiltinOperator.PACK)
class Pack(Rule):
    """TFLite PACK(x0..xn-1) [axis] -> NNAPI PACK(axis INT32, x0..xn-1) from feature level 6 (API 33);
    below, each input is RESHAPEd to insert the new size-1 axis and the results are CONCATENATED along it
    (API 27, so earlier than the delegate's 30; any axis, including the last; no int32)."""

    nnapi_ops = (OperationType.PACK, OperationType.RESHAPE, OperationType.CONCATENATION)
    dtypes = FSI
    constraints = "output rank <= 4; int32 needs API 33"

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
            c.require_api(33, "PACK of int32 tensors (feature level 6)")

    def lower(self, c: LowerContext) -> None:
        out_t = c.output()
        axis = (c.options.axis if c.options is not None else 0) % out_t.rank
        ins = [c.in_(i) for i in range(len(c.op.inputs))]
        if c.api_level >= 33:
            c.emit(OperationType.PACK, [c.i32(axis), *ins], [c.out()])
            return
        x = c.input(0)
        expanded = list(x.shape[:axis]) + [1] + list(x.shape[axis:])
        parts = []
        for src in ins:
            tmp = c.temp_like(src, expanded)
            c.emit(OperationType.RESHAPE, [src, c.i32_vector(expanded)], [tmp])
            parts.append(tmp)
        c.emit(OperationType.CONCATENATION, [*parts, c.i32(axis)], [c.out()])


@lowering_rule(BuiltinOperator.UNPACK)
class Unpack(Rule):
    """TFLite UNPACK(input) [num, axis] -> one NNAPI STRIDED_SLICE per output taking index k of the axis
    with its shrink bit set, which removes the axis (API 28, earlier than the delegate's RESHAPE + SPLIT at
    30; any axis). int32 data, which STRIDED_SLICE lacks, uses SPLIT + RESHAPE per output (API 33, where
    RESHAPE takes TENSOR_INT32)."""

    nnapi_ops = (OperationType.STRIDED_SLICE, OperationType.SPLIT, OperationType.RESHAPE)
    min_api_level = 28
    dtypes = FSI
    constraints = "input rank 1..4; int32 needs API 33"

    def check(self, c: CheckContext) -> None:
        x = check_data_movement(c, BASIC_I32)
        if x is None:
            return
        c.require_rank(x, 4, 1)
        if x.type == I32:
            c.require_api(33, "UNPACK of int32 tensors (SPLIT + RESHAPE of int32, feature level 6)")
        else:
            c.require_api(28, "UNPACK (STRIDED_SLICE per output)")

    def lower(self, c: LowerContext) -> None:
        x = c.input(0)
        axis = (c.options.axis if c.options is not None else 0) % x.rank
        n = len(c.op.outputs)
        src = c.in_(0)
        if x.type != I32:
            full = (1 << x.rank) - 1 - (1 << axis)  # every other axis: whole range
            for k in range(n):
                begin = [0] * x.rank
                begin[axis] = k
                end = list(x.shape)
                end[axis] = k + 1
                c.emit(OperationType.STRIDED_SLICE,
                       [src, c.i32_vector(begin), c.i32_vector(end), c.i32_vector([1] * x.rank), c.i32(full),
                        c.i32(full), c.i32(1 << axis)], [c.out(k)])
            return
        part_shape = list(x.shape)
        part_shape[axis] = 1
        parts = [src]
        if n > 1:
            parts = [c.temp_like(src, part_shape) for _ in range(n)]
            c.emit(OperationType.SPLIT, [src, c.i32(axis), c.i32(n)], parts)
        for k, part in enumerate(parts):
            c.emit(OperationType.RESHAPE, [part, c.i32_vector(out_dims(c.output(k)))], [c.out(k)])


@lowering_rule(BuiltinOperator.SHAPE)
class Shape(Rule):
    """TFLite SHAPE(input) of a statically shaped tensor is a constant, which constant folding
    (rewrite/folding.py) substitutes for every consumer. This rule only runs when the op was not folded:
    its output is a model output (which the converter must compute) or folding is disabled. The known
    shape is then produced by NNAPI ADD(constant shape, 0) on TENSOR_INT32 (API 30), exact for any value.
    A dynamic input shape cannot be lowered (NNAPI has no SHAPE operation)."""

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
                     "only known at run time; NNAPI has no SHAPE operation", "give the model static input shapes")
            return
        c.require_dtype(c.output(), (I32,), "output", hint="an int64 SHAPE result is only usable when folded")
        c.require_api(30, "an unfolded SHAPE (ADD of a constant on TENSOR_INT32)")

    def lower(self, c: LowerContext) -> None:
        shape = c.constant(OperandType.TENSOR_INT32, np.asarray(c.input(0).shape or (1,), dtype=np.int32))
        zero = c.constant(OperandType.TENSOR_INT32, np.zeros(1, np.int32))
        c.emit(OperationType.ADD, [shape, zero, c.i32(0)], [c.out()])
