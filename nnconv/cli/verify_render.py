"""What `nnconv verify` prints, one renderer per `--format` in `VERIFY_FORMATS` (the command's choices):
one model's report (its outputs, per-op and relaxed sections; `--dataset`'s summary first), or a row per
model with a summary."""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Sequence

from rich.markup import escape
from rich.text import Text

from nnconv.cli import common
from nnconv.fmt import format_number, format_shape, print_wrapped
from nnconv.report.render import COMPACT_BELOW
from nnconv.report.tables import Col, fitted_table

if TYPE_CHECKING:  # the parity stage is imported lazily, when verify runs
    from nnconv.parity.batch import ModelResult
    from nnconv.parity.per_op import PerOpReport
    from nnconv.parity.session import VerifyOptions, VerifyReport
    from nnconv.parity.verify import OutputParity, ParityReport

TOP_OPS = 5  # ops by error shown besides the first divergent one


class VerifyFormat(ABC):
    """One `--format` of `nnconv verify`."""

    name: str

    @abstractmethod
    def one(self, report: VerifyReport) -> None:
        """One model's report."""

    @abstractmethod
    def several(self, results: Sequence[ModelResult], names: Sequence[str], options: VerifyOptions) -> None:
        """A row per model (`names`: as the folder given names them) and the summary."""


class TableFormat(VerifyFormat):
    """Tables that fit the terminal (one item per line where they cannot); -q: verdicts only."""

    name = "table"

    def one(self, report: VerifyReport) -> None:
        if common.verbosity == common.QUIET:
            common.out.print(report.verdict, markup=False)
        elif report.dataset is not None:
            from nnconv.cli.verify_dataset import print_dataset_report
            print_dataset_report(report, print_report)
        else:
            print_report(report)

    def several(self, results: Sequence[ModelResult], names: Sequence[str], options: VerifyOptions) -> None:
        _print_several(results, names, options)


class JsonFormat(VerifyFormat):
    """The report's JSON (docs/report-schema.md), byte for byte on stdout."""

    name = "json"

    def one(self, report: VerifyReport) -> None:
        common.emit(json.dumps(report.to_json(), indent=2))

    def several(self, results: Sequence[ModelResult], names: Sequence[str], options: VerifyOptions) -> None:
        from nnconv.parity.batch import batch_json
        common.emit(json.dumps(batch_json(results), indent=2))


VERIFY_FORMATS: dict[str, VerifyFormat] = {f.name: f for f in (TableFormat(), JsonFormat())}


def _print_several(results: Sequence[ModelResult], names: Sequence[str], options: VerifyOptions) -> None:
    """One row per model, never truncated (one model per line on narrow consoles), and the summary line; -q
    prints one line per model."""
    from nnconv.parity.batch import ERROR, summary
    rows, styles = [], []
    for name, r in zip(names, results):
        worst = r.worst_output or {}
        flat = r.status != ERROR and bool((r.report or {}).get("uninformative_outputs"))
        failed_flat = r.status == "fail" and (r.report or {}).get("verdict", "").startswith("FAIL (--fail-on")
        status = "FAIL (uninformative)" if failed_flat else "PASS (uninformative)" if flat and r.status == "pass" \
            else r.status.upper()
        rows.append([name, status, worst.get("name", "-"),
                     f"{worst['max_abs']:.3g}" if worst else "-", f"{worst['max_rel']:.3g}" if worst else "-",
                     "-" if worst.get("max_lsb") is None else str(worst["max_lsb"]), f"{r.seconds:.1f}s",
                     r.error if r.status == ERROR else _first_divergent_note(r.report)])
        styles.append("red" if r.status != "pass" else "yellow" if flat else "green")
    out = common.out
    if common.verbosity == common.QUIET:  # verdicts and errors only: one line per model
        for row in rows:
            out.print(f"{row[0]}: {row[1]}" + (f" {row[7]}" if row[1] == "ERROR" else ""), markup=False)
        return
    title = f"verify at API {options.api_level} (TFLite {options.kernels} kernels)"
    cols = (Col("model"), Col("status"), Col("worst output"), Col("max |diff|", justify="right"),
            Col("max rel", justify="right"), Col("LSB", justify="right"), Col("time", justify="right"),
            Col("note", wrap=True, grow=1, fold=True))
    table = fitted_table(cols, rows, out.width, title=title) if out.width >= COMPACT_BELOW else None
    if table is not None:
        for row, style in zip(rows, styles):
            table.add_row(escape(row[0]), f"[{style}]{row[1]}[/]", *(escape(c) for c in row[2:]))
        out.print(table)
    else:  # one model per line, its figures on indented lines: model names are never split
        out.print(title, markup=False)
        for row in rows:
            out.print(f"{row[0]}: {row[1]}", markup=False)
            if row[2] != "-":
                print_wrapped(out, f"worst output {row[2]}: max |diff| {row[3]}, max rel {row[4]}"
                              + ("" if row[5] == "-" else f", {row[5]} LSB"), indent="      ", first_indent="    ")
            if row[7]:
                print_wrapped(out, row[7], indent="      ", first_indent="    ")
    s = summary(results)
    out.print(f"{s['passed']} passed, {s['failed']} failed, {s['errors']} could not be verified "
              f"({s['models']} models, {s['seconds']:.1f}s)", markup=False)


def _first_divergent_note(report: dict | None) -> str:
    """The note of a model's row: its dataset's counts (`--dataset`), then the first divergent op."""
    notes = []
    dataset = (report or {}).get("dataset")
    if dataset:
        notes.append(f"{dataset['samples']} samples, {dataset['failing_samples']} failing, worst "
                     f"{dataset['worst_sample']}")
    first = (report or {}).get("first_divergent_op")
    if first:
        notes.append(f"first divergent op #{first['op_index']} {first['op']}")
    return "; ".join(notes)


def print_report(report: VerifyReport) -> None:
    """The single-model table: outputs, then per-op and relaxed sections when asked."""
    print_parity(report.parity)
    if report.per_op is not None:
        _print_per_op(report.per_op, "per-op parity")
    if report.relaxed is not None:
        _print_outputs(report.relaxed, "relaxed fp16 (simulated) vs TFLite float32")
        if report.relaxed_per_op is not None:
            _print_per_op(report.relaxed_per_op, "relaxed fp16 per op", first_label="first op with large fp16 error",
                          relaxed=True)
    print_wrapped(common.out, report.verdict, indent="  ", first_indent="")


def print_parity(report: ParityReport) -> None:
    # `--reference` compares with saved outputs, not with TFLite's kernels
    against = f"TFLite {report.kernels} kernels" if report.kernels in ("builtin", "reference", "xnnpack") else \
        f"against {report.kernels}"
    _print_outputs(report.outputs, f"{os.path.basename(report.model)} at API {report.api_level} ({against})")
    if getattr(report, "note", ""):  # a PartitionedParityReport says why it verified partition by partition
        common.out.print(f"note: {report.note}", markup=False)


def output_label(o: OutputParity) -> str:
    """`probabilities [175]`: the TFLite tensor name with the NNAPI operand holding our value."""
    return o.name if o.operand is None else f"{o.name} [{o.operand}]"


def tensor_label(o: OutputParity) -> str:
    """`float32 1x1000 [0, 0.9812]`: dtype, shape and TFLite's [min, max] at 4 significant digits."""
    text = f"{o.dtype} {format_shape(o.shape)}"
    if o.value_range is not None:
        text += f" [{format_number(o.value_range[0])}, {format_number(o.value_range[1])}]"
    return text


_OUTPUT_COLUMNS = (Col("output"), Col("dtype shape [min, max]"), Col("max |diff|", justify="right"),
                   Col("max rel", justify="right"), Col("top-1/5", justify="right"), Col("LSB", justify="right"),
                   Col("tolerance", wrap=True), Col("result", wrap=True, grow=1))
_VERBOSE_COLUMNS = (Col("mean |diff|", justify="right"), Col("cosine", justify="right"))


def top_cell(o: OutputParity) -> str:
    """`100%/80%`: top-1/top-5 agreement of class scores, `tie` where TFLite's or our ranking ties (no claim),
    `-` for outputs that are not class scores."""
    if o.top1 is None and o.top5 is None:
        return "-"
    return "/".join("tie" if v is None else f"{v:.0%}" for v in (o.top1, o.top5))


def _print_outputs(outputs: Sequence[OutputParity], title: str) -> None:
    """One row per output when the table fits the console without splitting a name, else one output per
    line with its metrics on indented lines; -v adds mean |diff| and cosine similarity."""
    verbose = common.verbosity == common.VERBOSE
    out = common.out
    rows = []
    for o in outputs:
        row = [output_label(o), tensor_label(o), f"{o.max_abs:.3g}", f"{o.max_rel:.3g}", top_cell(o),
               "-" if o.max_lsb is None else str(o.max_lsb), o.tolerance.describe(),
               o.verdict + (f" {o.detail}" if o.detail else "")]
        if verbose:
            row[4:4] = [f"{o.mean_abs:.3g}", f"{o.cosine:.6f}"]
        rows.append(row)
    cols = _OUTPUT_COLUMNS[:4] + _VERBOSE_COLUMNS + _OUTPUT_COLUMNS[4:] if verbose else _OUTPUT_COLUMNS
    table = fitted_table(cols, rows, out.width, title=title) if out.width >= COMPACT_BELOW else None
    if table is not None:
        for o, row in zip(outputs, rows):
            style = "red" if not o.passed else ("yellow" if o.uninformative else "green")
            table.add_row(*(escape(c) for c in row[:-1]),
                          f"[{style}]{escape(o.verdict)}[/{style}]" + escape(row[-1][len(o.verdict):]))
        out.print(table)
        return
    out.print(title, markup=False)
    for o in outputs:
        line = Text(f"{output_label(o)}  {tensor_label(o)}  ")
        line.append(o.verdict, style="red" if not o.passed else ("yellow" if o.uninformative else "green"))
        out.print(line)
        metrics = f"max |diff| {o.max_abs:.3g}, max rel {o.max_rel:.3g}"
        if o.max_lsb is not None:
            metrics += f", {o.max_lsb} LSB"
        if top_cell(o) != "-":
            metrics += f", top-1/5 {top_cell(o)}"
        if verbose:
            metrics += f", mean |diff| {o.mean_abs:.3g}, cosine {o.cosine:.6f}"
        print_wrapped(out, metrics, indent="      ", first_indent="    ")
        print_wrapped(out, f"tolerance: {o.tolerance.describe()}", indent="      ", first_indent="    ")
        if o.detail:
            print_wrapped(out, o.detail, indent="      ", first_indent="    ")


def _print_per_op(per_op: PerOpReport, title: str, first_label: str = "first divergent op", relaxed: bool = False) -> None:
    first = per_op.first_large if relaxed else per_op.first_divergent
    compared = len(per_op.entries)
    bad = sum(e.status != "pass" for e in per_op.entries)
    against = f" (against TFLite's {per_op.kernels} kernels" + (f", {per_op.kernels_note}" if per_op.kernels_note
                                                                else "") + ")" if per_op.kernels else ""
    common.out.print(f"{title}{against}: {compared} ops compared, {bad} out of tolerance, {per_op.not_compared} "
                     "without an NNAPI counterpart", markup=False)
    for note in per_op.notes:
        print_wrapped(common.out, f"note: {note}", indent="    ", first_indent="")
    if first is not None:
        alone = first.confirmed_alone
        confirm = (f"; alone on TFLite's inputs: max |diff| {alone['max_abs']:.3g}" if alone else
                   "; could not be run alone")
        common.out.print(f"{first_label}: #{first.op_index} {first.op} -> {first.tensor} ({first.dtype}, "
                         f"{first.status}): max |diff| {first.max_abs:.3g}, max rel {first.max_rel:.3g}"
                         + ("" if first.lsb is None else f", {first.lsb} LSB") + confirm, markup=False)
    else:
        common.out.print(f"{first_label}: none", markup=False)
    if per_op.first_non_finite is not None:
        nf = per_op.first_non_finite
        sides = "; ".join(f"{side}: " + ", ".join(f"{n} {'NaN' if kind == 'nan' else 'infinite'}"
                                                   for kind, n in nf[key].items())
                          for side, key in (("TFLite", "tflite"), ("ours", "ours")) if nf[key])
        print_wrapped(common.out, f"NaN or infinity first appears at: #{nf['op_index']} {nf['op']} -> {nf['tensor']} "
                                  f"({sides}), from finite inputs"
                                  + ("; ops reading its NaN are not blamed" if "nan" in {**nf["tflite"], **nf["ours"]}
                                     else ""),
                      indent="    ", first_indent="")
    start = per_op.first_large
    difference = per_op.first_difference
    if difference is not None and difference is not start and difference is not first:
        common.out.print(f"differences start at: #{difference.op_index} {difference.op} -> {difference.tensor} "
                         f"({difference.status}: max |diff| {difference.max_abs:.3g}"
                         + ("" if difference.lsb is None else f", {difference.lsb} LSB") + ")", markup=False)
    if start is not None and start is not first:
        common.out.print(f"divergence starts at: #{start.op_index} {start.op} -> {start.tensor} ({start.status}: "
                         f"max |diff| {start.max_abs:.3g}" + ("" if start.lsb is None else f", {start.lsb} LSB")
                         + ")", markup=False)
    arithmetic = (start.confirmed_alone or {}) if start is not None else {}
    if arithmetic.get("tflite_arithmetic"):  # out of tolerance alone only through NNAPI's own arithmetic
        way = arithmetic["tflite_arithmetic"]
        print_wrapped(common.out, f"NNAPI's own arithmetic: {arithmetic['arithmetic']}; computed TFLite's way, "
                                  f"alone on TFLite's inputs: max |diff| {way['max_abs']:.3g}"
                                  + ("" if way["lsb"] is None else f", {way['lsb']} LSB"),
                      indent="    ", first_indent="  ")
    # Where divergence starts (the first amplified or divergent op) leads the table, whatever its size: the
    # largest errors are usually far downstream, propagated.
    worst = per_op.worst(TOP_OPS)
    if start is not None:
        worst = [start] + [e for e in worst if e is not start][:TOP_OPS - 1]
    if not worst:
        return
    rows = [[f"#{e.op_index} {e.op}", e.tensor, e.dtype, f"{e.max_abs:.3g}", f"{e.max_rel:.3g}",
             "-" if e.lsb is None else str(e.lsb), e.status + (" (starts here)" if e is start else "")]
            for e in worst]
    cols = (Col("op"), Col("tensor"), Col("dtype"), Col("max |diff|", justify="right"),
            Col("max rel", justify="right"), Col("LSB", justify="right"), Col("status"))
    title = f"{title}: ops out of tolerance, where divergence starts, then largest error first"
    table = fitted_table(cols, rows, common.out.width, title=title) if common.out.width >= COMPACT_BELOW else None
    if table is None:  # one op per line: tensor names are long TFLite names, never split
        common.out.print(title, markup=False)
        for row in rows:
            print_wrapped(common.out, f"{row[0]} -> {row[1]} ({row[2]}): max |diff| {row[3]}, max rel {row[4]}"
                          + ("" if row[5] == "-" else f", {row[5]} LSB") + f"  {row[6]}", indent="      ",
                          first_indent="  ")
        return
    for row in rows:
        table.add_row(*(escape(c) for c in row))
    common.out.print(table)

