"""Quantized ops NNAPI takes but TFLite's own CPU kernels refuse when the interpreter prepares them.

TFLite prepares every node on its CPU kernels before it applies a delegate (ModifyGraphWithDelegate does so to
find dynamic tensors), so such a model fails to load with TFLite's NNAPI delegate too: the Prepare simulation
(`tflite/prepare.py`) fails there, and the delegate target reports `cpu_prepare_failed`. nnconv's own converter
lowers the op (warning NNW101, `Code.TFLITE_REFUSES`): its NNAPI model runs, and `verify` has no TFLite result
to compare it with.

Each function returns the diagnostic's (message, hint) or None, computed as TFLite's kernel_util.cc does:
- `clamp_overflow`: CalculateActivationRangeQuantized (in the Prepare of CONV_2D, DEPTHWISE_CONV_2D,
  FULLY_CONNECTED, ADD, ...) quantizes the RELU6 / RELU_N1_TO_1 bound as round(bound / output_scale) in
  float32 and fails ("no_integer_overflow_from_quantization was not true") outside int32: an output scale
  below ~2.8e-9 (RELU6), which a calibration that saw only zeros gives (AI Edge Quantizer's static-int8
  torchvision MobileNetV2). NNAPI's reference (OperationsUtils CalculateActivationRangeImpl) has no such
  check and validation passes; a bound that large lies beyond the output type's range, so the clamp is the
  type's (the executor computes it so).
- `bias_scale_mismatch`: GetQuantizedConvolutionMultipler with a bias (in the Prepare of uint8 CONV_2D /
  DEPTHWISE_CONV_2D / TRANSPOSE_CONV and of every per-tensor FULLY_CONNECTED) requires
  |input_scale * filter_scale - bias_scale| / output_scale <= 0.02, in double (an unquantized bias reads as
  scale 0). NNAPI requires the bias scale to be the product, which `rules/_weights.bias_for` gives the bias
  (its integer values unchanged, which is how TFLite's kernel would read them too).
"""

from __future__ import annotations

import numpy as np

from nnconv.tflite.ir import Tensor
from nnconv.tflite.schema_enums import ActivationFunctionType, TensorType
from nnconv.tflite.schema_enums import BuiltinOperator as B

_RUNS_ONLY_ON_NNAPI = ("the model runs only as an NNAPI model of its own (TFLite cannot load it, with or without its "
                       "NNAPI delegate), and verify cannot compare it with TFLite")
_BOUNDS = {ActivationFunctionType.RELU6: ("RELU6", 6.0), ActivationFunctionType.RELU_N1_TO_1: ("RELU_N1_TO_1", 1.0)}


def clamp_overflow(act: int, out: Tensor | None) -> tuple[str, str] | None:
    """The warning for a fused activation whose quantized bound TFLite cannot compute (module docstring)."""
    if act not in _BOUNDS or out is None or len(out.quantization.scale) != 1 \
            or out.type not in (TensorType.UINT8, TensorType.INT8, TensorType.INT16):
        return None
    name, bound = _BOUNDS[act]
    scale = out.quantization.scale[0]
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        # TFLite rounds the quotient first; a float32 that can exceed 2^31 is an integer already (every
        # float32 from 2^24 on is), so the rounding cannot change the comparison
        quantized = np.abs(np.float32(bound) / np.float32(scale))
    if quantized <= np.float32(2**31 - 1):  # the float32 comparison TFLite makes (2^31 - 1 reads as 2^31)
        return None
    return (f"fused {name} on output '{out.name}' with scale {scale:.3g}: TFLite's CPU kernel refuses this op "
            f"(round({bound:g} / scale) overflows int32: kernel_util.cc no_integer_overflow_from_quantization); "
            "NNAPI takes it and clamps to the type's range",
            f"{_RUNS_ONLY_ON_NNAPI}; re-calibrate the quantization (a scale this small comes from a calibration "
            "that saw only zeros here)")


def bias_scale_mismatch(x: Tensor, w: Tensor, bias: Tensor, out: Tensor) -> tuple[str, str] | None:
    """The warning for a per-tensor op whose bias scale TFLite finds too far from input * filter scale."""
    product = float(x.quantization.scale[0]) * float(w.quantization.scale[0])
    bias_scale = float(bias.quantization.scale[0]) if bias.quantization.scale else 0.0
    relative = abs(product - bias_scale) / float(out.quantization.scale[0])
    if relative <= 0.02:
        return None
    return (f"bias '{bias.name}' has scale {bias_scale:.6g}, not input_scale * filter_scale = {product:.6g} (they "
            f"differ by {relative:.3g} x the output scale): TFLite's kernel refuses this op (kernel_util.cc "
            "scale_diff / output_scale <= 0.02); NNAPI takes the bias at the product's scale, as nnconv writes it",
            f"{_RUNS_ONLY_ON_NNAPI}; quantize the bias with scale input_scale * filter_scale")


# Ops whose Prepare computes the quantized activation range (CalculateActivationRangeQuantized), and those
# whose Prepare checks the bias scale (GetQuantizedConvolutionMultipler) for these input types. Pools compute
# the range at Eval, not Prepare: a model with one loads and fails at its first invocation instead.
_RANGE_AT_PREPARE = (B.CONV_2D, B.DEPTHWISE_CONV_2D, B.FULLY_CONNECTED, B.ADD, B.SUB, B.MUL)
_BIAS_AT_PREPARE = {B.CONV_2D: (TensorType.UINT8,), B.DEPTHWISE_CONV_2D: (TensorType.UINT8,),
                    B.TRANSPOSE_CONV: (TensorType.UINT8,), B.FULLY_CONNECTED: (TensorType.UINT8, TensorType.INT8)}
_BIAS_SLOT = {B.CONV_2D: 2, B.DEPTHWISE_CONV_2D: 2, B.FULLY_CONNECTED: 2, B.TRANSPOSE_CONV: 3}
_WEIGHTS_SLOT = {B.CONV_2D: 1, B.DEPTHWISE_CONV_2D: 1, B.FULLY_CONNECTED: 1, B.TRANSPOSE_CONV: 1}
_INPUT_SLOT = {B.TRANSPOSE_CONV: 2}


def prepare_refusal(code: int, activation: int | None, inputs: list[Tensor | None],
                    outputs: list[Tensor | None]) -> str | None:
    """Why TFLite's CPU kernel fails this op's Prepare on its quantization (the checks above), or None."""
    x = inputs[_INPUT_SLOT.get(code, 0)] if len(inputs) > _INPUT_SLOT.get(code, 0) else None
    out = outputs[0] if outputs else None
    if x is None or out is None or not x.quantization.scale:
        return None  # float and hybrid ops compute no quantized range
    if code in _RANGE_AT_PREPARE and activation is not None:
        found = clamp_overflow(activation, out)
        if found:
            return found[0]
    if x.type in _BIAS_AT_PREPARE.get(code, ()):
        slot, w_slot = _BIAS_SLOT[code], _WEIGHTS_SLOT[code]
        w = inputs[w_slot] if len(inputs) > w_slot else None
        bias = inputs[slot] if len(inputs) > slot else None
        if w is not None and bias is not None and len(w.quantization.scale) == 1 and out.quantization.scale:
            found = bias_scale_mismatch(x, w, bias, out)
            if found:
                return found[0]
    return None
