"""Markdown before/after table of two `run.py --json` results (the tables of docs/performance.md).

    python benchmarks/table.py BEFORE.json AFTER.json
"""

from __future__ import annotations

import json
import math
import sys


def _fmt(v: float | None, pattern: str) -> str:
    return "-" if v is None else pattern.format(v)


def _geomean(values: list[float]) -> float | None:
    values = [v for v in values if v]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def table(before: dict, after: dict) -> str:
    old = {r["model"]: r for r in before["results"] if "error" not in r}
    lines = ["| model | ops | ours ms before | ours ms after | XNNPACK ms | ours/XNNPACK before | ours/XNNPACK after "
             "| ours/builtin after | reference/ours after |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    groups: dict[str, list[tuple[float | None, float | None, float | None]]] = {}
    for r in after["results"]:
        if "error" in r:
            continue
        b = old.get(r["model"], {})
        ref = r.get("ours_over_reference")
        lines.append(f"| {r['model'].removesuffix('.tflite')} | {r['operations']} | {_fmt(b.get('nnconv_ms'), '{:.2f}')} "
                     f"| {r['nnconv_ms']:.2f} | {_fmt(r.get('xnnpack_ms'), '{:.2f}')} "
                     f"| {_fmt(b.get('ours_over_xnnpack'), '{:.2f}x')} | {_fmt(r.get('ours_over_xnnpack'), '{:.2f}x')} "
                     f"| {_fmt(r.get('ours_over_builtin'), '{:.2f}x')} | {_fmt(1 / ref if ref else None, '{:.1f}x')} |")
        kind = ("float" if r["dtype"].startswith("float") else "quantized") + (
            " full-size" if r.get("size_mb", 0) >= 1.0 else " fixtures")
        groups.setdefault(kind, []).append((b.get("ours_over_xnnpack"), r.get("ours_over_xnnpack"),
                                            1 / ref if ref else None))
    lines.append("")
    for kind, rows in sorted(groups.items()):
        refs = [x for _b, _a, x in rows if x]
        lines.append(f"- {kind} ({len(rows)}): geometric mean ours/XNNPACK "
                     f"{_fmt(_geomean([b for b, _a, _r in rows]), '{:.2f}x')} before, "
                     f"{_fmt(_geomean([a for _b, a, _r in rows]), '{:.2f}x')} after (max "
                     f"{max(a for _b, a, _r in rows if a):.2f}x); reference kernels / ours at least "
                     f"{_fmt(min(refs) if refs else None, '{:.1f}x')}")
    return "\n".join(lines)


if __name__ == "__main__":
    with open(sys.argv[1]) as f, open(sys.argv[2]) as g:
        print(table(json.load(f), json.load(g)))
