"""Convolutions: CONV_2D (GROUPED_CONV_2D when the filter depth divides the input depth), DEPTHWISE_CONV_2D,
TRANSPOSE_CONV, and MediaPipe's Convolution2DTransposeBias custom op.

Float, quantized (uint8 / int8, per-channel int8 weights) and dynamic-range (hybrid) variants share the
operand policy of `_weights`.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from nnconv.lowering.common import check_padding, padding_code
from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.driver_support import NO_FLOAT16_ARMNN
from nnconv.lowering.registry import Rule, custom_rule, lowering_rule
from nnconv.lowering.rules._weights import bias_for, check_weighted_op, weights_operand
from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.operations.slots import slot_operands
from nnconv.nnapi.operations.window import (ConvImplicitSlot, DepthwiseImplicitSlot, GroupedImplicitSlot,
                                            TransposeExplicitSlot)
from nnconv.tflite.ir import Tensor
from nnconv.tflite.schema_enums import BuiltinOperator, Padding, TensorType

CONV_DTYPES = ("float32", "uint8", "int8", "int8+int4 weights", "float32+int8/int4 weights (hybrid)")
TRANSPOSE_CONV_DTYPES = ("float32", "uint8", "int8", "float32+int8 weights (hybrid)")


def check_conv_operands(c: CheckContext, x_slot: int, w_slot: int, bias_slot: int,
                        what: str) -> tuple[Tensor | None, Tensor | None]:
    """The checks every convolution shares: the weighted-op dtype / quantization policy, rank-4 input and
    filter, static shapes. Returns the (input, filter) tensors."""
    x, w = c.input(x_slot), c.input(w_slot)
    check_weighted_op(c, x, w, c.input(bias_slot), what)
    c.require_rank(x, 4, 4)
    c.require_rank(w, 4, 4, "filter")
    c.require_static_shapes()
    return x, w


def check_window_options(c: CheckContext, o: Any) -> None:
    """Refuses strides and dilation factors below 1 (NNAPI requires them positive), then a padding other
    than SAME / VALID."""
    values = {name: getattr(o, name) for name in ("stride_w", "stride_h", "dilation_w_factor", "dilation_h_factor")
              if hasattr(o, name)}
    bad = [f"{name} {value}" for name, value in values.items() if value < 1]
    if bad:
        c.refuse(Code.OPTION, f"{', '.join(bad)}: strides and dilation factors must be positive")
    # A factor far beyond the input's extent only reads padding (every tap but one), and the executor pads
    # physically: a corrupt 65536 would allocate and sweep gigabytes for a result no real model asks for.
    x = c.inputs[0] if c.inputs else None
    if x is not None and x.rank == 4 and not x.has_dynamic_shape:
        extent = {"w": x.shape[2], "h": x.shape[1]}
        huge = [f"{name} {value}" for name, value in values.items()
                if value > max(64, 2 * extent["w" if "_w" in name else "h"])]
        if huge:
            c.refuse(Code.OPTION, f"{', '.join(huge)}: far beyond the input's {x.shape[1]}x{x.shape[2]} extent "
                                  "(a corrupt option?)")
    check_padding(c, o.padding)


class _Convolution(Rule):
    """CONV_2D, DEPTHWISE_CONV_2D and TRANSPOSE_CONV: the weighted-op dtypes and driver notes; the checks and
    the lowered operands of CONV_2D's and DEPTHWISE_CONV_2D's three operands."""

    int8_shiftable = True
    dtypes = CONV_DTYPES
    driver_notes = (NO_FLOAT16_ARMNN,)

    def check_operands(self, c: CheckContext) -> tuple[Tensor | None, Tensor | None] | None:
        """(input, filter) after `check_conv_operands`, None without 2 or 3 inputs."""
        if not c.require_inputs(2, 3):
            return None
        return check_conv_operands(c, 0, 1, 2, self.op.name)

    @staticmethod
    def lower_operands(c: LowerContext, units_axis: int) -> tuple[int, int, int, Tensor, Tensor]:
        """(input, filter, bias) operands and the (input, filter) tensors; the bias has one value per output
        channel, the filter's dimension `units_axis`."""
        x = c.input_operand(0)
        w = weights_operand(c, 1)
        x_t, w_t = c.input(0), c.input(1)
        return x, w, bias_for(c, 2, w_t.shape[units_axis], x, w), x_t, w_t


@lowering_rule(BuiltinOperator.CONV_2D)
class Conv2D(_Convolution):
    """TFLite CONV_2D(input [N,H,W,C], filter [O,KH,KW,C'], bias [O]?) -> NNAPI CONV_2D's implicit-padding
    slots (`ConvImplicitSlot`: input, filter, bias, padding code, stride_w, stride_h, fuse code[, NCHW=false,
    dilation_w, dilation_h]).

    Dilation needs the API 29 operand form. When C is a multiple of C' > 1 groups, the op becomes
    GROUPED_CONV_2D (API 29) with num_groups = C / C'. A missing bias becomes a zero constant (int32 with
    scale input_scale * filter_scale when quantized). Quantized: uint8, or int8 (TENSOR_QUANT8_ASYMM_SIGNED
    from API 30, uint8 + 128 below; per-channel int8 filters TENSOR_QUANT8_SYMM_PER_CHANNEL from API 29).
    TFLite's NNAPI delegate takes int8 only from API 29; NNAPI itself runs the shifted per-tensor form at 27.
    Hybrid (float input, int8 weights): DEQUANTIZE of the weights feeding a float CONV_2D from API 29, or
    weights folded to float32 with --fold-weights at any level.
    """

    nnapi_ops = (OperationType.CONV_2D, OperationType.GROUPED_CONV_2D, OperationType.DEQUANTIZE)
    constraints = ("rank-4 input; dilation, grouped filters, per-channel weights and hybrid weights need API 29; "
                   "below 29 input_scale*filter_scale < output_scale")

    def check(self, c: CheckContext) -> None:
        operands = self.check_operands(c)
        if operands is None:
            return
        (x, w), o = operands, c.options
        if o.dilation_w_factor != 1 or o.dilation_h_factor != 1:
            # hand-written: the dilation operands' level 3 is a rule of the window validator (window_level)
            c.require_api(29, "dilated CONV_2D")
        if x is not None and w is not None and x.rank == 4 and w.rank == 4 and x.shape[3] != w.shape[3]:
            if w.shape[3] and x.shape[3] % w.shape[3] == 0:
                c.require_operation(OperationType.GROUPED_CONV_2D, "grouped convolution (GROUPED_CONV_2D)")
                if o.dilation_w_factor != 1 or o.dilation_h_factor != 1:
                    c.refuse(Code.OPTION, "dilated grouped convolution: GROUPED_CONV_2D has no dilation")
            else:
                c.refuse(Code.OPERAND_VALUE, f"input depth {x.shape[3]} is not a multiple of filter depth "
                         f"{w.shape[3]}")
        c.check_fused_activation(o.fused_activation_function)
        check_window_options(c, o)

    def lower(self, c: LowerContext) -> None:
        o = c.options
        x, w, bias, x_t, w_t = self.lower_operands(c, 0)
        groups = x_t.shape[3] // w_t.shape[3]
        dilated = o.dilation_w_factor != 1 or o.dilation_h_factor != 1
        fused = c.fused_output(o.fused_activation_function)
        if groups > 1:
            g = GroupedImplicitSlot
            args = {g.INPUT: x, g.FILTER: w, g.BIAS: bias, g.PADDING_SCHEME: c.i32(padding_code(o.padding)),
                    g.STRIDE_WIDTH: c.i32(o.stride_w), g.STRIDE_HEIGHT: c.i32(o.stride_h), g.NUM_GROUPS: c.i32(groups),
                    g.ACTIVATION: c.i32(fused.code), g.NCHW: c.boolean(False)}
            c.emit(OperationType.GROUPED_CONV_2D, slot_operands(args), [fused.operand])
        else:
            s = ConvImplicitSlot
            args = {s.INPUT: x, s.FILTER: w, s.BIAS: bias, s.PADDING_SCHEME: c.i32(padding_code(o.padding)),
                    s.STRIDE_WIDTH: c.i32(o.stride_w), s.STRIDE_HEIGHT: c.i32(o.stride_h),
                    s.ACTIVATION: c.i32(fused.code)}
            if dilated:
                args.update({s.NCHW: c.boolean(False), s.DILATION_WIDTH: c.i32(o.dilation_w_factor),
                             s.DILATION_HEIGHT: c.i32(o.dilation_h_factor)})
            c.emit(OperationType.CONV_2D, slot_operands(args), [fused.operand])
        fused.finish()


@lowering_rule(BuiltinOperator.DEPTHWISE_CONV_2D)
class DepthwiseConv2D(_Convolution):
    """TFLite DEPTHWISE_CONV_2D(input [N,H,W,C], filter [1,KH,KW,C*M], bias [C*M]?) -> NNAPI
    DEPTHWISE_CONV_2D's implicit-padding slots (`DepthwiseImplicitSlot`: input, filter, bias, padding code,
    stride_w, stride_h, depth multiplier M, fuse code[, NCHW=false, dilation_w, dilation_h]).

    M is taken from the shapes (filter depth / input depth), which is what the computation means even when
    a converter left the option at a stale value. Dilation needs API 29. Quantized and hybrid variants as
    CONV_2D (per-channel weights on dimension 3).
    """

    nnapi_ops = (OperationType.DEPTHWISE_CONV_2D, OperationType.DEQUANTIZE)
    constraints = ("rank-4 input; filter depth a multiple of the input depth; dilation, per-channel and hybrid "
                   "weights need API 29")

    def check(self, c: CheckContext) -> None:
        operands = self.check_operands(c)
        if operands is None:
            return
        (x, w), o = operands, c.options
        if x is not None and w is not None and x.rank == 4 and w.rank == 4:
            if w.shape[0] != 1 or x.shape[3] == 0 or w.shape[3] % x.shape[3]:
                c.refuse(Code.OPERAND_VALUE, f"filter {list(w.shape)} is not [1, KH, KW, {x.shape[3]} * M]")
        if o.dilation_w_factor != 1 or o.dilation_h_factor != 1:
            # hand-written: the dilation operands' level 3 is a rule of the window validator (window_level)
            c.require_api(29, "dilated DEPTHWISE_CONV_2D")
        c.check_fused_activation(o.fused_activation_function)
        check_window_options(c, o)

    def lower(self, c: LowerContext) -> None:
        o = c.options
        x, w, bias, x_t, w_t = self.lower_operands(c, 3)
        fused = c.fused_output(o.fused_activation_function)
        s = DepthwiseImplicitSlot
        args = {s.INPUT: x, s.FILTER: w, s.BIAS: bias, s.PADDING_SCHEME: c.i32(padding_code(o.padding)),
                s.STRIDE_WIDTH: c.i32(o.stride_w), s.STRIDE_HEIGHT: c.i32(o.stride_h),
                s.DEPTH_MULTIPLIER: c.i32(w_t.shape[3] // x_t.shape[3]), s.ACTIVATION: c.i32(fused.code)}
        if o.dilation_w_factor != 1 or o.dilation_h_factor != 1:
            args.update({s.NCHW: c.boolean(False), s.DILATION_WIDTH: c.i32(o.dilation_w_factor),
                         s.DILATION_HEIGHT: c.i32(o.dilation_h_factor)})
        c.emit(OperationType.DEPTHWISE_CONV_2D, slot_operands(args), [fused.operand])
        fused.finish()


def transpose_padding(in_size: int, out_size: int, stride: int, filter_size: int) -> tuple[int, int]:
    """TFLite's transpose-conv padding for a given output size (`ComputePaddingWithOffset`): with
    total = (in - 1) * stride + filter - out, head = max(total, 0) // 2. NNAPI's tail is whatever makes
    its output size equal `out`; it is negative when the output reaches past the last filter tap."""
    total = (in_size - 1) * stride + filter_size - out_size
    head = max(total, 0) // 2
    return head, total - head


def _emit_transpose_conv(c: LowerContext, x_slot: int, w_slot: int, bias_slot: int, padding: int,
                         stride_w: int, stride_h: int, act: int) -> None:
    """NNAPI TRANSPOSE_CONV_2D in the explicit-padding form, with TFLite's padding for the output size."""
    x_t, w_t, out_t = c.input(x_slot), c.input(w_slot), c.output(0)
    x = c.input_operand(x_slot)
    w = weights_operand(c, w_slot, x_slot)
    bias = bias_for(c, bias_slot, w_t.shape[0], x, w)
    if padding == Padding.VALID:
        # No head padding; the tail makes the output size the requested one (negative when larger).
        pl, pt = 0, 0
        pr = (x_t.shape[2] - 1) * stride_w + w_t.shape[2] - out_t.shape[2]
        pb = (x_t.shape[1] - 1) * stride_h + w_t.shape[1] - out_t.shape[1]
    else:
        pl, pr = transpose_padding(x_t.shape[2], out_t.shape[2], stride_w, w_t.shape[2])
        pt, pb = transpose_padding(x_t.shape[1], out_t.shape[1], stride_h, w_t.shape[1])
    fused = c.fused_output(act)
    s = TransposeExplicitSlot
    args = {s.INPUT: x, s.FILTER: w, s.BIAS: bias, s.PADDING_LEFT: c.i32(pl), s.PADDING_RIGHT: c.i32(pr),
            s.PADDING_TOP: c.i32(pt), s.PADDING_BOTTOM: c.i32(pb), s.STRIDE_WIDTH: c.i32(stride_w),
            s.STRIDE_HEIGHT: c.i32(stride_h), s.ACTIVATION: c.i32(fused.code), s.NCHW: c.boolean(False)}
    c.emit(OperationType.TRANSPOSE_CONV_2D, slot_operands(args), [fused.operand])
    fused.finish()


def _check_transpose_conv(c: CheckContext, x_slot: int, w_slot: int, bias_slot: int, act: int) -> None:
    c.require_operation(OperationType.TRANSPOSE_CONV_2D)
    x, w = check_conv_operands(c, x_slot, w_slot, bias_slot, "TRANSPOSE_CONV")
    if w is not None and w.type == TensorType.INT4:
        # unlike CONV_2D's and FULLY_CONNECTED's, TFLite's kernel fails to prepare with them (measured)
        c.refuse(Code.DTYPE, f"filter '{w.name}' is int4: TFLite's TRANSPOSE_CONV takes int8 filters only",
                 "quantize this filter to int8")
    if x is not None and w is not None and x.rank == 4 and w.rank == 4 and x.shape[3] != w.shape[3]:
        c.refuse(Code.OPERAND_VALUE, f"input depth {x.shape[3]} differs from filter depth {w.shape[3]}")
    out = c.output(0)
    if x is not None and w is not None and x.rank == 4 and w.rank == 4 and out.rank == 4:
        if out.shape[3] != w.shape[0] or out.shape[0] != x.shape[0]:
            c.refuse(Code.OPERAND_VALUE, f"output shape {list(out.shape)} does not match the filter and input")
    c.check_fused_activation(act)


@lowering_rule(BuiltinOperator.TRANSPOSE_CONV)
class TransposeConv(_Convolution):
    """TFLite TRANSPOSE_CONV(output_shape [4], weights [O,KH,KW,C], input [N,H,W,C][, bias [O]]) -- note the
    order: the input comes third -> NNAPI TRANSPOSE_CONV_2D (input, filter, bias, pad left/right/top/bottom,
    stride_w, stride_h, fuse code, NCHW=false), API 29.

    The explicit-padding form carries TFLite's padding exactly (head = total // 2, odd remainder at the
    tail, total = (in - 1) * stride + K - out), also where NNAPI's implicit scheme would round differently;
    the output shape must be constant and equal to the output tensor's. A missing bias becomes zeros.
    """

    nnapi_ops = (OperationType.TRANSPOSE_CONV_2D, OperationType.DEQUANTIZE)
    min_api_level = 29
    dtypes = TRANSPOSE_CONV_DTYPES
    constraints = "API 29; constant output_shape; rank-4 input; hybrid weights need API 29 or --fold-weights"

    def check(self, c: CheckContext) -> None:
        if not c.require_inputs(3, 4):
            return
        shape_t = c.input(0)
        if c.require_const(shape_t, "output_shape"):
            shape = [int(v) for v in np.asarray(c.const_value(shape_t)).reshape(-1)]
            if shape != list(c.output(0).shape):
                c.refuse(Code.OPERAND_VALUE, f"output_shape {shape} differs from the output tensor's "
                         f"{list(c.output(0).shape)}")
        opts = c.options
        _check_transpose_conv(c, 2, 1, 3, getattr(opts, "fused_activation_function", 0))
        check_window_options(c, opts)

    def lower(self, c: LowerContext) -> None:
        o = c.options
        _emit_transpose_conv(c, 2, 1, 3, o.padding, o.stride_w, o.stride_h,
                             getattr(o, "fused_activation_function", 0))


# TfLitePadding of MediaPipe's custom options: 0 unknown, 1 same, 2 valid.
_MP_PADDING = {1: Padding.SAME, 2: Padding.VALID}


def mediapipe_transpose_options(raw: bytes | None) -> tuple[int, int, int] | None:
    """(TFLite Padding, stride_w, stride_h) from the TfLiteTransposeConvParams-like struct (three
    little-endian int32: padding, stride_width, stride_height); None when unreadable."""
    if raw is None or len(raw) < 12:
        return None
    padding, sw, sh = struct.unpack_from("<iii", bytes(raw), 0)
    if padding not in _MP_PADDING or sw < 1 or sh < 1:
        return None
    return int(_MP_PADDING[padding]), sw, sh


def _mediapipe_out_size(in_size: int, k: int, stride: int, padding: int) -> int:
    pad = max(0, k - (in_size - 1) % stride - 1) if padding == Padding.SAME else 0
    return stride * (in_size - 1) + k - pad


@custom_rule("Convolution2DTransposeBias")
class Convolution2DTransposeBias(Rule):
    """MediaPipe custom op Convolution2DTransposeBias(input [N,H,W,C], weights [O,KH,KW,C], bias [O]):
    a float32 transpose convolution with bias; padding and strides in custom_options as three int32
    (TfLitePadding 1 = SAME / 2 = VALID, stride_width, stride_height).
    -> NNAPI TRANSPOSE_CONV_2D in the explicit-padding form (API 29).

    MediaPipe sizes the output itself: P = max(0, K - (in - 1) % stride - 1) with SAME, 0 with VALID;
    out = stride * (in - 1) + K - P, head padding P // 2. The output tensor must have that size; the
    padding of `transpose_padding` for it is then MediaPipe's.
    """

    nnapi_ops = (OperationType.TRANSPOSE_CONV_2D,)
    min_api_level = 29
    dtypes = ("float32",)
    constraints = "API 29; float32; custom options (padding, stride_w, stride_h) readable"
    beyond_delegate = True

    def check(self, c: CheckContext) -> None:
        if not c.require_inputs(3, 3):
            return
        if mediapipe_transpose_options(c.op.custom_options) is None:
            c.refuse(Code.OPTION, "custom options are not a (padding, stride_width, stride_height) struct")
        x, w, out = c.input(0), c.input(1), c.output(0)
        c.require_dtype(x, (TensorType.FLOAT32,))
        opts = mediapipe_transpose_options(c.op.custom_options)
        if opts is not None and x is not None and w is not None and x.rank == 4 and w.rank == 4 and out.rank == 4:
            padding, sw, sh = opts
            expected = [_mediapipe_out_size(x.shape[1], w.shape[1], sh, padding),
                        _mediapipe_out_size(x.shape[2], w.shape[2], sw, padding)]
            if list(out.shape[1:3]) != expected:
                c.refuse(Code.OPERAND_VALUE, f"output size {list(out.shape[1:3])} differs from the {expected} "
                         "MediaPipe's kernel computes")
        _check_transpose_conv(c, 0, 1, 2, 0)

    def lower(self, c: LowerContext) -> None:
        padding, sw, sh = mediapipe_transpose_options(c.op.custom_options)  # type: ignore[misc]
        _emit_transpose_conv(c, 0, 1, 2, padding, sw, sh, 0)
