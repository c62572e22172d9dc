"""Rendering of one `nnconv check` report: a rich table, CSV, Markdown (JSON comes from
`analysis.report_json`), and the pieces the formats of `formats.py` share (the several-model rows, the
matrix symbols). Which renderer runs for which --format is `formats.py`'s registry.
"""

from __future__ import annotations

import csv
import io
import os
from typing import Any, Callable, Sequence

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from nnconv.fmt import format_bytes, plural, print_wrapped, wrap
from nnconv.lowering.check_report import OpReport
from nnconv.lowering.diagnostics import Verdict
from nnconv.nnapi.levels import feature_level
from nnconv.report.analysis import ModelCheck, beyond_delegate, summary_line
from nnconv.report.tables import Col, fitted_table

# One-character cells of the `--api-level all` matrix.
SYMBOLS = {Verdict.LOWERED: "✓", Verdict.FOLDED: "F", Verdict.DRIVER_WARNING: "W", Verdict.REFUSED_LEVEL: "L",
           Verdict.REFUSED_OPERAND: "O", Verdict.CUSTOM: "C", Verdict.UNSUPPORTED: "U"}
LEGEND = ("✓ lowered, F folded, W lowered with a driver warning, L refused: needs a higher API level, "
          "O refused: operand property, C custom op, U unsupported builtin")
STYLE = {Verdict.LOWERED: "green", Verdict.FOLDED: "green", Verdict.DRIVER_WARNING: "yellow",
          Verdict.REFUSED_LEVEL: "red", Verdict.REFUSED_OPERAND: "red", Verdict.CUSTOM: "magenta",
          Verdict.UNSUPPORTED: "red"}



def progress(paths: Sequence[Any], err: Console, fn: Callable[[Any], Any], jobs: int = 1,
             verb: str = "checking", scheduler: str | None = None) -> list[Any]:
    """Runs `fn` on every path (in `jobs` processes when > 1, or on the Dask cluster at `scheduler`: `fn`
    must then be picklable), with a progress bar on stderr when it is a terminal and there are several.
    An item may be a (path, level) pair."""
    from nnconv.parallel import map_items
    results = map_items(fn, list(paths), jobs, scheduler)
    if len(paths) < 2 or not err.file.isatty():
        return list(results)
    from rich.progress import Progress
    done: list[Any] = []
    with Progress(console=err, transient=True) as progress:
        task = progress.add_task(verb, total=len(paths))
        while len(done) < len(paths):
            # Results come in path order: the next one awaited is that of paths[len(done)].
            item = paths[len(done)]
            progress.update(task, description=f"{verb} {os.path.basename(item if isinstance(item, str) else item[0])}")
            done.append(next(results))
            progress.advance(task)
    return done


# -- rendering: one model ---------------------------------------------------------------------------
# Below this console width the report prints one op per line (verdict first) with its details on indented
# lines, instead of a table whose columns would be too narrow to hold op names and reasons.
COMPACT_BELOW = 100
# An op lowered into more NNAPI operations than this prints as `N ops (what they compute)`; -v and
# `--format json` list every one.
LONG_EXPANSION = 3


def _inputs_cell(r: OpReport) -> str:
    cell = ",".join(r.input_dtypes)
    return f"{cell} ({r.quantization})" if r.quantization else cell


BEYOND_NOTE = "* lowered by nnconv, but TFLite's own NNAPI delegate leaves this op on the CPU"


def nnapi_summary(ops: Sequence[str], note: str = "", verbose: bool = False) -> str:
    """The NNAPI operations of one TFLite op as a reader wants them: all of them when few (or `verbose`),
    else their count with the rule's note (`31 ops (int8 mean with TFLite's integer rounding, exact)`), or
    the distinct kinds when the rule gave no note."""
    if verbose or len(ops) <= LONG_EXPANSION:
        return ", ".join(ops)
    if note:
        return f"{len(ops)} ops ({note})"
    # Each kind with its count, so that the list adds up to the total: `5 ops: RELU x2, MUL x2, ADD`.
    counts: dict[str, int] = {}
    for op in ops:
        counts[op] = counts.get(op, 0) + 1
    shown = [kind if n == 1 else f"{kind} x{n}" for kind, n in counts.items()]
    return f"{len(ops)} ops: " + ", ".join(shown[:LONG_EXPANSION]) + (", ..." if len(shown) > LONG_EXPANSION else "")


def _nnapi_cell(r: OpReport, verbose: bool = False) -> str:
    summary = nnapi_summary(r.nnapi_ops, r.lowering_note, verbose)
    if r.supported:
        cell = summary or ("-" if r.status == Verdict.FOLDED else "")
        return f"{cell} *" if r.status != Verdict.FOLDED and beyond_delegate(r.op) else cell
    return f"({summary})" if r.nnapi_ops else ""


def _reason_cell(r: OpReport) -> str:
    if r.status == Verdict.FOLDED:
        return "; ".join(r.notes or ["evaluated at conversion time"])
    text = "; ".join([t for t in [r.reason] if t] + r.notes)
    if r.hint:
        text += f" — hint: {r.hint}"
    return text


def _tensor_cell(t: Any) -> str:
    return (f"{t.name} {t.dtype}[{','.join(map(str, t.shape))}] {format_bytes(t.nbytes)} "
            f"({'; '.join(t.peers)})")


def display_name(check: ModelCheck) -> str:
    """A model in titles: a folder's model by its name relative to that folder, a file by its base name."""
    return check.name if check.name and check.name != check.path else os.path.basename(check.path)


def _title(check: ModelCheck) -> str:
    return f"{display_name(check)} at API {check.api_level} (NNAPI feature level {feature_level(check.api_level)})"


def _subtitle(check: ModelCheck) -> str:
    """Which target the report answers for, under the title (nnconv's own reports keep their old look)."""
    return "target: TFLite's NNAPI delegate (what phones run)" if check.plan.target == "delegate" else ""


def _titles(check: ModelCheck) -> str:
    return "\n".join(filter(None, [_title(check), _subtitle(check)]))


def render_table(check: ModelCheck, out: Console, err: Console, verbose: bool = False) -> None:
    """The per-op report: tables when the console holds them without splitting a word (`tables.py`), else
    (and always below COMPACT_BELOW columns) one op per line with indented details. Warnings (deprecation,
    partition copy cost) are logs: on `err`, so that stdout holds the report alone."""
    if out.width < COMPACT_BELOW or not _render_wide(check, out, verbose):
        _render_compact(check, out, verbose)
    out.print(f"API {check.api_level}: {summary_line(check)}", markup=False)
    if any(r.supported and r.status != Verdict.FOLDED and beyond_delegate(r.op) for r in check.report.ops):
        out.print(BEYOND_NOTE, markup=False)
    for w in check.warnings():
        print_wrapped(err, f"warning: {w}", indent="  ", first_indent="")


_OP_COLUMNS = (Col("#", justify="right"), Col("op"), Col("v", justify="right"), Col("inputs", wrap=True),
               Col("status"), Col("NNAPI ops", wrap=True, grow=1), Col("part.", justify="right"),
               Col("min API", justify="right"), Col("reason", wrap=True, grow=2))
_PARTITION_COLUMNS = (Col("#", justify="right"), Col("TFLite ops", wrap=True), Col("NNAPI ops", justify="right"),
                      Col("inputs (from)", wrap=True, grow=1), Col("outputs (to)", wrap=True, grow=1),
                      Col("bytes", justify="right"))


def _render_wide(check: ModelCheck, out: Console, verbose: bool) -> bool:
    """Prints the op table and the partition table; False (printing nothing) when they do not fit."""
    rows = []
    for r in check.report.ops:
        part = check.plan.partition_of(r.index)
        inputs = ", ".join(r.input_dtypes) + (f" ({r.quantization})" if r.quantization and verbose else "")
        rows.append([str(r.index), r.op, str(r.version), inputs, r.status.value, _nnapi_cell(r, verbose),
                     "-" if part is None else str(part), str(r.min_api_level or "-"), _reason_cell(r)])
    table = fitted_table(_OP_COLUMNS, rows, out.width, title=_titles(check))
    prows = [[str(p.index), ops_range(p.ops), str(p.nnapi_ops), "\n".join(_tensor_cell(t) for t in p.inputs),
              "\n".join(_tensor_cell(t) for t in p.outputs), format_bytes(p.boundary_bytes)]
             for p in check.plan.partitions]
    ptable = fitted_table(_PARTITION_COLUMNS, prows, out.width,
                          title="partitions (as TFLite's NNAPI delegate forms them)") if prows else None
    if table is None or (prows and ptable is None):
        return False
    for r, row in zip(check.report.ops, rows):
        table.add_row(*(escape(c) for c in row[:4]), f"[{STYLE[r.status]}]{row[4]}[/]",
                      *(escape(c) for c in row[5:]))
    out.print(table)
    if ptable is not None:
        for row in prows:
            ptable.add_row(*(escape(c) for c in row))
        out.print(ptable)
    return True


def _render_compact(check: ModelCheck, out: Console, verbose: bool) -> None:
    """One op per line: `#3 MEAN v2 lowered -> 31 ops (...) [p0]`, then the reason, hint and (with -v) the
    inputs and every NNAPI op on indented lines wrapped at spaces."""
    out.print(_titles(check), markup=False)
    width = len(str(len(check.report.ops) - 1)) + 1
    indent = " " * (width + 2)
    # op names padded to a common width (up to a limit) so the verdicts line up
    name_width = min(max((len(f"{r.op} v{r.version}") for r in check.report.ops), default=0), 28)
    for r in check.report.ops:
        part = check.plan.partition_of(r.index)
        head = f"{'#' + str(r.index):>{width}}  {f'{r.op} v{r.version}':<{name_width}}  "
        where = "" if part is None else f"  [partition {part}]"
        if not r.supported and r.min_api_level:
            where = f"  [from API {r.min_api_level}]"
        nnapi = _nnapi_cell(r, verbose) if r.supported or verbose else ""  # refused: what it would be, with -v
        if nnapi and not r.supported:
            nnapi = f"at API {r.min_api_level or check.api_level}: {nnapi[1:-1]}"
        tail = f" -> {nnapi}" if nnapi and r.status != Verdict.FOLDED else ""
        line = Text(head)
        line.append(r.status.value, style=STYLE[r.status])
        if len(head) + len(r.status.value) + len(tail) + len(where) <= out.width:
            line.append(tail + where)
            out.print(line)
        else:
            line.append(where)
            out.print(line)
            print_wrapped(out, f"-> {nnapi}", indent=indent + "   ", first_indent=indent)
        if r.status == Verdict.FOLDED:
            print_wrapped(out, _reason_cell(r), indent=indent)
        elif r.status != Verdict.LOWERED:
            print_wrapped(out, r.reason, indent=indent)
            if r.hint:
                print_wrapped(out, f"hint: {r.hint}", indent=indent + "  ", first_indent=indent)
        if verbose:
            print_wrapped(out, f"inputs: {_inputs_cell(r)}", indent=indent + "  ", first_indent=indent)
    for p in check.plan.partitions:
        print_wrapped(out, f"partition {p.index}: TFLite ops {ops_range(p.ops)} -> {plural(p.nnapi_ops, 'NNAPI op')}, "
                           f"{format_bytes(p.boundary_bytes)} across the boundary", indent="    ", first_indent="  ")
        for kind, tensors in (("in", p.inputs), ("out", p.outputs)):
            for t in tensors if verbose else ():
                print_wrapped(out, f"{kind}: {_tensor_cell(t)}", indent="      ", first_indent="    ")


def ops_range(ops: Sequence[int]) -> str:
    """[0,1,2,5,6] -> '#0-2, #5-6'."""
    parts, start = [], None
    for i, k in enumerate(ops):
        if start is None:
            start = k
        if i + 1 == len(ops) or ops[i + 1] != k + 1:
            parts.append(f"#{start}" if start == k else f"#{start}-{k}")
            start = None
    return ", ".join(parts)


CSV_COLUMNS = ("model", "api_level", "index", "op", "version", "status", "nnapi_ops", "input_dtypes",
               "quantization", "partition", "min_api_level", "reason", "hint")


def render_csv(checks: Sequence[ModelCheck]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for c in checks:
        for r in c.report.ops:
            part = c.plan.partition_of(r.index)
            emitted = " ".join(r.nnapi_ops) if r.supported else ""  # as in the JSON's nnapi_ops
            w.writerow([c.path, c.api_level, r.index, r.op, r.version, r.status.value, emitted,
                        " ".join(r.input_dtypes), r.quantization, "" if part is None else part,
                        r.min_api_level or "", r.reason, r.hint])
    return buf.getvalue()


def md_escape(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_md(check: ModelCheck) -> str:
    lines = [f"## {_title(check)}", ""] + ([_subtitle(check), ""] if _subtitle(check) else [])
    lines += [f"> **warning:** {md_escape(w)}" for w in check.warnings()]
    if check.warnings():
        lines.append("")
    lines += ["| # | op | v | inputs | status | NNAPI ops | partition | min API | reason |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in check.report.ops:
        part = check.plan.partition_of(r.index)
        lines.append("| " + " | ".join(md_escape(x) for x in (
            r.index, r.op, r.version, _inputs_cell(r), r.status.value, _nnapi_cell(r),
            "-" if part is None else part, r.min_api_level or "-", _reason_cell(r))) + " |")
    if check.plan.partitions:
        lines += ["", "| partition | TFLite ops | NNAPI ops | inputs | outputs | bytes |",
                  "| --- | --- | --- | --- | --- | --- |"]
        for p in check.plan.partitions:
            lines.append("| " + " | ".join(md_escape(x) for x in (
                p.index, ops_range(p.ops), p.nnapi_ops, "<br>".join(_tensor_cell(t) for t in p.inputs),
                "<br>".join(_tensor_cell(t) for t in p.outputs), p.boundary_bytes)) + " |")
    lines += ["", f"**API {check.api_level}: {summary_line(check)}**", ""]
    if any(r.supported and r.status != Verdict.FOLDED and beyond_delegate(r.op) for r in check.report.ops):
        lines += [md_escape(BEYOND_NOTE), ""]
    return "\n".join(lines)


# -- rendering: several models ----------------------------------------------------------------------
def totals(checks: Sequence[ModelCheck]) -> dict:
    total = sum(len(c.report.ops) for c in checks)
    delegated = sum(c.plan.ops_delegated for c in checks)
    return {"models": len(checks), "ops_total": total, "ops_lowered": sum(c.report.ops_lowered for c in checks),
            "ops_delegated": delegated, "ops_refused": sum(c.ops_refused for c in checks),
            "coverage": round(100.0 * delegated / total, 2) if total else 100.0,
            "partitions": sum(len(c.plan.partitions) for c in checks)}


MULTI_COLUMNS = ("model", "ops", "lowered", "refused", "delegated", "coverage %", "partitions")


def multi_rows(checks: Sequence[ModelCheck]) -> list[list[str]]:
    rows = [[c.label, str(len(c.report.ops)), str(c.report.ops_lowered), str(c.ops_refused),
             str(c.plan.ops_delegated), f"{c.plan.coverage:.1f}", str(len(c.plan.partitions))] for c in checks]
    t = totals(checks)
    rows.append([f"total ({t['models']} models)", str(t["ops_total"]), str(t["ops_lowered"]), str(t["ops_refused"]),
                 str(t["ops_delegated"]), f"{t['coverage']:.1f}", str(t["partitions"])])
    return rows


def print_raw(out: Console, text: str, end: str = "\n") -> None:
    """Machine-readable text, byte for byte: no markup, no highlighting, no wrapping. A closed pipe goes to the
    console's own handling (the CLI's discards the rest and keeps the exit code)."""
    try:
        out.file.write(text + end)
        out.file.flush()
    except BrokenPipeError:
        out.on_broken_pipe()
