"""Batched execution: `Executor.run_batch` runs N samples, each exactly as `Executor.run` runs it alone.

Inputs are the single-run inputs stacked on a new leading axis: `x` of shape `(N, *input_shape)` (for a
model taking `[1, 224, 224, 3]`, `images[:, None]` of an `(N, 224, 224, 3)` array), and the outputs come
back stacked the same way, `(N, *output_shape)`, so that `run_batch(x)[name][k]` is `run(x[k])[name]`,
bit for bit. Samples go through in chunks of at most `max_batch` (32 by default).

For a chunk of `n` samples the executor prepares, once and kept, a `BatchPlan`: the same NNAPI graph with
a sample axis of `n` (`nnconv.runtime.sample_axis.batch_model`: shapes at `n`, the constants that encode
the batch adapted) run by its own executor, or, when some operation cannot take a sample axis, a loop of
single runs with `reason` naming that operation. In the batched plan:

- integer operations run on all samples at once: their kernels are exact whatever the tensor's size;
- float operations run on all samples at once only when each output element is the same IEEE operation
  whatever the size (`sample_axis.FLOAT_BATCHED`: data movement, + - * /, max, min, comparisons); every
  other float step (convolutions and FULLY_CONNECTED through BLAS, whose rounding may depend on the rows
  one call sees; size-dependent paths of reductions and softmax; transcendental functions; fused steps)
  runs one sample at a time on the single run's own shapes, so float results are bit-identical too;
- the runtime's fusions are the ones a single run makes (a fusion that only applies at `n` samples, such
  as a scale folded into a convolution's filter once the input is large enough, is left out).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from nnconv.errors import InputDataError, NnconvError, ResourceLimitError
from nnconv.nnapi.enums import OperandLifeTime, OperationType
from nnconv.nnapi.model import Model, Operand, Operation, Subgraph
from nnconv.nnapi.program import ConvertedModel, IoTensor
from nnconv.runtime.fusion import FUSED_TYPES, Fusion, plan_fusions
from nnconv.runtime.sample_axis import FLOAT_BATCHED, batch_model, reads_or_writes_float

DEFAULT_MAX_BATCH = 32
# A plan whose per-sample float steps write this many bytes or more per sample runs as a loop of single runs
# instead: a per-sample step writes each sample's output into the stacked array, and the next step reads
# sample 0 back after all the others have passed through the cache. With maps of this size the copies and
# the lost locality cost more than the batched steps save (EfficientNet-B0 float at 224: batched per sample
# 1.12-1.45x a single run; the 64x64 fixtures' largest per-sample outputs, 384 KiB, still gain 1.2-1.7x).
PER_SAMPLE_LOOP_BYTES = 1 << 20
_L = OperandLifeTime


@dataclass
class BatchPlan:
    """How `n` samples run: `executor` runs them at once (None: a loop of single runs, `reason` says which
    operation forced it); `per_sample` names the float steps the batched plan runs one sample at a time."""

    n: int
    executor: Any = None  # nnconv.runtime.executor.Executor at n samples
    reason: str = ""
    per_sample: tuple[str, ...] = ()
    over_memory: bool = False  # the loop is the memory bound's (`max_memory`): fewer samples may fit

    @property
    def batched(self) -> bool:
        return self.executor is not None


@dataclass
class SampleSplit:
    """What the runner of a batched model needs: the operands carrying the `n` samples, the single run's
    main subgraph and the single-run values of the constants adapted to `n`, the fusions to make (those of
    a single run: built at `n` where that step runs batched, else the single run's own, run per sample,
    `forced`), and whether float steps outside `FLOAT_BATCHED` run one sample at a time."""

    n: int
    sampled: frozenset[int]
    single: Subgraph
    originals: dict[int, np.ndarray]
    fusions: list[Fusion]
    forced: frozenset[int]
    exact_float: bool = True

    def runs_per_sample(self, at: int, ops: Sequence[Operation], sg: Subgraph) -> bool:
        if at in self.forced:
            return True
        if not self.exact_float or len(ops) == 1 and ops[0].type in FLOAT_BATCHED:
            return False
        return any(reads_or_writes_float(sg, op) for op in ops)

    def wrap(self, runner: Any, step: Any, ops: Sequence[Operation], inputs: Sequence[int], sg: Subgraph) -> None:
        """Makes `step` (an executor `_Step` computing `ops` from operands `inputs`) run one sample at a time
        on the single run's shapes and constants, when it must."""
        positions = {pos for pos, i in step.dynamic if i in self.sampled}
        if step.fn is None or not positions or not self.runs_per_sample(step.index, ops, sg):
            return
        if any(dt is None or shape is None for _o, dt, shape in step.outputs):
            return
        call, single = step.call, self.single.operands
        one = dataclasses.replace(
            call, inputs=[], cache={},
            in_operands=[dataclasses.replace(od, dimensions=single[i].dimensions)
                         for od, i in zip(call.in_operands, inputs)],
            out_operands=[dataclasses.replace(od, dimensions=single[o].dimensions)
                          for od, o in zip(call.out_operands, step.op.outputs)])
        originals = {pos: self.originals[i] for pos, i in enumerate(inputs) if i in self.originals}
        step.fn = _per_sample(runner, step.fn, one, positions, originals, step.outputs, self.n)


def _per_sample(runner: Any, fn: Callable, one: Any, positions: set[int], originals: dict[int, np.ndarray],
                outputs: Sequence[tuple[int, Any, Any]], n: int) -> Callable:
    def run(call: Any) -> list[np.ndarray]:
        outs = [call.empty(shape, dt) for _o, dt, shape in outputs]
        ins = [originals.get(p, x) for p, x in enumerate(call.inputs)]
        # the kernel's own buffers come from numpy while it runs on one sample: the pool's recorded order
        # of requests is the batched step's, and a pooled per-sample output could be handed out again
        # before it is copied into place
        pool, runner.pool = runner.pool, None
        try:
            for k in range(n):
                one.inputs = [x[k:k + 1] if p in positions else x for p, x in enumerate(ins)]
                for out, r in zip(outs, fn(one)):
                    out[k:k + 1] = r
        finally:
            runner.pool = pool
            one.inputs = []
        return outs
    return run


def _fusion_key(f: Fusion) -> tuple:
    return (f.at, f.absorbed, f.inputs, f.name)


def _fusions(model: Model, kernels: Mapping[OperationType, Callable]) -> list[Fusion]:
    sg = model.main

    def constant(i: int) -> np.ndarray | None:
        od = sg.operands[i]
        return model.constant_value(od) if od.lifetime in (_L.CONSTANT_COPY, _L.CONSTANT_REFERENCE) else None
    return plan_fusions(sg, constant, kernels)


def _spec_at(spec: IoTensor, n: int) -> IoTensor:
    return dataclasses.replace(spec, shape=(n, *tuple(spec.shape)[1:]))


def prepare_batch(executor: Any, n: int, make: Callable[..., Any], exact_float: bool = True) -> BatchPlan:
    """The plan for `n` samples of `executor`'s model; `make(converted, **settings)` builds an executor
    with the settings of `executor` (`Executor.batch_plan` passes its own class)."""
    runner = executor.runner
    if runner.trace is not None:
        return BatchPlan(n, reason="a trace records every single run")
    if n == 1:
        return BatchPlan(n, reason="one sample")
    converted: ConvertedModel = executor.converted
    found = batch_model(converted.model, n)
    if isinstance(found, str):
        return BatchPlan(n, reason=found)
    batched = dataclasses.replace(converted, model=found.model,
                                  inputs=[_spec_at(s, n) for s in converted.inputs],
                                  outputs=[_spec_at(s, n) for s in converted.outputs])
    sg1, sgn = converted.model.main, found.model.main
    originals = {i: converted.model.constant_value(od) for i, od in enumerate(sg1.operands)
                 if od.is_constant and sgn.operands[i].location != od.location}
    # the single run's fusions (none where the runner makes none: relaxed float16, overridden kernels)
    fuses = not runner.relaxed_fp16 and not runner._overridden & FUSED_TYPES
    at_n = {_fusion_key(f): f for f in (_fusions(found.model, runner.kernels) if fuses else [])}
    split = SampleSplit(n, found.sampled, sg1, originals, [], frozenset(), exact_float)
    fusions, forced = [], set()
    for f in _fusions(converted.model, runner.kernels) if fuses else []:
        g = at_n.get(_fusion_key(f))
        ops = [sgn.operations[k] for k in (*f.absorbed, f.at)]
        batched_step = g is not None and not split.runs_per_sample(f.at, ops, sgn)
        fusions.append(g if batched_step else f)
        if not batched_step:
            forced.add(f.at)
    split.fusions, split.forced = fusions, frozenset(forced)
    largest = _largest_per_sample_output(split, sgn)
    if largest is not None and largest[1] >= PER_SAMPLE_LOOP_BYTES:
        name, size = largest
        return BatchPlan(n, reason=f"float step {name} runs one sample at a time on {size / 2**20:.1f} MiB per "
                                   f"sample: single runs keep such maps in cache")
    try:
        ex = make(batched, **executor.settings)
    except NnconvError as e:  # the batched model needs more memory than allowed, say
        return BatchPlan(n, reason=f"at {n} samples: {e}", over_memory=isinstance(e, ResourceLimitError))
    ex.runner.batch = split
    return BatchPlan(n, executor=ex, per_sample=_per_sample_steps(split, sgn))


def _per_sample_steps(split: SampleSplit, sg: Subgraph) -> tuple[str, ...]:
    """The names of the steps the batched plan runs one sample at a time, in order."""
    return tuple(name for name, _k in _per_sample_step_sites(split, sg))


def _largest_per_sample_output(split: SampleSplit, sg: Subgraph) -> tuple[str, int] | None:
    """(name, bytes) of the per-sample step writing the most bytes per sample (outputs at the single run's
    shapes), or None when every step runs batched."""
    best = None
    for name, k in _per_sample_step_sites(split, sg):
        size = sum(split.single.operands[o].byte_size() for o in sg.operations[k].outputs)
        if best is None or size > best[1]:
            best = (name, size)
    return best


def _per_sample_step_sites(split: SampleSplit, sg: Subgraph) -> list[tuple[str, int]]:
    """(name, operation index) of the steps the batched plan runs one sample at a time, in order."""
    by_at = {f.at: f for f in split.fusions}
    absorbed = {a for f in split.fusions for a in f.absorbed}
    names = []
    for k, op in enumerate(sg.operations):
        f = by_at.get(k)
        inputs = op.inputs if f is None else f.inputs
        if k in absorbed or not any(i in split.sampled for i in inputs):
            continue
        ops = [op] if f is None else [sg.operations[r] for r in (*f.absorbed, k)]
        if split.runs_per_sample(k, ops, sg):
            names.append((op.type.name if f is None else f.name, k))
    return names


def run_batch(executor: Any, inputs: Mapping[str, np.ndarray] | Sequence[np.ndarray],
              max_batch: int = DEFAULT_MAX_BATCH, exact_float: bool = True) -> dict[str, np.ndarray]:
    """`Executor.run_batch` (see the module docstring)."""
    if max_batch < 1:
        raise InputDataError(f"max_batch must be at least 1, got {max_batch}")
    arrays = executor._bind(inputs)
    specs = executor.input_specs
    # a recurrent state nobody passed starts at zero in every sample (`bind_inputs` made one sample's zeros)
    given = set(inputs) if isinstance(inputs, Mapping) else None
    missing = [k for k, s in enumerate(specs)
               if s.variable and given is not None and s.name not in given and f"arr_{k}" not in given]
    samples = {a.shape[0] for k, a in enumerate(arrays) if k not in missing and a.ndim}
    for k in missing:
        arrays[k] = np.zeros((next(iter(samples), 0) if len(samples) == 1 else 0, *tuple(specs[k].shape)),
                             specs[k].np_dtype)
    count = None
    for spec, a in zip(specs, arrays):
        shape = tuple(spec.shape)
        if a.ndim != len(shape) + 1 or any(d and d != s for d, s in zip(shape, a.shape[1:])):
            raise InputDataError(f"input '{spec.name}' has shape {list(a.shape)}; a batch of the model's "
                                 f"{list(shape)} stacks samples on a new leading axis: "
                                 f"[N, {', '.join(map(str, shape))}]")
        if count is not None and a.shape[0] != count:
            raise InputDataError(f"input '{spec.name}' has {a.shape[0]} samples, another input {count}")
        count = a.shape[0]
    count = count or 0
    results: dict[str, list[np.ndarray]] = {s.name: [] for s in executor.output_specs}
    for start in range(0, count, max_batch):
        m = min(max_batch, count - start)
        chunk = [a[start:start + m] for a in arrays]
        plan = executor.batch_plan(m, exact_float=exact_float)
        if plan.batched:
            outs = plan.executor.run([c.reshape((m, *tuple(s.shape)[1:])) for s, c in zip(specs, chunk)])
            for s in executor.output_specs:
                results[s.name].append(outs[s.name].reshape((m, *tuple(s.shape))))
        else:
            singles = [executor.run([c[k] for c in chunk]) for k in range(m)]
            for s in executor.output_specs:
                results[s.name].append(np.stack([o[s.name] for o in singles]))
    return {s.name: (np.concatenate(parts) if len(parts) > 1 else parts[0]) if parts
            else np.empty((0, *tuple(s.shape)), dtype=s.np_dtype)
            for s, parts in ((s, results[s.name]) for s in executor.output_specs)}
