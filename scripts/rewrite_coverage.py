"""Measures `nnconv rewrite` on folders of models: what TFLite's NNAPI delegate takes before and after.

For every `.tflite` of each folder: `nnconv check MODEL --target delegate --format json` (before; and
`--target nnconv`, to count the models nnconv's own converter takes whole and the delegate does not),
`nnconv rewrite MODEL -o OUT --format json`, and `nnconv check OUT --target delegate --format json` (after),
at one API level, one `python -m nnconv` process per command. Prints Markdown: one row per writer (models,
taken whole before and after, rewritten, proof passed) and one row per model that the rewrite changed or
that the delegate does not take whole. The table of docs/rewrite.md comes from this script.

    python scripts/rewrite_coverage.py "TensorFlow converter=ZOO_DIR" "MediaPipe=MP_DIR" [--api-level 30]
                                       [--out OUT_DIR] [--jobs 2] [--json coverage.json]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import pathlib
import subprocess
import sys
import tempfile
from typing import Any


def _nnconv(*args: str) -> tuple[int, Any]:
    done = subprocess.run([sys.executable, "-m", "nnconv", *args], capture_output=True, text=True, check=False)
    try:
        return done.returncode, json.loads(done.stdout)
    except json.JSONDecodeError:
        return done.returncode, {"error": (done.stderr.strip().splitlines() or [""])[-1]}


def _view(check: dict[str, Any]) -> dict[str, Any]:
    """Whole / partitions / ops on NNAPI from `check --format json` (a refused or failed delegation: 0)."""
    if "summary" not in check:
        return {"whole": False, "line": check.get("error", "?"), "outcome": "error", "on_nnapi": 0, "ops": 0}
    s = check["summary"]
    runs = check.get("outcome") == "delegated" and not any(p.get("error") for p in check.get("partitions", []))
    on = s["ops_delegated"] if runs else 0
    return {"whole": runs and s["partitions"] == 1 and on == s["ops_total"], "outcome": check.get("outcome"),
            "on_nnapi": on, "ops": s["ops_total"], "partitions": s["partitions"] if runs else 0,
            "line": s["line"] if runs else check.get("outcome", "?")}


def measure(model: pathlib.Path, out_dir: pathlib.Path, level: int) -> dict[str, Any]:
    out = out_dir / model.name
    _, before = _nnconv("check", str(model), "--target", "delegate", "--api-level", str(level), "--format", "json")
    _, ours = _nnconv("check", str(model), "--target", "nnconv", "--api-level", str(level), "--format", "json")
    code, report = _nnconv("rewrite", str(model), "-o", str(out), "--api-level", str(level), "--format", "json")
    after = before
    if code == 0 and out.exists():
        _, after = _nnconv("check", str(out), "--target", "delegate", "--api-level", str(level), "--format", "json")
    nnconv_whole = ours.get("summary", {}).get("coverage") == 100.0 and ours["summary"].get("partitions") == 1
    return {"model": model.name, "before": _view(before), "after": _view(after), "exit_code": code,
            "nnconv_whole": bool(nnconv_whole),
            "rewritten": bool(report.get("rewritten")), "steps": [s["name"] for s in report.get("steps", [])],
            "proof": (report.get("proof") or {}).get("passed"), "error": report.get("error", "")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="+", help="WRITER=DIR")
    ap.add_argument("--api-level", type=int, default=30)
    ap.add_argument("--out", type=pathlib.Path, default=None, help="where the rewritten models go")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", type=pathlib.Path, default=None)
    args = ap.parse_args(argv)
    out_root = args.out or pathlib.Path(tempfile.mkdtemp(prefix="rewrite_coverage_"))
    rows: dict[str, list[dict[str, Any]]] = {}
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for spec in args.folders:
            writer, _, folder = spec.partition("=")
            out_dir = out_root / writer.replace(" ", "_")
            out_dir.mkdir(parents=True, exist_ok=True)
            models = sorted(pathlib.Path(folder).glob("*.tflite"))
            rows[writer] = list(pool.map(lambda m: measure(m, out_dir, args.api_level), models))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    print("| writer | models | delegate whole before | after | runs on NNAPI before | after | rewritten (proof "
          "passed) | nnconv whole, delegate not: whole after | exit != 0 |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for writer, found in rows.items():
        gap = [r for r in found if r["nnconv_whole"] and not r["before"]["whole"]]
        print(f"| {writer} | {len(found)} | {sum(r['before']['whole'] for r in found)} | "
              f"{sum(r['after']['whole'] for r in found)} | {sum(r['before']['on_nnapi'] > 0 for r in found)} | "
              f"{sum(r['after']['on_nnapi'] > 0 for r in found)} | {sum(r['rewritten'] for r in found)} "
              f"({sum(bool(r['proof']) for r in found)}) | {sum(r['after']['whole'] for r in gap)}/{len(gap)} | "
              f"{sum(r['exit_code'] != 0 for r in found)} |")
    print("\n| writer | model | before | after | rewrites |")
    print("| --- | --- | --- | --- | --- |")
    for writer, found in rows.items():
        for r in found:
            if r["rewritten"] or not r["after"]["whole"] or r["exit_code"]:
                note = ", ".join(r["steps"]) or (f"exit {r['exit_code']}: {r['error']}" if r["exit_code"] else "-")
                print(f"| {writer} | {r['model']} | {r['before']['line']} | {r['after']['line']} | {note} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
