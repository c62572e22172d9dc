"""The .tflite reader on valid edge cases (external buffers, sparsity, signatures) and on hostile files: every
failure must be a one-line ModelFormatError, quickly."""

from __future__ import annotations

import pathlib
import struct
import time

import flatbuffers
import numpy as np
import pytest
import tflite
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import TfliteBuilder, assert_parity
from nnconv.tflite.builder import QuantParams
from nnconv.errors import ModelFormatError
from nnconv.tflite.options import (AddOptions, ConcatenationOptions, Conv2DOptions, GeluOptions, IfOptions,
                                   ReshapeOptions, SubOptions, WhileOptions)
from nnconv.tflite.reader import read_model
from nnconv.tflite.schema_enums import BuiltinOperator, Padding, TensorType

RNG = np.random.default_rng(31)


def two_op_model(signature: bool = False) -> bytes:
    """CONV_2D then ADD: two opcodes (so operator 1 stores opcode_index 1), constants in buffers 1..3."""
    b = TfliteBuilder()
    x = b.input("x", (1, 6, 5, 2), np.float32)
    w = b.const("w", RNG.standard_normal((3, 3, 3, 2)).astype(np.float32))
    bias = b.const("bias", RNG.standard_normal(3).astype(np.float32))
    y = b.tensor("y", (1, 6, 5, 3), np.float32)
    b.op(BuiltinOperator.CONV_2D, [x, w, bias], [y], Conv2DOptions(padding=Padding.SAME, stride_w=1, stride_h=1))
    c = b.const("c", RNG.standard_normal((1, 6, 5, 3)).astype(np.float32))
    z = b.tensor("z", (1, 6, 5, 3), np.float32)
    b.op(BuiltinOperator.ADD, [y, c], [z], AddOptions())
    b.output(z)
    if signature:
        b.add_signature("serving_default")
    return b.finish()


GOOD = two_op_model()


def assert_format_error(data: bytes) -> str:
    # CPU time of this process, not wall time: the bound is there to catch a reader that loops or sweeps a
    # huge declared size, and a loaded machine (CI workers, other jobs) must not fail it.
    start = time.process_time()
    with pytest.raises(ModelFormatError) as e:
        read_model(data)
    assert time.process_time() - start < 2.0
    msg = str(e.value)
    assert msg and "\n" not in msg
    return msg


def vtable_field(table, slot: int) -> int:
    """Absolute position of a table field's value (slot = field number in the schema)."""
    o = table._tab.Offset(4 + 2 * slot)
    assert o, f"field {slot} is not stored"
    return table._tab.Pos + o


def patched(data: bytes, pos: int, fmt: str, value: int) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, pos, value)
    return bytes(out)


# -- valid files --------------------------------------------------------------------------------------
def test_good_model_decodes_with_zero_copy_weights():
    m = read_model(GOOD)
    sg = m.subgraphs[0]
    assert [op.builtin_code for op in sg.operators] == [BuiltinOperator.CONV_2D, BuiltinOperator.ADD]
    w = sg.tensors[1]
    assert w.data.shape == (3, 3, 3, 2) and not w.data.flags.writeable


def test_signature_defs_decode():
    m = read_model(two_op_model(signature=True))
    (sig,) = m.signature_defs
    assert sig.signature_key == "serving_default" and sig.subgraph_index == 0
    assert sig.inputs == (("x", 0),) and sig.outputs == (("z", 5),)


def minimal_model(data: bytes, shape: tuple[int, ...], ttype: TensorType, external: bool = False,
                  sparsity=None, data_offset: int | None = None) -> bytes:
    """One subgraph holding one constant tensor, written with the tflite API directly (our builder does not
    write external buffers or sparsity). `external` stores the data after the flatbuffer (Buffer.offset/size,
    as the converter does for models over 2 GB)."""
    def build(offset: int) -> bytes:
        b = flatbuffers.Builder(256)
        sp = sparsity(b) if sparsity else None
        vecs = {}
        if not external:
            vecs["data"] = b.CreateByteVector(data)
        tflite.BufferStart(b)
        empty = tflite.BufferEnd(b)
        tflite.BufferStart(b)
        if external:
            tflite.BufferAddOffset(b, offset)
            tflite.BufferAddSize(b, len(data))
        else:
            tflite.BufferAddData(b, vecs["data"])
        buf = tflite.BufferEnd(b)
        name = b.CreateString("t")
        shp = b.CreateNumpyVector(np.asarray(shape, np.int32))
        tflite.TensorStart(b)
        tflite.TensorAddShape(b, shp)
        tflite.TensorAddType(b, int(ttype))
        tflite.TensorAddBuffer(b, 1)
        tflite.TensorAddName(b, name)
        if sp is not None:
            tflite.TensorAddSparsity(b, sp)
        tensor = tflite.TensorEnd(b)
        tensors = b.CreateNumpyVector(np.zeros(0, np.int32))  # placeholder replaced below
        b.StartVector(4, 1, 4)
        b.PrependUOffsetTRelative(tensor)
        tensors = b.EndVector()
        outs = b.CreateNumpyVector(np.asarray([0], np.int32))
        tflite.SubGraphStart(b)
        tflite.SubGraphAddTensors(b, tensors)
        tflite.SubGraphAddOutputs(b, outs)
        sg = tflite.SubGraphEnd(b)
        b.StartVector(4, 1, 4)
        b.PrependUOffsetTRelative(sg)
        sgs = b.EndVector()
        b.StartVector(4, 2, 4)
        b.PrependUOffsetTRelative(buf)
        b.PrependUOffsetTRelative(empty)
        bufs = b.EndVector()
        tflite.ModelStart(b)
        tflite.ModelAddVersion(b, 3)
        tflite.ModelAddSubgraphs(b, sgs)
        tflite.ModelAddBuffers(b, bufs)
        b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
        return bytes(b.Output())

    if not external:
        return build(0)
    head = build(2**40)  # same size as the final header: the offset field is present either way
    offset = data_offset if data_offset is not None else (len(head) + 15) // 16 * 16
    fb = build(offset)
    assert len(fb) == len(head)
    if data_offset is not None:  # a header claiming data where the file has none
        return fb
    return fb + b"\0" * (offset - len(fb)) + data


def test_buffer_stored_after_the_flatbuffer():
    values = RNG.standard_normal((4, 5)).astype(np.float32)
    data = minimal_model(values.tobytes(), (4, 5), TensorType.FLOAT32, external=True)
    t = read_model(data).subgraphs[0].tensors[0]
    np.testing.assert_array_equal(t.data, values)
    # Zero copy: the view points into the file bytes after the flatbuffer.
    assert t.data.base is not None and not t.data.flags.owndata


def test_external_buffer_past_the_end_refused():
    values = np.zeros((4, 5), np.float32).tobytes()
    good = minimal_model(values, (4, 5), TensorType.FLOAT32, external=True)
    assert "past the end" in assert_format_error(good[:-1])
    for offset in (2**33, 2**64 - 8):
        assert "past the end" in assert_format_error(
            minimal_model(values, (4, 5), TensorType.FLOAT32, external=True, data_offset=offset))


def test_buffer_size_must_match_shape():
    data = minimal_model(np.zeros(7, np.float32).tobytes(), (4, 5), TensorType.FLOAT32)
    assert "holds 7" in assert_format_error(data)
    odd = minimal_model(b"\0" * 10, (4,), TensorType.FLOAT32)
    assert "whole number" in assert_format_error(odd)


def sparsity_table(index_kind: int = 3, segments=(0, 2, 3, 3), indices=(1, 3, 0), traversal=(0, 1)):
    """CSR metadata for a 3x4 matrix: dim 0 dense (3), dim 1 sparse with the given segments and indices
    (by default rows 0 and 1 hold values, row 2 none)."""
    kinds = {1: (tflite.Int32VectorStart, tflite.Int32VectorAddValues, tflite.Int32VectorEnd, np.int32),
             2: (tflite.Uint16VectorStart, tflite.Uint16VectorAddValues, tflite.Uint16VectorEnd, np.uint16),
             3: (tflite.Uint8VectorStart, tflite.Uint8VectorAddValues, tflite.Uint8VectorEnd, np.uint8)}

    def make(b: flatbuffers.Builder) -> int:
        start, add, end, dt = kinds[1 if index_kind not in kinds else index_kind]

        def index_vector(values) -> int:
            v = b.CreateNumpyVector(np.asarray(values, dt))
            start(b)
            add(b, v)
            return end(b)
        seg, idx = index_vector(segments), index_vector(indices)
        tflite.DimensionMetadataStart(b)
        tflite.DimensionMetadataAddFormat(b, 0)
        tflite.DimensionMetadataAddDenseSize(b, 3)
        dense = tflite.DimensionMetadataEnd(b)
        tflite.DimensionMetadataStart(b)
        tflite.DimensionMetadataAddFormat(b, 1)
        tflite.DimensionMetadataAddArraySegmentsType(b, index_kind)
        tflite.DimensionMetadataAddArraySegments(b, seg)
        tflite.DimensionMetadataAddArrayIndicesType(b, index_kind)
        tflite.DimensionMetadataAddArrayIndices(b, idx)
        csr = tflite.DimensionMetadataEnd(b)
        order = b.CreateNumpyVector(np.asarray(traversal, np.int32))
        b.StartVector(4, 2, 4)
        b.PrependUOffsetTRelative(csr)
        b.PrependUOffsetTRelative(dense)
        dims = b.EndVector()
        tflite.SparsityParametersStart(b)
        tflite.SparsityParametersAddTraversalOrder(b, order)
        tflite.SparsityParametersAddDimMetadata(b, dims)
        return tflite.SparsityParametersEnd(b)
    return make


@pytest.mark.parametrize("kind", [1, 2, 3], ids=["int32", "uint16", "uint8"])
def test_sparse_tensor_metadata_decodes(kind):
    values = np.asarray([1.5, -2.0, 4.0], np.float32)
    data = minimal_model(values.tobytes(), (3, 4), TensorType.FLOAT32, sparsity=sparsity_table(kind))
    t = read_model(data).subgraphs[0].tensors[0]
    sp = t.sparsity
    assert sp.traversal_order == (0, 1)
    assert [d.format for d in sp.dim_metadata] == [0, 1]
    assert sp.dim_metadata[0].dense_size == 3
    assert sp.dim_metadata[1].array_segments == (0, 2, 3, 3) and sp.dim_metadata[1].array_indices == (1, 3, 0)
    np.testing.assert_array_equal(t.data, values)  # sparse values stay compressed


@pytest.mark.parametrize("kwargs,fragment", [
    pytest.param({"traversal": (0, 0)}, "not a permutation", id="traversal-not-permutation"),
    pytest.param({"traversal": (0, 1, 2)}, "need 2", id="traversal-too-long"),
    pytest.param({"segments": (0, 2, 1)}, "inconsistent CSR", id="segments-decrease"),
    pytest.param({"segments": (1, 2, 3)}, "inconsistent CSR", id="segments-start"),
    pytest.param({"segments": (0, 2, 5)}, "inconsistent CSR", id="segments-past-indices"),
    pytest.param({"segments": (0, 2, 3)}, "3 segments for 3 parents",
                 id="fewer-segments-than-rows"),
    pytest.param({"indices": (1, 7, 0)}, "outside its extent 4", id="column-outside-shape"),
])
def test_inconsistent_sparse_metadata_refused(kwargs, fragment):
    data = minimal_model(np.zeros(3, np.float32).tobytes(), (3, 4), TensorType.FLOAT32,
                         sparsity=sparsity_table(**kwargs))
    assert fragment in assert_format_error(data)


def test_sparse_traversal_must_cover_the_shape():
    data = minimal_model(np.zeros(3, np.float32).tobytes(), (3, 4, 1), TensorType.FLOAT32,
                         sparsity=sparsity_table())
    assert "need 3" in assert_format_error(data)


def test_unknown_sparse_index_vector_type_refused():
    data = minimal_model(np.zeros(3, np.float32).tobytes(), (3, 4), TensorType.FLOAT32,
                         sparsity=sparsity_table(index_kind=9))
    assert "sparse index vector type 9" in assert_format_error(data)


def test_sparse_segments_with_huge_length_refused():
    data = minimal_model(np.zeros(3, np.float32).tobytes(), (3, 4), TensorType.FLOAT32,
                         sparsity=sparsity_table(index_kind=1))
    t = tflite.Model.GetRootAs(data, 0).Subgraphs(0).Tensors(0)
    seg_table = t.Sparsity().DimMetadata(1).ArraySegments()
    vec = tflite.Int32Vector()
    vec.Init(seg_table.Bytes, seg_table.Pos)
    pos = vec._tab.Vector(vec._tab.Offset(4)) - 4
    assert_format_error(patched(data, pos, "<I", 2**30))


# -- hostile files ------------------------------------------------------------------------------------
def test_every_truncation_is_refused():
    for n in range(len(GOOD)):
        assert_format_error(GOOD[:n])


@pytest.mark.parametrize("n", [0, 1, 7, 8, 100, 4096])
def test_random_bytes_refused(n):
    rng = np.random.default_rng(n)
    assert_format_error(rng.integers(0, 256, n, dtype=np.uint8).tobytes())
    if n >= 8:
        data = bytearray(rng.integers(0, 256, n, dtype=np.uint8).tobytes())
        data[4:8] = b"TFL3"
        assert_format_error(bytes(data))


def test_wrong_identifier_refused():
    assert "file identifier is b'TFL2'" in assert_format_error(GOOD[:4] + b"TFL2" + GOOD[8:])
    assert "is an .nnapi file written by nnconv" in assert_format_error(GOOD[:4] + b"NNAP" + GOOD[8:])


def test_out_of_range_buffer_index():
    t = tflite.Model.GetRootAs(GOOD, 0).Subgraphs(0).Tensors(1)  # "w", buffer 1
    msg = assert_format_error(patched(GOOD, vtable_field(t, 2), "<I", 99))
    assert "buffer 99" in msg


def test_out_of_range_opcode_index():
    op = tflite.Model.GetRootAs(GOOD, 0).Subgraphs(0).Operators(1)  # ADD: opcode index 1 is stored
    msg = assert_format_error(patched(GOOD, vtable_field(op, 0), "<I", 7))
    assert "opcode 7" in msg


@pytest.mark.parametrize("which", ["operator input", "subgraph output"])
def test_out_of_range_tensor_index(which):
    sg = tflite.Model.GetRootAs(GOOD, 0).Subgraphs(0)
    if which == "operator input":
        op = sg.Operators(0)
        pos = op._tab.Vector(op._tab.Offset(6))
    else:
        pos = sg._tab.Vector(sg._tab.Offset(8))
    msg = assert_format_error(patched(GOOD, pos, "<i", 1000))
    assert "tensor 1000" in msg
    assert_format_error(patched(GOOD, pos, "<i", -7))


def test_huge_vector_lengths_refused():
    m = tflite.Model.GetRootAs(GOOD, 0)
    sg = m.Subgraphs(0)
    t = sg.Tensors(0)
    positions = {
        "buffers": m._tab.Vector(m._tab.Offset(12)) - 4,
        "tensors": sg._tab.Vector(sg._tab.Offset(4)) - 4,
        "operators": sg._tab.Vector(sg._tab.Offset(10)) - 4,
        "shape": t._tab.Vector(t._tab.Offset(4)) - 4,
    }
    for pos in positions.values():
        for n in (2**31 - 1, 2**32 - 1, len(GOOD) // 4):
            assert_format_error(patched(GOOD, pos, "<I", n))


def test_signature_with_bad_indices_refused():
    data = control_flow_model(1, signature_subgraph=1)
    sig = tflite.Model.GetRootAs(data, 0).SignatureDefs(0)
    assert "names subgraph 4" in assert_format_error(patched(data, vtable_field(sig, 4), "<I", 4))
    data = two_op_model(signature=True)
    tm = tflite.Model.GetRootAs(data, 0).SignatureDefs(0).Outputs(0)
    assert "names tensor 99" in assert_format_error(patched(data, vtable_field(tm, 1), "<I", 99))


def control_flow_model(then_index: int, recursive: bool = False, signature_subgraph: int | None = None) -> bytes:
    b = TfliteBuilder()
    cond = b.input("cond", (1,), np.bool_)
    x = b.input("x", (2, 3), np.float32)
    y = b.tensor("y", (2, 3), np.float32)
    body = b.subgraph("branch")
    bx = body.input("x", (2, 3), np.float32)
    by = body.tensor("y", (2, 3), np.float32)
    if recursive:  # the branch runs WHILE with itself as the body
        body.op(BuiltinOperator.WHILE, [bx], [by], WhileOptions(cond_subgraph_index=1, body_subgraph_index=1))
    else:
        body.op(BuiltinOperator.ADD, [bx, bx], [by], AddOptions())
    body.output(by)
    b.op(BuiltinOperator.IF, [cond, x], [y], IfOptions(then_subgraph_index=then_index, else_subgraph_index=1))
    b.output(y)
    if signature_subgraph is not None:
        b.add_signature("sig", signature_subgraph)
    return b.finish()


def test_quantization_parameters_must_fit_the_shape():
    from harness import QuantParams
    b = TfliteBuilder()
    x = b.input("x", (1, 4, 4, 3), np.float32)
    # Per-channel along dimension 3 (stored: 3 is not the default 0), extent 3, three scales: valid.
    b.const("w", np.ones((2, 3, 3, 3), np.int8), quant=QuantParams([0.1, 0.2, 0.3], 0, 3))
    y = b.tensor("y", (1, 4, 4, 3), np.float32)
    b.op(BuiltinOperator.ABS, [x], [y])
    b.output(y)
    data = b.finish()
    assert read_model(data).subgraphs[0].tensors[1].quantization.quantized_dimension == 3
    q = tflite.Model.GetRootAs(data, 0).Subgraphs(0).Tensors(1).Quantization()
    qdim = vtable_field(q, 6)
    assert "quantized dimension 7 outside its rank-4 shape" in assert_format_error(patched(data, qdim, "<i", 7))
    assert "3 per-channel scales along dimension 0 of extent 2" in assert_format_error(
        patched(data, qdim, "<i", 0))
    zero_points = q._tab.Vector(q._tab.Offset(10)) - 4
    assert "3 quantization scales but 2 zero points" in assert_format_error(patched(data, zero_points, "<I", 2))


def test_control_flow_subgraph_indices_checked():
    assert len(read_model(control_flow_model(1)).subgraphs) == 2
    assert "then_subgraph_index 5" in assert_format_error(control_flow_model(5))
    assert "recursion" in assert_format_error(control_flow_model(1, recursive=True))


def test_overlapping_vectors_cannot_blow_up_decoding():
    # Point every tensor's shape at one long vector: each claim alone fits in the file, all together do not.
    b = TfliteBuilder()
    x = b.input("x", (1, 2, 3), np.float32)
    prev = x
    for k in range(60):
        t = b.tensor(f"t{k}", (1, 2, 3), np.float32)
        b.op(BuiltinOperator.ABS, [prev], [t])
        prev = t
    b.const("padding", np.zeros(5000, np.float32))  # written first, so it lies after every shape vector
    b.output(prev)
    data = b.finish()
    read_model(data)  # fine as written: every shape has its own bytes
    sg = tflite.Model.GetRootAs(data, 0).Subgraphs(0)
    t0 = sg.Tensors(0)
    target = t0._tab.Vector(t0._tab.Offset(4)) - 4  # tensor 0's shape: the highest-addressed one
    out = bytearray(data)
    struct.pack_into("<I", out, target, (len(data) - target) // 4 - 1)  # as long as the file allows
    patched_tensors = 0
    for k in range(1, sg.TensorsLength()):
        t = sg.Tensors(k)
        field = t._tab.Pos + t._tab.Offset(4)
        if field < target:  # flatbuffer offsets only point forward
            struct.pack_into("<I", out, field, target - field)
            patched_tensors += 1
    assert patched_tensors >= 50
    assert "more than the file can hold" in assert_format_error(bytes(out))


@settings(max_examples=200, deadline=1000)
@given(data=st.data())
def test_random_mutations_decode_or_raise_format_error(data):
    buf = bytearray(GOOD)
    for _ in range(data.draw(st.integers(1, 8), label="mutations")):
        buf[data.draw(st.integers(0, len(buf) - 1), label="pos")] = data.draw(st.integers(0, 255), label="byte")
    try:
        model = read_model(bytes(buf))
    except ModelFormatError as e:
        assert "\n" not in str(e)
    else:
        assert model.subgraphs  # a mutation the format cannot notice (a weight byte, a name)


# -- models written by the TensorFlow converter -------------------------------------------------------
FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "examples" / "models"
TF_MODELS = sorted(FIXTURES.glob("*.tflite"))


def test_fixture_models_are_present():
    # The fixtures are committed; without them the parametrized tests below would silently run nothing.
    assert len(TF_MODELS) >= 10, f"expected the committed fixture models in {FIXTURES}"


@pytest.mark.parametrize("path", TF_MODELS, ids=lambda p: p.stem)
def test_tf_converted_models_decode_and_their_truncations_fail(path):
    data = path.read_bytes()
    model = read_model(path)
    assert model.subgraphs[0].operators
    assert read_model(data).subgraphs[0].operators == model.subgraphs[0].operators
    for n in range(0, len(data), max(1, len(data) // 150)):
        assert_format_error(data[:n])


@settings(max_examples=100, deadline=2000)
@given(data=st.data())
def test_mutations_of_a_control_flow_model(data):
    # gru_keras has WHILE subgraphs: mutations hit subgraph indexes, options and shared tensors.
    buf = bytearray((FIXTURES / "gru_keras.tflite").read_bytes())
    for _ in range(data.draw(st.integers(1, 6), label="mutations")):
        buf[data.draw(st.integers(0, len(buf) - 1), label="pos")] = data.draw(st.integers(0, 255), label="byte")
    try:
        read_model(bytes(buf))
    except ModelFormatError as e:
        assert "\n" not in str(e)


def test_zero_element_constant_with_an_empty_buffer_is_a_constant():
    """TensorFlow writes `tf.shape` of a scalar as an int32 [0] constant whose buffer has no bytes (Keras'
    GroupNormalization): read as a constant (an empty array), not as a tensor nothing writes (exit 2)."""
    b = TfliteBuilder()
    x = b.input("x", (2, 3), np.float32)
    shape = b.tensor("shape", (2,), np.int32)
    b.op(BuiltinOperator.CONCATENATION, [b.const("dims", np.array([3, 2], np.int32)),
                                         b.const("empty", np.zeros((0,), np.int32))], [shape],
         ConcatenationOptions(axis=0))
    y = b.tensor("y", (3, 2), np.float32)
    b.op(BuiltinOperator.RESHAPE, [x, shape], [y], ReshapeOptions())
    b.output(y)
    data = b.finish()
    empty = next(t for t in read_model(data).main.tensors if t.name == "empty")
    assert empty.data is not None and empty.data.shape == (0,)
    assert_parity(data, api_level=30, expect_ops=["RESHAPE"])


# -- the layouts other writers use, read as TFLite reads them ---------------------------------------------

def _writer_layout_model() -> TfliteBuilder:
    """SUB (41: below 127, where the `tflite` package's BuiltinCode() substitutes the deprecated field),
    DEQUANTIZE (6) of an int8 constant, and GELU (150: only builtin_code can hold it)."""
    b = TfliteBuilder()
    x = b.input("x", (1, 8), np.float32)
    w = b.const("w", RNG.integers(-128, 128, (1, 8)).astype(np.int8), quant=QuantParams(0.05, 3))
    wf = b.tensor("wf", (1, 8), np.float32)
    b.op(BuiltinOperator.DEQUANTIZE, [w], [wf], version=2)
    y = b.tensor("y", (1, 8), np.float32)
    b.op(BuiltinOperator.SUB, [x, wf], [y], SubOptions())
    z = b.tensor("z", (1, 8), np.float32)
    b.op(BuiltinOperator.GELU, [y], [z], GeluOptions())
    b.output(z)
    return b


@pytest.mark.parametrize("buffers_after", [False, True])
@pytest.mark.parametrize("opcode_fields", ["both", "builtin_only"])
def test_writer_layouts_read_op_for_op_as_tflite_reads_them(opcode_fields, buffers_after):
    from ai_edge_litert.interpreter import Interpreter
    data = _writer_layout_model().finish(opcode_fields=opcode_fields, buffers_after=buffers_after)
    ours = [BuiltinOperator(op.builtin_code).name for op in read_model(data).subgraphs[0].operators]
    interpreter = Interpreter(model_content=data)
    theirs = [d["op_name"] for d in interpreter._get_ops_details() if d["op_name"] != "DELEGATE"]
    assert ours == theirs == ["DEQUANTIZE", "SUB", "GELU"]
    assert_parity(data, api_level=30)


def test_builtin_code_only_is_not_read_as_add():
    # A writer that sets only builtin_code on a binary op: the tflite package's accessor returns the deprecated
    # field (0, ADD) for any code below 127; TFLite takes max(deprecated, builtin).
    data = _writer_layout_model().finish(opcode_fields="builtin_only")
    m = tflite.Model.GetRootAs(data, 0)
    assert [m.OperatorCodes(i).BuiltinCode() for i in range(3)] == [0, 0, 150]  # the accessor's answer
    assert [op.builtin_code for op in read_model(data).subgraphs[0].operators] == [6, 41, 150]


def test_deprecated_only_layout_reads_and_cannot_hold_large_codes():
    b = TfliteBuilder()
    x = b.input("x", (1, 4), np.float32)
    y = b.tensor("y", (1, 4), np.float32)
    b.op(BuiltinOperator.SUB, [x, x], [y], SubOptions())
    b.output(y)
    assert read_model(b.finish(opcode_fields="deprecated_only")).subgraphs[0].operators[0].builtin_code == 41
    with pytest.raises(ValueError, match="above 127"):
        _writer_layout_model().finish(opcode_fields="deprecated_only")


def test_custom_options_stored_after_the_flatbuffer():
    def model(after: bool) -> bytes:
        b = TfliteBuilder()
        x = b.input("x", (1, 4), np.float32)
        y = b.tensor("y", (1, 4), np.float32)
        b.op(BuiltinOperator.CUSTOM, [x], [y], custom_code="MyOp", custom_options=bytes(range(40)))
        b.output(y)
        return b.finish(buffers_after=after)
    inline, after = model(False), model(True)
    for data in (inline, after):
        assert read_model(data).subgraphs[0].operators[0].custom_options == bytes(range(40))
    # offset/size pointing past the end of the file: one line
    assert "past the end" in assert_format_error(after[:-30])


@pytest.mark.parametrize("version", [0, 2, 4])
def test_schema_versions_tflite_refuses_are_refused(version):
    data = bytearray(GOOD)
    m = tflite.Model.GetRootAs(data, 0)
    struct.pack_into("<I", data, m._tab.Offset(4) + m._tab.Pos, version)
    assert f"schema version {version}" in assert_format_error(bytes(data))
