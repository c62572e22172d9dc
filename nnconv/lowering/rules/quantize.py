"""QUANTIZE and DEQUANTIZE.

QUANTIZE of a float tensor is NNAPI QUANTIZE (API 29). QUANTIZE of a quantized tensor (TFLite's
requantization) is ADD(x, real 0) into the output's scale and zero point (API 27): one op instead of the
delegate's DEQUANTIZE + QUANTIZE, exact when the scales match (a zero-point shift, e.g. uint8 <-> int8) and
otherwise within 1 LSB of TFLite's single-multiplier requantization. NNAPI's ADD needs one operand type on
both sides, so uint8 -> int8 at API 30 (QUANT8_ASYMM -> QUANT8_ASYMM_SIGNED) uses DEQUANTIZE + QUANTIZE.

DEQUANTIZE of a constant (float16 weights, or int8 / uint8 constants) emits no operation: the output
tensor becomes a float32 constant (float16 is widened exactly by the operand policy; integers are
dequantized at conversion time exactly as NNAPI would, `float32(scale * (q - zp))`) that consumers read.

Constant int4 weights (AI Edge Quantizer's weight-only int4, packed two a byte: `tflite/int4.py`) widen to
int8 without loss, and NNAPI's DEQUANTIZE computes `float32(scale * q)` as TFLite's does. From API 29 they
stay 8-bit: a TENSOR_QUANT8_SYMM constant (TENSOR_QUANT8_SYMM_PER_CHANNEL for per-channel scales) read by a
DEQUANTIZE, a quarter of the float32 constant's size; `--fold-weights`, API 27/28 (no symmetric 8-bit
types), a nonzero zero point or a rank above 4 make them a float32 constant instead. Both forms are exact.
Blockwise scales (the `details` union's BlockwiseQuantization) are refused: nnconv reads per-tensor and
per-channel scales only, and would otherwise read the tensor as unscaled.
"""

from __future__ import annotations

import numpy as np

from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.registry import Rule, lowering_rule
from nnconv.lowering.rules._arith import F32, I8, QUANT, U8, check_common, nnapi_dims, requantize
from nnconv.lowering.rules._weights import check_affine, check_int4, dequantize_tensor, folding_weights
from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.nnapi.model import SymmPerChannelQuantParams
from nnconv.tflite.ir import Tensor
from nnconv.tflite.schema_enums import BuiltinOperator, TensorType

F16 = TensorType.FLOAT16
I16 = TensorType.INT16
I4 = TensorType.INT4


@lowering_rule(BuiltinOperator.QUANTIZE)
class Quantize(Rule):
    """TFLite QUANTIZE(x) -> NNAPI QUANTIZE(x) for a float32 / float16 input (API 29; int8 output below
    API 30 as uint8 + 128), or a requantizing ADD(x, real 0) for a uint8 / int8 input (module docstring)."""

    int8_shiftable = True
    nnapi_ops = (OperationType.QUANTIZE, OperationType.ADD, OperationType.DEQUANTIZE)
    dtypes = ("float32", "float16", "uint8", "int8")
    constraints = "per-tensor uint8/int8 output; a float input needs API 29"

    def check(self, c: CheckContext) -> None:
        if not check_common(c, 1, (F32, F16, U8, I8), max_rank=None, same_type=False):
            return
        y = c.output(0)
        if not c.require_dtype(y, QUANT, "output"):
            return
        if y.quantization.is_per_channel or not y.quantization.is_quantized:
            c.refuse(Code.QUANTIZATION, f"output '{y.name}' needs per-tensor quantization")
            return
        x = c.input(0)
        if x.type in (F32, F16):
            c.require_operation(OperationType.QUANTIZE, "QUANTIZE of a float tensor")
        elif c.nnapi_type(x) is not c.nnapi_type(y):
            c.require_operation((OperationType.DEQUANTIZE, OperationType.QUANTIZE),
                                "requantization between uint8 and int8 operand types (DEQUANTIZE + QUANTIZE)")
        else:
            c.require_rank(x, 4, 0)  # the ADD form

    def lower(self, c: LowerContext) -> None:
        x, out = c.input_operand(0), c.output_operand(0)
        x_type = c.info(x).type
        if not x_type.is_quantized:
            c.emit(OperationType.QUANTIZE, [x], [out])
        elif x_type is c.info(out).type:
            requantize(c, x, out)
        else:
            f = c.temp(OperandType.TENSOR_FLOAT32, list(c.info(x).dimensions))
            c.emit(OperationType.DEQUANTIZE, [x], [f])
            c.emit(OperationType.QUANTIZE, [f], [out])


@lowering_rule(BuiltinOperator.DEQUANTIZE)
class Dequantize(Rule):
    """TFLite DEQUANTIZE(x) -> NNAPI DEQUANTIZE(x) (uint8 API 27; int8 API 27 as uint8 + 128, 30 signed;
    per-channel int8 API 29); a non-constant float16 input -> CAST to float32 (API 29, exact); a constant
    input -> no operation, a float32 constant, except constant int4 weights, which from API 29 become
    DEQUANTIZE(TENSOR_QUANT8_SYMM[_PER_CHANNEL] constant) (module docstring)."""

    int8_shiftable = True
    nnapi_ops = (OperationType.DEQUANTIZE, OperationType.CAST)
    dtypes = ("uint8", "int8", "float16", "int4")
    constraints = ("a constant input folds into a float32 constant (constant int4: an 8-bit constant + "
                   "DEQUANTIZE from API 29); float16 activations need API 29")

    def check(self, c: CheckContext) -> None:
        if not c.require_inputs(1):
            return
        x, y = c.input(0), c.output(0)
        c.require_dtype(y, (F32,), "output")
        if not check_affine(c, x):
            return
        if x.type == I4 and not c.is_const(x):
            c.refuse(Code.DTYPE, f"input '{x.name}' is int4 computed at run time; NNAPI has no 4-bit operand "
                     "type (only constant int4 weights widen to int8)")
            return
        if x.type == I4 and not check_int4(c, x, "int4 weights"):
            return
        if x.type != I4 and not c.require_dtype(x, (U8, I8, F16), "input"):
            return
        c.require_static_shapes()
        if tuple(x.shape) != tuple(y.shape):
            # TFLite resizes the output to the input's shape; the declared one is what consumers were checked
            # against (a corrupt model: a bias read through it would not fit its convolution)
            c.refuse(Code.OPERAND_VALUE, f"input '{x.name}' {list(x.shape)} and output '{y.name}' "
                     f"{list(y.shape)} differ in shape; DEQUANTIZE keeps the shape")
            return
        if c.is_const(x):
            if c.op.outputs[0] in c.subgraph.outputs:
                c.refuse(Code.OPERAND_VALUE, f"DEQUANTIZE of a constant into model output '{y.name}': an NNAPI "
                         "model output cannot be a constant")
            return
        c.require_rank(x, 4, 0)
        if x.type == F16:
            c.require_operation(OperationType.CAST, "DEQUANTIZE of a float16 tensor (CAST)")
        elif x.quantization.is_per_channel:
            c.require_signature(OperationType.DEQUANTIZE, OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL,
                                "DEQUANTIZE of a per-channel tensor")

    def lower(self, c: LowerContext) -> None:
        x_t = c.input(0)
        if c.is_const(x_t):
            if x_t.type == F16:
                c.alias(c.op.outputs[0], c.input_operand(0))  # the policy already made it a float32 constant
                return
            if x_t.type == I4 and self._int4_as_int8(c, x_t):
                return
            value = dequantize_tensor(c, x_t).reshape(nnapi_dims(x_t))
            c.alias(c.op.outputs[0], c.constant(OperandType.TENSOR_FLOAT32, value, name=c.output(0).name))
            return
        op = OperationType.CAST if x_t.type == F16 else OperationType.DEQUANTIZE
        c.emit(op, [c.input_operand(0)], [c.output_operand(0)])

    @staticmethod
    def _int4_as_int8(c: LowerContext, x_t: Tensor) -> bool:
        """Constant int4 weights as a symmetric 8-bit constant + DEQUANTIZE (module docstring); False where
        that form does not apply and the caller folds them into float32."""
        q = x_t.quantization
        scales = [float(np.float32(s)) for s in q.scale]
        if (c.api_level < 29 or folding_weights(c) or x_t.rank > 4 or not scales or min(scales) <= 0
                or any(z != 0 for z in q.zero_point)):
            return False
        dims = nnapi_dims(x_t)
        value = np.asarray(c.const_value(x_t), np.int8).reshape(dims)
        if q.is_per_channel:
            w = c.constant(OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL, value, name=x_t.name,
                           channel_quant=SymmPerChannelQuantParams(q.quantized_dimension, tuple(scales)))
        else:
            w = c.constant(OperandType.TENSOR_QUANT8_SYMM, value, scale=scales[0], name=x_t.name)
        out = c.temp(OperandType.TENSOR_FLOAT32, dims, name=c.output(0).name)
        c.emit(OperationType.DEQUANTIZE, [w], [out])
        # a constant producer: each partition reading the weights lowers this again (convert.constant_producers)
        c.alias(c.op.outputs[0], out)
        return True
