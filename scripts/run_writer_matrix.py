"""Checks and verifies the writer matrix (models of several writers and recipes) and prints its tables.

For every model of the folders given (written by `scripts/make_aeq_zoo.py`, `scripts/make_litert_torch_zoo.py`
or `scripts/make_model_zoo.py`, each folder with its `manifest.json` naming the writer and recipe of each
model): `nnconv check --api-level all` (partitions per level) and `nnconv verify --allow-partial` at the
verify levels (API 30 by default; a failing model is verified again with `--per-op` to name the op
responsible), as `scripts/run_model_zoo.py` measures its zoo, one `python -m nnconv` process per command.

    python scripts/run_writer_matrix.py AEQ_DIR TORCH_DIR [--json matrix.json] [--md matrix.md]
                                        [--verify-levels 30] [--jobs N] [--keep matrix.json --missing]

Prints (or writes to `--md`) two Markdown tables: one row per writer x recipe (models, whole at API 29 and
30, verify PASS) and one row per model; the models a writer refused are listed from the manifests.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import pathlib
import sys
import time
from collections import Counter, defaultdict
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from run_model_zoo import ZooResult, _md, check, verify, verify_cell  # noqa: E402

TABLE_LEVELS = (29, 30)
WRITER_ORDER = ("TensorFlow converter", "AI Edge Quantizer", "litert-torch", "litert-torch + AI Edge Quantizer")


def _order(key: tuple[str, str]) -> tuple[int, str, str]:
    """Writers in the order of the docs (known ones first), then recipes by name."""
    rank = WRITER_ORDER.index(key[0]) if key[0] in WRITER_ORDER else len(WRITER_ORDER)
    return rank, key[0], key[1]


def writer_of(path: pathlib.Path, manifest: dict[str, Any]) -> tuple[str, str]:
    """(writer, recipe) of a model, from its folder's manifest (make_model_zoo.py's names its variant)."""
    name = path.name.removesuffix(".tflite")
    entry = manifest.get(name, {})
    if "writer" in entry:
        return entry["writer"], entry["recipe"]
    return "TensorFlow converter", name.split(".")[-1]


def measure(path: pathlib.Path, verify_levels: list[int]) -> dict[str, Any]:
    started = time.monotonic()
    result = ZooResult(path.name.removesuffix(".tflite"))
    check(path, result)
    if not result.error:
        result.verify = {str(lv): verify(path, lv) for lv in verify_levels}
    row = {**result.__dict__, "path": str(path)}
    print(f"{result.name}: {cell(result, 30)} at API 30, verify "
          f"{', '.join(verify_cell(result, lv) for lv in verify_levels)} ({time.monotonic() - started:.0f} s)",
          file=sys.stderr, flush=True)
    return row


def cell(result: ZooResult, level: int) -> str:
    """`1` for a whole model; `P (C%)` with P partitions formed and C% of its ops on NNAPI."""
    s = result.levels.get(str(level))
    if s is None:
        return "error"
    if result.whole(level):
        return "**1**"
    return f"{s['partitions_formed']} ({s['coverage']:.0f}%)"


def refused_at(result: ZooResult, level: int) -> str:
    return ", ".join(result.refused.get(str(level), []))


def render(rows: list[dict[str, Any]], manifests: dict[str, dict[str, Any]], verify_levels: list[int]) -> str:
    groups: dict[tuple[str, str], list[tuple[dict[str, Any], ZooResult]]] = defaultdict(list)
    for row in rows:
        result = ZooResult(**{k: v for k, v in row.items() if k in ZooResult.__dataclass_fields__})
        groups[(row["writer"], row["recipe"])].append((row, result))
    failed: dict[tuple[str, str], list[str]] = defaultdict(list)
    for folder, manifest in manifests.items():
        for name, entry in manifest.items():
            if "error" in entry:
                writer = entry.get("writer", "TensorFlow converter")
                failed[(writer, entry.get("recipe", name.split(".")[-1]))].append(name.split(".")[0])
    lines = ["| writer | recipe | models | whole at 29 | whole at 30 | "
             + " | ".join(f"verify PASS at {lv}" for lv in verify_levels) + " | not written by the writer |",
             "| --- " * (6 + len(verify_levels)) + "|"]
    for key in sorted(set(groups) | set(failed), key=_order):
        members = groups.get(key, [])
        whole = [sum(1 for _, r in members if r.whole(lv)) for lv in TABLE_LEVELS]
        passed = [sum(1 for _, r in members if r.verify.get(str(lv), {}).get("passed")) for lv in verify_levels]
        n = len(members)
        lines.append(f"| {key[0]} | {key[1]} | {n} | {whole[0]}/{n} | {whole[1]}/{n} | "
                     + " | ".join(f"{p}/{n}" for p in passed) + f" | {', '.join(sorted(failed.get(key, []))) or '-'} |")
    lines += ["", "| model | writer | ops | 29 | 30 | "
              + " | ".join(f"verify {lv}" for lv in verify_levels) + " | refused at 30 |",
              "| --- " * (6 + len(verify_levels)) + "|"]
    for key in sorted(groups, key=_order):
        for row, r in sorted(groups[key], key=lambda m: m[1].name):
            if r.error:
                lines.append(f"| {r.name} | {key[0]} | | {_md(r.error)} | |" + " |" * (len(verify_levels) + 1))
                continue
            lines.append(f"| {r.name} | {key[0]} | {r.ops} | {cell(r, 29)} | {cell(r, 30)} | "
                         + " | ".join(verify_cell(r, lv) for lv in verify_levels)
                         + f" | {_md(refused_at(r, 30)) or '-'} |")
    errors = [(name, entry) for m in manifests.values() for name, entry in sorted(m.items()) if "error" in entry]
    if errors:
        lines += ["", "| not written | writer | message |", "| --- | --- | --- |"]
        lines += [f"| {name} | {e.get('writer', 'TensorFlow converter')} | {_md(e['error'][:200])} |"
                  for name, e in errors]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="+", type=pathlib.Path, help="folders of models with a manifest.json")
    ap.add_argument("--json", type=pathlib.Path, default=None, help="save the raw results here")
    ap.add_argument("--md", type=pathlib.Path, default=None, help="write the tables here (default: stdout)")
    ap.add_argument("--verify-levels", nargs="*", type=int, default=[30])
    ap.add_argument("--jobs", type=int, default=1, help="models measured at once (one process each)")
    ap.add_argument("--keep", type=pathlib.Path, default=None, help="raw results (--json) of an earlier run")
    ap.add_argument("--missing", action="store_true", help="with --keep: measure only models it lacks")
    args = ap.parse_args(argv)
    manifests, jobs = {}, []
    for folder in args.folders:
        if not folder.is_dir():
            print(f"error: {folder} is not a directory", file=sys.stderr)
            return 2
        mpath = folder / "manifest.json"
        manifests[str(folder)] = json.loads(mpath.read_text()) if mpath.exists() else {}
        jobs += [(p, manifests[str(folder)]) for p in sorted(folder.glob("*.tflite"))]
    kept = {r["path"]: r for r in json.loads(args.keep.read_text())["results"]} if args.keep else {}
    todo = [(p, m) for p, m in jobs if not (args.missing and str(p) in kept)]

    def one(job: tuple[pathlib.Path, dict[str, Any]]) -> dict[str, Any]:
        row = measure(job[0], args.verify_levels)
        row["writer"], row["recipe"] = writer_of(*job)
        return row

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:  # each job is a process
        measured = {r["path"]: r for r in pool.map(one, todo)}
    rows = [measured.get(str(p)) or kept[str(p)] for p, _ in jobs if str(p) in measured or str(p) in kept]
    if args.json:
        args.json.write_text(json.dumps({"results": rows}, indent=1) + "\n")
    text = render(rows, manifests, args.verify_levels)
    if args.md:
        args.md.write_text(text)
    else:
        print(text)
    counts = Counter((r["writer"], r["recipe"]) for r in rows)
    print(f"{len(rows)} models, {len(counts)} writer x recipe pairs", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
