"""The report formats of `nnconv check` (--format), one renderer class per format, in one registry:
`CHECK_FORMATS`. The command's click choices are the registry's keys, so a new format is one class here
(and a line of docs).

Each renders the three reports `check` prints: one model at one API level (`one`), several models at one
level (`several`: one row per model and a total), and the op x API level matrix of `--api-level all`
(`matrix`: one model or several), and says, in its own way, which models could not be checked when none
could (`nothing_checked`). Machine-readable formats write byte for byte (`print_raw`); logs and warnings
that have no place in them go to `err`. `check --device` renders through the same names
(`nnconv.devices.render.DEVICE_FORMATS`, which has one renderer per format here).
"""

from __future__ import annotations

import csv
import io
import json
import os
from abc import ABC, abstractmethod
from typing import Any, Sequence

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from nnconv.fmt import plural, print_wrapped, wrap
from nnconv.nnapi.levels import ALL_API_LEVELS, feature_level
from nnconv.parallel import Failed
from nnconv.report.analysis import (SCHEMA_VERSION, LevelMatrix, ModelCheck, deprecation_warning, report_json,
                                    summary_line)
from nnconv.report.render import (LEGEND, MULTI_COLUMNS, STYLE, SYMBOLS, md_escape, multi_rows, print_raw, render_csv,
                                  render_md, render_table, totals)
from nnconv.report.tables import Col, fitted_table


class CheckFormat(ABC):
    """One --format of `nnconv check`."""

    name: str

    @abstractmethod
    def one(self, check: ModelCheck, out: Console, err: Console, verbose: bool, quiet: bool) -> None:
        """One model at one API level."""

    @abstractmethod
    def several(self, checks: Sequence[ModelCheck], out: Console, err: Console, quiet: bool,
                failures: Sequence[Failed] = ()) -> None:
        """Several models at one level; `failures`: the models that could not be checked, which
        machine-readable formats list."""

    @abstractmethod
    def matrix(self, mats: Sequence[LevelMatrix], out: Console, failures: Sequence[Failed] = (),
               quiet: bool = False) -> None:
        """The op x API level matrix of `--api-level all`, one model or several; `failures`: the models that
        could not be checked, which every format lists in its own way."""

    def nothing_checked(self, failures: Sequence[Failed], out: Console) -> None:
        """What the output holds when no model could be checked (the errors themselves go to stderr):
        nothing, except for formats a program reads, which still print a document listing the errors."""


def _error_rows(failures: Sequence[Failed], out: Console) -> None:
    """A row of its own after the matrix for each model that could not be checked (table and Markdown)."""
    for f in failures:
        out.print(f"{f.label}: ERROR {f.error}", markup=False)


def _several_title(checks: Sequence[ModelCheck], failures: Sequence[Failed] = ()) -> str:
    level = checks[0].api_level
    unread = f", {len(failures)} could not be checked" if failures else ""
    return f"{len(checks) + len(failures)} models at API {level} (NNAPI feature level {feature_level(level)}){unread}"


def _with_errors(rows: list[list[str]], failures: Sequence[Failed]) -> tuple[list[str], list[list[str]]]:
    """The several-model rows with a row per model that could not be checked (before the total), and an
    `error` column holding its one-line reason, when there is one (`verify` gives such models a row too)."""
    if not failures:
        return list(MULTI_COLUMNS), rows
    blank = ["-"] * (len(MULTI_COLUMNS) - 1)
    return [*MULTI_COLUMNS, "error"], [r + [""] for r in rows[:-1]] + \
        [[f.label, *blank, f.error] for f in failures] + [rows[-1] + [""]]


def _matrix_rows(mat: LevelMatrix) -> tuple[list[Any], list[str], list[str]]:
    """([([index, op], verdicts per level, first level)], coverage per level, partitions per level)."""
    levels = list(ALL_API_LEVELS)
    rows = []
    for r in mat.checks[levels[0]].report.ops:
        cells = [mat.checks[lv].report.ops[r.index].status for lv in levels]
        first = mat.first_level(r.index)
        rows.append(([str(r.index), r.op], cells, str(first) if first else "never"))
    cov = [f"{mat.checks[lv].plan.coverage:.0f}%" for lv in levels]
    parts = [str(len(mat.checks[lv].plan.partitions)) for lv in levels]
    return rows, cov, parts


def _matrix_title(mat: LevelMatrix) -> str:
    target = next(iter(mat.checks.values())).plan.target if mat.checks else "nnconv"
    title = f"{os.path.basename(mat.path)}: where each op becomes lowerable (API levels 27..35)"
    return title + ("\ntarget: TFLite's NNAPI delegate (what phones run)" if target == "delegate" else "")


def _matrix_multi_rows(mats: Sequence[LevelMatrix]) -> tuple[list[str], list[list[str]]]:
    """The several-model matrix: (header, one row per model of 'coverage / partitions' per level, the total)."""
    levels = list(ALL_API_LEVELS)
    header = ["model", *map(str, levels)]
    rows = [[m.label, *(f"{m.checks[lv].plan.coverage:.0f}% / {len(m.checks[lv].plan.partitions)}p" for lv in levels)]
            for m in mats]
    total_row = ["total"]
    for lv in levels:
        t = totals([m.checks[lv] for m in mats])
        total_row.append(f"{t['coverage']:.0f}% / {t['partitions']}p")
    rows.append(total_row)
    return header, rows


def _csv(rows: Sequence[Sequence[Any]]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    return buf.getvalue()


def _md_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)] + \
        ["| " + " | ".join(md_escape(x) for x in row) + " |" for row in rows]


def _print_deprecation(err: Console, level: int) -> None:
    """The deprecation warning of a several-model report: a log line on `err` (JSON carries it in `warnings`)."""
    if deprecation_warning(level):
        err.print(f"warning: {deprecation_warning(level)}", markup=False)


class TableFormat(CheckFormat):
    """Rich tables that fit the terminal (one line per item where they cannot); -q: verdict lines only."""

    name = "table"

    def one(self, check: ModelCheck, out: Console, err: Console, verbose: bool, quiet: bool) -> None:
        if quiet:
            self.several([check], out, err, quiet)
            return
        render_table(check, out, err, verbose=verbose)

    def several(self, checks: Sequence[ModelCheck], out: Console, err: Console, quiet: bool,
                failures: Sequence[Failed] = ()) -> None:
        if quiet:
            for c in checks:  # verdicts and errors only
                out.print(f"{c.label}: API {c.api_level}: {summary_line(c)}", markup=False)
            for f in failures:
                out.print(f"{f.label}: ERROR {f.error}", markup=False)
            return
        header, rows = _with_errors(multi_rows(checks), failures)
        title = _several_title(checks, failures)
        cols = [Col(header[0])] + [Col(c, wrap=True, justify="right") for c in MULTI_COLUMNS[1:]]
        cols += [Col("error", wrap=True, grow=1)] if failures else []
        table = fitted_table(cols, rows, out.width, title=title)
        if table is None:  # one model per line: paths are never split
            out.print(title, markup=False)
            for row in rows:
                if row[1] == "-":
                    print_wrapped(out, f"{row[0]}: ERROR {row[-1]}", indent="    ", first_indent="")
                    continue
                print_wrapped(out, f"{row[0]}: {plural(int(row[1]), 'op')}, {row[2]} lowered, {row[3]} refused, "
                                   f"{row[4]} delegated ({row[5]}%), {plural(int(row[6]), 'partition')}",
                              indent="    ", first_indent="")
        else:
            for i, row in enumerate(rows):
                table.add_row(*(escape(c) for c in row), end_section=(i == len(rows) - 2))
            out.print(table)
        _print_deprecation(err, checks[0].api_level)

    def matrix(self, mats: Sequence[LevelMatrix], out: Console, failures: Sequence[Failed] = (),
               quiet: bool = False) -> None:
        if quiet:  # verdicts only: a line per model and level
            for mat in mats:
                for lv, c in mat.checks.items():
                    out.print(f"{mat.label}: API {lv}: {summary_line(c)}", markup=False)
        elif len(mats) > 1:
            self._matrix_multi(mats, out)
        else:
            self._matrix_one(mats[0], out)
        _error_rows(failures, out)

    @staticmethod
    def _matrix_one(mat: LevelMatrix, out: Console) -> None:
        levels = list(ALL_API_LEVELS)
        rows, cov, parts = _matrix_rows(mat)
        title = _matrix_title(mat)
        plain = [[*head, *(SYMBOLS[v] for v in cells), first] for head, cells, first in rows]
        plain += [["", "coverage", *cov, ""], ["", "partitions", *parts, ""]]
        cols = [Col("#", justify="right"), Col("op"), *(Col(str(lv), justify="center") for lv in levels),
                Col("from API", justify="right")]
        table = fitted_table(cols, plain, out.width, title=title)
        if table is None:
            _render_matrix_compact(title, levels, rows, cov, parts, out)
        else:
            for i, (head, cells, first) in enumerate(rows):
                table.add_row(*(escape(h) for h in head), *(f"[{STYLE[v]}]{SYMBOLS[v]}[/]" for v in cells), first,
                              end_section=(i == len(rows) - 1))
            table.add_row("", "coverage", *cov, "")
            table.add_row("", "partitions", *parts, "")
            out.print(table)
        print_wrapped(out, LEGEND, indent="  ", first_indent="")

    @staticmethod
    def _matrix_multi(mats: Sequence[LevelMatrix], out: Console) -> None:
        header, rows = _matrix_multi_rows(mats)
        title = f"{len(mats)} models: coverage / partitions per API level"
        # cells such as '100% / 1p' stay whole (wrapped, they would take two lines of uneven columns), and
        # model names are never split: when that does not fit, one model per line
        table = fitted_table([Col("model"), *(Col(h, justify="right") for h in header[1:])], rows, out.width,
                             title=title)
        if table is None:  # one model per line
            out.print(title, markup=False)
            for row in rows:
                # a level and its figures ('API 27 80% / 2p') never split across lines: wrapped as one word
                cells = ", ".join(f"API {h} {c}".replace(" ", "\xa0") for h, c in zip(header[1:], row[1:]))
                for line in wrap(f"{row[0]}: {cells}", out.width, indent="    ", first_indent=""):
                    out.print(line.replace("\xa0", " "), markup=False)
            return
        for i, row in enumerate(rows):
            table.add_row(*(escape(c) for c in row), end_section=(i == len(rows) - 2))
        out.print(table)


def _render_matrix_compact(title: str, levels: Sequence[int], rows: Sequence[Any], cov: Sequence[str],
                           parts: Sequence[str], out: Console) -> None:
    """The level matrix as a text grid, op names last so that long ones cannot push the columns apart:
    `#0    L   ✓   ✓ ...  28  UNIDIRECTIONAL_SEQUENCE_LSTM`."""
    label_width = max((len(f"#{head[0]}") for head, _, _ in rows), default=2)
    longest = max((len(head[1]) for head, _, _ in rows), default=0)
    # Five characters a level when the longest op name still fits the width, else four; the coverage row
    # then drops its '%' signs (named in its label) so that "100%" cells do not touch.
    cell = 5 if label_width + 5 * len(levels) + 8 + longest <= out.width else 4
    cov_label = "coverage" if cell == 5 else "coverage %"
    cov = cov if cell == 5 else [c.rstrip("%") for c in cov]
    out.print(title, markup=False)
    out.print(f"{'':<{label_width}}" + "".join(f"{lv:>{cell}}" for lv in levels) + "  from  op", markup=False)
    for head, cells, first in rows:
        line = Text(f"{'#' + head[0]:<{label_width}}")
        for v in cells:
            line.append(f"{SYMBOLS[v]:>{cell}}", style=STYLE[v])
        line.append(f"  {first:>4}  {head[1]}")
        out.print(line)
    for label, values in ((cov_label, cov), ("partitions", parts)):
        out.print(f"{'':<{label_width}}" + "".join(f"{c:>{cell}}" for c in values) + f"  {'':>4}  {label}",
                  markup=False)


class JsonFormat(CheckFormat):
    """`analysis.report_json` per model (schema_version'd), with totals and warnings for several."""

    name = "json"

    def one(self, check: ModelCheck, out: Console, err: Console, verbose: bool, quiet: bool) -> None:
        print_raw(out, json.dumps(report_json(check), indent=2))

    def several(self, checks: Sequence[ModelCheck], out: Console, err: Console, quiet: bool,
                failures: Sequence[Failed] = ()) -> None:
        level = checks[0].api_level
        data = {"schema_version": SCHEMA_VERSION, "api_level": level, "feature_level": feature_level(level),
                "warnings": [w for w in [deprecation_warning(level)] if w],
                "models": [report_json(c) for c in checks], "total": totals(checks),
                "errors": [f.to_json() for f in failures]}
        print_raw(out, json.dumps(data, indent=2))

    def matrix(self, mats: Sequence[LevelMatrix], out: Console, failures: Sequence[Failed] = (),
               quiet: bool = False) -> None:
        data: Any = mats[0].to_json() if len(mats) == 1 and not failures else {
            "schema_version": SCHEMA_VERSION, "api_level": "all", "levels": list(ALL_API_LEVELS),
            "models": [m.to_json() for m in mats], "errors": [f.to_json() for f in failures]}
        print_raw(out, json.dumps(data, indent=2))

    def nothing_checked(self, failures: Sequence[Failed], out: Console) -> None:
        print_raw(out, json.dumps({"schema_version": SCHEMA_VERSION, "models": [],
                                   "errors": [f.to_json() for f in failures]}, indent=2))


class CsvFormat(CheckFormat):
    """One row per op (`render.CSV_COLUMNS`), per model for several, per op and level for the matrix. CSV has
    no room for warnings: they go to stderr, like other logs."""

    name = "csv"

    def one(self, check: ModelCheck, out: Console, err: Console, verbose: bool, quiet: bool) -> None:
        print_raw(out, render_csv([check]), end="")
        for w in check.warnings():
            err.print(f"warning: {w}", markup=False)

    def several(self, checks: Sequence[ModelCheck], out: Console, err: Console, quiet: bool,
                failures: Sequence[Failed] = ()) -> None:
        level = checks[0].api_level
        header = ["model", "api_level", "ops_total", "ops_lowered", "ops_refused", "ops_delegated", "coverage",
                  "partitions", "error"]
        rows = [r if failures else r + [""] for r in _with_errors(multi_rows(checks), failures)[1]]
        print_raw(out, _csv([header, *([row[0], level, *(c if c != "-" else "" for c in row[1:])] for row in rows)]),
                  end="")
        if deprecation_warning(level):
            err.print(f"warning: {deprecation_warning(level)}", markup=False)

    def matrix(self, mats: Sequence[LevelMatrix], out: Console, failures: Sequence[Failed] = (),
               quiet: bool = False) -> None:
        if len(mats) > 1:
            header, multi = _matrix_multi_rows(mats)
            print_raw(out, _csv([header, *multi]), end="")
            return
        mat, levels = mats[0], list(ALL_API_LEVELS)
        rows, _cov, parts = _matrix_rows(mat)
        lines: list[list[Any]] = [["index", "op", *map(str, levels), "min_api_level"]]
        lines += [[*head, *(v.value for v in cells), "" if first == "never" else first] for head, cells, first in rows]
        lines.append(["coverage", "", *(f"{mat.checks[lv].plan.coverage:.2f}" for lv in levels), ""])
        lines.append(["partitions", "", *parts, ""])
        print_raw(out, _csv(lines), end="")


class MarkdownFormat(CheckFormat):
    """GitHub Markdown: the report's tables and its verdict line."""

    name = "md"

    def one(self, check: ModelCheck, out: Console, err: Console, verbose: bool, quiet: bool) -> None:
        print_raw(out, render_md(check))

    def several(self, checks: Sequence[ModelCheck], out: Console, err: Console, quiet: bool,
                failures: Sequence[Failed] = ()) -> None:
        lines = [f"## {_several_title(checks, failures)}", "", *_md_table(*_with_errors(multi_rows(checks), failures))]
        print_raw(out, "\n".join(lines) + "\n")
        _print_deprecation(err, checks[0].api_level)

    def matrix(self, mats: Sequence[LevelMatrix], out: Console, failures: Sequence[Failed] = (),
               quiet: bool = False) -> None:
        if len(mats) > 1:
            header, rows = _matrix_multi_rows(mats)
            print_raw(out, "\n".join(_md_table(header, rows)) + "\n\ncells: coverage of ops delegated / partitions\n")
        else:
            self._matrix_one(mats[0], out)
        _error_rows(failures, out)

    @staticmethod
    def _matrix_one(mat: LevelMatrix, out: Console) -> None:
        rows, cov, parts = _matrix_rows(mat)
        header = ["#", "op", *map(str, ALL_API_LEVELS), "from API"]
        lines = [f"## {_matrix_title(mat)}", "", "| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
        for head, cells, first in rows:
            lines.append("| " + " | ".join([*head, *(SYMBOLS[v] for v in cells), first]) + " |")
        lines.append("| | **coverage** | " + " | ".join(cov) + " | |")
        lines.append("| | **partitions** | " + " | ".join(parts) + " | |")
        lines += ["", LEGEND, ""]
        print_raw(out, "\n".join(lines))


CHECK_FORMATS: dict[str, CheckFormat] = {f.name: f for f in (TableFormat(), JsonFormat(), CsvFormat(),
                                                               MarkdownFormat())}
