"""Builds an NNAPI `Model` operand by operand, the way `ANeuralNetworksModel_*` calls do.

Constants follow `ANeuralNetworksModel_setOperandValue`: values of at most 128 bytes are copied into
`operand_values` (CONSTANT_COPY), larger ones are referenced in a memory pool (CONSTANT_REFERENCE) without
copying the caller's array.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from nnconv.nnapi.enums import (MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES, OperandLifeTime, OperandType,
                                OperationType)
from nnconv.nnapi.model import (STORAGE_DTYPE, DataLocation, Model, Operand, Operation, Subgraph,
                                SymmPerChannelQuantParams)

_SCALAR_FOR_PY = {bool: OperandType.BOOL, int: OperandType.INT32, float: OperandType.FLOAT32}


class SubgraphBuilder:
    """Adds operands and operations to one subgraph of a model under construction."""

    def __init__(self, model_builder: "ModelBuilder", subgraph: Subgraph) -> None:
        self._mb = model_builder
        self.subgraph = subgraph

    # -- operands ---------------------------------------------------------------------------------
    def _append(self, operand: Operand) -> int:
        self.subgraph.operands.append(operand)
        return len(self.subgraph.operands) - 1

    def add_tensor(self, type: OperandType, dimensions: Sequence[int], *, scale: float = 0.0,
                   zero_point: int = 0, channel_quant: SymmPerChannelQuantParams | None = None,
                   name: str = "") -> int:
        """A temporary tensor operand (mark it as input/output with `set_io`)."""
        return self._append(Operand(type=type, dimensions=tuple(int(d) for d in dimensions),
                                    scale=float(scale), zero_point=int(zero_point),
                                    channel_quant=channel_quant, name=name))

    def add_scalar(self, value: bool | int | float, type: OperandType | None = None, name: str = "") -> int:
        """A constant scalar operand; Python bool/int/float pick BOOL/INT32/FLOAT32 unless `type` says."""
        if type is None:
            type = _SCALAR_FOR_PY[builtins_type(value)]
        arr = np.asarray(value, dtype=STORAGE_DTYPE[type])
        return self.add_constant(type, arr, name=name)

    def add_constant(self, type: OperandType, value: np.ndarray, *, scale: float = 0.0, zero_point: int = 0,
                     channel_quant: SymmPerChannelQuantParams | None = None, name: str = "",
                     dimensions: Sequence[int] | None = None) -> int:
        """A constant operand holding `value` (converted to the type's storage dtype if needed)."""
        dtype = STORAGE_DTYPE[type]
        arr = np.asarray(value)
        if arr.dtype != dtype:
            arr = arr.astype(dtype)
        dims = () if type.is_scalar else tuple(arr.shape if dimensions is None else dimensions)
        lifetime, location = self._mb.store_constant(arr)
        return self._append(Operand(type=type, dimensions=dims, scale=float(scale),
                                    zero_point=int(zero_point), lifetime=lifetime, location=location,
                                    channel_quant=channel_quant, name=name))

    def add_no_value(self, type: OperandType = OperandType.TENSOR_FLOAT32, name: str = "") -> int:
        """An omitted optional operand (`setOperandValue(nullptr, 0)`). A quantized one gets scale 1:
        `ANeuralNetworksModel_addOperand` wants a positive scale for every quantized type, omitted or not
        (the per-channel type excepted, whose scales come from their own call)."""
        scale = 1.0 if type.is_quantized and type is not OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL else 0.0
        return self._append(Operand(type=type, lifetime=OperandLifeTime.NO_VALUE, scale=scale, name=name))

    def add_subgraph_ref(self, subgraph_index: int, name: str = "") -> int:
        """A SUBGRAPH operand referencing `Model.referenced[subgraph_index]` (for IF / WHILE)."""
        return self._append(Operand(type=OperandType.SUBGRAPH, lifetime=OperandLifeTime.SUBGRAPH,
                                    location=DataLocation(0, subgraph_index, 0), name=name))

    # -- operations -------------------------------------------------------------------------------
    def add_operation(self, type: OperationType, inputs: Sequence[int], outputs: Sequence[int],
                      source_op: int | None = None) -> Operation:
        op = Operation(type=type, inputs=[int(i) for i in inputs], outputs=[int(o) for o in outputs],
                       source_op=source_op)
        for i in op.inputs:
            self.subgraph.operands[i].number_of_consumers += 1
        self.subgraph.operations.append(op)
        return op

    def set_io(self, inputs: Sequence[int], outputs: Sequence[int]) -> None:
        """`identifyInputsAndOutputs`: fixes the lifetimes of subgraph inputs and outputs."""
        self.subgraph.input_indexes = [int(i) for i in inputs]
        self.subgraph.output_indexes = [int(o) for o in outputs]
        for i in inputs:
            self.subgraph.operands[i].lifetime = OperandLifeTime.SUBGRAPH_INPUT
        for o in outputs:
            self.subgraph.operands[o].lifetime = OperandLifeTime.SUBGRAPH_OUTPUT

    def operand(self, index: int) -> Operand:
        return self.subgraph.operands[index]


def builtins_type(value: object) -> type:
    if isinstance(value, (bool, np.bool_)):
        return bool
    if isinstance(value, (int, np.integer)):
        return int
    return float


class ModelBuilder:
    """Owns the `Model`; `main` builds its main subgraph, `add_referenced` the others."""

    def __init__(self) -> None:
        self.model = Model()
        self.main = SubgraphBuilder(self, self.model.main)

    def add_referenced(self) -> tuple[int, SubgraphBuilder]:
        sg = Subgraph()
        self.model.referenced.append(sg)
        return len(self.model.referenced) - 1, SubgraphBuilder(self, sg)

    def store_constant(self, arr: np.ndarray) -> tuple[OperandLifeTime, DataLocation]:
        """Places a constant's bytes by the 128-byte rule and returns its lifetime and location."""
        nbytes = arr.nbytes
        if nbytes <= MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES:
            values = self.model.operand_values
            # Keep every value aligned to its element size (at most 8 bytes) inside operandValues.
            pad = (-len(values)) % 8
            values.extend(b"\0" * pad)
            offset = len(values)
            values.extend(np.ascontiguousarray(arr).tobytes())
            return OperandLifeTime.CONSTANT_COPY, DataLocation(0, offset, nbytes)
        # Large values are referenced, not copied: a C-contiguous array is kept as its own pool.
        self.model.pools.append(np.ascontiguousarray(arr))
        return OperandLifeTime.CONSTANT_REFERENCE, DataLocation(len(self.model.pools) - 1, 0, nbytes)

    def finish(self) -> Model:
        return self.model
