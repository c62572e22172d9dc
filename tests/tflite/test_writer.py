"""The `.tflite` writer of `nnconv rewrite` (nnconv/tflite/writer.py): a model read and written back is the same
model to our reader and to TFLite; buffers keep their bytes and indices; metadata and signature defs survive;
new constants share a buffer holding the same bytes; a changed operator kind gets its own operator code."""

from __future__ import annotations

import dataclasses
import pathlib

import numpy as np
import pytest

from nnconv.tflite.builder import QuantParams, TfliteBuilder
from nnconv.tflite.options import ReshapeOptions
from nnconv.tflite.reader import read_model
from nnconv.tflite.schema_enums import BuiltinOperator as B
from nnconv.tflite.writer import write_model

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples" / "models").glob("*.tflite"))


def _tflite_outputs(data: bytes, seed: int = 0) -> list[np.ndarray]:
    from ai_edge_litert.interpreter import Interpreter
    it = Interpreter(model_content=data)
    it.allocate_tensors()
    rng = np.random.default_rng(seed)
    for d in it.get_input_details():
        dt = np.dtype(d["dtype"])
        value = (rng.uniform(-1, 1, d["shape"]) if dt.kind == "f"
                 else rng.integers(np.iinfo(dt).min, np.iinfo(dt).max, d["shape"], endpoint=True))
        it.set_tensor(d["index"], value.astype(dt))
    it.invoke()
    return [it.get_tensor(d["index"]) for d in it.get_output_details()]


def _same_ir(a, b) -> None:
    assert a.signature_defs == b.signature_defs and a.metadata == b.metadata and a.description == b.description
    for sa, sb in zip(a.subgraphs, b.subgraphs, strict=True):
        assert (sa.name, sa.inputs, sa.outputs) == (sb.name, sb.inputs, sb.outputs)
        for ta, tb in zip(sa.tensors, sb.tensors, strict=True):
            assert ta == tb  # name, shape, signature, type, buffer, quantization, sparsity (not data)
            if ta.data is not None:
                assert tb.data is not None and ta.data.tobytes() == tb.data.tobytes()
        assert sa.operators == sb.operators


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_round_trip_is_the_same_model(path: pathlib.Path) -> None:
    pytest.importorskip("ai_edge_litert")
    raw = path.read_bytes()
    written = write_model(read_model(raw), raw)
    _same_ir(read_model(raw), read_model(written))
    for got, want in zip(_tflite_outputs(written), _tflite_outputs(raw), strict=True):
        assert got.dtype == want.dtype and np.array_equal(got, want)


def _model_with_metadata() -> bytes:
    b = TfliteBuilder()
    x = b.input("x", (1, 6), np.int8, quant=QuantParams(0.1, 3))
    y = b.tensor("y", (2, 3), np.int8, quant=QuantParams(0.1, 3))
    b.op(B.RESHAPE, [x, b.const("shape", np.array([2, 3], np.int32))], [y], ReshapeOptions(new_shape=(2, 3)))
    b.output(y)
    b.add_signature("serving_default")
    b.add_metadata("TFLITE_METADATA", b"\x10\x00metadata flatbuffer")
    b.add_metadata("min_runtime_version", b"1.5.0\x00")
    return b.finish()


def test_metadata_buffers_and_signatures_survive() -> None:
    raw = _model_with_metadata()
    written = write_model(read_model(raw), raw)
    model = read_model(written)
    assert model.metadata == (("TFLITE_METADATA", 21), ("min_runtime_version", 6))
    assert model.signature_defs[0].signature_key == "serving_default"
    assert b"\x10\x00metadata flatbuffer" in written and b"1.5.0\x00" in written
    assert model.main.tensors[1].quantization.scale == pytest.approx((0.1,))


def test_new_constant_shares_identical_bytes_and_unused_buffers_empty() -> None:
    """A rewrite's new constant with the bytes of an existing buffer shares it; a buffer no tensor names is
    written empty at its index (nothing renumbered)."""
    raw = _model_with_metadata()
    model = read_model(raw)
    sg = model.main
    shape = sg.tensors[2]
    same = np.array([2, 3], np.int32)
    tensors = list(sg.tensors)
    tensors.append(dataclasses.replace(shape, index=len(tensors), name="shape_copy", buffer=-1, data=same))
    op = dataclasses.replace(sg.operators[0], inputs=(sg.operators[0].inputs[0], len(tensors) - 1))
    edited = dataclasses.replace(model, subgraphs=(dataclasses.replace(sg, tensors=tuple(tensors), operators=(op,)),))
    out = read_model(write_model(edited, raw))
    assert out.main.tensors[-1].buffer == shape.buffer  # shared, not copied
    assert out.main.tensors[-1].data.tolist() == [2, 3]


def test_changed_operator_kind_gets_its_own_code() -> None:
    raw = _model_with_metadata()
    model = read_model(raw)
    sg = model.main
    op = dataclasses.replace(sg.operators[0], builtin_code=int(B.SQUEEZE), options=None, inputs=sg.operators[0].inputs[:1])
    edited = dataclasses.replace(model, subgraphs=(dataclasses.replace(sg, operators=(op,)),))
    out = read_model(write_model(edited, raw))
    assert out.main.operators[0].builtin_code == B.SQUEEZE
