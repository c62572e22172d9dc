"""WHILE kernel: a loop that never ends fails cleanly with ExecutionError once the loop timeout expires."""

from __future__ import annotations

import gzip
import json
import time

import pytest

from nnconv.conformance import _inputs, build_model, cts_dir, run_case
from nnconv.errors import ExecutionError
from nnconv.runtime.executor import SubgraphRunner
from nnconv.runtime.kernels.registry import ExecutionOptions


def _infinite_loop_case() -> dict:
    path = cts_dir() / "V1_3" / "while_infinite_loop.json.gz"
    if not path.exists():
        pytest.fail(f"CTS file {path} not found (set NNCONV_CTS_DIR)")
    with gzip.open(path, "rt") as fh:
        return next(c for c in json.load(fh) if c["name"] == "while_infinite_loop")


def test_infinite_loop_times_out_after_the_execution_loop_timeout():
    case = _infinite_loop_case()
    model = build_model(case)
    start = time.monotonic()
    with pytest.raises(ExecutionError, match="did not terminate within 0.2 s"):
        SubgraphRunner(model, options=ExecutionOptions(loop_timeout_seconds=0.2)).run_subgraph(0, _inputs(case, model))
    assert time.monotonic() - start < 5


def test_infinite_loop_case_counts_as_expected_failure():
    result = run_case(_infinite_loop_case())
    assert result.status == "passed" and result.message == "failed as expected"
