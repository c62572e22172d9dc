"""`Executor.run_batch` (nnconv/runtime/batch.py, nnconv/runtime/sample_axis.py): N samples stacked on a
new leading axis give exactly what N `Executor.run` calls give, whether the graph took a sample axis (the
batched plan) or an operation forced a loop (the plan's `reason` names it).

Bit identity is asserted for float models too: it is structural, not a property of this machine's BLAS.
The batched plan runs a float step on all samples at once only when each output element is the same
IEEE operation whatever the tensor's size (data movement, + - * /, max, min, comparisons); every other
float step (BLAS products, reductions and softmax whose kernels pick their path by size, transcendental
functions, fused steps) runs one sample at a time on the single run's shapes. `exact_float=False` lifts
that and is compared within the float parity tolerance instead (BLAS may round a product differently
when one call sees more rows).
"""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

import nnconv
from harness import TfliteBuilder, nnconv_options
from nnconv.conformance import _inputs, build_model, cts_dir, iter_cases
from nnconv.errors import InputDataError
from nnconv.runtime.batch import PER_SAMPLE_LOOP_BYTES
from nnconv.runtime.executor import Executor
from nnconv.runtime.trace import Trace
from nnconv.tflite.options import (ConcatenationOptions, Conv2DOptions, FullyConnectedOptions, PadOptions,
                                   ReducerOptions, ReshapeOptions, SoftmaxOptions, StridedSliceOptions)
from nnconv.tflite.schema_enums import BuiltinOperator as B, Padding

MODELS = pathlib.Path(__file__).resolve().parents[1] / "examples" / "models"
N = 5

# fixture -> None (batched) or a fragment of the reason its samples loop
FIXTURES = {
    "efficientnet_se_float": None, "mobilenet_v2_dynamic_range": None,
    "mobilenet_v2_dynamic_range_dequantized": None, "mobilenet_v2_float": None, "mobilenet_v2_fp16": None,
    "mobilenet_v2_int8": None, "mobilenet_v2_uint8io": None, "mobilenet_v3_int8": None,
    "mobilenet_v3_uint8io": None,
    "gru_keras": "control flow", "lstm_keras": "UNIDIRECTIONAL_SEQUENCE_LSTM is not known to keep samples apart",
    "lstm_keras_int8": "QUANTIZED_LSTM is not known to keep samples apart",
}


def _samples(ex: Executor, n: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out = {}
    for spec in ex.input_specs:
        shape = (n, *spec.shape)
        if np.issubdtype(spec.np_dtype, np.floating):
            out[spec.name] = rng.uniform(-1, 1, shape).astype(spec.np_dtype)
        else:
            info = np.iinfo(spec.np_dtype)
            out[spec.name] = rng.integers(info.min, info.max, shape, endpoint=True).astype(spec.np_dtype)
    return out


def _looped(ex: Executor, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    n = next(iter(inputs.values())).shape[0]
    runs = [ex.run({k: v[i] for k, v in inputs.items()}) for i in range(n)]
    return {name: np.stack([r[name] for r in runs]) for name in runs[0]}


def _assert_identical(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> None:
    assert got.keys() == want.keys()
    for name in want:
        assert got[name].dtype == want[name].dtype and got[name].shape == want[name].shape, name
        assert np.array_equal(got[name], want[name]), f"{name}: max |diff| {np.max(np.abs(got[name] - want[name]))}"


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_fixture_batched_equals_single_runs(name):
    ex = Executor(nnconv.convert(MODELS / f"{name}.tflite", options=nnconv_options()).converted)
    inputs = _samples(ex, N)
    _assert_identical(ex.run_batch(inputs), _looped(ex, inputs))
    plan = ex.batch_plan(N)
    if FIXTURES[name] is None:
        assert plan.batched and plan.reason == "", plan.reason
    else:
        assert not plan.batched and FIXTURES[name] in plan.reason, plan.reason


def test_every_fixture_is_listed():
    assert {p.stem for p in MODELS.glob("*.tflite")} - set(FIXTURES) == {"custom_op_middle"}  # below


def test_partitions_of_a_partial_model():
    """custom_op_middle's CUSTOM op is refused: each delegated partition is its own executor, and its
    input [512, 1] has no leading 1 to extend, so its samples loop, saying so."""
    prepared = nnconv.prepare(MODELS / "custom_op_middle.tflite")
    for converted in prepared.partial().converted:
        ex = Executor(converted)
        inputs = _samples(ex, 3)
        _assert_identical(ex.run_batch(inputs), _looped(ex, inputs))
        plan = ex.batch_plan(3)
        assert plan.batched or "leading extent" in plan.reason, plan.reason


@pytest.mark.parametrize("name", ["mobilenet_v2_float", "efficientnet_se_float", "mobilenet_v2_int8"])
def test_exact_float_off_stays_within_the_float_tolerance(name):
    """With `exact_float=False` the BLAS-backed float steps run on all samples at once: BLAS may then round
    a product differently from a single run's (another row count, another kernel), so float outputs are
    compared within the float parity tolerance (1e-5 + 1e-4 x range, README); integer models stay exact."""
    ex = Executor(nnconv.convert(MODELS / f"{name}.tflite", options=nnconv_options()).converted)
    inputs = _samples(ex, N, seed=1)
    got, want = ex.run_batch(inputs, exact_float=False), _looped(ex, inputs)
    assert ex.batch_plan(N, exact_float=False).batched
    for key in want:
        if want[key].dtype.kind == "f":
            span = float(want[key].max() - want[key].min())
            assert np.max(np.abs(got[key] - want[key])) <= 1e-5 + 1e-4 * span
        else:
            assert np.array_equal(got[key], want[key])


def test_float_steps_outside_the_exact_set_run_per_sample():
    ex = Executor(nnconv.convert(MODELS / "mobilenet_v2_float.tflite").converted)
    plan = ex.batch_plan(4)
    assert "CONV_2D" in plan.per_sample and "FULLY_CONNECTED" in plan.per_sample
    assert ex.batch_plan(4, exact_float=False).per_sample == ()
    int8 = Executor(nnconv.convert(MODELS / "mobilenet_v2_int8.tflite").converted)
    assert int8.batch_plan(4).per_sample == ()  # integer kernels are exact at any size


def _float_conv_model(side: int) -> bytes:
    """x [1, side, side, 8] -> 1x1 CONV_2D to 64 channels (float): its output is side * side * 256 bytes."""
    rng = np.random.default_rng(3)
    b = TfliteBuilder()
    x = b.input("x", (1, side, side, 8), np.float32)
    y = b.tensor("y", (1, side, side, 64), np.float32)
    b.op(B.CONV_2D, [x, b.const("w", rng.standard_normal((64, 1, 1, 8)).astype(np.float32)),
                     b.const("b", rng.standard_normal(64).astype(np.float32))], [y],
         Conv2DOptions(padding=Padding.VALID, stride_w=1, stride_h=1))
    b.output(y)
    return b.finish()


def test_large_per_sample_float_steps_loop_and_say_why():
    """A float step that runs one sample at a time on a map of PER_SAMPLE_LOOP_BYTES or more per sample makes
    the chunk a loop of single runs (faster there); just below, the plan batches. Both are the single runs'
    bits."""
    side = 64  # 64 * 64 * 64 * 4 bytes: exactly 1 MiB per sample
    assert side * side * 64 * 4 == PER_SAMPLE_LOOP_BYTES
    large = Executor(nnconv.convert(_float_conv_model(side)).converted)
    plan = large.batch_plan(3)
    assert not plan.batched and "CONV_2D runs one sample at a time on 1.0 MiB per sample" in plan.reason
    inputs = _samples(large, 3, seed=4)
    _assert_identical(large.run_batch(inputs), _looped(large, inputs))
    small = Executor(nnconv.convert(_float_conv_model(side - 1)).converted)
    assert small.batch_plan(3).batched and small.batch_plan(3).per_sample == ("CONV_2D",)
    assert large.batch_plan(3, exact_float=False).batched  # every step batched: nothing runs per sample


def _chain_model() -> bytes:
    """x [1, 4, 6] -> CONCATENATION with a constant [1, 2, 6] on axis 1 -> PAD axis 1 by 1 -> STRIDED_SLICE
    rows 1..7 -> RESHAPE to [1, 36] -> FULLY_CONNECTED to 5 -> SOFTMAX: a constant to repeat per sample, a
    reshape target and a slice end to adapt."""
    rng = np.random.default_rng(7)
    b = TfliteBuilder()
    x = b.input("x", (1, 4, 6), np.float32)
    c = b.tensor("c", (1, 6, 6), np.float32)
    b.op(B.CONCATENATION, [x, b.const("k", rng.standard_normal((1, 2, 6)).astype(np.float32))], [c],
         ConcatenationOptions(axis=1))
    p = b.tensor("p", (1, 8, 6), np.float32)
    b.op(B.PAD, [c, b.const("pads", np.array([[0, 0], [1, 1], [0, 0]], np.int32))], [p], PadOptions())
    s = b.tensor("s", (1, 6, 6), np.float32)
    b.op(B.STRIDED_SLICE, [p, b.const("begin", np.array([0, 1, 0], np.int32)),
                           b.const("end", np.array([1, 7, 6], np.int32)), b.const("st", np.ones(3, np.int32))],
         [s], StridedSliceOptions())
    r = b.tensor("r", (1, 36), np.float32)
    b.op(B.RESHAPE, [s, b.const("shape", np.array([1, 36], np.int32))], [r], ReshapeOptions(new_shape=(1, 36)))
    f = b.tensor("f", (1, 5), np.float32)
    b.op(B.FULLY_CONNECTED, [r, b.const("w", rng.standard_normal((5, 36)).astype(np.float32)), -1], [f],
         FullyConnectedOptions())
    y = b.tensor("y", (1, 5), np.float32)
    b.op(B.SOFTMAX, [f], [y], SoftmaxOptions(beta=1.0))
    b.output(y)
    return b.finish()


def test_constants_that_encode_the_batch_are_adapted():
    ex = Executor(nnconv.convert(_chain_model()).converted)
    inputs = _samples(ex, 6, seed=2)
    _assert_identical(ex.run_batch(inputs), _looped(ex, inputs))
    plan = ex.batch_plan(6)
    assert plan.batched, plan.reason
    main = plan.executor.converted.model.main
    reshapes = [op for op in main.operations if op.type.name == "RESHAPE"]
    targets = [plan.executor.converted.model.constant_value(main.operands[op.inputs[1]]).tolist() for op in reshapes]
    assert [6, 36] in targets


def _one_op_model(op: B, x_shape: tuple[int, ...], out_shape: tuple[int, ...], extra: list, options) -> bytes:
    b = TfliteBuilder()
    x = b.input("x", x_shape, np.float32)
    y = b.tensor("y", out_shape, np.float32)
    b.op(op, [x, *[b.const(f"k{i}", v) for i, v in enumerate(extra)]], [y], options)
    b.output(y)
    return b.finish()


@pytest.mark.parametrize("model,fragment", [
    # a mean over the sample axis mixes samples
    (lambda: _one_op_model(B.MEAN, (1, 4, 6), (1, 1, 6), [np.array([0, 1], np.int32)],
                           ReducerOptions(keep_dims=True)), "MEAN: it reduces over axis 0, the sample axis"),
    # a concatenation of the sample with itself along axis 0
    (lambda: _concat_axis0(), "CONCATENATION"),
    # a reshape that spreads one sample's values over two rows
    (lambda: _one_op_model(B.RESHAPE, (1, 4, 6), (2, 12), [np.array([2, 12], np.int32)],
                           ReshapeOptions(new_shape=(2, 12))), "RESHAPE"),
    # no leading 1 to extend
    (lambda: _one_op_model(B.SOFTMAX, (3, 6), (3, 6), [], SoftmaxOptions(beta=1.0)),
     "input x has leading extent [3], not 1"),
])
def test_ops_that_mix_samples_loop_and_say_which(model, fragment):
    ex = Executor(nnconv.convert(model()).converted)
    inputs = _samples(ex, 4, seed=3)
    _assert_identical(ex.run_batch(inputs), _looped(ex, inputs))
    plan = ex.batch_plan(4)
    assert not plan.batched and fragment in plan.reason and not plan.over_memory, plan.reason


def _concat_axis0() -> bytes:
    b = TfliteBuilder()
    x = b.input("x", (1, 6), np.float32)
    y = b.tensor("y", (2, 6), np.float32)
    b.op(B.CONCATENATION, [x, x], [y], ConcatenationOptions(axis=0))
    b.output(y)
    return b.finish()


def test_chunks_empty_batches_and_bad_inputs():
    ex = Executor(nnconv.convert(MODELS / "mobilenet_v2_int8.tflite").converted)
    inputs = _samples(ex, 5, seed=4)
    _assert_identical(ex.run_batch(inputs, max_batch=2), _looped(ex, inputs))  # chunks of 2, 2 and 1
    assert ex.batch_plan(2).batched and ex.batch_plan(1).reason == "one sample"
    empty = ex.run_batch({"image": np.zeros((0, 1, 64, 64, 3), np.int8)})
    assert empty["probabilities"].shape == (0, 1, 10) and empty["probabilities"].dtype == np.int8
    with pytest.raises(InputDataError, match=r"stacks samples on a new leading axis: \[N, 1, 64, 64, 3\]"):
        ex.run_batch({"image": np.zeros((5, 64, 64, 3), np.int8)})
    with pytest.raises(InputDataError, match="max_batch"):
        ex.run_batch(inputs, max_batch=0)


def test_a_trace_loops():
    converted = nnconv.convert(MODELS / "mobilenet_v2_int8.tflite").converted
    ex = Executor(converted, trace=Trace(keep=True))
    assert ex.batch_plan(3).reason == "a trace records every single run"


def _cts_cases() -> list:
    """The first conformance case of each operation sequence whose inputs all have a leading 1: the
    batched plan's rules against hand-written NNAPI graphs (the whole set, 2491 batched models at N = 3,
    was run once while writing this: all bit-identical)."""
    root = cts_dir()
    if not root.is_dir():
        return []
    seen, cases = set(), []
    for cid, case in iter_cases(root, folders=("V1_2", "V1_3")):
        if case.get("expect_failure") or cid.endswith("signed_coupling"):
            continue
        model = case["model"]
        key = tuple(op["type"] for op in model["operations"]) if "operations" in model else cid
        if key in seen:
            continue
        try:
            built = build_model(case)
            arrays = _inputs(case, built)
        except Exception:  # noqa: BLE001 - an operation type we do not know: not this test's subject
            continue
        if not arrays or any(a is None or a.ndim == 0 or a.shape[0] != 1 for a in arrays):
            continue
        seen.add(key)
        cases.append(pytest.param(built, arrays, id=cid))
    return cases


@pytest.mark.parametrize("model,arrays", _cts_cases())
def test_conformance_models(model, arrays):
    ex = Executor(model, blas_threads=None)
    rng = np.random.default_rng(5)
    # three samples: the case's own inputs and two permutations of their values (valid indices stay valid)
    stacked = [np.stack([a, *[rng.permutation(a.reshape(-1)).reshape(a.shape) for _ in range(2)]]) for a in arrays]
    try:
        want = [ex.run([s[k] for s in stacked]) for k in range(3)]
    except Exception:  # noqa: BLE001 - permuted values the operation refuses (sorted boxes, say): the case's own
        stacked = [np.stack([a] * 3) for a in arrays]
        want = [ex.run([s[k] for s in stacked]) for k in range(3)]
    got = ex.run_batch(stacked)
    _assert_identical(got, {k: np.stack([w[k] for w in want]) for k in want[0]})


@pytest.mark.parametrize("name,api_level,settings", [
    ("mobilenet_v2_float", 30, {"relaxed_fp16": True}),  # every value rounded to float16 storage, per element
    ("mobilenet_v3_uint8io", 29, {}),  # int8 carried as uint8 + 128 below API 30: the I/O offset at N
    ("efficientnet_se_float", 27, {}),
])
def test_levels_and_executor_settings_carry_over(name, api_level, settings):
    converted = nnconv.convert(MODELS / f"{name}.tflite", api_level=api_level, options=nnconv_options()).converted
    ex = Executor(converted, **settings)
    inputs = _samples(ex, 4, seed=6)
    _assert_identical(ex.run_batch(inputs), _looped(ex, inputs))
    assert ex.batch_plan(4).batched


def test_a_memory_bound_too_small_for_the_batch_loops():
    """`max_memory` bounds the batched model as it bounds the single one: over it, the samples loop and the
    reason says so (a smaller `max_batch` would fit)."""
    converted = nnconv.convert(MODELS / "mobilenet_v2_int8.tflite").converted
    ex = Executor(converted, max_memory=1 << 20)
    inputs = _samples(ex, 4, seed=8)
    _assert_identical(ex.run_batch(inputs, max_batch=32), _looped(ex, inputs))
    assert not ex.batch_plan(32).batched and "at 32 samples" in ex.batch_plan(32).reason
    assert "over the 1 MiB allowed" in ex.batch_plan(32).reason
    assert ex.batch_plan(32).over_memory and ex.batch_plan(2).batched  # fewer samples fit: the dataset halves


def test_a_memory_bound_keeps_one_batched_plan_alive():
    """Under `max_memory` a plan for another chunk size replaces the batched one before it is built (a
    dataset's last, smaller chunk); without a bound every plan is kept for the next call."""
    converted = nnconv.convert(MODELS / "mobilenet_v2_int8.tflite").converted
    bounded, free = Executor(converted, max_memory=1 << 30), Executor(converted)
    for ex in (bounded, free):
        inputs = _samples(ex, 5, seed=9)
        _assert_identical(ex.run_batch(inputs, max_batch=3), _looped(ex, inputs))  # chunks of 3, then 2
    assert [k for k, p in bounded._batch_plans.items() if p.batched] == [(2, True)]
    assert sorted(k for k, p in free._batch_plans.items() if p.batched) == [(2, True), (3, True)]
