"""The .nnapi file format: round trips, zero-copy weights, alignment, and hostile files."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import nnconv
from harness import single_op_model
from nnconv.errors import ModelFormatError, NnconvError
from nnconv.runtime.executor import Executor
from nnconv.nnapi import serialize
from nnconv.nnapi.builder import ModelBuilder
from nnconv.nnapi.enums import FuseCode, OperandLifeTime, OperandType, OperationType, PaddingCode
from nnconv.nnapi.model import SymmPerChannelQuantParams
from nnconv.nnapi.program import ConvertedModel, IoTensor
from nnconv.nnapi.validate import validate_model
from nnconv.nnapi.fbs.NnapiFile import NnapiFile as FbNnapiFile
from nnconv.parity import random_inputs
from nnconv.tflite.options import Conv2DOptions
from nnconv.tflite.schema_enums import BuiltinOperator, Padding

RNG = np.random.default_rng(11)


def float_conv() -> bytes:
    w = RNG.standard_normal((5, 3, 2, 3)).astype(np.float32)
    b = RNG.standard_normal(5).astype(np.float32)
    opts = Conv2DOptions(padding=Padding.SAME, stride_w=1, stride_h=1, fused_activation_function=1)
    return single_op_model(BuiltinOperator.CONV_2D, [("x", (2, 9, 7, 3), np.float32), ("w", w), ("b", b)],
                           [("y", (2, 9, 7, 5), np.float32)], opts)


def int8_per_channel_conv() -> ConvertedModel:
    """A per-channel int8 CONV_2D built directly in NNAPI IR (does not depend on a lowering rule)."""
    mb = ModelBuilder()
    g = mb.main
    scales = (0.02, 0.03, 0.015, 0.05)
    x = g.add_tensor(OperandType.TENSOR_QUANT8_ASYMM_SIGNED, (1, 7, 6, 5), scale=0.05, zero_point=-3, name="x")
    w = g.add_constant(OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL,
                       RNG.integers(-127, 128, (4, 3, 3, 5)).astype(np.int8),
                       channel_quant=SymmPerChannelQuantParams(0, scales), name="w")
    b = g.add_constant(OperandType.TENSOR_INT32, RNG.integers(-500, 500, 4).astype(np.int32), name="b")
    y = g.add_tensor(OperandType.TENSOR_QUANT8_ASYMM_SIGNED, (1, 7, 6, 4), scale=0.2, zero_point=5, name="y")
    g.add_operation(OperationType.CONV_2D, [x, w, b, g.add_scalar(int(PaddingCode.SAME)), g.add_scalar(1),
                                            g.add_scalar(1), g.add_scalar(int(FuseCode.RELU))], [y], source_op=0)
    g.set_io([x], [y])
    model = mb.finish()
    validate_model(model)
    return ConvertedModel(model=model, inputs=[IoTensor("x", 0, "int8", (1, 7, 6, 5), 0, 0.05, -3)],
                          outputs=[IoTensor("y", 3, "int8", (1, 7, 6, 4), 0, 0.2, 5)], api_level=30,
                          tflite_ops=[0])


def converted_of(make, level: int, options=None) -> ConvertedModel:
    made = make()
    if isinstance(made, ConvertedModel):
        return made
    return nnconv.convert(made, api_level=level, options=options).converted


def assert_same_ir(a: nnconv.nnapi.model.Model, b: nnconv.nnapi.model.Model) -> None:
    assert len(a.subgraphs()) == len(b.subgraphs())
    for sa, sb in zip(a.subgraphs(), b.subgraphs()):
        assert sa.operands == sb.operands
        assert sa.operations == sb.operations
        assert sa.input_indexes == sb.input_indexes and sa.output_indexes == sb.output_indexes
    assert bytes(a.operand_values) == bytes(b.operand_values)
    assert [bytes(memoryview(p).cast("B")) for p in a.pools] == [bytes(p) for p in b.pools]
    assert a.relax_computation_float32_to_float16 == b.relax_computation_float32_to_float16


@pytest.mark.parametrize("make,level,relax", [
    pytest.param(float_conv, 27, False, id="float-api27"),
    pytest.param(float_conv, 30, True, id="float-api30-relax"),
    pytest.param(int8_per_channel_conv, 30, False, id="int8-per-channel-api30"),
])
def test_round_trip_runs_bit_identically(tmp_path, make, level, relax):
    converted = converted_of(make, level, nnconv.ConversionOptions(relax_float32_to_float16=relax))
    path = tmp_path / "m.nnapi"
    serialize.save(path, [converted])
    loaded = serialize.load(path)
    assert loaded.api_level == level and loaded.plan is None and loaded.producer.startswith("nnconv ")
    (back,) = loaded.partitions
    assert_same_ir(converted.model, back.model)
    assert back.inputs == converted.inputs and back.outputs == converted.outputs
    assert (back.api_level, back.tflite_ops, back.subgraph) == (converted.api_level, converted.tflite_ops,
                                                               converted.subgraph)
    feed = random_inputs(converted.inputs, 3)
    want, got = Executor(converted).run(feed), Executor(back).run(feed)
    assert want.keys() == got.keys()
    for k in want:
        assert want[k].dtype == got[k].dtype
        assert want[k].tobytes() == got[k].tobytes()


def test_per_channel_params_survive(tmp_path):
    converted = int8_per_channel_conv()
    serialize.save(tmp_path / "q.nnapi", [converted])
    back = serialize.load(tmp_path / "q.nnapi").partitions[0]
    cq = [od.channel_quant for od in back.model.main.operands if od.channel_quant is not None]
    assert cq and cq[0].channel_dim == 0
    np.testing.assert_array_equal(np.float32(cq[0].scales), np.float32([0.02, 0.03, 0.015, 0.05]))


def test_pools_are_zero_copy_views_of_the_mapping(tmp_path):
    converted, _ = nnconv.convert(float_conv(), api_level=30)
    serialize.save(tmp_path / "m.nnapi", [converted])
    loaded = serialize.load(tmp_path / "m.nnapi")
    model = loaded.partitions[0].model
    whole = np.frombuffer(loaded.buffer, dtype=np.uint8)
    assert model.pools
    for pool in model.pools:
        assert np.shares_memory(pool, whole)
        assert not pool.flags.writeable
    refs = [od for od in model.main.operands if od.lifetime is OperandLifeTime.CONSTANT_REFERENCE]
    assert refs
    for od in refs:
        assert np.shares_memory(model.constant_value(od), whole)


def test_every_pool_is_64_byte_aligned(tmp_path):
    # Two partitions with several pools each, so pools follow unaligned pool sizes (360 bytes, ...).
    a, _ = nnconv.convert(float_conv(), api_level=30)
    b = int8_per_channel_conv()
    path = tmp_path / "m.nnapi"
    serialize.save(path, [a, b, a])
    data = path.read_bytes()
    root = FbNnapiFile.GetRootAs(data, 0)
    spans = []
    for k in range(root.PartitionsLength()):
        m = root.Partitions(k).Model()
        spans += [(m.Pools(i).Offset(), m.Pools(i).Size()) for i in range(m.PoolsLength())]
    assert len(spans) >= 3
    for off, size in spans:
        assert off % 64 == 0
        assert off + size <= len(data)
    loaded = serialize.load(path)
    for part in loaded.partitions:
        for pool in part.model.pools:
            assert pool.ctypes.data % 64 == 0  # the mapping is page aligned, so addresses are too


def test_partitions_and_plan_round_trip(tmp_path):
    a, _ = nnconv.convert(float_conv(), api_level=29)
    b, _ = nnconv.convert(float_conv(), api_level=29)
    b.tflite_ops, b.subgraph = [3, 4], 0
    plan = {"partitions": [{"ops": [0]}, {"ops": [3, 4]}], "cpu_ops": [1, 2], "note": "ünïcode"}
    serialize.save(tmp_path / "p.nnapi", [a, b], plan=plan)
    loaded = serialize.load(tmp_path / "p.nnapi")
    assert loaded.plan == plan
    assert [p.tflite_ops for p in loaded.partitions] == [a.tflite_ops, [3, 4]]


# -- hostile files ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def good_file(tmp_path_factory) -> bytes:
    converted = int8_per_channel_conv()
    path = tmp_path_factory.mktemp("nnapi") / "good.nnapi"
    serialize.save(path, [converted], plan={"k": [1, 2]})
    return path.read_bytes()


def load_bytes(tmp_path, data: bytes, name: str = "bad.nnapi"):
    path = tmp_path / name
    path.write_bytes(data)
    return serialize.load(path)


def assert_format_error(tmp_path, data: bytes) -> str:
    with pytest.raises(ModelFormatError) as e:
        load_bytes(tmp_path, data)
    msg = str(e.value)
    assert "\n" not in msg and msg
    return msg


def test_good_file_loads(tmp_path, good_file):
    assert load_bytes(tmp_path, good_file).plan == {"k": [1, 2]}


def test_every_truncation_is_refused(tmp_path, good_file):
    # Any prefix loses either part of the flatbuffer or (part of) a pool.
    for n in list(range(0, 200)) + list(range(200, len(good_file), 7)) + [len(good_file) - 1]:
        assert_format_error(tmp_path, good_file[:n])


def test_random_bytes_refused(tmp_path):
    rng = np.random.default_rng(5)
    for n in (0, 3, 8, 64, 1000, 5000):
        assert_format_error(tmp_path, rng.integers(0, 256, n, dtype=np.uint8).tobytes())
        # The right identifier in front of garbage must not get further than a one-line error.
        data = bytearray(rng.integers(0, 256, max(n, 8), dtype=np.uint8).tobytes())
        data[4:8] = b"NNAP"
        assert_format_error(tmp_path, bytes(data))


def test_wrong_identifier(tmp_path, good_file):
    msg = assert_format_error(tmp_path, good_file[:4] + b"ABCD" + good_file[8:])
    assert "file identifier is b'ABCD'" in msg
    msg = assert_format_error(tmp_path, good_file[:4] + b"TFL3" + good_file[8:])
    assert "is a TFLite model, not an .nnapi file" in msg


def test_save_replaces_atomically(tmp_path, good_file):
    path = tmp_path / "m.nnapi"
    path.write_bytes(good_file)
    before = serialize.load(path)  # keeps the old file mapped
    converted, _ = nnconv.convert(float_conv(), api_level=28)
    serialize.save(path, [converted])
    assert serialize.load(path).api_level == 28
    assert before.api_level == 30 and bytes(before.partitions[0].model.pools[0])  # old mapping still valid
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.nnapi"]  # no temporary left behind
    with pytest.raises(NnconvError, match="does not exist"):
        serialize.save(tmp_path / "missing-dir" / "m.nnapi", [converted])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.nnapi"]


def test_unknown_format_version(tmp_path, good_file):
    data = bytearray(good_file)
    root = FbNnapiFile.GetRootAs(bytes(data), 0)
    o = root._tab.Offset(4)  # format_version
    struct.pack_into("<I", data, root._tab.Pos + o, 99)
    assert "format version 99" in assert_format_error(tmp_path, bytes(data))


def test_huge_pool_size_refused(tmp_path, good_file):
    root = FbNnapiFile.GetRootAs(good_file, 0)
    span = root.Partitions(0).Model().Pools(0)
    data = bytearray(good_file)
    struct.pack_into("<Q", data, span._tab.Pos + 8, 2**62)
    assert "pool 0" in assert_format_error(tmp_path, bytes(data))
    struct.pack_into("<QQ", data, span._tab.Pos, 2**40 + 64, 16)
    assert_format_error(tmp_path, bytes(data))


def test_huge_vector_lengths_refused(tmp_path, good_file):
    root = FbNnapiFile.GetRootAs(good_file, 0)
    sg = root.Partitions(0).Model().Main()
    od = sg.Operands(1)
    targets = {
        "operands": sg._tab.Vector(sg._tab.Offset(4)) - 4,
        "dimensions": od._tab.Vector(od._tab.Offset(6)) - 4,
        "partitions": root._tab.Vector(root._tab.Offset(10)) - 4,
    }
    for what, pos in targets.items():
        for n in (2**31 - 1, 2**32 - 1, len(good_file)):
            data = bytearray(good_file)
            struct.pack_into("<I", data, pos, n)
            assert_format_error(tmp_path, bytes(data))


def test_out_of_range_operand_index_refused(tmp_path, good_file):
    root = FbNnapiFile.GetRootAs(good_file, 0)
    op = root.Partitions(0).Model().Main().Operations(0)
    pos = op._tab.Vector(op._tab.Offset(6))  # inputs[0]
    data = bytearray(good_file)
    struct.pack_into("<I", data, pos, 10_000)
    assert "out of range" in assert_format_error(tmp_path, bytes(data))


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(ModelFormatError, match="no such file"):
        serialize.load(tmp_path / "absent.nnapi")
    with pytest.raises(ModelFormatError):
        serialize.load(tmp_path)


@settings(max_examples=150, deadline=2000, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_mutations_load_or_raise_format_error(tmp_path, good_file, data):
    buf = bytearray(good_file)
    n = data.draw(st.integers(1, 8), label="mutations")
    for _ in range(n):
        pos = data.draw(st.integers(0, len(buf) - 1), label="pos")
        buf[pos] = data.draw(st.integers(0, 255), label="byte")
    try:
        loaded = serialize.loads(bytes(buf), "mutated.nnapi")
    except ModelFormatError as e:
        assert "\n" not in str(e)
    else:  # a mutation the format cannot notice (a weight byte, a name): the model is still valid
        assert loaded.partitions


def test_io_shape_must_fit_its_operand(tmp_path, good_file):
    root = FbNnapiFile.GetRootAs(good_file, 0)
    io = root.Partitions(0).Inputs(0)
    pos = io._tab.Vector(io._tab.Offset(10))  # shape[0] of input 'x' (1, 7, 6, 5)
    data = bytearray(good_file)
    struct.pack_into("<i", data, pos + 4, 8)
    assert "has shape [1, 8, 6, 5], but its operand has dimensions [1, 7, 6, 5]" in assert_format_error(
        tmp_path, bytes(data))


def test_committed_bindings_match_the_schema(tmp_path):
    import pathlib
    import shutil
    import subprocess
    root = pathlib.Path(__file__).resolve().parent.parent
    committed = root / "nnconv" / "nnapi" / "fbs"
    flatc = shutil.which("flatc")
    if flatc is None:
        pytest.skip("flatc is not installed (Debian: flatbuffers-compiler); the bindings are committed")
    version = subprocess.run([flatc, "--version"], capture_output=True, text=True).stdout.strip()
    if version not in (committed / "Model.py").read_text().splitlines()[0]:
        pytest.skip(f"the committed bindings come from another flatc than {version!r}")
    subprocess.run(["sh", str(root / "schema" / "generate.sh"), str(tmp_path)], check=True, timeout=120)
    fresh = tmp_path / "nnconv" / "nnapi" / "fbs"
    names = sorted(p.name for p in committed.glob("*.py"))
    assert names == sorted(p.name for p in fresh.glob("*.py"))
    for name in names:
        assert (committed / name).read_text() == (fresh / name).read_text(), f"{name} is stale: run schema/generate.sh"


def test_saving_is_deterministic(tmp_path):
    # Reproducible builds: the same conversion gives the same bytes, whatever the pools' memory addresses.
    model = float_conv()
    a, _ = nnconv.convert(model, api_level=30)
    b, _ = nnconv.convert(model, api_level=30)
    serialize.save(tmp_path / "a.nnapi", [a])
    serialize.save(tmp_path / "b.nnapi", [b])
    assert (tmp_path / "a.nnapi").read_bytes() == (tmp_path / "b.nnapi").read_bytes()
