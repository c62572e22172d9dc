"""The `nnconv` command line: convert, run, verify, check, ops, inspect, devices, probe, rewrite (one module per
command).

Data goes to stdout, logs and errors to stderr. Colour is off when stdout is not a terminal or NO_COLOR is
set. Exit codes: 0 ok; 1 parity failure or policy violation; 2 usage error or unreadable/invalid input;
3 model not convertible at the target level; 4 internal error (set NNCONV_DEBUG=1 for the traceback);
130 interrupted. Every error, click's usage errors included, is one `nnconv: error: ...` line.
"""

from __future__ import annotations

import click

from nnconv.cli import common
from nnconv.cli.check import check
from nnconv.cli.convert import convert
from nnconv.cli.devices import devices
from nnconv.cli.inspect import inspect
from nnconv.cli.ops import ops
from nnconv.cli.probe import probe
from nnconv.cli.rewrite import rewrite
from nnconv.cli.run import run
from nnconv.cli.verify import verify


def _version() -> str:
    from nnconv.version import __version__
    return __version__


EPILOG = """\b
Examples:
  nnconv check m.tflite --api-level 29    which ops Android 10 takes, and why
  nnconv convert m.tflite -o m.nnapi      write the NNAPI model
  nnconv verify m.tflite --api-level 29   parity with TFLite, per output
  nnconv run m.nnapi --inputs in.npz -o out.npz --trace
  nnconv ops --api-level 27 --format csv  what lowers on Android 8.1
  nnconv rewrite m.tflite -o r.tflite     for the stock NNAPI delegate

Exit codes: 0 ok, 1 parity or policy failure, 2 bad input or usage, 3 not convertible at the level,
4 internal error. `nnconv COMMAND --help` shows each command's options and an example."""


@click.group(cls=common.Group, epilog=EPILOG,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(version=_version(), prog_name="nnconv")  # works from a source tree, not only installed
def main() -> None:
    """Convert TFLite models to Android NNAPI, check NNAPI compatibility offline, and prove parity."""
    # Consoles are rebuilt per invocation so NO_COLOR and the current streams apply (tests, embedding).
    common.reset_consoles()


for _command in (convert, run, verify, check, ops, inspect, devices, probe, rewrite):
    main.add_command(_command)


if __name__ == "__main__":  # pragma: no cover
    main()
