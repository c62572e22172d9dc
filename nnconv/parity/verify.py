"""Parity: run our executor and TFLite's interpreter on the same inputs and compare every output."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from nnconv.errors import NnconvError
from nnconv.fmt import plural
from nnconv.nnapi.program import ConvertedModel, IoTensor
from nnconv.parity.executors import NNAPI, Executors, KernelSet
from nnconv.parity.tflite_runner import BUILTIN_KERNELS, TfliteRunner
from nnconv.parity.metrics import is_uninformative, tensor_metrics
from nnconv.parity.tolerances import Tolerance, ToleranceOverrides, tolerance_for
from nnconv.parity.dequantized import DequantizedFrom, dequantized_sources
from nnconv.parity.builtin_twin import TRANSPOSE_CONV_BIAS, builtin_twin, custom_ops_substituted
from nnconv.parity.twin import float_twin, hybrid_weights
from nnconv.tflite.ir import TfliteModel
from nnconv.tflite.reader import read_model


def random_inputs(specs: list[IoTensor], seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded inputs covering each input's real range: the full integer range of quantized inputs,
    [-1, 1] for float inputs (the usual normalized-image range), small non-negative ints for indices."""
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for spec in specs:
        if spec.variable:
            continue  # recurrent state: zeros, as TFLite starts it (`bind_inputs`)
        dt = spec.np_dtype
        shape = tuple(spec.shape)
        if dt.kind == "f":
            a = rng.uniform(-1.0, 1.0, size=shape).astype(dt)
        elif dt == np.bool_:
            a = rng.integers(0, 2, size=shape).astype(np.bool_)
        elif dt in (np.dtype(np.uint8), np.dtype(np.int8), np.dtype(np.int16)):
            info = np.iinfo(dt)
            a = rng.integers(info.min, int(info.max) + 1, size=shape, dtype=np.int64).astype(dt)
        else:
            a = rng.integers(0, 8, size=shape).astype(dt)
        out[spec.name] = a
    return out


@dataclass
class OutputParity:
    name: str
    dtype: str
    shape: tuple[int, ...]
    tolerance: Tolerance
    max_abs: float
    max_rel: float  # max |diff| / max |expected|
    max_lsb: int | None  # quantized outputs
    histogram: dict[int, int] = field(default_factory=dict)  # |diff| in LSB -> count
    passed: bool = True
    detail: str = ""
    mean_abs: float = 0.0
    cosine: float = 1.0
    top1: float | None = None  # class-score outputs only (parity/metrics.py)
    top5: float | None = None
    value_range: tuple[float, float] | None = None  # [min, max] of TFLite's tensor (None: empty or boolean)
    operand: int | None = None  # the NNAPI operand holding our value (set by the caller that has the model)
    # float outputs re-judged by parity/kernel_spread.py: max |diff| between TFLite's two kernel sets
    kernel_spread: float | None = None
    # TFLite's values are constant or nearly so (metrics.is_uninformative): a pass proves little
    uninformative: bool = False
    # what let an output out of the plain tolerance pass: "reference kernels", "NNAPI arithmetic"
    # (parity/settle.py) or "kernel spread" (parity/kernel_spread.py); "" when the plain tolerance did
    settled_by: str = ""
    mismatches: int | None = None  # boolean outputs: elements that differ (no LSB: a boolean has no steps)

    @property
    def verdict(self) -> str:
        """PASS / FAIL, never a bare PASS for an uninformative comparison."""
        if not self.passed:
            return "FAIL"
        return "PASS (uninformative)" if self.uninformative else "PASS"

    def to_json(self) -> dict:
        return {"name": self.name, "operand": self.operand, "dtype": self.dtype, "shape": list(self.shape),
                "range": None if self.value_range is None else list(self.value_range), "max_abs": self.max_abs,
                "mean_abs": self.mean_abs, "max_rel": self.max_rel, "cosine": self.cosine, "top1": self.top1,
                "top5": self.top5, "max_lsb": self.max_lsb,
                "histogram": {str(k): v for k, v in self.histogram.items()},
                "tolerance": self.tolerance.describe(), "kernel_spread": self.kernel_spread,
                "passed": self.passed, "mismatches": self.mismatches, "settled_by": self.settled_by or None, "uninformative": self.uninformative,
                "detail": self.detail}


def compare(name: str, actual: np.ndarray, expected: np.ndarray, hybrid: bool = False,
            overrides: ToleranceOverrides | None = None, source: DequantizedFrom | None = None) -> OutputParity:
    """Metrics (parity/metrics.py) of one output against TFLite's and the verdict of the tolerance policy
    (parity/tolerances.py, with the user's `--atol/--rtol/--max-lsb` overrides). `source`: the quantized
    tensor a float output dequantizes, whose LSB judges it (parity/dequantized.py)."""
    tol = tolerance_for(expected.dtype, hybrid, overrides, *((source.scale, source.dtype) if source else ()))
    shape = tuple(expected.shape)
    value_range = ((float(expected.min()), float(expected.max()))
                   if expected.size and expected.dtype != np.bool_ else None)
    if actual.shape != expected.shape:
        return OutputParity(name, expected.dtype.name, shape, tol, float("inf"), float("inf"), None, passed=False,
                            detail=f"shape {list(actual.shape)} != TFLite's {list(expected.shape)}",
                            value_range=value_range)
    m = tensor_metrics(actual, expected, quantized=tol.kind != "float")
    span = tolerance_span(tol, m.range)
    passed = (m.max_lsb or 0) <= tol.lsb if tol.kind == "quant" else m.max_abs <= span
    row = OutputParity(name, expected.dtype.name, shape, tol, m.max_abs, m.max_rel,
                       m.max_lsb if tol.kind != "float" else None,
                       m.histogram if tol.kind != "float" else {}, passed, mean_abs=m.mean_abs, cosine=m.cosine,
                       top1=m.top1, top5=m.top5, value_range=value_range)
    if expected.dtype == np.bool_:  # counted, not measured in steps
        row.max_lsb, row.histogram = None, {}
        row.mismatches = int(np.count_nonzero(np.asarray(actual) != expected))
        if row.mismatches:
            row.detail = f"{row.mismatches} of {expected.size} booleans differ"
    if tol.lsb_scale and source is not None and np.isfinite(m.max_abs):
        row.max_lsb = int(np.rint(m.max_abs / tol.lsb_scale))
        if row.max_lsb:
            row.detail = f"{row.max_lsb} LSB of {source.describe()}, dequantized here"
    mark_uninformative(row, expected, span)
    return row


def tolerance_span(tol: Tolerance, magnitude: float) -> float:
    """The largest |diff| `tol` allows on a tensor of `magnitude` (max |value|), in the tensor's units."""
    if tol.kind == "float":
        return tol.atol + tol.rtol * magnitude + tol.lsb * tol.lsb_scale
    return float(tol.lsb) if tol.kind == "quant" else 0.0


INPUTS_HINT = "compare on other inputs (--image, --inputs, --dataset)"
UNINFORMATIVE_HINT = f"{INPUTS_HINT} or every intermediate (--per-op)"


def mark_uninformative(row: OutputParity, expected: np.ndarray, span: float) -> None:
    """Flags `row` when TFLite's `expected` values (one run's, or every sample's) vary by no more than the
    tolerance: a constant output passes on any engine that computes that value, so the verdict says so."""
    if expected.dtype == np.bool_ or not is_uninformative(expected, span):
        return
    row.uninformative = True
    what = "constant" if row.value_range and row.value_range[0] == row.value_range[1] else "nearly constant"
    note = f"{what} on these inputs: the comparison proves little; {UNINFORMATIVE_HINT}"
    row.detail = "; ".join(filter(None, [row.detail, note]))


def attach_operands(rows: Sequence[OutputParity], converted: ConvertedModel) -> list[OutputParity]:
    """Sets each output row's NNAPI operand (rows in `converted.model_outputs` order), so reports can name the
    tensor as TFLite does with the operand in brackets."""
    for row, operand in zip(rows, converted.model_output_operands):
        row.operand = operand
    return list(rows)


@dataclass
class ParityReport:
    model: str
    api_level: int
    kernels: str
    outputs: list[OutputParity]

    @property
    def passed(self) -> bool:
        return all(o.passed for o in self.outputs)

    def to_json(self) -> dict:
        return {"model": self.model, "api_level": self.api_level, "tflite_kernels": self.kernels,
                "passed": self.passed, "outputs": [o.to_json() for o in self.outputs]}


def has_hybrid_ops(model: TfliteModel) -> bool:
    """True when some op takes a float activation and constant int8/uint8 weights (dynamic-range
    quantization), which TFLite runs with on-the-fly activation quantization (see tolerances.py)."""
    return any(hybrid_weights(sg) for sg in model.subgraphs)


@dataclass(frozen=True)
class TfliteReference:
    """TFLite's side of parity for one model, worked out once per verify: what the interpreter loads, whether
    the model is dynamic-range quantized (hybrid), and then its float twin (parity/twin.py)."""

    source: str | os.PathLike | bytes  # what the interpreter loads: the model's file or bytes, or its builtin twin
    model: TfliteModel
    hybrid: bool
    twin: bytes | None
    label: str | None = None  # the model's own name when `source` is its builtin twin
    substituted: int = 0  # custom ops the builtin twin runs as builtins (parity/builtin_twin.py)

    def dequantized(self, subgraph: int, tensor: int) -> DequantizedFrom | None:
        """What the float tensor dequantizes, when it is a DEQUANTIZE of a quantized activation."""
        return dequantized_sources(self.model.subgraphs[subgraph]).get(tensor)

    @classmethod
    def of(cls, model: TfliteModel, source: str | os.PathLike | bytes | None) -> "TfliteReference":
        if source is None:
            raise NnconvError("parity needs the model's file or bytes for TFLite's interpreter")
        hybrid = has_hybrid_ops(model)
        twin = float_twin(model) if hybrid else None
        runnable = builtin_twin(model)
        if runnable is None:
            return cls(source, model, hybrid, twin)
        label = str(source) if isinstance(source, (str, os.PathLike)) else "<bytes>"
        return cls(runnable, model, hybrid, twin, label, custom_ops_substituted(model))

    @property
    def name(self) -> str:
        if self.label is not None:
            return self.label
        return str(self.source) if isinstance(self.source, (str, os.PathLike)) else "<bytes>"

    @property
    def substitution_note(self) -> str:
        """What TFLite ran in place of the model's custom ops, for the outputs' details ("" for none)."""
        if not self.substituted:
            return ""
        return (f"TFLite ran the model's {plural(self.substituted, TRANSPOSE_CONV_BIAS + ' op')} as builtin TRANSPOSE_CONV "
                f"with bias, the same arithmetic (parity/builtin_twin.py)")


def tflite_output(runner: TfliteRunner, outputs: Mapping[int, np.ndarray], tensor: int) -> np.ndarray:
    """TFLite's value of `tensor`: from the run's outputs, else read from the interpreter."""
    found = outputs.get(tensor)
    return found if found is not None else runner.tensor(tensor)


def tflite_feed(runner: TfliteRunner, converted: ConvertedModel,
                inputs: Mapping[str, np.ndarray]) -> dict[int, np.ndarray]:
    """`inputs` (keyed by the converted model's input names) keyed by the interpreter's input tensor indexes."""
    feed = {}
    by_name = {spec.name: spec for spec in converted.inputs}
    for d in runner.input_details():
        spec = next((s for s in converted.inputs if s.tflite_tensor == d["index"]), None)
        if spec is None:
            spec = by_name.get(d["name"])
        if spec is None:
            raise ValueError(f"TFLite input {d['name']} has no counterpart in the converted model")
        feed[d["index"]] = np.asarray(inputs[spec.name])
    return feed


def run_parity(reference: TfliteReference | str | os.PathLike | bytes, converted: ConvertedModel,
               inputs: Mapping[str, np.ndarray], kernels: str = BUILTIN_KERNELS,
               runner: TfliteRunner | None = None, overrides: ToleranceOverrides | None = None,
               executors: Executors | None = None, our_kernels: KernelSet = NNAPI) -> ParityReport:
    """Runs both engines on `inputs` (keyed by input name) and compares every output of `converted`.
    `overrides`: the user's tolerances; `executors`: our side of the verify (parity/executors.py: its
    executor of `converted` with `our_kernels`, and our outputs on `inputs` when another comparison already
    ran them), a fresh one for one-off calls. `reference` is TFLite's side (a path or bytes is read here,
    for one-off calls)."""
    if not isinstance(reference, TfliteReference):
        reference = TfliteReference.of(read_model(reference), reference)
    ours = (executors or Executors()).run(converted, inputs, our_kernels)
    runner = runner or TfliteRunner(reference.source, kernels=kernels)
    feed = tflite_feed(runner, converted, inputs)
    theirs = runner.run(feed)
    hybrid = reference.hybrid
    # Dynamic-range models: the reference is TFLite on the float twin (nnconv/parity/twin.py), with the plain
    # float tolerance; without a twin, TFLite's hybrid kernels with the looser hybrid tolerance.
    twin_runner, twin_outputs = None, {}
    if reference.twin is not None:
        try:
            twin_runner = TfliteRunner(reference.twin, kernels=kernels)
            twin_outputs = twin_runner.run(feed)
        except (NnconvError, ValueError, RuntimeError):  # TFLite refuses the twin: compare with the hybrid kernels
            twin_runner, twin_outputs = None, {}
    results = []
    for spec in converted.model_outputs:
        expected = tflite_output(runner, theirs, spec.tflite_tensor)
        if twin_runner is None:
            results.append(compare(spec.name, ours[spec.name], expected, hybrid, overrides,
                                   reference.dequantized(converted.subgraph, spec.tflite_tensor)))
            continue
        reference_out = tflite_output(twin_runner, twin_outputs, spec.tflite_tensor)
        row = compare(spec.name, ours[spec.name], reference_out, overrides=overrides)
        gap = float(np.max(np.abs(expected.astype(np.float64) - reference_out))) if expected.size else 0.0
        row.detail = ("vs TFLite on the model with its dynamic-range weights dequantized (what NNAPI computes); "
                      f"TFLite's own hybrid kernels differ from that by up to {gap:.3g}")
        results.append(row)
    if reference.substitution_note:
        for row in results:
            row.detail = "; ".join(filter(None, [row.detail, reference.substitution_note]))
    return ParityReport(model=reference.name, api_level=converted.api_level, kernels=kernels,
                        outputs=attach_operands(results, converted))
