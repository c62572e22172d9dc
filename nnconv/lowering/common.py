"""Helpers shared by lowering rules: padding codes, bias creation, dtype sets."""

from __future__ import annotations

import numpy as np

from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.registry import RULES
from nnconv.nnapi.enums import OperandType, PaddingCode
from nnconv.tflite.schema_enums import Padding, TensorType

# Short names of the TFLite tensor types the rules check (re-exported by rules/_arith and rules/_shape_common).
F32, F16, U8, I8, I32, I64, BOOL = (TensorType.FLOAT32, TensorType.FLOAT16, TensorType.UINT8, TensorType.INT8,
                                     TensorType.INT32, TensorType.INT64, TensorType.BOOL)
FLOAT = (TensorType.FLOAT32,)
QUANT8 = (TensorType.UINT8, TensorType.INT8)
FLOAT_OR_QUANT8 = FLOAT + QUANT8


def padding_code(tflite_padding: int) -> int:
    """TFLite Padding (SAME=0, VALID=1) -> NNAPI implicit PaddingCode (SAME=1, VALID=2)."""
    return int(PaddingCode.SAME if tflite_padding == Padding.SAME else PaddingCode.VALID)


def check_padding(c: CheckContext, tflite_padding: int) -> None:
    """Refuses a Padding value other than SAME / VALID: the schema has no other, and `padding_code` would
    silently read it as VALID (TFLite's convolutions fail to prepare with it)."""
    if tflite_padding not in (Padding.SAME, Padding.VALID):
        c.refuse(Code.OPTION, f"unknown padding {tflite_padding} (TFLite has SAME and VALID only)")


def bias_operand(c: LowerContext, input_slot: int, num_units: int, input_operand: int, filter_operand: int) -> int:
    """The op's bias operand, or a zero bias when TFLite omits it (NNAPI requires one): float32 zeros, or
    int32 zeros with scale input_scale * filter_scale for quantized ops."""
    t = c.input(input_slot)
    if t is not None:
        return c.input_operand(input_slot)
    od_in = c.info(input_operand)
    if od_in.type.is_quantized:
        od_w = c.info(filter_operand)
        w_scale = od_w.scale if od_w.channel_quant is None else 0.0
        return c.constant(OperandType.TENSOR_INT32, np.zeros(num_units, np.int32), scale=od_in.scale * w_scale)
    ftype = OperandType.TENSOR_FLOAT16 if od_in.type is OperandType.TENSOR_FLOAT16 else OperandType.TENSOR_FLOAT32
    return c.constant(ftype, np.zeros(num_units, np.float32))


def check_int8(c: CheckContext, shiftable: bool | None = None) -> None:
    """int8 activations: from API 30 NNAPI takes them as TENSOR_QUANT8_ASYMM_SIGNED; below, the op must be
    one whose int8 tensors can be carried as uint8 with zero point +128 (per-tensor quantization only): its
    rule's `int8_shiftable`, unless `shiftable` says otherwise."""
    if c.api_level >= 30:
        return
    if shiftable is None:
        rule = RULES.get(c.op.builtin_code)  # custom ops: None (TFLite's delegate shifts no custom op)
        shiftable = rule is not None and rule.int8_shiftable
    has_int8 = any(t is not None and t.type == TensorType.INT8 and not t.quantization.is_per_channel
                   and not c.is_const(t) for t in [*c.inputs, *c.outputs])
    if has_int8 and not shiftable:
        c.require_operand_type(OperandType.TENSOR_QUANT8_ASYMM_SIGNED, f"int8 {c.op.name} (TENSOR_QUANT8_ASYMM_SIGNED)",
                               hint="raise --api-level to 30, or requantize the model to uint8")
