"""`nnconv convert`: a .tflite model into an .nnapi file (whole, or its partitions with --allow-partial),
and optionally the NDK C source that builds it (a `.c` and its `.h`), checked by compiling and running it
against nnconv's host recorder with --check-c."""

from __future__ import annotations

from collections import Counter

import click

from nnconv.cli import common
from nnconv.cli.common import (
    api_level_option,
    conversion_options,
    feature_level_option,
    fold_weights_option,
    input_shape_option,
    handle_errors,
    relax_option,
    resolve_api_level,
    target_option,
    verbosity_options,
    warn_deprecated,
    warn_inapplicable,
)
from nnconv.errors import ConversionError, NnconvError
from nnconv.fmt import plural
from nnconv.report.render import ops_range

EPILOG = """\b
Examples:
  nnconv convert model.tflite -o model.nnapi --api-level 29
  nnconv convert model.tflite -o model.nnapi --allow-partial --emit-c model.c --check-c"""


@click.command(short_help="Convert a .tflite model into an NNAPI model file (.nnapi).", epilog=EPILOG)
@click.argument("model", type=click.Path())
@click.option("-o", "--output", type=click.Path(), required=True, help="The .nnapi file to write.")
@api_level_option
@feature_level_option
@click.option("--allow-partial", is_flag=True, help="Write the supported partitions and the partition plan "
                                                     "instead of failing on refused ops.")
@target_option
@fold_weights_option
@input_shape_option
@relax_option
@click.option("--emit-c", "emit_c_path", type=click.Path(), default=None,
              help="Also write C source that builds the model with the NDK, reading the weights from the "
                   ".nnapi file (docs/nnapi-format.md), and its header beside it (OUT.h).")
@click.option("--c-prefix", default=None,
              help="Prefix of every symbol of the C source (default: the model's file name as a C identifier).")
@click.option("--check-c", is_flag=True,
              help="Compile the C source with the system compiler (cc -std=c99 -pedantic -Wall -Wextra -Werror) "
                   "against nnconv's NDK header and host recorder, run it, and compare what it builds with the "
                   ".nnapi file: exit 1 with the first difference.")
@verbosity_options
@handle_errors
def convert(model: str, output: str, api_level: int | None, feature_level: int | None, allow_partial: bool,
            target: str, fold_weights: bool, input_shapes: tuple[str, ...], relax_fp16: bool, emit_c_path: str | None,
            c_prefix: str | None, check_c: bool) -> None:
    """Convert MODEL (.tflite) into an NNAPI model file (.nnapi)."""
    from nnconv.nnapi import serialize
    from nnconv.nnapi.emit_c import c_prefix_for, check_c_prefix, header_path_for
    from nnconv.safe_write import output_target
    if (check_c or c_prefix is not None) and not emit_c_path:
        raise NnconvError("--check-c and --c-prefix apply to the C source: add --emit-c OUT.c")
    # Checked before converting, so a bad prefix or output path leaves no output behind.
    prefix = check_c_prefix(c_prefix if c_prefix is not None else c_prefix_for(model))
    for path in (output, emit_c_path, emit_c_path and header_path_for(emit_c_path)):
        if path:
            output_target(path)  # a directory or device is refused before the conversion, not after it
    if check_c:
        from nnconv.nnapi.ndk.check import find_compiler
        find_compiler()  # no compiler: say so before converting anything
    from nnconv.pipeline import prepare
    level = resolve_api_level(api_level, feature_level)
    warn_deprecated(level)
    warn_inapplicable(level, relax_fp16=relax_fp16)
    prepared = prepare(model, level, conversion_options(fold_weights, relax_fp16, input_shapes, target))
    try:
        with common.timed("convert"):
            lowered = prepared.lowered(allow_partial)
    except ConversionError as e:
        if allow_partial:
            raise
        # Say what the user can do next; the diagnostics above the line say why.
        raise ConversionError(f"{e}; --allow-partial writes the parts that lower, `nnconv check` "
                              "explains each op", e.diagnostics) from None
    if lowered.plan is not None:
        plan = lowered.plan
        with common.timed("write"):
            serialize.save(output, plan.converted, plan=plan.to_json())
        common.info(f"wrote {output}: {plan.summary_line()} at API {level}")
        for converted in plan.converted:
            common.detail(f"  partition: TFLite ops {ops_range(converted.tflite_ops)} -> "
                          f"{_nnapi_histogram(converted)}")
    else:
        converted, report = lowered.whole
        # the provenance a partial file records (source model, level, ops), marked whole: `inspect` names the
        # source and `verify OUT.nnapi` finds it, as for a partial file
        provenance = {**prepared.plan(lower=False).to_json(), "whole": True}
        with common.timed("write"):
            serialize.save(output, [converted], plan=provenance)
        n_ops = len(converted.model.main.operations)
        common.info(f"wrote {output}: {len(report.ops)} TFLite ops -> {n_ops} NNAPI operations at API {level}")
        common.detail(f"  NNAPI operations: {_nnapi_histogram(converted)}")
    if emit_c_path:
        from nnconv.nnapi.emit_c import write_c
        # From the file just written, so the C code's pool offsets are those of the file on disk.
        loaded = serialize.load(output)
        with common.timed("emit C"):
            header = write_c(emit_c_path, loaded, output, prefix)
        common.info(f"wrote {emit_c_path} and {header}: NDK C source ({prefix}_p<k>_create) reading its "
                    f"weights from {output}")
        if check_c:
            _check_c(emit_c_path, header, prefix, output, loaded)


def _check_c(c_path: str, header: str, prefix: str, output: str, loaded) -> None:
    """--check-c: the C must build exactly the models of the file just written."""
    import pathlib

    from nnconv.nnapi.ndk.check import CheckError, GeneratedC, check_generated_c
    generated = GeneratedC(pathlib.Path(c_path), pathlib.Path(header), prefix, pathlib.Path(output), loaded)
    difference = check_generated_c([generated])
    if difference:
        raise CheckError(f"--check-c: {c_path} does not build {output}: {difference}")
    n_operands = sum(len(sg.operands) for p in loaded.partitions for sg in p.model.subgraphs())
    n_operations = sum(len(sg.operations) for p in loaded.partitions for sg in p.model.subgraphs())
    common.info(f"--check-c: {c_path} compiled and ran; it builds exactly the models of {output} "
                f"({plural(len(loaded.partitions), 'partition')}: {n_operands} operands, values byte for byte, "
                f"{n_operations} operations)")


def _nnapi_histogram(converted) -> str:
    """'CONV_2D x52, ADD x10, MEAN' (most frequent first)."""
    counts = Counter(op.type.name for op in converted.model.main.operations)
    return ", ".join(name if n == 1 else f"{name} x{n}" for name, n in counts.most_common())
