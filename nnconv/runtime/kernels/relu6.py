"""RELU6 (NNAPI OperationType 21): clamp to [0, 6].

Slots: 0 input (rank <= 4). Types: TENSOR_FLOAT32, TENSOR_FLOAT16, TENSOR_QUANT8_ASYMM,
TENSOR_QUANT8_ASYMM_SIGNED; the clamp bounds are quantized with the input's scale and zero point, which a
quantized output must keep (a temporary declared otherwise is carried into its declared parameters:
`_activation.relu_family`).
"""

from __future__ import annotations

from nnconv.nnapi.enums import FuseCode, OperationType
from nnconv.runtime.kernels._activation import relu_kernel

relu6 = relu_kernel(OperationType.RELU6, FuseCode.RELU6)
