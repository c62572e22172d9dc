"""`nnconv verify MODEL --dataset PATH`: the per-output summary over every sample (parity/dataset.py), with a
progress bar on stderr when it is a terminal, then the ordinary report of the worst sample (and its per-op
comparison with `--per-op`)."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator

from rich.markup import escape

from nnconv.cli import common
from nnconv.fmt import format_number, format_shape, print_wrapped
from nnconv.report.render import COMPACT_BELOW
from nnconv.report.tables import Col, fitted_table

_COLUMNS = (Col("output"), Col("dtype shape [min, max]"), Col("failing", justify="right"),
            Col("top-1/5 agreement", justify="right"), Col("p50", justify="right"), Col("p90", justify="right"),
            Col("p99", justify="right"), Col("max", justify="right"), Col("worst sample", wrap=True),
            Col("result", wrap=True, grow=1))


@contextmanager
def sample_progress() -> Iterator[Callable[[str, int], None] | None]:
    """The `advance(name, total)` callback of a rich progress bar on stderr (None when stderr is not a
    terminal: logs stay clean), called as each sample's work begins (parity/dataset.py `run_samples`: the first
    sample of a batched chunk shows while the chunk runs on our executor)."""
    if not common.err.file.isatty() or common.verbosity == common.QUIET:
        yield None
        return
    from rich.progress import Progress
    with Progress(console=common.err, transient=True) as bar:
        task = bar.add_task("samples", total=None)

        def advance(name: str, total: int) -> None:
            if bar.tasks[0].total is None:
                bar.update(task, total=total)
            else:
                bar.advance(task)
            bar.update(task, description=f"sample {name}")
        yield advance


def _agreement(o: dict) -> str:
    if o["top1_agreement"] is None and o["top5_agreement"] is None:
        return "-"
    return "/".join("tie" if v is None else f"{v:.1%}" for v in (o["top1_agreement"], o["top5_agreement"]))


_SETTLED = {"reference kernels": "within TFLite's reference kernels", "NNAPI arithmetic": "NNAPI's own arithmetic",
            "kernel spread": "within TFLite's kernel spread"}


def _verdict(o: dict) -> str:
    """FAIL / PASS, with how many samples passed only through a settlement (which per-op does not apply)."""
    verdict = "FAIL" if not o["passed"] else "PASS (uninformative)" if o["uninformative"] else "PASS"
    settled = ", ".join(f"{n} of {o['samples']} {_SETTLED.get(how, how)}" for how, n in
                        (o.get("settled_samples") or {}).items())
    return f"{verdict} ({settled})" if settled else verdict


def print_dataset(data: dict) -> None:
    """The dataset table: one row per output (one output per line on narrow consoles)."""
    out = common.out
    unreadable = len(data.get("unreadable") or [])
    title = f"dataset {data['path']}: {data['samples']} samples, {data['failing_samples']} failing" + \
        (f", {unreadable} unreadable" if unreadable else "") + f", worst {data['worst_sample']}"
    rows = []
    for o in data["outputs"]:
        err = o["abs_error"]
        unit = " LSB" if o["lsb_histogram"] is not None else ""
        label = f"{o['dtype']} {format_shape(tuple(o['shape']))}"
        if o["range"] is not None:
            label += f" [{format_number(o['range'][0])}, {format_number(o['range'][1])}]"
        rows.append([o["name"], label, f"{o['failing_samples']}/{o['samples']}", _agreement(o),
                     *(f"{err[k]:.3g}{unit}" if k in err else "-" for k in ("p50", "p90", "p99", "max")),
                     o["worst_sample"], _verdict(o) + (f" {o['detail']}" if o["detail"] else "")])
    table = fitted_table(_COLUMNS, rows, out.width, title=title) if out.width >= COMPACT_BELOW else None
    if table is not None:
        for row in rows:
            table.add_row(*(escape(c) for c in row))
        out.print(table)
    else:
        out.print(title, markup=False)
        for row in rows:
            print_wrapped(out, f"{row[0]}  {row[1]}  {row[-1]}", indent="      ", first_indent="")
            print_wrapped(out, f"failing {row[2]}, top-1/5 {row[3]}, |diff| p50 {row[4]}, p90 {row[5]}, "
                               f"p99 {row[6]}, max {row[7]}, worst sample {row[8]}", indent="      ",
                          first_indent="    ")
    for bad in data.get("unreadable") or []:  # a sample of its own: its error, the others compared
        print_wrapped(out, f"sample {bad['sample']}: ERROR {bad['error']}", indent="    ", first_indent="")
    reason = (data.get("batch") or {}).get("loop_reason")
    if reason:  # the batched plan looped: said once, whatever the number of chunks
        print_wrapped(out, f"note: our executor ran the samples one at a time: {reason}", indent="    ",
                      first_indent="")
    for o in data["outputs"]:
        if o["lsb_histogram"]:
            hist = ", ".join(f"{k} LSB: {v}" for k, v in o["lsb_histogram"].items())
            print_wrapped(out, f"{o['name']}: LSB histogram {hist}", indent="    ", first_indent="")


def print_dataset_report(report: Any, print_report: Callable[[Any], None]) -> None:
    """The dataset summary, then the worst sample's own report (`print_report`, verify's table)."""
    print_dataset(report.dataset)
    common.out.print(f"worst sample {report.dataset['worst_sample']}:", markup=False)
    print_report(report)
