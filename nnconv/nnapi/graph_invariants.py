"""The graph invariants Android checks before it compiles a model (the NNAPI runtime's validation of a
subgraph's execution order and of the subgraph references, after each operation's own validation).

Walking each subgraph's operations in their order (the order the runtime executes them):
- every operand an operation reads has a value: a constant (CONSTANT_COPY / CONSTANT_REFERENCE), an
  omitted optional input (NO_VALUE), a subgraph input, a SUBGRAPH reference, or the output of an EARLIER
  operation. An operation reading its own output, or one that a later operation writes (operations out of
  execution order), or one that no operation writes, breaks it;
- every operation writes only temporaries and subgraph outputs, each once;
- every temporary and every subgraph output is written (Android refuses a temporary that no operation
  writes even when nothing reads it);
- the referenced subgraphs (IF branches, WHILE condition and body) are checked the same way, and their
  references form no cycle.

`nnapi/validate.py` reports these with the other structural problems (`ModelValidationError`: a `.nnapi`
file breaking one is refused on load, exit 2); the lowering's check reports what a rule's operations break
at the TFLite op (diagnostic NNC031), and `lower_ops` reports a lowered partition breaking one as a bug of
nnconv (exit 4). Index ranges are `validate.py`'s to report: an operand index out of range is skipped here.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from nnconv.nnapi.enums import OperandLifeTime, OperationType
from nnconv.nnapi.model import Model, Subgraph

_L = OperandLifeTime
# lifetimes whose operands have a value before any operation runs
_KNOWN = frozenset({_L.CONSTANT_COPY, _L.CONSTANT_REFERENCE, _L.NO_VALUE, _L.SUBGRAPH_INPUT, _L.SUBGRAPH})


class Invariant(str, enum.Enum):
    """Which invariant a graph breaks."""

    READ_BEFORE_WRITE = "read-before-write"  # reads an operand written only by a later operation
    READS_OWN_OUTPUT = "reads-own-output"
    READ_UNWRITTEN = "read-unwritten"  # reads a temporary / subgraph output that no operation writes
    WRITES_NON_TEMPORARY = "writes-non-temporary"  # writes a constant, an input, an omitted or a reference
    WRITTEN_TWICE = "written-twice"
    OUTPUT_NEVER_WRITTEN = "output-never-written"
    TEMPORARY_NEVER_WRITTEN = "temporary-never-written"
    SUBGRAPH_CYCLE = "subgraph-cycle"  # referenced subgraphs that reach themselves through IF / WHILE


@dataclass(frozen=True)
class GraphViolation:
    """One broken invariant: where (`subgraph` 0 = main, `operation` its index there, None for a
    subgraph-wide one), the operation's TFLite operator (`source_op`) and the words of the message."""

    invariant: Invariant
    subgraph: int
    operation: int | None
    operation_type: OperationType | None
    detail: str
    source_op: int | None = None

    def __str__(self) -> str:
        where = "main" if self.subgraph == 0 else f"referenced[{self.subgraph - 1}]"
        if self.operation is not None and self.operation_type is not None:
            where += f" operation {self.operation} ({self.operation_type.name})"
        return f"{where}: {self.detail}"


def graph_violations(model: Model) -> list[GraphViolation]:
    """Every broken invariant of every subgraph of `model`, in subgraph and operation order."""
    found: list[GraphViolation] = []
    for si, sg in enumerate(model.subgraphs()):
        found.extend(_execution_order(si, sg))
    found.extend(_reference_cycles(model))
    return found


def _name(sg: Subgraph, i: int) -> str:
    od = sg.operands[i]
    return f"operand {i} ({od.name})" if od.name else f"operand {i} ({od.describe()})"


def _execution_order(si: int, sg: Subgraph) -> list[GraphViolation]:
    n = len(sg.operands)
    ops = sg.operations
    first_writer: dict[int, int] = {}
    for k, op in enumerate(ops):
        for o in op.outputs:
            if 0 <= o < n:
                first_writer.setdefault(o, k)
    written: dict[int, int] = {}  # operand -> the operation that wrote it
    unwritten_reads: set[int] = set()
    found: list[GraphViolation] = []

    def add(inv: Invariant, k: int, detail: str) -> None:
        found.append(GraphViolation(inv, si, k, ops[k].type, detail, ops[k].source_op))

    for k, op in enumerate(ops):
        for i in dict.fromkeys(op.inputs):
            if not 0 <= i < n or i in written or sg.operands[i].lifetime in _KNOWN:
                continue
            if i in op.outputs:
                add(Invariant.READS_OWN_OUTPUT, k, f"reads {_name(sg, i)}, its own output")
            elif first_writer.get(i, k) > k:
                j = first_writer[i]
                add(Invariant.READ_BEFORE_WRITE, k, f"reads {_name(sg, i)} before operation {j} "
                    f"({ops[j].type.name}) writes it: the operations are out of execution order")
            else:
                unwritten_reads.add(i)
                add(Invariant.READ_UNWRITTEN, k, f"reads {_name(sg, i)}, which has no value: it is neither a "
                    "constant, an input nor the output of an earlier operation")
        for o in op.outputs:
            if not 0 <= o < n:
                continue
            lt = sg.operands[o].lifetime
            if lt in _KNOWN:
                add(Invariant.WRITES_NON_TEMPORARY, k, f"writes {_name(sg, o)}, whose lifetime is {lt.name} "
                    "(an operation writes only temporaries and subgraph outputs)")
            elif o in written:
                j = written[o]
                add(Invariant.WRITTEN_TWICE, k, f"writes {_name(sg, o)} a second time (operation {j} "
                    f"({ops[j].type.name}) wrote it)")
            else:
                written[o] = k
    for i, od in enumerate(sg.operands):
        if od.lifetime in _KNOWN or i in written or i in unwritten_reads:
            continue
        output = od.lifetime is _L.SUBGRAPH_OUTPUT
        found.append(GraphViolation(
            Invariant.OUTPUT_NEVER_WRITTEN if output else Invariant.TEMPORARY_NEVER_WRITTEN, si, None, None,
            f"{'output' if output else 'temporary'} {_name(sg, i)} is never written"))
    return found


def _reference_cycles(model: Model) -> list[GraphViolation]:
    """The referenced subgraphs that reach themselves through their SUBGRAPH operands (Android refuses a
    model with a circular subgraph reference; run would recurse without end)."""
    subgraphs = model.subgraphs()
    calls: dict[int, list[int]] = {}
    for si, sg in enumerate(subgraphs):
        calls[si] = sorted({od.location.offset + 1 for od in sg.operands
                            if od.lifetime is _L.SUBGRAPH and 0 <= od.location.offset < len(model.referenced)})
    found = []
    for start in range(1, len(subgraphs)):
        path = _path_back(calls, start)
        if path is not None:
            chain = " -> ".join(str(s - 1) for s in path)
            found.append(GraphViolation(Invariant.SUBGRAPH_CYCLE, start, None, None,
                                        f"reaches itself through its IF / WHILE references ({chain})"))
    return found


def _path_back(calls: dict[int, list[int]], start: int) -> list[int] | None:
    """A path of subgraph references from `start` back to itself, or None (depth-first, each subgraph
    visited once)."""
    seen: set[int] = set()
    stack: list[tuple[int, list[int]]] = [(start, [start])]
    while stack:
        s, path = stack.pop()
        for t in calls.get(s, ()):
            if t == start:
                return [*path, t]
            if t not in seen:
                seen.add(t)
                stack.append((t, [*path, t]))
    return None
