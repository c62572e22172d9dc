"""`nnconv rewrite` (nnconv/retarget/): each rewrite on a model built with our builder makes TFLite's NNAPI
delegate take more (as the delegate target says), the output runs on TFLite with the original's outputs, and
inputs, outputs, names, signature defs, metadata and quantization are the original's. A model nothing helps
is written byte for byte; a rewrite that changed TFLite's outputs writes nothing and exits 1."""

from __future__ import annotations

import json
import pathlib
import sys

import numpy as np
import pytest
from click.testing import CliRunner

import nnconv
from nnconv.cli import main
from nnconv.retarget import engine
from nnconv.retarget.steps import Step
from nnconv.rewrite.standalone import Standalone
from nnconv.tflite.builder import QuantParams, TfliteBuilder
from nnconv.tflite.ir import TfliteModel
from nnconv.tflite.options import (ArgMaxOptions, BatchMatMulOptions, FullyConnectedOptions, GatherOptions,
                                   ReshapeOptions)
from nnconv.tflite.reader import read_model
from nnconv.tflite.schema_enums import BuiltinOperator as B
from nnconv.tflite.schema_enums import TensorType

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "rewrite"))
from harness import keras_flatten  # noqa: E402
from test_list_set_item import list_write_model  # noqa: E402
from test_merge_axes import repeat_model, shuffle_model  # noqa: E402

pytest.importorskip("ai_edge_litert")
I32 = np.int32
TYPES = {"float32": (np.float32, None), "int8": (np.int8, QuantParams(0.05, -3))}


def shape_chain_model(dtype: str = "float32", metadata: bool = True) -> bytes:
    """A Keras Flatten as TensorFlow exports it with an open batch: RESHAPE(x, PACK(SHAPE(x)[0], -1)), then a
    RELU; with a signature def and TFLite metadata."""
    np_dtype, q = TYPES[dtype]
    b = TfliteBuilder()
    x = b.input("x", (1, 3, 4, 5), np_dtype, quant=q, shape_signature=(-1, 3, 4, 5))
    y = keras_flatten(b, x, (1, 3, 4, 5), np_dtype, q, batch_signature=True)
    z = b.tensor("z", (1, 60), np_dtype, quant=q, shape_signature=(-1, 60))
    b.op(B.RELU, [y], [z])
    b.output(z)
    b.add_signature("serving_default")
    if metadata:
        b.add_metadata("TFLITE_METADATA", b"\x0c\x00\x00\x00TFLM model metadata")
        b.add_metadata("min_runtime_version", b"1.14.0\x00")
    return b.finish()


def argmax_gather_model() -> bytes:
    """tf.gather(table, tf.argmax(x)): an int64 index tensor, which the delegate cannot add."""
    b = TfliteBuilder()
    x = b.input("x", (1, 6), np.float32)
    am = b.tensor("am", (1,), np.int64)
    b.op(B.ARG_MAX, [x, b.const("axis", np.array([1], I32))], [am], ArgMaxOptions(output_type=int(TensorType.INT64)))
    g = b.tensor("g", (1, 4), np.float32)
    b.op(B.GATHER, [b.const("table", np.arange(24, dtype=np.float32).reshape(6, 4)), am], [g], GatherOptions(axis=0))
    y = b.tensor("y", (1, 4), np.float32)
    b.op(B.RELU, [g], [y])
    b.output(y)
    return b.finish()


def reverse_model(dtype: str = "float32") -> bytes:
    """tf.reverse over time, as a Keras Bidirectional RNN's backward direction writes it, then a TANH."""
    np_dtype, q = TYPES[dtype]
    b = TfliteBuilder()
    x = b.input("x", (1, 5, 3), np_dtype, quant=q)
    r = b.tensor("reversed", (1, 5, 3), np_dtype, quant=q)
    b.op(B.REVERSE_V2, [x, b.const("axis", np.array([1], I32))], [r])
    y = b.tensor("y", (1, 5, 3), np_dtype, quant=q)
    b.op(B.RELU, [r], [y])
    b.output(y)
    return b.finish()


def _tflite(data: bytes, feed: dict[str, np.ndarray] | None = None, seed: int = 3) -> list[np.ndarray]:
    from ai_edge_litert.interpreter import Interpreter
    it = Interpreter(model_content=data)
    it.allocate_tensors()
    rng = np.random.default_rng(seed)
    for d in it.get_input_details():
        dt = np.dtype(d["dtype"])
        value = feed[d["name"]] if feed else (
            rng.uniform(-1, 1, d["shape"]) if dt.kind == "f"
            else rng.integers(np.iinfo(dt).min, np.iinfo(dt).max, d["shape"], endpoint=True))
        if tuple(np.shape(value)) != tuple(d["shape"]):
            it.resize_tensor_input(d["index"], list(np.shape(value)))
            it.allocate_tensors()
        it.set_tensor(d["index"], np.asarray(value).astype(dt))
    it.invoke()
    return [it.get_tensor(d["index"]) for d in it.get_output_details()]


def _interface(model: TfliteModel) -> tuple:
    sg = model.main
    return ([(sg.tensors[i].name, sg.tensors[i].type, sg.tensors[i].shape, sg.tensors[i].quantization)
             for i in (*sg.inputs, *sg.outputs)], model.signature_defs, model.metadata)


def _check_output(original: bytes, rewritten: bytes, api_level: int) -> None:
    """The delegate takes the output whole, TFLite computes the same outputs, the interface is the same."""
    assert nnconv.prepare(rewritten, api_level).delegate_plan().outcome.value == "delegated"
    before, after = read_model(original), read_model(rewritten)
    assert _interface(after) == _interface(before)
    assert [t.name for t in after.main.tensors[:len(before.main.tensors)]] == [t.name for t in before.main.tensors]
    for seed in (3, 4):
        for got, want in zip(_tflite(rewritten, seed=seed), _tflite(original, seed=seed), strict=True):
            assert got.dtype == want.dtype and np.array_equal(got, want)


@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_shape_chain_folds_and_the_delegate_takes_the_model(dtype: str) -> None:
    data = shape_chain_model(dtype)
    result = nnconv.rewrite_model(data, 30)
    assert result.before.outcome == "refused_dynamic_tensors"
    assert result.before.dynamic_chain == "SHAPE #0 -> RESHAPE #3"
    assert result.after.whole and result.after.describe() == "1 partition, 2/2 ops on NNAPI"
    assert [s.name for s in result.steps] == ["static-shapes"]
    removed = {c.op: c.op_name for c in result.changes if c.new_index is None and c.op is not None}
    assert removed == {0: "SHAPE", 1: "STRIDED_SLICE", 2: "PACK"}
    assert any(c.op == 3 and c.new_index == 0 and "'packed'" in c.note for c in result.changes)
    assert result.proof is not None and result.proof.passed
    _check_output(data, result.data, 30)
    out = read_model(result.data)
    assert out.main.tensors[out.main.inputs[0]].shape_signature is None  # the baked-in shape, said so
    assert b"TFLM model metadata" in result.data and b"1.14.0\x00" in result.data  # the metadata buffers
    by_name = {t.name: t for t in out.main.tensors}
    assert by_name["packed"].data.tolist() == [1, -1] and by_name["s"].data.tolist() == [1, 3, 4, 5]  # readable


def test_float16_weights_stay_behind_their_dequantize() -> None:
    """Only what comes from a shape is folded: the converter's float16 weights behind a DEQUANTIZE stay so."""
    b = TfliteBuilder()
    x = b.input("x", (1, 3, 4, 5), np.float32, shape_signature=(-1, 3, 4, 5))
    flat = keras_flatten(b, x, (1, 3, 4, 5), np.float32, batch_signature=True)
    w16 = b.const("w16", np.random.default_rng(0).uniform(-1, 1, (6, 60)).astype(np.float16))
    w = b.tensor("w", (6, 60), np.float32)
    b.op(B.DEQUANTIZE, [w16], [w])
    y = b.tensor("y", (1, 6), np.float32, shape_signature=(-1, 6))
    b.op(B.FULLY_CONNECTED, [flat, w, -1], [y], FullyConnectedOptions())
    b.output(y)
    data = b.finish()
    result = nnconv.rewrite_model(data, 30)
    assert result.after.whole
    out = read_model(result.data)
    assert [op.name for op in out.main.operators] == ["RESHAPE", "DEQUANTIZE", "FULLY_CONNECTED"]
    assert out.main.tensors[w16].type == TensorType.FLOAT16 and out.main.tensors[w16].data is not None
    _check_output(data, result.data, 30)


@pytest.mark.parametrize("build", [lambda: repeat_model(), lambda: repeat_model("int8"), lambda: shuffle_model()],
                         ids=["repeat-float32", "repeat-int8", "channel-shuffle"])
@pytest.mark.parametrize("api_level", [29, 30])
def test_rank5_chains_merge(build, api_level: int) -> None:
    data = build()
    result = nnconv.rewrite_model(data, api_level)
    assert result.before.on_nnapi == 1 and result.after.whole
    assert [s.name for s in result.steps] == ["rank-merges"]
    assert max(t.rank for t in read_model(result.data).main.tensors) <= 4
    _check_output(data, result.data, api_level)


@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_list_write_becomes_a_row_select(dtype: str) -> None:
    """A loop's lowered list write (here in the main subgraph, its step an input) slices at a data-dependent
    index: dynamic-sized tensors. As a row select the delegate runs the model; TFLite's outputs are the same for
    every step index the identity covers (0 <= i < N)."""
    data = list_write_model(dtype)
    np_dtype = np.dtype(TYPES[dtype][0])
    rng = np.random.default_rng(5)

    def feed(i: int) -> dict[str, np.ndarray]:
        values = rng.uniform(-100, 100, (6, 1, 4)).astype(np_dtype)
        return {"list": values[:5], "item": values[5:], "i": np.array(i, I32)}

    result = nnconv.rewrite_model(data, 30, inputs=feed(2))
    assert result.before.outcome == "refused_dynamic_tensors" and result.after.runs
    assert [s.name for s in result.steps] == ["loop-list-writes"] and result.proof.passed
    ops = [op.name for op in read_model(result.data).main.operators]
    assert ops == ["ADD", "EQUAL", "SELECT_V2"]
    for i in range(5):
        values = feed(i)
        for got, want in zip(_tflite(result.data, values), _tflite(data, values), strict=True):
            assert np.array_equal(got, want)


def test_int64_indices_become_int32() -> None:
    data = argmax_gather_model()
    result = nnconv.rewrite_model(data, 30)
    assert result.before.on_nnapi == 1 and result.after.whole
    assert [s.name for s in result.steps] == ["int64-indices"]
    out = read_model(result.data)
    assert out.main.tensors[1].type == TensorType.INT32 and out.main.operators[0].options.output_type == TensorType.INT32
    _check_output(data, result.data, 30)


@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_reverse_becomes_gather_below_api_34(dtype: str) -> None:
    data = reverse_model(dtype)
    result = nnconv.rewrite_model(data, 30)
    assert result.before.on_nnapi == 1 and result.after.whole and [s.name for s in result.steps] == ["delegate-ops"]
    gather = read_model(result.data).main.operators[0]
    assert gather.builtin_code == B.GATHER and gather.options.axis == 1
    _check_output(data, result.data, 30)
    assert not nnconv.rewrite_model(data, 34).rewritten  # the delegate takes REVERSE_V2 itself there


def dilated_conv1d_model(dtype: str = "float32") -> bytes:
    """A dilated Conv1D's data movement as TensorFlow writes it on rank 3 (operator version 3): SPACE_TO_BATCH_ND
    with paddings, an op per batch, BATCH_TO_SPACE_ND with crops."""
    np_dtype, q = TYPES[dtype]
    b = TfliteBuilder()
    x = b.input("x", (1, 12, 3), np_dtype, quant=q)
    s2b = b.tensor("s2b", (2, 8, 3), np_dtype, quant=q)
    b.op(B.SPACE_TO_BATCH_ND, [x, b.const("block", np.array([2], I32)), b.const("pads", np.array([[2, 2]], I32))],
         [s2b], version=3)
    r = b.tensor("relu", (2, 8, 3), np_dtype, quant=q)
    b.op(B.RELU, [s2b], [r])
    y = b.tensor("y", (1, 15, 3), np_dtype, quant=q)
    b.op(B.BATCH_TO_SPACE_ND, [r, b.const("block2", np.array([2], I32)), b.const("crops", np.array([[0, 1]], I32))],
         [y], version=3)
    b.output(y)
    return b.finish()


@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_rank3_space_batch_on_rank4(dtype: str) -> None:
    data = dilated_conv1d_model(dtype)
    result = nnconv.rewrite_model(data, 30)
    assert result.before.on_nnapi == 1 and result.after.whole and [s.name for s in result.steps] == ["delegate-ops"]
    ops = [(op.name, op.version) for op in read_model(result.data).main.operators]
    v = 2 if dtype == "int8" else 1
    assert ops == [("RESHAPE", 1), ("SPACE_TO_BATCH_ND", v), ("RESHAPE", 1), ("RELU", 1), ("RESHAPE", 1),
                   ("BATCH_TO_SPACE_ND", v), ("SLICE", v), ("RESHAPE", 1)]
    _check_output(data, result.data, 30)


def test_merged_transpose_takes_its_rank4_version() -> None:
    """A rank-5 TRANSPOSE is version 4, above the delegate's 2: merged to rank 4 it is version 1 again."""
    b = TfliteBuilder()
    x = b.input("x", (1, 3, 4, 6), np.float32)
    a = b.tensor("a", (1, 3, 4, 2, 3), np.float32)
    b.op(B.RESHAPE, [x, b.const("s", np.array([1, 3, 4, 2, 3], I32))], [a], ReshapeOptions(new_shape=(1, 3, 4, 2, 3)))
    t = b.tensor("t", (1, 3, 4, 3, 2), np.float32)
    b.op(B.TRANSPOSE, [a, b.const("perm", np.array([0, 1, 2, 4, 3], I32))], [t], version=4)
    y = b.tensor("y", (1, 3, 4, 6), np.float32)
    b.op(B.RESHAPE, [t, b.const("o", np.array([1, 3, 4, 6], I32))], [y], ReshapeOptions(new_shape=(1, 3, 4, 6)))
    b.output(y)
    data = b.finish()
    result = nnconv.rewrite_model(data, 30)
    assert result.after.whole
    transpose = next(op for op in read_model(result.data).main.operators if op.builtin_code == B.TRANSPOSE)
    assert transpose.version == 1
    _check_output(data, result.data, 30)


def test_float_batch_matmul_becomes_mul_and_sum_below_api_33() -> None:
    """Attention's BATCH_MATMUL of two activations: a broadcast MUL and a SUM over the shared axis on rank 4;
    TFLite's outputs within the float tolerance (the sums are added in another order)."""
    b = TfliteBuilder()
    q = b.input("q", (1, 2, 3, 4), np.float32)
    k = b.input("k", (1, 2, 4, 5), np.float32)
    s = b.tensor("scores", (1, 2, 3, 5), np.float32)
    b.op(B.BATCH_MATMUL, [q, k], [s], BatchMatMulOptions())
    y = b.tensor("y", (1, 2, 3, 5), np.float32)
    b.op(B.RELU, [s], [y])
    b.output(y)
    data = b.finish()
    result = nnconv.rewrite_model(data, 30)
    assert result.before.on_nnapi == 1 and result.after.whole and result.proof.passed
    assert [op.name for op in read_model(result.data).main.operators] == ["RESHAPE", "RESHAPE", "MUL", "SUM",
                                                                          "RESHAPE", "RELU"]
    assert next(c for c in result.changes if c.op == 0).new_index == 2  # the MUL stands for it
    for seed in (3, 4):
        got, want = _tflite(result.data, seed=seed)[0], _tflite(data, seed=seed)[0]
        assert np.abs(got - want).max() <= 1e-5 + 1e-4 * np.abs(want).max()
    assert not nnconv.rewrite_model(data, 33).rewritten  # the delegate takes BATCH_MATMUL itself there


def test_nothing_to_rewrite_leaves_the_model_byte_identical(tmp_path: pathlib.Path) -> None:
    src = tmp_path / "plain.tflite"
    src.write_bytes(shape_chain_model())
    first = tmp_path / "once.tflite"
    assert CliRunner().invoke(main, ["rewrite", str(src), "-o", str(first)]).exit_code == 0
    again = tmp_path / "twice.tflite"
    run = CliRunner().invoke(main, ["rewrite", str(first), "-o", str(again)])
    assert run.exit_code == 0, run.output
    assert "no rewrite lets the delegate take more" in run.output
    assert again.read_bytes() == first.read_bytes()


def test_input_shape_and_inputs(tmp_path: pathlib.Path) -> None:
    """--input-shape bakes the chosen batch in; the proof runs on the user's --inputs."""
    src = tmp_path / "m.tflite"
    src.write_bytes(shape_chain_model())
    feed = tmp_path / "in.npz"
    x = np.random.default_rng(7).uniform(-1, 1, (2, 3, 4, 5)).astype(np.float32)
    np.savez(feed, x=x)
    out = tmp_path / "out.tflite"
    run = CliRunner().invoke(main, ["rewrite", str(src), "-o", str(out), "--input-shape", "x=2,3,4,5",
                                    "--inputs", str(feed), "--format", "json"])
    assert run.exit_code == 0, run.output
    report = json.loads(run.stdout)
    assert report["rewritten"] and report["proof"]["inputs"] == "--inputs" and report["after"]["whole"]
    assert read_model(str(out)).main.tensors[0].shape == (2, 3, 4, 5)
    np.testing.assert_array_equal(_tflite(out.read_bytes(), {"x": x})[0], _tflite(src.read_bytes(), {"x": x})[0])


def _breaks_the_model(model: TfliteModel, api_level: int) -> Standalone | None:
    """A wrong "rewrite": the RELU becomes a RELU6, which the delegate takes as well but computes otherwise."""
    from nnconv.retarget.steps import STEPS
    found = STEPS[0].apply(model, api_level)
    if found is None:
        return None
    sg = found.model.main
    relu = next(op for op in sg.operators if op.builtin_code == B.RELU)
    ops = list(sg.operators)
    ops[relu.index] = dataclasses_replace(relu, builtin_code=int(B.RELU_N1_TO_1))
    main_sg = dataclasses_replace(sg, operators=tuple(ops))
    return dataclasses_replace(found, model=dataclasses_replace(found.model, subgraphs=(main_sg,)))


def dataclasses_replace(obj, **changes):
    import dataclasses
    return dataclasses.replace(obj, **changes)


def test_changed_outputs_fail_and_write_nothing(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine, "STEPS", (Step("broken", "none", _breaks_the_model, "test"),))
    src = tmp_path / "m.tflite"
    src.write_bytes(shape_chain_model())
    out = tmp_path / "out.tflite"
    run = CliRunner().invoke(main, ["rewrite", str(src), "-o", str(out)])
    assert run.exit_code == 1
    assert "nothing written" in run.stderr and not out.exists()


def test_bad_input_is_one_line_exit_2(tmp_path: pathlib.Path) -> None:
    src = tmp_path / "not.tflite"
    src.write_bytes(b"this is not a model")
    run = CliRunner().invoke(main, ["rewrite", str(src), "-o", str(tmp_path / "o.tflite")])
    assert run.exit_code == 2 and run.stderr.count("\n") == 1 and run.stderr.startswith("nnconv: error:")
    assert not (tmp_path / "o.tflite").exists()
