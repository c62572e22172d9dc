"""The executor computes an operation whose inputs are all constants once, when it plans the subgraph
(`SubgraphRunner._fold`), and serves its outputs to every run as constants: same outputs, one kernel call.
Not folded: RANDOM_MULTINOMIAL, outputs of the subgraph, a kernel that fails (the run reports it in its
place); an IF branch never taken is never computed. The per-op trace still sees a folded operation."""

from __future__ import annotations

import numpy as np
import pytest

from nnconv.errors import ExecutionError
from nnconv.nnapi.builder import ModelBuilder
from nnconv.nnapi.enums import FuseCode, OperandType, OperationType
from nnconv.runtime.executor import Executor
from nnconv.runtime.trace import Trace
from nnconv.runtime.kernels import KERNELS

F16, F32, I32 = OperandType.TENSOR_FLOAT16, OperandType.TENSOR_FLOAT32, OperandType.TENSOR_INT32
# large enough that the outputs come from the buffer pool (reusing a folded value's memory would show)
SHAPE = (256, 160)
RNG = np.random.default_rng(5)
W16 = RNG.standard_normal(SHAPE).astype(np.float16)
SCALE = RNG.standard_normal(SHAPE).astype(np.float32)


def counting(op_type: OperationType, calls: list[OperationType]):
    real = KERNELS[op_type]

    def kernel(call):  # the real kernel, counting its calls
        calls.append(op_type)
        return real(call)
    return kernel


def cast_mul_add_model(cast_is_output: bool = False):
    """y = x + CAST(w16) * scale: CAST and MUL read only constants (MUL reads the CAST's output), ADD reads
    the input; optionally the CAST's output is also a model output."""
    mb = ModelBuilder()
    g = mb.main
    x = g.add_tensor(F32, SHAPE, name="x")
    w = g.add_tensor(F32, SHAPE, name="w")
    g.add_operation(OperationType.CAST, [g.add_constant(F16, W16, name="w16")], [w])
    scaled = g.add_tensor(F32, SHAPE, name="scaled")
    g.add_operation(OperationType.MUL, [w, g.add_constant(F32, SCALE, name="scale"), g.add_scalar(int(FuseCode.NONE))],
                    [scaled])
    y = g.add_tensor(F32, SHAPE, name="y")
    g.add_operation(OperationType.ADD, [x, scaled, g.add_scalar(int(FuseCode.NONE))], [y])
    g.set_io([x], [y, w] if cast_is_output else [y])
    return mb.finish()


def expected(x: np.ndarray) -> np.ndarray:
    return x + W16.astype(np.float32) * SCALE


def test_constant_only_operations_run_once_with_the_same_outputs():
    calls: list[OperationType] = []
    overrides = {t: counting(t, calls) for t in (OperationType.CAST, OperationType.MUL, OperationType.ADD)}
    ex = Executor(cast_mul_add_model(), kernel_overrides=overrides)
    for seed in range(4):
        x = np.random.default_rng(seed).standard_normal(SHAPE).astype(np.float32)
        np.testing.assert_array_equal(ex.run([x])["out_0"], expected(x))
    assert calls.count(OperationType.CAST) == 1 and calls.count(OperationType.MUL) == 1
    assert calls.count(OperationType.ADD) == 4


def test_a_folded_value_is_a_constant_to_its_reader():
    # its reader's memo (a converted filter, ...) then keeps what it derives from the value
    seen: list[bool] = []
    real = KERNELS[OperationType.ADD]

    def add(call):
        seen.append(call.is_constant(1))
        return real(call)
    ex = Executor(cast_mul_add_model(), kernel_overrides={OperationType.ADD: add})
    ex.run([np.zeros(SHAPE, np.float32)])
    assert seen == [True]


def test_the_trace_sees_folded_operations_on_every_run():
    calls: list[OperationType] = []
    trace = Trace(keep=True)
    ex = Executor(cast_mul_add_model(), trace=trace, kernel_overrides={OperationType.CAST: counting(OperationType.CAST,
                                                                                                   calls)})
    main = ex.converted.model.main
    w = next(i for i, od in enumerate(main.operands) if od.name == "w")
    for seed in range(2):
        trace.values.clear()
        x = np.random.default_rng(seed).standard_normal(SHAPE).astype(np.float32)
        np.testing.assert_array_equal(ex.run([x])["out_0"], expected(x))
        np.testing.assert_array_equal(trace.values[w], W16.astype(np.float32))
    assert calls == [OperationType.CAST]


def test_an_output_of_the_model_is_computed_on_every_run():
    # the caller owns each run's arrays: a shared folded array would let one run's caller change the next's
    calls: list[OperationType] = []
    ex = Executor(cast_mul_add_model(cast_is_output=True),
                  kernel_overrides={OperationType.CAST: counting(OperationType.CAST, calls)})
    x = np.zeros(SHAPE, np.float32)
    first = ex.run([x])["out_1"]
    first[...] = 7.0
    np.testing.assert_array_equal(ex.run([x])["out_1"], W16.astype(np.float32))
    assert len(calls) == 2


def test_random_multinomial_is_never_folded():
    mb = ModelBuilder()
    g = mb.main
    logits = g.add_constant(F32, np.zeros((1, 4), np.float32))
    samples = g.add_tensor(I32, (1, 64))
    g.add_operation(OperationType.RANDOM_MULTINOMIAL,
                    [logits, g.add_scalar(64), g.add_constant(I32, np.array([3, 4], np.int32))], [samples])
    x = g.add_tensor(I32, (1, 64))
    y = g.add_tensor(I32, (1, 64))
    g.add_operation(OperationType.ADD, [x, samples, g.add_scalar(int(FuseCode.NONE))], [y])
    g.set_io([x], [y])
    calls: list[OperationType] = []
    ex = Executor(mb.finish(), kernel_overrides={OperationType.RANDOM_MULTINOMIAL:
                                                 counting(OperationType.RANDOM_MULTINOMIAL, calls)})
    for _ in range(3):
        ex.run([np.zeros((1, 64), np.int32)])
    assert len(calls) == 3


def failing(call):  # a test-only kernel that always fails
    raise call.fail("test failure")


def test_a_failing_constant_operation_fails_the_run_in_its_place():
    ex = Executor(cast_mul_add_model(), kernel_overrides={OperationType.MUL: failing})
    for _ in range(2):
        with pytest.raises(ExecutionError, match="MUL: test failure"):
            ex.run([np.zeros(SHAPE, np.float32)])


def test_a_branch_never_taken_is_never_computed():
    # IF(cond, then, else, x): then adds CAST(w16) (constant only, failing here), else doubles x
    mb = ModelBuilder()
    then_idx, then_sg = mb.add_referenced()
    a = then_sg.add_tensor(F32, SHAPE)
    w = then_sg.add_tensor(F32, SHAPE)
    then_sg.add_operation(OperationType.CAST, [then_sg.add_constant(F16, W16)], [w])
    b = then_sg.add_tensor(F32, SHAPE)
    then_sg.add_operation(OperationType.ADD, [a, w, then_sg.add_scalar(int(FuseCode.NONE))], [b])
    then_sg.set_io([a], [b])
    else_idx, else_sg = mb.add_referenced()
    a2, b2 = else_sg.add_tensor(F32, SHAPE), else_sg.add_tensor(F32, SHAPE)
    else_sg.add_operation(OperationType.ADD, [a2, a2, else_sg.add_scalar(int(FuseCode.NONE))], [b2])
    else_sg.set_io([a2], [b2])
    g = mb.main
    cond, x, y = g.add_tensor(OperandType.TENSOR_BOOL8, (1,)), g.add_tensor(F32, SHAPE), g.add_tensor(F32, SHAPE)
    g.add_operation(OperationType.IF, [cond, g.add_subgraph_ref(then_idx), g.add_subgraph_ref(else_idx), x], [y])
    g.set_io([cond, x], [y])
    model = mb.finish()
    x_value = np.ones(SHAPE, np.float32)
    ex = Executor(model, kernel_overrides={OperationType.CAST: failing})
    np.testing.assert_array_equal(ex.run([np.array([False]), x_value])["out_0"], 2 * x_value)
    with pytest.raises(ExecutionError, match="CAST: test failure"):
        ex.run([np.array([True]), x_value])
    # with the real CAST, the branch folds it once however often it runs
    calls: list[OperationType] = []
    ex = Executor(model, kernel_overrides={OperationType.CAST: counting(OperationType.CAST, calls)})
    for _ in range(3):
        np.testing.assert_array_equal(ex.run([np.array([True]), x_value])["out_0"], 1 + W16.astype(np.float32))
    assert len(calls) == 1
