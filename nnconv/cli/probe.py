"""`nnconv probe`: writes an NDK program that asks a phone's NNAPI drivers what they take of a model and
writes their answers as device profiles for `check --device` (`nnconv/devices/probe.py`, docs/devices.md)."""

from __future__ import annotations

import click

from nnconv.cli import common
from nnconv.cli.common import (
    conversion_options,
    handle_errors,
    input_shape_option,
    level_options,
    target_level,
    target_option,
    verbosity_options,
)
from nnconv.fmt import plural

EPILOG = """\b
Examples:
  nnconv probe model.tflite -o probe/ --api-level 30
  ANDROID_NDK=~/android-ndk probe/build.sh arm64-v8a && probe/run_on_device.sh
  nnconv check model.tflite --api-level 30 --device probe/phone/"""


@click.command(short_help="Write an NDK program that asks a phone's NNAPI drivers what they take of a model.",
               epilog=EPILOG)
@click.argument("model", type=click.Path())
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(), help="Folder to write the probe into.")
@level_options
@target_option
@input_shape_option
@verbosity_options
@handle_errors
def probe(model: str, out_dir: str, api_level: int | None, feature_level: int | None, target: str,
          input_shapes: tuple[str, ...]) -> None:
    """Convert MODEL and write, into a folder, a C program for the Android NDK that enumerates the phone's
    NNAPI devices, asks each which operations of the model it takes
    (ANeuralNetworksModel_getSupportedOperationsForDevices), tries to compile the model for it, and writes
    one device profile per device (profile-<device>.json) for `nnconv check --device`. Below API 29 it
    records whole-model compilation only. Also writes build.sh (the NDK's clang) and run_on_device.sh (adb:
    push, run, pull; written whether or not adb is on this machine's PATH)."""
    from nnconv.devices.probe import write_probe
    level = target_level(api_level, feature_level)
    with common.timed("probe"):
        written = write_probe(model, out_dir, level, conversion_options(False, False, input_shapes, target))
    n_ops = sum(len(p.model.main.operations) for p in written.nnapi.partitions)
    common.info(f"wrote {', '.join(written.files)} in {out_dir}: {plural(len(written.nnapi.partitions), 'partition')}, "
                f"{n_ops} NNAPI operations to ask about at API {written.api_level}"
                + ("" if written.api_level >= 29 else " (below API 29: whole-model compilation only)"))
