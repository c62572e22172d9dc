"""`verify --per-op`: the first op whose output leaves tolerance while its inputs are within it is blamed,
confirmed alone on TFLite's inputs; errors it propagates are not blamed on later ops."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from chain_models import add_mul_sub_chain, shifted
from nnconv.cli import main
from nnconv.errors import EXIT_FAILURE, EXIT_OK
from nnconv.nnapi.enums import OperationType
from nnconv.parity.per_op import as_tflite_value
from nnconv.parity.session import VerifyOptions, verify
from nnconv.runtime.kernels import KERNELS


@pytest.fixture
def chain(tmp_path):
    path = tmp_path / "chain.tflite"
    path.write_bytes(add_mul_sub_chain())
    return str(path)


@pytest.mark.parametrize("faulty_op,blamed", [
    pytest.param(OperationType.ADD, 0, id="first-op"),
    pytest.param(OperationType.MUL, 1, id="middle-op"),
    pytest.param(OperationType.SUB, 2, id="last-op"),
])
def test_the_faulty_kernel_is_blamed_and_none_after_it(chain, faulty_op, blamed):
    options = VerifyOptions(per_op=True, executor_options={"kernel_overrides": {faulty_op: shifted(faulty_op, 0.5)}})
    report = verify(chain, options)
    assert not report.passed
    first = report.per_op.first_divergent
    assert (first.op_index, first.status) == (blamed, "divergent")
    assert first.confirmed_alone is not None and not first.confirmed_alone["passed"]
    statuses = {e.op_index: e.status for e in report.per_op.entries}
    assert statuses == {k: ("pass" if k < blamed else "divergent" if k == blamed else "propagated")
                        for k in range(3)}
    data = report.to_json()
    assert data["first_divergent_op"]["op_index"] == blamed
    assert set(data["per_op"][0]) >= {"op_index", "op", "tensor", "dtype", "max_abs", "max_rel", "lsb", "status"}


def test_no_fault_blames_nothing(chain):
    report = verify(chain, VerifyOptions(per_op=True))
    assert report.passed and report.per_op.first_divergent is None
    assert [e.status for e in report.per_op.entries] == ["pass"] * 3
    assert report.to_json()["first_divergent_op"] is None


def test_the_fault_stays_in_the_test(chain):
    """The fault is an option of one executor: a later verify without it passes."""
    verify(chain, VerifyOptions(per_op=True, executor_options={
        "kernel_overrides": {OperationType.MUL: shifted(OperationType.MUL, 1.0)}}))
    assert verify(chain, VerifyOptions(per_op=True)).passed


def test_cli_per_op_json_and_table(chain, monkeypatch):
    monkeypatch.setitem(KERNELS, OperationType.MUL, shifted(OperationType.MUL, 0.25))
    runner = CliRunner()
    result = runner.invoke(main, ["verify", chain, "--per-op", "--format", "json"])
    assert result.exit_code == EXIT_FAILURE, result.output
    data = json.loads(result.stdout)
    assert data["first_divergent_op"]["op"] == "MUL" and data["first_divergent_op"]["tensor"] == "m"
    assert [e["status"] for e in data["per_op"]] == ["pass", "divergent", "propagated"]
    table = runner.invoke(main, ["verify", chain, "--per-op"])
    assert table.exit_code == EXIT_FAILURE
    assert "first divergent op: #1 MUL -> m" in table.stdout


def test_cli_per_op_passes(chain):
    result = CliRunner().invoke(main, ["verify", chain, "--per-op"])
    assert result.exit_code == EXIT_OK, result.output
    assert "first divergent op: none" in result.stdout


@pytest.mark.parametrize("value,expected", [
    pytest.param(np.array([0, 128, 255], np.uint8), np.zeros(3, np.int8), id="int8-as-uint8"),
    pytest.param(np.array([3], np.int32), np.zeros((), np.int64), id="int64-as-int32-rank0"),
])
def test_operand_values_in_tflite_representation(value, expected):
    out = as_tflite_value(value, expected)
    assert out.dtype == expected.dtype and out.shape == expected.shape
    if expected.dtype == np.int8:
        assert out.tolist() == [-128, 0, 127]
