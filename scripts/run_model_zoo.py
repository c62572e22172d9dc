"""Checks and verifies the model zoo built by `scripts/make_model_zoo.py` and prints its tables.

For every `<model>.<variant>.tflite` of DIR: `nnconv check --api-level all` (partitions and refused ops
per API level 27..35) and `nnconv verify --allow-partial` at API 29 and 30 (whole-model, or partition by
partition when some ops stay on the CPU; a failing model is verified again with `--per-op` to name the op
responsible). Each command runs as `python -m nnconv` from this repository in its own process,
so one model's failure cannot stop the others and the figures are those a user gets from the CLI.

    python scripts/run_model_zoo.py ZOO_DIR [--out tables.md] [--json results.json]
                                    [--baseline before.json] [--only NAME ...] [--no-verify] [--jobs N]
                                    [--keep earlier.json [--missing]]

The Markdown it prints (or writes to `--out`) is the "TensorFlow converter" part of `docs/model-zoo.md`:
the one-partition counts per level, the per-model table, refusals, models the converter did not write and
the architectures. `--json` also saves the raw results; `--baseline` takes such a file (e.g. measured on an
older commit) and adds its one-partition counts to the summary for comparison.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import pathlib
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

REPO = pathlib.Path(__file__).resolve().parent.parent
LEVELS = (27, 28, 29, 30, 31, 33, 34, 35)  # API 32 is feature level 5, as 31
VERIFY_LEVELS = (29, 30)
TIMEOUT_S = 600


@dataclass
class ZooResult:
    """One model of the zoo: per level the check's summary and refused ops, per verify level the verdict."""

    name: str
    ops: int = 0
    levels: dict[str, dict[str, Any]] = field(default_factory=dict)
    refused: dict[str, list[str]] = field(default_factory=dict)
    verify: dict[str, dict[str, Any]] = field(default_factory=dict)
    error: str = ""

    def whole(self, level: int) -> bool:
        """True when every op lowers at `level`: the model is one NNAPI partition."""
        s = self.levels.get(str(level))
        return bool(s) and s["ops_refused"] == 0 and s["partitions_formed"] == 1


def nnconv(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nnconv", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=TIMEOUT_S)


def last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""


def check(path: pathlib.Path, result: ZooResult) -> None:
    proc = nnconv("check", str(path), "--api-level", "all", "--format", "json")
    try:
        data = json.loads(proc.stdout)
    except json.JSONDecodeError:
        result.error = f"check exit {proc.returncode}: {last_line(proc.stderr)}"
        return
    result.ops = len(data["ops"])
    result.levels = data["summary_by_level"]
    for level in data["levels"]:
        refused = [op["op"] for op in data["ops"]
                   if op["status_by_level"][str(level)] not in ("lowered", "folded", "driver_warning")]
        result.refused[str(level)] = [f"{name} x{n}" if n > 1 else name for name, n in Counter(refused).items()]


def verify(path: pathlib.Path, level: int) -> dict[str, Any]:
    """`nnconv verify --allow-partial` (partition by partition when some ops stay on the CPU); when an
    output fails, again with `--per-op` to name the first op whose output diverges."""
    proc = nnconv("verify", str(path), "--api-level", str(level), "--allow-partial", "--format", "json")
    try:
        data = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return {"exit": proc.returncode, "message": last_line(proc.stderr)}
    failing = [o for o in data["outputs"] if not o["passed"]]
    culprit = None
    if failing:
        again = nnconv("verify", str(path), "--api-level", str(level), "--allow-partial", "--per-op",
                       "--format", "json")
        try:
            culprit = json.loads(again.stdout).get("first_divergent_op")
        except json.JSONDecodeError:
            culprit = None
    return {"exit": proc.returncode, "passed": data["passed"], "first_divergent_op": culprit,
            "partitions": len({o["name"].split("/")[0] for o in data["outputs"] if o["name"][:1] == "p"
                               and "/" in o["name"] and o["name"].split("/")[0][1:].isdigit()}),
            "failing": [{"name": o["name"], "max_abs": o["max_abs"], "max_lsb": o["max_lsb"],
                         "tolerance": o["tolerance"], "detail": o["detail"][:200]} for o in failing]}


def measure(path: pathlib.Path, with_verify: bool) -> ZooResult:
    started = time.monotonic()
    result = ZooResult(path.name[: -len(".tflite")])
    check(path, result)
    if with_verify and not result.error:
        result.verify = {str(lv): verify(path, lv) for lv in VERIFY_LEVELS}
    print(f"{result.name}: {level_cells(result)[3]} at API 30, verify {verify_cell(result, 30)} "
          f"({time.monotonic() - started:.0f} s)", file=sys.stderr, flush=True)
    return result


def run(zoo: pathlib.Path, only: list[str] | None, with_verify: bool, jobs: int = 1,
        skip: set[str] = frozenset()) -> list[ZooResult]:
    paths = [p for p in sorted(zoo.glob("*.tflite"))
             if (not only or p.name.split(".")[0] in only) and p.name[: -len(".tflite")] not in skip]
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:  # each job is a process
        return list(pool.map(lambda p: measure(p, with_verify), paths))


# -- rendering ----------------------------------------------------------------------------------------
def level_cells(result: ZooResult) -> list[str]:
    """Per level: `1` for a whole model; else `P (C%)` with P the partitions formed and C the share of ops
    the delegate takes under its 3-partition limit; `0` when no op lowers."""
    cells = []
    for level in LEVELS:
        s = result.levels.get(str(level))
        if s is None:
            cells.append("error")
        elif result.whole(level):
            cells.append("**1**")
        else:
            cells.append(f"{s['partitions_formed']} ({s['coverage']:.0f}%)")
    return cells


def verify_cell(result: ZooResult, level: int) -> str:
    v = result.verify.get(str(level))
    if v is None:
        return "-"
    if "passed" not in v:
        return {3: "not convertible"}.get(v["exit"], f"exit {v['exit']}: {_md(v['message'])}")
    where = f" ({v['partitions']} partitions)" if v["partitions"] > 1 else ""
    if v["passed"]:
        return f"PASS{where}"
    worst = v["failing"][0]
    err = f"{worst['max_lsb']} LSB" if worst["max_lsb"] is not None else f"{worst['max_abs']:.2g}"
    culprit = v.get("first_divergent_op")
    blame = f"; first divergent op: {_md(_op_name(culprit))}" if culprit else ""
    return f"FAIL{where}: {_md(worst['name'])} {err}{blame}"


def _op_name(op: Any) -> str:
    """`--per-op`'s first divergent op, as `#index NAME` when it is a record."""
    if isinstance(op, dict):
        return f"#{op.get('op_index', op.get('index', '?'))} {op.get('op', '')}".strip()
    return str(op)


def _md(text: str) -> str:
    return str(text).replace("|", "\\|")


def one_partition_counts(results: list[dict[str, Any]] | list[ZooResult]) -> dict[int, int]:
    rows = [r if isinstance(r, ZooResult) else ZooResult(**r) for r in results]
    return {lv: sum(1 for r in rows if r.whole(lv)) for lv in LEVELS}


def render(results: list[ZooResult], baseline: dict | None, manifest: dict) -> str:
    counts = one_partition_counts(results)
    head = "| | " + " | ".join(f"API {lv}" for lv in LEVELS) + " |"
    sep = "| --- " * (len(LEVELS) + 1) + "|"
    lines = [
        "### Models in one partition",
        "",
        f"Of {len(results)} models, how many lower whole (every op on NNAPI, one partition) at each level:",
        "",
        head, sep,
    ]
    if baseline:
        before = one_partition_counts(baseline["results"])
        lines.append(f"| before ({baseline.get('label', 'baseline')}) | "
                     + " | ".join(str(before[lv]) for lv in LEVELS) + " |")
    lines.append("| now | " + " | ".join(str(counts[lv]) for lv in LEVELS) + " |")
    passed = {lv: sum(1 for r in results if r.verify.get(str(lv), {}).get("passed")) for lv in VERIFY_LEVELS}
    lines += ["", "`nnconv verify` passes (whole model, or partition by partition around CPU ops) on "
              + ", ".join(f"{passed[lv]}/{len(results)} at API {lv}" for lv in VERIFY_LEVELS) + ".", ""]
    lines += [
        "### Per model",
        "",
        "Cells: **1** = the whole model in one partition; `P (C%)` = P partitions formed, C% of the ops on NNAPI",
        "under the delegate's default limit of 3 partitions. Verify: PASS within the documented tolerance",
        "(README), or the first failing output and its error.",
        "",
        "| model | ops | " + " | ".join(str(lv) for lv in LEVELS) + " | verify 29 | verify 30 |",
        "| --- " * (len(LEVELS) + 4) + "|",
    ]
    for r in results:
        if r.error:
            lines.append(f"| {r.name} | | {_md(r.error)} |" + " |" * (len(LEVELS) + 1))
            continue
        lines.append(f"| {r.name} | {r.ops} | " + " | ".join(level_cells(r)) + " | "
                     + " | ".join(verify_cell(r, lv) for lv in VERIFY_LEVELS) + " |")
    refused_30 = [r for r in results if r.refused.get("30")]
    if refused_30:
        lines += ["", "### Ops refused at API 30", "", "| model | refused ops |", "| --- | --- |"]
        lines += [f"| {r.name} | {_md(', '.join(r.refused['30']))} |" for r in refused_30]
    not_built = sorted(name for name, m in manifest.items() if "error" in m)
    if not_built:
        lines += ["", "### Not converted by TensorFlow", "", "| model | converter's message |", "| --- | --- |"]
        lines += [f"| {name} | {_md(manifest[name]['error'][:160])} |" for name in not_built]
    if manifest:
        archs = {m["architecture"]: m["what"] for m in manifest.values()}
        lines += ["", "### Architectures", "", "| name | what |", "| --- | --- |"]
        lines += [f"| {name} | {_md(what)} |" for name, what in sorted(archs.items())]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("zoo", type=pathlib.Path, help="directory written by make_model_zoo.py")
    ap.add_argument("--out", type=pathlib.Path, default=None, help="write the tables here (default: stdout)")
    ap.add_argument("--json", type=pathlib.Path, default=None, help="also save the raw results here")
    ap.add_argument("--baseline", type=pathlib.Path, default=None, help="raw results of an earlier run")
    ap.add_argument("--label", default=None, help="label of this run inside --json (e.g. a commit)")
    ap.add_argument("--only", nargs="*", default=None, help="architecture names")
    ap.add_argument("--no-verify", action="store_true")
    ap.add_argument("--jobs", type=int, default=1, help="models measured at once (one process each)")
    ap.add_argument("--keep", type=pathlib.Path, default=None,
                    help="raw results of an earlier run (--json) kept for the models not measured now")
    ap.add_argument("--missing", action="store_true", help="with --keep: measure only models it lacks")
    args = ap.parse_args(argv)
    if not args.zoo.is_dir():
        print(f"error: {args.zoo} is not a directory", file=sys.stderr)
        return 2
    kept = {r["name"]: ZooResult(**r) for r in json.loads(args.keep.read_text())["results"]} if args.keep else {}
    skip = set(kept) if args.missing else set()
    measured = run(args.zoo, args.only, not args.no_verify, args.jobs, skip)
    results = sorted({**kept, **{r.name: r for r in measured}}.values(), key=lambda r: r.name)
    manifest_path = args.zoo / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    baseline = json.loads(args.baseline.read_text()) if args.baseline else None
    if args.json:
        args.json.write_text(json.dumps({"label": args.label or "", "results": [r.__dict__ for r in results]},
                                        indent=1) + "\n")
    text = render(results, baseline, manifest)
    if args.out:
        args.out.write_text(text)
    else:
        print(text)
    counts = one_partition_counts(results)
    print("one partition: " + ", ".join(f"API {lv}: {n}/{len(results)}" for lv, n in counts.items()),
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
