"""`python -m nnconv.cli`: the same command line as `nnconv`."""

from nnconv.cli import main

main(prog_name="nnconv")
