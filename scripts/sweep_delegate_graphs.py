"""Runs every NNAPI graph TFLite's NNAPI delegate builds on our executor and compares it with TFLite.

    python scripts/sweep_delegate_graphs.py [--levels 27,28,...] [--jobs 2] [--only SUBSTR] [--json OUT.json] [-v]

For every `.tflite` model that a recording of `../shared/delegate/recordings/*/*.json` names (its `model`
field: a path relative to the repository, or `../shared/...` for `../shared/delegate/models/ops/<name>`;
`$NNCONV_SHARED_DIR` points at another copy of `shared/`)
and every API level, `nnconv.prepare(path, level).plan()` gives the delegate's partitions. Each partition is
put in one category:

| category | meaning |
| --- | --- |
| refused | the partition carries an `error`: our validator (nnconv/nnapi/operations/, Android's runtime
  checks and the reference CPU's prepare-time ones) refuses the graph the delegate built |
| kernel | our executor raised while running the partition (a kernel refused or crashed) |
| FAIL | it ran, and an output is out of tolerance against TFLite, also against TFLite's reference kernels
  (the first divergent op is named, by `verify --per-op`'s rule) |
| ran | it ran and every output is within tolerance |

A model-level takes its worst partition's category (refused > kernel > FAIL > ran); one with no partition is
`none` (the delegate takes nothing, or a whole-model failure), one whose model TFLite or nnconv cannot load is
`error`. Partitions are fed TFLite's own tensors at their boundary (seeded inputs, seed 0, as `nnconv verify`
does), so an error never carries over from one partition to the next.

The model's TFLite run is made once and kept for every level: the inputs do not depend on the level.
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import multiprocessing
import os
import sys
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.environ.get("NNCONV_SHARED_DIR", os.path.join(os.path.dirname(ROOT), "shared"))
RECORDINGS = os.path.join(SHARED, "delegate", "recordings")
OPS_MODELS = os.path.join(SHARED, "delegate", "models", "ops")
LEVELS = (27, 28, 29, 30, 31, 33, 34, 35)
ORDER = {"refused": 4, "kernel": 3, "FAIL": 2, "ran": 1, "none": 0, "error": 5}


def model_paths(recordings: str = RECORDINGS) -> list[str]:
    """The models the recordings name, each once, as paths that exist on this machine."""
    seen: dict[str, None] = {}
    for f in sorted(glob.glob(os.path.join(recordings, "*", "*.json"))):
        with open(f) as fh:
            model = json.load(fh)["model"]
        if model.startswith("../shared/"):
            # the ops models were recorded from ../shared/...; they live in the shared models folder
            path = os.path.join(OPS_MODELS, os.path.basename(model))
        else:
            path = os.path.join(ROOT, model)
        seen[path] = None
    return list(seen)


class _Tflite:
    """TFLite's tensors for one model on seeded inputs, run once and kept (builtin kernels; the reference
    kernels made on first need, for quantized outputs out of tolerance against the builtin ones)."""

    def __init__(self, prepared) -> None:
        from nnconv.parity.verify import TfliteReference, random_inputs
        self.reference = TfliteReference.of(prepared.model, prepared.source)
        self.specs = prepared.io_specs(prepared.model.subgraphs[0].inputs)
        self.feed = random_inputs(self.specs, 0)
        # dynamic-range models run on their float twin (parity/twin.py), as `verify` does
        self.hybrid = self.reference.twin is None and self.reference.hybrid
        self.source = self.reference.twin if self.reference.twin is not None else self.reference.source
        self.builtin = self._run("builtin")
        self._ref = None
        self._ref_error: str | None = None

    def _run(self, kernels: str):
        from nnconv.parity.tflite_runner import TfliteRunner
        import numpy as np
        runner = TfliteRunner(self.source, kernels=kernels, preserve_all_tensors=True)
        runner.run({s.tflite_tensor: np.asarray(self.feed[s.name]) for s in self.specs})
        return runner

    def reference_kernels(self):
        from nnconv.errors import NnconvError
        if self._ref is None and self._ref_error is None:
            try:
                self._ref = self._run("reference")
            except NnconvError as e:
                self._ref_error = str(e)
        return self._ref


def _lsb(row) -> str:
    if row.max_lsb is not None:
        return f"{row.max_lsb} LSB"
    return f"max|diff| {row.max_abs:.3g}"


def _partition(prepared, k: int, cm, tfl: _Tflite) -> dict:
    """One converted partition run and compared (see the module docstring)."""
    from nnconv.parity.per_op import per_op_parity
    from nnconv.parity.verify import compare
    from nnconv.runtime.executor import Executor
    ops = [f"#{i} {prepared.model.subgraphs[0].operators[i].name}" for i in cm.tflite_ops]
    nn_ops = sorted({op.type.name for op in cm.model.main.operations})
    row: dict = {"partition": k, "ops": ops, "nnapi_ops": nn_ops}
    try:
        ex = Executor(cm)
        ours = ex.run({s.name: tfl.builtin.tensor(s.tflite_tensor) for s in cm.inputs if not s.variable})
    except Exception as e:  # noqa: BLE001 - a sweep records every failure and goes on
        row.update(category="kernel", reason=f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        return row
    outs = [compare(s.name, ours[s.name], tfl.builtin.tensor(s.tflite_tensor), tfl.hybrid) for s in cm.outputs]
    runner = tfl.builtin
    if not all(o.passed for o in outs):
        # As `verify` does for quantized outputs, and here for float ones too (a DEQUANTIZE after integer
        # ops): the NNAPI reference follows TFLite's reference kernels, not its optimized ones.
        ref = tfl.reference_kernels()
        if ref is not None:
            ours_ref = Executor(cm).run({s.name: ref.tensor(s.tflite_tensor) for s in cm.inputs if not s.variable})
            again = [compare(s.name, ours_ref[s.name], ref.tensor(s.tflite_tensor), tfl.hybrid) for s in cm.outputs]
            if all(a.passed for a in again) or sum(a.passed for a in again) > sum(o.passed for o in outs):
                row["note"] = ("compared with TFLite's reference kernels; the builtin ones differ by " +
                               ", ".join(_lsb(o) for o in outs if not o.passed))
                outs, runner = again, ref
    row["outputs"] = [{"name": o.name, "dtype": o.dtype, "passed": o.passed, "max_abs": o.max_abs,
                       "max_lsb": o.max_lsb} for o in outs]
    if all(o.passed for o in outs):
        row["category"] = "ran"
        return row
    row["category"] = "FAIL"
    bad = [o for o in outs if not o.passed]
    row["reason"] = "; ".join(f"{o.name}: {_lsb(o)}" for o in bad)
    try:
        report = per_op_parity(prepared, [cm], runner.tensor, tfl.hybrid)
        first = report.first_divergent or report.first_large
        if first is not None:
            row["first_divergent_op"] = {"op_index": first.op_index, "op": first.op, "status": first.status,
                                         "max_abs": first.max_abs, "lsb": first.lsb}
    except Exception as e:  # noqa: BLE001
        row["per_op_error"] = f"{type(e).__name__}: {e}"
    return row


def sweep_model(args: tuple[str, tuple[int, ...]]) -> dict:
    """Every level of one model: {"model", "levels": {level: {"category", "partitions": [...]}}}."""
    path, levels = args
    import nnconv
    from nnconv.errors import NnconvError
    name = os.path.relpath(path, ROOT) if path.startswith(ROOT) else path
    out: dict = {"model": name, "levels": {}}
    tfl: _Tflite | None = None
    tfl_error: str | None = None
    base = None
    for level in levels:
        entry: dict = {"partitions": []}
        out["levels"][str(level)] = entry
        started = time.monotonic()
        try:
            prepared = base.at_level(level) if base is not None else nnconv.prepare(path, level)
            base = base or prepared
            plan = prepared.plan()
        except Exception as e:  # noqa: BLE001
            entry.update(category="error", reason=f"prepare: {type(e).__name__}: {str(e).splitlines()[0]}")
            continue
        converted = iter(plan.converted)
        for part in plan.partitions:
            if part.error:
                entry["partitions"].append({"partition": part.index, "category": "refused", "reason": part.error,
                                            "ops": [f"#{i}" for i in part.ops]})
                continue
            cm = next(converted)
            if tfl is None and tfl_error is None:
                try:
                    tfl = _Tflite(prepared)
                except NnconvError as e:
                    tfl_error = str(e)
                except Exception as e:  # noqa: BLE001
                    tfl_error = f"{type(e).__name__}: {e}"
            if tfl is None:
                entry["partitions"].append({"partition": part.index, "category": "error",
                                            "reason": f"TFLite: {tfl_error}"})
                continue
            try:
                entry["partitions"].append(_partition(prepared, part.index, cm, tfl))
            except Exception as e:  # noqa: BLE001
                entry["partitions"].append({"partition": part.index, "category": "error",
                                            "reason": f"sweep: {type(e).__name__}: {e}",
                                            "traceback": traceback.format_exc(limit=4)})
        cats = [p["category"] for p in entry["partitions"]]
        entry["category"] = max(cats, key=ORDER.__getitem__) if cats else "none"
        if not cats:
            entry["reason"] = plan.outcome_reason or plan.outcome
        entry["seconds"] = round(time.monotonic() - started, 3)
    return out


def summarize(results: list[dict], levels: tuple[int, ...], verbose: bool) -> str:
    lines = []
    cats = ["ran", "refused", "kernel", "FAIL", "none", "error"]
    lines.append("model-levels by category (a model-level takes its worst partition's)")
    lines.append(f"{'level':>6} " + " ".join(f"{c:>8}" for c in cats))
    total = collections.Counter()
    parts = collections.Counter()
    for level in levels:
        c = collections.Counter(r["levels"][str(level)]["category"] for r in results if str(level) in r["levels"])
        total.update(c)
        lines.append(f"{level:>6} " + " ".join(f"{c[k]:>8}" for k in cats))
    lines.append(f"{'all':>6} " + " ".join(f"{total[k]:>8}" for k in cats))
    for r in results:
        for e in r["levels"].values():
            parts.update(p["category"] for p in e["partitions"])
    lines.append("partitions: " + ", ".join(f"{k} {parts[k]}" for k in cats if parts[k]))
    # the problems, grouped by model and by the same reason across levels
    for cat in ("refused", "kernel", "FAIL", "error"):
        grouped: dict[tuple[str, str], list[str]] = collections.defaultdict(list)
        for r in results:
            for level, e in r["levels"].items():
                rows = [p for p in e["partitions"] if p["category"] == cat]
                if cat == "error" and e["category"] == "error" and not rows:
                    rows = [e]
                for p in rows:
                    why = p.get("reason", "")
                    if cat == "FAIL" and "first_divergent_op" in p:
                        f = p["first_divergent_op"]
                        lsb = f"{f['lsb']} LSB" if f["lsb"] is not None else f"{f['max_abs']:.3g}"
                        why += f" [first divergent: #{f['op_index']} {f['op']} ({f['status']}, {lsb})]"
                    if cat == "FAIL" and not verbose:
                        why += f" nnapi ops {','.join(p.get('nnapi_ops', []))}"
                    grouped[(r["model"], why)].append(level)
        if grouped:
            lines.append("")
            lines.append(f"== {cat} ({len(grouped)})")
            for (model, why), lv in sorted(grouped.items()):
                lines.append(f"  {model} @ {','.join(lv)}: {why}")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--levels", default=",".join(map(str, LEVELS)))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", action="append", default=[], help="models whose path contains this (repeatable)")
    ap.add_argument("--json", help="write every row to this file")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    levels = tuple(int(x) for x in args.levels.split(","))
    os.chdir(ROOT)  # the recordings' paths are relative to the repository
    paths = model_paths()
    if args.only:
        paths = [p for p in paths if any(s in p for s in args.only)]
    start = time.monotonic()
    work = [(p, levels) for p in paths]
    if args.jobs > 1:
        with multiprocessing.get_context("spawn").Pool(args.jobs, maxtasksperchild=20) as pool:
            results = list(pool.imap_unordered(sweep_model, work, chunksize=1))
    else:
        results = [sweep_model(w) for w in work]
    results.sort(key=lambda r: r["model"])
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"levels": levels, "results": results}, fh, indent=1)
    print(summarize(results, levels, args.verbose))
    print(f"\n{len(paths)} models x {len(levels)} levels in {time.monotonic() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, ROOT)
    sys.exit(main())
