"""The runner's buffer pool: intermediates' memory serves the next run, while arrays the caller holds (the
model's outputs, inputs it passes back) are never written again."""

from __future__ import annotations

import numpy as np
import pytest

from nnconv.nnapi.builder import ModelBuilder
from nnconv.nnapi.enums import OperandType as T
from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.model import Model
from nnconv.runtime.executor import SubgraphRunner
from nnconv.runtime.trace import Trace
from nnconv.runtime import buffers
from nnconv.runtime.arena_plan import ALIGN
from nnconv.runtime.buffers import BufferPool

RNG = np.random.default_rng(11)


@pytest.fixture(autouse=True)
def pool_every_size(monkeypatch):
    """These models' tensors are tiny: pool them all (the pool skips arrays under POOL_MIN_BYTES)."""
    monkeypatch.setattr(buffers, "POOL_MIN_BYTES", 0)


def _two_convs(quant: bool) -> Model:
    """x [1, 6, 5, 3] -> CONV_2D 1x1 -> t [1, 6, 5, 4] -> CONV_2D 3x3 SAME -> y [1, 6, 5, 2], plus t as a
    second output through RESHAPE (a view of t's pooled block)."""
    mb = ModelBuilder()
    g = mb.main
    tt = T.TENSOR_QUANT8_ASYMM_SIGNED if quant else T.TENSOR_FLOAT32
    q = dict(scale=0.05, zero_point=-3) if quant else {}
    bt = T.TENSOR_INT32 if quant else T.TENSOR_FLOAT32

    def conv(x: int, cin: int, cout: int, k: int, out_shape: tuple[int, ...]) -> int:
        wv = RNG.integers(-127, 128, (cout, k, k, cin)) if quant else RNG.standard_normal((cout, k, k, cin))
        w = g.add_constant(tt, wv, **(dict(scale=0.02, zero_point=0) if quant else {}))
        b = g.add_constant(bt, RNG.integers(-300, 300, cout) if quant else RNG.standard_normal(cout),
                           scale=0.05 * 0.02 if quant else 0.0)
        y = g.add_tensor(tt, out_shape, **q)
        g.add_operation(OperationType.CONV_2D, [x, w, b, g.add_scalar(1), g.add_scalar(1), g.add_scalar(1),
                                               g.add_scalar(0)], [y])
        return y

    x = g.add_tensor(tt, (1, 6, 5, 3), **q)
    t = conv(x, 3, 4, 1, (1, 6, 5, 4))
    y = conv(t, 4, 2, 3, (1, 6, 5, 2))
    flat = g.add_tensor(tt, (30, 4), **q)
    g.add_operation(OperationType.RESHAPE, [t, g.add_constant(T.TENSOR_INT32, np.array([30, 4]))], [flat])
    g.set_io([x], [y, flat])
    return mb.finish()


def _input(quant: bool) -> np.ndarray:
    if quant:
        return RNG.integers(-128, 128, (1, 6, 5, 3)).astype(np.int8)
    return RNG.standard_normal((1, 6, 5, 3)).astype(np.float32)


def test_outputs_the_caller_holds_are_not_overwritten_by_later_runs() -> None:
    for quant in (False, True):
        model = _two_convs(quant)
        runner = SubgraphRunner(model)
        x1, x2 = _input(quant), _input(quant)
        first = [a.copy() for a in runner.run_subgraph(0, [x1])]
        held = runner.run_subgraph(0, [x1])
        runner.run_subgraph(0, [x2])
        runner.run_subgraph(0, [x2])
        for want, got in zip(first, held):
            np.testing.assert_array_equal(got, want)
        # the same bits as a runner without a pool
        plain = SubgraphRunner(model, Trace(keep=True))
        assert plain.pool is None
        for want, got in zip(plain.run_subgraph(0, [x2]), runner.run_subgraph(0, [x2])):
            np.testing.assert_array_equal(got, want)


def test_an_output_passed_back_as_input_stays_intact() -> None:
    """RESHAPE's output is a view of the first convolution's pooled block; once the caller holds it, the
    block is the caller's, even when it comes back as an input that a view-producing op reads."""
    pool = BufferPool()
    a = pool.empty((4, 3), np.float32)
    a[...] = 7.0
    pool.hold(a)
    pool.start_run()  # a is now the caller's
    view = a.reshape(12)
    pool.hold(view)
    pool.drop(view)
    b = pool.empty((4, 3), np.float32)
    assert not np.shares_memory(a, b)


def test_released_intermediates_are_reused_by_the_next_run() -> None:
    pool = BufferPool()
    a = pool.empty((8, 8), np.float32)
    pool.hold(a)
    pool.drop(a)
    pool.start_run()
    b = pool.empty((8, 8), np.float32)
    assert np.shares_memory(a, b)
    view = b[2:]
    pool.hold(b)
    pool.hold(view)
    pool.drop(b)  # the view still holds the block
    assert not np.shares_memory(pool.empty((8, 8), np.float32), b)
    pool.drop(view)
    assert np.shares_memory(pool.empty((8, 8), np.float32), b)


def test_small_arrays_bypass_the_pool(monkeypatch) -> None:
    monkeypatch.setattr(buffers, "POOL_MIN_BYTES", 1 << 17)
    pool = BufferPool()
    small = pool.empty((4, 8), np.float32)
    large = pool.empty((256, 256), np.float32)  # 256 KiB
    assert small.base is None or small.base.dtype != np.uint8  # a plain numpy array
    pool.hold(large)
    pool.drop(large)
    assert pool.empty((256, 256), np.float32).base is large.base  # the block came back and is reused


def test_retained_bytes_counts_the_blocks_the_pool_keeps() -> None:
    pool = BufferPool()
    a = pool.empty((64, 1024), np.float32)  # 256 KiB
    assert pool.retained_bytes() == 0  # handed out, not kept
    pool.hold(a)
    pool.drop(a)
    assert pool.retained_bytes() == 64 * 1024 * 4


def test_a_request_takes_a_free_block_of_up_to_twice_its_size() -> None:
    pool = BufferPool()
    big = pool.empty((64, 1024), np.float32)  # 256 KiB
    pool.hold(big)
    pool.drop(big)
    smaller = pool.empty((48, 1024), np.float32)  # 192 KiB: served by the free 256 KiB block
    assert smaller.base is big.base and smaller.shape == (48, 1024)
    pool.hold(smaller)
    pool.drop(smaller)  # the block goes back under its own size
    assert pool.retained_bytes() == 64 * 1024 * 4
    much_smaller = pool.empty((32, 1024 - 1), np.float32)  # under half the block: a new one
    assert much_smaller.base is not big.base


def _record(pool: BufferPool, script: list[tuple[str, int]]) -> dict[int, np.ndarray]:
    """Runs one 'run' of requests and releases: ("get", k) asks for request k's array (size from SIZES),
    ("free", k) releases it, ("keep", k) leaves it with the caller."""
    arrays: dict[int, np.ndarray] = {}
    pool.start_run()
    for what, k in script:
        if what == "get":
            arrays[k] = pool.empty((SIZES[k],), np.float32)
            pool.hold(arrays[k])
        elif what == "free":
            pool.drop(arrays[k])
    pool.finish_run()
    return arrays


SIZES = {0: 1000, 1: 3000, 2: 1000, 3: 2000, 4: 500}
# 0 and 1 live together; 2 reuses what 0 freed, 3 what 1 freed; 4 is an output the caller keeps.
SCRIPT = [("get", 0), ("get", 1), ("free", 0), ("get", 2), ("free", 1), ("get", 3), ("free", 2), ("get", 4),
          ("free", 3), ("keep", 4)]


def test_after_one_recorded_run_the_pool_serves_runs_from_one_planned_arena() -> None:
    pool = BufferPool()
    _record(pool, SCRIPT)
    assert pool.mode == "record"
    runs = [_record(pool, SCRIPT) for _ in range(3)]
    assert pool.mode == "planned"
    for arrays in runs:
        # requests alive at the same time never share bytes
        assert not np.shares_memory(arrays[0], arrays[1])
        assert not np.shares_memory(arrays[1], arrays[2])
        assert not np.shares_memory(arrays[2], arrays[3])
        # the output the caller kept is its own array, never part of the arena
        assert arrays[4].base is None
    assert np.shares_memory(runs[0][0], runs[1][0])  # the same bytes serve every run
    # largest live set: 1 and 2 together (3000 + 1000 floats) = the arena (0 and 2 share bytes, 3 sits in
    # 1's), the second one starting on the next cache line
    assert pool.retained_bytes() == -(-3000 * 4 // ALIGN) * ALIGN + 1000 * 4


def test_a_run_that_asks_for_other_sizes_falls_back_to_blocks() -> None:
    pool = BufferPool()
    _record(pool, SCRIPT)
    first = _record(pool, SCRIPT)
    assert pool.mode == "planned"
    pool.start_run()
    a = pool.empty((SIZES[0],), np.float32)  # as recorded
    pool.hold(a)
    b = pool.empty((7000,), np.float32)  # not what the recorded run asked for second
    assert pool.mode == "blocks"
    assert not np.shares_memory(a, b) and not np.shares_memory(first[1], b)
    pool.hold(b)
    pool.drop(b)
    assert pool.empty((7000,), np.float32).base is b.base  # per-size blocks from now on


def test_an_incomplete_recording_run_is_not_planned() -> None:
    pool = BufferPool()
    pool.start_run()
    pool.hold(pool.empty((100,), np.float32))  # the run fails here: no finish_run
    _record(pool, SCRIPT)  # the next run records again
    assert pool.mode == "record"
    _record(pool, SCRIPT)
    assert pool.mode == "planned"


def test_the_executor_plans_single_graph_models_and_keeps_their_results() -> None:
    for quant in (False, True):
        model = _two_convs(quant)
        runner = SubgraphRunner(model)
        plain = SubgraphRunner(model, Trace(keep=True))
        inputs = [_input(quant) for _ in range(4)]
        results = [runner.run_subgraph(0, [x]) for x in inputs]
        assert runner.pool.mode == "planned"
        for x, got in zip(inputs, results):  # every run's outputs intact after the later runs
            for want, g in zip(plain.run_subgraph(0, [x]), got):
                np.testing.assert_array_equal(g, want)


def test_models_with_control_flow_do_not_plan() -> None:
    mb = ModelBuilder()
    g = mb.main
    _index, body = mb.add_referenced()
    bx = body.add_tensor(T.TENSOR_FLOAT32, (4,))
    by = body.add_tensor(T.TENSOR_FLOAT32, (4,))
    body.add_operation(OperationType.RELU, [bx], [by])
    body.set_io([bx], [by])
    x = g.add_tensor(T.TENSOR_FLOAT32, (4,))
    y = g.add_tensor(T.TENSOR_FLOAT32, (4,))
    g.add_operation(OperationType.RELU, [x], [y])
    g.set_io([x], [y])
    runner = SubgraphRunner(mb.finish())
    for _ in range(3):
        runner.run_subgraph(0, [RNG.standard_normal(4).astype(np.float32)])
    assert runner.pool.mode == "blocks"
