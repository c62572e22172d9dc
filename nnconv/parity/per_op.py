"""Per-op parity (`verify --per-op`): every TFLite tensor the NNAPI graph also computes, compared with the
interpreter's own value, and the first op where parity breaks.

Both engines keep every intermediate: TFLite's interpreter with `preserve_all_tensors`, our executor with
a keeping `Trace`. The lowering records which NNAPI operand holds each TFLite tensor
(`ConvertedModel.tensor_operands`); a tensor that a composite lowering only computes inside its own
operations, or that was folded at conversion, has no counterpart and is not compared.

Blame. Ops are visited in TFLite's execution order (the subgraph's operator order). An op whose output is
out of tolerance is
- `propagated` when one of its inputs was already out of tolerance (the error came from upstream);
- otherwise it is lowered alone and fed TFLite's own input values: `divergent` when it is still out of
  tolerance (this op computes something else: the one to look at), `amplified` when alone it passes
  (in-tolerance differences of its inputs grew through it: rounding, not a conversion bug), `arithmetic`
  when alone it is out of tolerance but within it computed TFLite's way (parity/settle.py: NNAPI's own
  arithmetic, such as an int8 RESIZE_BILINEAR's float32 weights against TFLite's Q10 integers, which a
  phone's reference CPU shares; not a conversion bug either).
`first_divergent_op` is the first `divergent` op; ops after it are never blamed for its error, since their
inputs are then out of tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from nnconv.errors import NnconvError
from nnconv.nnapi.program import ConvertedModel
from nnconv.parity.dequantized import DequantizedFrom, dequantized_sources
from nnconv.parity.diagnose import non_finite_counts, tflite_value
from nnconv.parity.executors import NNAPI, Executors, KernelSet
from nnconv.parity.settle import ArithmeticDifferences
from nnconv.parity.tolerances import ToleranceOverrides
from nnconv.parity.verify import OutputParity, compare
from nnconv.pipeline import PreparedConversion
from nnconv.tflite.ir import Subgraph

PASS, DIVERGENT, PROPAGATED, AMPLIFIED, ARITHMETIC = "pass", "divergent", "propagated", "amplified", "arithmetic"
TOP_BY_ERROR = 5  # rows of the table besides the first divergent op


@dataclass
class OpParity:
    """The comparison of one TFLite op's output (its worst output when it has several)."""

    op_index: int
    op: str
    tensor: str
    dtype: str
    max_abs: float
    max_rel: float
    lsb: int | None
    status: str
    tolerance: str = ""
    partition: int | None = None  # partition-by-partition mode only
    confirmed_alone: dict | None = None  # the op alone on TFLite's inputs (out-of-tolerance ops)

    def to_json(self) -> dict:
        data: dict[str, Any] = {"op_index": self.op_index, "op": self.op, "tensor": self.tensor,
                                "dtype": self.dtype, "max_abs": self.max_abs, "max_rel": self.max_rel,
                                "lsb": self.lsb, "status": self.status, "tolerance": self.tolerance}
        if self.partition is not None:
            data["partition"] = self.partition
        if self.confirmed_alone is not None:
            data["alone"] = self.confirmed_alone
        return data


@dataclass
class PerOpReport:
    entries: list[OpParity] = field(default_factory=list)
    first_divergent: OpParity | None = None
    not_compared: int = 0  # TFLite ops with no NNAPI counterpart of any output (fused, folded, refused)
    kernels: str = ""  # TFLite's kernel set whose tensors were compared
    kernels_note: str = ""  # why those are not the kernels of `--kernels` (XNNPACK, or the reference kernels)
    # the first op whose output holds a NaN or an infinity (on either side) while its inputs hold none:
    # {"op_index", "op", "tensor", "tflite": {"nan": n, "inf": n}, "ours": {...}}
    first_non_finite: dict | None = None
    notes: list[str] = field(default_factory=list)  # where the outputs' verdicts and these rows differ, and why

    @property
    def first_large(self) -> OpParity | None:
        """The first op out of tolerance with its inputs within it, confirmed alone (`divergent`), NNAPI's own
        arithmetic (`arithmetic`) or not (`amplified`): where an error source such as fp16 rounding first
        becomes large, whether the op does it alone (overflow, cancellation) or grows what came in."""
        return next((e for e in self.entries if e.status in (DIVERGENT, AMPLIFIED, ARITHMETIC)), None)

    @property
    def first_difference(self) -> OpParity | None:
        """The first op whose output differs by whole steps (quantized, dequantized or boolean tensors), within
        tolerance or not: where a difference that grows downstream (or a dequantized output's 1 LSB) starts.
        Float tensors differ by rounding everywhere and are not counted."""
        return next((e for e in self.entries if (e.lsb or 0) > 0 or (e.dtype == "bool" and e.max_abs > 0)), None)

    @property
    def out_of_tolerance(self) -> int:
        return sum(e.status != PASS for e in self.entries)

    def summary(self) -> str:
        """What the intermediates show, in one clause: `per-op: 26 of 65 intermediates out of tolerance,
        divergence starts at #3 CONV_2D (divergent)`, or `per-op: all 65 intermediates within tolerance`."""
        n = len(self.entries)
        if not self.out_of_tolerance:
            return f"per-op: all {n} intermediates within tolerance" if n else "per-op: no intermediate compared"
        start = self.first_large
        where = f", divergence starts at #{start.op_index} {start.op} ({start.status})" if start else ""
        return f"per-op: {self.out_of_tolerance} of {n} intermediates out of tolerance{where}"

    def worst(self, n: int = TOP_BY_ERROR) -> list[OpParity]:
        """The `n` out-of-tolerance ops with the largest relative error."""
        bad = [e for e in self.entries if e.status != PASS]
        return sorted(bad, key=lambda e: -e.max_rel)[:n]


# A reader of TFLite's value of a tensor (the interpreter's preserved tensors).
TensorSource = Callable[[int], np.ndarray]


def per_op_parity(prepared: PreparedConversion, partitions: Sequence[ConvertedModel], tflite_tensor: TensorSource,
                  hybrid: bool = False, overrides: ToleranceOverrides | None = None,
                  executors: Executors | None = None, kernels: KernelSet = NNAPI) -> PerOpReport:
    """Runs each converted model (the whole model, or each partition) on TFLite's own values at its inputs,
    keeping every intermediate, and compares every TFLite tensor it computes. `executors`: our side of the
    verify (parity/executors.py), whose executors with `kernels` (e.g. `RELAXED_FP16`) run the models."""
    executors = executors or Executors()
    ours: dict[int, np.ndarray] = {}
    partition_of: dict[int, int] = {}
    subgraph = partitions[0].subgraph if partitions else 0
    sg = prepared.model.subgraphs[subgraph]
    for k, cm in enumerate(partitions):
        computed = executors.intermediates(cm, {s.name: tflite_tensor(s.tflite_tensor) for s in cm.inputs
                                                if not s.variable}, kernels)
        for tensor, operand in cm.tensor_operands.items():
            if operand in computed:  # computed by an operation (not a constant, not an input)
                ours[tensor] = computed[operand]
                partition_of[tensor] = k
    report = PerOpReport()
    out_of_tolerance: set[int] = set()
    nan_read: set[int] = set()  # computed tensors holding a NaN on either side
    sources = dequantized_sources(sg)
    for op in sg.operators:
        rows = [_compare_tensor(sg, t, ours[t], tflite_tensor, hybrid, overrides, sources.get(t))
                for t in op.outputs if t >= 0 and t in ours]
        rows = [r for r in rows if r is not None]
        read = [t for t in op.inputs if t >= 0]
        # an infinity read from a constant (an attention mask of -inf) is data; one that appears here is news
        inputs_finite = not any(t in nan_read or non_finite_counts(tflite_value(tflite_tensor, t)) for t in read)
        for t in op.outputs:
            if t >= 0 and t in ours:
                counts = (non_finite_counts(tflite_value(tflite_tensor, t)), non_finite_counts(ours[t]))
                if "nan" in counts[0] or "nan" in counts[1]:
                    nan_read.add(t)
                if counts != ({}, {}) and inputs_finite and report.first_non_finite is None:
                    report.first_non_finite = {"op_index": op.index, "op": op.name, "tensor": sg.tensors[t].name,
                                               "tflite": counts[0], "ours": counts[1]}
        if not rows:
            report.not_compared += 1
            continue
        failing = [(t, r) for t, r in rows if not r.passed]
        out_of_tolerance.update(t for t, _ in failing)
        tensor, worst = failing[0] if failing else max(rows, key=lambda tr: tr[1].max_rel)
        entry = OpParity(op.index, op.name, worst.name, worst.dtype, worst.max_abs, worst.max_rel, worst.max_lsb, PASS,
                         worst.tolerance.describe(), partition_of[tensor] if len(partitions) > 1 else None)
        if failing:
            # a NaN read is not a value two engines need agree downstream of (QUANTIZE of NaN is undefined):
            # the op is not blamed, `first_non_finite` names where it appeared; infinities are defined values
            if any(t in out_of_tolerance or t in nan_read for t in read):
                entry.status = PROPAGATED
            else:
                alone = _alone(prepared, subgraph, op.index, tflite_tensor, hybrid, overrides, executors, kernels)
                entry.confirmed_alone = alone
                entry.status = AMPLIFIED if alone is not None and alone["passed"] else \
                    ARITHMETIC if alone is not None and alone.get("tflite_arithmetic") else DIVERGENT
                if entry.status == DIVERGENT and report.first_divergent is None:
                    report.first_divergent = entry
        report.entries.append(entry)
    return report


def _compare_tensor(sg: Subgraph, tensor: int, value: np.ndarray, tflite_tensor: TensorSource, hybrid: bool,
                    overrides: ToleranceOverrides | None,
                    source: DequantizedFrom | None = None) -> tuple[int, OutputParity] | None:
    try:
        expected = tflite_tensor(tensor)
    except (ValueError, RuntimeError, KeyError):  # the interpreter did not keep it
        return None
    actual = as_tflite_value(value, expected)
    name = sg.tensors[tensor].name or f"tensor{tensor}"
    return tensor, compare(name, actual, expected, hybrid, overrides, source)


def as_tflite_value(value: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """An NNAPI operand's value in the TFLite tensor's representation: int8 carried as uint8 (+128, below
    API 30) shifted back, int64 carried as int32 widened, rank 0 carried as [1] reshaped."""
    value = np.asarray(value)
    if value.dtype == np.uint8 and expected.dtype == np.int8:
        value = (value.astype(np.int16) - 128).astype(np.int8)
    elif value.dtype != expected.dtype:
        value = value.astype(expected.dtype)
    if value.shape != expected.shape and value.size == expected.size:
        value = value.reshape(expected.shape)
    return value


def _alone(prepared: PreparedConversion, subgraph: int, op_index: int, tflite_tensor: TensorSource, hybrid: bool,
           overrides: ToleranceOverrides | None, executors: Executors, kernels: KernelSet) -> dict | None:
    """The op lowered alone and fed TFLite's own inputs: {"passed", "max_abs", "max_rel", "lsb"} of its
    worst output, or None when it cannot run alone (then the in-graph result stands). Out of tolerance, and
    within it computed TFLite's way where NNAPI's arithmetic differs (parity/settle.py), it adds
    "tflite_arithmetic": {"max_abs", "lsb"} and "arithmetic": which op computes what differently."""
    try:
        single = executors.lowered_alone(prepared, [op_index], subgraph)
        feed = {s.name: tflite_tensor(s.tflite_tensor) for s in single.inputs if not s.variable}
        sg = prepared.model.subgraphs[subgraph]
        sources = dequantized_sources(sg)

        def rows_of(arithmetic: KernelSet) -> list[OutputParity]:
            ours = executors.run(single, feed, arithmetic)
            return [compare(s.name, ours[s.name], tflite_tensor(s.tflite_tensor), hybrid, overrides,
                            sources.get(s.tflite_tensor)) for s in single.model_outputs]
        rows = rows_of(kernels)
        if not rows:
            return None
        worst = next((r for r in rows if not r.passed), max(rows, key=lambda r: r.max_rel))
        alone = {"passed": all(r.passed for r in rows), "max_abs": worst.max_abs, "max_rel": worst.max_rel,
                 "lsb": worst.max_lsb}
        differences = ArithmeticDifferences(sg, single)
        if not alone["passed"] and differences.causes:
            again = rows_of(kernels.with_(differences.kernel_set()))
            if all(r.passed for r in again):
                off = max(again, key=lambda r: r.max_rel)
                alone["tflite_arithmetic"] = {"max_abs": off.max_abs, "lsb": off.max_lsb}
                alone["arithmetic"] = differences.describe()
    except (NnconvError, ValueError, RuntimeError):
        return None
    return alone
