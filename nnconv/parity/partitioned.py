"""`nnconv verify`: convert, run both engines, compare; partition by partition when the model is partial.

When the whole model lowers, its outputs are compared with TFLite's. When some ops are refused, the model is
verified the way it would run under TFLite's NNAPI delegate: each delegated partition (see nnconv/lowering/partition.py)
is fed the TFLite interpreter's OWN intermediate tensors at its boundary (the interpreter keeps every tensor
with `preserve_all_tensors`), and each partition output is compared with the interpreter's value of the same
tensor. Errors therefore never accumulate across partitions, and a failing row names the partition at fault.
`.nnapi` files holding several partitions are verified the same way against their source `.tflite`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from nnconv.errors import InputDataError, NnconvError
from nnconv.fmt import plural
from nnconv.lowering.convert import ConversionOptions
from nnconv.nnapi.program import ConvertedModel, IoTensor, bind_inputs
from nnconv.parity.diagnose import diagnose_failures
from nnconv.parity.executors import Executors
from nnconv.parity.kernel_spread import settle_with_kernel_spread
from nnconv.parity.settle import compare_with_reference_kernels
from nnconv.parity.tflite_runner import BUILTIN_KERNELS, REFERENCE_KERNELS, TfliteRunner
from nnconv.parity.tolerances import ToleranceOverrides, tolerance_for
from nnconv.parity.verify import (
    OutputParity,
    ParityReport,
    TfliteReference,
    attach_operands,
    compare,
    random_inputs,
    run_parity,
)
from nnconv.pipeline import PreparedConversion, prepare
from nnconv.targets import Target

NNAPI_FILE_MAGIC = b"NNAP"  # flatbuffer file identifier, bytes 4..8 of a .nnapi file


@dataclass
class PartitionParity:
    """The comparison of one partition's outputs, fed with TFLite's own boundary tensors."""

    index: int
    ops: list[int]
    outputs: list[OutputParity]
    # When the partition fails: each of its ops run alone on TFLite's own inputs; the ones out of tolerance.
    ops_at_fault: list[dict] = field(default_factory=list)
    diagnosis: str = ""

    @property
    def passed(self) -> bool:
        return all(o.passed for o in self.outputs)

    def to_json(self) -> dict:
        return {"index": self.index, "ops": self.ops, "passed": self.passed,
                "outputs": [o.to_json() for o in self.outputs], "ops_at_fault": self.ops_at_fault,
                "diagnosis": self.diagnosis}


@dataclass
class PartitionedParityReport(ParityReport):
    """A ParityReport whose `outputs` are every partition's outputs (named "pN/tensor"), plus the rows of
    each partition and a note saying why the model was verified in this mode."""

    partitions: list[PartitionParity] = field(default_factory=list)
    note: str = ""
    mode: str = "partitioned"

    def to_json(self) -> dict:
        data = super().to_json()
        data.update({"mode": self.mode, "note": self.note, "partitions": [p.to_json() for p in self.partitions]})
        return data


def verify_model(path: str | os.PathLike, api_level: int, options: ConversionOptions | None = None,
                 inputs: Mapping[str, np.ndarray] | None = None, seed: int = 0,
                 kernels: str = BUILTIN_KERNELS, overrides: ToleranceOverrides | None = None,
                 executor_options: Mapping[str, Any] | None = None, allow_partial: bool = True) -> ParityReport:
    """Verifies a .tflite model (whole, or partition by partition when full conversion is refused and
    `allow_partial`) or a .nnapi file against its source model. `overrides`: see `run_parity`;
    `executor_options`: what each of the verify's executors is built with (parity/executors.py)."""
    executors = Executors(executor_options)
    if is_nnapi_file(path):
        return verify_nnapi_file(path, inputs=inputs, seed=seed, kernels=kernels, overrides=overrides,
                                 executors=executors)
    return verify_prepared(prepare(path, api_level, options), inputs=inputs, seed=seed, kernels=kernels,
                           overrides=overrides, executors=executors, allow_partial=allow_partial)


def verify_prepared(prepared: PreparedConversion, inputs: Mapping[str, np.ndarray] | None = None, seed: int = 0,
                    kernels: str = BUILTIN_KERNELS, overrides: ToleranceOverrides | None = None,
                    executors: Executors | None = None, allow_partial: bool = True,
                    reference: TfliteReference | None = None) -> ParityReport:
    """Verifies a prepared conversion: the whole model when it converts, else (`allow_partial`) each
    delegated partition on TFLite's own boundary tensors. `executors`: our side of the verify (one executor
    per model and kernel set, parity/executors.py), which every comparison below shares."""
    executors = executors or Executors()
    extra = dict(overrides=overrides, executors=executors)
    lowered = prepared.lowered(allow_partial=allow_partial, prefer_whole=True)
    reference = reference or TfliteReference.of(prepared.model, prepared.source)
    if lowered.whole is None:
        plan = lowered.plan
        if prepared.target is Target.DELEGATE:
            note = (f"TFLite's NNAPI delegate does not take the model whole ({lowered.refusal}): its "
                    f"{plural(len(plan.converted), 'partition')} verified one by one on TFLite's own boundary "
                    f"tensors: {plan.summary_line()}")
        else:
            note = (f"full conversion refused ({lowered.refusal}); verified the "
                    f"{plural(len(plan.converted), 'delegated partition')} one by one on TFLite's own boundary "
                    f"tensors: {plan.summary_line()}")
        return verify_partitions(prepared, plan.converted, inputs=inputs, seed=seed, kernels=kernels, note=note,
                                 reference=reference, **extra)
    converted = lowered.whole.converted
    feed = _named(converted, inputs) if inputs is not None else random_inputs(converted.inputs, seed)
    report = run_parity(reference, converted, feed, kernels=kernels, **extra)
    if kernels != REFERENCE_KERNELS and any(not o.passed and o.max_lsb is not None for o in report.outputs):
        compare_with_reference_kernels(report, reference, converted, feed, **extra)
    settle_with_kernel_spread(report, reference, converted, feed, **extra)
    diagnose_failures(report, reference, converted, feed, kernels, executors)
    return report


def verify_partitions(prepared: PreparedConversion, partitions: Sequence[ConvertedModel],
                      inputs: Mapping[str, np.ndarray] | None = None, seed: int = 0,
                      kernels: str = BUILTIN_KERNELS, note: str = "", overrides: ToleranceOverrides | None = None,
                      executors: Executors | None = None,
                      reference: TfliteReference | None = None) -> PartitionedParityReport:
    """Runs TFLite once on the model inputs keeping every tensor, then each partition on the interpreter's
    tensors at its boundary, comparing each partition output with the interpreter's value."""
    executors = executors or Executors()
    reference = reference or TfliteReference.of(prepared.model, prepared.source)
    subgraph = partitions[0].subgraph if partitions else 0
    model_inputs = prepared.io_specs(prepared.model.subgraphs[subgraph].inputs, subgraph)
    feed = bind_model_inputs(model_inputs, inputs) if inputs is not None else random_inputs(model_inputs, seed)
    # Dynamic-range models run on their float twin, as in a whole-model verify (parity/twin.py); without
    # one, on the model itself with the looser hybrid tolerance.
    twin = reference.twin
    hybrid = twin is None and reference.hybrid
    source = twin if twin is not None else reference.source
    runner = TfliteRunner(source, kernels=kernels, preserve_all_tensors=True)
    runner.run({spec.tflite_tensor: np.asarray(feed[spec.name]) for spec in model_inputs})
    rows: list[PartitionParity] = []
    for k, cm in enumerate(partitions):
        boundary, reshaped, unfit = _boundary_values(cm, runner)
        if unfit:  # converted for a shape TFLite does not produce: nothing to run it on
            rows.append(_unfit_partition(k, cm, unfit))
            continue
        ours = executors.run(cm, boundary)
        outs = []
        for spec in cm.model_outputs:
            expected, arranged = _as_converted(runner.tensor(spec.tflite_tensor), spec, "partition output")
            o = compare(f"p{k}/{spec.name}", ours[spec.name], expected, hybrid, overrides,
                        reference.dequantized(cm.subgraph, spec.tflite_tensor))
            o.detail = "; ".join(filter(None, [o.detail, *reshaped, arranged]))
            outs.append(o)
        attach_operands(outs, cm)
        row = PartitionParity(k, list(cm.tflite_ops), outs)
        rows.append(row)
    failing_quant = [(cm, row) for cm, row in zip(partitions, rows)
                     if any(not o.passed and o.max_lsb is not None for o in row.outputs)]
    if failing_quant and kernels != REFERENCE_KERNELS:
        _recheck_with_reference_kernels(failing_quant, source, model_inputs, feed, hybrid, overrides, executors,
                                        kernels)
    for cm, row in zip(partitions, rows):
        if not row.passed and not row.diagnosis:
            _localize(row, prepared, cm, runner, hybrid, overrides, executors)
    return PartitionedParityReport(model=reference.name, api_level=prepared.api_level, kernels=kernels,
                                   outputs=[o for r in rows for o in r.outputs], partitions=rows, note=note)


def _same_elements(a: np.ndarray, shape: Sequence[int]) -> bool:
    """`a` holds the elements of a tensor of `shape` in another arrangement of unit axes ([5] and [1, 5])."""
    return [d for d in a.shape if d != 1] == [d for d in shape if d != 1]


def _as_converted(a: np.ndarray, spec: IoTensor, role: str) -> tuple[np.ndarray, str]:
    """TFLite's value of a partition's input or output in the shape the partition was converted for, with a
    note when TFLite computes it in another arrangement of unit axes (its kernels resize their outputs at
    Prepare: the declared shape may not be TFLite's; rewrite/static_shapes.py follows Prepare for the ops it
    knows)."""
    if tuple(a.shape) == tuple(spec.shape) or not _same_elements(a, spec.shape):
        return a, ""
    return a.reshape(spec.shape), (f"TFLite computes {role} '{spec.name}' as {list(a.shape)}; taken as the declared "
                                   f"{list(spec.shape)} the partition was converted for (the same elements)")


def _boundary_values(cm: ConvertedModel, runner: TfliteRunner) -> tuple[dict[str, np.ndarray], list[str], str]:
    """TFLite's tensors at the partition's inputs, by input name, in the shapes the partition was converted
    for (`_as_converted`); another size cannot be fed: returns (values, notes, why not)."""
    values, notes = {}, []
    for spec in cm.inputs:
        if spec.variable:  # a recurrent state enters as it was before the invocation (TFLite's holds the new one)
            continue
        a, note = _as_converted(runner.tensor(spec.tflite_tensor), spec, "boundary tensor")
        if tuple(a.shape) != tuple(spec.shape):
            return values, notes, (f"TFLite computes boundary tensor '{spec.name}' as {list(a.shape)}, but the "
                                   f"partition was converted for its declared shape {list(spec.shape)}: nnconv's "
                                   "shape inference does not follow TFLite here (please report it with the model)")
        values[spec.name] = a
        notes += [note] if note else []
    return values, notes, ""


def _unfit_partition(k: int, cm: ConvertedModel, why: str) -> PartitionParity:
    """The row of a partition that cannot be run on TFLite's boundary tensors: every output failing, `why`
    as its diagnosis."""
    outs = [OutputParity(f"p{k}/{spec.name}", spec.dtype, tuple(spec.shape), tolerance_for(spec.np_dtype),
                         float("inf"), float("inf"), None, passed=False, detail=f"not run: {why}")
            for spec in cm.model_outputs]
    return PartitionParity(k, list(cm.tflite_ops), attach_operands(outs, cm), diagnosis=why)


def _recheck_with_reference_kernels(failing: list, source, model_inputs: list[IoTensor],
                                    feed: Mapping[str, np.ndarray], hybrid: bool,
                                    overrides: ToleranceOverrides | None, executors: Executors,
                                    kernels: str = BUILTIN_KERNELS) -> None:
    """The partition-wise twin of `settle.compare_with_reference_kernels`: a partition whose quantized outputs
    miss TFLite's optimized kernels passes when, fed and compared with TFLite's reference kernels' own
    tensors, it is within tolerance (the NNAPI reference arithmetic); its outputs' details say so."""
    try:
        ref = TfliteRunner(source, kernels=REFERENCE_KERNELS, preserve_all_tensors=True)
        ref.run({spec.tflite_tensor: np.asarray(feed[spec.name]) for spec in model_inputs})
    except NnconvError:
        return
    for cm, row in failing:
        ours = executors.run(cm, {spec.name: ref.tensor(spec.tflite_tensor) for spec in cm.inputs
                                  if not spec.variable})
        again = [compare(o.name, ours[spec.name], ref.tensor(spec.tflite_tensor), hybrid, overrides)
                 for o, spec in zip(row.outputs, cm.model_outputs)]
        if all(a.passed for a in again):
            for o, a in zip(row.outputs, again):
                if not o.passed:
                    o.passed, o.settled_by = True, "reference kernels"
                    o.detail = "; ".join(filter(None, [o.detail, (
                        f"within tolerance of TFLite's reference kernels (max {a.max_lsb} LSB), whose integer "
                        f"arithmetic the NNAPI reference CPU follows; TFLite's {kernels} kernels differ by up to "
                        f"{o.max_lsb} LSB")]))


def _localize(row: PartitionParity, prepared: PreparedConversion, cm: ConvertedModel, runner: TfliteRunner,
              hybrid: bool, overrides: ToleranceOverrides | None, executors: Executors) -> None:
    """Explains a failing partition. Re-converts its ops from the source model: if that passes, the given
    partition (e.g. from an older .nnapi file) is not what nnconv produces now. Otherwise runs each op
    alone, re-converted and fed TFLite's own tensors, to tell a faulty op from rounding differences that
    only add up across several ops."""
    try:
        fresh = executors.lowered_alone(prepared, cm.tflite_ops, cm.subgraph)
        ours = executors.run(fresh, _boundary_values(fresh, runner)[0])
    except NnconvError:
        fresh = None  # the ops no longer convert or run together: the op-by-op diagnosis below says which
    if fresh is not None and all(compare(s.name, ours[s.name], _as_converted(runner.tensor(s.tflite_tensor), s, "")[0],
                                         hybrid, overrides).passed for s in fresh.model_outputs):
        row.diagnosis = ("a fresh conversion of the same ops passes: this partition differs from what nnconv "
                         "produces now (an outdated or modified .nnapi file?)")
        return
    for k in cm.tflite_ops:
        op = prepared.model.subgraphs[cm.subgraph].operators[k]
        try:
            single = executors.lowered_alone(prepared, [k], cm.subgraph)
        except Exception:  # noqa: BLE001 - e.g. an op whose outputs are all folded: nothing to compare
            continue
        try:
            ours = executors.run(single, _boundary_values(single, runner)[0])
        except NnconvError:  # converted for a shape TFLite does not give its inputs: not run alone
            continue
        for spec in single.model_outputs:
            o = compare(spec.name, ours[spec.name], _as_converted(runner.tensor(spec.tflite_tensor), spec, "")[0],
                        hybrid, overrides)
            if not o.passed:
                row.ops_at_fault.append({"index": k, "op": op.name, "output": spec.name, "max_abs": o.max_abs,
                                         "max_lsb": o.max_lsb, "detail": o.detail})
    if row.ops_at_fault:
        row.diagnosis = ("op" if len(row.ops_at_fault) == 1 else "ops") + " out of tolerance on their own: " + \
            ", ".join(f"#{f['index']} {f['op']}" for f in row.ops_at_fault)
    else:
        row.diagnosis = ("every op is within tolerance on its own: small rounding differences add up across "
                         "the partition's ops")


def verify_nnapi_file(path: str | os.PathLike, tflite_path: str | os.PathLike | None = None,
                      inputs: Mapping[str, np.ndarray] | None = None, seed: int = 0,
                      kernels: str = BUILTIN_KERNELS, overrides: ToleranceOverrides | None = None,
                      executors: Executors | None = None) -> PartitionedParityReport:
    """Verifies every partition of a .nnapi file against its source .tflite (named by the file's partition
    plan, or given), partition by partition."""
    from nnconv.nnapi import serialize
    loaded = serialize.load(path)
    source = tflite_path or _source_of(path, loaded.plan)
    note = (f"{os.path.basename(os.fspath(path))}: {plural(len(loaded.partitions), 'partition')} verified one by one "
            f"against {source} on TFLite's own boundary tensors")
    # The file records no conversion options: the source is prepared with the defaults, only to describe
    # its inputs and to re-lower ops when diagnosing a failing partition.
    return verify_partitions(prepare(source, loaded.api_level), loaded.partitions, inputs=inputs, seed=seed,
                             kernels=kernels, note=note, overrides=overrides, executors=executors)


def _source_of(path: str | os.PathLike, plan: dict | None) -> str:
    """The source .tflite recorded in the plan, as written or relative to the .nnapi file's folder."""
    model = plan.get("model") if isinstance(plan, dict) else None
    if not isinstance(model, str) or not model:
        raise NnconvError(f"{os.fspath(path)} records no source .tflite (only files written with "
                          "`convert --allow-partial` carry a partition plan); verify the .tflite instead")
    absolute = plan.get("model_abspath") if isinstance(plan, dict) else None
    for candidate in (model, *([absolute] if isinstance(absolute, str) else []),
                      os.path.join(os.path.dirname(os.fspath(path)), model),
                      os.path.join(os.path.dirname(os.fspath(path)), os.path.basename(model))):
        if os.path.isfile(candidate):
            return candidate
    raise NnconvError(f"{os.fspath(path)}: its source model {model} is not found")


def is_nnapi_file(path: str | os.PathLike | bytes | bytearray) -> bool:
    """Whether `path` names a .nnapi file (False for a model given as its bytes: the API reads .nnapi files
    from a path only)."""
    if isinstance(path, (bytes, bytearray, memoryview)):
        return False
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError:
        return False  # read_model reports the problem with one line
    return head[4:8] == NNAPI_FILE_MAGIC


def bind_model_inputs(specs: Sequence[IoTensor], inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """User inputs by name or positional `arr_k`, keyed by input name (`bind_inputs`), shapes checked."""
    out = {}
    for spec, a in zip(specs, bind_inputs(specs, inputs)):
        if tuple(a.shape) != tuple(spec.shape):
            raise InputDataError(f"input '{spec.name}' is {a.dtype}{list(a.shape)}; the model takes "
                                 f"{spec.dtype}{list(spec.shape)}")
        out[spec.name] = a
    return out


def _named(converted: ConvertedModel, feed: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Accepts positional `arr_k` names as well as input names; returns arrays keyed by input name, as the
    executor binds them (`bind_inputs`)."""
    return {spec.name: a for spec, a in zip(converted.inputs, bind_inputs(converted.inputs, feed))}
