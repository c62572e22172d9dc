"""The NNAPI model IR: the HAL 1.3 `Model`, field for field.

`Model.main` and `Model.referenced` are `Subgraph`s; constants of at most 128 bytes live in
`Model.operand_values` (lifetime CONSTANT_COPY), larger ones in `Model.pools` (CONSTANT_REFERENCE), each
located by a `DataLocation`. A SUBGRAPH operand's `location.offset` is the index of the referenced subgraph.
Pools are any buffer-protocol objects (numpy arrays, memoryviews of an mmap), so weights are never copied.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from nnconv.nnapi.enums import OperandLifeTime, OperandType, OperationType

# numpy storage dtype of each tensor/scalar operand type.
STORAGE_DTYPE: dict[OperandType, np.dtype] = {
    OperandType.FLOAT32: np.dtype(np.float32),
    OperandType.INT32: np.dtype(np.int32),
    OperandType.UINT32: np.dtype(np.uint32),
    OperandType.BOOL: np.dtype(np.bool_),
    OperandType.FLOAT16: np.dtype(np.float16),
    OperandType.TENSOR_FLOAT32: np.dtype(np.float32),
    OperandType.TENSOR_FLOAT16: np.dtype(np.float16),
    OperandType.TENSOR_INT32: np.dtype(np.int32),
    OperandType.TENSOR_QUANT8_ASYMM: np.dtype(np.uint8),
    OperandType.TENSOR_QUANT8_ASYMM_SIGNED: np.dtype(np.int8),
    OperandType.TENSOR_QUANT8_SYMM: np.dtype(np.int8),
    OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL: np.dtype(np.int8),
    OperandType.TENSOR_QUANT16_SYMM: np.dtype(np.int16),
    OperandType.TENSOR_QUANT16_ASYMM: np.dtype(np.uint16),
    OperandType.TENSOR_BOOL8: np.dtype(np.bool_),
}


@dataclass(frozen=True)
class DataLocation:
    """Where a constant's bytes are: pool `pool_index` (or operand_values when CONSTANT_COPY)."""

    pool_index: int = 0
    offset: int = 0
    length: int = 0


@dataclass(frozen=True)
class SymmPerChannelQuantParams:
    """Extra parameters of a TENSOR_QUANT8_SYMM_PER_CHANNEL operand."""

    channel_dim: int
    scales: tuple[float, ...]


@dataclass
class Operand:
    """One HAL `Operand`. `dimensions` uses 0 for an unknown extent; `()` on a scalar."""

    type: OperandType
    dimensions: tuple[int, ...] = ()
    scale: float = 0.0
    zero_point: int = 0
    lifetime: OperandLifeTime = OperandLifeTime.TEMPORARY_VARIABLE
    location: DataLocation = field(default_factory=DataLocation)
    channel_quant: SymmPerChannelQuantParams | None = None
    number_of_consumers: int = 0
    name: str = ""  # not in the HAL; kept for reports and traces

    @property
    def dtype(self) -> np.dtype:
        return STORAGE_DTYPE[self.type]

    @property
    def is_constant(self) -> bool:
        return self.lifetime in (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE)

    def byte_size(self) -> int:
        """Bytes of a fully specified operand (0 when a dimension is unknown)."""
        if self.type is OperandType.SUBGRAPH:
            return 0
        n = 1
        for d in self.dimensions:
            n *= d
        return n * STORAGE_DTYPE[self.type].itemsize

    def describe(self) -> str:
        dims = "x".join(str(d) for d in self.dimensions) or "scalar"
        q = f" scale={self.scale:g} zp={self.zero_point}" if self.type.is_quantized and self.scale else ""
        return f"{self.type.name}[{dims}]{q}"


@dataclass
class Operation:
    """One HAL `Operation`: an operation type and the operand indexes it reads and writes."""

    type: OperationType
    inputs: list[int]
    outputs: list[int]
    source_op: int | None = None  # index of the TFLite operator this came from (not in the HAL)


@dataclass
class Subgraph:
    """HAL 1.3 `Subgraph`."""

    operands: list[Operand] = field(default_factory=list)
    operations: list[Operation] = field(default_factory=list)
    input_indexes: list[int] = field(default_factory=list)
    output_indexes: list[int] = field(default_factory=list)


@dataclass
class Model:
    """HAL 1.3 `Model`."""

    main: Subgraph = field(default_factory=Subgraph)
    referenced: list[Subgraph] = field(default_factory=list)
    operand_values: bytearray = field(default_factory=bytearray)
    pools: list[object] = field(default_factory=list)  # buffer-protocol objects
    relax_computation_float32_to_float16: bool = False

    def subgraphs(self) -> list[Subgraph]:
        return [self.main, *self.referenced]

    def constant_value(self, operand: Operand) -> np.ndarray:
        """A read-only numpy view of a constant operand's value, shaped like the operand."""
        loc = operand.location
        if operand.lifetime is OperandLifeTime.CONSTANT_COPY:
            raw = memoryview(self.operand_values)[loc.offset: loc.offset + loc.length]
        elif operand.lifetime is OperandLifeTime.CONSTANT_REFERENCE:
            pool = memoryview(self.pools[loc.pool_index]).cast("B")
            raw = pool[loc.offset: loc.offset + loc.length]
        else:
            raise ValueError(f"operand {operand.name or ''} is not a constant ({operand.lifetime.name})")
        arr = np.frombuffer(raw, dtype=operand.dtype)
        if operand.type.is_scalar:
            return arr.reshape(())
        return arr.reshape(operand.dimensions)

    def operation_types(self) -> list[OperationType]:
        return [op.type for sg in self.subgraphs() for op in sg.operations]
