"""`nnconv verify`: convert models, run them on our executor and on TFLite (or against saved outputs), and
compare every output; optionally every intermediate (`--per-op`) and a simulated fp16 driver
(`--relax-fp16`). The work is in nnconv/parity/ (session.py for one model, batch.py for several); what it
prints, per --format, in verify_render.py."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import click

from nnconv.cli import common
from nnconv.cli.common import (level_options, target_option, fold_weights_option, input_shape_option, handle_errors,
                               max_memory_option, parsed, threads_option, verbosity_options)
from nnconv.cli.image_options import image_options
from nnconv.cli.npz_io import save_npz
from nnconv.cli.scale import scale_options
from nnconv.cli.verify_options import VerifyCommand
from nnconv.cli.verify_render import VERIFY_FORMATS
from nnconv.errors import EXIT_BAD_INPUT, EXIT_FAILURE, failure_line
from nnconv.fmt import format_shape
from nnconv.report.junit import verify_cases

if TYPE_CHECKING:  # the parity stage is imported lazily, when verify runs
    from nnconv.parity.session import VerifyReport


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
@level_options
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
@click.option("--format", "fmt", type=click.Choice(list(VERIFY_FORMATS)), default="table", show_default=True)
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
    from nnconv.cli.verify_dataset import sample_progress
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
    VERIFY_FORMATS[command.fmt].one(report)
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
    from nnconv.parity.batch import exit_code, verify_one
    from nnconv.report.render import progress
    paths, names = [path for path, _ in command.models], [name for _, name in command.models]
    options, batch = command.options, command.batch
    results = progress(paths, common.err, functools.partial(verify_one, options=options), command.jobs,
                       verb="verifying", scheduler=batch.scheduler)
    for r, name in zip(results, names):
        r.name = name
    batch.write_junit("nnconv.verify", verify_cases(results, options.api_level, dict(zip(paths, names))))
    VERIFY_FORMATS[command.fmt].several(results, names, options)
    return exit_code(results)
