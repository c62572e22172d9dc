"""FULLY_CONNECTED."""

from __future__ import annotations

import math

import numpy as np

from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.driver_support import NO_FLOAT16_ARMNN
from nnconv.lowering.registry import Rule, lowering_rule
from nnconv.lowering.rules._weights import QUANT_WEIGHTS, bias_for, check_weighted_op, weights_operand
from nnconv.nnapi.enums import OperandType, OperationType, PaddingCode
from nnconv.nnapi.model import SymmPerChannelQuantParams
from nnconv.tflite.ir import Tensor
from nnconv.tflite.schema_enums import BuiltinOperator, TensorType


_UNPREPARABLE_ACTIVATIONS = {4: "TANH", 6: "SIGMOID"}


@lowering_rule(BuiltinOperator.FULLY_CONNECTED)
class FullyConnected(Rule):
    """TFLite FULLY_CONNECTED(input [..., K], weights [U, K], bias [U]?) -> NNAPI FULLY_CONNECTED
    (input, weights, bias, fuse code) with output [batch, U], batch = numel(input) / K.

    NNAPI flattens an input of rank > 2 itself. A missing bias becomes a zero constant (int32 with scale
    input_scale * weights_scale when quantized). When the TFLite output is not [batch, U] (keep_num_dims,
    or a rank-1 output), the FC writes a [batch, U] temporary and a RESHAPE gives the output shape; TFLite's
    delegate does this from API 30 only, NNAPI runs it from API 27. A rank-1 input is first reshaped to
    [1, K]. Quantized uint8 / int8; hybrid weights through DEQUANTIZE (API 29) or --fold-weights
    (`asymmetric_quantize_inputs` and `quantized_bias_type`: see `_weights`).
    Per-channel int8 weights (the TensorFlow >= 2.16 converter's default for Dense layers): NNAPI's FC has no
    per-channel form, and TFLite's delegate hands them to it anyway, which NNAPI rejects. nnconv lowers them
    from API 29 as RESHAPE [batch, 1, 1, K] -> CONV_2D 1x1 (weights [U, 1, 1, K], TENSOR_QUANT8_SYMM_PER_CHANNEL
    on axis 0) -> RESHAPE to the output: per output channel the same int32 accumulation and requantization
    as TFLite's per-channel FC kernel, so bit-exact, and the whole classifier stays in one partition.
    Blockwise int4 weights (AI Edge Quantizer's dynamic_wi4b32) with a float input become a float32
    constant at every level (`_blockwise`).
    Refused: a fused TANH / SIGMOID (TFLite's FC kernel fails to prepare with them, unlike CONV_2D's, which
    ignores them), and weights_format SHUFFLED4x16INT8 (a TFLite-internal layout for its optimized uint8
    kernel, with no NNAPI form).
    """

    int8_shiftable = True
    nnapi_ops = (OperationType.FULLY_CONNECTED, OperationType.RESHAPE, OperationType.DEQUANTIZE,
                 OperationType.CONV_2D)
    dtypes = ("float32", "uint8", "int8", "int8+int4 weights", "float32+int8/int4 weights (hybrid)")
    constraints = ("default weights format; fused activation NONE or RELU family; per-channel quantized weights "
                   "(as CONV_2D) and hybrid weights need API 29; below 29 input_scale*weights_scale < output_scale")
    driver_notes = (NO_FLOAT16_ARMNN,)

    def check(self, c: CheckContext) -> None:
        if not c.require_inputs(2, 3):
            return
        x, w = c.input(0), c.input(1)
        o = c.options
        act = o.fused_activation_function if o is not None else 0
        # TFLite's per-tensor FC checks the bias scale for int8 too (its convolutions for uint8 only); it
        # reads blockwise weights (rules/_blockwise.py)
        check_weighted_op(c, x, w, c.input(2), "FULLY_CONNECTED",
                          bias_scale_checked=(TensorType.UINT8, TensorType.INT8), blockwise_activation=act)
        if _per_channel_quantized(x, w) and w.quantization.quantized_dimension != 0:
            c.refuse(Code.QUANTIZATION, "per-channel FULLY_CONNECTED weights must be quantized along the "
                     f"output units (axis 0), not axis {w.quantization.quantized_dimension}")
        c.require_rank(x, 4, 1)
        c.require_rank(w, 2, 2, "weights")
        c.require_static_shapes()
        if o is not None and o.weights_format != 0:
            c.refuse(Code.OPTION, "shuffled (SHUFFLED4x16INT8) weights format has no NNAPI equivalent")
        if x is not None and w is not None and w.rank == 2 and w.shape[1]:
            if math.prod(x.shape) % w.shape[1]:
                c.refuse(Code.OPERAND_VALUE, f"input of {math.prod(x.shape)} elements does not divide into rows "
                         f"of {w.shape[1]}")
        if act in _UNPREPARABLE_ACTIVATIONS:
            # Unlike CONV_2D and the others, TFLite's FC kernel rejects these at prepare: the model does
            # not run under TFLite, so there is nothing to reproduce (lowering them as NONE would hide that).
            c.refuse(Code.OPTION, f"fused activation {_UNPREPARABLE_ACTIVATIONS[act]}: TFLite's FULLY_CONNECTED "
                     "takes only NONE, RELU, RELU_N1_TO_1 and RELU6 (its kernel fails to prepare)")
        else:
            c.check_fused_activation(act)

    def lower(self, c: LowerContext) -> None:
        o = c.options
        x_t, w_t, out_t = c.input(0), c.input(1), c.output(0)
        units, k = w_t.shape
        batch = math.prod(x_t.shape) // k
        x = c.input_operand(0)
        if x_t.rank == 1:
            flat = c.temp_like(x, (1, k))
            c.emit(OperationType.RESHAPE, [x, c.i32_vector([1, k])], [flat])
            x = flat
        fused = c.fused_output(o.fused_activation_function if o is not None else 0)
        if _per_channel_quantized(x_t, w_t):
            self._lower_as_conv(c, x, batch, units, k, fused.code, fused.operand)
        elif tuple(out_t.shape) == (batch, units):
            w = weights_operand(c, 1)
            bias = bias_for(c, 2, units, x, w)
            c.emit(OperationType.FULLY_CONNECTED, [x, w, bias, c.i32(fused.code)], [fused.operand])
        else:
            w = weights_operand(c, 1)
            bias = bias_for(c, 2, units, x, w)
            # NNAPI's FC output is always [batch, U]: write it to a temporary and reshape into the TFLite shape.
            flat_out = c.temp_like(fused.operand, (batch, units))
            c.emit(OperationType.FULLY_CONNECTED, [x, w, bias, c.i32(fused.code)], [flat_out])
            c.emit(OperationType.RESHAPE, [flat_out, c.i32_vector(list(out_t.shape))], [fused.operand])
        fused.finish()

    @staticmethod
    def _lower_as_conv(c: LowerContext, x: int, batch: int, units: int, k: int, fuse_code: int, out: int) -> None:
        """Per-channel quantized weights: RESHAPE -> 1x1 CONV_2D (VALID, stride 1) -> RESHAPE (class docstring)."""
        w_t = c.input(1)
        x4 = c.temp_like(x, (batch, 1, 1, k))
        c.emit(OperationType.RESHAPE, [x, c.i32_vector([batch, 1, 1, k])], [x4])
        channel = SymmPerChannelQuantParams(0, tuple(float(s) for s in w_t.quantization.scale))
        w = c.constant(OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL, np.asarray(c.const_value(w_t)).reshape(units, 1, 1, k),
                       channel_quant=channel, name=w_t.name)
        bias = bias_for(c, 2, units, x4, w)
        y4 = c.temp_like(out, (batch, 1, 1, units))
        c.emit(OperationType.CONV_2D,
               [x4, w, bias, c.i32(PaddingCode.VALID), c.i32(1), c.i32(1), c.i32(fuse_code)], [y4])
        c.emit(OperationType.RESHAPE, [y4, c.i32_vector(list(c.info(out).dimensions))], [out])


def _per_channel_quantized(x: Tensor | None, w: Tensor | None) -> bool:
    """Quantized (not hybrid) FC with per-channel weights, lowered as a 1x1 CONV_2D."""
    return (x is not None and w is not None and x.type in QUANT_WEIGHTS and w.quantization is not None
            and w.quantization.is_per_channel)
