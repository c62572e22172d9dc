"""numpy's floor per model: the time of each operation's essential numpy call alone, against TFLite + XNNPACK.

    python benchmarks/floor.py [MODELS or DIRS ...] [--by-type] [--budget-ms 20] [--api-level 30] [--json FILE]

For each NNAPI operation of a converted model, the one numpy call no numpy executor can avoid, on the
operation's own shapes with its operands ready in memory and timed in isolation (warm cache, the best of
repeated runs, 1 BLAS thread):
- CONV_2D / GROUPED_CONV_2D: the float32 GEMM [OH*OW, KH*KW*C] x [KH*KW*C, O] on ready im2col rows;
- DEPTHWISE_CONV_2D: the fastest of one einsum over the window view of a ready padded input, one einsum over
  its row runs (stride 1 along W: one run of OW*C values per tap and output row) and one multiply and one
  add per tap;
- FULLY_CONNECTED / BATCH_MATMUL: the GEMM; TRANSPOSE_CONV_2D: the GEMM [H*W, C] x [C, KH*KW*O] (no col2im);
- RESHAPE / SQUEEZE / EXPAND_DIMS: nothing (a view);
- every other operation: one binary ufunc pass over its output (np.add, in the output's storage dtype).
No padding, im2col gather, bias, activation, requantization or Python dispatch is counted, so the sum is
below any numpy executor's time. When it is already more than twice TFLite + XNNPACK's whole run (measured
in the same process), no numpy executor gets within 2x of XNNPACK on that model: the gap is numpy's call
cost and loop speed on small shapes, not the executor's overhead ("ours / floor" says how much of our time
is above the floor). TFLite's builtin kernels (no delegate) are timed alike ("floor / blt"): for int8 models,
whose GEMMs numpy can only run as float32 (or float64) BLAS, a floor at or above builtin's whole run means
no numpy executor matches TFLite's builtin int8 kernels there. `--by-type` adds, per model, the operation types whose in-situ time (the executor's
profile hook) lies furthest above their floor: where a numpy executor still has room. A fused step's time
counts against the floors of every operation it computes.
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import statistics
import sys
import time
import timeit

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import nnconv  # noqa: E402
from nnconv.errors import NnconvError  # noqa: E402
from nnconv.nnapi.model import Model  # noqa: E402
from nnconv.parity import random_inputs  # noqa: E402
from nnconv.parity.tflite_runner import BUILTIN_KERNELS, XNNPACK, TfliteRunner  # noqa: E402
from nnconv.tflite.reader import read_model  # noqa: E402

VIEW_OPS = {"RESHAPE", "SQUEEZE", "EXPAND_DIMS"}
GEMM_OPS = {"CONV_2D", "GROUPED_CONV_2D"}


# Seconds each timed batch of a primitive lasts (--budget-ms): the best of five batches is its time.
BATCH_SECONDS = 0.02


def best_seconds(fn) -> float:
    """The fastest of five timed batches of `fn`, each batch about BATCH_SECONDS long."""
    budget_s = BATCH_SECONDS
    fn()
    t0 = time.perf_counter()
    fn()
    once = max(time.perf_counter() - t0, 1e-7)
    number = max(1, int(budget_s / once))
    return min(timeit.repeat(fn, number=number, repeat=5)) / number


def gemm_floor(rows: int, k: int, cols: int) -> float:
    a = np.random.default_rng(0).random((max(rows, 1), max(k, 1)), dtype=np.float32)
    b = np.random.default_rng(1).random((max(k, 1), max(cols, 1)), dtype=np.float32)
    out = np.empty((a.shape[0], b.shape[1]), dtype=np.float32)
    return best_seconds(lambda: np.matmul(a, b, out=out))


def depthwise_floor(out_h: int, out_w: int, kh: int, kw: int, c: int, sh: int, sw: int) -> float:
    x = np.random.default_rng(0).random(((out_h - 1) * sh + kh, (out_w - 1) * sw + kw, c), dtype=np.float32)
    taps = np.random.default_rng(1).random((kh, kw, c), dtype=np.float32)
    s = x.strides
    windows = np.lib.stride_tricks.as_strided(x, (out_h, out_w, kh, kw, c), (s[0] * sh, s[1] * sw, s[0], s[1], s[2]))
    out = np.empty((out_h, out_w, c), dtype=np.float32)
    tmp = np.empty_like(out)
    einsum = best_seconds(lambda: np.einsum("hwijc,ijc->hwc", windows, taps, out=out))
    if sw == 1:
        # along W at stride 1, each tap's inputs for a whole output row are one run of OW*C values: an einsum
        # over [OH, KH, KW, OW*C] row runs has one long inner loop (what the executor's depthwise does there)
        flat = x.reshape(x.shape[0], -1)
        fs = flat.strides
        runs = np.lib.stride_tricks.as_strided(flat, (out_h, kh, kw, out_w * c), (fs[0] * sh, fs[0], c * fs[1], fs[1]))
        tiled = np.ascontiguousarray(np.repeat(taps[:, :, None, :], out_w, axis=2).reshape(kh, kw, out_w * c))
        rows = out.reshape(out_h, out_w * c)
        einsum = min(einsum, best_seconds(lambda: np.einsum("rijl,ijl->rl", runs, tiled, out=rows)))
    shifted = [(x[i:i + (out_h - 1) * sh + 1:sh, j:j + (out_w - 1) * sw + 1:sw], taps[i, j])
               for i in range(kh) for j in range(kw)]

    def per_tap() -> None:
        np.multiply(shifted[0][0], shifted[0][1], out=out)
        for v, t in shifted[1:]:
            np.multiply(v, t, out=tmp)
            np.add(out, tmp, out=out)

    return min(einsum, best_seconds(per_tap))


def pass_floor(size: int, dtype: np.dtype) -> float:
    a = np.ones(max(size, 1), dtype=dtype)
    out = np.empty_like(a)
    return best_seconds(lambda: np.add(a, a, out=out))


def operation_floor(model: Model, op) -> float:
    name = op.type.name
    dims = [tuple(model.operands[i].dimensions) for i in op.inputs]
    out_operand = model.operands[op.outputs[0]]
    out = tuple(out_operand.dimensions)
    size = math.prod(out)
    if name in VIEW_OPS:
        return 0.0
    if name in GEMM_OPS and len(dims[1]) == 4 and len(out) == 4:
        o, kh, kw, c = dims[1]
        return gemm_floor(size // max(o, 1), kh * kw * c, o)
    if name == "DEPTHWISE_CONV_2D" and len(dims[0]) == 4 and len(out) == 4:
        _n, h, w, _c = dims[0]
        _n, oh, ow, oc = out
        _one, kh, kw, _oc = dims[1]
        return depthwise_floor(oh, ow, kh, kw, oc, max(1, round(h / max(oh, 1))), max(1, round(w / max(ow, 1))))
    if name == "FULLY_CONNECTED" and len(dims[1]) == 2:
        o, k = dims[1]
        return gemm_floor(size // max(o, 1), k, o)
    if name == "BATCH_MATMUL" and len(out) >= 2:
        k = dims[0][-1] if dims[0] else 1
        return gemm_floor(size // max(out[-1], 1), k, out[-1])
    if name == "TRANSPOSE_CONV_2D" and len(dims[0]) == 4 and len(dims[1]) == 4:
        o, kh, kw, c = dims[1]
        return gemm_floor(math.prod(dims[0][:3]), c, kh * kw * o)
    return pass_floor(size, out_operand.dtype if out_operand.dtype != np.bool_ else np.uint8)


def above_floor_by_type(executor, feed: dict, floors: list[float],
                        runs: int = 15) -> list[tuple[str, int, float, float]]:
    """(step name, steps, median in-situ ms, floor ms) per step type, the largest gap first. A step fused from
    several operations sits at the last one's index (the plan skips the others): each skipped operation's
    floor joins the next step's."""
    times: dict[int, list[float]] = {}
    names: dict[int, str] = {}

    def record(index: int, name: str, seconds: float) -> None:
        times.setdefault(index, []).append(seconds)
        names[index] = name

    runner = executor.runner
    runner.profile, runner.profile_clock = record, time.thread_time
    try:
        for _ in range(runs):
            executor.run(feed)
    finally:
        runner.profile = None
    step_floor: dict[int, float] = {}
    pending = 0.0
    for k, f in enumerate(floors):
        if k in times:
            step_floor[k] = pending + f
            pending = 0.0
        else:
            pending += f
    agg: dict[str, list[float]] = {}
    for k, ts in times.items():
        a = agg.setdefault(names[k], [0, 0.0, 0.0])
        a[0] += 1
        a[1] += statistics.median(ts) * 1e3
        a[2] += step_floor.get(k, 0.0) * 1e3
    return sorted(((n, int(c), t, f) for n, (c, t, f) in agg.items()), key=lambda r: -(r[2] - r[3]))


def median_ms(fn, runs: int = 15, warmup: int = 2) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        t0 = time.thread_time()
        fn()
        times.append(time.thread_time() - t0)
    return statistics.median(times) * 1e3


def bench(path: str, api_level: int, by_type: bool = False) -> dict:
    row: dict = {"model": pathlib.Path(path).name}
    try:
        converted, _report = nnconv.convert(read_model(path), api_level=api_level)
    except NnconvError as e:
        row["error"] = str(e).splitlines()[0]
        return row
    main = converted.model.main
    row["operations"] = len(main.operations)
    floors = [operation_floor(main, op) for op in main.operations]
    row["floor_ms"] = sum(floors) * 1e3
    feed = random_inputs(converted.inputs, seed=0)
    executor = nnconv.Executor(converted, blas_threads=1)
    row["nnconv_ms"] = median_ms(lambda: executor.run(feed))
    runner = TfliteRunner(path, kernels=XNNPACK, num_threads=1)
    tfl_feed = {}
    for d in runner.input_details():
        spec = next(s for s in converted.inputs if s.tflite_tensor == d["index"] or s.name == d["name"])
        tfl_feed[d["index"]] = np.asarray(feed[spec.name])
    row["xnnpack_ms"] = median_ms(lambda: runner.run(tfl_feed))
    builtin = TfliteRunner(path, kernels=BUILTIN_KERNELS, num_threads=1)
    row["builtin_ms"] = median_ms(lambda: builtin.run(tfl_feed))
    row["floor_over_xnnpack"] = row["floor_ms"] / row["xnnpack_ms"]
    row["floor_over_builtin"] = row["floor_ms"] / row["builtin_ms"]
    row["ours_over_floor"] = row["nnconv_ms"] / row["floor_ms"]
    if by_type:
        row["by_type"] = [{"step": n, "count": c, "ms": t, "floor_ms": f}
                          for n, c, t, f in above_floor_by_type(executor, feed, floors)]
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", default=[str(ROOT / "examples" / "models")])
    ap.add_argument("--api-level", type=int, default=30)
    ap.add_argument("--budget-ms", type=float, default=20.0, help="length of each timed batch of a primitive")
    ap.add_argument("--by-type", action="store_true", help="the step types furthest above their floor")
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args(argv)
    global BATCH_SECONDS
    BATCH_SECONDS = args.budget_ms / 1e3
    from threadpoolctl import threadpool_limits
    threadpool_limits(1)
    paths: list[str] = []
    for a in args.models:
        p = pathlib.Path(a)
        paths.extend(sorted(str(q) for q in p.glob("*.tflite")) if p.is_dir() else [str(p)])
    print(f"{'model':45} {'ops':>4} {'ours ms':>8} {'floor ms':>8} {'XNNPACK':>8} {'floor/XNN':>9} {'builtin':>8} {'floor/blt':>9} {'ours/floor':>10}")
    rows = []
    for path in paths:
        row = bench(path, args.api_level, args.by_type)
        rows.append(row)
        if "error" in row:
            print(f"{row['model']:45} {row['error']}")
            continue
        print(f"{row['model']:45} {row['operations']:4} {row['nnconv_ms']:8.2f} {row['floor_ms']:8.2f} "
              f"{row['xnnpack_ms']:8.2f} {row['floor_over_xnnpack']:8.2f}x {row['builtin_ms']:8.2f} "
              f"{row['floor_over_builtin']:8.2f}x {row['ours_over_floor']:9.2f}x")
        for t in row.get("by_type", [])[:6]:
            print(f"    {t['step']:28} x{t['count']:<4} {t['ms']:7.3f} ms, floor {t['floor_ms']:7.3f} ms, "
                  f"above {(t['ms'] - t['floor_ms']) / t['count'] * 1e3:6.1f} us per step")
    ok = [r for r in rows if "error" not in r]
    if ok:
        geo = {k: math.exp(statistics.fmean(math.log(r[k]) for r in ok))
               for k in ("floor_over_xnnpack", "floor_over_builtin", "ours_over_floor")}
        print(f"geometric mean over {len(ok)} models: floor / XNNPACK {geo['floor_over_xnnpack']:.2f}x, "
              f"floor / TFLite builtin {geo['floor_over_builtin']:.2f}x, "
              f"ours / floor {geo['ours_over_floor']:.2f}x")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
