"""PAD, PADV2 and MIRROR_PAD."""

from __future__ import annotations

import numpy as np

from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.driver_support import FEATURE_LEVEL_6_ARMNN
from nnconv.lowering.registry import Rule, lowering_rule
from nnconv.lowering.rules._shape_common import (BASIC, BASIC_I32, F32, FS, FSI, check_data_movement, const_ints,
                                                 require_const_ints)
from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.tflite.schema_enums import BuiltinOperator


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
    src = c.input_operand(0)
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
        dst = c.output_operand() if n == len(axes) - 1 else c.temp_like(src, dims)
        c.emit(OperationType.CONCATENATION, [*parts, c.i32(k)], [dst])
        src = dst


def _check_pad_common(c: CheckContext, x) -> list[int] | None:
    _no_zero_sized(c)
    pads = _check_paddings(c, x.rank)
    if pads is not None and not any(pads) and c.api_level < 28:
        c.require_operation(OperationType.PAD, "PAD without any padding (an identity PAD)")
    return pads


@lowering_rule(BuiltinOperator.PAD)
class Pad(Rule):
    """TFLite PAD(input, paddings [rank, 2]) -> NNAPI PAD(input, paddings) (API 28).

    Both pad quantized tensors with the zero point (real 0), floats with 0. Quantized PAD is in NNAPI 1.1
    (API 28; the CTS has V1_1 quant8 PAD cases) although the delegate waits for API 29. At API 27 the
    padding is built from CONCATENATIONs with constant blocks (`concat_pad`), exact as it only copies."""

    int8_shiftable = True
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
            c.emit(OperationType.PAD, [c.input_operand(0), _paddings_operand(c)], [c.output_operand()])
        else:
            concat_pad(c, const_ints(c, c.input(1)), c.info(c.input_operand(0)).zero_point)


@lowering_rule(BuiltinOperator.PADV2)
class PadV2(Rule):
    """TFLite PADV2(input, paddings, constant_values?) -> NNAPI PAD_V2(input, paddings, value) (API 29).

    The pad value is a FLOAT32 scalar for float tensors and the stored integer (INT32 scalar, +128 when int8
    is carried as uint8) for quantized ones, which is what TFLite pads with (TFLite requires the value to
    carry the output's quantization). Without a value: PAD. Below API 29 the padding is built from
    CONCATENATIONs with constant blocks of the value (`concat_pad`, API 27)."""

    int8_shiftable = True
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
        c.emit(OperationType.PAD_V2, [c.input_operand(0), _paddings_operand(c), scalar], [c.output_operand()])


def mirror_indices(n: int, before: int, after: int, mode: int) -> np.ndarray:
    """Source index of every position of one mirror-padded axis: REFLECT (0) mirrors around the edge
    element, SYMMETRIC (1) repeats it. E.g. n=4, 2 + 2 REFLECT: [2, 1, 0, 1, 2, 3, 2, 1]."""
    edge = 1 if mode == 0 else 0
    head = np.arange(before, 0, -1) - 1 + edge
    tail = n - 1 - edge - np.arange(after)
    return np.concatenate([head, np.arange(n), tail]).astype(np.int32)


def gather_chain(c: LowerContext, per_axis: list[tuple[int, np.ndarray]], dst: int | None = None) -> None:
    """GATHER(x, axis, constant indices) for each (axis, indices), the last one into `dst` (the output
    when not given)."""
    src = c.input_operand(0)
    dims = list(c.info(src).dimensions)
    last = c.output_operand() if dst is None else dst
    for k, (axis, idx) in enumerate(per_axis):
        dims[axis] = len(idx)
        dst = last if k == len(per_axis) - 1 else c.temp_like(src, dims)
        c.emit(OperationType.GATHER, [src, c.i32(axis), c.constant(OperandType.TENSOR_INT32, idx)], [dst])
        src = dst


@lowering_rule(BuiltinOperator.MIRROR_PAD)
class MirrorPad(Rule):
    """TFLite MIRROR_PAD(input, paddings) [mode] -> NNAPI MIRROR_PAD(input, paddings, mode INT32) from
    feature level 7 (API 34); REFLECT = 0 and SYMMETRIC = 1 in both.

    Below (from API 29, beyond the delegate): one GATHER per padded axis with constant source indices
    (`mirror_indices`), an exact composition since mirror padding only copies elements."""

    int8_shiftable = True
    nnapi_ops = (OperationType.MIRROR_PAD, OperationType.GATHER)
    min_api_level = 29
    dtypes = FSI
    constraints = "constant paddings within the input extents; no zero-sized dimensions; GATHERs below API 34"
    driver_notes = (FEATURE_LEVEL_6_ARMNN,)

    def check(self, c: CheckContext) -> None:
        c.require_operation(OperationType.GATHER, "MIRROR_PAD (GATHER per axis below API 34)")
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
            c.emit(OperationType.MIRROR_PAD, [c.input_operand(0), _paddings_operand(c), c.i32(mode)],
                   [c.output_operand()])
            return
        x = c.input(0)
        pads = const_ints(c, c.input(1))
        per_axis = [(k, mirror_indices(x.shape[k], pads[2 * k], pads[2 * k + 1], mode))
                    for k in range(x.rank) if pads[2 * k] or pads[2 * k + 1]]
        if not per_axis:  # nothing padded: an identity gather keeps the output computed
            per_axis = [(0, np.arange(x.shape[0], dtype=np.int32))]
        gather_chain(c, per_axis)
