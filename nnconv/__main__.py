"""The command line's entry point: `python -m nnconv ...` and the `nnconv` script (setup.cfg).

It imports nothing heavy before its Ctrl-C handling is in place, so an interrupt at any moment (even while
numpy and the rules are being imported) ends with one line, "nnconv: interrupted", and exit 130 (128 +
SIGINT), never a traceback or click's "Aborted!" (exit 1, which would mean a parity failure). Outputs are
written atomically (nnconv.safe_write), so an interrupted command leaves no partial file.
"""

from __future__ import annotations

import os
import signal
import sys

from nnconv.errors import EXIT_INTERRUPTED


def main(argv: list[str] | None = None) -> None:
    try:
        from nnconv.cli import main as cli
        # The group (nnconv.cli.common.Group) prints every error, click's usage errors and an Abort included,
        # as one line and exits with its code.
        cli.main(args=argv, prog_name="nnconv")
    except KeyboardInterrupt:
        sys.stderr.write("nnconv: interrupted\n")
        _exit_interrupted()
    except SystemExit as e:
        if e.code == EXIT_INTERRUPTED:  # a command's own handler already said "interrupted"
            _exit_interrupted()
        # The command is over and its outputs are written: a Ctrl-C during the interpreter's shutdown, which
        # puts the default SIGINT action back, would otherwise kill the process by the signal (-2) and hide
        # this exit code. An ignored signal stays ignored through the shutdown.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise


def _exit_interrupted() -> None:
    """Ends the process with 130 now. Temporary outputs were removed while the exception unwound
    (nnconv.safe_write); going through the interpreter's shutdown instead would let a late or second Ctrl-C,
    or a native library's thread, end the process by SIGINT (-2) rather than with this code."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(EXIT_INTERRUPTED)


if __name__ == "__main__":  # pragma: no cover - exercised through a subprocess in tests/test_cli.py
    main()
