"""`nnconv check`: the offline NNAPI compatibility report.

Per op: verdict, NNAPI ops, reason, hint and lowest accepting API level (all from the lowering rules' own
checks, `lowering/convert.py:check_model`); the partition plan of TFLite's NNAPI delegate (`partition.py`);
an op x API level matrix for `--api-level all`; several models at once; CI policies. Rendered as a rich
table, JSON (schema: docs/report-schema.md), CSV or Markdown.
"""

from __future__ import annotations

import csv
import io
import json
import os
import pathlib
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

from rich.console import Console
from rich.table import Table

from nnconv.errors import EXIT_FAILURE, NnconvError
from nnconv.lowering.convert import DEFAULT_API_LEVEL, ConversionOptions, OpReport, Report
from nnconv.lowering.diagnostics import Verdict
from nnconv.nnapi.enums import API_LEVELS, DEPRECATED_FROM_API, api_level_of_feature_level, feature_level
from nnconv.partition import DEFAULT_MAX_PARTITIONS, PartitionPlan, analyse
from nnconv.tflite.reader import read_model

SCHEMA_VERSION = 1
REFUSED = (Verdict.REFUSED_LEVEL, Verdict.REFUSED_OPERAND, Verdict.CUSTOM, Verdict.UNSUPPORTED)
# One-character cells of the `--api-level all` matrix.
SYMBOLS = {Verdict.LOWERED: "✓", Verdict.FOLDED: "F", Verdict.DRIVER_WARNING: "W", Verdict.REFUSED_LEVEL: "L",
           Verdict.REFUSED_OPERAND: "O", Verdict.CUSTOM: "C", Verdict.UNSUPPORTED: "U"}
LEGEND = ("✓ lowered, F folded, W lowered with a driver warning, L refused: needs a higher API level, "
          "O refused: operand property, C custom op, U unsupported builtin")
_STYLE = {Verdict.LOWERED: "green", Verdict.FOLDED: "green", Verdict.DRIVER_WARNING: "yellow",
          Verdict.REFUSED_LEVEL: "red", Verdict.REFUSED_OPERAND: "red", Verdict.CUSTOM: "magenta",
          Verdict.UNSUPPORTED: "red"}


class CheckUsageError(NnconvError):
    """Options of `nnconv check` that do not go together."""


def deprecation_warning(level: int) -> str | None:
    if level >= DEPRECATED_FROM_API:
        return (f"NNAPI is deprecated from Android 15 (API {DEPRECATED_FROM_API}); consider LiteRT's GPU or "
                "vendor delegates for new apps")
    return None


# -- one model at one level -------------------------------------------------------------------------
@dataclass
class ModelCheck:
    """The report and the partition plan of one model at one API level."""

    path: str
    report: Report
    plan: PartitionPlan

    @property
    def api_level(self) -> int:
        return self.report.api_level

    def count(self, *verdicts: Verdict) -> int:
        return sum(1 for r in self.report.ops if r.status in verdicts)

    @property
    def ops_refused(self) -> int:
        return self.count(*REFUSED)

    def warnings(self) -> list[str]:
        out = [w for w in [deprecation_warning(self.api_level)] if w]
        return out + self.plan.warnings()

    def summary(self) -> dict:
        return {"ops_total": len(self.report.ops), "ops_lowered": self.report.ops_lowered,
                "ops_delegated": self.plan.ops_delegated, "ops_refused": self.ops_refused,
                "ops_folded": self.count(Verdict.FOLDED), "ops_driver_warning": self.count(Verdict.DRIVER_WARNING),
                "coverage": round(self.plan.coverage, 2), "partitions": len(self.plan.partitions),
                "partitions_formed": self.plan.partitions_formed,
                "boundary_bytes": sum(p.boundary_bytes for p in self.plan.partitions),
                "by_status": {v.value: self.count(v) for v in Verdict},
                "line": self.plan.summary_line()}


def check_one(path: str, level: int, options: ConversionOptions | None = None,
              max_partitions: int = DEFAULT_MAX_PARTITIONS, lower: bool = True) -> ModelCheck:
    report, plan = analyse(read_model(path), level, options, max_partitions, lower=lower)
    return ModelCheck(path, report, plan)


def beyond_delegate(op_name: str) -> bool:
    """True when nnconv lowers this op but TFLite's own NNAPI delegate leaves it on the CPU."""
    from nnconv.lowering.registry import CUSTOM_RULES, RULES
    from nnconv.tflite.schema_enums import BuiltinOperator
    if op_name.startswith("CUSTOM(") and op_name.endswith(")"):
        rule = CUSTOM_RULES.get(op_name[7:-1])
    else:
        member = BuiltinOperator.__members__.get(op_name)
        rule = RULES.get(int(member)) if member is not None else None
    return bool(rule is not None and rule.beyond_delegate)


def op_json(r: OpReport, plan: PartitionPlan) -> dict:
    refused = not r.supported
    return {"index": r.index, "op": r.op, "version": r.version, "status": r.status.value,
            "severity": "error" if refused else ("warning" if r.status == Verdict.DRIVER_WARNING else "ok"),
            "nnapi_ops": [] if refused else r.nnapi_ops,
            "nnapi_ops_at_min_api_level": r.nnapi_ops if refused else [],
            "reason": r.reason, "hint": r.hint, "min_api_level": r.min_api_level,
            "input_dtypes": r.input_dtypes, "quantization": r.quantization,
            "partition": plan.partition_of(r.index),
            "beyond_delegate": not refused and beyond_delegate(r.op),
            "diagnostics": [d.to_json() for d in r.diagnostics]}


def report_json(check: ModelCheck) -> dict:
    level = check.api_level
    return {"schema_version": SCHEMA_VERSION, "model": check.path, "api_level": level,
            "feature_level": feature_level(level), "max_partitions": check.plan.max_partitions,
            "warnings": check.warnings(),
            "ops": [op_json(r, check.plan) for r in check.report.ops],
            "partitions": [p.to_json() for p in check.plan.partitions],
            "dropped_partitions": check.plan.dropped,
            "summary": check.summary()}


def summary_line(check: ModelCheck) -> str:
    return check.plan.summary_line()


# -- every level ------------------------------------------------------------------------------------
@dataclass
class LevelMatrix:
    """One model checked at every API level (27..35)."""

    path: str
    checks: dict[int, ModelCheck]

    def first_level(self, op_index: int) -> int | None:
        """The lowest level at which the op is lowered (or folded)."""
        return next((lv for lv, c in self.checks.items() if c.report.ops[op_index].supported), None)

    def to_json(self) -> dict:
        any_check = next(iter(self.checks.values()))
        ops = []
        for r in any_check.report.ops:
            by_level = {str(lv): c.report.ops[r.index].status.value for lv, c in self.checks.items()}
            ops.append({"index": r.index, "op": r.op, "version": r.version, "min_api_level": self.first_level(r.index),
                        "status_by_level": by_level})
        return {"schema_version": SCHEMA_VERSION, "model": self.path, "api_level": "all",
                "levels": list(self.checks), "warnings": [w for w in [deprecation_warning(max(self.checks))] if w],
                "ops": ops,
                "summary_by_level": {str(lv): c.summary() for lv, c in self.checks.items()}}


def check_levels(path: str, options: ConversionOptions | None = None,
                 max_partitions: int = DEFAULT_MAX_PARTITIONS) -> LevelMatrix:
    model = read_model(path)
    checks = {}
    for lv in API_LEVELS:
        report, plan = analyse(model, lv, options, max_partitions, lower=False)
        checks[lv] = ModelCheck(path, report, plan)
    return LevelMatrix(path, checks)


# -- CI policies ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Policies:
    fail_on: str | None = None  # "refused" or "warning"
    min_coverage: float | None = None  # percent of ops delegated
    max_partitions_allowed: int | None = None

    @property
    def any(self) -> bool:
        return self.fail_on is not None or self.min_coverage is not None or self.max_partitions_allowed is not None

    def violations(self, check: ModelCheck) -> list[str]:
        """One line per violated rule, naming it."""
        name = os.path.basename(check.path)
        out = []
        if self.fail_on in ("refused", "warning") and check.ops_refused:
            out.append(f"--fail-on {self.fail_on}: {check.ops_refused} op(s) refused in {name} at API "
                       f"{check.api_level}")
        if self.fail_on == "warning" and check.count(Verdict.DRIVER_WARNING):
            out.append(f"--fail-on warning: {check.count(Verdict.DRIVER_WARNING)} op(s) with driver warnings "
                       f"in {name} at API {check.api_level}")
        if self.min_coverage is not None and check.plan.coverage < self.min_coverage:
            out.append(f"--min-coverage {self.min_coverage:g}: {name} has {check.plan.coverage:.1f}% of its ops "
                       f"delegated at API {check.api_level}")
        if self.max_partitions_allowed is not None and len(check.plan.partitions) > self.max_partitions_allowed:
            out.append(f"--max-partitions-allowed {self.max_partitions_allowed}: {name} forms "
                       f"{len(check.plan.partitions)} partitions at API {check.api_level}")
        return out


# -- inputs -----------------------------------------------------------------------------------------
def expand_models(paths: Iterable[str]) -> list[str]:
    """Files as given; folders contribute their .tflite files (recursively, sorted)."""
    out: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            found = sorted(str(f) for f in pathlib.Path(p).rglob("*.tflite") if f.is_file())
            if not found:
                raise NnconvError(f"{p}: folder holds no .tflite file")
            out += found
        else:
            out.append(p)
    return out


def _progress(paths: Sequence[str], err: Console, fn: Callable[[str], Any]) -> list[Any]:
    """Runs `fn` on every path, with a progress bar on stderr when it is a terminal and there are several."""
    if len(paths) < 2 or not err.file.isatty():
        return [fn(p) for p in paths]
    from rich.progress import Progress
    results = []
    with Progress(console=err, transient=True) as progress:
        task = progress.add_task("checking", total=len(paths))
        for p in paths:
            progress.update(task, description=f"checking {os.path.basename(p)}")
            results.append(fn(p))
            progress.advance(task)
    return results


# -- rendering: one model ---------------------------------------------------------------------------
def _inputs_cell(r: OpReport) -> str:
    cell = ",".join(r.input_dtypes)
    return f"{cell} ({r.quantization})" if r.quantization else cell


BEYOND_NOTE = "* lowered by nnconv, but TFLite's own NNAPI delegate leaves this op on the CPU"


def _nnapi_cell(r: OpReport) -> str:
    if r.supported:
        cell = ", ".join(r.nnapi_ops) or ("-" if r.status == Verdict.FOLDED else "")
        return f"{cell} *" if r.status != Verdict.FOLDED and beyond_delegate(r.op) else cell
    return f"({', '.join(r.nnapi_ops)})" if r.nnapi_ops else ""


def _reason_cell(r: OpReport) -> str:
    if r.status == Verdict.FOLDED:
        return "evaluated at conversion time"
    text = r.reason
    if r.hint:
        text += f" — hint: {r.hint}"
    return text


def _tensor_cell(t: Any) -> str:
    return f"{t.name} {t.dtype}[{','.join(map(str, t.shape))}] {t.nbytes} B ({'; '.join(t.peers)})"


def _title(check: ModelCheck) -> str:
    return f"{os.path.basename(check.path)} at API {check.api_level} (NNAPI feature level {feature_level(check.api_level)})"


def render_table(check: ModelCheck, out: Console) -> None:
    table = Table(title=_title(check))
    for col in ("#", "op", "v", "inputs", "status", "NNAPI ops", "part.", "min API", "reason"):
        table.add_column(col, overflow="fold")
    for r in check.report.ops:
        part = check.plan.partition_of(r.index)
        table.add_row(str(r.index), r.op, str(r.version), _inputs_cell(r),
                      f"[{_STYLE[r.status]}]{r.status.value}[/]", _nnapi_cell(r), "-" if part is None else str(part),
                      str(r.min_api_level or "-"), _reason_cell(r))
    out.print(table)
    if check.plan.partitions:
        pt = Table(title="partitions (as TFLite's NNAPI delegate forms them)")
        for col in ("#", "TFLite ops", "NNAPI ops", "inputs (from)", "outputs (to)", "bytes"):
            pt.add_column(col, overflow="fold")
        for p in check.plan.partitions:
            pt.add_row(str(p.index), _ops_range(p.ops), str(p.nnapi_ops),
                       "\n".join(_tensor_cell(t) for t in p.inputs), "\n".join(_tensor_cell(t) for t in p.outputs),
                       str(p.boundary_bytes))
        out.print(pt)
    out.print(f"API {check.api_level}: {summary_line(check)}", markup=False)
    if any(r.supported and r.status != Verdict.FOLDED and beyond_delegate(r.op) for r in check.report.ops):
        out.print(BEYOND_NOTE, markup=False)
    for w in check.warnings():
        out.print(f"warning: {w}", markup=False)


def _ops_range(ops: Sequence[int]) -> str:
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


def _md_escape(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_md(check: ModelCheck) -> str:
    lines = [f"## {_title(check)}", ""]
    lines += [f"> **warning:** {_md_escape(w)}" for w in check.warnings()]
    if check.warnings():
        lines.append("")
    lines += ["| # | op | v | inputs | status | NNAPI ops | partition | min API | reason |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in check.report.ops:
        part = check.plan.partition_of(r.index)
        lines.append("| " + " | ".join(_md_escape(x) for x in (
            r.index, r.op, r.version, _inputs_cell(r), r.status.value, _nnapi_cell(r),
            "-" if part is None else part, r.min_api_level or "-", _reason_cell(r))) + " |")
    if check.plan.partitions:
        lines += ["", "| partition | TFLite ops | NNAPI ops | inputs | outputs | bytes |",
                  "| --- | --- | --- | --- | --- | --- |"]
        for p in check.plan.partitions:
            lines.append("| " + " | ".join(_md_escape(x) for x in (
                p.index, _ops_range(p.ops), p.nnapi_ops, "<br>".join(_tensor_cell(t) for t in p.inputs),
                "<br>".join(_tensor_cell(t) for t in p.outputs), p.boundary_bytes)) + " |")
    lines += ["", f"**API {check.api_level}: {summary_line(check)}**", ""]
    if any(r.supported and r.status != Verdict.FOLDED and beyond_delegate(r.op) for r in check.report.ops):
        lines += [_md_escape(BEYOND_NOTE), ""]
    return "\n".join(lines)


# -- rendering: several models ----------------------------------------------------------------------
def totals(checks: Sequence[ModelCheck]) -> dict:
    total = sum(len(c.report.ops) for c in checks)
    delegated = sum(c.plan.ops_delegated for c in checks)
    return {"models": len(checks), "ops_total": total, "ops_lowered": sum(c.report.ops_lowered for c in checks),
            "ops_delegated": delegated, "ops_refused": sum(c.ops_refused for c in checks),
            "coverage": round(100.0 * delegated / total, 2) if total else 100.0,
            "partitions": sum(len(c.plan.partitions) for c in checks)}


_MULTI_COLUMNS = ("model", "ops", "lowered", "refused", "delegated", "coverage %", "partitions")


def _multi_rows(checks: Sequence[ModelCheck]) -> list[list[str]]:
    rows = [[c.path, str(len(c.report.ops)), str(c.report.ops_lowered), str(c.ops_refused),
             str(c.plan.ops_delegated), f"{c.plan.coverage:.1f}", str(len(c.plan.partitions))] for c in checks]
    t = totals(checks)
    rows.append([f"total ({t['models']} models)", str(t["ops_total"]), str(t["ops_lowered"]), str(t["ops_refused"]),
                 str(t["ops_delegated"]), f"{t['coverage']:.1f}", str(t["partitions"])])
    return rows


def render_multi(checks: Sequence[ModelCheck], fmt: str, out: Console) -> None:
    level = checks[0].api_level
    if fmt == "json":
        data = {"schema_version": SCHEMA_VERSION, "api_level": level, "feature_level": feature_level(level),
                "warnings": [w for w in [deprecation_warning(level)] if w],
                "models": [report_json(c) for c in checks], "total": totals(checks)}
        _print_raw(out, json.dumps(data, indent=2))
        return
    rows = _multi_rows(checks)
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["model", "api_level", "ops_total", "ops_lowered", "ops_refused", "ops_delegated", "coverage",
                    "partitions"])
        w.writerows([row[0], level, *row[1:]] for row in rows)
        _print_raw(out, buf.getvalue(), end="")
    elif fmt == "md":
        lines = [f"## {len(checks)} models at API {level} (NNAPI feature level {feature_level(level)})", "",
                 "| " + " | ".join(_MULTI_COLUMNS) + " |", "|" + " --- |" * len(_MULTI_COLUMNS)]
        lines += ["| " + " | ".join(_md_escape(x) for x in row) + " |" for row in rows]
        _print_raw(out, "\n".join(lines) + "\n")
    else:
        table = Table(title=f"{len(checks)} models at API {level} (NNAPI feature level {feature_level(level)})")
        for col in _MULTI_COLUMNS:
            table.add_column(col, overflow="fold")
        for i, row in enumerate(rows):
            table.add_row(*row, end_section=(i == len(rows) - 2))
        out.print(table)
    if fmt in ("table", "md") and deprecation_warning(level):
        _print_raw(out, f"warning: {deprecation_warning(level)}")


# -- rendering: the level matrix --------------------------------------------------------------------
def render_matrix(mats: Sequence[LevelMatrix], fmt: str, out: Console) -> None:
    levels = list(API_LEVELS)
    if fmt == "json":
        data: Any = mats[0].to_json() if len(mats) == 1 else {
            "schema_version": SCHEMA_VERSION, "api_level": "all", "levels": levels,
            "models": [m.to_json() for m in mats]}
        _print_raw(out, json.dumps(data, indent=2))
        return
    if len(mats) > 1:
        _render_matrix_multi(mats, fmt, out)
        return
    mat = mats[0]
    any_check = mat.checks[levels[0]]
    header = ["#", "op", *map(str, levels), "from API"]
    rows = []
    for r in any_check.report.ops:
        cells = [mat.checks[lv].report.ops[r.index].status for lv in levels]
        first = mat.first_level(r.index)
        rows.append(([str(r.index), r.op], cells, str(first) if first else "never"))
    cov = [f"{mat.checks[lv].plan.coverage:.0f}%" for lv in levels]
    parts = [str(len(mat.checks[lv].plan.partitions)) for lv in levels]
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["index", "op", *map(str, levels), "min_api_level"])
        for head, cells, first in rows:
            w.writerow([*head, *(v.value for v in cells), "" if first == "never" else first])
        w.writerow(["coverage", "", *(f"{mat.checks[lv].plan.coverage:.2f}" for lv in levels), ""])
        w.writerow(["partitions", "", *parts, ""])
        _print_raw(out, buf.getvalue(), end="")
        return
    title = f"{os.path.basename(mat.path)}: where each op becomes lowerable (API levels 27..35)"
    if fmt == "md":
        lines = [f"## {title}", "", "| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
        for head, cells, first in rows:
            lines.append("| " + " | ".join([*head, *(SYMBOLS[v] for v in cells), first]) + " |")
        lines.append("| | **coverage** | " + " | ".join(cov) + " | |")
        lines.append("| | **partitions** | " + " | ".join(parts) + " | |")
        lines += ["", LEGEND, ""]
        _print_raw(out, "\n".join(lines))
        return
    table = Table(title=title)
    for col in header:
        table.add_column(col, justify="center" if col.isdigit() else "left")
    for i, (head, cells, first) in enumerate(rows):
        table.add_row(*head, *(f"[{_STYLE[v]}]{SYMBOLS[v]}[/]" for v in cells), first,
                      end_section=(i == len(rows) - 1))
    table.add_row("", "coverage", *cov, "")
    table.add_row("", "partitions", *parts, "")
    out.print(table)
    _print_raw(out, LEGEND)


def _render_matrix_multi(mats: Sequence[LevelMatrix], fmt: str, out: Console) -> None:
    levels = list(API_LEVELS)
    header = ["model", *map(str, levels)]
    rows = [[m.path, *(f"{m.checks[lv].plan.coverage:.0f}% / {len(m.checks[lv].plan.partitions)}p" for lv in levels)]
            for m in mats]
    total_row = ["total"]
    for lv in levels:
        t = totals([m.checks[lv] for m in mats])
        total_row.append(f"{t['coverage']:.0f}% / {t['partitions']}p")
    rows.append(total_row)
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)
        _print_raw(out, buf.getvalue(), end="")
    elif fmt == "md":
        lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
        lines += ["| " + " | ".join(_md_escape(x) for x in row) + " |" for row in rows]
        _print_raw(out, "\n".join(lines) + "\n\ncells: coverage of ops delegated / partitions\n")
    else:
        table = Table(title=f"{len(mats)} models: coverage / partitions per API level")
        for col in header:
            table.add_column(col, overflow="fold")
        for i, row in enumerate(rows):
            table.add_row(*row, end_section=(i == len(rows) - 2))
        out.print(table)


def _print_raw(out: Console, text: str, end: str = "\n") -> None:
    """Machine-readable text, byte for byte: no markup, no highlighting, no wrapping."""
    out.file.write(text + end)
    out.file.flush()


# -- the command ------------------------------------------------------------------------------------
def run_check(models: tuple[str, ...], api_level: str | None, feature_level_: int | None, fmt: str,
              max_partitions: int, fail_on: str | None, min_coverage: float | None,
              max_partitions_allowed: int | None, options: ConversionOptions, out: Console, err: Console) -> int:
    """Runs `nnconv check`; returns the exit code (0, or 1 when a policy is violated)."""
    policies = Policies(fail_on, min_coverage, max_partitions_allowed)
    paths = expand_models(models)
    if api_level is not None and api_level.strip().lower() == "all":
        if feature_level_ is not None:
            raise CheckUsageError("give --api-level all or --feature-level, not both")
        if policies.any:
            raise CheckUsageError("--fail-on, --min-coverage and --max-partitions-allowed need one target level, "
                                  "not --api-level all")
        mats = _progress(paths, err, lambda p: check_levels(p, options, max_partitions))
        render_matrix(mats, fmt, out)
        return 0
    level = resolve_level(_parse_level(api_level), feature_level_)
    checks = _progress(paths, err, lambda p: check_one(p, level, options, max_partitions))
    if len(checks) == 1:
        check = checks[0]
        if fmt == "json":
            _print_raw(out, json.dumps(report_json(check), indent=2))
        elif fmt == "csv":
            _print_raw(out, render_csv(checks), end="")
            for w in check.warnings():  # CSV has no room for them: stderr, like other logs
                err.print(f"warning: {w}", markup=False)
        elif fmt == "md":
            _print_raw(out, render_md(check))
        else:
            render_table(check, out)
    else:
        render_multi(checks, fmt, out)
        if fmt == "csv" and deprecation_warning(level):
            err.print(f"warning: {deprecation_warning(level)}", markup=False)
    violations = [v for c in checks for v in policies.violations(c)]
    for v in violations:
        err.print(f"nnconv: policy violated: {v}", markup=False)
    return EXIT_FAILURE if violations else 0


def resolve_level(api_level: int | None, feature_level_: int | None) -> int:
    """The target API level from --api-level or --feature-level (default 30; 32 is 31's feature level)."""
    if api_level is not None and feature_level_ is not None:
        raise CheckUsageError("give --api-level or --feature-level, not both")
    if feature_level_ is not None:
        try:
            return api_level_of_feature_level(feature_level_)
        except ValueError as e:
            raise CheckUsageError(f"--feature-level: {e}") from None
    level = DEFAULT_API_LEVEL if api_level is None else (31 if api_level == 32 else api_level)
    if level not in API_LEVELS:
        raise CheckUsageError(f"--api-level {api_level}: give one of {', '.join(map(str, API_LEVELS))} or 'all'")
    return level


def _parse_level(api_level: str | None) -> int | None:
    if api_level is None:
        return None
    try:
        return int(api_level)
    except ValueError:
        raise CheckUsageError(f"--api-level {api_level!r}: give 27..35 or 'all'") from None
