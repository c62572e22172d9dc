"""Issue 28's ratios on a shared machine: our executor, TFLite + XNNPACK and TFLite's builtin kernels,
timed in alternation round by round in one process.

    python benchmarks/paired.py MODELS_OR_DIRS ... [--rounds 7] [--batch 32] [--api-level 30] [--json FILE]

Each round times, one after the other, one run of each TFLite kernel set, one single run of ours, and
`--batch` samples through `Executor.run_batch` (per sample), on the calling thread's CPU clock at 1 thread.
Each figure is the median over rounds of its ratio to the same round's TFLite time, so a slow spell of the
machine (another tenant on the same core) moves both sides of a ratio alike; `run.py` times each engine in
its own block of runs and is better for absolute times on an idle machine. Prints, per model, ours /
XNNPACK, ours / builtin and batched per sample / builtin and / XNNPACK, then the geometric means per group
(float / quantized inputs).
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import nnconv  # noqa: E402
from nnconv.parity import random_inputs  # noqa: E402
from nnconv.parity.tflite_runner import BUILTIN_KERNELS, XNNPACK, TfliteRunner  # noqa: E402

sys.path.insert(0, str(ROOT / "benchmarks"))
from run import converted_row, cpu_flags, model_paths, tflite_feed  # noqa: E402

RATIOS = ("ours_over_xnnpack", "ours_over_builtin", "batched_over_xnnpack", "batched_over_builtin")


def cpu_seconds(fn) -> float:
    t0 = time.thread_time()
    fn()
    return time.thread_time() - t0


def bench(path: str, rounds: int, batch: int, api_level: int) -> dict:
    row, converted = converted_row(path, api_level)
    if converted is None:
        return row
    row["quantized"] = bool(converted.inputs) and np.dtype(converted.inputs[0].np_dtype).kind in "iu"
    feed = random_inputs(converted.inputs, seed=0)
    executor = nnconv.Executor(converted, blas_threads=1)
    stacked = {name: np.stack([x] * batch) for name, x in feed.items()}  # recurrent state: not fed
    engines = {key: TfliteRunner(path, kernels=kernels, num_threads=1)
               for key, kernels in (("xnnpack", XNNPACK), ("builtin", BUILTIN_KERNELS))}
    feeds = {key: tflite_feed(r, converted, feed) for key, r in engines.items()}
    timed = {"ours": lambda: executor.run(feed), "batched": lambda: executor.run_batch(stacked, max_batch=batch)}
    timed.update({key: (lambda r=r, f=feeds[key]: r.run(f)) for key, r in engines.items()})
    for fn in timed.values():  # warm-up: plans, pools, TFLite's allocation
        fn()
    per_round: dict[str, list[float]] = {k: [] for k in timed}
    for _ in range(rounds):
        for key, fn in timed.items():
            per_round[key].append(cpu_seconds(fn) / (batch if key == "batched" else 1))
    for key, times in per_round.items():
        row[f"{key}_ms"] = statistics.median(times) * 1e3
    for mine in ("ours", "batched"):
        for theirs in ("xnnpack", "builtin"):
            row[f"{mine}_over_{theirs}"] = statistics.median(
                a / b for a, b in zip(per_round[mine], per_round[theirs]))
    plan = executor.batch_plan(batch)
    row["batch_reason"] = plan.reason
    return row


def geomean(values: list[float]) -> float:
    return math.exp(statistics.fmean(math.log(v) for v in values))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", help=".tflite files or directories (default: examples/models)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--batch", type=int, default=32, help="samples per run_batch call")
    ap.add_argument("--api-level", type=int, default=30)
    ap.add_argument("--json", metavar="FILE", default=None)
    args = ap.parse_args(argv)
    if args.batch < 1:
        ap.error("--batch takes 1 or more samples (the batched figures are part of every row)")
    from threadpoolctl import threadpool_limits
    threadpool_limits(1)
    print(f"# {' '.join(cpu_flags())}; numpy {np.__version__}; 1 thread; cpu clock; {args.rounds} rounds; "
          f"batch {args.batch}")
    print(f"{'model':40} {'ours ms':>8} {'xnn ms':>7} {'blt ms':>7} {'ours/xnn':>8} {'ours/blt':>8} "
          f"{'b/xnn':>6} {'b/blt':>6}  batched")
    rows = []
    for path in model_paths(args.models):
        row = bench(path, args.rounds, args.batch, args.api_level)
        rows.append(row)
        if "error" in row:
            print(f"{row['model']:40} {row['error']}")
            continue
        print(f"{row['model']:40} {row['ours_ms']:8.2f} {row['xnnpack_ms']:7.2f} {row['builtin_ms']:7.2f} "
              f"{row['ours_over_xnnpack']:7.2f}x {row['ours_over_builtin']:7.2f}x "
              f"{row['batched_over_xnnpack']:5.2f}x {row['batched_over_builtin']:5.2f}x  "
              f"{row['batch_reason'] or 'yes'}", flush=True)
    for label, quantized in (("float", False), ("quantized", True)):
        group = [r for r in rows if "error" not in r and r["quantized"] is quantized]
        if group:
            means = ", ".join(f"{k} {geomean([r[k] for r in group]):.2f}x" for k in RATIOS)
            print(f"{label} ({len(group)}): geometric means {means}")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
