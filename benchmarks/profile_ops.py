"""Per-operation profile of nnconv's executor, and the memory its tensors' liveness allows (for run.py).

`profile_run` times every kernel call of the main subgraph through the executor's `profile` hook (a
callable given (operation index, op type name, seconds) per call) and compares the sum with the wall time
of the same runs: what is left is the executor's own per-operation cost outside kernels (binding inputs,
conforming outputs, releasing intermediates), reported per operation in microseconds.
"""

from __future__ import annotations

import statistics
import time
from collections import defaultdict

import numpy as np

from nnconv.nnapi.enums import OperandLifeTime
from nnconv.nnapi.model import Model


def profile_run(executor, feed: dict, runs: int = 5, top: int = 10, clock=time.perf_counter) -> dict:
    """Times `runs` executor runs with per-kernel timing on `clock`; returns the breakdown of the median run."""
    per_run: list[tuple[float, dict[int, float]]] = []
    names: dict[int, str] = {}
    current: dict[int, float] = {}

    def record(index: int, op_name: str, seconds: float) -> None:
        names[index] = op_name
        current[index] = current.get(index, 0.0) + seconds

    executor.run(feed)  # builds the plan and the memoized constants outside the timed runs
    restore = _hook(executor.runner, record, clock)
    try:
        for _ in range(runs):
            current = {}
            t0 = clock()
            executor.run(feed)
            per_run.append((clock() - t0, current))
    finally:
        restore()
    per_run.sort(key=lambda r: r[0])
    wall, ops = per_run[len(per_run) // 2]
    kernel = sum(ops.values())
    by_type: dict[str, list[float]] = defaultdict(list)
    for index, seconds in ops.items():
        by_type[names[index]].append(seconds)
    ranked = sorted(by_type.items(), key=lambda kv: -sum(kv[1]))
    n = max(len(ops), 1)
    return {"operations": len(ops), "run_ms": wall * 1e3, "kernel_ms": kernel * 1e3,
            "outside_share": max(wall - kernel, 0.0) / wall if wall else 0.0,
            "overhead_us_per_op": max(wall - kernel, 0.0) / n * 1e6,
            "median_op_us": statistics.median(ops.values()) * 1e6 if ops else 0.0,
            "top": [{"op": name, "count": len(ts), "ms": sum(ts) * 1e3, "share": sum(ts) / wall}
                    for name, ts in ranked[:top]]}


def _hook(runner, record, clock):
    """Installs `record` as the runner's profile hook; returns the function that removes it. Runners
    without a hook (older versions, for before/after tables) get their main plan's kernels wrapped."""
    if hasattr(runner, "profile"):
        previous, previous_clock = runner.profile, runner.profile_clock
        runner.profile, runner.profile_clock = record, clock

        def restore() -> None:
            runner.profile, runner.profile_clock = previous, previous_clock
        return restore
    steps = runner._plans[0]
    originals = [s.fn for s in steps]
    for k, s in enumerate(steps):
        s.fn = _timed(s.fn, k, s.op.type.name, record, clock)

    def unwrap() -> None:
        for s, fn in zip(steps, originals):
            s.fn = fn
    return unwrap


def _timed(fn, index: int, name: str, record, clock):
    def call(c):
        t0 = clock()
        out = fn(c)
        record(index, name, clock() - t0)
        return out
    return call


def liveness_peak_bytes(model: Model) -> int:
    """The largest total size of non-constant tensors of the main subgraph alive at once, when each
    intermediate lives from the operation that writes it to its last reader (inputs and outputs throughout):
    the floor for any executor that keeps whole tensors."""
    sg = model.main
    last: dict[int, int] = {}
    for k, op in enumerate(sg.operations):
        for i in op.inputs:
            last[i] = k

    def size(i: int) -> int:
        od = sg.operands[i]
        if od.lifetime not in (OperandLifeTime.TEMPORARY_VARIABLE, OperandLifeTime.SUBGRAPH_INPUT,
                               OperandLifeTime.SUBGRAPH_OUTPUT) or not od.type.is_tensor:
            return 0
        return int(np.prod(od.dimensions or (1,), dtype=np.int64)) * np.dtype(od.dtype).itemsize

    keep = set(sg.input_indexes) | set(sg.output_indexes)
    live = sum(size(i) for i in sg.input_indexes)
    peak = live
    for k, op in enumerate(sg.operations):
        live += sum(size(o) for o in op.outputs if o not in sg.input_indexes)
        peak = max(peak, live)
        for i in dict.fromkeys(op.inputs):
            if last.get(i) == k and i not in keep:
                live -= size(i)
        for o in op.outputs:  # outputs nobody reads die at once
            if o not in last and o not in keep:
                live -= size(o)
    return peak


def overhead_probe(ops: int = 200, runs: int = 50, clock=time.perf_counter) -> dict:
    """The executor's fixed cost per operation: a chain of `ops` ADDs of two 4-element float tensors (the
    arithmetic is nanoseconds), built with nnconv's own builder. Per operation it is the executor's loop
    plus the smallest kernel's Python work: the per-op overhead that dominates models of many small ops."""
    import nnconv
    from nnconv.tflite.builder import TfliteBuilder
    from nnconv.tflite.options import AddOptions
    from nnconv.tflite.schema_enums import BuiltinOperator

    b = TfliteBuilder("nnconv overhead probe")
    x = b.input("x", (1, 1, 1, 4), np.float32)
    one = b.const("one", np.ones((1, 1, 1, 4), np.float32))
    for k in range(ops):
        y = b.tensor(f"t{k}", (1, 1, 1, 4), np.float32)
        b.op(BuiltinOperator.ADD, [x, one], [y], AddOptions())
        x = y
    b.output(x)
    converted, _report = nnconv.convert(b.finish(), api_level=30)
    executor = nnconv.Executor(converted)
    feed = {"x": np.zeros((1, 1, 1, 4), np.float32)}
    executor.run(feed)
    times = []
    for _ in range(runs):
        t0 = clock()
        executor.run(feed)
        times.append(clock() - t0)
    # the fastest run: a fixed cost, best seen apart from the other jobs of a shared machine
    return {"operations": ops, "us_per_op": min(times) / ops * 1e6, "median_us_per_op": statistics.median(times) / ops * 1e6}
