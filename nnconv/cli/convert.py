"""`nnconv convert`: a .tflite model into an .nnapi file (whole, or its partitions with --allow-partial),
and optionally the NDK C source that builds it (a `.c` and its `.h`), checked by compiling and running it
against nnconv's host recorder with --check-c."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Mapping

import click

from nnconv.cli import common
from nnconv.cli.common import (
    conversion_options,
    fold_weights_option,
    input_shape_option,
    handle_errors,
    level_options,
    parsed,
    relax_option,
    target_level,
    target_option,
    verbosity_options,
    warn_inapplicable,
)
from nnconv.errors import ConversionError, NnconvError
from nnconv.lowering.convert import ConversionOptions
from nnconv.nnapi.levels import ApiLevel
from nnconv.fmt import plural
from nnconv.report.render import ops_range

EPILOG = """\b
Examples:
  nnconv convert model.tflite -o model.nnapi --api-level 29
  nnconv convert model.tflite -o model.nnapi --allow-partial --emit-c model.c --check-c"""


@dataclass(frozen=True)
class ConvertCommand:
    """What one `nnconv convert` writes, parsed and checked before anything is converted (`from_params`)."""

    model: str
    output: str
    level: ApiLevel
    conversion: ConversionOptions
    allow_partial: bool = False
    emit_c: str | None = None  # the C source to write beside the .nnapi file
    c_prefix: str = ""  # the C symbols' prefix, checked
    check_c: bool = False

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> "ConvertCommand":
        """The command's click parameters, checked in the order their errors are reported: the C options,
        the output paths and the compiler (so a bad one leaves no output behind), then the level and the
        conversion options."""
        from nnconv.nnapi.emit_c import c_prefix_for, check_c_prefix, header_path_for
        from nnconv.safe_write import output_target
        output, emit_c, c_prefix = params["output"], params["emit_c_path"], params["c_prefix"]
        if (params["check_c"] or c_prefix is not None) and not emit_c:
            raise NnconvError("--check-c and --c-prefix apply to the C source: add --emit-c OUT.c")
        prefix = check_c_prefix(c_prefix if c_prefix is not None else c_prefix_for(params["model"]))
        for path in (output, emit_c, emit_c and header_path_for(emit_c)):
            if path:
                output_target(path)  # a directory or device is refused before the conversion, not after it
        if params["check_c"]:
            from nnconv.nnapi.ndk.check import find_compiler
            find_compiler()  # no compiler: say so before converting anything
        level = target_level(params["api_level"], params["feature_level"])
        warn_inapplicable(level, relax_fp16=params["relax_fp16"])
        conversion = conversion_options(params["fold_weights"], params["relax_fp16"], params["input_shapes"],
                                        params["target"])
        return cls(params["model"], output, level, conversion, params["allow_partial"], emit_c, prefix,
                   params["check_c"])


@click.command(short_help="Convert a .tflite model into an NNAPI model file (.nnapi).", epilog=EPILOG)
@click.argument("model", type=click.Path())
@click.option("-o", "--output", type=click.Path(), required=True, help="The .nnapi file to write.")
@level_options
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
@parsed(ConvertCommand.from_params)
def convert(command: ConvertCommand) -> None:
    """Convert MODEL (.tflite) into an NNAPI model file (.nnapi)."""
    from nnconv.nnapi import serialize
    from nnconv.pipeline import prepare
    output, level, allow_partial = command.output, command.level, command.allow_partial
    prepared = prepare(command.model, level, command.conversion)
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
    if command.emit_c:
        from nnconv.nnapi.emit_c import write_c
        # From the file just written, so the C code's pool offsets are those of the file on disk.
        loaded = serialize.load(output)
        with common.timed("emit C"):
            header = write_c(command.emit_c, loaded, output, command.c_prefix)
        common.info(f"wrote {command.emit_c} and {header}: NDK C source ({command.c_prefix}_p<k>_create) reading "
                    f"its weights from {output}")
        if command.check_c:
            _check_c(command, header, loaded)


def _check_c(command: ConvertCommand, header: str, loaded) -> None:
    """--check-c: the C must build exactly the models of the file just written."""
    import pathlib

    from nnconv.nnapi.ndk.check import CheckError, GeneratedC, check_generated_c
    c_path, output = command.emit_c, command.output
    generated = GeneratedC(pathlib.Path(c_path), pathlib.Path(header), command.c_prefix, pathlib.Path(output),
                           loaded)
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
