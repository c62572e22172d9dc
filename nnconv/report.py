"""`nnconv check`: per-op verdicts at an API level, rendered as a table, JSON, CSV or Markdown."""

from __future__ import annotations

import csv
import io
import json
import os
from typing import Any

from rich.console import Console
from rich.table import Table

from nnconv.errors import EXIT_FAILURE
from nnconv.lowering.convert import ConversionOptions, Report, check_model
from nnconv.nnapi.enums import API_LEVELS
from nnconv.tflite.reader import read_model


def report_json(report: Report) -> dict:
    return {"model": report.model, "api_level": report.api_level,
            "ops": [{"index": r.index, "op": r.op, "version": r.version, "status": r.status.value,
                     "nnapi_ops": r.nnapi_ops, "reason": r.reason, "hint": r.hint,
                     "min_api_level": r.min_api_level, "input_dtypes": r.input_dtypes,
                     "quantization": r.quantization,
                     "diagnostics": [d.to_json() for d in r.diagnostics]} for r in report.ops],
            "summary": {"ops_total": len(report.ops), "ops_lowered": report.ops_lowered}}


def summary_line(report: Report) -> str:
    n = len(report.ops)
    pct = 100.0 * report.ops_lowered / n if n else 100.0
    return f"{report.ops_lowered}/{n} ops ({pct:.0f}%)"


def run_check(models: tuple[str, ...], api_level: str | None, feature_level: int | None, fmt: str,
              max_partitions: int, fail_on: str | None, min_coverage: float | None,
              max_partitions_allowed: int | None, options: ConversionOptions, out: Console, err: Console) -> int:
    from nnconv.cli import resolve_api_level
    level = resolve_api_level(int(api_level) if api_level not in (None, "all") else None, feature_level)
    code = 0
    for path in models:
        report = check_model(read_model(path), level, options)
        if fmt == "json":
            out.print_json(json.dumps(report_json(report)))
        elif fmt == "csv":
            buf = io.StringIO()
            w = csv.writer(buf)
            w.writerow(["index", "op", "status", "nnapi_ops", "reason", "min_api_level"])
            for r in report.ops:
                w.writerow([r.index, r.op, r.status.value, " ".join(r.nnapi_ops), r.reason, r.min_api_level])
            out.print(buf.getvalue(), end="", markup=False)
        else:
            table = Table(title=f"{os.path.basename(path)} at API {level}")
            for col in ("#", "op", "status", "NNAPI ops", "reason", "min API"):
                table.add_column(col)
            for r in report.ops:
                table.add_row(str(r.index), r.op, r.status.value, ", ".join(r.nnapi_ops), r.reason,
                              str(r.min_api_level or "-"))
            out.print(table)
            out.print(summary_line(report), markup=False)
        if fail_on and not report.ok:
            code = EXIT_FAILURE
        if min_coverage is not None and report.ops and 100.0 * report.ops_lowered / len(report.ops) < min_coverage:
            code = EXIT_FAILURE
    return code
