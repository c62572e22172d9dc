"""`verify --dataset`: one model over many samples (parity/samples.py), each run on our executor and on
TFLite, every output compared per sample and the differences gathered per output.

Per output (JSON `dataset.outputs`, docs/report-schema.md):
- `failing_samples`: samples out of the tolerance policy (parity/tolerances.py), a failing sample settled as
  one verify settles it (TFLite's reference kernels for quantized outputs, its kernel spread for float ones);
- `top1_agreement`, `top5_agreement`: class-score outputs only: the fraction of (sample, row) pairs whose best
  class agrees, the mean overlap of the five best, over the rows without ties (parity/metrics.py);
- `abs_error`: percentiles p50 / p90 / p99 (nearest rank) and the max of |ours - TFLite| over every element of
  every sample (quantized outputs in LSB); outputs over 2^16 elements contribute an even stride of 2^16
  elements per sample to the percentiles (the max is always exact);
- `lsb_histogram` (quantized outputs): {LSB: count} over every element of every sample;
- `worst_sample`: the sample with the largest |diff| (failing ones first), by name: its max is the `max` of
  `abs_error`, so the dataset table and that sample's report agree on this output;
- `settled_samples`: {how: count} of samples that passed only through TFLite's reference kernels, NNAPI's own
  arithmetic or TFLite's kernel spread (parity/settle.py, parity/kernel_spread.py), which per-op does not
  apply;
- `uninformative`: TFLite's values are constant on the whole dataset (metrics.is_uninformative).
The worst sample over all outputs is what `--per-op` then examines (session.verify on that sample alone).

`run_samples` runs the samples: on our executor in chunks of `max_batch` (32 by default) through
`Executor.run_batch` (nnconv/runtime/batch.py: bit-identical to one run per sample, so the report is the one a
sample-by-sample run gives), on TFLite one sample at a time. Where the executor's plan for a chunk loops
(an operation that mixes samples, a batched model over `--max-memory`), the chunk runs sample by sample and
`dataset.batch.loop_reason` gives the plan's reason, once; a batched graph over `--max-memory` first halves
the chunk (`_fit_chunk`). At most one chunk of samples and their outputs is
in memory at a time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import islice
from typing import Callable, Iterable, Iterator, Sequence

import numpy as np

from nnconv.errors import InputDataError, NnconvError
from nnconv.nnapi.program import ConvertedModel
from nnconv.parity.metrics import abs_diff
from nnconv.parity.executors import Executors
from nnconv.parity.samples import Feed, Sample
from nnconv.parity.kernel_spread import settle_with_kernel_spread
from nnconv.parity.settle import compare_with_reference_kernels
from nnconv.parity.tflite_runner import REFERENCE_KERNELS, TfliteRunner
from nnconv.parity.tolerances import ToleranceOverrides
from nnconv.parity.verify import (
    OutputParity,
    ParityReport,
    TfliteReference,
    compare,
    mark_uninformative,
    tflite_feed,
    tflite_output,
    tolerance_span,
)
from nnconv.runtime.batch import DEFAULT_MAX_BATCH
from nnconv.runtime.executor import Executor

PERCENTILES = (50, 90, 99)
STRIDE_ABOVE = 1 << 16  # elements per sample kept (as float32) for the percentiles of larger outputs


def settle(report: ParityReport, reference: TfliteReference, converted: ConvertedModel, feed: Feed,
           overrides: ToleranceOverrides | None, executors: Executors) -> None:
    """A sample's failing outputs re-judged as one verify re-judges them: quantized ones against TFLite's
    reference kernels (and NNAPI's own requantization arithmetic), float ones against TFLite's kernel
    spread (parity/partitioned.py, parity/kernel_spread.py); rows are updated in place."""
    if report.kernels != REFERENCE_KERNELS and any(not o.passed and o.max_lsb is not None for o in report.outputs):
        compare_with_reference_kernels(report, reference, converted, feed, overrides, executors)
    settle_with_kernel_spread(report, reference, converted, feed, overrides, executors)


@dataclass
class Batching:
    """How our executor ran the samples (JSON `dataset.batch`): in chunks of at most `max_batch` (the one
    asked, at most the dataset's size, halved to fit `--max-memory`), `batched` of them in a batched plan;
    `loop_reason`: why chunks ran sample by sample (the first plan's reason)."""

    max_batch: int = DEFAULT_MAX_BATCH
    batched: int = 0
    loop_reason: str = ""

    def to_json(self) -> dict:
        return {"max_batch": self.max_batch, "batched_samples": self.batched,
                "loop_reason": self.loop_reason or None}


def run_samples(converted: ConvertedModel, reference: TfliteReference, feeds: Iterable[Feed], kernels: str,
                executors: Executors | None = None, batching: Batching | None = None,
                started: Callable[[int], None] | None = None
                ) -> Iterator[tuple[Feed, dict[str, np.ndarray], dict[str, np.ndarray], bool]]:
    """Yields (feed, ours, TFLite's, hybrid) outputs by output name for each feed, in order. `feeds` is
    consumed lazily, a chunk of `batching.max_batch` samples at a time (1: one by one, `Executor.run`), run on
    our executor at once (`_run_chunk`), then on TFLite sample by sample. `started(i)` is called when sample i's
    work begins: the first of a chunk before the chunk's batched run, the others before their TFLite run (a
    progress bar then moves with the samples, not in jumps of a chunk).
    Dynamic-range models compare with TFLite on their float twin (parity/twin.py) when TFLite takes it
    (hybrid False), else with TFLite's hybrid kernels (hybrid True: the looser tolerance), as one verify does."""
    batching = batching if batching is not None else Batching()
    executor = (executors or Executors()).executor(converted)
    runner, hybrid = None, reference.hybrid
    if reference.twin is not None:
        try:
            runner, hybrid = TfliteRunner(reference.twin, kernels=kernels), False
        except NnconvError:
            runner = None
    runner = runner or TfliteRunner(reference.source, kernels=kernels)
    _fit_chunk(executor, batching)
    pending, index = iter(feeds), 0
    while chunk := list(islice(pending, max(1, batching.max_batch))):
        for k, (feed, ours) in enumerate(zip(chunk, _run_chunk(executor, chunk, batching, started, index))):
            if k and started is not None:
                started(index + k)
            raw = runner.run(tflite_feed(runner, converted, feed))
            theirs = {s.name: tflite_output(runner, raw, s.tflite_tensor) for s in converted.model_outputs}
            yield feed, ours, theirs, hybrid
        index += len(chunk)


def _fit_chunk(executor: Executor, batching: Batching) -> None:
    """`batching.max_batch` halved while the batched graph at that size is over the executor's `max_memory`
    (a smaller chunk may fit where 32 samples do not); down to 1, the last plan's reason is the loop's."""
    while batching.max_batch > 1:
        plan = executor.batch_plan(batching.max_batch)
        if not plan.over_memory:
            return
        batching.max_batch //= 2
        if batching.max_batch == 1:
            batching.loop_reason = plan.reason


def _run_chunk(executor: Executor, chunk: Sequence[Feed], batching: Batching,
               started: Callable[[int], None] | None, index: int) -> list[dict[str, np.ndarray]]:
    """Our outputs for each feed of `chunk`: stacked on a leading sample axis through `run_batch` (which loops
    where its plan does; the first such reason is kept in `batching`), one `run` for a chunk of one."""
    if started is not None:
        started(index)
    if len(chunk) == 1:  # a plan of one sample is the single run
        return [executor.run(dict(chunk[0]))]
    plan = executor.batch_plan(len(chunk))
    if plan.batched:
        batching.batched += len(chunk)
    elif not batching.loop_reason:
        batching.loop_reason = plan.reason
    outs = executor.run_batch({s.name: np.stack([f[s.name] for f in chunk]) for s in executor.input_specs},
                              max_batch=len(chunk))
    # `[k, ...]` keeps a rank-0 output an array, as `run` returns it
    return [{name: a[k, ...] for name, a in outs.items()} for k in range(len(chunk))]


@dataclass
class OutputStats:
    """What one output's samples add up to (see the module docstring)."""

    name: str
    rows: list[OutputParity] = field(default_factory=list)  # one per sample
    diffs: list[np.ndarray] = field(default_factory=list)
    histogram: dict[int, int] = field(default_factory=dict)
    low: float = np.inf  # TFLite's smallest and largest value over the dataset
    high: float = -np.inf
    top: list[tuple[float | None, float | None, int]] = field(default_factory=list)  # (top1, top5, rows)

    def add(self, row: OutputParity, ours: np.ndarray, theirs: np.ndarray) -> None:
        self.rows.append(row)
        if ours.shape != theirs.shape:
            self.diffs.append(np.array([np.inf]))
            return
        diff = abs_diff(ours, theirs).ravel()
        if diff.size > STRIDE_ABOVE:  # an even stride for the percentiles, and the exact max
            diff = np.append(diff[::-(-diff.size // STRIDE_ABOVE)], diff.max())
        self.diffs.append(diff.astype(np.float32))  # bounded memory: 256 KiB per sample and output at most
        for lsb, count in row.histogram.items():
            self.histogram[lsb] = self.histogram.get(lsb, 0) + count
        finite = theirs[np.isfinite(theirs)] if theirs.dtype.kind == "f" else theirs
        if finite.size and theirs.dtype != np.bool_:
            self.low, self.high = min(self.low, float(finite.min())), max(self.high, float(finite.max()))
        if row.top1 is not None or row.top5 is not None:
            self.top.append((row.top1, row.top5, int(np.prod(theirs.shape[:-1])) or 1))

    def to_json(self, names: Sequence[str]) -> dict:
        first = self.rows[0]
        diffs = np.concatenate(self.diffs) if self.diffs else np.zeros(0)
        # nearest rank ("inverted_cdf"): every percentile is an error some element really has (whole LSB for
        # quantized outputs), the smallest with at least p% of the elements at or below it
        pct = {f"p{p}": float(np.percentile(diffs, p, method="inverted_cdf")) for p in PERCENTILES} \
            if diffs.size else {}
        # the sample with the largest |diff| (failing ones first): its max is the `max` column's, so the
        # dataset table and that sample's own report give one figure for this output
        worst = max(range(len(self.rows)), key=lambda i: (not self.rows[i].passed, self.rows[i].max_abs))
        settled: dict[str, int] = {}
        for r in self.rows:
            if r.settled_by:
                settled[r.settled_by] = settled.get(r.settled_by, 0) + 1
        summary = OutputParity(self.name, first.dtype, first.shape, first.tolerance, 0.0, 0.0, None,
                               value_range=(self.low, self.high) if self.low <= self.high else None)
        if self.low <= self.high and len(self.rows) * int(np.prod(first.shape)) >= 2:
            span = tolerance_span(first.tolerance, max(abs(self.low), abs(self.high)))
            mark_uninformative(summary, np.array([self.low, self.high]), span)
        return {"name": self.name, "dtype": first.dtype, "shape": list(first.shape),
                "tolerance": first.tolerance.describe(), "samples": len(self.rows),
                "passed": all(r.passed for r in self.rows),
                "failing_samples": sum(not r.passed for r in self.rows),
                "top1_agreement": _weighted(self.top, 0), "top5_agreement": _weighted(self.top, 1),
                "abs_error": {**pct, "max": float(diffs.max()) if diffs.size else 0.0},
                "lsb_histogram": ({str(k): v for k, v in sorted(self.histogram.items())}
                                  if first.tolerance.kind == "quant" else None),
                "range": None if summary.value_range is None else list(summary.value_range),
                "worst_sample": names[worst], "worst_max_abs": self.rows[worst].max_abs,
                "worst_max_rel": self.rows[worst].max_rel, "worst_lsb": self.rows[worst].max_lsb,
                "settled_samples": settled,
                "uninformative": summary.uninformative, "detail": summary.detail}


def _weighted(top: Sequence[tuple[float | None, float | None, int]], k: int) -> float | None:
    """The mean of per-sample agreements weighted by their rows, over the samples where it is defined."""
    pairs = [(t[k], t[2]) for t in top if t[k] is not None]
    total = sum(n for _, n in pairs)
    return sum(v * n for v, n in pairs) / total if total else None


@dataclass
class DatasetResult:
    path: str
    names: list[str]  # the samples compared
    outputs: list[OutputStats]
    worst: int  # index of the worst sample over every output

    @property
    def passed(self) -> bool:
        return all(r.passed for o in self.outputs for r in o.rows)

    batch: Batching = field(default_factory=Batching)
    unreadable: list[tuple[str, str]] = field(default_factory=list)  # (sample, why): not compared

    def to_json(self) -> dict:
        outputs = [o.to_json(self.names) for o in self.outputs]
        return {"path": self.path, "samples": len(self.names), "passed": self.passed,
                "unreadable": [{"sample": name, "error": why} for name, why in self.unreadable],
                "failing_samples": sum(any(not o.rows[i].passed for o in self.outputs)
                                       for i in range(len(self.names))),
                "worst_sample": self.names[self.worst], "outputs": outputs,
                "uninformative_outputs": [o["name"] for o in outputs if o["uninformative"]],
                "batch": self.batch.to_json()}


def compare_dataset(path: str, converted: ConvertedModel, reference: TfliteReference, samples: Sequence[Sample],
                    kernels: str, overrides: ToleranceOverrides | None = None, executors: Executors | None = None,
                    advance: Callable[[str, int], None] | None = None,
                    max_batch: int = DEFAULT_MAX_BATCH) -> DatasetResult:
    """Every sample through both engines (`run_samples`, our executor in chunks of `max_batch`), compared output
    by output. `advance(name, total)` is called as each sample's work begins (the CLI's progress bar).
    `executors`: our side of the verify (parity/executors.py), whose executor of `converted` runs every sample
    and every sample's settlement."""
    executors = executors or Executors()
    stats = [OutputStats(s.name) for s in converted.model_outputs]
    batching = Batching(max(1, min(max_batch, len(samples))))  # no chunk larger than the dataset
    compared: list[Sample] = []
    unreadable: list[tuple[str, str]] = []
    started = None if advance is None else (lambda i: advance(compared[i].name, len(samples)))

    def feeds() -> Iterator[Feed]:
        """The samples' inputs, a sample that cannot be read (a corrupt image) recorded and skipped."""
        for s in samples:
            try:
                feed = s.load()
            except InputDataError as e:
                unreadable.append((s.name, str(e)))
                continue
            compared.append(s)
            yield feed
    badness = []
    for feed, ours, theirs, hybrid in run_samples(converted, reference, feeds(), kernels, executors,
                                                  batching, started):
        rows = [compare(s.name, ours[s.name], theirs[s.name], hybrid, overrides,
                        reference.dequantized(converted.subgraph, s.tflite_tensor)) for s in converted.model_outputs]
        if not all(r.passed for r in rows):  # settled as one verify settles them (partitioned.verify_prepared)
            executors.remember(converted, feed, ours)  # the sample's outputs, bit for bit what a run gives
            settle(ParityReport(path, converted.api_level, kernels, rows), reference, converted, feed, overrides,
                   executors)
        for st, spec, row in zip(stats, converted.model_outputs, rows):
            st.add(row, np.asarray(ours[spec.name]), np.asarray(theirs[spec.name]))
        badness.append(max((not r.passed, r.max_rel) for r in rows))
    if not compared:
        name, why = unreadable[0]
        raise InputDataError(f"--dataset {path}: none of the {len(samples)} samples could be read ({name}: {why})")
    return DatasetResult(path, [s.name for s in compared], stats, max(range(len(badness)), key=badness.__getitem__),
                         batching, unreadable)
