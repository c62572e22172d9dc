"""`nnconv run`: an .nnapi file on the numpy executor, inputs and outputs as .npz."""

from __future__ import annotations

import sys
from dataclasses import dataclass

import click

from nnconv.cli import common
from nnconv.cli.common import handle_errors, max_memory_option, parsed, resolve_max_memory, verbosity_options
from nnconv.cli.npz_io import load_npz, save_npz
from nnconv.errors import NnconvError
from nnconv.fmt import describe_array, format_shape


EPILOG = """\b
Examples:
  nnconv run model.nnapi --inputs in.npz -o out.npz
  nnconv run model.nnapi --inputs in.npz -o out.npz --trace 2> trace.txt"""


@dataclass(frozen=True)
class RunCommand:
    """What one `nnconv run` was asked, as given: the file is read, and each value checked, as the run goes."""

    nnapi_model: str
    inputs_path: str
    output: str
    trace: bool = False
    partition: int | None = None
    threads: int = 1
    max_memory: str | None = None


@click.command(short_help="Run an NNAPI model file on the numpy executor (.npz in, .npz out).", epilog=EPILOG)
@click.argument("nnapi_model", type=click.Path())
@click.option("--inputs", "inputs_path", type=click.Path(), required=True,
              help=".npz with one array per model input, by input name or arr_0, arr_1, ...")
@click.option("-o", "--output", type=click.Path(), required=True, help=".npz to write the outputs to.")
@click.option("--trace", is_flag=True,
              help="Print each NNAPI operation's outputs to stderr: TFLite tensor name [NNAPI operand], dtype, "
                   "shape and [min, max].")
@click.option("--partition", type=int, default=None,
              help="Run this partition of a file written with --allow-partial (its inputs are the TFLite "
                   "tensors entering it).")
@common.threads_option
@verbosity_options
@max_memory_option
@handle_errors
@parsed(lambda params: RunCommand(**params))
def run(command: RunCommand) -> None:
    """Run an NNAPI model file on the numpy executor."""
    from nnconv.nnapi import serialize
    from nnconv.runtime.blas_threads import use_threads
    from nnconv.safe_write import output_target
    from nnconv.runtime.executor import Executor
    from nnconv.runtime.trace import Trace
    nnapi_model, partition, output = command.nnapi_model, command.partition, command.output
    loaded = serialize.load(nnapi_model)
    n = len(loaded.partitions)
    if partition is None:
        if n != 1:
            raise NnconvError(f"{nnapi_model} holds {n} partitions (written with --allow-partial); pass "
                              f"--partition 0..{n - 1} to run one, or use `nnconv verify` on the .tflite")
        partition = 0
    elif not 0 <= partition < n:
        raise click.BadParameter(f"{nnapi_model} has partitions 0..{n - 1}", param_hint="--partition")
    limit = resolve_max_memory(command.max_memory)
    output_target(output)  # refuse a directory or device before the work, not after it
    ex = Executor(loaded.partitions[partition], trace=Trace(stream=sys.stderr) if command.trace else None,
                  max_memory=limit, name=nnapi_model)
    inputs = load_npz(command.inputs_path, limit)
    with use_threads(command.threads):
        with common.timed("run"):
            outputs = ex.run(inputs)
    save_npz(output, outputs)
    common.info(f"wrote {output}: " + ", ".join(f"{k} {v.dtype} {format_shape(v.shape)}" for k, v in outputs.items()))
    for k, v in outputs.items():
        common.detail(f"  {k}: {describe_array(v)}")
