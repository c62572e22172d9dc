"""Buffers the runner keeps for operations prepared for small maps (`KernelCall.kept`), and the report of
everything it keeps between runs (`nnconv.runtime.kept_memory.kept_bytes`)."""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.builder import ModelBuilder
from nnconv.nnapi.enums import OperandType as T
from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.model import Model
from nnconv.runtime.executor import SubgraphRunner
from nnconv.runtime.kernels import KERNELS, KernelCall
from nnconv.runtime.kept_memory import kept_bytes

RNG = np.random.default_rng(21)


def _three_depthwise(quant: bool) -> Model:
    """x [1, 6, 6, 8] -> three 3x3 SAME depthwise convolutions of the same geometry (one padded buffer
    shared by all three) -> y."""
    mb = ModelBuilder()
    g = mb.main
    tt = T.TENSOR_QUANT8_ASYMM if quant else T.TENSOR_FLOAT32
    q = dict(scale=0.05, zero_point=120) if quant else {}
    x = first = g.add_tensor(tt, (1, 6, 6, 8), **q)
    for _ in range(3):
        wv = RNG.integers(0, 256, (1, 3, 3, 8)) if quant else RNG.standard_normal((1, 3, 3, 8))
        w = g.add_constant(tt, wv, **(dict(scale=0.01, zero_point=128) if quant else {}))
        b = g.add_constant(T.TENSOR_INT32 if quant else T.TENSOR_FLOAT32,
                           RNG.integers(-300, 300, 8) if quant else RNG.standard_normal(8),
                           scale=0.05 * 0.01 if quant else 0.0)
        y = g.add_tensor(tt, (1, 6, 6, 8), **q)
        # SAME, strides 1, multiplier 1, RELU6
        g.add_operation(OperationType.DEPTHWISE_CONV_2D, [x, w, b, g.add_scalar(1), g.add_scalar(1),
                                                          g.add_scalar(1), g.add_scalar(1), g.add_scalar(3)], [y])
        x = y
    g.set_io([first], [x])
    return mb.finish()


def _general_path(model: Model, x: np.ndarray) -> np.ndarray:
    """The operations one by one through their kernels without a cache (nothing prepared or kept)."""
    g = model.main
    for op in g.operations:
        inputs = [x] + [model.constant_value(g.operands[i]) for i in op.inputs[1:]]
        call = KernelCall(op, inputs, [g.operands[i] for i in op.inputs], [g.operands[o] for o in op.outputs])
        x = KERNELS[op.type](call)[0]
    return x


def _input(quant: bool) -> np.ndarray:
    if quant:
        return RNG.integers(0, 256, (1, 6, 6, 8)).astype(np.uint8)
    return RNG.standard_normal((1, 6, 6, 8)).astype(np.float32)


def test_prepared_operations_of_one_geometry_share_their_padded_buffer():
    for quant in (False, True):
        model = _three_depthwise(quant)
        runner = SubgraphRunner(model)
        for _ in range(3):
            x = _input(quant)
            np.testing.assert_array_equal(runner.run_subgraph(0, [x])[0], _general_path(model, x))
        padded = [key for key in runner.kept_buffers if isinstance(key[0], tuple) and key[0][0] == "padded"]
        assert len(padded) == 1  # the three operations write the same interior of one buffer
        assert kept_bytes(runner) >= runner.kept_buffers[padded[0]].nbytes


def test_kept_bytes_counts_each_buffer_once_and_not_the_model_constants():
    model = _three_depthwise(False)
    runner = SubgraphRunner(model)
    runner.run_subgraph(0, [_input(False)])
    before = kept_bytes(runner)
    assert before > 0
    runner.run_subgraph(0, [_input(False)])
    assert kept_bytes(runner) == before  # later runs keep nothing more
    cache = next(iter(runner._op_caches.values()))
    filter_index = model.main.operations[0].inputs[1]
    cache["test: a model constant"] = runner.constant(0, filter_index, model.main.operands[filter_index])
    assert kept_bytes(runner) == before  # a view of the model's operand values: not kept memory
    # a fused step keeps its producer's KernelCall, which refers back to the runner: its buffer pool is
    # reported on its own (BufferPool.retained_bytes), not again here
    block = runner.pool.empty((1 << 18,), np.uint8)  # a pooled block the pool then keeps
    runner.pool.give(block)
    assert runner.pool.retained_bytes() >= block.nbytes
    cache["test: a call"] = KernelCall(model.main.operations[0], [], [], [], runner=runner)
    assert kept_bytes(runner) == before
    fresh = np.zeros(1000, np.float32)
    cache["test: an array"] = fresh
    cache["test: views of it"] = [fresh[10:], fresh.reshape(10, 100)]
    assert kept_bytes(runner) == before + fresh.nbytes  # its buffer once, whatever refers to it
