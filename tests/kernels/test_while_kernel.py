"""WHILE kernel: a loop that never ends fails cleanly with ExecutionError once the loop timeout expires, measured
on an injected clock (tests never race the wall clock) or bounded by the iteration limit."""

from __future__ import annotations

import gzip
import json
import pytest

from nnconv.conformance import _inputs, build_model, cts_dir, run_case
from nnconv.errors import ExecutionError
from nnconv.runtime.executor import SubgraphRunner
from nnconv.runtime.kernels.registry import ExecutionOptions
from harness import StepClock


def _infinite_loop_case() -> dict:
    path = cts_dir() / "V1_3" / "while_infinite_loop.json.gz"
    if not path.exists():
        pytest.fail(f"CTS file {path} not found (set NNCONV_CTS_DIR)")
    with gzip.open(path, "rt") as fh:
        return next(c for c in json.load(fh) if c["name"] == "while_infinite_loop")


def test_infinite_loop_times_out_after_the_execution_loop_timeout():
    # 0.2 s on a clock that advances 1 ms per reading: the loop stops after about 200 iterations, on any
    # machine, however loaded.
    case = _infinite_loop_case()
    model = build_model(case)
    clock = StepClock(step=0.001)
    options = ExecutionOptions(loop_timeout_seconds=0.2, clock=clock)
    with pytest.raises(ExecutionError, match="did not terminate within 0.2 s"):
        SubgraphRunner(model, options=options).run_subgraph(0, _inputs(case, model))
    assert 199 <= clock.readings <= 202


def test_the_iteration_bound_stops_a_loop_whatever_the_clock():
    case = _infinite_loop_case()
    model = build_model(case)
    clock = StepClock(step=0.0)  # time never passes: only the iteration bound can stop the loop
    with pytest.raises(ExecutionError, match="did not terminate"):
        SubgraphRunner(model, options=ExecutionOptions(max_loop_iterations=50, clock=clock)).run_subgraph(
            0, _inputs(case, model))
    assert clock.readings == 51  # the deadline, then once per iteration


def test_infinite_loop_case_counts_as_expected_failure():
    clock = StepClock()
    result = run_case(_infinite_loop_case(), clock=clock)
    assert result.status == "passed" and result.message == "failed as expected"
    assert 1000 <= clock.readings <= 1002  # CTS's 1 ms loop timeout, 1 us per iteration
