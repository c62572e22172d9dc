"""Rendering of `check --device` (the spec report itself is `report/render.py`'s) and of `nnconv devices`:
a table comparing the devices side by side per op, each device's partition plan, JSON, CSV and Markdown,
one renderer per `check --format` in `DEVICE_FORMATS`. The JSON fields are documented in
docs/report-schema.md ("devices")."""

from __future__ import annotations

import csv
import io
import json
from abc import ABC, abstractmethod
from typing import Sequence

from rich.console import Console
from rich.markup import escape

from nnconv.errors import InternalError
from nnconv.fmt import format_bytes, print_wrapped
from nnconv.nnapi.levels import feature_level
from nnconv.report.analysis import SCHEMA_VERSION, deprecation_warning, summary_line
from nnconv.report.render import display_name, ops_range, print_raw, render_md, render_table, totals
from nnconv.report.tables import Col, fitted_table

from nnconv.devices.device_check import FOLDED, NOT_LOWERED, REFUSED, TAKEN, DeviceCheck, DeviceModelCheck
from nnconv.devices.profile import DeviceProfile

# One cell per device in the comparison table.
CELL = {TAKEN: "yes", REFUSED: "NO", NOT_LOWERED: "-", FOLDED: "folded"}
LEGEND = ("yes: the device takes every NNAPI operation of the op; NO: it refuses one (the op runs on TFLite's "
          "CPU); -: NNAPI's spec refuses the op at this level; folded: computed at conversion time")
_STYLE = {TAKEN: "green", REFUSED: "red", NOT_LOWERED: "dim", FOLDED: "green"}


SHOWN_KINDS = 3  # distinct NNAPI operations (with types) shown per op; -v / JSON / CSV list them all


def _nnapi_cell(check: DeviceCheck, index: int, verbose: bool = False) -> str:
    """The op's distinct NNAPI operations with their input-0 -> output-0 types."""
    op = check.ops[index]
    kinds = list(dict.fromkeys(v.label() for v in op.nnapi))
    if verbose or len(kinds) <= SHOWN_KINDS:
        return ", ".join(kinds)
    return f"{len(op.nnapi)} ops: " + ", ".join(kinds[:SHOWN_KINDS]) + ", ..."


# -- JSON -------------------------------------------------------------------------------------------
def device_report_json(d: DeviceModelCheck) -> dict:
    """The spec report of `check --format json` with a "devices" list, one entry per profile."""
    return d.to_json()


class DeviceFormat(ABC):
    """`check --device` in one `--format` of `nnconv check`: the spec report and every device's verdicts and
    plan. The format's name is that of `report.formats.CHECK_FORMATS`, whose keys are the command's choices."""

    name: str

    @abstractmethod
    def render(self, results: Sequence[DeviceModelCheck], out: Console, err: Console, verbose: bool,
               quiet: bool) -> None:
        """Every model's report with its devices."""


class DeviceTable(DeviceFormat):
    name = "table"

    def render(self, results: Sequence[DeviceModelCheck], out: Console, err: Console, verbose: bool,
               quiet: bool) -> None:
        for d in results:
            if quiet:  # verdicts only: the spec's line, then one per device
                out.print(f"{d.check.label}: API {d.check.api_level}: {summary_line(d.check)}", markup=False)
                for dc in d.devices:
                    out.print(f"{d.check.label}: API {d.check.api_level}: {dc.summary_line()}", markup=False)
                continue
            render_table(d.check, out, err, verbose=verbose)
            render_devices_table(d, out, verbose)


class DeviceJson(DeviceFormat):
    name = "json"

    def render(self, results: Sequence[DeviceModelCheck], out: Console, err: Console, verbose: bool,
               quiet: bool) -> None:
        level = results[0].check.api_level
        data = (device_report_json(results[0]) if len(results) == 1 else
                {"schema_version": SCHEMA_VERSION, "api_level": level, "feature_level": feature_level(level),
                 "warnings": [w for w in [deprecation_warning(level)] if w],
                 "models": [device_report_json(d) for d in results], "total": totals([d.check for d in results])})
        print_raw(out, json.dumps(data, indent=2))


class DeviceCsv(DeviceFormat):
    """One row per (model, device, op); each device's summary line on stderr (CSV has no room for it)."""

    name = "csv"

    def render(self, results: Sequence[DeviceModelCheck], out: Console, err: Console, verbose: bool,
               quiet: bool) -> None:
        print_raw(out, render_devices_csv(results), end="")
        for d in results:
            for dc in d.devices:
                err.print(f"{d.check.label}: {dc.summary_line()}", markup=False)


class DeviceMarkdown(DeviceFormat):
    name = "md"

    def render(self, results: Sequence[DeviceModelCheck], out: Console, err: Console, verbose: bool,
               quiet: bool) -> None:
        print_raw(out, "\n".join(render_devices_md(d) for d in results))


DEVICE_FORMATS: dict[str, DeviceFormat] = {f.name: f for f in (DeviceTable(), DeviceJson(), DeviceCsv(),
                                                                 DeviceMarkdown())}


def device_format(name: str) -> DeviceFormat:
    """The `check --device` renderer of `check --format NAME`. Every check format has one (a test holds the
    two registries to the same names): a missing one is a bug of ours, never a quiet fall back to the table."""
    found = DEVICE_FORMATS.get(name)
    if found is None:
        raise InternalError(f"check --format {name} has no renderer for --device (nnconv/devices/render.py)")
    return found


# -- CSV --------------------------------------------------------------------------------------------
CSV_COLUMNS = ("model", "api_level", "device", "index", "op", "spec_status", "device_status", "partition",
               "nnapi_ops", "reason")


def render_devices_csv(results: Sequence[DeviceModelCheck]) -> str:
    """One row per (model, device, op)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for d in results:
        for dc in d.devices:
            for r, o in zip(d.check.report.ops, dc.ops):
                part = dc.plan.partition_of(o.index)
                w.writerow([d.check.label, d.check.api_level, dc.profile.name, o.index, o.op, r.status.value, o.status,
                            "" if part is None else part, " ".join(v.label() for v in o.nnapi), o.reason])
    return buf.getvalue()


# -- Markdown ---------------------------------------------------------------------------------------
def _md(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_devices_md(d: DeviceModelCheck) -> str:
    lines = [render_md(d.check), f"### Devices: {display_name(d.check)} at API {d.check.api_level}", "",
             "| # | op | NNAPI ops (input 0 -> output 0) | " + " | ".join(_md(dc.profile.name) for dc in d.devices)
             + " |", "| --- | --- | --- |" + " --- |" * len(d.devices)]
    first = d.devices[0]
    for i, o in enumerate(first.ops):
        cells = [CELL[dc.ops[i].status] for dc in d.devices]
        lines.append("| " + " | ".join(_md(x) for x in (o.index, o.op, _nnapi_cell(first, i), *cells)) + " |")
    lines += ["", LEGEND, "", "| device | partitions | ops on TFLite's CPU | boundary bytes | source |",
              "| --- | --- | --- | --- | --- |"]
    for dc in d.devices:
        lines.append("| " + " | ".join(_md(x) for x in (
            dc.profile.name, len(dc.plan.partitions), ops_range(dc.cpu_ops) or "-", dc.boundary_bytes,
            dc.profile.source_line)) + " |")
    refusals = [(dc.profile.name, o) for dc in d.devices for o in dc.ops if o.status == REFUSED]
    if refusals:
        lines += ["", "| device | # | op | why the device refuses it |", "| --- | --- | --- | --- |"]
        lines += [f"| {_md(name)} | {o.index} | {_md(o.op)} | {_md(o.reason)} |" for name, o in refusals]
    return "\n".join(lines) + "\n"


# -- the terminal -----------------------------------------------------------------------------------
_PARTITION_COLUMNS = (Col("#", justify="right"), Col("TFLite ops", wrap=True), Col("NNAPI ops", justify="right"),
                      Col("bytes in+out", justify="right"))


def render_devices_table(d: DeviceModelCheck, out: Console, verbose: bool = False) -> None:
    """The devices side by side per op, each device's partitions and refusals, and one summary line each."""
    first = d.devices[0]
    cols = [Col("#", justify="right"), Col("op"), Col("NNAPI ops (input 0 -> output 0)", wrap=True, grow=1)]
    cols += [Col(dc.profile.name) for dc in d.devices]
    rows = [[str(o.index), o.op, _nnapi_cell(first, i, verbose), *(CELL[dc.ops[i].status] for dc in d.devices)]
            for i, o in enumerate(first.ops)]
    title = f"devices: {display_name(d.check)} at API {d.check.api_level}"
    table = fitted_table(cols, rows, out.width, title=title)
    if table is None:  # one op per line, each device's verdict after it
        out.print(title, markup=False)
        for i, row in enumerate(rows):
            verdicts = ", ".join(f"{dc.profile.name} {row[3 + n]}" for n, dc in enumerate(d.devices))
            print_wrapped(out, f"#{row[0]} {row[1]}: {verdicts}", indent="    ", first_indent="")
    else:
        for i, row in enumerate(rows):
            table.add_row(*(escape(c) for c in row[:3]),
                          *(f"[{_STYLE[dc.ops[i].status]}]{row[3 + n]}[/]" for n, dc in enumerate(d.devices)))
        out.print(table)
    print_wrapped(out, LEGEND, indent="  ", first_indent="")
    for dc in d.devices:
        prows = [[str(p.index), ops_range(p.ops), str(p.nnapi_ops), format_bytes(p.boundary_bytes)]
                 for p in dc.plan.partitions]
        ptable = fitted_table(_PARTITION_COLUMNS, prows, out.width,
                              title=f"{dc.profile.name}: partitions (TFLite's NNAPI delegate, this device only)")
        if prows and ptable is not None:
            for row in prows:
                ptable.add_row(*(escape(c) for c in row))
            out.print(ptable)
        by_reason: dict[str, list[int]] = {}
        for o in dc.ops:
            if o.status == REFUSED:
                by_reason.setdefault(o.reason, []).append(o.index)
        for reason, ops in by_reason.items():
            print_wrapped(out, f"{dc.profile.name} refuses {ops_range(ops)}: {reason}", indent="    ",
                          first_indent="  ")
        print_wrapped(out, dc.summary_line(), indent="  ", first_indent="")
        for w in dc.warnings():
            print_wrapped(out, f"warning: {w}", indent="  ", first_indent="")


# -- `nnconv devices` -------------------------------------------------------------------------------
def render_profiles(profiles: Sequence[DeviceProfile], fmt: str, out: Console) -> None:
    if fmt == "json":
        print_raw(out, json.dumps({"profiles": [p.summary_json() for p in profiles]}, indent=2))
        return
    rows = [[p.name, p.device_name, p.device_type, "-" if p.feature_level is None else str(p.feature_level),
             "all" if p.all_operations else str(len({e.operation for e in p.operations})), p.source_line]
            for p in profiles]
    cols = (Col("name"), Col("device"), Col("type"), Col("feature level", justify="right"),
            Col("operations", justify="right"), Col("source", wrap=True, grow=1))
    table = fitted_table(cols, rows, out.width, title="device profiles shipped with nnconv")
    if table is None:
        for row in rows:
            print_wrapped(out, f"{row[0]}: {row[1]} ({row[2]}), feature level {row[3]}, {row[4]} operations; "
                               f"source: {row[5]}", indent="    ", first_indent="")
        return
    for row in rows:
        table.add_row(*(escape(c) for c in row))
    out.print(table)
