"""One `verify` of one model with every option: inputs (seeded, ranged, file, image), the comparison with
TFLite or with saved reference outputs, per-op parity, the simulated relaxed-fp16 driver, and the report's
metadata. `nnconv.verify(...)` and `nnconv verify` both return / print this report.

Relaxed fp16 (`relax_fp16`): the float32 graph runs on the executor as a relaxed driver would
(nnconv/runtime/relaxed.py says exactly what is simulated) and each output is compared with TFLite's
float32 output under the relaxed tolerance below; the report also gives the extra error over the float32
executor. With `per_op`, the op where the fp16 error first becomes large is named with the same blame
rule as per-op parity (parity/per_op.py).

| relaxed check | passes when | why |
| --- | --- | --- |
| float outputs | max |diff| <= 2^-14 + 1e-2 x max |expected| (the output's magnitude) | float16 keeps 11 significant bits (relative step 2^-11 ~ 4.9e-4 per rounding), so its error scales with the values' magnitude, as the CTS relaxed tolerances (atol + rtol x |expected|) do: 1e-2 of the magnitude allows ~20 roundings to add up in the same direction, while overflow (inf) and catastrophic cancellation exceed it. The absolute part is float16's smallest normal, 2^-14 ~ 6.1e-5: below it float16 keeps a fixed absolute step and a driver may flush to zero. (It was 1e-3, which on an output of magnitude 0.015 allowed 7.6% of it; now 1.4%) |
"""

from __future__ import annotations

import functools
import os
import time
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from nnconv.errors import ConversionError, InputDataError, NnconvError
from nnconv.lowering.convert import ConversionOptions
from nnconv.nnapi.levels import DEFAULT_API_LEVEL, RELAX_FP16_MIN_API, ApiLevel
from nnconv.nnapi.program import ConvertedModel, IoTensor
from nnconv.delegate.conversion import DelegateConversion
from nnconv.parity.conflicts import option_conflicts
from nnconv.parity.executors import RELAXED_FP16, Executors
from nnconv.parity.inputs import bind_reference, image_inputs, ranged_inputs
from nnconv.parity.partitioned import bind_model_inputs, is_nnapi_file, verify_model, verify_prepared
from nnconv.parity.per_op import PASS, per_op_parity
from nnconv.parity.preprocess import ImagePreprocessing
from nnconv.parity.tflite_runner import (
    BUILTIN_KERNELS,
    REFERENCE_KERNELS,
    XNNPACK,
    TfliteRunner,
    interpreter_version,
)
from nnconv.parity.tolerances import ToleranceOverrides
from nnconv.parity.verify import (ParityReport, TfliteReference, attach_operands, compare,
                                  random_inputs)
from nnconv.parity.report import (RELAXED_TOLERANCE, SCHEMA_VERSION, VerifyReport,  # re-exported: batch.py, tests
                                  settlement_notes)
from nnconv.pipeline import PreparedConversion, prepare
from nnconv.runtime.batch import DEFAULT_MAX_BATCH
from nnconv.runtime.blas_threads import use_threads
from nnconv.runtime.executor import Executor

@dataclass
class VerifyOptions:
    """Everything `verify` can be asked. `inputs` / `image` / random (`seed`, `input_range`) are exclusive;
    `reference` replaces TFLite by saved outputs; `executor_options` go to every `Executor` (tests inject
    a faulty kernel with `{"kernel_overrides": {...}}`)."""

    # the command line's ApiLevel, passed on as it is; a library caller's number is checked once, by `prepare`
    api_level: ApiLevel | int = DEFAULT_API_LEVEL
    conversion: ConversionOptions | None = None
    kernels: str = BUILTIN_KERNELS
    seed: int | None = None
    input_range: tuple[float, float] | None = None
    inputs: Mapping[str, np.ndarray] | None = None
    inputs_source: str = ""  # the file the inputs came from, for the report
    image: str | None = None
    reference: Mapping[str, np.ndarray] | None = None
    reference_source: str = ""
    per_op: bool = False
    relax_fp16: bool = False
    allow_partial: bool = False
    overrides: ToleranceOverrides | None = None
    executor_options: Mapping[str, Any] = field(default_factory=dict)
    threads: int = 1  # our executor's BLAS threads and TFLite's num_threads, alike (`--threads`)
    dataset: str | None = None  # `--dataset PATH` (parity/samples.py), with at most `samples` samples
    samples: int | None = None
    batch: int = DEFAULT_MAX_BATCH  # --dataset: samples per batched run of our executor (1: one at a time)
    max_bytes: int | None = None  # bound of each .npy/.npz sample read (`--max-memory`)
    save_repro: str | None = None  # with `per_op`: the folder of the first divergent op's repro (parity/repro.py)
    fail_on_uninformative: bool = False  # `--fail-on uninformative`: a PASS on constant outputs fails (exit 1)
    # `--input-layout`, `--input-mean`, `--input-std`: how images (--image, --dataset) become inputs
    preprocessing: ImagePreprocessing | None = None

    def image_preprocessing(self) -> ImagePreprocessing:
        """`preprocessing` with `--input-range` (parity/preprocess.py: either says how pixels become values)."""
        return replace(self.preprocessing or ImagePreprocessing(), value_range=self.input_range)

    @property
    def simulates_relaxed(self) -> bool:
        """`relax_fp16` at a level that has relaxComputationFloat32toFloat16 (API 28): below it the flag does
        not exist, the model computes in float32, and no relaxed driver is simulated (the CLI warns)."""
        return self.relax_fp16 and self.api_level >= RELAX_FP16_MIN_API

    def given(self) -> set[str]:
        """The options set, by the names the command line gives them (what `option_conflicts` reads)."""
        fields = {"--inputs": self.inputs, "--seed": self.seed, "--image": self.image,
                  "--input-range": self.input_range, "--reference": self.reference, "--dataset": self.dataset,
                  "--samples": self.samples, "--save-repro": self.save_repro,
                  "--per-op": self.per_op or None, "--relax-fp16": self.relax_fp16 or None}
        if self.preprocessing is not None:
            fields.update({"--input-layout": self.preprocessing.layout, "--input-mean": self.preprocessing.mean,
                           "--input-std": self.preprocessing.std})
        return {name for name, value in fields.items() if value is not None}

    def check(self) -> None:
        conflicts = option_conflicts(self.given())
        if conflicts:
            raise InputDataError(conflicts[0])
        if self.image is not None or self.dataset is not None:
            self.image_preprocessing().check()


def verify(model: str | os.PathLike, options: VerifyOptions | None = None,
           advance: Callable[[str, int], None] | None = None) -> VerifyReport:
    """Verifies one model (.tflite, or a .nnapi file with its source) as `nnconv verify` does. `advance`:
    called with each `--dataset` sample's name and the count before it runs (a progress bar)."""
    return Verification(model, options or VerifyOptions()).report(advance)


def save_reference_outputs(path: str | os.PathLike, opts: VerifyOptions) -> dict[str, np.ndarray]:
    """TFLite's outputs (by output name) on the inputs `opts` describe: what `--save-reference` writes."""
    return Verification(path, opts).tflite_outputs()


class Verification:
    """One verify of one model with one set of options, prepared once and shared by every comparison it
    makes (`--dataset`'s worst sample and `--save-reference` included): the conversion (read, rewritten,
    checked, lowered and validated once, nnconv/pipeline.py), TFLite's side (`TfliteReference`) and ours
    (`Executors`: one executor per model and kernel set, parity/executors.py)."""

    def __init__(self, model: str | os.PathLike, options: VerifyOptions) -> None:
        self.path = os.fspath(model)
        self.options = options
        self.executors = Executors(options.executor_options)

    @cached_property
    def conversion(self) -> PreparedConversion | DelegateConversion:
        return prepare(self.path, self.options.api_level, self.options.conversion)

    @cached_property
    def reference(self) -> TfliteReference:
        return TfliteReference.of(self.conversion.model, self.conversion.source)

    def report(self, advance: Callable[[str, int], None] | None = None) -> VerifyReport:
        """The verify's report. `advance`: called with each `--dataset` sample's name and the count before it
        runs (a progress bar)."""
        opts = self.options
        with use_threads(opts.threads):  # set here, in the process that runs: --jobs workers are spawned
            report = self._dataset(advance) if opts.dataset is not None else self._verify(opts)
        report.fail_on_uninformative = opts.fail_on_uninformative
        return report

    def tflite_outputs(self) -> dict[str, np.ndarray]:
        """TFLite's outputs (by output name) on the inputs the options describe (`--save-reference`)."""
        prepared, opts = self.conversion, self.options
        sg = prepared.model.subgraphs[0]
        specs = prepared.io_specs(sg.inputs)
        feed = model_inputs(specs, opts)
        # a model with MediaPipe custom ops runs as its builtin twin (parity/builtin_twin.py)
        runner = TfliteRunner(self.reference.source, kernels=opts.kernels)
        runner.run({s.tflite_tensor: feed[s.name] for s in specs})
        return {spec.name: runner.tensor(t) for spec, t in zip(prepared.io_specs(sg.outputs), sg.outputs)}

    def _dataset(self, advance: Callable[[str, int], None] | None) -> VerifyReport:
        """Every sample of the dataset compared (parity/dataset.py), then one ordinary verify of the worst
        sample (with `--per-op` if asked) on the same conversion and executors: its report carries the
        dataset's summary."""
        from nnconv.parity.dataset import compare_dataset
        from nnconv.parity.samples import dataset_samples
        from nnconv.limits import default_max_memory
        opts, path = self.options, self.path
        opts.check()
        start = time.monotonic()
        if is_nnapi_file(path):
            raise InputDataError(f"{path}: --dataset needs the .tflite model")
        prepared = self.conversion
        try:
            lowered = prepared.lowered(allow_partial=False, prefer_whole=True)
        except ConversionError as e:
            raise ConversionError(f"{e}; --dataset needs a model that lowers whole", e.diagnostics) from None
        converted = lowered.whole.converted
        samples = dataset_samples(opts.dataset, converted.inputs, opts.image_preprocessing(),
                                  opts.max_bytes or default_max_memory(), opts.samples)
        prepared_at = time.monotonic()
        result = compare_dataset(os.fspath(opts.dataset), converted, self.reference, samples, opts.kernels,
                                 opts.overrides, self.executors, advance, opts.batch)
        dataset_seconds = time.monotonic() - prepared_at
        again = replace(opts, dataset=None, samples=None, input_range=None, preprocessing=None,
                        inputs=next(s for s in samples if s.name == result.names[result.worst]).load(),
                        inputs_source=f"{opts.dataset} sample {result.names[result.worst]}")
        report = self._verify(again)
        report.meta["inputs"] = {"dataset": opts.dataset,
                                 "range": list(opts.input_range) if opts.input_range else None,
                                 "preprocessing": opts.image_preprocessing().describe()}
        report.dataset = result.to_json()
        report.timings[1:1] = [("dataset", dataset_seconds)]
        report.seconds = time.monotonic() - start
        return report

    def _verify(self, opts: VerifyOptions) -> VerifyReport:
        """One comparison on one set of inputs: `self.options`, or those of `--dataset`'s worst sample."""
        opts.check()
        start = time.monotonic()
        path = self.path
        if is_nnapi_file(path):
            if opts.per_op or opts.relax_fp16 or opts.reference is not None or opts.image is not None or \
                    opts.input_range is not None:
                raise InputDataError(f"{path}: --per-op, --relax-fp16, --reference, --image and --input-range need "
                                     "the .tflite model (a .nnapi file is verified against its source on seeded "
                                     "inputs)")
            parity = verify_model(path, opts.api_level, opts.conversion, inputs=opts.inputs, seed=opts.seed or 0,
                                  kernels=opts.kernels, overrides=opts.overrides,
                                  executor_options=opts.executor_options)
            return VerifyReport(parity, _meta(opts, path), seconds=time.monotonic() - start)
        prepared = self.conversion
        try:
            lowered = prepared.lowered(allow_partial=opts.allow_partial, prefer_whole=True)
        except ConversionError as e:
            if opts.allow_partial:
                raise
            raise ConversionError(f"{e}; {self._partial_hint()}", e.diagnostics) from None
        reference = self.reference
        whole = lowered.whole is not None
        partitions = lowered.models
        # (a recurrent state the delegate feeds as an input is no model input: it starts at zero, `bind_inputs`)
        specs = [s for s in partitions[0].inputs if not s.variable] if whole else \
            prepared.io_specs(prepared.model.subgraphs[0].inputs)
        feed = model_inputs(specs, opts)
        meta = {**_meta(opts, path), "model_inputs": [_input_json(s) for s in specs]}
        timings = [("convert", time.monotonic() - start)]
        if opts.reference is not None:
            if not whole:
                raise InputDataError("--reference compares the model's outputs: the model must lower whole")
            parity = self._compare_with_reference(partitions[0], feed, opts)
            timings.append(("compare", time.monotonic() - start - timings[0][1]))
            return VerifyReport(parity, meta, seconds=time.monotonic() - start, timings=timings)
        parity = verify_prepared(prepared, inputs=feed, kernels=opts.kernels, overrides=opts.overrides,
                                 executors=self.executors, allow_partial=opts.allow_partial, reference=reference)
        report = VerifyReport(parity, meta, timings=timings)
        timings.append(("compare", time.monotonic() - start - timings[0][1]))
        if opts.per_op or opts.simulates_relaxed:
            deep = time.monotonic()
            self._deep_checks(report, partitions, specs, feed, opts, whole)
            timings.append(("per-op and relaxed fp16" if opts.per_op and opts.simulates_relaxed else
                            "per-op" if opts.per_op else "relaxed fp16", time.monotonic() - deep))
        if report.per_op is not None:  # the intermediates were compared: an uninformative output says what they show
            from nnconv.parity.verify import INPUTS_HINT, UNINFORMATIVE_HINT
            for row in report.parity.outputs:
                if row.uninformative:
                    row.detail = row.detail.replace(UNINFORMATIVE_HINT, f"{INPUTS_HINT}; {report.per_op.summary()}")
            report.per_op.notes += settlement_notes(report.parity.outputs, report.per_op)
        report.seconds = time.monotonic() - start
        return report

    def _partial_hint(self) -> str:
        """The way on for a model that does not lower whole: --allow-partial, unless TFLite cannot run the
        model either (a custom op its interpreter lacks), where --allow-partial would only end in TFLite's
        refusal."""
        try:
            TfliteRunner(self.reference.source)
        except NnconvError as e:
            return (f"TFLite cannot run it either ({e}), so there is nothing to verify against; `nnconv check` "
                    "reports which ops NNAPI takes")
        return "verify it partition by partition with --allow-partial"

    def _compare_with_reference(self, converted: ConvertedModel, feed: Mapping[str, np.ndarray],
                                opts: VerifyOptions) -> ParityReport:
        """Our executor against saved outputs (`--reference`), with the tolerance policy of TFLite's."""
        expected = bind_reference(opts.reference or {}, converted.model_outputs)
        ours = self.executors.run(converted, feed)
        reference = self.reference
        outputs = attach_operands([compare(s.name, ours[s.name], expected[s.name], reference.hybrid, opts.overrides,
                                           reference.dequantized(converted.subgraph, s.tflite_tensor))
                                   for s in converted.model_outputs], converted)
        return ParityReport(model=self.path, api_level=converted.api_level,
                            kernels=f"reference outputs {opts.reference_source or '(given)'}", outputs=outputs)

    def _deep_checks(self, report: VerifyReport, partitions: Sequence[ConvertedModel], specs: Sequence[IoTensor],
                     feed: Mapping[str, np.ndarray], opts: VerifyOptions, whole: bool) -> None:
        """Per-op parity and the relaxed-fp16 simulation, both on TFLite's own tensors (kept by the
        interpreter): each converted model is fed the interpreter's values at its inputs."""
        prepared, reference, executors = self.conversion, self.reference, self.executors
        twin = reference.twin
        source = twin if twin is not None else reference.source
        # Intermediates are only readable from TFLite's own kernels (a delegate hides the tensors it computes).
        kernels = BUILTIN_KERNELS if opts.kernels == XNNPACK else opts.kernels
        runner = TfliteRunner(source, kernels=kernels, preserve_all_tensors=True)
        runner.run({s.tflite_tensor: np.asarray(feed[s.name]) for s in specs})
        loose = reference.hybrid and twin is None
        per_op_runner = runner
        if opts.per_op:
            report.per_op = per_op_parity(prepared, partitions, runner.tensor, loose, opts.overrides, executors)
            report.per_op.kernels = kernels
            if kernels != opts.kernels:
                report.per_op.kernels_note = (f"not --kernels {opts.kernels}, which hides the intermediate tensors it "
                                              f"computes")
            if kernels == BUILTIN_KERNELS and any(e.status != PASS and e.lsb is not None
                                                  for e in report.per_op.entries):
                # As for outputs (partitioned.py): quantized tensors are judged against TFLite's reference kernels,
                # whose integer arithmetic the NNAPI reference follows, when they explain more of the differences.
                try:
                    ref_runner = TfliteRunner(source, kernels=REFERENCE_KERNELS, preserve_all_tensors=True)
                    ref_runner.run({s.tflite_tensor: np.asarray(feed[s.name]) for s in specs})
                except NnconvError:  # TFLite's reference kernels cannot run the model (reference_probe.py)
                    ref_runner = None
                again = None if ref_runner is None else \
                    per_op_parity(prepared, partitions, ref_runner.tensor, loose, opts.overrides, executors)
                if again is not None and again.out_of_tolerance < report.per_op.out_of_tolerance:
                    again.kernels = REFERENCE_KERNELS
                    again.kernels_note = (f"not --kernels {opts.kernels}: against TFLite's builtin kernels "
                                          f"{report.per_op.out_of_tolerance} ops were out of tolerance, against its "
                                          f"reference kernels, whose integer arithmetic NNAPI follows, "
                                          f"{again.out_of_tolerance}")
                    report.per_op = again
                    per_op_runner = ref_runner
            first = report.per_op.first_divergent
            if opts.save_repro is not None and first is not None:
                from nnconv.parity.repro import save_repro
                report.repro = save_repro(opts.save_repro, prepared.model, partitions[0].subgraph, first.op_index,
                                          per_op_runner.tensor, functools.partial(_run_repro, opts=opts))
                report.repro["command"] = (f"nnconv verify {os.path.join(opts.save_repro, 'repro.tflite')} --inputs "
                                           f"{os.path.join(opts.save_repro, 'inputs.npz')} --api-level "
                                           f"{opts.api_level} --kernels {report.per_op.kernels}")
        if opts.simulates_relaxed:
            fp32 = {o.name: o for o in report.parity.outputs}
            rows = []
            for k, cm in enumerate(partitions):
                ours = executors.run(cm, {s.name: runner.tensor(s.tflite_tensor) for s in cm.inputs if not s.variable},
                                     RELAXED_FP16)
                for s in cm.model_outputs:
                    name = s.name if whole else f"p{k}/{s.name}"
                    row = compare(name, ours[s.name], runner.tensor(s.tflite_tensor), loose, RELAXED_TOLERANCE)
                    before = fp32.get(name)
                    if before is not None and np.isfinite(row.max_abs):
                        row.detail = f"extra max |diff| over the float32 executor: {row.max_abs - before.max_abs:.3g}"
                    rows.append(row)
            report.relaxed = rows
            if opts.per_op:
                report.relaxed_per_op = per_op_parity(prepared, partitions, runner.tensor, loose, RELAXED_TOLERANCE,
                                                      executors, RELAXED_FP16)


def model_inputs(specs: Sequence[IoTensor], opts: VerifyOptions) -> dict[str, np.ndarray]:
    """The inputs of one verify, keyed by input name (given, from the image, or seeded random)."""
    if opts.inputs is not None:
        return bind_model_inputs(specs, opts.inputs)
    if opts.image is not None:
        return image_inputs(opts.image, specs, opts.image_preprocessing())
    seed = opts.seed or 0
    if opts.input_range is not None:
        return ranged_inputs(specs, seed, *opts.input_range)
    return random_inputs(list(specs), seed)


def _run_repro(data: bytes, inputs: Mapping[str, np.ndarray], opts: VerifyOptions) -> Mapping[str, np.ndarray]:
    """nnconv's outputs of a one-op repro (parity/repro.py) on `inputs`, converted as the model was."""
    whole = prepare(data, opts.api_level, opts.conversion).lowered(allow_partial=False).whole
    if whole is None:
        raise NnconvError("the one-op repro does not lower whole")
    return Executor(whole.converted, **dict(opts.executor_options)).run(dict(inputs))


def _input_json(spec: IoTensor) -> dict:
    """A model input as `-v` and JSON `model_inputs` show it: name, dtype, shape and quantization."""
    return {"name": spec.name, "dtype": spec.dtype, "shape": list(spec.shape),
            "scale": spec.scale or None, "zero_point": spec.zero_point if spec.scale else None}


def _meta(opts: VerifyOptions, path: str) -> dict:
    if opts.inputs is not None:
        inputs: dict[str, Any] = {"file": opts.inputs_source or "(given arrays)"}
    elif opts.image is not None:
        inputs = {"image": opts.image, "range": list(opts.input_range) if opts.input_range else None,
                  "preprocessing": opts.image_preprocessing().describe()}
    else:
        inputs = {"seed": opts.seed or 0, "range": list(opts.input_range) if opts.input_range else None}
    target = (opts.conversion or ConversionOptions()).target
    return {"target": target.value, "inputs": inputs,
            "interpreter": {"package": "ai-edge-litert", "version": interpreter_version()},
            "tolerance_overrides": opts.overrides.to_json() if opts.overrides else None}
