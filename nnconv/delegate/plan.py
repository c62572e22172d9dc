"""`StatefulNnApiDelegate::DoPrepare` and what TFLite does around it: which nodes the delegate takes, the
partitions it forms and keeps, the NNAPI model of each, and how it ends (`Outcome`).

    TFLite prepares every node; dynamic-sized tensors -> the runtime refuses the delegate (nothing on NNAPI)
    Validate every node (float16 weights: FP16GraphPartitionHelper, consumers read the float16 constants)
    preview the partitions; from API 29 build each one and ask the device which operations it takes
    (a build failure fails the delegate; TFLite restores the CPU plan)
    keep the largest `max_partitions` (LimitDelegatedPartitions), partition again, replace
    below API 29 the models are built only now: a failure fails the delegate kernel's Prepare
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Callable, Sequence

from nnconv.delegate.build import MAX_ALLOCATION, BuiltPartition, build_partition
from nnconv.delegate.failures import Failure
from nnconv.delegate.graph import DelegateGraph, Node
from nnconv.delegate.operands import BuildCrash, BuildError
from nnconv.delegate.setup import DelegateSetup
from nnconv.delegate.validation import Validation, validate
from nnconv.fmt import format_bytes
from nnconv.nnapi.model import Model, Operation
from nnconv.tflite.node_subsets import NodeSubset, PlanNode, partition
from nnconv.tflite.schema_enums import BuiltinOperator as B
from nnconv.tflite.schema_enums import TensorType as T


class Outcome(str, enum.Enum):
    """How TFLite ends up running the model with the delegate (the recordings' `outcome`)."""

    DELEGATED = "delegated"  # at least one partition runs on NNAPI
    NOT_DELEGATED = "not_delegated"  # the delegate takes no node: everything on the CPU
    REFUSED_DYNAMIC_TENSORS = "refused_dynamic_tensors"  # the runtime refuses a static-shape delegate
    DELEGATE_FAILED = "delegate_failed"  # the delegate failed while building; TFLite restores the CPU plan
    FAILED_AFTER_DELEGATE_PREPARE = "failed_after_delegate_prepare"  # a kernel's Prepare failed afterwards
    DEVICE_CRASH_NULL_API = "device_crash_null_api"  # a call to an NNAPI function the level lacks: a crash
    DELEGATE_CRASH = "delegate_crash"  # the delegate dereferences a null pointer while building: a crash
    CPU_PREPARE_FAILED = "cpu_prepare_failed"  # TFLite itself cannot prepare the model

    @property
    def runs_on_cpu(self) -> bool:
        return self is not Outcome.DELEGATED


# Device support of the NNAPI operations the delegate builds (`getSupportedOperationsForDevices`): None asks
# nothing (an up-to-date driver that takes every operation, the spec's view).
DeviceQuery = Callable[[Model, Operation], bool]


@dataclass
class NodeVerdict:
    """What the delegate's Validate said of one node."""

    index: int
    supported: bool
    failures: tuple[Failure, ...] = ()
    fp16_const_dequantize: bool = False  # a constant float16 DEQUANTIZE: folded into its consumers' weights
    remapped: bool = False  # reads float16 constants directly (FP16GraphPartitionHelper)


@dataclass
class DelegatePlan:
    """The delegate's decisions for one model at one API level."""

    setup: DelegateSetup
    verdicts: list[NodeVerdict]
    outcome: Outcome = Outcome.NOT_DELEGATED
    error: str = ""  # why the delegate fails or is refused, as one line
    error_node: int | None = None  # the node (or tensor, for dynamic tensors) the error is about
    supported: list[int] = field(default_factory=list)  # `delegate_supported_nodes`
    partitions: list[NodeSubset] = field(default_factory=list)  # the delegated subsets, in execution order
    formed: int = 0  # partitions before the cap
    dropped: list[list[int]] = field(default_factory=list)  # partitions the cap left on the CPU
    built: list[BuiltPartition] = field(default_factory=list)  # one per partition, in order
    fp16_path: bool = False
    device_refused: list[int] = field(default_factory=list)  # supported nodes the device does not take
    added_tensors: int = 0  # tensors the delegate added to TFLite's array while building
    conversion_tensors: int = 0

    @property
    def delegated_nodes(self) -> list[int]:
        return [k for p in self.partitions for k in p.nodes]


def plan_delegation(graph: DelegateGraph, setup: DelegateSetup, device: DeviceQuery | None = None) -> DelegatePlan:
    """The delegate's plan for the primary subgraph of `graph` at `setup`'s level."""
    prepared = graph.prepared
    if prepared.failure is not None:
        plan = DelegatePlan(setup, _validate_all(graph, setup, remap=False)[0])
        plan.outcome, plan.error = Outcome.CPU_PREPARE_FAILED, prepared.failure
        return plan
    fp16_path = bool(graph.fp16_constants)
    verdicts, fp16_supported = _validate_all(graph, setup, remap=fp16_path)
    plan = DelegatePlan(setup, verdicts, fp16_path=fp16_path)
    if prepared.dynamic_tensor is not None:
        t = graph.tensor(prepared.dynamic_tensor)
        plan.outcome = Outcome.REFUSED_DYNAMIC_TENSORS
        plan.error_node = prepared.dynamic_tensor
        node = graph.nodes[prepared.dynamic_node] if prepared.dynamic_node is not None else None
        made = f" (made by {node.name} #{node.index})" if node is not None else ""
        plan.error = (f"tensor #{t.index} '{t.name}' is dynamic-sized{made}: TFLite refuses a delegate that "
                      "only supports static-sized tensors, so the whole model runs on the CPU")
        return plan
    nodes_seen = {n.index: n for n in graph.nodes}  # as the partitioner and builder see them
    if fp16_path:
        supported = fp16_supported
        for k in supported:
            nodes_seen[k] = graph.remapped(graph.nodes[k])
            plan.verdicts[k].remapped = nodes_seen[k] is not graph.nodes[k]
    else:
        supported = [v.index for v in verdicts if v.supported]
    plan.supported = list(supported)
    if not supported:
        return _allocate(graph, plan)
    try:
        to_delegate, subsets = _device_filter(graph, setup, nodes_seen, supported, device, plan)
    except BuildCrash as e:
        plan.outcome, plan.error = Outcome.DELEGATE_CRASH, f"the delegate crashes building a partition: {e}"
        return plan
    except BuildError as e:
        plan.outcome, plan.error = Outcome.DELEGATE_FAILED, f"the delegate failed to build a partition: {e}"
        return plan
    if fp16_path and len(to_delegate) != len(supported):
        # "Only allow full model delegation for fp16 model": the remapping is undone, nothing delegated
        plan.error = ("the device does not take every node of this float16-weight model, and the delegate "
                      "takes such models whole or not at all")
        return plan
    plan.formed = len(subsets)
    to_delegate, plan.dropped = _limit(subsets, to_delegate, setup.max_partitions)
    if not to_delegate:
        return _allocate(graph, plan)
    plan.partitions = [s for s in _partition(graph, nodes_seen, to_delegate) if s.delegated]
    try:
        plan.built = [_build(graph, nodes_seen, s, setup) for s in plan.partitions]
    except BuildCrash as e:
        plan.partitions, plan.built = [], []
        plan.outcome, plan.error = Outcome.DELEGATE_CRASH, f"the delegate crashes building a partition: {e}"
        return plan
    except BuildError as e:
        plan.partitions, plan.built = [], []
        if setup.has_device_api:
            plan.outcome = Outcome.DELEGATE_FAILED
        else:  # below 29 Init's error is dropped; the delegate kernel's Prepare then fails
            plan.outcome = Outcome.FAILED_AFTER_DELEGATE_PREPARE
        plan.error = f"the delegate failed to build a partition: {e}"
        return plan
    plan.added_tensors = sum(b.added_tensors for b in plan.built)
    plan.conversion_tensors = sum(b.conversion_tensors for b in plan.built)
    crash = next((c for b in plan.built for c in b.null_api_calls), None)
    if crash is not None:
        plan.partitions, plan.built = [], []  # the app crashes while the delegate builds: nothing runs
        plan.outcome = Outcome.DEVICE_CRASH_NULL_API
        plan.error = (f"the delegate calls {crash}, which Android {setup.android_sdk_version} does not have "
                      "(no null check upstream): the app crashes")
        return plan
    cpu_fp16 = _cpu_nodes_reading_fp16(graph, nodes_seen, plan)
    if cpu_fp16 is not None:
        plan.partitions, plan.built = [], []
        plan.outcome = Outcome.FAILED_AFTER_DELEGATE_PREPARE
        plan.error_node = cpu_fp16
        plan.error = (f"node #{cpu_fp16} {graph.nodes[cpu_fp16].name} stays on the CPU but the delegate pointed "
                      "it at the float16 weights (FP16GraphPartitionHelper): its CPU kernel fails to prepare and "
                      "TFLite restores the CPU plan")
        return plan
    plan.outcome = Outcome.DELEGATED
    return _allocate(graph, plan)


def _allocate(graph: DelegateGraph, plan: DelegatePlan) -> DelegatePlan:
    """After the delegate, TFLite allocates the tensors it still holds (EnsureMemoryAllocations): one of
    2 GiB or more fails, the delegation is undone and nothing runs (the model cannot run on the CPU either)."""
    inside = {t for p in plan.partitions for k in p.nodes for t in graph.nodes[k].outputs if t >= 0} - \
        {t for p in plan.partitions for t in p.outputs}
    for t in graph.tensors:
        if t.constant or t.index in inside or t.data is not None:
            continue
        size = t.num_elements * _ITEMSIZE.get(t.type, 1)
        if size >= MAX_ALLOCATION:
            plan.partitions, plan.built = [], []
            plan.outcome = Outcome.FAILED_AFTER_DELEGATE_PREPARE
            plan.error_node = t.index
            plan.error = (f"TFLite cannot allocate tensor #{t.index} '{t.name}' ({format_bytes(size)}): the "
                          "delegation is undone and the model cannot run")
            break
    return plan


_ITEMSIZE = {T.FLOAT32: 4, T.FLOAT16: 2, T.INT32: 4, T.UINT8: 1, T.INT64: 8, T.BOOL: 1, T.INT16: 2, T.INT8: 1,
             T.FLOAT64: 8, T.COMPLEX64: 8, T.UINT32: 4, T.UINT16: 2, T.UINT64: 8, T.COMPLEX128: 16}


def _validate_all(graph: DelegateGraph, setup: DelegateSetup, remap: bool) -> tuple[list[NodeVerdict], list[int]]:
    """Every node's verdict; on the float16 path (`remap`) FP16GraphPartitionHelper's view: constant float16
    DEQUANTIZE nodes are set aside and their readers validated as reading the float16 constant. Also returns
    the nodes the helper hands on (the whole plan when it takes every node, else its partitions' nodes)."""
    verdicts = []
    for node in graph.nodes:
        if remap and graph.is_const_fp16_dequantize(node):
            verdicts.append(NodeVerdict(node.index, False, (), fp16_const_dequantize=True))
            continue
        seen = graph.remapped(node) if remap else node
        v: Validation = validate(graph, seen, setup)
        verdicts.append(NodeVerdict(node.index, v.supported, v.failures))
    if not remap:
        return verdicts, []
    supported = [v.index for v in verdicts if v.supported]
    dequantize = [v.index for v in verdicts if v.fp16_const_dequantize]
    if len(supported) + len(dequantize) == len(graph.nodes):
        return verdicts, list(range(len(graph.nodes)))
    subsets = [s for s in _partition(graph, {n.index: n for n in graph.nodes}, supported) if s.delegated]
    ranked = sorted(subsets, key=lambda s: -len(s.nodes))  # GetFirstNLargestPartitions (all of them)
    return verdicts, [k for s in ranked for k in s.nodes]


def _partition(graph: DelegateGraph, nodes_seen: dict[int, Node], delegated: Sequence[int]) -> list[NodeSubset]:
    plan = [PlanNode(k, nodes_seen[k].inputs, nodes_seen[k].outputs, _side_effect(graph, nodes_seen[k]))
            for k in graph.plan]
    return partition(len(graph.tensors), plan, delegated, graph.outputs)


def _side_effect(graph: DelegateGraph, node: Node) -> bool:
    """`OpMightHaveSideEffect`: control flow, or a resource tensor among its inputs or outputs."""
    if node.op in (B.IF, B.WHILE, B.CALL_ONCE):
        return True
    return any(t >= 0 and graph.tensor(t).type == T.RESOURCE for t in (*node.inputs, *node.outputs))


def _build(graph: DelegateGraph, nodes_seen: dict[int, Node], subset: NodeSubset,
           setup: DelegateSetup) -> BuiltPartition:
    return build_partition(graph, [nodes_seen[k] for k in subset.nodes], subset.inputs, subset.outputs, setup)


def _device_filter(graph: DelegateGraph, setup: DelegateSetup, nodes_seen: dict[int, Node], supported: list[int],
                   device: DeviceQuery | None, plan: DelegatePlan) -> tuple[list[int], list[NodeSubset]]:
    """From API 29 (`GetNodesSupportedByAccelerator`): preview, build each partition, keep the nodes whose
    every NNAPI operation the device takes (a partition with sparse weights: all or nothing); partition
    again when that changed anything. Below 29: the preview of the supported nodes."""
    subsets = [s for s in _partition(graph, nodes_seen, supported) if s.delegated]
    if not setup.has_device_api:
        return supported, subsets
    kept: list[int] = []
    for s in subsets:
        built = _build(graph, nodes_seen, s, setup)
        if device is None:
            kept += s.nodes
            continue
        ok = {k: True for k in s.nodes}
        for op in built.model.main.operations:
            if op.source_op is not None and not device(built.model, op):
                ok[op.source_op] = False
        sparse = any(graph.is_const_densify(nodes_seen[k]) or graph.is_nonconst_fp16_dequantize(nodes_seen[k])
                     for k in s.nodes)
        if sparse and not all(ok.values()):
            plan.device_refused += s.nodes
            continue  # sparse models: full delegation only
        kept += [k for k in s.nodes if ok[k]]
        plan.device_refused += [k for k in s.nodes if not ok[k]]
    if len(kept) != len(supported):
        subsets = [s for s in _partition(graph, nodes_seen, kept) if s.delegated]
    return kept, subsets


def _limit(subsets: list[NodeSubset], to_delegate: list[int], max_partitions: int) -> tuple[list[int], list[list[int]]]:
    """`LimitDelegatedPartitions`: more than `max_partitions` partitions keep only the largest ones. Ties
    keep execution order (the delegate's std::sort on a handful of partitions sorts by insertion)."""
    if max_partitions <= 0 or len(subsets) <= max_partitions:
        return to_delegate, []
    ranked = sorted(range(len(subsets)), key=lambda i: -len(subsets[i].nodes))
    keep = set(ranked[:max_partitions])
    nodes = [k for i in ranked[:max_partitions] for k in subsets[i].nodes]
    return nodes, [subsets[i].nodes for i in range(len(subsets)) if i not in keep]


def _cpu_nodes_reading_fp16(graph: DelegateGraph, nodes_seen: dict[int, Node], plan: DelegatePlan) -> int | None:
    """A node left on the CPU although the float16 path remapped it to read a float16 constant: TFLite's CPU
    kernel then gets a float16 tensor where it expects float32 (upstream defect with the partition cap)."""
    delegated = set(plan.delegated_nodes)
    for k, node in nodes_seen.items():
        if k not in delegated and node is not graph.nodes[k] and node.op not in (B.DEQUANTIZE, B.CAST):
            return k
    return None
