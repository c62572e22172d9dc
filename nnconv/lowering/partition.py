"""The partition plan: which operators TFLite's NNAPI delegate would hand to NNAPI, grouped as it groups them.

At runtime the delegate validates every node, then asks the interpreter to preview a partitioning of the
supported ones (`PreviewDelegatePartitioning`, which runs `PartitionGraphIntoIndependentNodeSubsets` in its
greedy mode). That algorithm works in *epochs*: an epoch starts with the first node in execution order whose
inputs are all available; that node fixes the epoch's kind (delegated or CPU); then every node of the same
kind whose inputs are available joins the epoch, sweeping the execution plan again and again until nothing
more can join. So a partition is a maximal set of supported nodes that can run together while respecting
dependencies, not merely a run of consecutive supported ops: a CPU op on a side branch does not split the
partition of the main branch unless the main branch consumes its result. Ops that may have side effects
(IF, WHILE, CALL_ONCE, any op touching a resource tensor) are also chained in their original order, as the
partitioner does with control edges in greedy mode.

When there are more partitions than `max_number_delegated_partitions` (default 3; <= 0 means unlimited) the
delegate keeps the largest by node count (`LimitDelegatedPartitions`) and partitions the kept nodes again.
Its sort is not stable; ties here go to the partition that runs first.

Ops folded into constants by nnconv are not nodes of the plan: their outputs are constants, available from
the start, exactly like weights.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np

from nnconv.errors import EXIT_INTERNAL, ConversionError, NnconvError
from nnconv.fmt import format_bytes, plural
from nnconv.lowering.check_report import Report
from nnconv.lowering.context import ConversionState, dtype_name
from nnconv.lowering.convert import is_folded, lower_ops, partition_boundary
from nnconv.lowering.diagnostics import Verdict
from nnconv.nnapi.program import ConvertedModel
from nnconv.tflite.ir import Subgraph
from nnconv.tflite.schema_enums import BuiltinOperator, TensorType

DEFAULT_MAX_PARTITIONS = 3  # the delegate's default max_number_delegated_partitions
_CONTROL_FLOW = frozenset({int(BuiltinOperator.IF), int(BuiltinOperator.WHILE), int(BuiltinOperator.CALL_ONCE)})


@dataclass(frozen=True)
class BoundaryTensor:
    """A tensor crossing between the CPU and an NNAPI partition (copied in or out at every invocation)."""

    index: int
    name: str
    dtype: str
    shape: tuple[int, ...]
    nbytes: int
    peers: tuple[str, ...]  # where it comes from (inputs) or goes to (outputs): "model input", "CPU op #3 ..."

    def to_json(self) -> dict:
        return {"tensor": self.index, "name": self.name, "dtype": self.dtype, "shape": list(self.shape),
                "bytes": self.nbytes, "peers": list(self.peers)}


@dataclass
class Partition:
    """One group of operators lowered into one NNAPI model."""

    index: int  # position among the delegated partitions, in execution order
    ops: list[int]
    inputs: list[BoundaryTensor]
    outputs: list[BoundaryTensor]
    nnapi_ops: int = 0  # NNAPI operations emitted for it
    error: str = ""  # why lowering it failed (a bug: every op in it passed its check)
    error_exit_code: int = 0  # the exit code `convert` gives for that failure (4: our bug)

    @property
    def boundary_bytes(self) -> int:
        return sum(t.nbytes for t in self.inputs) + sum(t.nbytes for t in self.outputs)

    def to_json(self) -> dict:
        return {"index": self.index, "ops": self.ops, "op_count": len(self.ops), "nnapi_op_count": self.nnapi_ops,
                "inputs": [t.to_json() for t in self.inputs], "outputs": [t.to_json() for t in self.outputs],
                "boundary_bytes": self.boundary_bytes, "error": self.error}


@dataclass
class PartitionPlan:
    """The delegate's view of one model at one API level; `converted` holds one NNAPI model per partition."""

    model: str
    api_level: int
    max_partitions: int
    ops_total: int
    folded: list[int]
    partitions: list[Partition]  # the delegated ones, in execution order
    dropped: list[list[int]] = field(default_factory=list)  # supported ops left on the CPU by the limit
    partitions_formed: int = 0  # before the limit
    converted: list[ConvertedModel] = field(default_factory=list)

    @property
    def ops_delegated(self) -> int:
        """Ops NNAPI takes care of: those of the partitions, and the ops nnconv folds into constants, which count
        only when some partition runs (a model with no partition runs wholly on TFLite's CPU kernels, folded
        ops included: nothing of it is on NNAPI)."""
        if not self.partitions:
            return 0
        return sum(len(p.ops) for p in self.partitions) + len(self.folded)

    @property
    def coverage(self) -> float:
        """Percentage of ops delegated: 0 when no partition runs, 100 for a model without ops."""
        return 100.0 * self.ops_delegated / self.ops_total if self.ops_total else 100.0

    def partition_of(self, op_index: int) -> int | None:
        for p in self.partitions:
            if op_index in p.ops:
                return p.index
        return None

    def summary_line(self) -> str:
        n = len(self.partitions)
        return (f"{n} partition{'' if n == 1 else 's'}, {self.ops_delegated}/{self.ops_total} ops "
                f"({self.coverage:.0f}%)")

    def warnings(self) -> list[str]:
        out = []
        if len(self.partitions) > 1:
            crossing = sum(p.boundary_bytes for p in self.partitions)
            out.append(f"{len(self.partitions)} partitions: every invocation copies {format_bytes(crossing)} across "
                       "the CPU/NNAPI boundary and runs the ops between them on the CPU")
        if self.dropped:
            n = sum(len(d) for d in self.dropped)
            out.append(f"{self.partitions_formed} partitions formed but only the largest {self.max_partitions} "
                       f"are delegated (--max-partitions): {plural(n, 'supported op')} "
                       f"{'stays' if n == 1 else 'stay'} on the CPU")
        if not self.partitions and self.ops_total > self.ops_delegated:
            out.append("no op is delegated: the whole model runs on the TFLite CPU kernels")
        out += [f"partition {p.index} failed to lower: {p.error}" for p in self.partitions if p.error]
        return out

    def to_json(self) -> dict:
        source = os.path.abspath(self.model) if os.path.isfile(self.model) else None
        return {"model": self.model, "model_abspath": source, "api_level": self.api_level,
                "max_partitions": self.max_partitions,
                "partitions_formed": self.partitions_formed, "ops_total": self.ops_total,
                "ops_delegated": self.ops_delegated, "coverage": round(self.coverage, 2), "folded": self.folded,
                "partitions": [p.to_json() for p in self.partitions], "dropped": self.dropped}


PartialPlan = PartitionPlan  # the name `convert --allow-partial` knows it by


# -- the delegate's grouping ------------------------------------------------------------------------
def side_effect_ops(sg: Subgraph, nodes: Sequence[int]) -> list[int]:
    """Nodes the interpreter marks `might_have_side_effect`: IF, WHILE, CALL_ONCE and any op reading or
    writing a resource tensor. The greedy partitioner keeps them in their original relative order."""
    out = []
    for k in nodes:
        op = sg.operators[k]
        if op.builtin_code in _CONTROL_FLOW or any(
                t >= 0 and sg.tensors[t].type == TensorType.RESOURCE for t in (*op.inputs, *op.outputs)):
            out.append(k)
    return out


def group_nodes(sg: Subgraph, nodes: Sequence[int], delegated: Iterable[int]) -> list[tuple[bool, list[int]]]:
    """Splits `nodes` (execution order) into epochs of one kind each, as the interpreter's greedy partitioner
    does: [(is_delegated, [op indices in the order they run])]. Tensors not produced by a node in `nodes`
    (model inputs, weights, folded constants) are available from the start; side-effecting nodes also wait
    for the previous side-effecting node (the control-edge chain the partitioner adds in greedy mode)."""
    chosen = set(delegated)
    chain = side_effect_ops(sg, nodes)
    after = {b: a for a, b in zip(chain, chain[1:])}
    pending = {t for k in nodes for t in sg.operators[k].outputs if t >= 0}
    done: set[int] = set()
    epochs: list[tuple[bool, list[int]]] = []
    while len(done) < len(nodes):
        kind: bool | None = None
        members: list[int] = []
        progress = True
        while progress:  # sweep the execution plan until no node of this epoch's kind can join
            progress = False
            for k in nodes:
                if k in done:
                    continue
                op = sg.operators[k]
                if any(t >= 0 and t in pending for t in op.inputs):
                    continue
                if k in after and after[k] not in done:
                    continue
                if kind is None:
                    kind = k in chosen  # the first ready node decides what this epoch is
                if (k in chosen) != kind:
                    continue
                done.add(k)
                members.append(k)
                pending.difference_update(t for t in op.outputs if t >= 0)
                progress = True
        if not members:  # a dependency cycle: cannot happen in a valid model
            raise ConversionError(f"subgraph {sg.index} has a dependency cycle among its operators")
        epochs.append((bool(kind), members))
    return epochs


def delegated_partitions(sg: Subgraph, nodes: Sequence[int], supported: Iterable[int],
                         max_partitions: int = DEFAULT_MAX_PARTITIONS) -> tuple[list[list[int]], list[list[int]], int]:
    """(kept partitions in execution order, dropped partitions, number formed before the limit)."""
    formed = [m for kind, m in group_nodes(sg, nodes, supported) if kind]
    if max_partitions <= 0 or len(formed) <= max_partitions:
        return formed, [], len(formed)
    ranked = sorted(range(len(formed)), key=lambda i: -len(formed[i]))  # stable: ties keep execution order
    keep = sorted(ranked[:max_partitions])
    kept_nodes = {k for i in keep for k in formed[i]}
    dropped = [formed[i] for i in range(len(formed)) if i not in keep]
    # The delegate hands only the kept nodes to ReplaceNodeSubsetsWithDelegateKernels, which partitions again.
    kept = [m for kind, m in group_nodes(sg, nodes, kept_nodes) if kind]
    return kept, dropped, len(formed)


# -- boundary tensors -------------------------------------------------------------------------------
def _nbytes(sg: Subgraph, t: int) -> int:
    tensor = sg.tensors[t]
    item = tensor.dtype.itemsize if tensor.dtype is not None else 0
    return int(np.prod(tensor.shape, dtype=np.int64)) * item if tensor.shape else item


def _describe(sg: Subgraph, t: int, ops: Sequence[int], where: dict[int, int], inputs: bool,
              nodes: Sequence[int]) -> BoundaryTensor:
    """A boundary tensor and its peers among `nodes` (the ops that exist at runtime: folded ones do not)."""
    tensor = sg.tensors[t]
    peers: list[str] = []
    if inputs:
        if t in sg.inputs:
            peers.append("model input")
        targets = [k for k in nodes if t in sg.operators[k].outputs]
    else:
        if t in sg.outputs:
            peers.append("model output")
        targets = [k for k in nodes if k not in ops and t in sg.operators[k].inputs]
    for k in targets:
        p = where.get(k)
        label = f"partition {p}" if p is not None else f"CPU op #{k} {sg.operators[k].name}"
        if label not in peers:
            peers.append(label)
    return BoundaryTensor(t, tensor.name or f"tensor{t}", dtype_name(tensor.type), tuple(tensor.shape),
                          _nbytes(sg, t), tuple(peers))


# -- building the plan ------------------------------------------------------------------------------
def build_plan(state: ConversionState, report: Report, max_partitions: int = DEFAULT_MAX_PARTITIONS,
               lower: bool = True, strict: bool = False, subgraph: int = 0,
               refused: Iterable[int] = ()) -> PartitionPlan:
    """Partitions the supported ops of `report` and, when `lower`, lowers each partition: the converted models
    go to `plan.converted` and each op's `nnapi_ops` becomes the NNAPI operations actually emitted for it.
    A partition that fails to lower records the error (or raises it when `strict`). `refused`: ops the
    spec takes but the target device does not (`check --device`): the delegate leaves them on the CPU."""
    sg = state.model.subgraphs[subgraph]
    folded = [r.index for r in report.ops if r.status == Verdict.FOLDED]
    # Folded ops, constant producers included (`check_ops`), are in no partition: each partition reading a
    # constant producer's output lowers it again into its own constant (`convert.constant_producers`).
    nodes = [k for k in range(len(sg.operators)) if not is_folded(state, sg, sg.operators[k]) and k not in folded]
    supported = {r.index for r in report.ops if r.supported and r.status != Verdict.FOLDED} - set(refused)
    kept, dropped, formed = delegated_partitions(sg, nodes, supported, max_partitions)
    where = {k: i for i, members in enumerate(kept) for k in members}
    partitions = []
    for i, members in enumerate(kept):
        ins, outs = partition_boundary(sg, members, state)
        partitions.append(Partition(i, sorted(members), [_describe(sg, t, members, where, True, nodes) for t in ins],
                                    [_describe(sg, t, members, where, False, nodes) for t in outs]))
    plan = PartitionPlan(model=report.model, api_level=state.api_level, max_partitions=max_partitions,
                         ops_total=len(report.ops), folded=folded, partitions=partitions, dropped=dropped,
                         partitions_formed=formed)
    if not lower:
        return plan
    emitted: dict[int, list[str]] = {}
    notes: dict[int, str] = {}
    for p in partitions:
        try:
            converted = lower_ops(state, p.ops, subgraph)
        except NnconvError as e:
            if strict:
                raise
            p.error, p.error_exit_code = str(e), e.exit_code
            continue
        except Exception as e:  # noqa: BLE001 - a rule bug must not hide the rest of the report
            if strict:
                raise
            p.error, p.error_exit_code = f"{type(e).__name__}: {e}", EXIT_INTERNAL
            continue
        plan.converted.append(converted)
        notes.update(converted.notes)
        p.nnapi_ops = len(converted.model.main.operations)
        for op in converted.model.main.operations:
            if op.source_op is not None:
                emitted.setdefault(op.source_op, []).append(op.type.name)
    for members in dropped:  # lowered only to name their NNAPI ops; they run on the CPU
        try:
            dropped_model = lower_ops(state, members, subgraph)
        except NnconvError:
            continue  # the names are informative only: a group that does not lower keeps none
        notes.update(dropped_model.notes)
        for op in dropped_model.model.main.operations:
            if op.source_op is not None:
                emitted.setdefault(op.source_op, []).append(op.type.name)
    for r in report.ops:
        r.lowering_note = notes.get(r.index, "")
        if r.index in emitted:
            r.nnapi_ops = emitted[r.index]
        elif r.status == Verdict.FOLDED:
            r.nnapi_ops = []
    return plan

