"""The per-op report of a model at one API level: every operator's verdict, the NNAPI operations it lowers
to, its diagnostics and the lowest API level that accepts it (`check_ops`). The checks themselves and the
lowering are in `convert.py`; this module only asks them and collects the answers."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from nnconv.errors import ConversionError
from nnconv.lowering.context import CheckContext, ConversionState, dtype_name
from nnconv.lowering.convert import check_op, checked, constant_producers, is_folded, rule_for
from nnconv.lowering.diagnostics import Diagnostic, Verdict
from nnconv.nnapi.levels import API_LEVELS, ApiLevel, rule_level
from nnconv.nnapi.program import ConvertedModel
from nnconv.tflite.ir import Operator, Subgraph

if TYPE_CHECKING:
    from nnconv.lowering.partition import PartitionPlan


@dataclass
class OpReport:
    """What the converter decided for one TFLite operator."""

    index: int
    op: str
    version: int
    status: Verdict
    nnapi_ops: list[str] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    min_api_level: int | None = None
    input_dtypes: list[str] = field(default_factory=list)
    quantization: str = ""
    subgraph: int = 0
    lowering_note: str = ""  # what a many-operation lowering computes (`LowerContext.explain`)
    notes: list[str] = field(default_factory=list)  # what rewrites changed in the op; alternative lowerings

    @property
    def supported(self) -> bool:
        return self.status in (Verdict.LOWERED, Verdict.FOLDED, Verdict.DRIVER_WARNING)

    @property
    def reason(self) -> str:
        errs = [d for d in self.diagnostics if d.is_error] or self.diagnostics
        return "; ".join(d.message for d in errs)

    @property
    def hint(self) -> str:
        return next((d.hint for d in self.diagnostics if d.hint), "")


@dataclass
class Report:
    """Per-op verdicts of one model at one API level."""

    model: str
    api_level: int
    ops: list[OpReport]

    @property
    def diagnostics(self) -> list[Diagnostic]:
        return [d for r in self.ops for d in r.diagnostics]

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.is_error]

    @property
    def ok(self) -> bool:
        return all(r.supported for r in self.ops)

    @property
    def ops_lowered(self) -> int:
        return sum(1 for r in self.ops if r.supported)

    @property
    def ops_refused(self) -> int:
        return len(self.ops) - self.ops_lowered

    def refusal(self, message: str) -> ConversionError:
        """The error of a whole conversion this report refuses: its error diagnostics, and the report itself
        as `.report` (the per-op table the CLI and the Python API show)."""
        err = ConversionError(message, self.errors)
        err.report = self  # type: ignore[attr-defined]
        return err


@dataclass
class ConversionResult:
    converted: ConvertedModel
    report: Report

    def __iter__(self):  # allows `model, report = nnconv.convert(...)`
        return iter((self.converted, self.report))



@dataclass
class Lowered:
    """What a conversion produced: the whole model, or the delegated partitions with their plan.

    `refusal` says why the whole model was not converted when the partitions were taken instead."""

    whole: ConversionResult | None = None
    plan: "PartitionPlan | None" = None
    refusal: str = ""

    @property
    def models(self) -> list[ConvertedModel]:
        if self.whole is not None:
            return [self.whole.converted]
        return list(self.plan.converted) if self.plan is not None else []



def lowest_accepting_level(state: ConversionState, sg: Subgraph, op: Operator) -> int | None:
    for level in API_LEVELS:
        if level <= state.api_level:
            continue
        probe = replace(state, api_level=ApiLevel(level))
        if not any(d.is_error for d in check_op(probe, sg, op)):
            return level
    return None


def _quant_summary(c: CheckContext) -> str:
    schemes = []
    for t in c.inputs:
        if t is None or not t.quantization.is_quantized:
            continue
        kind = "per-channel" if t.quantization.is_per_channel else "per-tensor"
        schemes.append(f"{dtype_name(t.type)} {kind}")
    return ", ".join(dict.fromkeys(schemes))


def check_ops(state: ConversionState, subgraph: int = 0) -> Report:
    """Runs every check of one subgraph; refused ops get their lowest accepting API level."""
    m = state.model
    sg = m.subgraphs[subgraph]  # as the rewrite stage left it: same operators at the same indices
    original = (state.source or m).subgraphs[subgraph].operators
    rewrites = _rewrites_by_op(state, sg)
    # DEQUANTIZE of constant weights (float16, int8) and DENSIFY of a sparse constant become a constant at
    # conversion and emit no NNAPI operation, as the ops the rewrite stage folds: reported `folded` too.
    constants = constant_producers(state, sg)
    ops = []
    for op in sg.operators:
        c = checked(state, sg, op)
        diags = c.diagnostics
        errors = [d for d in diags if d.is_error]
        if is_folded(state, sg, op) or (not errors and op.outputs and constants.get(op.outputs[0]) is op):
            status = Verdict.FOLDED
        elif errors:
            status = errors[0].verdict
        elif diags:
            status = Verdict.DRIVER_WARNING
        else:
            status = Verdict.LOWERED
        rule = rule_for(op)
        source = original[op.index] if op.index < len(original) else op
        rep = OpReport(index=op.index, op=source.name, version=source.version, status=status, diagnostics=list(diags),
                       input_dtypes=[dtype_name(t.type) if t is not None else "-" for t in c.inputs],
                       quantization=_quant_summary(c), subgraph=sg.index,
                       notes=rewrites.get(op.index, []) + (c.notes if not errors else []))
        if errors:
            rep.min_api_level = lowest_accepting_level(state, sg, op)
            if rule is not None:
                level = rule_level(rep.min_api_level or state.api_level)
                rep.nnapi_ops = [o.name for o in rule.describe_lowering(level)]
        else:
            rep.min_api_level = _lowest_passing(state, sg, op)
        ops.append(rep)
    return Report(model=m.path, api_level=state.api_level, ops=ops)


def _rewrites_by_op(state: ConversionState, sg: Subgraph) -> dict[int, list[str]]:
    """Per op of `sg`, what the graph rewrites changed in it and, for WHILE / IF, in the subgraphs it runs."""
    by_sg: dict[int, list[tuple[int, str]]] = {}
    for rec in state.rewrites:
        by_sg.setdefault(rec.subgraph, []).append((rec.op_index, rec.describe()))
    found: dict[int, list[str]] = {}
    for k, text in by_sg.get(sg.index, []):
        found.setdefault(k, []).append(text)
    for op in sg.operators:
        o = op.options
        roles = [(f.name.replace("_subgraph_index", ""), getattr(o, f.name)) for f in dataclasses.fields(o)
                 if f.name.endswith("_subgraph_index")] if dataclasses.is_dataclass(o) else []
        for role, index in roles:
            found.setdefault(op.index, []).extend(f"{role} subgraph {index}, op #{k}: {text}"
                                                  for k, text in by_sg.get(index, []))
    return {k: v for k, v in found.items() if v}


def _lowest_passing(state: ConversionState, sg: Subgraph, op: Operator) -> int:
    """The lowest level at which an accepted op is also accepted (for the report)."""
    for level in API_LEVELS:
        if level >= state.api_level:
            return state.api_level
        if not any(d.is_error for d in check_op(replace(state, api_level=ApiLevel(level)), sg, op)):
            return level
    return state.api_level


