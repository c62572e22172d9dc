"""`nnconv verify`: convert models, run them on our executor and on TFLite (or against saved outputs), and
compare every output; optionally every intermediate (`--per-op`) and a simulated fp16 driver
(`--relax-fp16`). The work is in nnconv/parity/ (session.py for one model, batch.py for several)."""

from __future__ import annotations

import functools
import json
import os
from typing import TYPE_CHECKING, Sequence

import click
from rich.markup import escape
from rich.text import Text

from nnconv.cli import common
from nnconv.cli.common import (api_level_option, feature_level_option, target_option, fold_weights_option,
                               input_shape_option, handle_errors, max_memory_option, parsed, threads_option,
                               verbosity_options)
from nnconv.cli.image_options import image_options
from nnconv.cli.npz_io import save_npz
from nnconv.cli.scale import scale_options
from nnconv.cli.verify_options import VerifyCommand
from nnconv.errors import EXIT_BAD_INPUT, EXIT_FAILURE, failure_line
from nnconv.fmt import format_number, format_shape, print_wrapped
from nnconv.report.junit import verify_cases
from nnconv.report.render import COMPACT_BELOW
from nnconv.report.tables import Col, fitted_table

if TYPE_CHECKING:  # the parity stage is imported lazily, when verify runs
    from nnconv.parity.per_op import PerOpReport
    from nnconv.parity.session import VerifyReport
    from nnconv.parity.verify import OutputParity, ParityReport

TOP_OPS = 5  # ops by error shown besides the first divergent one


EPILOG = """\b
Examples:
  nnconv verify model.tflite --api-level 29
  nnconv verify models/ --api-level 30 --jobs 2
  nnconv verify model.tflite --per-op --kernels reference --format json
  nnconv verify model.tflite --dataset images/ --samples 100 --per-op --save-repro repro/
  nnconv verify models/ --shard 1/4 --junit verify.xml --scheduler tcp://10.0.0.5:8786"""


@click.command(short_help="Convert models, run them on our executor and on TFLite, and compare every output.",
               epilog=EPILOG)
@click.argument("models", nargs=-1, required=True, type=click.Path())
@api_level_option
@feature_level_option
@click.option("--inputs", "inputs_path", type=click.Path(), default=None,
              help=".npz of inputs by name or arr_0, arr_1, ... (default: seeded random inputs).")
@click.option("--seed", type=int, default=None, help="Seed of the random inputs (default 0).")
@click.option("--input-range", nargs=2, type=float, default=None, metavar="LO HI",
              help="Range of the random float inputs (quantized inputs: the integers whose values fall in it; "
                   "default [-1, 1]); with --image, the range pixels are mapped to.")
@click.option("--image", "image", type=click.Path(), default=None,
              help="Fill the model's one image input, NHWC or NCHW, from this image (resized, mapped onto "
                   "--input-range or by --input-mean/--input-std, quantized with the input's scale; PNG/JPEG "
                   "need Pillow, PPM/PGM always work).")
@click.option("--dataset", "dataset", type=click.Path(), default=None,
              help="Compare on every sample of a dataset: a folder of images (preprocessed as --image) or "
                   ".npy/.npz samples, or one .npz or .npy with a leading sample axis; --per-op examines the worst "
                   "sample.")
@click.option("--samples", type=click.IntRange(min=1), default=None, help="With --dataset: at most N samples.")
@click.option("--reference", "reference_path", type=click.Path(), default=None,
              help=".npz of outputs saved elsewhere (e.g. on a device) to compare with instead of TFLite.")
@click.option("--save-reference", "save_reference", type=click.Path(), default=None,
              help="Write TFLite's outputs on these inputs to this .npz.")
@click.option("--kernels", type=click.Choice(["builtin", "reference", "xnnpack"]), default="builtin",
              show_default=True, help="TFLite kernels to compare against: optimized builtin kernels without "
                                      "delegates, the reference kernels, or the default XNNPACK path.")
@click.option("--per-op", is_flag=True, help="Compare every intermediate tensor and name the first op whose "
                                            "output is out of tolerance while its inputs are within it.")
@click.option("--save-repro", "save_repro", type=click.Path(file_okay=False), default=None,
              help="With --per-op: write the first divergent op alone to this folder (repro.tflite, inputs.npz, "
                   "expected.npz, ours.npz), a model that fails the same way.")
@click.option("--relax-fp16", is_flag=True, help="Also run the float32 graph as a relaxed fp16 driver would "
                                                "(simulated) and report the extra error per output.")
@click.option("--atol", type=click.FloatRange(min=0), default=None, help="Absolute tolerance of float outputs.")
@click.option("--rtol", type=click.FloatRange(min=0), default=None,
              help="Tolerance of float outputs relative to the output's magnitude, max |expected|.")
@click.option("--max-lsb", type=click.IntRange(min=0), default=None, help="Tolerance of quantized outputs in LSB.")
@click.option("--fail-on", "fail_on", type=click.Choice(["uninformative"]), default=None,
              help="Exit 1 on a PASS that proves little: outputs constant on the inputs used (CI).")
@click.option("--allow-partial", is_flag=True,
              help="Verify a model that does not lower whole partition by partition (else exit 3).")
@click.option("--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="Models verified in parallel processes (several models or folders).")
@click.option("--node-data", "node_data", type=click.Path(), default=None,
              help="With --per-op: write a Model Explorer node-data file colouring each op by its error.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@image_options
@scale_options
@target_option
@fold_weights_option
@input_shape_option
@threads_option
@max_memory_option
@verbosity_options
@handle_errors
@parsed(VerifyCommand.from_params)
def verify(command: VerifyCommand) -> None:
    """Convert MODELS (files or folders), run them on our executor and on TFLite, and compare every output."""
    code = _verify_several(command) if command.several else _verify_one(command)
    if code:
        raise SystemExit(code)


def _verify_one(command: VerifyCommand) -> int:
    """One model's report (its table, or JSON), and the files it was asked to write."""
    from nnconv.parity.batch import ERROR, FAIL, PASS, ModelResult
    from nnconv.cli.verify_dataset import print_dataset_report, sample_progress
    from nnconv.parity.session import Verification
    (path, _), options, batch = command.models[0], command.options, command.batch
    save_reference, node_data, save_repro = command.save_reference, command.node_data, options.save_repro
    verification = Verification(path, options)  # prepared once, for the report and --save-reference
    try:
        with sample_progress() as advance:
            report = verification.report(advance)
    except Exception as e:  # the JUnit report still records the model, in error; the error ends the command
        line, code = failure_line(e)
        batch.write_junit("nnconv.verify", verify_cases([ModelResult(path, ERROR, 0.0, error=line, exit_code=code)],
                                                        options.api_level))
        raise
    if options.reference is not None and options.inputs is None and options.image is None:
        common.warn(f"--reference without --inputs: our executor ran on seeded random inputs (seed "
                    f"{options.seed or 0}{', --input-range' if options.input_range else ''}); the saved outputs must "
                    "come from those very inputs (--save-reference writes such a pair), else give the inputs they "
                    "were computed from with --inputs")
    _print_details(report)
    result = ModelResult(path, PASS if report.passed else FAIL, report.seconds, report.to_json())
    batch.write_junit("nnconv.verify", verify_cases([result], options.api_level))
    if save_reference is not None:
        saved = verification.tflite_outputs()
        save_npz(save_reference, saved)
        common.info(f"wrote {save_reference}: TFLite's outputs " + ", ".join(saved) + " (--reference reads it)")
    if node_data is not None:
        from nnconv.report.node_data import per_op_node_data, write_node_data
        common.info(write_node_data(node_data, per_op_node_data(report, path), path))
    if command.fmt == "json":
        common.emit(json.dumps(report.to_json(), indent=2))
    elif common.verbosity == common.QUIET:
        common.out.print(report.verdict, markup=False)
    elif report.dataset is not None:
        print_dataset_report(report, print_report)
    else:
        print_report(report)
    if save_repro is not None:
        common.info(f"wrote the repro of op #{report.repro['op_index']} {report.repro['op']} to {save_repro}; "
                    f"reproduce with: {report.repro['command']}" if report.repro else
                    "no divergent op: no repro written")
    if not report.passed:
        return EXIT_FAILURE
    if report.unreadable_line:  # the readable samples pass: the unreadable ones are bad input (exit 2)
        common.err.print(f"nnconv: error: {report.unreadable_line}", markup=False)
        return EXIT_BAD_INPUT
    return 0


def _print_details(report: VerifyReport) -> None:
    """-v: each model input with its quantization and where its values came from, and the run's phases
    (common.timed: printed with the other timings after the output)."""
    source = report.meta.get("inputs") or {}
    came_from = (f"from {source['file']}" if "file" in source else f"image {source['image']}" if "image" in source
                 else f"dataset {source['dataset']}" if "dataset" in source else
                 f"seeded random values (seed {source.get('seed', 0)})")
    for spec in report.meta.get("model_inputs") or []:
        quant = "" if spec["scale"] is None else f", scale {spec['scale']:.6g}, zero point {spec['zero_point']}"
        common.detail(f"input '{spec['name']}': {spec['dtype']} {format_shape(tuple(spec['shape']))}{quant}; "
                      f"{came_from}")
    for phase, seconds in report.timings:
        common.record_timing(phase, seconds)


def _verify_several(command: VerifyCommand) -> int:
    """One row per model, named as `named_models` names it (relative to the folder given), never truncated;
    -q prints one line per model."""
    from nnconv.parity.batch import ERROR, batch_json, exit_code, summary, verify_one
    from nnconv.report.render import progress
    paths, names = [path for path, _ in command.models], [name for _, name in command.models]
    options, batch = command.options, command.batch
    results = progress(paths, common.err, functools.partial(verify_one, options=options), command.jobs,
                       verb="verifying", scheduler=batch.scheduler)
    for r, name in zip(results, names):
        r.name = name
    batch.write_junit("nnconv.verify", verify_cases(results, options.api_level, dict(zip(paths, names))))
    if command.fmt == "json":
        common.emit(json.dumps(batch_json(results), indent=2))
        return exit_code(results)
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
        return exit_code(results)
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
    return exit_code(results)


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

