"""A model prepared for the delegate target: `nnconv.pipeline.prepare` returns this when the options' target
is `delegate`. It answers the questions `PreparedConversion` answers for nnconv's own converter (report,
partition plan, whole model, partitions, any op set) with the delegate's decisions and graphs, so every
command works on either target unchanged."""

from __future__ import annotations

import os
from dataclasses import replace
from functools import cached_property
from typing import Sequence, SupportsInt

from nnconv.delegate.build import BuiltPartition, build_partition
from nnconv.delegate.explain import explain
from nnconv.delegate.graph import DelegateGraph
from nnconv.delegate.operands import BuildError, Conversion
from nnconv.delegate.plan import DelegatePlan, DeviceQuery, Outcome, plan_delegation
from nnconv.delegate.setup import DEFAULT_MAX_PARTITIONS, SDK_30, DelegateSetup
from nnconv.delegate.validation import validate
from nnconv.errors import ConversionError, InputDataError, NnconvError
from nnconv.lowering.check_report import ConversionResult, Lowered, OpReport, Report
from nnconv.lowering.context import dtype_name
from nnconv.lowering.diagnostics import Code, Diagnostic, Verdict
from nnconv.lowering.partition import BoundaryTensor, Partition, PartitionPlan
from nnconv.nnapi.levels import API_LEVELS, ApiLevel
from nnconv.nnapi.program import INT8_SHIFT, ConvertedModel, IoTensor
from nnconv.nnapi.validate import validate_model
from nnconv.errors import ModelValidationError
from nnconv.rewrite.state import ConversionOptions
from nnconv.targets import Target
from nnconv.tflite.input_shapes import resize_inputs
from nnconv.tflite.ir import TfliteModel
from nnconv.tflite.schema_enums import TensorType
from nnconv.tflite.node_subsets import PlanNode, partition

_OUTCOME_CODES = {
    Outcome.REFUSED_DYNAMIC_TENSORS: Code.DELEGATE_DYNAMIC_TENSORS, Outcome.DELEGATE_FAILED: Code.DELEGATE_BUILD_FAILED,
    Outcome.FAILED_AFTER_DELEGATE_PREPARE: Code.DELEGATE_PREPARE_FAILED,
    Outcome.DEVICE_CRASH_NULL_API: Code.DELEGATE_NULL_API, Outcome.CPU_PREPARE_FAILED: Code.TFLITE_PREPARE_FAILED,
    Outcome.DELEGATE_CRASH: Code.DELEGATE_CRASH,
}
_HINTS = {
    Outcome.REFUSED_DYNAMIC_TENSORS: "give the inputs static shapes (--input-shape), or `nnconv rewrite` the "
                                     "shape computations into constants",
    Outcome.DELEGATE_FAILED: "TFLite restores the CPU plan: nothing runs on NNAPI",
    Outcome.FAILED_AFTER_DELEGATE_PREPARE: "TFLite restores the CPU plan: nothing runs on NNAPI",
    Outcome.DEVICE_CRASH_NULL_API: "target API 29 or later, or keep this op's weights per-tensor",
    Outcome.CPU_PREPARE_FAILED: "TFLite prepares every node on its CPU kernels before it applies the delegate, so "
                                "the model loads neither with nor without it; `--target nnconv` says whether "
                                "nnconv's own NNAPI model runs it",
    Outcome.DELEGATE_CRASH: "the app crashes while the delegate builds its model: keep the op the error names off "
                            "the delegate (a TFLite build with the upstream fix, or a model it can read)",
}
# Subgraph::kTensorsCapacityHeadroom: the tensors a delegate may add while TFLite guarantees the tensor array
# does not move (kernels' temporaries use up the rest of the reserved capacity unpredictably)
_TENSOR_HEADROOM = 16


class DelegateConversion:
    """One model at one API level as TFLite's NNAPI delegate sees it. Build it with `nnconv.prepare` (target
    `delegate`); the plan and graphs are made on first use and kept."""

    target = Target.DELEGATE

    def __init__(self, model: TfliteModel, api_level: ApiLevel, options: ConversionOptions,
                 source: str | os.PathLike | bytes | None = None, graph: DelegateGraph | None = None,
                 shared: dict | None = None, device_feature_level: int | None = None) -> None:
        if options.fold_dynamic_range_weights:
            raise NnconvError("folding dynamic-range weights (--fold-weights) is nnconv's own lowering: give "
                              "--target nnconv with it (the delegate keeps int8 weights behind DEQUANTIZE)")
        self.model = resize_inputs(model, options.input_shapes) if graph is None else model
        self.options = options
        self.api_level = ApiLevel.of(api_level)
        self.source = source if source is not None else (model.path or None)
        self.graph = graph if graph is not None else DelegateGraph(self.model)
        self._plans: dict[tuple[int, int], DelegatePlan] = {}
        self._shared = shared if shared is not None else {}  # what every level of this model shares
        self.device_feature_level = device_feature_level

    def at_level(self, api_level: SupportsInt) -> "DelegateConversion":
        """The same model at another level: TFLite's Prepare does not depend on it, so it is shared."""
        return DelegateConversion(self.model, ApiLevel.of(api_level), self.options, self.source, self.graph,
                                  self._shared)

    def for_device(self, feature_level: int | None) -> "DelegateConversion":
        """The model as the delegate handles it for a device of this NNAPI feature level (1..8): from API 29
        it targets the device's level when that is below the runtime's (`GetTargetFeatureLevel`)."""
        if feature_level is None or DelegateSetup(self.api_level, device_feature_level=feature_level) \
                .feature_level == self.setup().feature_level:
            return self
        return DelegateConversion(self.model, self.api_level, self.options, self.source, self.graph, self._shared,
                                  feature_level)

    def _beyond(self) -> set[int]:
        """The nodes the delegate refuses that nnconv's own converter lowers at this level: the report points
        at `--target nnconv` for them. (nnconv's rewrite stage keeps operator indices.)"""
        from nnconv.lowering.check_report import check_ops
        from nnconv.lowering.convert import make_state, state_at_level
        state = self._shared.get("nnconv_state")
        if state is None:
            options = replace(self.options, target=Target.NNCONV)
            state = self._shared["nnconv_state"] = make_state(self.model, self.api_level, options)
        report = check_ops(state_at_level(state, self.api_level))
        return {r.index for r in report.ops if r.supported}

    def setup(self, max_partitions: int = DEFAULT_MAX_PARTITIONS) -> DelegateSetup:
        return DelegateSetup(self.api_level, max_partitions, self.options.relax_float32_to_float16,
                             self.device_feature_level)

    def delegate_plan(self, max_partitions: int = DEFAULT_MAX_PARTITIONS,
                      device: DeviceQuery | None = None) -> DelegatePlan:
        """The delegate's decisions (kept per partition cap; a device query is asked afresh)."""
        if device is not None:
            return plan_delegation(self.graph, self.setup(max_partitions), device)
        key = (max_partitions, 0)
        if key not in self._plans:
            self._plans[key] = plan_delegation(self.graph, self.setup(max_partitions))
        return self._plans[key]

    # -- check ----------------------------------------------------------------------------------------
    @cached_property
    def report(self) -> Report:
        """Per-node verdicts as the delegate decides them, in its words and ours."""
        plan = self.delegate_plan()
        emitted = _emitted_ops(plan)
        refused = [v.index for v in plan.verdicts if not v.supported and not v.fp16_const_dequantize]
        beyond = self._beyond() if refused else set()
        ops = []
        for v in plan.verdicts:
            node = self.graph.nodes[v.index]
            if v.fp16_const_dequantize:
                # the float16 weight path exists at every level the delegate runs at
                status, diags, level = Verdict.FOLDED, [], API_LEVELS[0]
                notes = ["float16 weights: its readers get them as a float32 constant (HALF_TO_FLOAT)"]
            elif v.supported:
                status, diags, level, notes = Verdict.LOWERED, [], self._lowest(v.index, accepted=True), []
            else:
                level = self._lowest(v.index, accepted=False)
                diags = [explain(f, self.graph, node, level) for f in v.failures] or [Diagnostic(
                    Code.UNSUPPORTED_OPERATOR, "TFLite's NNAPI delegate refuses it without a reason (a DENSIFY "
                    "of weights that are not constant, or below API 30)").at(node.index, node.name)]
                status = diags[0].verdict
                notes = ["lowerable with --target nnconv (beyond the delegate)"] if v.index in beyond else []
            t = [self.graph.tensor(i) for i in node.inputs if i >= 0]
            kinds = (f"{dtype_name(x.type)} {'per-channel' if len(x.quant.scale) > 1 else 'per-tensor'}"
                     for x in t if x.affine)
            quant = ", ".join(dict.fromkeys(kinds))
            ops.append(OpReport(index=v.index, op=node.name, version=node.version, status=status,
                                nnapi_ops=emitted.get(v.index, []), diagnostics=diags, min_api_level=level,
                                input_dtypes=[dtype_name(self.graph.tensor(i).type) if i >= 0 else "-"
                                              for i in node.inputs],
                                quantization=quant, notes=notes))
        return Report(model=self.model.path, api_level=int(self.api_level), ops=ops)

    def _lowest(self, node: int, accepted: bool) -> int | None:
        """The lowest API level at which the delegate's Validate takes the node (the current one for an
        accepted node taken nowhere lower); None when no level takes it."""
        graph, n = self.graph, self.graph.nodes[node]
        seen = graph.remapped(n) if graph.fp16_constants else n
        for level in API_LEVELS:
            if accepted and level >= self.api_level:
                return int(self.api_level)
            if not accepted and level <= self.api_level:
                continue
            if validate(graph, seen, DelegateSetup(ApiLevel(level))).supported:
                return level
        return None

    # -- plan -----------------------------------------------------------------------------------------
    def plan(self, max_partitions: int = DEFAULT_MAX_PARTITIONS, lower: bool = True,
             device: DeviceQuery | None = None) -> PartitionPlan:
        """The delegate's partitions in the report's terms, with one converted model per partition; with
        `device`, the plan when the delegate asks that device which operations it takes (API 29+)."""
        if device is not None:
            return self._partition_plan(self.delegate_plan(max_partitions, device), max_partitions)
        cache = self.__dict__.setdefault("_partition_plans", {})
        if max_partitions not in cache:
            cache[max_partitions] = self._partition_plan(self.delegate_plan(max_partitions), max_partitions)
        return cache[max_partitions]

    def _partition_plan(self, plan: DelegatePlan, max_partitions: int) -> PartitionPlan:
        report = self.report
        folded = [v.index for v in plan.verdicts if v.fp16_const_dequantize
                  and any(v.index in p.nodes for p in plan.partitions)]
        result = PartitionPlan(model=report.model, api_level=int(self.api_level), max_partitions=max_partitions,
                               ops_total=len(report.ops), folded=folded, partitions=[], dropped=plan.dropped,
                               partitions_formed=plan.formed, target=Target.DELEGATE.value,
                               outcome=plan.outcome.value, diagnostics=self._model_diagnostics(plan))
        if plan.outcome is not Outcome.DELEGATED:
            result.outcome_reason = _reason(plan)
        where = {k: i for i, p in enumerate(plan.partitions) for k in p.nodes}
        for i, (subset, built) in enumerate(zip(plan.partitions, plan.built)):
            ops = sorted(k for k in subset.nodes if k not in folded)
            part = Partition(i, ops, [self._boundary(t, where, True) for t in built.input_tensors],
                             [self._boundary(t, where, False) for t in built.output_tensors],
                             nnapi_ops=len(built.model.main.operations))
            problem = runtime_problem(built.model, self.api_level.feature_level)
            if problem:
                # Android validates operands and operations as the delegate adds them (its build then fails and
                # TFLite runs the model on the CPU); what only the reference CPU checks fails the invocation
                part.error = (f"Android's NNAPI runtime refuses the delegate's graph: {problem} (on a phone the "
                              "delegate's build, or its invocation on NNAPI's CPU implementation, fails)")
                part.error_exit_code = ConversionError.exit_code
                result.diagnostics.append(Diagnostic(Code.DELEGATE_GRAPH_REFUSED, f"partition {i}: {part.error}"))
            result.partitions.append(part)
            if not part.error:
                result.converted.append(self._converted(built))
        return result

    def _model_diagnostics(self, plan: DelegatePlan) -> list[Diagnostic]:
        out = []
        code = _OUTCOME_CODES.get(plan.outcome)
        if code is not None:
            out.append(Diagnostic(code, _reason(plan), hint=_HINTS.get(plan.outcome, "")))
        for node, stock_error in self.graph.prepared.unresolved_custom_ops:
            name = self.graph.nodes[node].name if node < len(self.graph.nodes) else "custom op"
            out.append(Diagnostic(Code.APP_CUSTOM_OP, (
                f"stock TFLite cannot prepare {name} ({stock_error.rstrip('.')}): this plan assumes the app "
                "registers it, as it must to run the model, and the delegate leaves it to the CPU"),
                hint="verify has no TFLite result to compare with unless TFLite knows the op").at(node, name))
        headroom = _TENSOR_HEADROOM
        if plan.conversion_tensors and plan.added_tensors > headroom:
            out.append(Diagnostic(Code.DELEGATE_TENSOR_REALLOC, (
                f"the delegate adds {plan.added_tensors} tensors while building (converted float16 / int8 "
                f"constants, generated biases) where TFLite guarantees room for {headroom}: the tensor array can "
                "move while the delegate still reads a constant through an old pointer (an upstream use-after-free: "
                "crashes or corrupt weights on a phone)"), hint="fewer float16 or int8-converted constants per model, "
                "or a TFLite build with the fix"))
        return out

    def _boundary(self, t: int, where: dict[int, int], inputs: bool) -> BoundaryTensor:
        g = self.graph
        tensor = g.tensor(t)
        peers: list[str] = []
        if inputs:
            if t in g.inputs:
                peers.append("model input")
            producer = g.producers.get(t)
            if producer is not None:
                p = where.get(producer)
                peers.append(f"partition {p}" if p is not None else f"CPU op #{producer} {g.nodes[producer].name}")
        else:
            if t in g.outputs:
                peers.append("model output")
            for n in g.nodes:
                if t in n.inputs and n.index not in where:
                    peers.append(f"CPU op #{n.index} {n.name}")
        item = tensor.num_elements * (NUMPY_ITEMSIZE.get(dtype_name(tensor.type), 0))
        return BoundaryTensor(t, tensor.name or f"tensor{t}", dtype_name(tensor.type), tuple(tensor.dims), item,
                              tuple(dict.fromkeys(peers)))

    def _converted(self, built: BuiltPartition) -> ConvertedModel:
        ins = [self._io(t, built.conversions.get(t)) for t in built.input_tensors]
        outs = [self._io(t, built.conversions.get(t)) for t in built.output_tensors]
        outs += [self._io(t, None, state=True) for t in built.state_tensors]
        return ConvertedModel(model=built.model, inputs=ins, outputs=outs, api_level=int(self.api_level),
                              tflite_ops=sorted(built.nodes), subgraph=0, tensor_operands=dict(built.tensor_operands))

    def _io(self, t: int, conversion: Conversion | None, state: bool = False) -> IoTensor:
        tensor = self.graph.tensor(t)
        src = self.model.subgraphs[0].tensors[t]
        name = src.name or f"tensor{t}"
        shifted = conversion is Conversion.INT8_TO_UINT8 or (
            # Invoke feeds an int8 tensor the delegate maps to an INT32 scalar (a computed PAD_V2 value) as
            # value + 128 below feature level 4, where the tensor it pads is carried as uint8
            conversion is Conversion.TO_INT32 and tensor.type == TensorType.INT8
            and self.setup().feature_level < SDK_30)
        return IoTensor(name=f"{name} (new state)" if state else name, tflite_tensor=t,
                        dtype=src.dtype.name if src.dtype is not None else dtype_name(tensor.type),
                        shape=tuple(tensor.dims), offset=INT8_SHIFT if shifted else 0,
                        scale=tensor.scale, zero_point=tensor.zero_point, variable=src.is_variable)

    def tflite_refusal(self) -> str:
        """Why TFLite itself cannot prepare the model ("" when it can): nothing to delegate or compare, bad
        input for every command (exit 2)."""
        plan = self.delegate_plan()
        if plan.outcome is not Outcome.CPU_PREPARE_FAILED:
            return ""
        # TFLite's error reporter joins its messages with newlines; an exit-2 message is one line.
        return " ".join(line.strip() for line in plan.error.splitlines() if line.strip())

    def partial(self, max_partitions: int = DEFAULT_MAX_PARTITIONS) -> PartitionPlan:
        """Every partition the delegate forms, converted; ConversionError when none runs on NNAPI."""
        if self.tflite_refusal():
            raise InputDataError(f"TFLite cannot prepare this model: {self.tflite_refusal()}")
        found = self.plan(max_partitions)
        failed = next((p for p in found.partitions if p.error), None)
        if failed is not None:
            raise ConversionError(f"partition {failed.index}: {failed.error}")
        if not found.partitions:
            raise ConversionError(found.outcome_reason or f"TFLite's NNAPI delegate takes none of the "
                                  f"{len(self.report.ops)} ops at API {self.api_level}", self.report.errors)
        return found

    # -- whole ----------------------------------------------------------------------------------------
    @cached_property
    def whole_refusal(self) -> str:
        """Why the delegate does not take the model whole even though it refuses no node ("" when it does)."""
        plan = self.delegate_plan()
        if not self.report.ok:
            return ""
        if plan.outcome is not Outcome.DELEGATED:
            return _reason(plan)
        if len(plan.partitions) != 1:
            return f"the delegate forms {len(plan.partitions)} partitions"
        return ""

    def whole(self) -> ConversionResult:
        """The delegate's single NNAPI model when it takes the model whole; ConversionError otherwise."""
        report = self.report
        if self.tflite_refusal():
            raise InputDataError(f"TFLite cannot prepare this model: {self.tflite_refusal()}")
        if not report.ok:
            raise report.refusal(f"TFLite's NNAPI delegate refuses {report.ops_refused} of {len(report.ops)} ops "
                                 f"at API {self.api_level}")
        if self.whole_refusal:
            raise ConversionError(self.whole_refusal, [d for d in self.plan().diagnostics if d.is_error])
        found = self.partial()
        return ConversionResult(found.converted[0], report)

    def lowered(self, allow_partial: bool = True, prefer_whole: bool = True,
                max_partitions: int = DEFAULT_MAX_PARTITIONS) -> Lowered:
        """What the delegate builds: its single model when it takes the model whole, else its partitions
        (the ops it refuses run on TFLite's CPU kernels, as on a phone), whatever `allow_partial` says: the
        delegate always delegates what it takes. ConversionError when it builds nothing."""
        if not self.report.ops:
            return Lowered(whole=self.whole())
        try:
            return Lowered(whole=self.whole())
        except ConversionError as e:
            return Lowered(plan=self.partial(max_partitions), refusal=str(e))

    def lower_ops(self, op_indices: Sequence[int] | None = None, subgraph: int = 0) -> ConvertedModel:
        """The delegate's NNAPI model of any set of nodes (a node subset as TFLite would hand it over)."""
        if subgraph != 0:
            raise ConversionError("the delegate builds models of the primary subgraph only")
        g = self.graph
        chosen = sorted(range(len(g.nodes)) if op_indices is None else op_indices)
        seen = {n.index: (g.remapped(n) if g.fp16_constants else n) for n in g.nodes}
        plan = [PlanNode(k, seen[k].inputs, seen[k].outputs) for k in g.plan]
        subsets = [s for s in partition(len(g.tensors), plan, chosen, g.outputs) if s.delegated]
        if len(subsets) != 1:
            raise ConversionError(f"ops {chosen} do not form one partition of the delegate")
        s = subsets[0]
        try:
            built = build_partition(g, [seen[k] for k in s.nodes], s.inputs, s.outputs, self.setup())
        except BuildError as e:
            raise ConversionError(f"the delegate fails to build ops {chosen}: {e}") from None
        return self._converted(built)

    def io_specs(self, tensors: Sequence[int], subgraph: int = 0) -> list[IoTensor]:
        return [self._io(t, None) for t in tensors]


NUMPY_ITEMSIZE = {"float32": 4, "float16": 2, "int32": 4, "uint8": 1, "int64": 8, "bool": 1, "int16": 2,
                  "int8": 1, "float64": 8}


def runtime_problem(model, feature_level: int) -> str:
    """What Android's runtime refuses in a graph the delegate builds ("" when it takes it): the delegate
    never checks its operations against the spec, and the recordings' fake runtime accepted everything, but a
    phone validates each operation as it is added."""
    try:
        validate_model(model, feature_level)
    except ModelValidationError as e:
        refusals = getattr(e, "refusals", None)
        if refusals:
            r = refusals[0]
            where = f" (TFLite op #{r.source_op})" if r.source_op is not None else ""
            return f"operation {r.index} {r.type.name}{where}: {r.reason}"
        return e.problems[0] if e.problems else str(e)
    return ""


def _reason(plan: DelegatePlan) -> str:
    if plan.outcome is Outcome.NOT_DELEGATED:
        return plan.error or "TFLite's NNAPI delegate takes no op: the whole model runs on TFLite's CPU kernels"
    return plan.error


def _emitted_ops(plan: DelegatePlan) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for built in plan.built:
        for op in built.model.main.operations:
            if op.source_op is not None:
                out.setdefault(op.source_op, []).append(op.type.name)
    return out
