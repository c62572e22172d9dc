"""Operand policy shared by the weight-carrying rules (CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED,
TRANSPOSE_CONV, MediaPipe's Convolution2DTransposeBias).

Three cases, told apart by the input and weight dtypes:
- float: float32 input and float32 (or constant float16, widened by the operand policy) weights;
- quantized: uint8 or int8 input with weights of the same family. Per-channel int8 weights become
  TENSOR_QUANT8_SYMM_PER_CHANNEL, which NNAPI has from API 29. Before API 29, NNAPI documents
  `output_scale > input_scale * filter_scale` for these ops;
- dynamic-range ("hybrid"): float32 input with constant int8 / uint8 weights. NNAPI has no hybrid
  convolution; from API 29 the weights go through a DEQUANTIZE into a float temporary, as TFLite's NNAPI
  delegate does. With `ConversionOptions.fold_dynamic_range_weights` they are dequantized at conversion
  time into a float32 constant instead, which also works at API 27/28. TFLite's hybrid kernels quantize
  the float input on the fly (symmetrically, or per row asymmetrically with the FULLY_CONNECTED /
  BATCH_MATMUL option `asymmetric_quantize_inputs`); the float computation differs from either form only by
  that input-quantization error, so the option selects nothing in NNAPI and is not refused.

`quantized_bias_type` (CONV_2D, TRANSPOSE_CONV, FULLY_CONNECTED) only names the bias tensor's type, which
`check_weighted_op` requires to be int32 for 8-bit ops (int64 biases belong to the int16 kernels).

Constant int4 weights (AI Edge Quantizer's int4 recipes with int8 or float activations; TFLite's FC and
convolution kernels unpack them to int8) are int8 weights whose values lie in -8..7: the operand policy gives
them the int8 operand types (`CheckContext.nnapi_type`), with their values unpacked (`const_value`), so both
the quantized and the hybrid cases above take them exactly as they take int8.
"""

from __future__ import annotations

import numpy as np

from nnconv.lowering.common import bias_operand
from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.rules._blockwise import BLOCKWISE_HINT, blockwise_values, check_blockwise, is_blockwise
from nnconv.tflite.kernel_refusals import bias_scale_mismatch
from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.tflite.ir import QUANTIZATION_DETAILS, Tensor
from nnconv.tflite.schema_enums import TensorType

FLOAT_WEIGHTS = (TensorType.FLOAT32, TensorType.FLOAT16)
QUANT_WEIGHTS = (TensorType.INT8, TensorType.UINT8)
HYBRID_WEIGHTS = QUANT_WEIGHTS + (TensorType.INT4,)


def is_hybrid(x: Tensor | None, w: Tensor | None) -> bool:
    """Float activations with quantized weights (TFLite's dynamic-range quantization)."""
    return (x is not None and w is not None and x.type == TensorType.FLOAT32 and w.type in HYBRID_WEIGHTS)


def check_affine(c: CheckContext, w: Tensor) -> bool:
    """Refuses a tensor quantized by the schema's `details` union (blockwise int4: per-block scales in
    tensors of their own), whose scale / zero point fields TFLite ignores and nnconv would misread."""
    details = w.quantization.details
    if not details:
        return True
    kind = QUANTIZATION_DETAILS.get(details, f"details type {details}")
    c.refuse(Code.QUANTIZATION, f"'{w.name}' is quantized by {kind} (per-block scales in tensors of their own); "
             "NNAPI and nnconv take per-tensor or per-channel scales here", hint=BLOCKWISE_HINT)
    return False


def check_int4(c: CheckContext, w: Tensor, what: str) -> bool:
    """Int4 tensors lower only as dense constants (their values unpacked at conversion time)."""
    if not c.require_const(w, what):
        return False
    if w.sparsity is not None:
        c.refuse(Code.QUANTIZATION, f"{what} '{w.name}' are sparse int4; nnconv unpacks dense int4 only")
        return False
    return True


def folding_weights(c: CheckContext) -> bool:
    """Whether the conversion folds dynamic-range weights into float32 constants (--fold-weights)."""
    return bool(getattr(c.state.options, "fold_dynamic_range_weights", False))


def require_weight_dequantize(c: CheckContext, what: str) -> None:
    """Dynamic-range (hybrid) weights reach NNAPI as TENSOR_QUANT8_SYMM constants behind a DEQUANTIZE, whose
    level that type needs, unless --fold-weights turns them into float32 constants here."""
    if not folding_weights(c):
        c.require_signature(OperationType.DEQUANTIZE, OperandType.TENSOR_QUANT8_SYMM,
                            f"dynamic-range (hybrid) {what}: DEQUANTIZE of the weights",
                            hint="raise --api-level to 29, or pass --fold-weights to dequantize the weights into "
                                 "float32 constants at conversion time")


def check_weighted_op(c: CheckContext, x: Tensor | None, w: Tensor | None, bias: Tensor | None, what: str,
                      per_channel: bool = True,
                      bias_scale_checked: tuple[TensorType, ...] = (TensorType.UINT8,),
                      blockwise_activation: int | None = None) -> None:
    """Records every dtype / quantization refusal of a weighted op. `per_channel`: whether the NNAPI op
    takes per-channel quantized weights at all (FULLY_CONNECTED does not). `bias_scale_checked`: the input
    types for which TFLite's kernel compares a per-tensor op's bias scale with input_scale * filter_scale
    (`tflite/kernel_refusals.py`). `blockwise_activation`: the op's fused activation where TFLite reads blockwise
    weights (FULLY_CONNECTED; `_blockwise`), None where it does not."""
    if x is None or w is None:
        return
    out = c.output(0)
    if is_blockwise(w) and blockwise_activation is not None:
        if check_blockwise(c, w, x, blockwise_activation):  # folded at every level: no DEQUANTIZE needed
            c.require_dtype(out, (TensorType.FLOAT32,), "output")
            if bias is not None:
                c.require_dtype(bias, (TensorType.FLOAT32,), "bias")
        return
    if not check_affine(c, w):
        return
    if x.type == TensorType.FLOAT32:
        if w.type in FLOAT_WEIGHTS:
            if w.type == TensorType.FLOAT16:
                c.require_const(w, "float16 weights")
        elif w.type in HYBRID_WEIGHTS:
            if w.type == TensorType.INT4:
                check_int4(c, w, f"dynamic-range (hybrid) {what} weights")
            else:
                c.require_const(w, f"dynamic-range (hybrid) {what} weights")
            require_weight_dequantize(c, what)
        else:
            c.require_dtype(w, FLOAT_WEIGHTS + HYBRID_WEIGHTS, "weights")
        c.require_dtype(out, (TensorType.FLOAT32,), "output")
        if bias is not None:
            c.require_dtype(bias, (TensorType.FLOAT32,), "bias")
        return
    if x.type not in QUANT_WEIGHTS:
        c.require_dtype(x, (TensorType.FLOAT32,) + QUANT_WEIGHTS)
        return
    if w.type == TensorType.INT4 and x.type == TensorType.INT8:
        check_int4(c, w, f"int4 {what} weights")
    else:
        c.require_dtype(w, (x.type,), "weights")
    c.require_dtype(out, (x.type,), "output")
    if bias is not None:
        c.require_dtype(bias, (TensorType.INT32,), "bias")
    if not x.quantization.scale or not out.quantization.scale:
        c.refuse(Code.QUANTIZATION, "quantized input and output need a scale")
        return
    if w.quantization.is_per_channel:
        if not per_channel:
            c.refuse(Code.QUANTIZATION, f"{what} takes per-tensor quantized weights only")
        elif c.require_operand_type(OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL,
                                    "per-channel quantized weights (TENSOR_QUANT8_SYMM_PER_CHANNEL)"):
            if any(z != 0 for z in w.quantization.zero_point):
                c.refuse(Code.QUANTIZATION, "per-channel weights must be symmetric (zero point 0)")
        return
    if not w.quantization.scale:
        c.refuse(Code.QUANTIZATION, "quantized weights need a scale")
        return
    product = float(np.float32(x.quantization.scale[0]) * np.float32(w.quantization.scale[0]))
    if product >= out.quantization.scale[0]:
        # hand-written: the scale relation's level 3 is a rule of the validators (scale_relation_level)
        c.require_api(29, f"quantized {what} with input_scale * filter_scale >= output_scale")
    if bias is not None and x.type in bias_scale_checked:
        warning = bias_scale_mismatch(x, w, bias, out)
        if warning:
            c.refuse(Code.TFLITE_REFUSES, *warning)


def weights_operand(c: LowerContext, slot: int, x_slot: int = 0) -> int:
    """The NNAPI weights operand: the tensor itself, or float32 weights for a hybrid op (a folded constant
    with `fold_dynamic_range_weights`, else a DEQUANTIZE into a temporary)."""
    x, w = c.input(x_slot), c.input(slot)
    if not is_hybrid(x, w) or w is None:
        return c.input_operand(slot)
    if is_blockwise(w):
        return c.constant(OperandType.TENSOR_FLOAT32, blockwise_values(c, w), name=f"{w.name}/dequantized")
    if folding_weights(c):
        return c.constant(OperandType.TENSOR_FLOAT32, dequantize_tensor(c, w), name=f"{w.name}/dequantized")
    tmp = c.temp(OperandType.TENSOR_FLOAT32, w.shape, name=f"{w.name}/dequantized")
    c.emit(OperationType.DEQUANTIZE, [c.input_operand(slot)], [tmp])
    return tmp


def dequantize_tensor(c: CheckContext, w: Tensor) -> np.ndarray:
    """Real values of a constant quantized tensor (`Quantization.dequantize`)."""
    return w.quantization.dequantize(c.const_value(w))


def bias_for(c: LowerContext, slot: int, units: int, x_operand: int, w_operand: int) -> int:
    """The op's bias: a zero bias when TFLite omits it; a constant quantized bias is re-emitted with the
    scale NNAPI requires (input_scale * filter_scale, or 0 for per-channel weights), since TFLite files
    do not always carry it."""
    t = c.input(slot)
    if t is None:
        return bias_operand(c, slot, units, x_operand, w_operand)
    od_x, od_w = c.info(x_operand), c.info(w_operand)
    if t.type == TensorType.INT32 and od_x.type.is_quantized and c.is_const(t):
        scale = 0.0 if od_w.channel_quant is not None else float(np.float32(od_x.scale) * np.float32(od_w.scale))
        return c.constant(OperandType.TENSOR_INT32, np.asarray(c.const_value(t), np.int32).reshape(units),
                          scale=scale, name=t.name)
    return c.input_operand(slot)
