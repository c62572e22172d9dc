"""How much memory executing an NNAPI model takes, known from its operands before anything runs.

The executor holds the constants (views of the file, but kernels read every byte of them) plus, at each
operation, the values still live: subgraph inputs, and every temporary from the operation that writes it
to the last operation that reads it (the executor frees each intermediate after its last use). The peak of
that live set over the operations, plus the constants, is the figure `run` and `verify` compare with
`--max-memory` before executing. A control-flow operation (IF, WHILE) also holds the peak of the subgraphs it
calls while it runs. Kernel scratch space (an im2col buffer, say) is not counted: the figure is a lower
bound of the real peak, exact for the values themselves.

Sizes are computed in Python integers, so a model that declares absurd shapes gets an absurd figure rather
than an overflow; an operand with an unknown extent (0) counts as 0 bytes, since its size is only known
from the inputs at run time.
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence

from nnconv.errors import ResourceLimitError
from nnconv.fmt import format_bytes
from nnconv.nnapi.enums import OperandLifeTime, OperandType
from nnconv.nnapi.model import Model, Operand, Subgraph
from nnconv.nnapi.operations import spec_of

_L = OperandLifeTime


def operand_bytes(od: Operand) -> int:
    """Bytes of an operand's value (0 for an unknown extent or a subgraph reference)."""
    if od.type is OperandType.SUBGRAPH:
        return 0
    return math.prod(od.dimensions) * od.dtype.itemsize if od.dimensions else od.dtype.itemsize


def constant_bytes(model: Model) -> int:
    return sum(operand_bytes(od) for sg in model.subgraphs() for od in sg.operands if od.is_constant)


def peak_live_bytes(model: Model, sg_index: int = 0, _memo: dict[int, int] | None = None) -> int:
    """The largest total size of the non-constant values held at once while running one subgraph (and the
    subgraphs its IF / WHILE operations call; each subgraph is measured once, a cycle counts once)."""
    memo = {} if _memo is None else _memo
    if sg_index in memo:
        return memo[sg_index]
    memo[sg_index] = 0  # while it is being measured: a reference back to it adds nothing more
    sg = model.subgraphs()[sg_index]
    last_use = last_uses(sg)
    live: dict[int, int] = {i: operand_bytes(sg.operands[i]) for i in sg.input_indexes}
    keep = set(sg.output_indexes)
    current = sum(live.values())
    peak = current
    for k, op in enumerate(sg.operations):
        for o in op.outputs:
            if o not in live:
                live[o] = operand_bytes(sg.operands[o])
                current += live[o]
        inner = 0
        if spec_of(op.type).calls_subgraphs:
            inner = max((peak_live_bytes(model, ref, memo) for ref in _called(sg, op)), default=0)
        peak = max(peak, current + inner)
        for i in dict.fromkeys(op.inputs):
            if last_use.get(i) == k and i not in keep and i in live \
                    and sg.operands[i].lifetime is _L.TEMPORARY_VARIABLE:
                current -= live.pop(i)
    memo[sg_index] = peak
    return peak


def peak_memory(model: Model) -> int:
    """Constants plus the peak live set of the main subgraph (and of the subgraphs it calls)."""
    return constant_bytes(model) + peak_live_bytes(model)


def last_uses(sg: Subgraph) -> dict[int, int]:
    """Operand -> index of the last operation reading it."""
    return last_reads((k, op.inputs) for k, op in enumerate(sg.operations))


def last_reads(steps: Iterable[tuple[int, Sequence[int]]]) -> dict[int, int]:
    """Operand -> place of the last step reading it, from (place, operands read) in run order (the executor
    frees temporaries after it; its fused steps read at their own place what their operations read)."""
    last: dict[int, int] = {}
    for k, inputs in steps:
        for i in inputs:
            last[i] = k
    return last


def _called(sg: Subgraph, op: object) -> list[int]:
    """Indexes into `model.subgraphs()` of the SUBGRAPH operands an IF / WHILE reads."""
    out = []
    for i in op.inputs:  # type: ignore[attr-defined]
        od = sg.operands[i]
        if od.lifetime is _L.SUBGRAPH:
            out.append(od.location.offset + 1)
    return out


def ensure_fits(model: Model, max_bytes: int, name: str) -> int:
    """Returns the peak figure, or raises ResourceLimitError (exit 2) when it is over `max_bytes`."""
    constants, live = constant_bytes(model), peak_live_bytes(model)
    need = constants + live
    if need > max_bytes:
        raise ResourceLimitError(f"{name} needs at least {format_bytes(need)} to execute (constants "
                                 f"{format_bytes(constants)} + largest live set {format_bytes(live)}), over the "
                                 f"{format_bytes(max_bytes)} allowed (--max-memory)")
    return need
