"""Times nnconv's executor against TFLite's interpreter, and nnconv's conversion, with their memory.

    python benchmarks/run.py [MODELS or DIRS ...] [--threads 1] [--runs 20] [--profile] [--json FILE]
    python benchmarks/run.py --guard-only          # only the conversion guard on a synthetic 100 MB model

Per model, in one process: conversion (read + lower + write .nnapi; median of 3 after a first one) with its
peak traced memory; then the median of repeated runs on the same seeded inputs of our executor and of
TFLite at the same thread count with XNNPACK (its default delegate), with its built-in kernels (no
delegate) and with its reference kernels (`nnconv.parity.tflite_runner`'s three kernel sets), as ratios;
then `--batch N` (default 32) samples through `Executor.run_batch`, time per sample (bit-identical to
single runs; and with `exact_float=False`, which also runs the BLAS-backed float steps on all samples at
once), with why a model's samples loop when they do; and the executor's memory during one warm run (peak traced allocations plus the blocks its buffer pool
keeps) next to the largest live set of tensors the model's liveness allows, and what it keeps between runs
outside the pool ("kept MB": constant-derived arrays, prepared small operations' buffers, folded values). `--profile` adds the executor's time per operation type, the share of a run spent
outside kernels and the average executor time per operation outside kernels (its per-op overhead).

Then the conversion guard: a ~100 MB float model built with nnconv's own builder must convert (read +
lower + write) in about 0.1 s and with a peak memory under 1.5x its size (exit status 1 otherwise).

Memory is traced with `tracemalloc` (numpy reports its buffers to it); file-backed mmap pages of the
model, which the converter keeps as views, are not allocations and do not count. The guard also reports
the peak RSS growth of a fresh child process (VmHWM), which does count the pages it reads.
Not part of the test suite: timings on a shared machine move by tens of percent; the ratios are the point.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import platform
import statistics
import sys
import tempfile
import time
import tracemalloc

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import nnconv  # noqa: E402
from nnconv.errors import NnconvError  # noqa: E402
from nnconv.nnapi import serialize  # noqa: E402
from nnconv.parity import random_inputs  # noqa: E402
from nnconv.parity.tflite_runner import BUILTIN_KERNELS, REFERENCE_KERNELS, XNNPACK, TfliteRunner  # noqa: E402
from nnconv.runtime.kept_memory import kept_bytes  # noqa: E402
from nnconv.tflite.reader import read_model  # noqa: E402

sys.path.insert(0, str(ROOT / "benchmarks"))
from profile_ops import liveness_peak_bytes, overhead_probe, profile_run  # noqa: E402

DEFAULT_DIRS = [ROOT / "examples" / "models"]
TFLITE_SETS = (("xnnpack", XNNPACK), ("builtin", BUILTIN_KERNELS), ("reference", REFERENCE_KERNELS))


def model_paths(args: list[str]) -> list[str]:
    out: list[str] = []
    for a in args or [str(d) for d in DEFAULT_DIRS]:
        p = pathlib.Path(a)
        out.extend(sorted(str(q) for q in p.glob("*.tflite")) if p.is_dir() else [str(p)])
    return out


CLOCK = time.perf_counter  # --clock cpu: time.thread_time (both sides compute in the calling thread at 1 thread)


def median_ms(fn, runs: int, warmup: int, budget_s: float = 20.0) -> tuple[float, int]:
    """Median time of `fn` over `runs` runs after `warmup` ones; stops early (at least 3 runs) once the
    timed runs exceed `budget_s`, so TFLite's reference kernels on a full-size model stay affordable."""
    for _ in range(warmup):
        fn()
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < runs:
        t0 = CLOCK()
        fn()
        times.append(CLOCK() - t0)
        if len(times) >= 3 and time.perf_counter() - start > budget_s:
            break
    return statistics.median(times) * 1e3, len(times)


def traced_peak_mb(fn) -> float:
    """Peak memory allocated while `fn` runs (tracemalloc, numpy buffers included), above what was live."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        fn()
        return (tracemalloc.get_traced_memory()[1] - base) / 2**20
    finally:
        tracemalloc.stop()


def convert_once(path: str, api_level: int, out_dir: str):
    model = read_model(path)
    converted, _report = nnconv.convert(model, api_level=api_level)
    serialize.save(os.path.join(out_dir, "model.nnapi"), [converted])
    return converted


def converted_row(path: str, api_level: int):
    """({"model": file name}, the converted model), or (the row with "error": the first line, None)."""
    row: dict = {"model": pathlib.Path(path).name}
    try:
        converted, _report = nnconv.convert(read_model(path), api_level=api_level)
        return row, converted
    except NnconvError as e:
        row["error"] = str(e).splitlines()[0]
        return row, None


def tflite_feed(runner: TfliteRunner, converted, feed_by_name: dict) -> dict:
    feed = {}
    for d in runner.input_details():
        spec = next(s for s in converted.inputs if s.tflite_tensor == d["index"] or s.name == d["name"])
        feed[d["index"]] = np.asarray(feed_by_name[spec.name])
    return feed


def bench_model(path: str, args) -> dict:
    row: dict = {"model": os.path.basename(path), "size_mb": os.path.getsize(path) / 1e6}
    with tempfile.TemporaryDirectory(prefix="nnconv-bench-") as tmp:
        try:
            converted = convert_once(path, args.api_level, tmp)
        except NnconvError as e:
            row["error"] = str(e).splitlines()[0]
            return row
        row["convert_ms"], _ = median_ms(lambda: convert_once(path, args.api_level, tmp), 3, 0)
        row["convert_peak_mb"] = traced_peak_mb(lambda: convert_once(path, args.api_level, tmp))
    main = converted.model.main
    row["operations"] = len(main.operations)
    row["dtype"] = converted.inputs[0].dtype if converted.inputs else "-"
    # vision: one NHWC image input (the "Done when" of the speed issue is about these)
    row["vision"] = len(converted.inputs) == 1 and len(converted.inputs[0].shape) == 4
    feed = random_inputs(converted.inputs, seed=0)
    executor = nnconv.Executor(converted, blas_threads=args.threads)
    row["nnconv_ms"], row["nnconv_runs"] = median_ms(lambda: executor.run(feed), args.runs, args.warmup)
    # a warm run allocates only what the buffer pool does not hold: its blocks count towards the peak
    pool = executor.runner.pool
    row["run_peak_mb"] = traced_peak_mb(lambda: executor.run(feed)) + (
        pool.retained_bytes() / 2**20 if pool is not None and hasattr(pool, "retained_bytes") else 0.0)
    row["live_set_mb"] = liveness_peak_bytes(converted.model) / 2**20
    # what the executor keeps between runs outside the pool: memoized constant-derived arrays (converted
    # filters, tables), prepared small operations' buffers, folded values
    row["kept_mb"] = kept_bytes(executor.runner) / 2**20
    for key, kernels in TFLITE_SETS:
        try:
            runner = TfliteRunner(path, kernels=kernels, num_threads=args.threads)
            tfeed = tflite_feed(runner, converted, feed)
            row[f"{key}_ms"], _ = median_ms(lambda: runner.run(tfeed), args.runs, 1 if key == "reference" else
                                            args.warmup)
        except NnconvError as e:
            row[f"{key}_ms"] = None
            row.setdefault("notes", []).append(f"{kernels}: {e}")
    for key, _k in TFLITE_SETS:
        if row.get(f"{key}_ms"):
            row[f"ours_over_{key}"] = row["nnconv_ms"] / row[f"{key}_ms"]
    if args.batch > 1:
        bench_batch(row, executor, converted, args)
    if args.profile:
        row["profile"] = profile_run(executor, feed, runs=max(3, min(args.runs, 10)), clock=CLOCK)
    return row


def bench_batch(row: dict, executor, converted, args) -> None:
    """Time per sample of `args.batch` samples through `run_batch`: exact (float steps outside the
    per-element-exact set one sample at a time) and `exact_float=False`; `batch_note` says why the samples
    loop when they do."""
    n = args.batch
    feeds = [random_inputs(converted.inputs, seed=k) for k in range(n)]
    stacked = {name: np.stack([f[name] for f in feeds]) for name in feeds[0]}
    runs = max(3, args.runs // 4)
    for key, exact in (("batch_ms", True), ("batch_fast_ms", False)):
        plan = executor.batch_plan(n, exact_float=exact)
        ms, _ = median_ms(lambda: executor.run_batch(stacked, max_batch=n, exact_float=exact), runs, 1)
        row[key] = ms / n
        if not plan.batched:  # a loop of single runs either way
            row["batch_note"] = plan.reason
            row["batch_fast_ms"] = row[key]
            break
    row["batch_over_single"] = row["batch_ms"] / row["nnconv_ms"]
    for key in ("xnnpack", "builtin"):
        if row.get(f"{key}_ms"):
            row[f"batch_over_{key}"] = row["batch_ms"] / row[f"{key}_ms"]
            if row.get("batch_fast_ms"):
                row[f"batch_fast_over_{key}"] = row["batch_fast_ms"] / row[f"{key}_ms"]


def geomean(values: list[float]) -> float | None:
    values = [v for v in values if v]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def summary(rows: list[dict]) -> dict:
    ok = [r for r in rows if "error" not in r]
    floats = [r for r in ok if r["dtype"].startswith("float")]
    ints = [r for r in ok if not r["dtype"].startswith("float")]
    out = {}
    for name, group in (("float", floats), ("quantized", ints),
                        ("float vision", [r for r in floats if r.get("vision")]),
                        ("quantized vision", [r for r in ints if r.get("vision")])):
        if group:
            out[name] = {"models": len(group),
                         "geomean_ours_over_xnnpack": geomean([r.get("ours_over_xnnpack") for r in group]),
                         "max_ours_over_xnnpack": max(r.get("ours_over_xnnpack") or 0 for r in group),
                         "geomean_ours_over_builtin": geomean([r.get("ours_over_builtin") for r in group]),
                         "min_reference_over_ours": min(1 / r["ours_over_reference"] for r in group
                                                        if r.get("ours_over_reference"))}
            if any(r.get("batch_ms") for r in group):
                out[name].update({
                    "geomean_batch_over_single": geomean([r.get("batch_over_single") for r in group]),
                    "geomean_batch_over_xnnpack": geomean([r.get("batch_over_xnnpack") for r in group]),
                    "geomean_batch_over_builtin": geomean([r.get("batch_over_builtin") for r in group]),
                    "geomean_batch_fast_over_xnnpack": geomean([r.get("batch_fast_over_xnnpack") for r in group]),
                    "geomean_batch_fast_over_builtin": geomean([r.get("batch_fast_over_builtin") for r in group])})
    return out


def fmt(v, pattern: str = "{:.2f}") -> str:
    return "-" if v is None else pattern.format(v)


def print_table(rows: list[dict], args) -> None:
    header = (f"{'model':42} {'ops':>4} {'conv ms':>7} {'conv MB':>7} {'ours ms':>8} {'xnn ms':>8} {'ours/xnn':>8} "
              f"{'blt ms':>8} {'ours/blt':>8} {'ref ms':>9} {'ref/ours':>8} {'b ms/s':>7} {'bfast':>7} {'b/ours':>7} "
              f"{'run MB':>7} {'live MB':>7} {'kept MB':>7}")
    print(header)
    print("-" * len(header))
    for r in rows:
        if "error" in r:
            print(f"{r['model']:42} not converted at API {args.api_level}: {r['error']}")
            continue
        ref = r.get("ours_over_reference")
        print(f"{r['model'][:42]:42} {r['operations']:4d} {r['convert_ms']:7.1f} {r['convert_peak_mb']:7.1f} "
              f"{r['nnconv_ms']:8.2f} {fmt(r.get('xnnpack_ms')):>8} {fmt(r.get('ours_over_xnnpack'), '{:.2f}x'):>8} "
              f"{fmt(r.get('builtin_ms')):>8} {fmt(r.get('ours_over_builtin'), '{:.2f}x'):>8} "
              f"{fmt(r.get('reference_ms'), '{:.1f}'):>9} {fmt(1 / ref if ref else None, '{:.1f}x'):>8} "
              f"{fmt(r.get('batch_ms')):>7} {fmt(r.get('batch_fast_ms')):>7} "
              f"{fmt(r.get('batch_over_single'), '{:.2f}x'):>7} "
              f"{r['run_peak_mb']:7.1f} {r['live_set_mb']:7.1f} {r['kept_mb']:7.1f}")
    for name, s in summary(rows).items():
        print(f"{name}: {s['models']} models, geomean ours/xnnpack {fmt(s['geomean_ours_over_xnnpack'], '{:.2f}x')} "
              f"(max {s['max_ours_over_xnnpack']:.2f}x), ours/builtin {fmt(s['geomean_ours_over_builtin'], '{:.2f}x')}, "
              f"reference/ours at least {s['min_reference_over_ours']:.1f}x")
        if s.get("geomean_batch_over_single"):
            print(f"  batched per sample: {fmt(s['geomean_batch_over_single'], '{:.2f}x')} our single run, "
                  f"{fmt(s['geomean_batch_over_xnnpack'], '{:.2f}x')} XNNPACK, "
                  f"{fmt(s['geomean_batch_over_builtin'], '{:.2f}x')} "
                  f"builtin; exact_float=False {fmt(s['geomean_batch_fast_over_xnnpack'], '{:.2f}x')} XNNPACK, "
                  f"{fmt(s['geomean_batch_fast_over_builtin'], '{:.2f}x')} builtin")
    for r in rows:
        if r.get("batch_note"):
            print(f"  {r['model']}: samples loop: {r['batch_note']}")
    if args.profile:
        for r in rows:
            if "profile" in r:
                print_profile(r["model"], r["profile"])


def print_profile(model: str, p: dict) -> None:
    print(f"\n{model}: {p['operations']} operations, run {p['run_ms']:.2f} ms, kernels {p['kernel_ms']:.2f} ms, "
          f"outside kernels {100 * p['outside_share']:.1f}% ({p['overhead_us_per_op']:.1f} us per operation); "
          f"kernel time per op: median {p['median_op_us']:.1f} us")
    for t in p["top"]:
        print(f"  {t['op']:28} x{t['count']:<4d} {t['ms']:8.2f} ms {100 * t['share']:5.1f}%  "
              f"{1e3 * t['ms'] / t['count']:8.1f} us/op")


def print_guard(g: dict) -> None:
    if "error" in g:
        print(f"\nconversion guard: FAILED: {g['error']}")
        return
    print(f"\nconversion guard: {g['model_mb']:.0f} MB float model: read {1e3 * g['read_s']:.1f} ms + lower "
          f"{1e3 * g['convert_s']:.1f} ms (limit {1e3 * g['time_limit_s']:.0f} ms) + write "
          f"{1e3 * g['write_s']:.1f} ms (limit {1e3 * g['write_limit_s']:.0f} ms: writing the mmapped file took "
          f"{1e3 * g['copy_s']:.1f} ms) = {1e3 * g['total_s']:.1f} ms; peak traced {g['traced_peak_mb']:.1f} MB, "
          f"peak RSS growth {g['rss_growth_mb']:.0f} MB (limit {g['memory_limit_mb']:.0f} MB): "
          f"{'ok' if g['ok'] else 'FAILED'}")


SIMD_FLAGS = ("sse4_2", "avx", "fma", "avx2", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx_vnni",
              "avx512_bf16", "amx_int8", "asimd", "asimddp", "sve")


def cpu_flags() -> list[str]:
    """The SIMD extensions of `SIMD_FLAGS` the CPU reports (/proc/cpuinfo's flags, or Features on ARM):
    what XNNPACK (VNNI for int8), OpenBLAS and numpy's dispatch can use."""
    try:
        with open("/proc/cpuinfo") as f:
            line = next((ln for ln in f if ln.startswith(("flags", "Features"))), "")
    except OSError:
        return []
    present = set(line.split(":", 1)[-1].split())
    return [flag for flag in SIMD_FLAGS if flag in present]


def environment(threads: int) -> dict:
    env = {"python": platform.python_version(), "numpy": np.__version__, "machine": platform.machine(),
           "cpus": os.cpu_count(), "threads": threads}
    try:
        with open("/proc/cpuinfo") as f:
            env["cpu"] = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "")
    except OSError:
        pass
    env["cpu_flags"] = cpu_flags()
    try:
        from threadpoolctl import threadpool_info
        env["blas"] = [{k: i.get(k) for k in ("internal_api", "version", "architecture", "num_threads")}
                       for i in threadpool_info() if i.get("user_api") == "blas"]
    except ImportError:
        env["blas"] = "threadpoolctl not installed"
    try:
        from importlib.metadata import version
        env["ai_edge_litert"] = version("ai-edge-litert")
    except Exception:  # noqa: BLE001 - informational only
        pass
    return env


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", help=".tflite files or directories (default: examples/models)")
    ap.add_argument("--api-level", type=int, default=30)
    ap.add_argument("--threads", type=int, default=1, help="BLAS threads for ours, num_threads for TFLite")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--batch", type=int, default=32, help="samples per run_batch call for the batched "
                    "per-sample columns (0 or 1: skip them)")
    ap.add_argument("--profile", action="store_true", help="per-operation time breakdown of our executor")
    ap.add_argument("--json", metavar="FILE", default=None, help="also write the results as JSON to FILE")
    ap.add_argument("--guard-mb", type=float, default=100.0, help="size of the conversion guard's model")
    ap.add_argument("--no-guard", action="store_true", help="skip the conversion guard")
    ap.add_argument("--guard-only", action="store_true", help="only run the conversion guard")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="wall time, or the calling thread's CPU time (steadier on a shared machine; "
                         "only meaningful at 1 thread)")
    args = ap.parse_args(argv)
    if args.clock == "cpu" and args.threads > 1:
        # the other threads' work would not be counted, on either side
        ap.error("--clock cpu times the calling thread only: use --clock wall with --threads above 1")
    global CLOCK
    CLOCK = time.thread_time if args.clock == "cpu" else time.perf_counter
    env = environment(args.threads)
    env["clock"] = args.clock
    flags = " ".join(env["cpu_flags"]) or "no SIMD flags read"
    print(f"# {env.get('cpu', env['machine'])}, {env['cpus']} CPUs ({flags}); numpy {env['numpy']}; BLAS {env['blas']}; "
          f"ai-edge-litert {env.get('ai_edge_litert', '?')}; {args.threads} thread(s); API {args.api_level}; "
          f"{args.clock} clock")
    rows = [] if args.guard_only else [bench_model(p, args) for p in model_paths(args.models)]
    if rows:
        print_table(rows, args)
    probe = None
    if args.profile:
        probe = overhead_probe(clock=CLOCK)
        print(f"\nper-operation overhead: {probe['us_per_op']:.1f} us per operation (a chain of "
              f"{probe['operations']} 4-element ADDs: the executor's loop plus the smallest kernel)")
    guard = None
    if not args.no_guard:
        from convert_guard import run_guard
        guard = run_guard(args.guard_mb, args.api_level)
        print_guard(guard)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"environment": env, "runs": args.runs, "warmup": args.warmup, "api_level": args.api_level,
                       "results": rows, "summary": summary(rows), "overhead_probe": probe,
                       "conversion_guard": guard}, f, indent=2)
    return 0 if guard is None or guard["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
