"""`nnconv convert`: a .tflite model into an .nnapi file (whole, or its partitions with --allow-partial),
and optionally the NDK C source that builds it."""

from __future__ import annotations

import click

from nnconv.cli import common
from nnconv.cli.common import (
    api_level_option,
    conversion_options,
    feature_level_option,
    fold_weights_option,
    handle_errors,
    relax_option,
    resolve_api_level,
    warn_deprecated,
)
from nnconv.errors import ConversionError


@click.command()
@click.argument("model", type=click.Path())
@click.option("-o", "--output", type=click.Path(dir_okay=False), required=True, help="The .nnapi file to write.")
@api_level_option
@feature_level_option
@click.option("--allow-partial", is_flag=True, help="Write the supported partitions and the partition plan "
                                                     "instead of failing on refused ops.")
@fold_weights_option
@relax_option
@click.option("--emit-c", "emit_c_path", type=click.Path(dir_okay=False), default=None,
              help="Also write C source that builds the model with the NDK, reading the weights from the "
                   ".nnapi file (docs/nnapi-format.md).")
@handle_errors
def convert(model: str, output: str, api_level: int | None, feature_level: int | None, allow_partial: bool,
            fold_weights: bool, relax_fp16: bool, emit_c_path: str | None) -> None:
    """Convert MODEL (.tflite) into an NNAPI model file (.nnapi)."""
    from nnconv.lowering.convert import convert as do_convert
    from nnconv.nnapi import serialize
    level = resolve_api_level(api_level, feature_level)
    warn_deprecated(level)
    options = conversion_options(fold_weights, relax_fp16)
    if allow_partial:
        from nnconv.lowering.partition import convert_partial
        plan = convert_partial(model, level, options)
        serialize.save(output, plan.converted, plan=plan.to_json())
        common.err.print(f"wrote {output}: {len(plan.converted)} partition(s), {plan.summary_line()}", markup=False)
    else:
        try:
            converted, report = do_convert(model, level, options)
        except ConversionError as e:
            # Say what the user can do next; the diagnostics above the line say why.
            raise ConversionError(f"{e}; --allow-partial writes the parts that lower, `nnconv check` "
                                  "explains each op", e.diagnostics) from None
        serialize.save(output, [converted])
        n_ops = len(converted.model.main.operations)
        common.err.print(f"wrote {output}: {len(report.ops)} TFLite ops -> {n_ops} NNAPI operations at API {level}",
                  markup=False)
    if emit_c_path:
        from nnconv.nnapi.emit_c import write_c
        # From the file just written, so the C code's pool offsets are those of the file on disk.
        write_c(emit_c_path, serialize.load(output), output)
        common.err.print(f"wrote {emit_c_path}: NDK C source reading its weights from {output}", markup=False)
