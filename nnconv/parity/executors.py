"""Our side of one verify: one `Executor` per converted model (the whole model, a partition, ops lowered
alone) and kernel set, built on first use and reused by every comparison that runs it.

An `Executor` validates its model and prepares its plan when it is built, so a verify that built one per
comparison validated the same model again and again (the whole model up to five times: to bind the input
names, against TFLite's builtin kernels, its reference kernels, its kernel spread, the diagnosis). Each
executor also keeps its outputs on the inputs it last ran: those comparisons all read our outputs on the
same inputs, computed once (`run`).

A kernel set (`KernelSet`) is the arithmetic our executor computes with: NNAPI's (`NNAPI`), a relaxed fp16
driver's (`RELAXED_FP16`, simulated), TFLite's where NNAPI's differs (parity/settle.py makes that one per
model), or a combination; each runs plain or traced (per-op parity keeps every intermediate, and a trace
turns fusion and the buffer pool off, so a traced executor has a plan of its own, `intermediates`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from nnconv.nnapi.program import ConvertedModel
from nnconv.runtime.executor import Executor
from nnconv.runtime.trace import Trace


@dataclass(frozen=True)
class KernelSet:
    """The arithmetic of an executor: its name stands for the executor options it adds, within one verify
    and for one model (`Executors` keeps one executor per model and name)."""

    name: str
    options: Mapping[str, Any] = field(default_factory=dict)

    def with_(self, other: "KernelSet") -> "KernelSet":
        """Both kernel sets at once (`other`'s options over this one's)."""
        if not self.options:
            return other
        return KernelSet(f"{self.name}, {other.name}", {**self.options, **other.options})


NNAPI = KernelSet("NNAPI")
RELAXED_FP16 = KernelSet("relaxed fp16", {"relaxed_fp16": True})


class Executors:
    """The executors of one verify (the module docstring). `options`: what every executor is built with
    (`--max-memory`; tests inject a faulty kernel with `{"kernel_overrides": {...}}`)."""

    def __init__(self, options: Mapping[str, Any] | None = None) -> None:
        self.options: dict[str, Any] = dict(options or {})
        # (model, kernel set, traced) -> the model (kept, so that its id is not reused), its executor, and
        # the inputs it last ran with their outputs
        self._built: dict[tuple[int, str, bool], tuple[ConvertedModel, Executor, list]] = {}
        # (prepared conversion, subgraph, ops) -> the prepared conversion (kept, as above) and the ops lowered
        self._alone: dict[tuple[int, int, tuple[int, ...]], tuple[Any, ConvertedModel]] = {}

    def executor(self, converted: ConvertedModel, kernels: KernelSet = NNAPI, traced: bool = False) -> Executor:
        """The executor of `converted` with `kernels`, built on first use and kept."""
        return self._entry(converted, kernels, traced)[1]

    def run(self, converted: ConvertedModel, inputs: Mapping[str, np.ndarray],
            kernels: KernelSet = NNAPI) -> dict[str, np.ndarray]:
        """Our outputs by name on `inputs` (keyed by input name), run once for the same inputs object: the
        comparisons of one verify share them (callers read them, never write)."""
        _, executor, last = self._entry(converted, kernels, False)
        if last and last[0] is inputs:
            return last[1]
        outputs = executor.run(dict(inputs))
        last[:] = [inputs, outputs]
        return outputs

    def remember(self, converted: ConvertedModel, inputs: Mapping[str, np.ndarray],
                 outputs: dict[str, np.ndarray], kernels: KernelSet = NNAPI) -> None:
        """`outputs` as `run(converted, inputs, kernels)` would compute them (a batched run of the same
        executor, bit-identical to one run per sample), so that comparisons of that sample reuse them."""
        self._entry(converted, kernels, False)[2][:] = [inputs, outputs]

    def intermediates(self, converted: ConvertedModel, inputs: Mapping[str, np.ndarray],
                      kernels: KernelSet = NNAPI) -> dict[int, np.ndarray]:
        """Every value an operation of the main graph computes on `inputs`, by NNAPI operand (the traced
        executor's run). The values are the caller's: the executor keeps none of them after the run."""
        _, executor, _ = self._entry(converted, kernels, True)
        trace = executor.runner.trace
        trace.values = {}
        executor.run(dict(inputs))
        values, trace.values = trace.values, {}
        return values

    def lowered_alone(self, prepared: Any, ops: Sequence[int], subgraph: int = 0) -> ConvertedModel:
        """`ops` of the prepared model lowered as a model of their own (per-op parity's and a failing
        partition's diagnosis), lowered once per verify: `prepared.lower_ops` does not keep them, and per-op
        parity may ask twice (against TFLite's builtin, then its reference kernels)."""
        key = (id(prepared), subgraph, tuple(ops))
        found = self._alone.get(key)
        if found is None:
            found = self._alone[key] = (prepared, prepared.lower_ops(list(ops), subgraph))
        return found[1]

    def _entry(self, converted: ConvertedModel, kernels: KernelSet,
               traced: bool) -> tuple[ConvertedModel, Executor, list]:
        key = (id(converted), kernels.name, traced)
        found = self._built.get(key)
        if found is None:
            options = {**self.options, **kernels.options}
            if traced:
                options["trace"] = Trace(keep=True)
            found = self._built[key] = (converted, Executor(converted, **options), [])
        return found
