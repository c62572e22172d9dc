"""What TFLite's NNAPI delegate does with one model at one level, in the few numbers `nnconv rewrite` compares:
how TFLite ends up running it, its partitions and how many operators run on NNAPI.

A step of the rewrite is kept only when the view after it is better (`DelegateView.better_than`): first the
delegate runs at all (outcome `delegated` and Android's runtime takes every partition's graph), then fewer
operators are left on TFLite's CPU kernels, then fewer partitions (fewer hand-overs between NNAPI and the CPU).
A model the delegate does not run is one view whatever its operator count: removing operators from a model
that runs on the CPU anyway helps no phone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nnconv.delegate.conversion import DelegateConversion
from nnconv.tflite.ir import TfliteModel
from nnconv.tflite.schema_enums import BuiltinOperator as B

_OUTCOME_WORDS = {
    "refused_dynamic_tensors": "the runtime refuses the delegate (dynamic-sized tensors{chain})",
    "not_delegated": "the delegate takes no operator",
    "delegate_failed": "the delegate fails while building a partition; TFLite restores the CPU plan",
    "failed_after_delegate_prepare": "TFLite undoes the delegation after the delegate's prepare",
    "device_crash_null_api": "the delegate calls an NNAPI function this level lacks: the app crashes",
    "cpu_prepare_failed": "TFLite itself cannot prepare the model",
}


@dataclass(frozen=True)
class DelegateView:
    """The delegate's plan for one model at one level, summarized."""

    outcome: str  # nnconv.delegate.plan.Outcome's value
    reason: str  # why nothing runs on NNAPI ("" when something does)
    partitions: int
    ops_total: int
    on_nnapi: int  # operators that run on NNAPI (0 when the delegation fails or is refused)
    cpu_ops: tuple[tuple[int, str], ...]  # (index, name) of every operator left on TFLite's CPU kernels
    dynamic_chain: str = ""  # "SHAPE #3 -> RESHAPE #9": where the dynamic-sized tensors come from

    @property
    def runs(self) -> bool:
        return self.outcome == "delegated" and self.on_nnapi > 0

    def key(self) -> tuple[bool, int, int]:
        if not self.runs:
            return (False, 0, 0)
        return (True, -(self.ops_total - self.on_nnapi), -self.partitions)

    def better_than(self, other: "DelegateView") -> bool:
        return self.key() > other.key()

    @property
    def whole(self) -> bool:
        return self.runs and self.partitions == 1 and self.on_nnapi == self.ops_total

    def describe(self) -> str:
        """One line: "1 partition, 212/212 ops", or why nothing runs on NNAPI."""
        if self.runs:
            part = f"{self.partitions} partition{'s' if self.partitions != 1 else ''}"
            return f"{part}, {self.on_nnapi}/{self.ops_total} ops on NNAPI"
        words = _OUTCOME_WORDS.get(self.outcome, self.outcome)
        if self.outcome == "delegated":  # a partition Android's runtime refuses
            words = "Android's runtime refuses the delegate's graph; TFLite runs the model on the CPU"
        return words.format(chain=f": {self.dynamic_chain}" if self.dynamic_chain else "")

    def to_json(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "outcome_reason": self.reason, "runs_on_nnapi": self.runs,
                "partitions": self.partitions, "ops_total": self.ops_total, "ops_on_nnapi": self.on_nnapi,
                "whole": self.whole, "cpu_ops": [{"index": k, "op": name} for k, name in self.cpu_ops],
                "dynamic_chain": self.dynamic_chain, "summary": self.describe()}


def delegate_view(prepared: DelegateConversion) -> DelegateView:
    """The view of a model prepared for the delegate target (`nnconv.prepare`)."""
    plan = prepared.plan()
    names = [r.op for r in prepared.report.ops]
    failed = any(p.error for p in plan.partitions)
    on_nnapi = 0 if failed or plan.outcome != "delegated" else plan.ops_delegated
    taken = set() if on_nnapi == 0 else {k for p in plan.partitions for k in p.ops} | set(plan.folded)
    reason = plan.outcome_reason or next((p.error for p in plan.partitions if p.error), "")
    chain = ""
    if plan.outcome == "refused_dynamic_tensors":
        chain = dynamic_chain(prepared.model, prepared.delegate_plan().error_node,
                              prepared.graph.prepared.dynamic_node)
    return DelegateView(plan.outcome, reason, len(plan.partitions) if on_nnapi else 0, plan.ops_total, on_nnapi,
                        tuple((k, n) for k, n in enumerate(names) if k not in taken), chain)


def dynamic_chain(model: TfliteModel, tensor: int | None, node: int | None) -> str:
    """"SHAPE #3 -> RESHAPE #9": the operator that left a dynamic-sized tensor, after the SHAPE it computes
    its shape from (the nearest SHAPE up its inputs), when there is one."""
    sg = model.subgraphs[0]
    if node is None or not 0 <= node < len(sg.operators):
        return f"tensor #{tensor}" if tensor is not None and tensor >= 0 else ""
    producers = {o: op for op in sg.operators for o in op.outputs if o >= 0}
    end = sg.operators[node]
    seen: set[int] = set()
    frontier = [t for t in end.inputs if t >= 0]
    while frontier:
        t = frontier.pop(0)
        op = producers.get(t)
        if op is None or op.index in seen:
            continue
        seen.add(op.index)
        if op.builtin_code == B.SHAPE:
            return f"{op.name} #{op.index} -> {end.name} #{end.index}"
        frontier += [i for i in op.inputs if i >= 0]
    return f"{end.name} #{end.index}"
