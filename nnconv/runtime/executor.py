"""Runs an NNAPI model on the numpy kernels.

`SubgraphRunner` executes one subgraph's operations in order, keeping values by operand index and
releasing each intermediate after the last step that reads it (a fused step reads, at its own place, what
its operations read); the plan is checked when it is made, so a value missing when a step runs is found
then, as nnconv's bug (`_check_plan`). `Executor` wraps a `ConvertedModel` (or a bare `Model`):
inputs by TFLite tensor name (or numpy's positional `arr_0`, `arr_1`, ...), outputs by name, dtypes as in
the original TFLite model.

Speed: a runner builds each subgraph's run plan once (operand lists, kernels, constant inputs, release
lists) and keeps one memo per operation (`KernelCall.cache`) in which kernels store what they derive from
constant operands (converted filters, requantization constants); both assume the model is not mutated
after the first run. `Executor.run` sets numpy's BLAS to `blas_threads` (1, or `--threads N`) threads.
Without a trace, some float32 operation pairs run as one fused step (`nnconv.runtime.fusion`): swish,
a per-channel scale folded into the next convolution's filter, and a standalone activation finishing its
producer's output in place; a batch normalization's MUL + ADD by constants (float32, or quant8 as one
table gather). An operation that reads only constants
(e.g. the CAST of a float16 filter to float32, x38 per run in MediaPipe's pose detector) runs once, when
its subgraph is planned, and its outputs then serve every run as constants do (see `SubgraphRunner._fold`).
`Executor.run_batch` runs samples stacked on a leading axis (`nnconv.runtime.batch`).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np

from nnconv.runtime.batch import DEFAULT_MAX_BATCH, BatchPlan, SampleSplit, prepare_batch, run_batch
from nnconv.runtime.blas_threads import default_threads, limit_blas_threads
from nnconv.errors import ExecutionError, InputDataError, InternalError
from nnconv.runtime.kernels import KERNELS, KernelCall
from nnconv.runtime.fusion import FUSED_TYPES, Fusion, plan_fusions
from nnconv.runtime.buffers import BufferPool
from nnconv.runtime.kernels.registry import ExecutionOptions
from nnconv.runtime.relaxed import fp16_storage
from nnconv.runtime.replacements import Replacements
from nnconv.runtime.trace import Trace
from nnconv.nnapi.enums import OperandLifeTime, OperandType, OperationType
from nnconv.nnapi.levels import MAX_FEATURE_LEVEL, feature_level
from nnconv.nnapi.memory import ensure_fits, last_reads
from nnconv.nnapi.model import Model, Operand, Operation, Subgraph
from nnconv.nnapi.operations import spec_of
from nnconv.nnapi.program import ConvertedModel, IoTensor, bind_inputs, input_dtype_error
from nnconv.nnapi.validate import validate_model

_L = OperandLifeTime


@dataclass
class _Step:
    """One operation of a subgraph with everything about it that stays the same from run to run, so that a
    run does only the arithmetic: its `KernelCall` (reused: only `inputs` changes), the kernel, the
    constant inputs resolved once, the declared output dtypes and shapes, and the release list."""

    op: Operation
    index: int  # the operation's index in its subgraph
    name: str  # what the profile calls it: the operation type, "LOGISTIC+MUL" for a fused swish
    fn: Callable | None  # the kernel (None: raise when reached, as an unknown op only fails if it runs)
    call: KernelCall
    fixed: list[np.ndarray | None]  # per input: the constant / omitted / subgraph-index value (runtime: None)
    dynamic: list[tuple[int, int]]  # (input position, operand index) of the values known only at run time
    outputs: list[tuple[int, np.dtype | None, tuple[int, ...] | None]]  # operand, dtype to hold, shape to check
    release: list[int]  # temporaries whose last reader this operation is


class SubgraphRunner:
    """Executes subgraphs of one model; IF / WHILE kernels call back into `run_subgraph`.

    `profile`, when set, is called as `profile(op_index, op_name, seconds)` after each kernel call of the
    main subgraph, timed on `profile_clock` (benchmarks/run.py --profile). `pool` reuses output buffers
    across runs (see `nnconv.runtime.buffers`); it is off when a trace keeps intermediate values.

    `kernel_overrides` replaces the kernels of some operation types for this runner only (tests inject a
    faulty kernel this way to check that per-op parity blames it); `relaxed_fp16` simulates a driver with
    relaxed float32 precision (nnconv/runtime/relaxed.py); `options` are the execution's settings (loop
    timeout), NNAPI's defaults when None; `replacements`, operations a caller computes its own way (verify's
    TFLite arithmetic: nnconv/runtime/replacements.py)."""

    def __init__(self, model: Model, trace: Trace | None = None,
                 kernel_overrides: Mapping[OperationType, Callable] | None = None,
                 relaxed_fp16: bool = False, options: ExecutionOptions | None = None,
                 replacements: Replacements | None = None) -> None:
        self.model = model
        self.trace = trace
        self.kernels = {**KERNELS, **(kernel_overrides or {})}
        self._overridden = set(kernel_overrides or {})
        self.relaxed_fp16 = relaxed_fp16
        self.options = options or ExecutionOptions()
        self.replacements = replacements
        self._constants: dict[tuple[int, int], np.ndarray] = {}
        # (subgraph, operation index) -> that operation's `KernelCall.cache` (constant-derived values)
        self._op_caches: dict[tuple[int, int], dict] = {}
        self._plans: dict[int, list[_Step]] = {}  # subgraph index -> its operations' run-invariant facts
        self.peak_live_values = 0  # most non-constant values held at once (shows intermediates are freed)
        # Control flow makes a run's requests vary with the data: only single-graph models plan their memory.
        self.pool: BufferPool | None = (None if trace is not None and trace.keep
                                        else BufferPool(plan=len(model.subgraphs()) == 1))
        # buffers of the operations prepared for small maps, shared by tag and shape (`KernelCall.kept`)
        self.kept_buffers: dict[tuple, np.ndarray] = {}
        self.profile: Callable[[int, str, float], None] | None = None
        self.profile_clock: Callable[[], float] = time.perf_counter
        self._depth = 0
        self.batch: SampleSplit | None = None  # set on the runner of a batched model (`nnconv.runtime.batch`)

    def constant(self, sg_index: int, idx: int, operand: Operand) -> np.ndarray:
        key = (sg_index, idx)
        v = self._constants.get(key)
        if v is None:
            v = self.model.constant_value(operand)
            if self.relaxed_fp16:
                v = fp16_storage(v, operand.type)
            self._constants[key] = v
        return v

    def run_subgraph(self, sg_index: int, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Runs `model.subgraphs()[sg_index]` (0 = main) on arrays in storage dtypes."""
        sg = self.model.subgraphs()[sg_index]
        if len(inputs) != len(sg.input_indexes):
            raise ExecutionError(f"subgraph {sg_index} takes {len(sg.input_indexes)} inputs, got {len(inputs)}")
        values: dict[int, np.ndarray] = {}
        for idx, arr in zip(sg.input_indexes, inputs):
            values[idx] = fp16_storage(arr, sg.operands[idx].type) if self.relaxed_fp16 else arr
        plan = self._plans.get(sg_index)
        if plan is None:
            plan = self._plans[sg_index] = self._plan(sg_index, sg)
        pool = self.pool
        if pool is not None and self._depth == 0:
            pool.start_run()
        trace = self.trace if sg_index == 0 else None
        profile = self.profile if sg_index == 0 else None
        self._depth += 1
        # inf and NaN are the operations' defined float results: numpy's warnings about them are off for
        # the whole run (kernels called on their own set their own error state)
        try:
            with np.errstate(all="ignore"):
                self._run_steps(sg_index, sg, plan, values, trace, profile)
        finally:
            self._depth -= 1
        if pool is not None and self._depth == 0:
            pool.finish_run()
        out = []
        for o in sg.output_indexes:
            if o not in values:
                raise ExecutionError(f"output operand {o} of subgraph {sg_index} was never computed")
            out.append(values[o])
        return out

    def _run_steps(self, sg_index: int, sg: Subgraph, plan: list[_Step], values: dict[int, np.ndarray],
                   trace: Trace | None, profile: Callable[[int, str, float], None] | None) -> None:
        """The plan's kernels in order, each output checked against its operand and held, each
        intermediate released after its last reader. The hot loop of every run: per operation it does only
        what a run can change (attributes read once into locals, the pool's bookkeeping skipped while its
        planned arena serves the requests)."""
        pool = self.pool
        relaxed = self.relaxed_fp16
        peak = self.peak_live_values
        try:
            for step in plan:
                ins = step.fixed.copy()
                for pos, i in step.dynamic:
                    v = values.get(i)
                    ins[pos] = v if v is not None else self._value(sg_index, sg, i, values, step.op.type.name)
                call, fn = step.call, step.fn
                if fn is None:
                    raise ExecutionError(f"no kernel for NNAPI operation {step.op.type.name}")
                call.inputs = ins
                if profile is None:
                    outs = fn(call)
                else:
                    clock = self.profile_clock
                    t0 = clock()
                    outs = fn(call)
                    profile(step.index, step.name, clock() - t0)
                call.inputs = []  # hold no input beyond its release
                if len(outs) != len(step.outputs):
                    raise ExecutionError(f"{step.op.type.name} produced {len(outs)} outputs, the model "
                                         f"declares {len(step.outputs)}")
                counted = pool is not None and pool.mode != "planned"
                for (o, dt, shape), arr in zip(step.outputs, outs):
                    if arr.__class__ is not np.ndarray or (dt is not None and arr.dtype != dt) or (
                            shape is not None and arr.shape != shape):
                        arr = _conform(arr, sg.operands[o], step.op.type.name)
                    if relaxed:
                        arr = fp16_storage(arr, sg.operands[o].type)
                    values[o] = arr
                    if counted:
                        pool.hold(arr)
                if trace is not None:
                    op = step.op
                    trace.record(step.index, op.type.name, op.outputs, [values[o] for o in op.outputs],
                                 names=[sg.operands[o].name for o in op.outputs], source_op=op.source_op)
                if len(values) > peak:
                    peak = len(values)
                # Release intermediates whose last reader was this operation.
                for i in step.release:
                    v = values.pop(i, None)
                    if counted and v is not None:
                        pool.drop(v)
        finally:
            # max: an IF / WHILE body run inside a kernel stored its own peak meanwhile
            self.peak_live_values = max(self.peak_live_values, peak)

    def _plan(self, sg_index: int, sg: Subgraph) -> list[_Step]:
        """Per-operation facts that do not change between runs: operand descriptions, the kernel, constant
        and subgraph-reference inputs resolved once, and which intermediates to release afterwards."""
        keep = set(sg.output_indexes)
        fused = {f.at: f for f in self._fusions(sg_index, sg)}
        absorbed = {a for f in fused.values() for a in f.absorbed}
        # Each value is released after the last STEP that reads it, not the last operation of the graph:
        # a fused step reads its absorbed operations' inputs at its own, later place, so an operand whose
        # last graph reader is an absorbed operation (or an operation between it and the step) would
        # otherwise be gone when the step reads it (an int8 `x - mean` whose SUB output feeds two
        # DEQUANTIZE chains, each fused into a byte table: "QUANTIZE reads operand 4, which has no value").
        last_read = last_reads((k, fused[k].inputs if k in fused else op.inputs)
                               for k, op in enumerate(sg.operations) if k not in absorbed)
        folded: dict[int, np.ndarray] = {}  # operand -> its value, computed once (see `_fold`)
        steps = []
        for k, op in enumerate(sg.operations):
            if k in absorbed:
                continue  # computed by a fused step at a later operation's place; its output never exists
            fusion = fused.get(k)
            inputs = op.inputs if fusion is None else list(fusion.inputs)
            fixed: list[np.ndarray | None] = []
            dynamic: list[tuple[int, int]] = []
            for pos, i in enumerate(inputs):
                lt = sg.operands[i].lifetime
                if i in folded:
                    fixed.append(folded[i])
                elif lt in (_L.CONSTANT_COPY, _L.CONSTANT_REFERENCE, _L.NO_VALUE, _L.SUBGRAPH):
                    fixed.append(self._value(sg_index, sg, i, {}, op.type.name))
                else:
                    fixed.append(None)
                    dynamic.append((pos, i))
            readers = [k] if fusion is None else [*fusion.absorbed, k]  # the operations this step computes
            release = [i for i in dict.fromkeys(inputs)
                       if last_read.get(i) == k and i not in keep and i not in folded
                       and sg.operands[i].lifetime is _L.TEMPORARY_VARIABLE]
            out_operands = [sg.operands[o] for o in op.outputs]
            # A folded value is a constant to its readers, so that their memos keep what they derive from it.
            in_operands = [_as_constant(sg.operands[i]) if i in folded else sg.operands[i] for i in inputs]
            call = KernelCall(operation=op, inputs=[], in_operands=in_operands,
                              out_operands=out_operands, runner=self,
                              cache=self._op_caches.setdefault((sg_index, k), {}))
            step = _Step(op=op, index=k, name=op.type.name if fusion is None else fusion.name,
                         fn=self._kernel(sg, op) if fusion is None else fusion.fn,
                         call=call, fixed=fixed, dynamic=dynamic,
                         outputs=[(o, _held_dtype(od), _checked_shape(od)) for o, od in zip(op.outputs, out_operands)],
                         release=release)
            values = self._fold(step, sg, keep) if fusion is None and not dynamic else None
            if values is None:
                if self.batch is not None:
                    self.batch.wrap(self, step, [sg.operations[r] for r in readers], inputs, sg)
                steps.append(step)
                continue
            folded.update(zip(op.outputs, values))
            if self.trace is not None and sg_index == 0:
                # the trace (per-op parity) still sees the operation, replaying its one result every run
                step.fn = lambda call, values=values: values
                steps.append(step)
        _check_plan(sg_index, sg, steps)
        return steps

    def _fold(self, step: _Step, sg: Subgraph, keep: set[int]) -> list[np.ndarray] | None:
        """The outputs of an operation whose inputs are all constants (or outputs of such operations),
        computed now, once, instead of on every run; None when it must run every time: a nondeterministic
        operation (`OperationSpec.deterministic`: RANDOM_MULTINOMIAL), control flow (its subgraph inputs are
        not constants), an output of the subgraph (the caller gets its own array each run), outputs much
        larger than the inputs (kept for the runner's life instead of released after their last reader), or
        a kernel that fails (the run then reports the failure in its place, after the operations before it).
        A subgraph is planned when it first runs, so an operation in an IF branch never taken is never
        computed.

        The values live outside the buffer pool (computed with it off) and are read-only: no run can reuse
        or overwrite them."""
        op = step.op
        if not spec_of(op.type).deterministic or step.fn is None or any(o in keep for o in op.outputs):
            return None
        if any(v is not None and sg.operands[i].lifetime is _L.SUBGRAPH for v, i in zip(step.fixed, op.inputs)):
            return None
        in_bytes = sum(v.nbytes for v in step.fixed if v is not None)
        out_bytes = sum(np.dtype(dt).itemsize * int(np.prod(shape)) for _o, dt, shape in step.outputs
                        if dt is not None and shape is not None)
        if len(step.outputs) != sum(1 for _o, dt, shape in step.outputs if dt is not None and shape is not None) \
                or out_bytes > FOLD_MAX_GROWTH * in_bytes + FOLD_SLACK_BYTES:
            return None
        call = step.call
        call.inputs = step.fixed.copy()
        pool, self.pool = self.pool, None
        try:
            outs = step.fn(call)
            if len(outs) != len(step.outputs):
                return None
            values = []
            for (o, _dt, _shape), arr in zip(step.outputs, outs):
                arr = _conform(arr, sg.operands[o], op.type.name)
                if self.relaxed_fp16:
                    arr = fp16_storage(arr, sg.operands[o].type)
                arr.flags.writeable = False
                values.append(arr)
            return values
        except Exception:  # noqa: BLE001 - the run reports it when it reaches the operation
            return None
        finally:
            self.pool = pool
            call.inputs = []

    def _fusions(self, sg_index: int, sg: Subgraph) -> list[Fusion]:
        """The operation pairs to run as one step (`nnconv.runtime.fusion`): none when a trace reads every
        intermediate, under relaxed float16 (which rounds each intermediate) or when a test overrides a
        kernel a fusion involves."""
        if self.trace is not None or self.relaxed_fp16 or self._overridden & FUSED_TYPES:
            return []
        if self.batch is not None:
            return self.batch.fusions  # a single run's (`nnconv.runtime.batch`)
        fusions = plan_fusions(sg, lambda i: self._value(sg_index, sg, i, {}, "fusion"), self.kernels)
        if self.replacements is not None:
            # A caller's steps take precedence, and an operation it replaces runs as its own step: a fused
            # step (a quant8 byte table, say) would compute it with the executor's kernel instead.
            theirs = self.replacements.fusions(sg)
            taken = {k for f in theirs for k in (*f.absorbed, f.at)}
            taken |= {k for k, op in enumerate(sg.operations) if self._kernel(sg, op) is not self.kernels.get(op.type)}
            fusions = theirs + [f for f in fusions if not taken & {*f.absorbed, f.at}]
        return fusions

    def _kernel(self, sg: Subgraph, op: Operation) -> Callable | None:
        """`op`'s kernel as its own step (None: none): a caller's replacement, unless overridden by type."""
        kernel = self.kernels.get(op.type)
        if self.replacements is None or op.type in self._overridden:
            return kernel
        return self.replacements.kernel(sg, op) or kernel

    def _value(self, sg_index: int, sg: Subgraph, i: int, values: dict[int, np.ndarray],
               op_name: str) -> np.ndarray | None:
        od = sg.operands[i]
        if od.lifetime in (_L.CONSTANT_COPY, _L.CONSTANT_REFERENCE):
            return self.constant(sg_index, i, od)
        if od.lifetime is _L.NO_VALUE:
            return None
        if od.lifetime is _L.SUBGRAPH:
            return np.asarray(od.location.offset + 1, dtype=np.int32)  # index into model.subgraphs()
        if i not in values:
            raise ExecutionError(f"{op_name} reads operand {i} ({od.name or od.describe()}), which has no value")
        return values[i]


def _check_plan(sg_index: int, sg: Subgraph, steps: list[_Step]) -> None:
    """Every value a step reads at run time is held when it runs: a subgraph input or an earlier step's
    output, not yet released. The model passed the graph invariants (nnapi/graph_invariants.py), so a miss
    is the plan's own bug (a fused step reading what was released), reported when the plan is made instead
    of as a missing value in the middle of a run."""
    held = set(sg.input_indexes)
    for step in steps:
        for _pos, i in step.dynamic:
            if i not in held:
                od = sg.operands[i]
                raise InternalError(f"the executor's plan of subgraph {sg_index} has {step.name} (operation "
                                    f"{step.index}) read operand {i} ({od.name or od.describe()}), which no "
                                    "earlier step holds; please report this bug with the model")
        held.update(o for o, _dt, _shape in step.outputs)
        held.difference_update(step.release)


# An operation is folded only when its outputs take at most this many times its inputs' bytes (plus the
# slack): folded values stay for the runner's life, where a run would release them after their last reader.
# A float16 -> float32 CAST doubles, an int8 DEQUANTIZE quadruples; a TILE or FILL of a constant stays.
FOLD_MAX_GROWTH = 4
FOLD_SLACK_BYTES = 1 << 16


def _as_constant(od: Operand) -> Operand:
    """`od` described as a constant (for the memo of a kernel reading a folded value)."""
    return dataclasses.replace(od, lifetime=_L.CONSTANT_COPY)


def _held_dtype(od: Operand) -> np.dtype | None:
    return None if od.type is OperandType.SUBGRAPH else np.dtype(od.dtype)


def _checked_shape(od: Operand) -> tuple[int, ...] | None:
    if od.type.is_tensor and od.dimensions and all(d > 0 for d in od.dimensions):
        return tuple(od.dimensions)
    return None


def _conform(arr: np.ndarray, od: Operand, op_name: str) -> np.ndarray:
    """Checks a kernel result against its declared operand (dtype cast, known dimensions)."""
    arr = np.asarray(arr)
    if od.type is not OperandType.SUBGRAPH and arr.dtype != od.dtype:
        arr = arr.astype(od.dtype)
    if od.type.is_tensor and od.dimensions and all(d > 0 for d in od.dimensions):
        if tuple(arr.shape) != tuple(od.dimensions):
            raise ExecutionError(f"{op_name} produced shape {list(arr.shape)} for operand "
                                 f"{od.name or od.describe()} declared as {list(od.dimensions)}")
    return arr


class Executor:
    """Runs a converted model: `Executor(converted).run({"input": array})` -> {"output": array}."""

    def __init__(self, model: ConvertedModel | Model, trace: Trace | None = None,
                 blas_threads: int | None | str = "default",
                 kernel_overrides: Mapping[OperationType, Callable] | None = None,
                 relaxed_fp16: bool = False, options: ExecutionOptions | None = None,
                 max_memory: int | None = None, name: str = "the model",
                 replacements: Replacements | None = None) -> None:
        """`blas_threads` sets numpy's BLAS pool during `run` (None: leave it alone); by default
        `default_threads()`: 1, like the single-threaded TFLite interpreter we compare with, or the N of
        `--threads N` (see `nnconv.runtime.blas_threads`). `kernel_overrides`, `relaxed_fp16`, `options`,
        `replacements`: see `SubgraphRunner`. `max_memory` (bytes): refuse, before anything runs, a model
        whose values need more (`nnconv.nnapi.memory`: constants + the largest set of values live at once);
        `name` is how the refusal names the model."""
        if isinstance(model, Model):
            model = _bare(model)
        # What the NNAPI runtime does before it compiles a model, the validation `check`, `convert` and the
        # `.nnapi` loader share (nnapi/validate.py): the HAL's structural rules and graph invariants (every
        # operand read has a value, each written once), then every operation's validate (with the constant
        # checks of its prepare) at the model's feature level (the newest for a bare Model).
        level = feature_level(model.api_level) if model.api_level else MAX_FEATURE_LEVEL
        validate_model(model.model, level)
        if max_memory is not None:
            ensure_fits(model.model, max_memory, name)
        self.converted = model
        self.runner = SubgraphRunner(model.model, trace, kernel_overrides, relaxed_fp16, options, replacements)
        self.blas_threads = default_threads() if blas_threads == "default" else blas_threads
        self.settings = dict(blas_threads=self.blas_threads, kernel_overrides=kernel_overrides,  # for batch_plan
                             relaxed_fp16=relaxed_fp16, options=options, max_memory=max_memory, name=name,
                             replacements=replacements)
        self._batch_plans: dict[tuple[int, bool], BatchPlan] = {}

    @property
    def input_specs(self) -> list[IoTensor]:
        return self.converted.inputs

    @property
    def output_specs(self) -> list[IoTensor]:
        return self.converted.outputs

    def run(self, inputs: Mapping[str, np.ndarray] | Sequence[np.ndarray]) -> dict[str, np.ndarray]:
        arrays = self._bind(inputs)
        nn_inputs = [self._to_nnapi(spec, a) for spec, a in zip(self.input_specs, arrays)]
        main = self.converted.model.main
        # A rank-0 TFLite input travels as NNAPI [1] (NNAPI tensors have at least one dimension).
        nn_inputs = [a.reshape(1) if a.ndim == 0 and main.operands[i].type.is_tensor else a
                     for a, i in zip(nn_inputs, main.input_indexes)]
        with limit_blas_threads(self.blas_threads):
            outs = self.runner.run_subgraph(0, nn_inputs)
        return {spec.name: self._from_nnapi(spec, a) for spec, a in zip(self.output_specs, outs)}

    def run_batch(self, inputs: Mapping[str, np.ndarray] | Sequence[np.ndarray], max_batch: int = DEFAULT_MAX_BATCH,
                  exact_float: bool = True) -> dict[str, np.ndarray]:
        """Samples stacked on a new leading axis, `(N, *input_shape)` -> outputs stacked alike, bit-identical
        to N `run`s, in chunks of at most `max_batch`; `exact_float=False` batches BLAS-backed float steps
        too (faster, rounding may differ). See `nnconv.runtime.batch`."""
        return run_batch(self, inputs, max_batch, exact_float)

    def batch_plan(self, n: int, exact_float: bool = True) -> BatchPlan:
        """How `n` samples run (prepared once per n and kept): `.batched`, `.reason`, `.per_sample`."""
        key = (n, exact_float)
        if key not in self._batch_plans:
            if self.settings["max_memory"] is not None:
                # Under a memory bound at most one batched plan is alive: `max_memory` is checked per plan,
                # and a dataset's last, smaller chunk would otherwise keep two (up to twice the bound).
                self._batch_plans = {k: p for k, p in self._batch_plans.items() if not p.batched}
            self._batch_plans[key] = prepare_batch(self, n, type(self), exact_float)
        return self._batch_plans[key]

    def _bind(self, inputs: Mapping[str, np.ndarray] | Sequence[np.ndarray]) -> list[np.ndarray]:
        specs = self.input_specs
        if isinstance(inputs, Mapping):
            return bind_inputs(specs, inputs)
        if len(inputs) != len(specs):
            raise InputDataError(f"the model takes {len(specs)} inputs, got {len(inputs)}")
        return [np.asarray(a) for a in inputs]

    @staticmethod
    def _to_nnapi(spec: IoTensor, a: np.ndarray) -> np.ndarray:
        if a.dtype != spec.np_dtype:
            raise InputDataError(input_dtype_error(spec, a))
        if len(a.shape) != len(spec.shape) or any(d and d != s for d, s in zip(spec.shape, a.shape)):
            raise InputDataError(f"input '{spec.name}' has shape {list(a.shape)}, the model takes "
                                 f"{list(spec.shape)} (NNAPI shapes are fixed at conversion: --input-shape)")
        if spec.offset:
            # int8 carried as uint8 (API < 30): zero point and values shift by +128.
            return (a.astype(np.int16) + spec.offset).astype(np.uint8)
        if spec.dtype == "int64":
            return a.astype(np.int32)
        return a  # float16 included: NNAPI's TENSOR_FLOAT16 holds it as it is

    @staticmethod
    def _from_nnapi(spec: IoTensor, a: np.ndarray) -> np.ndarray:
        if tuple(spec.shape) == () and a.size == 1:
            a = a.reshape(())  # a rank-0 TFLite tensor travels as NNAPI [1]
        if spec.offset:
            return (a.astype(np.int16) - spec.offset).astype(spec.np_dtype)
        if a.dtype != spec.np_dtype:
            return a.astype(spec.np_dtype)
        return a


def _bare(model: Model) -> ConvertedModel:
    """I/O specs for a Model without metadata: positional names, storage dtypes."""
    def spec(k: int, idx: int, prefix: str) -> IoTensor:
        od = model.main.operands[idx]
        return IoTensor(name=f"{prefix}{k}", tflite_tensor=-1, dtype=od.dtype.name, shape=od.dimensions,
                        scale=od.scale, zero_point=od.zero_point)
    return ConvertedModel(model=model, inputs=[spec(k, i, "arr_") for k, i in enumerate(model.main.input_indexes)],
                          outputs=[spec(k, o, "out_") for k, o in enumerate(model.main.output_indexes)],
                          api_level=0)
