"""Checks a `Model` against the structural rules of the HAL (`validateModel` in the NNAPI runtime).

Rules: every operand index is in range; the graph invariants of `graph_invariants.py` (every operand read
has a value: a constant, an omitted input, a subgraph input or an earlier operation's output; every
temporary and output written exactly once; no cycle of subgraph references); subgraph inputs/outputs carry
matching lifetimes; constants have a location whose length equals their byte size; scalars have no
dimensions; constant tensors have at least one dimension (non-constant tensors may have an unknown rank,
as FL3+ dynamic shapes allow); SUBGRAPH operands reference an existing subgraph; quantized operands carry
what `validateOperand` demands of their type (a finite scale, 0 or in nnconv's accepted range
`limits.MIN_SCALE..MAX_SCALE`, a zero point in the type's range, 0 for the symmetric types; positive finite
per-channel scales; dimensions that fit uint32). All problems are collected and raised together.

With a feature level, every operation is then validated the way Android does before it compiles a model:
each operation's `validate` (with the constant-parameter checks of the reference CPU's `prepare`), one
module per operation family in `nnconv/nnapi/operations/`, says what feature level the operation
needs with its operands or why it is refused. The lowering runs this on what the rules emit and the
executor before it runs a model, so `check`, `convert` and `run` agree on what the runtime accepts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from nnconv.errors import ModelValidationError, OperationsRefusedError
from nnconv.limits import MAX_SCALE, MIN_SCALE
from nnconv.nnapi.enums import OperandLifeTime, OperandType, OperationType
from nnconv.nnapi.graph_invariants import graph_violations
from nnconv.nnapi.model import Model, Subgraph
from nnconv.nnapi.operations import OperationRefused, OperationView, validate_operation

_L = OperandLifeTime
_T = OperandType
# Zero-point range of each quantized type (validateOperand in the NNAPI runtime).
_ZERO_POINT_RANGE = {
    _T.TENSOR_QUANT8_ASYMM: (0, 255), _T.TENSOR_QUANT8_ASYMM_SIGNED: (-128, 127), _T.TENSOR_QUANT8_SYMM: (0, 0),
    _T.TENSOR_QUANT16_ASYMM: (0, 65535), _T.TENSOR_QUANT16_SYMM: (0, 0), _T.TENSOR_QUANT8_SYMM_PER_CHANNEL: (0, 0),
}
_INT32_RANGE = (-2**31, 2**31 - 1)
_UINT32_MAX = 2**32 - 1


@dataclass(frozen=True)
class OperationRefusal:
    """One operation the runtime would refuse, and why."""

    subgraph: int  # 0 = main
    index: int  # the operation's position in its subgraph
    type: OperationType
    reason: str
    source_op: int | None = None  # the TFLite operator it was lowered from

    def __str__(self) -> str:
        where = "" if self.subgraph == 0 else f"referenced subgraph {self.subgraph - 1} "
        return f"{where}operation {self.index} {self.type.name}: {self.reason}"


def validate_model(model: Model, feature_level: int | None = None) -> None:
    """Raises `ModelValidationError` listing every structural problem; then, with `feature_level`,
    `OperationsRefusedError` listing every operation the runtime would refuse at that level."""
    problems: list[str] = []
    for si, sg in enumerate(model.subgraphs()):
        where = "main" if si == 0 else f"referenced[{si - 1}]"
        _validate_subgraph(model, sg, where, problems)
    problems.extend(str(v) for v in graph_violations(model))
    if problems:
        raise ModelValidationError(problems)
    if feature_level is not None:
        refusals = operation_refusals(model, feature_level)
        if refusals:
            raise OperationsRefusedError(refusals)


def operation_refusals(model: Model, feature_level: int) -> list[OperationRefusal]:
    """Every operation of a structurally valid model that its `validate` refuses at `feature_level`."""
    found = []
    for si, sg in enumerate(model.subgraphs()):
        for k, op in enumerate(sg.operations):
            try:
                validate_operation(OperationView.of(model, si, op), feature_level)
            except OperationRefused as e:
                found.append(OperationRefusal(si, k, op.type, str(e), op.source_op))
    return found


def _validate_subgraph(model: Model, sg: Subgraph, where: str, problems: list[str]) -> None:
    n = len(sg.operands)
    for idx, od in enumerate(sg.operands):
        tag = f"{where} operand {idx}"
        if any(not 0 <= d <= _UINT32_MAX for d in od.dimensions):
            # the HAL's dimensions are uint32 (a corrupt shape multiplied by the lowering can exceed them)
            problems.append(f"{tag}: dimensions {list(od.dimensions)} do not fit in uint32")
        if od.type.is_scalar and od.dimensions:
            problems.append(f"{tag}: scalar {od.type.name} has dimensions {list(od.dimensions)}")
        if od.type.is_tensor and not od.dimensions and od.is_constant:
            problems.append(f"{tag}: constant tensor {od.type.name} has no dimensions")
        if od.is_constant:
            expected = od.byte_size()
            if od.location.length != expected:
                problems.append(f"{tag}: constant holds {od.location.length} bytes, "
                                f"{od.describe()} needs {expected}")
            if od.lifetime is _L.CONSTANT_COPY:
                if od.location.offset + od.location.length > len(model.operand_values):
                    problems.append(f"{tag}: CONSTANT_COPY value lies outside operandValues")
            else:
                if not 0 <= od.location.pool_index < len(model.pools):
                    problems.append(f"{tag}: pool {od.location.pool_index} does not exist")
                else:
                    size = memoryview(model.pools[od.location.pool_index]).nbytes
                    if od.location.offset + od.location.length > size:
                        problems.append(f"{tag}: CONSTANT_REFERENCE value lies outside pool "
                                        f"{od.location.pool_index}")
        if od.lifetime is _L.SUBGRAPH or od.type is OperandType.SUBGRAPH:
            if od.lifetime is not _L.SUBGRAPH or od.type is not OperandType.SUBGRAPH:
                problems.append(f"{tag}: SUBGRAPH type and lifetime must go together")
            elif not 0 <= od.location.offset < len(model.referenced):
                problems.append(f"{tag}: references subgraph {od.location.offset}, which does not exist")
        _check_numbers(od, tag, problems)
        if od.type is OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL:
            cq = od.channel_quant
            if cq is None:
                problems.append(f"{tag}: per-channel operand without channel parameters")
            elif any(not (math.isfinite(s) and MIN_SCALE <= s <= MAX_SCALE) for s in cq.scales):
                problems.append(f"{tag}: channel scales must be finite and positive, got {list(cq.scales)[:8]}")
            elif od.dimensions and (cq.channel_dim >= len(od.dimensions)
                                    or (od.dimensions[cq.channel_dim]
                                        and len(cq.scales) != od.dimensions[cq.channel_dim])):
                problems.append(f"{tag}: {len(cq.scales)} channel scales do not fit dimensions "
                                f"{list(od.dimensions)} at channel dim {cq.channel_dim}")

    for i in sg.input_indexes:
        if not 0 <= i < n:
            problems.append(f"{where}: input index {i} out of range")
        elif sg.operands[i].lifetime is not _L.SUBGRAPH_INPUT:
            problems.append(f"{where}: input operand {i} has lifetime {sg.operands[i].lifetime.name}")
    for o in sg.output_indexes:
        if not 0 <= o < n:
            problems.append(f"{where}: output index {o} out of range")
        elif sg.operands[o].lifetime is not _L.SUBGRAPH_OUTPUT:
            problems.append(f"{where}: output operand {o} has lifetime {sg.operands[o].lifetime.name}")
    declared_inputs = set(sg.input_indexes)
    declared_outputs = set(sg.output_indexes)
    for idx, od in enumerate(sg.operands):
        if od.lifetime is _L.SUBGRAPH_INPUT and idx not in declared_inputs:
            problems.append(f"{where} operand {idx}: SUBGRAPH_INPUT but not among the inputs")
        if od.lifetime is _L.SUBGRAPH_OUTPUT and idx not in declared_outputs:
            problems.append(f"{where} operand {idx}: SUBGRAPH_OUTPUT but not among the outputs")

    for k, op in enumerate(sg.operations):
        tag = f"{where} operation {k} ({op.type.name})"
        for kind, indexes in (("input", op.inputs), ("output", op.outputs)):
            for i in indexes:
                if not 0 <= i < n:
                    problems.append(f"{tag}: {kind} operand {i} out of range")


def _check_numbers(od, tag: str, problems: list[str]) -> None:
    """Scale and zero point fit the operand type (what the kernels and the serializer assume)."""
    lo, hi = _ZERO_POINT_RANGE.get(od.type, _INT32_RANGE)
    if not lo <= od.zero_point <= hi:
        problems.append(f"{tag}: zero point {od.zero_point} is outside {lo}..{hi} for {od.type.name}")
    if not math.isfinite(od.scale) or od.scale < 0:
        problems.append(f"{tag}: scale {od.scale!r} is not a finite non-negative number")
    elif od.type.is_quantized and od.type is not OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL and od.scale:
        # (a zero scale is let through: nnconv's own lowering of some LSTM / LSH_PROJECTION operands writes it,
        # and the kernels refuse what it would make of a requantization multiplier)
        if not MIN_SCALE <= od.scale <= MAX_SCALE:
            problems.append(f"{tag}: {od.type.name} needs a scale in [{MIN_SCALE:.3g}, {MAX_SCALE:.3g}], "
                            f"got {od.scale!r}")
