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


def profile_run(executor, feed: dict, runs: int = 5, top: int = 10) -> dict:
    """Times `runs` executor runs with per-kernel timing; returns the breakdown of the median run."""
    per_run: list[tuple[float, dict[int, float]]] = []
    names: dict[int, str] = {}
    current: dict[int, float] = {}

    def record(index: int, op_name: str, seconds: float) -> None:
        names[index] = op_name
        current[index] = current.get(index, 0.0) + seconds

    executor.run(feed)  # builds the plan and the memoized constants outside the timed runs
    restore = _hook(executor.runner, record)
    try:
        for _ in range(runs):
            current = {}
            t0 = time.perf_counter()
            executor.run(feed)
            per_run.append((time.perf_counter() - t0, current))
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


def _hook(runner, record):
    """Installs `record` as the runner's profile hook; returns the function that removes it. Runners
    without a hook get their main plan's kernels wrapped instead."""
    if hasattr(runner, "profile"):
        previous = runner.profile
        runner.profile = record

        def restore() -> None:
            runner.profile = previous
        return restore
    steps = runner._plans[0]
    originals = [s.fn for s in steps]
    for k, s in enumerate(steps):
        s.fn = _timed(s.fn, k, s.op.type.name, record)

    def unwrap() -> None:
        for s, fn in zip(steps, originals):
            s.fn = fn
    return unwrap


def _timed(fn, index: int, name: str, record):
    def call(c):
        t0 = time.perf_counter()
        out = fn(c)
        record(index, name, time.perf_counter() - t0)
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
