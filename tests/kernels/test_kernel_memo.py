"""The runner's per-operation memo (`KernelCall.memo`): values derived from constant operands are built
once and reused across runs; anything derived from a non-constant operand is rebuilt on every call, so a
filter fed as a model input can change between runs. Also the BLAS thread cap of the executor."""

from __future__ import annotations

import numpy as np
import pytest

import nnconv.runtime.kernels.conv_2d as conv_mod
from nnconv.runtime.blas_threads import blas_num_threads, limit_blas_threads
from nnconv.runtime.executor import Executor, SubgraphRunner
from nnconv.runtime.kernels import KernelCall
from nnconv.nnapi.builder import ModelBuilder
from nnconv.nnapi.enums import OperandType as T
from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.model import Model, Operand, Operation

RNG = np.random.default_rng(5)


def _conv_model(quant: bool, filter_is_input: bool) -> Model:
    """x [2, 5, 7, 3] -> CONV_2D 3x3 SAME stride 1, RELU6 -> [2, 5, 7, 4]; filter constant or a model input."""
    mb = ModelBuilder()
    g = mb.main
    tt = T.TENSOR_QUANT8_ASYMM_SIGNED if quant else T.TENSOR_FLOAT32
    q = dict(scale=0.05, zero_point=-3) if quant else {}
    x = g.add_tensor(tt, (2, 5, 7, 3), **q)
    wq = dict(scale=0.02, zero_point=0) if quant else {}
    if filter_is_input:
        w = g.add_tensor(tt, (4, 3, 3, 3), **wq)
    else:
        wv = RNG.integers(-127, 128, (4, 3, 3, 3)) if quant else RNG.standard_normal((4, 3, 3, 3))
        w = g.add_constant(tt, wv, **wq)
    bt = T.TENSOR_INT32 if quant else T.TENSOR_FLOAT32
    b = g.add_constant(bt, RNG.integers(-500, 500, 4) if quant else RNG.standard_normal(4),
                       scale=0.05 * 0.02 if quant else 0.0)
    y = g.add_tensor(tt, (2, 5, 7, 4), **(dict(scale=0.1, zero_point=-128) if quant else {}))
    g.add_operation(OperationType.CONV_2D, [x, w, b, g.add_scalar(1), g.add_scalar(1), g.add_scalar(1),
                                           g.add_scalar(3)], [y])
    g.set_io([x, w] if filter_is_input else [x], [y])
    return mb.finish()


def _random(quant: bool, shape: tuple[int, ...]) -> np.ndarray:
    if quant:
        return RNG.integers(-128, 128, shape).astype(np.int8)
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("quant", [False, True])
def test_constant_filter_is_prepared_once(quant: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    builds = []
    real = conv_mod.quant_filter

    def counting(*args, **kwargs):
        builds.append(1)
        return real(*args, **kwargs)
    monkeypatch.setattr(conv_mod, "quant_filter", counting)
    model = _conv_model(quant, filter_is_input=False)
    runner = SubgraphRunner(model)
    x = _random(quant, (2, 5, 7, 3))
    first = runner.run_subgraph(0, [x])[0]
    second = runner.run_subgraph(0, [x])[0]
    np.testing.assert_array_equal(first, second)
    assert runner._op_caches[(0, 0)], "the CONV_2D memo stays empty"
    assert len(builds) == (1 if quant else 0)
    # a fresh runner (empty memo) computes the same bits
    np.testing.assert_array_equal(SubgraphRunner(model).run_subgraph(0, [x])[0], first)


@pytest.mark.parametrize("quant", [False, True])
def test_filter_fed_as_input_is_never_memoized(quant: bool) -> None:
    model = _conv_model(quant, filter_is_input=True)
    runner = SubgraphRunner(model)
    x = _random(quant, (2, 5, 7, 3))
    for _ in range(3):
        w = _random(quant, (4, 3, 3, 3))
        if quant:
            w[w == -128] = -127  # symmetric filter range
        got = runner.run_subgraph(0, [x, w])[0]
        want = SubgraphRunner(model).run_subgraph(0, [x, w])[0]
        np.testing.assert_array_equal(got, want)
    # only the parameters and the geometry (constant scalars) are kept, nothing derived from the filter (the
    # float 3x3 convolution takes its bias as one more filter row, derived from the filter too)
    assert [k[0] for k in runner._op_caches[(0, 0)]] == ["window_params", "conv_params"]


def test_memo_without_runner_cache_rebuilds() -> None:
    call = KernelCall(Operation(OperationType.CONV_2D, [0], [1]), [np.zeros(1, np.float32)],
                      [Operand(type=T.TENSOR_FLOAT32, dimensions=(1,))], [])
    made = []
    for _ in range(2):
        call.memo("k", (0,), lambda: made.append(1))
    assert len(made) == 2


def test_executor_caps_blas_threads_only_while_running() -> None:
    before = blas_num_threads()
    if before is None:
        pytest.skip("numpy's BLAS is not OpenBLAS: the thread cap is a documented no-op there")
    with limit_blas_threads(1):
        assert blas_num_threads() == 1
    assert blas_num_threads() == before
    model = _conv_model(False, filter_is_input=False)
    out = Executor(model).run([_random(False, (2, 5, 7, 3))])
    assert blas_num_threads() == before
    assert out["out_0"].shape == (2, 5, 7, 4)


def test_threads_setting_reaches_the_executor_and_blas_only_while_running() -> None:
    """`--threads N` (`use_threads`) gives executors created under it N BLAS threads during `run`, with
    the same results as one thread; outside it the default stays 1."""
    from nnconv.runtime.blas_threads import default_threads, use_threads
    model = _conv_model(False, filter_is_input=False)
    x = _random(False, (2, 5, 7, 3))
    seen: list[int | None] = []

    class Spy(Executor):
        def run(self, inputs):  # type: ignore[override]
            with limit_blas_threads(self.blas_threads):
                seen.append(blas_num_threads())
            return super().run(inputs)
    with use_threads(2):
        ex = Spy(model)
        two = ex.run([x])["out_0"]
    assert ex.blas_threads == 2 and default_threads() == 1
    if seen[0] is not None:
        assert seen == [2]
    np.testing.assert_array_equal(two, Executor(model).run([x])["out_0"])
    with pytest.raises(ValueError):
        with use_threads(0):
            pass
