"""NNAPI conformance vectors (tests/data/nnapi_cts, or $NNCONV_CTS_DIR) through our executor.

One test per case, id '<folder>/<case name>', plus CTS's QuantizationCouplingTest runs derived from the
single-operation quant8 cases, id '<folder>/<case name>/signed_coupling'. CI runs this set with two
workers (about 10,000 tests, ~50 s of CPU). `NNCONV_CTS_FULL=1` adds CTS's DynamicOutputShapeTest runs
(every output declared with unspecified dimensions, id '<folder>/<case name>/dynamic_output_shape',
~8,300 more tests), which CI leaves out for time.
Cases that are known not to pass yet are listed with their reason in conformance_known_failures.txt
and marked xfail(strict=True), so fixing one fails the test until the list is updated.

The unit tests at the end check the machinery itself (omitted inputs, zero-sized outputs, expected
failures, the multinomial statistics, the signed coupling) on tiny hand-made cases.
"""

from __future__ import annotations

import os
import pathlib

import numpy as np
import pytest

from nnconv.conformance import (INFINITE_LOOP_TIMEOUT_SECONDS, SIGNED_COUPLING, cts_dir, dynamic_output_shape_case,
                                execution_options, is_coupling_candidate, is_dynamic_shape_candidate,
                                is_infinite_loop_timeout_case, iter_cases, multinomial_problems, run_case,
                                signed_coupling_case)
from nnconv.nnapi.enums import OperationType
from nnconv.runtime.kernels import KERNELS
from nnconv.runtime.kernels.registry import ExecutionOptions
from harness import StepClock

HERE = pathlib.Path(__file__).resolve().parent
KNOWN = HERE / "conformance_known_failures.txt"


def _known_failures() -> dict[str, str]:
    out: dict[str, str] = {}
    if KNOWN.exists():
        for line in KNOWN.read_text().splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                cid, _, reason = line.partition(" ")
                out[cid] = reason.strip() or "known failure"
    return out


def _params() -> list:
    root = cts_dir()
    if not root.is_dir():
        return [pytest.param(None, id="cts-data-missing")]
    known = _known_failures()
    params = []
    for cid, case in iter_cases(root, dynamic_shapes=os.environ.get("NNCONV_CTS_FULL") == "1"):
        marks = [pytest.mark.xfail(reason=known[cid], strict=True)] if cid in known else []
        params.append(pytest.param(case, id=cid, marks=marks))
    return params


@pytest.mark.parametrize("case", _params())
def test_conformance_case(case):
    if case is None:
        pytest.fail(f"conformance data not found at {cts_dir()} (set NNCONV_CTS_DIR)")
    result = run_case(case, clock=StepClock())  # loops time out by iterations, never by the machine's load
    assert result.status == "passed", f"{result.status}: {result.message}"


# -- the machinery on hand-made cases ----------------------------------------------------------------
def _operand(type_: str, dims: list[int], lifetime: str, value: list | None = None, scale: float = 0.0,
             zero_point: int = 0) -> dict:
    od = {"type": type_, "dimensions": dims, "scale": scale, "zero_point": zero_point, "lifetime": lifetime}
    if value is not None:
        od["value"] = value
    return od


def _case(operands: list[dict], operations: list[dict], inputs: list[int], outputs: list[int],
          in_values: list[list], out_values: list[list], **extra) -> dict:
    case = {"name": "handmade", "spec": "handmade", "min_version": "V1_2",
            "model": {"operands": operands, "operations": operations, "input_indexes": inputs,
                      "output_indexes": outputs, "relax_fp32_to_fp16": False, "referenced": []},
            "inputs": in_values, "outputs": out_values, "ignored_outputs": [], "expect_failure": False}
    case.update(extra)
    return case


@pytest.fixture
def fake_kernel(monkeypatch):
    """Registers a stand-in kernel for one operation type for the duration of a test."""
    def install(op: OperationType, fn) -> None:
        monkeypatch.setitem(KERNELS, op, fn)
    return install


def _multinomial_case(logits: list[list[float]], samples: int, tolerance: float = 0.025) -> dict:
    b, c = len(logits), len(logits[0])
    return _case([_operand("TENSOR_FLOAT32", [b, c], "SUBGRAPH_INPUT"),
                  _operand("INT32", [], "CONSTANT_COPY", [samples]),
                  _operand("TENSOR_INT32", [2], "CONSTANT_COPY", [37, 42]),
                  _operand("TENSOR_INT32", [b, samples], "SUBGRAPH_OUTPUT")],
                 [{"type": "RANDOM_MULTINOMIAL", "inputs": [0, 1, 2], "outputs": [3]}], [0], [3],
                 [[v for row in logits for v in row]], [[0] * (b * samples)], multinomial_tolerance=tolerance)


def _ideal_sampler(call):
    """Draws exactly round(p * n) samples of each class (the remainder to the likeliest class)."""
    logits = call.inputs[0].astype(np.float64)
    n = int(call.inputs[1])
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    rows = []
    for row in p:  # two-row test data: the loop is over batches of a fake
        counts = np.floor(row * n).astype(int)
        counts[np.argmax(row)] += n - counts.sum()
        rows.append(np.repeat(np.arange(row.size), counts))
    return [np.stack(rows).astype(np.int32)]


def test_multinomial_statistics_pass_for_an_exact_sampler(fake_kernel):
    fake_kernel(OperationType.RANDOM_MULTINOMIAL, _ideal_sampler)
    result = run_case(_multinomial_case([[0.0, 1.0, 2.0], [3.0, 0.0, -1.0]], samples=1000))
    assert result.status == "passed", result.message


def test_multinomial_statistics_catch_a_biased_sampler(fake_kernel):
    fake_kernel(OperationType.RANDOM_MULTINOMIAL, lambda call: [np.zeros((2, 1000), dtype=np.int32)])
    result = run_case(_multinomial_case([[0.0, 1.0, 2.0], [3.0, 0.0, -1.0]], samples=1000))
    assert result.status == "failed" and "multinomial" in result.message


def test_multinomial_statistics_are_per_batch():
    # Batch 0 favours class 2, batch 1 class 0; swapping the batches' samples keeps the pooled counts
    # (which the Android harness compares) but must fail per batch.
    logits = np.array([[0.0, 0.0, 5.0], [5.0, 0.0, 0.0]], dtype=np.float32)
    good = np.array([[2] * 99 + [0], [0] * 99 + [1]])
    assert multinomial_problems(logits, good, 0.025) == []
    assert multinomial_problems(logits, good[::-1], 0.025)
    assert multinomial_problems(logits, np.array([[3] * 100, [0] * 100]), 0.025)  # index out of range


def test_omitted_input_reaches_the_kernel_as_none(fake_kernel):
    seen = {}

    def kernel(call):
        seen["inputs"] = call.inputs
        return [call.inputs[0] + 1]

    fake_kernel(OperationType.RELU, kernel)
    # The second input has declared dimensions [3] and an empty list: CTS passes no buffer for it.
    case = _case([_operand("TENSOR_FLOAT32", [2], "SUBGRAPH_INPUT"),
                  _operand("TENSOR_FLOAT32", [3], "SUBGRAPH_INPUT"),
                  _operand("TENSOR_FLOAT32", [0], "SUBGRAPH_INPUT"),
                  _operand("TENSOR_FLOAT32", [2], "SUBGRAPH_OUTPUT")],
                 [{"type": "RELU", "inputs": [0, 1, 2], "outputs": [3]}], [0, 1, 2], [3],
                 [[1.0, 2.0], [], []], [[2.0, 3.0]])
    assert run_case(case).status == "passed"
    assert seen["inputs"][1] is None and seen["inputs"][2] is None


def _zero_sized_case(out_dims: list[int]) -> dict:
    return _case([_operand("TENSOR_FLOAT32", [2], "SUBGRAPH_INPUT"),
                  _operand("TENSOR_FLOAT32", out_dims, "SUBGRAPH_OUTPUT")],
                 [{"type": "RELU", "inputs": [0], "outputs": [1]}], [0], [1], [[1.0, 2.0]], [[]])


def test_zero_sized_output_must_come_out_empty(fake_kernel):
    fake_kernel(OperationType.RELU, lambda call: [np.zeros((0, 4), dtype=np.float32)])
    assert run_case(_zero_sized_case([0, 4])).status == "passed"
    fake_kernel(OperationType.RELU, lambda call: [np.zeros((1, 4), dtype=np.float32)])
    result = run_case(_zero_sized_case([0, 4]))
    assert result.status == "failed" and "shape" in result.message


def test_expect_failure_needs_a_clean_error(fake_kernel):
    case = _zero_sized_case([2])
    case["expect_failure"] = True

    def fails(call):
        raise call.fail("bad input")

    fake_kernel(OperationType.RELU, fails)
    assert run_case(case).status == "passed"
    fake_kernel(OperationType.RELU, lambda call: [call.inputs[0]])
    assert run_case(case).status == "failed"  # it ran
    fake_kernel(OperationType.RELU, lambda call: [call.inputs[0][5]])
    assert "crashed" in run_case(case).message  # an IndexError is not a clean failure


def _quant_add_case(op: str = "ADD") -> dict:
    q = dict(scale=0.5, zero_point=120)
    return _case([_operand("TENSOR_QUANT8_ASYMM", [3], "SUBGRAPH_INPUT", **q),
                  _operand("TENSOR_QUANT8_ASYMM", [3], "CONSTANT_COPY", [130, 140, 0], **q),
                  _operand("INT32", [], "CONSTANT_COPY", [0]),
                  _operand("TENSOR_QUANT8_ASYMM", [3], "SUBGRAPH_OUTPUT", scale=1.0, zero_point=128)],
                 [{"type": op, "inputs": [0, 1, 2], "outputs": [3]}], [0], [3], [[120, 255, 10]],
                 [[133, 166, 58]])


def test_signed_coupling_shifts_zero_points_and_values():
    case = _quant_add_case()
    assert is_coupling_candidate(case)
    signed = signed_coupling_case(case)
    ops = signed["model"]["operands"]
    assert [o["type"] for o in ops] == ["TENSOR_QUANT8_ASYMM_SIGNED"] * 2 + ["INT32", "TENSOR_QUANT8_ASYMM_SIGNED"]
    assert [o["zero_point"] for o in ops] == [-8, -8, 0, 0]
    assert ops[1]["value"] == [2, 12, -128] and ops[2]["value"] == [0]
    assert signed["inputs"] == [[-8, 127, -118]] and signed["outputs"] == [[5, 38, -70]]
    assert signed[SIGNED_COUPLING] and case["model"]["operands"][0]["type"] == "TENSOR_QUANT8_ASYMM"


def test_signed_coupling_filter_follows_cts():
    assert not is_coupling_candidate(_quant_add_case("PAD_V2"))  # excluded operation
    failing = _quant_add_case()
    failing["expect_failure"] = True
    assert not is_coupling_candidate(failing)
    two_ops = _quant_add_case()
    two_ops["model"]["operations"].append({"type": "RELU", "inputs": [3], "outputs": [3]})
    assert not is_coupling_candidate(two_ops)
    float_case = _zero_sized_case([2])
    assert not is_coupling_candidate(float_case)


def test_infinite_loop_cases_run_with_the_cts_loop_timeout():
    loop = _case([_operand("TENSOR_FLOAT32", [1], "SUBGRAPH_INPUT"),
                  _operand("TENSOR_FLOAT32", [1], "SUBGRAPH_OUTPUT")],
                 [{"type": "WHILE", "inputs": [0], "outputs": [1]}], [0], [1], [[0.0]], [[]], expect_failure=True)
    assert is_infinite_loop_timeout_case(loop)
    loop["expect_failure"] = False
    assert not is_infinite_loop_timeout_case(loop)
    assert execution_options(loop).loop_timeout_seconds == ExecutionOptions().loop_timeout_seconds == 2.0
    loop["expect_failure"] = True
    assert execution_options(loop).loop_timeout_seconds == INFINITE_LOOP_TIMEOUT_SECONDS
    clock = StepClock()
    assert execution_options(loop, clock).clock is clock and execution_options(loop).clock is not clock


def test_dynamic_output_shape_twin_checks_the_original_dimensions(fake_kernel):
    case = _zero_sized_case([2, 3])
    assert is_dynamic_shape_candidate(case)
    twin = dynamic_output_shape_case(case)
    assert twin["model"]["operands"][1]["dimensions"] == [0, 0] and twin["expected_output_dims"] == [[2, 3]]
    assert case["model"]["operands"][1]["dimensions"] == [2, 3]
    twin["outputs"] = [[1.0] * 6]
    fake_kernel(OperationType.RELU, lambda call: [np.ones((2, 3), dtype=np.float32)])
    assert run_case(twin).status == "passed"
    fake_kernel(OperationType.RELU, lambda call: [np.ones((3, 2), dtype=np.float32)])
    assert "shape" in run_case(twin).message  # with unspecified dims only the comparison can catch it
    failing = dict(case, expect_failure=True)
    assert not is_dynamic_shape_candidate(failing)
