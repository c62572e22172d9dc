"""TFLite's arithmetic for single NNAPI operations whose reference arithmetic differs from TFLite's reference
kernels: the kernels `verify`'s rerun computes them with (tflite_arithmetic.py picks the operations), never
an NNAPI semantics, never run by `run` or `convert`. Each is measured bit-exact against TFLite's reference
kernels, the op alone on TFLite's inputs (tests/parity/test_tflite_arithmetic_ops.py,
test_tflite_multipliers.py, tests/lowering/test_fully_connected.py).

Where TFLite's arithmetic is NNAPI's on other operands (int8 pooled in the signed domain, convolutions
requantized with other multipliers), the kernel is NNAPI's own, handed other operands or another
`KernelCall.conv_requantization`; only the rest is computed here.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from nnconv.nnapi.enums import FuseCode, OperandType, OperationType
from nnconv.nnapi.model import Operand
from nnconv.nnapi.operations import window
from nnconv.nnapi.quantization import (conv_multipliers, multiply_by_quantized_multiplier, qrange, quantize_multiplier,
                                       quantized_activation_range)
from nnconv.runtime.kernels import KERNELS
from nnconv.runtime.kernels._spatial import implicit_padding, window_params
from nnconv.runtime.kernels.registry import ConvRequantization, KernelCall, KernelFn

# The operations whose kernels requantize through `KernelCall.conv_requantization` (their multipliers formed
# from input x filter scale, rounded to float32 by NNAPI's reference, kept in double by TFLite).
CONV_REQUANTIZING = frozenset({OperationType.CONV_2D, OperationType.DEPTHWISE_CONV_2D, OperationType.FULLY_CONNECTED,
                               OperationType.TRANSPOSE_CONV_2D, OperationType.GROUPED_CONV_2D,
                               OperationType.BATCH_MATMUL})
CARRIER_OFFSET = 128  # below API 30 nnconv carries int8 tensors as uint8 (+128)


@dataclasses.dataclass
class TfliteRequantizingCall(KernelCall):
    """A call whose convolution requantization is TFLite's: the multipliers from the double product input x
    filter scale (TFLite's GetQuantizedConvolutionMultipler, where NNAPI's rounds the product to float32),
    applied with one rounding for an operation lowered from a TFLite FULLY_CONNECTED (TFLite's FULLY_CONNECTED
    kernels round once, its convolutions twice as NNAPI does)."""

    single_rounding: bool = False

    def conv_requantization(self, in_scale: float, filter_scales: np.ndarray,
                            out_scale: float) -> ConvRequantization:
        multipliers, shifts = conv_multipliers(in_scale, filter_scales, out_scale, float32_product=False)
        return ConvRequantization(multipliers, shifts, self.single_rounding)


def tflite_requantizing(nnapi: KernelFn, single_rounding: bool) -> KernelFn:
    """`nnapi` (a `CONV_REQUANTIZING` kernel) requantizing as TFLite does (`TfliteRequantizingCall`)."""
    names = [f.name for f in dataclasses.fields(KernelCall)]

    def run(call: KernelCall) -> list[np.ndarray]:
        tflite = TfliteRequantizingCall(**{n: getattr(call, n) for n in names}, single_rounding=single_rounding)
        return list(nnapi(tflite))
    return run


def tflite_requantize(q: np.ndarray, src: Operand, dst: Operand) -> np.ndarray:
    """TFLite's `Requantize` (its QUANTIZE of a quantized tensor): (q - zp_in) times the double
    in_scale / out_scale by `MultiplyByQuantizedMultiplier`, plus zp_out, clamped to `dst`'s type."""
    multiplier, shift = quantize_multiplier(float(src.scale) / float(dst.scale))
    v = multiply_by_quantized_multiplier(q.astype(np.int64) - src.zero_point, multiplier, shift) + dst.zero_point
    lo, hi = qrange(dst.type)
    return np.clip(v, lo, hi).astype(dst.dtype)


def requantize(call: KernelCall) -> list[np.ndarray]:
    """A quantized ADD(x, real 0) with no activation, the form nnconv lowers a TFLite QUANTIZE between
    quantized types to (NNAPI has no requantization: `requantize`, nnconv/lowering/rules/_arith.py), as TFLite
    requantizes: one multiplier (`tflite_requantize`) where NNAPI's ADD pipeline rounds more than once. Any
    other ADD stays NNAPI's."""
    if not (call.is_constant(1) and np.all(call.tensor(1) == call.in_operands[1].zero_point)
            and call.scalar(2) == FuseCode.NONE):
        return list(KERNELS[OperationType.ADD](call))
    return [tflite_requantize(call.tensor(0), call.in_operands[0], call.out_operands[0])]


def _as_int8(od: Operand) -> Operand:
    """A uint8 carrier's operand as the int8 one it carries."""
    return dataclasses.replace(od, type=OperandType.TENSOR_QUANT8_ASYMM_SIGNED,
                               zero_point=od.zero_point - CARRIER_OFFSET)


def signed_average(call: KernelCall) -> list[np.ndarray]:
    """An int8 AVERAGE_POOL_2D carried as uint8 (+128, below API 30) averaged as TFLite's int8 kernel does: in
    the signed domain, where rounding half away from zero differs from uint8's half up for negative averages.
    That is NNAPI's own int8 average pooling (API 30's TENSOR_QUANT8_ASYMM_SIGNED) on the values carried,
    the activation's bounds shifted with the zero point."""
    x = np.bitwise_xor(call.tensor(0), CARRIER_OFFSET).view(np.int8)  # u - 128
    signed = dataclasses.replace(call, inputs=[x, *call.inputs[1:]],
                                 in_operands=[_as_int8(call.in_operands[0]), *call.in_operands[1:]],
                                 out_operands=[_as_int8(call.out_operands[0])])
    y = KERNELS[OperationType.AVERAGE_POOL_2D](signed)[0]
    return [np.bitwise_xor(y.view(np.uint8), CARRIER_OFFSET)]  # v + 128


def int8_mean(call: KernelCall) -> list[np.ndarray]:
    """An int8 MEAN over H and W as nnconv lowers it, one AVERAGE_POOL_2D whose single window is the whole
    map (`Mean.lower`, nnconv/lowering/rules/reduce.py), computed as TFLite's int8 MEAN kernel does (reference
    kernels, and the optimized ones without keep_dims): acc = sum(q - zp_in); M, s = QuantizeMultiplier(s_in /
    s_out); sh = min(floor(log2 n), 32, 31 + s); out = MultiplyByQuantizedMultiplier(acc, (M << sh) // n,
    s - sh) + zp_out. Its two roundings (ties up, then half away from zero) make ceil(acc / 4) of a 2x2 map
    where NNAPI rounds acc / 4 once. Only differences from the zero points enter, so int8 carried as uint8
    (+128, below API 30) computes the same values in its carrier's range. Another window stays NNAPI's."""
    x, x_op, out = call.tensor(0), call.in_operands[0], call.out_operands[0]
    p = window_params(call, window.POOL_2D)
    axes = (2, 3) if p.nchw else (1, 2)
    h, w = (x.shape[a] for a in axes) if x.ndim == 4 else (0, 0)
    if p.explicit:
        pads = (p.pad_top, p.pad_bottom, p.pad_left, p.pad_right)
    else:
        pads = (*implicit_padding(h, p.stride_h, p.filter_h, 1, p.padding_scheme),
                *implicit_padding(w, p.stride_w, p.filter_w, 1, p.padding_scheme))
    if (p.filter_h, p.filter_w) != (h, w) or any(pads) or h * w == 0:
        return list(KERNELS[OperationType.AVERAGE_POOL_2D](call))  # not the rule's form (or malformed)
    n = h * w
    acc = np.sum(x.astype(np.int64) - x_op.zero_point, axis=axes, keepdims=True)
    mult, shift = quantize_multiplier(float(np.float32(x_op.scale)) / float(np.float32(out.scale)))
    sh = min(n.bit_length() - 1, 32, 31 + shift)
    y = multiply_by_quantized_multiplier(acc, (mult << sh) // n, shift - sh) + out.zero_point
    lo, hi = quantized_activation_range(p.activation, out)
    return [np.clip(y, lo, hi).astype(out.dtype)]
