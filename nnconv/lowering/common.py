"""Helpers shared by lowering rules: padding codes, bias creation, dtype sets."""

from __future__ import annotations

import numpy as np

from nnconv.lowering.context import LowerContext
from nnconv.nnapi.enums import OperandType, PaddingCode
from nnconv.tflite.schema_enums import Padding, TensorType

FLOAT = (TensorType.FLOAT32,)
QUANT8 = (TensorType.UINT8, TensorType.INT8)
FLOAT_OR_QUANT8 = FLOAT + QUANT8


def padding_code(tflite_padding: int) -> int:
    """TFLite Padding (SAME=0, VALID=1) -> NNAPI implicit PaddingCode (SAME=1, VALID=2)."""
    return int(PaddingCode.SAME if tflite_padding == Padding.SAME else PaddingCode.VALID)


def bias_operand(c: LowerContext, input_slot: int, num_units: int, input_operand: int, filter_operand: int) -> int:
    """The op's bias operand, or a zero bias when TFLite omits it (NNAPI requires one): float32 zeros, or
    int32 zeros with scale input_scale * filter_scale for quantized ops."""
    t = c.input(input_slot)
    if t is not None:
        return c.in_(input_slot)
    od_in = c.info(input_operand)
    if od_in.type.is_quantized:
        od_w = c.info(filter_operand)
        w_scale = od_w.scale if od_w.channel_quant is None else 0.0
        return c.constant(OperandType.TENSOR_INT32, np.zeros(num_units, np.int32), scale=od_in.scale * w_scale)
    ftype = OperandType.TENSOR_FLOAT16 if od_in.type is OperandType.TENSOR_FLOAT16 else OperandType.TENSOR_FLOAT32
    return c.constant(ftype, np.zeros(num_units, np.float32))
