"""Blockwise-quantized weights (AI Edge Quantizer's `dynamic_wi4b32_afp32`: FULLY_CONNECTED reading int4
weights whose scales come in blocks along the input dimension).

The schema's BlockwiseQuantization (the `details` union of QuantizationParameters) names a constant scales
tensor [units, input_size / block_size] (float16 as the quantizer writes it) and a block size; the tensor's own
scale field is empty. TFLite reads it for FULLY_CONNECTED only (EvalBlockwise4Bit): weights [units, input_size]
of int4, block b of row n scaled by scales[n, b], symmetric (its reader ignores the zero points). Its kernel
quantizes the float input on the fly like every hybrid kernel, and skips the op's fused activation.

NNAPI has no blockwise operand, so the weights are dequantized at conversion time into a float32 constant,
q * float32(scale), at every level (the float computation NNAPI then runs differs from TFLite's hybrid kernel by
the input-quantization error only, as for the other hybrid ops). A fused activation is refused: TFLite's
kernel does not apply it, so the model means one thing and TFLite computes another.
"""

from __future__ import annotations

import numpy as np

from nnconv.lowering.context import CheckContext
from nnconv.lowering.diagnostics import Code
from nnconv.tflite.ir import BLOCKWISE, QUANTIZATION_DETAILS, Tensor
from nnconv.tflite.schema_enums import TensorType

BLOCKWISE_HINT = ("quantize these weights per channel (AI Edge Quantizer: channelwise granularity instead of "
                  "blockwise), or keep them float32")


def _scales_tensor(c: CheckContext, w: Tensor) -> Tensor | None:
    index = w.quantization.blockwise[0] if w.quantization.blockwise else -1
    return c.subgraph.tensors[index] if 0 <= index < len(c.subgraph.tensors) else None


def blockwise_problem(c: CheckContext, w: Tensor, x: Tensor | None, activation: int) -> str:
    """Why these blockwise weights cannot be lowered here ("" when they can)."""
    q = w.quantization
    if q.details != BLOCKWISE or q.blockwise is None:
        return f"'{w.name}' is quantized by {QUANTIZATION_DETAILS.get(q.details, f'details type {q.details}')}"
    _, zero_points, block = q.blockwise
    scales = _scales_tensor(c, w)
    if x is None or x.type != TensorType.FLOAT32:
        return f"blockwise weights '{w.name}' with {x.type.name.lower() if x else 'no'} input: TFLite reads them " \
               "with float inputs only"
    if w.type != TensorType.INT4 or not c.is_const(w) or w.sparsity is not None or w.rank != 2:
        return f"blockwise weights '{w.name}' must be dense constant 2-D int4, as TFLite's kernel reads them"
    if block <= 0 or w.shape[1] % block:
        return f"blockwise weights '{w.name}' of {w.shape[1]} columns have block size {block}"
    if scales is None or not c.is_const(scales) or scales.type not in (TensorType.FLOAT16, TensorType.FLOAT32) \
            or tuple(scales.shape) != (w.shape[0], w.shape[1] // block):
        return f"blockwise weights '{w.name}' need a constant float scales tensor [{w.shape[0]}, " \
               f"{w.shape[1] // block}]"
    if zero_points >= 0:
        return f"blockwise weights '{w.name}' name a zero points tensor, which TFLite's reader ignores"
    if activation:
        return f"blockwise weights '{w.name}' with a fused activation: TFLite's blockwise kernel skips it"
    return ""


def check_blockwise(c: CheckContext, w: Tensor, x: Tensor | None, activation: int) -> bool:
    """Refuses (NNC024) blockwise weights that `blockwise_values` cannot give as TFLite reads them."""
    problem = blockwise_problem(c, w, x, activation)
    if problem:
        c.refuse(Code.QUANTIZATION, f"{problem}; nnconv lowers blockwise int4 FULLY_CONNECTED weights (float "
                 "input, constant scales, no fused activation) and per-tensor or per-channel scales",
                 hint=BLOCKWISE_HINT)
    return not problem


def is_blockwise(w: Tensor | None) -> bool:
    return w is not None and w.quantization.details == BLOCKWISE


def dequantize_blocks(q: np.ndarray, scales: np.ndarray, block: int) -> np.ndarray:
    """q[n, i] * scales[n, i // block] in float32 (float16 scales widen exactly)."""
    wide = np.repeat(np.asarray(scales, np.float32), block, axis=1)
    return (np.asarray(q, np.float32) * wide).astype(np.float32)


def blockwise_values(c: CheckContext, w: Tensor) -> np.ndarray:
    """The real values of checked blockwise weights, float32."""
    return dequantize_blocks(c.const_value(w), c.const_value(_scales_tensor(c, w)), w.quantization.blockwise[2])
