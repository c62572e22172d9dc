"""`python -m nnconv.cli`: the same command line as `nnconv` (and the same Ctrl-C handling)."""

from nnconv.__main__ import main

main()
