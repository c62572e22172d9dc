"""`python -m nnconv ...` runs the command line (same as the `nnconv` script)."""

from nnconv.cli import main

if __name__ == "__main__":  # pragma: no cover - exercised through a subprocess in tests/test_cli.py
    main(prog_name="nnconv")
