"""The sample-axis rules (nnconv/runtime/sample_axis.py) on hand-built NNAPI graphs: each operation either keeps
samples apart along axis 0 (batched, constants adapted) or names why not (looped); either way `run_batch` is
bit for bit N single runs."""

from __future__ import annotations

from typing import Callable

import numpy as np
import pytest

from nnconv.nnapi.builder import ModelBuilder, SubgraphBuilder
from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.nnapi.model import Model
from nnconv.runtime.executor import Executor
from nnconv.runtime.sample_axis import batch_model

F32, I32 = OperandType.TENSOR_FLOAT32, OperandType.TENSOR_INT32
T = OperationType
N = 3


def _ints(g: SubgraphBuilder, *values: int) -> int:
    return g.add_constant(I32, np.array(values, np.int32))


def _one_op(x_shape: tuple[int, ...], out_shape: tuple[int, ...], op: OperationType,
            params: Callable[[SubgraphBuilder], list[int]], x_type: OperandType = F32) -> Model:
    """x -> op(x, *params) -> y, then y + 0 so that the operation under test is not the model's output."""
    mb = ModelBuilder()
    g = mb.main
    x = g.add_tensor(x_type, x_shape, name="x")
    y = g.add_tensor(F32, out_shape, name="y")
    g.add_operation(op, [x, *params(g)], [y])
    z = g.add_tensor(F32, out_shape, name="z")
    g.add_operation(T.ADD, [y, g.add_constant(F32, np.zeros(out_shape[-1:], np.float32)), g.add_scalar(0)], [z])
    g.set_io([x], [z])
    return mb.finish()


def _gather_lookup() -> Model:
    """An embedding lookup: constant table [10, 3], the model's input the indices [1, 2] (axis 0)."""
    mb = ModelBuilder()
    g = mb.main
    idx = g.add_tensor(I32, (1, 2), name="idx")
    table = g.add_constant(F32, np.arange(30, dtype=np.float32).reshape(10, 3))
    y = g.add_tensor(F32, (1, 2, 3), name="y")
    g.add_operation(T.GATHER, [table, g.add_scalar(0), idx], [y])
    g.set_io([idx], [y])
    return mb.finish()


def _shared_target() -> Model:
    """Two RESHAPEs share the constant target [1, 24]: one of the sampled x, one of a value computed from
    constants only (x's leading 1 would become N for the first, not for the second)."""
    mb = ModelBuilder()
    g = mb.main
    x = g.add_tensor(F32, (1, 4, 6), name="x")
    target = _ints(g, 1, 24)
    rx = g.add_tensor(F32, (1, 24))
    g.add_operation(T.RESHAPE, [x, target], [rx])
    c = g.add_tensor(F32, (1, 4, 6))
    g.add_operation(T.ABS, [g.add_constant(F32, np.full((1, 4, 6), -2, np.float32))], [c])
    rc = g.add_tensor(F32, (1, 24))
    g.add_operation(T.RESHAPE, [c, target], [rc])
    y = g.add_tensor(F32, (1, 24), name="y")
    g.add_operation(T.ADD, [rx, rc, g.add_scalar(0)], [y])
    g.set_io([x], [y])
    return mb.finish()


def _concat(shared_is_constant: bool) -> Model:
    mb = ModelBuilder()
    g = mb.main
    x = g.add_tensor(F32, (1, 4, 6), name="x")
    k = g.add_constant(F32, np.full((1, 4, 2), 3, np.float32))
    if not shared_is_constant:
        computed = g.add_tensor(F32, (1, 4, 2))
        g.add_operation(T.ABS, [g.add_constant(F32, -np.ones((1, 4, 2), np.float32))], [computed])
        k = computed
    y = g.add_tensor(F32, (1, 4, 8), name="y")
    g.add_operation(T.CONCATENATION, [x, k, g.add_scalar(2)], [y])
    g.set_io([x], [y])
    return mb.finish()


CASES = {
    # batched: the rule's parameters leave axis 0 alone (constants adapted where they encode the batch)
    "transpose inner axes": (lambda: _one_op((1, 4, 6), (1, 6, 4), T.TRANSPOSE, lambda g: [_ints(g, 0, 2, 1)]), None),
    "squeeze axis 1": (lambda: _one_op((1, 1, 6), (1, 6), T.SQUEEZE, lambda g: [_ints(g, 1)]), None),
    "reshape -1 leading": (lambda: _one_op((1, 4, 6), (1, 24), T.RESHAPE, lambda g: [_ints(g, -1, 24)]), None),
    "reshape 1 leading": (lambda: _one_op((1, 4, 6), (1, 6, 4), T.RESHAPE, lambda g: [_ints(g, 1, 6, 4)]), None),
    "slice size 1": (lambda: _one_op((1, 4, 6), (1, 2, 6), T.SLICE,
                                     lambda g: [_ints(g, 0, 1, 0), _ints(g, 1, 2, 6)]), None),
    "strided slice": (lambda: _one_op((1, 4, 6), (1, 2, 6), T.STRIDED_SLICE, lambda g: [
        _ints(g, 0, 1, 0), _ints(g, 1, 3, 6), _ints(g, 1, 1, 1), g.add_scalar(0), g.add_scalar(0), g.add_scalar(0)]),
        None),
    "mean axis 1": (lambda: _one_op((1, 4, 6), (1, 6), T.MEAN, lambda g: [_ints(g, 1), g.add_scalar(0)]), None),
    "softmax last axis": (lambda: _one_op((1, 6), (1, 6), T.SOFTMAX, lambda g: [g.add_scalar(1.0), g.add_scalar(-1)]),
                          None),
    "concatenation with a constant": (lambda: _concat(True), None),
    "gather lookup": (_gather_lookup, None),
    # looped, with the reason
    "transpose moving axis 0": (lambda: _one_op((1, 1, 6), (1, 1, 6), T.TRANSPOSE, lambda g: [_ints(g, 1, 0, 2)]),
                                "TRANSPOSE: its permutation moves axis 0"),
    "squeeze axis 0": (lambda: _one_op((1, 1, 6), (1, 6), T.SQUEEZE, lambda g: [_ints(g, 0)]),
                       "SQUEEZE: it squeezes axis 0"),
    "strided slice shrinking axis 0": (lambda: _one_op((1, 1, 6), (1, 6), T.STRIDED_SLICE, lambda g: [
        _ints(g, 0, 0, 0), _ints(g, 1, 1, 6), _ints(g, 1, 1, 1), g.add_scalar(0), g.add_scalar(0), g.add_scalar(1)]),
        "STRIDED_SLICE: it slices along axis 0"),
    "mean over axis 0": (lambda: _one_op((1, 4, 6), (1, 1, 6), T.MEAN, lambda g: [_ints(g, 0, 1), g.add_scalar(1)]),
                         "MEAN: it reduces over axis 0"),
    "softmax over axis 0": (lambda: _one_op((1, 6), (1, 6), T.SOFTMAX, lambda g: [g.add_scalar(1.0), g.add_scalar(0)]),
                            "SOFTMAX: it works along axis 0"),
    "fully connected over rows": (lambda: _one_op((1, 4, 6), (4, 5), T.FULLY_CONNECTED, lambda g: [
        g.add_constant(F32, np.ones((5, 6), np.float32)), g.add_constant(F32, np.zeros(5, np.float32)),
        g.add_scalar(0)]), "FULLY_CONNECTED: output y has leading extent [4]"),
    "shared reshape target": (_shared_target, "reads constant"),
    "concatenation with a computed value": (lambda: _concat(False),
                                            "CONCATENATION: it concatenates samples with a value computed once"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rule(name):
    build, fragment = CASES[name]
    model = build()
    ex = Executor(model, blas_threads=None)
    rng = np.random.default_rng(11)
    spec = ex.input_specs[0]
    shape = (N, *spec.shape)
    x = (rng.integers(0, 10, shape).astype(np.int32) if spec.np_dtype == np.int32
         else rng.standard_normal(shape).astype(np.float32))
    want = [ex.run([x[k]]) for k in range(N)]
    got = ex.run_batch([x])
    for key in want[0]:
        assert np.array_equal(got[key], np.stack([w[key] for w in want])), key
    plan = ex.batch_plan(N)
    if fragment is None:
        assert plan.batched, plan.reason
    else:
        assert not plan.batched and fragment in plan.reason, plan.reason


def test_the_original_model_is_left_alone():
    model = _one_op((1, 4, 6), (1, 6, 4), T.RESHAPE, lambda g: [_ints(g, 1, 6, 4)])
    before = bytes(model.operand_values)
    found = batch_model(model, 5)
    assert not isinstance(found, str)
    assert bytes(model.operand_values) == before and model.main.operands[0].dimensions == (1, 4, 6)
    assert found.model.main.operands[0].dimensions == (5, 4, 6)
    target = found.model.main.operations[0].inputs[1]
    assert found.model.constant_value(found.model.main.operands[target]).tolist() == [5, 6, 4]


def test_random_draws_and_control_flow_loop():
    mb = ModelBuilder()
    g = mb.main
    x = g.add_tensor(F32, (1, 4), name="x")
    y = g.add_tensor(I32, (1, 8), name="y")
    g.add_operation(T.RANDOM_MULTINOMIAL, [x, g.add_scalar(8), _ints(g, 3, 4)], [y])
    g.set_io([x], [y])
    assert "RANDOM_MULTINOMIAL: it draws random numbers" in batch_model(mb.finish(), 4)
    mb = ModelBuilder()
    mb.add_referenced()
    assert batch_model(mb.finish(), 4) == "the model has control flow (IF / WHILE subgraphs)"
