"""The TFLite IR: small frozen dataclasses decoded from a `.tflite` flatbuffer by `reader.py`.

Weights are zero-copy numpy views into the file's mmap (`Tensor.data`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nnconv.tflite.schema_enums import BuiltinOperator, TensorType

NUMPY_DTYPE: dict[TensorType, np.dtype] = {
    TensorType.FLOAT32: np.dtype(np.float32), TensorType.FLOAT16: np.dtype(np.float16),
    TensorType.INT32: np.dtype(np.int32), TensorType.UINT8: np.dtype(np.uint8),
    TensorType.INT64: np.dtype(np.int64), TensorType.BOOL: np.dtype(np.bool_),
    TensorType.INT16: np.dtype(np.int16), TensorType.INT8: np.dtype(np.int8),
    TensorType.FLOAT64: np.dtype(np.float64), TensorType.UINT64: np.dtype(np.uint64),
    TensorType.UINT32: np.dtype(np.uint32), TensorType.UINT16: np.dtype(np.uint16),
    TensorType.COMPLEX64: np.dtype(np.complex64), TensorType.COMPLEX128: np.dtype(np.complex128),
}
TENSOR_TYPE_OF_DTYPE: dict[np.dtype, TensorType] = {v: k for k, v in NUMPY_DTYPE.items()}


# QuantizationDetails union types of the schema (BlockwiseQuantization: newer schemas, AI Edge Quantizer's
# blockwise int4 recipes).
QUANTIZATION_DETAILS = {1: "CustomQuantization", 2: "BlockwiseQuantization"}
BLOCKWISE = 2


@dataclass(frozen=True)
class Quantization:
    """Affine quantization: per-tensor when `scale` has one entry, per-channel along `quantized_dimension`."""

    scale: tuple[float, ...] = ()
    zero_point: tuple[int, ...] = ()
    quantized_dimension: int = 0
    min: tuple[float, ...] = ()
    max: tuple[float, ...] = ()
    # The `details` union's type (QUANTIZATION_DETAILS): when set, the schema says the affine fields above
    # are ignored and the details table defines the quantization. For BlockwiseQuantization (blockwise int4
    # weights), `blockwise` holds its fields: (scales tensor, zero points tensor or -1, block size).
    details: int = 0
    blockwise: tuple[int, int, int] | None = None

    @property
    def is_quantized(self) -> bool:
        return len(self.scale) > 0

    @property
    def is_per_channel(self) -> bool:
        return len(self.scale) > 1

    def dequantize(self, value: np.ndarray) -> np.ndarray:
        """Real values of stored `value` (per-tensor or per-channel), float32: (q - zp) * scale, as NNAPI's
        DEQUANTIZE computes them. Without a scale it reads as scale 0, as TFLite's kernels read absent
        quantization parameters; a per-channel zero point list of another length reads as zeros."""
        value = np.asarray(value).astype(np.float32)
        scales = np.asarray(self.scale or [0.0], dtype=np.float32)
        zps = np.asarray(self.zero_point or [0], dtype=np.float32)
        if self.is_per_channel:
            shape = [1] * value.ndim
            shape[self.quantized_dimension] = -1
            scales = scales.reshape(shape)
            zps = (zps if zps.size == scales.size else np.zeros(scales.size, np.float32)).reshape(shape)
        else:
            scales, zps = scales[0], zps[0]
        return ((value - zps) * scales).astype(np.float32)


@dataclass(frozen=True)
class DimensionMetadata:
    format: int  # 0 DENSE, 1 SPARSE_CSR
    dense_size: int = 0
    array_segments: tuple[int, ...] = ()
    array_indices: tuple[int, ...] = ()


@dataclass(frozen=True)
class Sparsity:
    traversal_order: tuple[int, ...]
    block_map: tuple[int, ...]
    dim_metadata: tuple[DimensionMetadata, ...]


@dataclass(frozen=True)
class Tensor:
    index: int
    name: str
    shape: tuple[int, ...]
    shape_signature: tuple[int, ...] | None
    type: TensorType
    buffer: int
    quantization: Quantization = field(default_factory=Quantization)
    sparsity: Sparsity | None = None
    is_variable: bool = False
    data: np.ndarray | None = field(default=None, compare=False, repr=False)

    @property
    def dtype(self) -> np.dtype | None:
        return NUMPY_DTYPE.get(self.type)

    @property
    def is_constant(self) -> bool:
        return self.data is not None

    @property
    def has_dynamic_shape(self) -> bool:
        """True when the tensor has no usable static size: a zero or negative extent in `shape`.

        A -1 in `shape_signature` alone (Keras' unspecified batch, say) does not make a tensor dynamic:
        TFLite allocates the model at its stored `shape` until the app resizes an input, and TFLite's NNAPI
        delegate lowers those shapes too unless dynamic dimensions are switched on. nnconv does the same."""
        return any(d <= 0 for d in self.shape)

    @property
    def has_dynamic_signature(self) -> bool:
        """True when some extent may change at run time (-1 in `shape_signature`)."""
        return self.shape_signature is not None and any(d < 0 for d in self.shape_signature)

    @property
    def rank(self) -> int:
        return len(self.shape)


@dataclass(frozen=True)
class Operator:
    index: int
    opcode_index: int
    builtin_code: int  # max(deprecated_builtin_code, builtin_code); may be outside BuiltinOperator
    custom_code: str | None
    version: int
    inputs: tuple[int, ...]  # -1: omitted optional input
    outputs: tuple[int, ...]
    intermediates: tuple[int, ...] = ()
    options: Any = None  # one dataclass of nnconv.tflite.options, or None
    custom_options: bytes | None = None

    @property
    def builtin(self) -> BuiltinOperator | None:
        try:
            return BuiltinOperator(self.builtin_code)
        except ValueError:
            return None

    @property
    def name(self) -> str:
        if self.builtin_code == BuiltinOperator.CUSTOM:
            return f"CUSTOM({self.custom_code})"
        b = self.builtin
        return b.name if b is not None else f"BUILTIN_{self.builtin_code}"


@dataclass(frozen=True)
class Subgraph:
    index: int
    name: str
    tensors: tuple[Tensor, ...]
    operators: tuple[Operator, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


@dataclass(frozen=True)
class SignatureDef:
    signature_key: str
    subgraph_index: int
    inputs: tuple[tuple[str, int], ...]  # (name, tensor index)
    outputs: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class TfliteModel:
    version: int
    description: str
    subgraphs: tuple[Subgraph, ...]
    signature_defs: tuple[SignatureDef, ...] = ()
    path: str = ""
    metadata: tuple[tuple[str, int], ...] = ()  # Model.metadata: (name, byte size of its buffer)

    @property
    def main(self) -> Subgraph:
        return self.subgraphs[0]
