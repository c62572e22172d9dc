"""Times our numpy executor against TFLite's interpreter on the same model and inputs.

    python benchmarks/bench_executor.py [--model m.tflite ...] [--api-level 30] [--runs 20] [--json]

For each model: conversion time (read + check + lower + validate; median of 3 after a first one), then
the median of `--runs` timed inferences after `--warmup` untimed ones, for
  - our executor (`nnconv.Executor.run`, including input binding and the int8 offset handling),
  - TFLite with its builtin kernels and no delegate, 1 thread (the reference `nnconv verify` uses),
  - TFLite with XNNPACK, 1 thread (for reference: the default CPU path on devices).
TFLite timings cover set_tensor + invoke + get_tensor, so both sides copy their inputs and outputs.
Models that cannot be converted whole at the chosen level are reported with the reason and skipped.
numpy's BLAS is limited to one thread too (OPENBLAS/OMP/MKL_NUM_THREADS default to 1 here).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# One thread on both sides: numpy's BLAS would otherwise spread our matrix products over every core (and
# thrash on a loaded machine). Export these variables before running to measure something else.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

import nnconv  # noqa: E402
from nnconv.errors import NnconvError  # noqa: E402
from nnconv.parity import random_inputs  # noqa: E402
from nnconv.parity.tflite_runner import BUILTIN_KERNELS, XNNPACK, TfliteRunner  # noqa: E402

DEFAULT_MODELS = sorted(str(p) for p in (ROOT / "examples" / "models").glob("*.tflite"))


def median_ms(fn, runs: int, warmup: int) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def tflite_ms(path: str, kernels: str, feed_by_name: dict[str, np.ndarray], converted, runs: int,
              warmup: int) -> float:
    runner = TfliteRunner(path, kernels=kernels, num_threads=1)
    feed = {}
    for d in runner.input_details():
        spec = next(s for s in converted.inputs if s.tflite_tensor == d["index"] or s.name == d["name"])
        feed[d["index"]] = np.asarray(feed_by_name[spec.name])
    return median_ms(lambda: runner.run(feed), runs, warmup)


def bench_model(path: str, api_level: int, runs: int, warmup: int, options: nnconv.ConversionOptions) -> dict:
    row: dict = {"model": os.path.basename(path), "api_level": api_level, "size_kb": os.path.getsize(path) / 1024}
    try:
        converted, _report = nnconv.convert(path, api_level=api_level, options=options)
    except NnconvError as e:
        row["error"] = str(e)
        return row
    # median of 3 more conversions: the first one also pays for lazy imports and kernel discovery
    row["convert_ms"] = median_ms(lambda: nnconv.convert(path, api_level=api_level, options=options), 3, 0)
    feed = random_inputs(converted.inputs, seed=0)
    executor = nnconv.Executor(converted)
    row["nnconv_ms"] = median_ms(lambda: executor.run(feed), runs, warmup)
    for key, kernels in (("tflite_ms", BUILTIN_KERNELS), ("xnnpack_ms", XNNPACK)):
        try:
            row[key] = tflite_ms(path, kernels, feed, converted, runs, warmup)
        except NnconvError as e:
            row[key] = None
            row.setdefault("notes", []).append(f"{kernels}: {e}")
    if row.get("tflite_ms"):
        row["ratio_vs_tflite"] = row["nnconv_ms"] / row["tflite_ms"]
    if row.get("xnnpack_ms"):
        row["ratio_vs_xnnpack"] = row["nnconv_ms"] / row["xnnpack_ms"]
    return row


def fmt(value, pattern: str = "{:.2f}") -> str:
    return "-" if value is None else pattern.format(value)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", nargs="*", default=None, help="models to time (default: examples/models/*)")
    ap.add_argument("--api-level", type=int, default=30)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--fold-dynamic-range-weights", action="store_true")
    ap.add_argument("--json", action="store_true", help="print one JSON document instead of a table")
    args = ap.parse_args(argv)
    options = nnconv.ConversionOptions(fold_dynamic_range_weights=args.fold_dynamic_range_weights)
    rows = [bench_model(p, args.api_level, args.runs, args.warmup, options) for p in args.model or DEFAULT_MODELS]
    if args.json:
        print(json.dumps({"runs": args.runs, "warmup": args.warmup, "threads": 1, "results": rows}, indent=2))
        return 0
    header = (f"{'model':46} {'convert ms':>10} {'nnconv ms':>10} {'tflite ms':>10} {'ours/tfl':>9} "
              f"{'xnnpack ms':>10} {'ours/xnn':>9}")
    print(header)
    print("-" * len(header))
    for r in rows:
        if "error" in r:
            print(f"{r['model']:46} not converted at API {r['api_level']}: {r['error']}")
            continue
        print(f"{r['model']:46} {r['convert_ms']:10.1f} {r['nnconv_ms']:10.2f} {fmt(r.get('tflite_ms')):>10} "
              f"{fmt(r.get('ratio_vs_tflite'), '{:.1f}x'):>9} {fmt(r.get('xnnpack_ms')):>10} "
              f"{fmt(r.get('ratio_vs_xnnpack'), '{:.1f}x'):>9}")
    print(f"(median of {args.runs} runs after {args.warmup} warm-up runs, 1 thread, API {args.api_level})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
