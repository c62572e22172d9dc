"""`check --device`: per TFLite op, whether one device takes every NNAPI operation the op lowers to (with its
operand types), and the partition plan TFLite's NNAPI delegate forms when that device is named as its
accelerator with NNAPI's CPU fallback disallowed.

That is what the delegate does on a phone (`nnapi_delegate.cc`, `GetSupportedOpsForDevices`): it lowers
every node it validated into one NNAPI model, asks `ANeuralNetworksModel_getSupportedOperationsForDevices`
for the named device, keeps a node only when the device takes *every* NNAPI operation lowered from it, and
partitions the kept nodes (`lowering/partition.py`). Here the device's answer comes from its profile
(`profile.py`): the operation and its input-0 / output-0 types must be listed, and the operation must not
need a higher NNAPI feature level with its operands than the device has (nnconv's own validation of the
runtime, `nnapi/operations`). Operations inside IF/WHILE bodies count for the op whose IF/WHILE runs them.
A profile that `nnconv probe` made on this very model at this level answers per operation instead: what
the phone said about each NNAPI operation (`probe_answers`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from nnconv.errors import NnconvError
from nnconv.fmt import format_bytes
from nnconv.lowering.convert import ConversionOptions
from nnconv.lowering.diagnostics import Verdict
from nnconv.lowering.partition import DEFAULT_MAX_PARTITIONS, PartitionPlan, build_plan
from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.nnapi.levels import ApiLevel, api_level_of_feature_level, feature_level
from nnconv.nnapi.model import Model
from nnconv.nnapi.operations import OperationRefused, OperationView, spec_of, validate_operation
from nnconv.nnapi.program import ConvertedModel
from nnconv.delegate.conversion import DelegateConversion
from nnconv.pipeline import PreparedConversion, prepare
from nnconv.report.analysis import ModelCheck, report_json

from nnconv.devices.profile import DeviceProfile

# Device verdicts of one TFLite op.
TAKEN, REFUSED, NOT_LOWERED, FOLDED = "taken", "refused by device", "not lowered", "folded"


@dataclass(frozen=True)
class NnapiOpVerdict:
    """One NNAPI operation lowered from a TFLite op, with the operand types the device is asked about."""

    partition: int
    subgraph: int  # 0: the partition's main model; k: its referenced subgraph k - 1
    index: int
    type: OperationType
    input_type: OperandType | None
    output_type: OperandType | None
    reason: str = ""  # why the device refuses it ("" when it takes it)

    @property
    def taken(self) -> bool:
        return not self.reason

    def label(self) -> str:
        ins = self.input_type.name if self.input_type is not None else "-"
        outs = self.output_type.name if self.output_type is not None else "-"
        return f"{self.type.name}({ins} -> {outs})"

    def to_json(self) -> dict:
        return {"partition": self.partition, "subgraph": self.subgraph, "operation": self.index,
                "type": self.type.name,
                "input_type": None if self.input_type is None else self.input_type.name,
                "output_type": None if self.output_type is None else self.output_type.name,
                "supported": self.taken, "reason": self.reason}


@dataclass
class DeviceOp:
    """The device's verdict on one TFLite op."""

    index: int
    op: str
    status: str  # TAKEN, REFUSED, NOT_LOWERED (the spec refuses it at this level), FOLDED
    nnapi: list[NnapiOpVerdict] = field(default_factory=list)

    @property
    def reason(self) -> str:
        refused = [v for v in self.nnapi if not v.taken]
        return "; ".join(dict.fromkeys(v.reason for v in refused))

    def to_json(self, plan: PartitionPlan) -> dict:
        return {"index": self.index, "op": self.op, "status": self.status,
                "partition": plan.partition_of(self.index), "reason": self.reason,
                "nnapi_ops": [v.to_json() for v in self.nnapi]}


@dataclass
class DeviceCheck:
    """One model at one level on one device: per-op verdicts and the delegate's plan with that device."""

    profile: DeviceProfile
    ops: list[DeviceOp]
    plan: PartitionPlan

    @property
    def refused(self) -> list[int]:
        return [o.index for o in self.ops if o.status == REFUSED]

    @property
    def cpu_ops(self) -> list[int]:
        """TFLite ops the delegate leaves on TFLite's CPU kernels (spec refusals, device refusals, dropped)."""
        on_nnapi = {k for p in self.plan.partitions for k in p.ops}
        return [o.index for o in self.ops if o.status != FOLDED and o.index not in on_nnapi]

    @property
    def boundary_bytes(self) -> int:
        return sum(p.boundary_bytes for p in self.plan.partitions)

    def warnings(self) -> list[str]:
        out = []
        fl, level = self.profile.feature_level, self.plan.api_level
        if self.plan.target == "delegate":
            if fl is not None and fl < feature_level(level) and level >= 29:
                api = api_level_of_feature_level(fl)
                out.append(f"TFLite's NNAPI delegate targets {self.profile.name}'s NNAPI feature level {fl} "
                           f"(GetTargetFeatureLevel): its verdicts and graph for this device are those of API {api}")
            return out
        if fl is not None and fl < feature_level(level) and self.refused:
            api = api_level_of_feature_level(fl)
            out.append(f"{self.profile.name} implements NNAPI feature level {fl} (API {api}), below the API {level} "
                       f"the model was converted for: --api-level {api} converts for it (int8 as "
                       "TENSOR_QUANT8_ASYMM, no newer operations)")
        return out

    def summary_line(self) -> str:
        return (f"{self.profile.name}: {self.plan.summary_line()}, {len(self.refused)} refused by the device, "
                f"{len(self.cpu_ops)} on TFLite's CPU, {format_bytes(self.boundary_bytes)} across the boundary")

    def to_json(self) -> dict:
        return {"profile": self.profile.summary_json(), "warnings": self.warnings(),
                "ops": [o.to_json(self.plan) for o in self.ops],
                "partitions": [p.to_json() for p in self.plan.partitions],
                "dropped_partitions": self.plan.dropped,
                "summary": {"ops_total": len(self.ops), "ops_taken": sum(o.status == TAKEN for o in self.ops),
                            "ops_refused_by_device": len(self.refused), "ops_on_cpu": len(self.cpu_ops),
                            "cpu_ops": self.cpu_ops, "partitions": len(self.plan.partitions),
                            "partitions_formed": self.plan.partitions_formed,
                            "coverage": round(self.plan.coverage, 2), "boundary_bytes": self.boundary_bytes,
                            "line": self.summary_line()}}


@dataclass
class DeviceModelCheck:
    """`check --device` on one model: the spec report and one DeviceCheck per profile."""

    check: ModelCheck
    devices: list[DeviceCheck]

    def to_json(self) -> dict:
        """The spec report of `check --format json` with a "devices" list, one entry per profile."""
        return {**report_json(self.check), "devices": [dc.to_json() for dc in self.devices]}


# -- asking a profile about NNAPI operations --------------------------------------------------------
def operation_types(model: Model, subgraph: int, inputs: list[int], outputs: list[int]) \
        -> tuple[OperandType | None, OperandType | None]:
    """The types a profile constrains: input 0's and output 0's."""
    operands = model.subgraphs()[subgraph].operands
    return (operands[inputs[0]].type if inputs else None, operands[outputs[0]].type if outputs else None)


def probe_answers(profile: DeviceProfile, check: ModelCheck, spec_plan: PartitionPlan) -> list[list[bool]] | None:
    """What the phone answered for each main-model operation of each partition, when `profile` was probed
    (`nnconv probe`) on this model at this level: the same file name and API level, and in every partition
    the same NNAPI operations in the same order. None otherwise (the profile's entries then decide)."""
    probe, source = profile.extra.get("probe"), profile.source
    if (not isinstance(probe, dict) or source.get("api_level") != check.api_level
            or source.get("model") != os.path.basename(check.path)):
        return None
    parts = probe.get("partitions")
    if not isinstance(parts, list) or len(parts) != len(spec_plan.partitions) or len(parts) != len(
            spec_plan.converted):
        return None
    answers = []
    for part, converted in zip(parts, spec_plan.converted):
        ops = part.get("operations") if isinstance(part, dict) else None
        if not isinstance(ops, list) or not all(isinstance(o, dict) for o in ops):
            return None
        if [o.get("type") for o in ops] != [op.type.name for op in converted.model.main.operations]:
            return None
        answers.append([o.get("supported") is True for o in ops])
    return answers


def _verdicts(profile: DeviceProfile, converted: ConvertedModel, partition: int, level_fl: int,
              answers: list[bool] | None = None) -> tuple[dict[int, list[NnapiOpVerdict]], list[NnapiOpVerdict]]:
    """({TFLite op: verdicts of its main-model operations}, verdicts of referenced-subgraph operations).
    `answers`: the phone's own answer for each main-model operation (`probe_answers`), which decides."""
    model = converted.model
    by_op: dict[int, list[NnapiOpVerdict]] = {}
    nested: list[NnapiOpVerdict] = []
    device_fl = profile.feature_level
    for s, sg in enumerate(model.subgraphs()):
        for k, op in enumerate(sg.operations):
            ins, outs = operation_types(model, s, list(op.inputs), list(op.outputs))
            reason = profile.refusal(op.type, ins, outs) or ""
            if s == 0 and answers is not None:
                # A driver may take an operation with some shapes or parameters and not others: its answer
                # for this very operation is better than the entry its type pair made.
                reason = "" if answers[k] else (reason or f"{op.type.name}: the device refused this operation "
                                                          "when probed (it took others of its types)")
            elif not reason and device_fl is not None and device_fl < level_fl:
                try:
                    validate_operation(OperationView.of(model, s, op), device_fl)
                except OperationRefused as e:
                    reason = f"{op.type.name}: the device has feature level {device_fl}: {e}"
            verdict = NnapiOpVerdict(partition, s, k, op.type, ins, outs, reason)
            if s:
                nested.append(verdict)
            elif op.source_op is not None:
                by_op.setdefault(op.source_op, []).append(verdict)
    return by_op, nested


def device_ops(profile: DeviceProfile, check: ModelCheck, spec_plan: PartitionPlan) -> list[DeviceOp]:
    """Per TFLite op, the device's verdict on the NNAPI operations `spec_plan` (every spec-supported op
    lowered, no partition limit) made of it."""
    level_fl = feature_level(check.api_level)
    by_op: dict[int, list[NnapiOpVerdict]] = {}
    lowered = [p for p in spec_plan.partitions if not p.error]
    failed = {k for p in spec_plan.partitions if p.error for k in p.ops}
    answers = probe_answers(profile, check, spec_plan)
    for n, (p, converted) in enumerate(zip(lowered, spec_plan.converted)):
        ops, nested = _verdicts(profile, converted, p.index, level_fl, answers[n] if answers else None)
        for k, verdicts in ops.items():
            if any(spec_of(v.type).calls_subgraphs for v in verdicts):
                verdicts = verdicts + nested  # an IF/WHILE runs its bodies: the device must take them too
            by_op.setdefault(k, []).extend(verdicts)
    out = []
    for r in check.report.ops:
        if r.status == Verdict.FOLDED:
            status = FOLDED
        elif not r.supported or r.index in failed:
            status = NOT_LOWERED
        else:  # an op lowered into no operation (a cast absorbed into its consumer's weights) asks nothing
            status = TAKEN if all(v.taken for v in by_op.get(r.index, [])) else REFUSED
        out.append(DeviceOp(r.index, r.op, status, by_op.get(r.index, [])))
    return out


def check_device(prepared: "PreparedConversion | DelegateConversion", check: ModelCheck, profile: DeviceProfile,
                 max_partitions: int = DEFAULT_MAX_PARTITIONS) -> DeviceCheck:
    """The device's per-op verdicts and the delegate's partition plan with that device."""
    if isinstance(prepared, DelegateConversion):
        return _check_device_delegate(prepared, check, profile, max_partitions)
    spec_plan = prepared.plan(0, lower=True)  # every supported op lowered: what the delegate asks about
    ops = device_ops(profile, check, spec_plan)
    refused = [o.index for o in ops if o.status == REFUSED]
    plan = build_plan(prepared.state, check.report, max_partitions, lower=False, refused=refused)
    nnapi_count = {o.index: len(o.nnapi) for o in ops}
    for p in plan.partitions:
        p.nnapi_ops = sum(nnapi_count.get(k, 0) for k in p.ops)
    return DeviceCheck(profile, ops, plan)


def _check_device_delegate(prepared: DelegateConversion, check: ModelCheck, profile: DeviceProfile,
                           max_partitions: int) -> DeviceCheck:
    """The delegate target: from API 29 the delegate targets the device's feature level when it is lower
    (`GetTargetFeatureLevel`, which can change its verdicts and graph), builds each partition it previews and
    asks the device about its NNAPI operations (`getSupportedOperationsForDevices`); a node stays only when
    the device takes all of its operations, and the delegate partitions the rest again. Below API 29 it cannot
    ask (no device API): its plan is the spec's, and the runtime runs what the device refuses on NNAPI's CPU."""
    target = prepared.for_device(profile.feature_level)
    spec_plan = target.plan(0)  # every node the delegate takes, built uncapped: what it asks about
    device_view = ModelCheck(check.path, target.report, spec_plan) if target is not prepared else check
    ops = device_ops(profile, device_view, spec_plan)
    refused = {o.index for o in ops if o.status == REFUSED}
    if check.api_level >= 29:
        plan = target.plan(max_partitions, device=lambda model, op: op.source_op not in refused)
    else:
        plan = target.plan(max_partitions)
    return DeviceCheck(profile, ops, plan)


def check_with_devices(path: "str | bytes", level: ApiLevel, profiles: list[DeviceProfile],
                       options: ConversionOptions | None = None,
                       max_partitions: int = DEFAULT_MAX_PARTITIONS) -> DeviceModelCheck:
    """`check --device` on one model (picklable for `--jobs`)."""
    prepared = prepare(path, level, options)
    check = ModelCheck(path, prepared.report, prepared.plan(max_partitions), prepared.whole_refusal)
    if not profiles:
        raise NnconvError("--device: no device profile given")
    return DeviceModelCheck(check, [check_device(prepared, check, p, max_partitions) for p in profiles])
