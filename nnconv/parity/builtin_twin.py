"""A runnable twin of a model whose custom ops TFLite's interpreter does not have, for `verify`.

MediaPipe's segmentation models (selfie_segmentation, hair segmentation) end in the custom op
`Convolution2DTransposeBias`, which MediaPipe registers in its own interpreter; `ai-edge-litert` refuses the
model ("unresolved custom op"), so there was nothing to compare with. The op is a float32 transpose
convolution plus a bias, which TFLite's builtin TRANSPOSE_CONV (version 3: optional bias input) computes:
the twin replaces each such op by TRANSPOSE_CONV(output_shape, weights, input, bias) with the custom
options' padding and strides, and a new constant for the output shape (the op's own output tensor's).
MediaPipe's padding rule (total P = max(0, K - (in - 1) % stride - 1) for SAME, head P // 2) is what
TRANSPOSE_CONV derives from that output shape, so the arithmetic is the same; nnconv lowers the custom op
to the same NNAPI TRANSPOSE_CONV_2D (lowering/rules/conv.py).

Every original tensor keeps its index (`twin.copy_model`), so per-op parity lines up with the model.
"""

from __future__ import annotations

import numpy as np

from nnconv.tflite.builder import SubgraphBuilder
from nnconv.tflite.ir import Operator, Subgraph, TfliteModel
from nnconv.tflite.options import TransposeConvOptions
from nnconv.tflite.schema_enums import BuiltinOperator, TensorType
from nnconv.lowering.rules.conv import mediapipe_transpose_options
from nnconv.parity.twin import COPY_ERRORS, copy_model

TRANSPOSE_CONV_BIAS = "Convolution2DTransposeBias"


def _is_substitutable(op: Operator) -> bool:
    return (op.builtin_code == BuiltinOperator.CUSTOM and op.custom_code == TRANSPOSE_CONV_BIAS
            and len(op.inputs) == 3 and len(op.outputs) == 1
            and mediapipe_transpose_options(op.custom_options) is not None)


def _substitute(sb: SubgraphBuilder, sg: Subgraph, op: Operator) -> bool:
    if not _is_substitutable(op):
        return False
    padding, stride_w, stride_h = mediapipe_transpose_options(op.custom_options)  # type: ignore[misc]
    out = sg.tensors[op.outputs[0]]
    shape = np.asarray(out.shape, dtype=np.int32)
    shape_tensor = sb.copied_tensor(f"{out.name}/output_shape", (shape.size,), TensorType.INT32, shape.tobytes())
    x, w, b = op.inputs
    sb.op(BuiltinOperator.TRANSPOSE_CONV, [shape_tensor, w, x, b], list(op.outputs),
          TransposeConvOptions(padding=padding, stride_w=stride_w, stride_h=stride_h), version=3)
    return True


def custom_ops_substituted(model: TfliteModel) -> int:
    """How many operators `builtin_twin` replaces."""
    return sum(_is_substitutable(op) for sg in model.subgraphs for op in sg.operators)


def builtin_twin(model: TfliteModel) -> bytes | None:
    """The model with its `Convolution2DTransposeBias` ops as builtin TRANSPOSE_CONV, or None when it has none
    or holds something the writer does not reproduce."""
    if not custom_ops_substituted(model):
        return None
    try:
        return copy_model(model, substitute=_substitute)
    except COPY_ERRORS:
        return None
