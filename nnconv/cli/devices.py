"""`nnconv devices`: the device profiles shipped with nnconv, with the source of their data
(`nnconv/devices/`, docs/devices.md)."""

from __future__ import annotations

import click

from nnconv.cli import common
from nnconv.cli.common import handle_errors, verbosity_options

EPILOG = """\b
Examples:
  nnconv devices
  nnconv devices --format json
  nnconv check model.tflite --device armnn-hal1.3 --device reference"""


@click.command(short_help="List the device profiles shipped with nnconv and where their data comes from.",
               epilog=EPILOG)
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@verbosity_options
@handle_errors
def devices(fmt: str) -> None:
    """List the device profiles shipped with nnconv (names `check --device` takes) and their sources."""
    from nnconv.devices.profile import shipped_profiles
    from nnconv.devices.render import render_profiles
    render_profiles(shipped_profiles(), fmt, common.out)
