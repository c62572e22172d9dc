"""A prepared conversion: one model at one API level with one set of options, read, rewritten, checked,
partitioned and lowered once, for every command to take.

The data flows one way:

    read (tflite/reader) -> rewrite (rewrite/folding) -> check (lowering rules) -> plan (lowering/partition)
        -> lower + validate (lowering/convert, nnapi/validate) -> serialize | execute -> compare (parity)

`prepare(model, api_level, options)` does the first two stages at once (they are cheap and everything
needs them) and every later one on first use, keeping the result: the per-op verdicts (`report`), the
partition plan (`plan`), the whole NNAPI model (`whole`) or its delegated partitions (`partial`).
`convert`, `check`, `verify` and the Python API all start from it, so none of them reads or converts a
model twice, and partition-wise `verify` lowers with the user's own options.
"""

from __future__ import annotations

import os
from functools import cached_property
from typing import Sequence, SupportsInt

from nnconv.delegate.conversion import DelegateConversion
from nnconv.errors import ConversionError
from nnconv.lowering.check_report import ConversionResult, Lowered, Report, check_ops
from nnconv.lowering.context import ConversionState
from nnconv.lowering.convert import ConversionOptions, io_spec, lower_ops, make_state, state_at_level, target_level
from nnconv.lowering.partition import DEFAULT_MAX_PARTITIONS, PartitionPlan, build_plan
from nnconv.nnapi.levels import DEFAULT_API_LEVEL, ApiLevel
from nnconv.nnapi.program import ConvertedModel, IoTensor
from nnconv.targets import Target
from nnconv.tflite.input_shapes import resize_inputs
from nnconv.tflite.ir import TfliteModel
from nnconv.tflite.reader import read_model

ModelSource = TfliteModel | str | os.PathLike | bytes


class PreparedConversion:
    """One model at one API level with one set of options (see the module docstring). Build it with
    `prepare`; every stage after the rewrite runs on first use and is kept."""

    target = Target.NNCONV

    def __init__(self, model: TfliteModel, api_level: ApiLevel, options: ConversionOptions,
                 source: str | os.PathLike | bytes | None = None, rewritten: ConversionState | None = None) -> None:
        # inputs at the shapes the user chose (`--input-shape`), as TFLite's strict input resize allows them
        self.model = resize_inputs(model, options.input_shapes) if rewritten is None else model
        self.options = options
        # The rewrite stage (int64 index narrowing, constant folding) and the level's validation; from
        # `at_level`, the rewrite already made for this model and options at another level.
        self.state: ConversionState = (make_state(self.model, api_level, options) if rewritten is None
                                       else state_at_level(rewritten, api_level))
        self.api_level = self.state.api_level
        # What TFLite's interpreter loads for parity: the file or bytes the model was read from.
        self.source = source if source is not None else (model.path or None)
        self._plans: dict[tuple[int, bool], PartitionPlan] = {}
        self._whole: ConversionResult | None = None

    def at_level(self, api_level: SupportsInt) -> "PreparedConversion":
        """The same model and options at another API level (`check --api-level all`): the read and rewritten
        model and every op check already made at any level are shared, not redone."""
        return PreparedConversion(self.model, target_level(api_level), self.options, self.source, self.state)

    # -- check ----------------------------------------------------------------------------------------
    @cached_property
    def report(self) -> Report:
        """Per-op verdicts of the main subgraph: every rule's check, all problems at once."""
        return check_ops(self.state)

    # -- plan -----------------------------------------------------------------------------------------
    def plan(self, max_partitions: int = DEFAULT_MAX_PARTITIONS, lower: bool = True) -> PartitionPlan:
        """The delegate's partition plan; with `lower`, each partition is lowered (`plan.converted`), a
        partition that fails to lower recording its error. Kept per (max_partitions, lower)."""
        key = (max_partitions, lower)
        found = self._plans.get(key)
        if found is None:
            found = self._plans[key] = build_plan(self.state, self.report, max_partitions, lower=lower)
        return found

    def partial(self, max_partitions: int = DEFAULT_MAX_PARTITIONS) -> PartitionPlan:
        """Every delegated partition lowered (a lowering failure raises); ConversionError when no op at all
        can be lowered. What `convert --allow-partial` writes."""
        found = self.plan(max_partitions)
        if any(p.error for p in found.partitions):
            # A rule bug: lower strictly so the original error surfaces (exit 4 unless it is ours to name).
            build_plan(self.state, self.report, max_partitions, lower=True, strict=True)
        if not found.partitions:
            raise ConversionError(f"none of the {len(self.report.ops)} ops can be lowered at API "
                                  f"{self.api_level}", self.report.errors)
        return found

    # -- lower ----------------------------------------------------------------------------------------
    @cached_property
    def whole_refusal(self) -> str:
        """Why the model cannot become one NNAPI model even when every op lowers ("" when it can): an
        output of the main graph that no operation computes (a model input passed through, or a
        constant). NNAPI model outputs must be written by an operation; `check` exits as `convert` then."""
        sg = self.state.model.subgraphs[0]
        for t in sg.outputs:
            tensor = sg.tensors[t]
            if t in sg.inputs or tensor.data is not None or (sg.index, t) in self.state.folded:
                return (f"output tensor '{tensor.name}' is not computed by any lowered operation (constant or "
                        "pass-through outputs are not supported)")
        return ""

    def whole(self) -> ConversionResult:
        """The whole model as one validated NNAPI model; ConversionError (with `.report`) when any op is
        refused. Each op's `nnapi_ops` in the report becomes the operations emitted for it."""
        if self._whole is not None:
            return self._whole
        report = self.report
        if not report.ok:
            raise report.refusal(f"{report.ops_refused} of {len(report.ops)} ops cannot be lowered at API "
                                 f"{self.api_level}")
        if self.whole_refusal:
            raise ConversionError(self.whole_refusal)
        converted = lower_ops(self.state)
        by_op: dict[int, list[str]] = {}
        for op in converted.model.main.operations:
            if op.source_op is not None:
                by_op.setdefault(op.source_op, []).append(op.type.name)
        for r in report.ops:
            r.nnapi_ops = by_op.get(r.index, [])
            r.lowering_note = converted.notes.get(r.index, "")
        self._whole = ConversionResult(converted, report)
        return self._whole

    def lowered(self, allow_partial: bool, prefer_whole: bool = False,
                max_partitions: int = DEFAULT_MAX_PARTITIONS) -> Lowered:
        """The one choice between the whole model and its partitions. Without `allow_partial`: the whole
        model or ConversionError. With it: the partitions (`convert --allow-partial` always writes a plan),
        or, with `prefer_whole` (verify), the whole model when it converts and the partitions otherwise."""
        if not allow_partial or not self.report.ops:
            # (a model without operators has nothing to refuse or partition: it lowers whole, as `check`
            # reports it, with or without --allow-partial)
            return Lowered(whole=self.whole())
        if prefer_whole:
            try:
                return Lowered(whole=self.whole())
            except ConversionError as e:
                return Lowered(plan=self.partial(max_partitions), refusal=str(e))
        return Lowered(plan=self.partial(max_partitions))

    def lower_ops(self, op_indices: Sequence[int] | None = None, subgraph: int = 0) -> ConvertedModel:
        """Any set of ops of one subgraph as its own validated NNAPI model (one partition; parity's
        op-by-op diagnosis). Not kept: each call lowers afresh."""
        return lower_ops(self.state, op_indices, subgraph)

    def io_specs(self, tensors: Sequence[int], subgraph: int = 0) -> list[IoTensor]:
        """How the given TFLite tensors travel into or out of an NNAPI model (dtype, int8 offset)."""
        sg = self.model.subgraphs[subgraph]
        return [io_spec(self.state, sg, t) for t in tensors]


def prepare(model: ModelSource, api_level: SupportsInt = DEFAULT_API_LEVEL,
            options: ConversionOptions | None = None) -> "PreparedConversion | DelegateConversion":
    """Reads `model` (a path, bytes, or an already read TfliteModel) for `api_level` and the target of
    `options` (default: TFLite's NNAPI delegate, what phones run): a `DelegateConversion`, or for
    `Target.NNCONV` a `PreparedConversion` (read and rewritten). Every later stage runs on demand.
    `api_level`: an `ApiLevel` (what the command line parses), which every stage takes as it is, or a number."""
    options = options or ConversionOptions()
    level = target_level(api_level)
    if isinstance(model, TfliteModel):
        read, source = model, None
    else:
        source = bytes(model) if isinstance(model, (bytes, bytearray, memoryview)) else model
        read = read_model(source)
    if options.target is Target.DELEGATE:
        return DelegateConversion(read, level, options, source=source)
    return PreparedConversion(read, level, options, source=source)


# -- the Python API ---------------------------------------------------------------------------------
def convert(model: ModelSource, api_level: SupportsInt = DEFAULT_API_LEVEL,
            options: ConversionOptions | None = None) -> ConversionResult:
    """Converts a whole TFLite model; raises ConversionError (with `.report`) when any op is refused."""
    return prepare(model, api_level, options).whole()


def check_model(model: ModelSource, api_level: SupportsInt = DEFAULT_API_LEVEL,
                options: ConversionOptions | None = None) -> Report:
    """Per-op verdicts of the main subgraph; refused ops carry their lowest accepting API level."""
    return prepare(model, api_level, options).report


def analyse(model: ModelSource, api_level: SupportsInt, options: ConversionOptions | None = None,
            max_partitions: int = DEFAULT_MAX_PARTITIONS, lower: bool = True) -> tuple[Report, PartitionPlan]:
    """The report and the (lowered) partition plan of the main subgraph."""
    prepared = prepare(model, api_level, options)
    return prepared.report, prepared.plan(max_partitions, lower=lower)


def convert_partial(model: ModelSource, api_level: SupportsInt, options: ConversionOptions | None = None,
                    max_partitions: int = DEFAULT_MAX_PARTITIONS) -> PartitionPlan:
    """Lowers every delegated partition; raises ConversionError when no op at all can be lowered."""
    return prepare(model, api_level, options).partial(max_partitions)
