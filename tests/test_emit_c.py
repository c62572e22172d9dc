"""`convert --emit-c`: the generated NDK C source compiles against the NDK's declarations and matches the file."""

from __future__ import annotations

import pathlib
import re
import shutil
import subprocess

import numpy as np
import pytest

from nnconv.nnapi import serialize
from nnconv.nnapi.builder import ModelBuilder
from nnconv.nnapi.emit_c import c_float, emit_c
from nnconv.nnapi.enums import FuseCode, OperandLifeTime, OperandType, OperationType
from nnconv.nnapi.program import ConvertedModel, IoTensor
from nnconv.nnapi.validate import validate_model
from test_serialize import int8_per_channel_conv

STUB = pathlib.Path(__file__).resolve().parent / "ndk_stub"
GCC = shutil.which("gcc")
needs_gcc = pytest.mark.skipif(GCC is None, reason="gcc is not installed (CI images have it)")


def if_model() -> ConvertedModel:
    """IF(cond, then, else, x): then adds a 168-byte constant (a pool), else doubles x; relaxed to fp16."""
    mb = ModelBuilder()
    then_idx, then_sg = mb.add_referenced()
    a = then_sg.add_tensor(OperandType.TENSOR_FLOAT32, (6, 7), name="a")
    c = then_sg.add_constant(OperandType.TENSOR_FLOAT32, np.arange(42, dtype=np.float32).reshape(6, 7), name="c")
    b = then_sg.add_tensor(OperandType.TENSOR_FLOAT32, (6, 7), name="b")
    then_sg.add_operation(OperationType.ADD, [a, c, then_sg.add_scalar(int(FuseCode.NONE))], [b])
    then_sg.set_io([a], [b])
    else_idx, else_sg = mb.add_referenced()
    a2 = else_sg.add_tensor(OperandType.TENSOR_FLOAT32, (6, 7), name="a")
    b2 = else_sg.add_tensor(OperandType.TENSOR_FLOAT32, (6, 7), name="b")
    else_sg.add_operation(OperationType.ADD, [a2, a2, else_sg.add_scalar(int(FuseCode.RELU))], [b2])
    else_sg.set_io([a2], [b2])
    g = mb.main
    cond = g.add_tensor(OperandType.TENSOR_BOOL8, (1,), name="cond")
    x = g.add_tensor(OperandType.TENSOR_FLOAT32, (6, 7), name="x")
    g.add_no_value(name="unused optional")
    y = g.add_tensor(OperandType.TENSOR_FLOAT32, (6, 7), name="y")
    g.add_operation(OperationType.IF, [cond, g.add_subgraph_ref(then_idx), g.add_subgraph_ref(else_idx), x], [y])
    g.set_io([cond, x], [y])
    model = mb.finish()
    model.relax_computation_float32_to_float16 = True
    validate_model(model)
    return ConvertedModel(model=model, inputs=[IoTensor("cond", 0, "bool", (1,)), IoTensor("x", 1, "float32", (6, 7))],
                          outputs=[IoTensor("y", 2, "float32", (6, 7))], api_level=30, tflite_ops=[0])


@pytest.fixture(scope="module")
def emitted(tmp_path_factory) -> tuple[str, serialize.NnapiFile]:
    d = tmp_path_factory.mktemp("emit")
    serialize.save(d / "m.nnapi", [if_model(), int8_per_channel_conv()])
    loaded = serialize.load(d / "m.nnapi")
    return emit_c(loaded, "m.nnapi"), loaded


def gcc_syntax(source: str, tmp_path: pathlib.Path, include: pathlib.Path = STUB) -> subprocess.CompletedProcess:
    path = tmp_path / "model.c"
    path.write_text(source)
    return subprocess.run([GCC, "-fsyntax-only", "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror",
                           f"-I{include}", str(path)], capture_output=True, text=True, timeout=60)


@needs_gcc
def test_generated_c_is_valid_c99(emitted, tmp_path):
    source, _ = emitted
    result = gcc_syntax(source, tmp_path)
    assert result.returncode == 0, result.stderr


@needs_gcc
def test_syntax_check_catches_a_wrong_call(emitted, tmp_path):
    # The check is live: a misspelt NDK function or operation name fails to compile.
    source, _ = emitted
    broken = source.replace("ANeuralNetworksModel_addOperation(", "ANeuralNetworksModel_addOperations(", 1)
    assert gcc_syntax(broken, tmp_path).returncode != 0
    assert gcc_syntax(source.replace("ANEURALNETWORKS_IF,", "ANEURALNETWORKS_IF_ELSE,"), tmp_path).returncode != 0


def test_weights_come_from_the_file_at_pool_offsets(emitted):
    source, loaded = emitted
    calls = re.findall(r"setOperandValueFromMemory\(model, (\d+), file, (\d+)u, (\d+)u\)", source)
    expected = []
    for k, part in enumerate(loaded.partitions):
        for sg in part.model.subgraphs():
            for i, od in enumerate(sg.operands):
                if od.lifetime is OperandLifeTime.CONSTANT_REFERENCE:
                    off = loaded.pool_spans[k][od.location.pool_index][0] + od.location.offset
                    expected.append((str(i), str(off), str(od.location.length)))
    assert expected and calls == expected
    data = bytes(loaded.buffer)
    for _, off, length in calls:  # the bytes at those offsets are the weights
        assert int(off) % 64 == 0 and int(off) + int(length) <= len(data)


def test_every_operand_operation_and_parameter_is_emitted(emitted):
    source, loaded = emitted
    n_operands = sum(len(sg.operands) for p in loaded.partitions for sg in p.model.subgraphs())
    n_operations = sum(len(sg.operations) for p in loaded.partitions for sg in p.model.subgraphs())
    assert source.count("ANeuralNetworksModel_addOperand(model, &type)") == n_operands
    assert source.count("ANeuralNetworksModel_addOperation(model, ") == n_operations
    assert "ANEURALNETWORKS_TENSOR_QUANT8_SYMM_PER_CHANNEL" in source
    assert "setOperandSymmPerChannelQuantParams(model, 1, &channel)" in source
    assert "{0.02f, 0.03f, 0.015f, 0.05f}" in source
    assert "setOperandValue(model, 2, NULL, 0)" in source  # the NO_VALUE operand
    assert source.count("setOperandValueFromModel(model, ") == 2
    assert source.count("relaxComputationFloat32toFloat16(model, true)") == 3  # partition 0's three subgraphs
    # Referenced subgraphs are finished before the main model that references them.
    assert "static const int order[NNCONV_P0_MODEL_COUNT] = {1, 2, 0};" in source
    assert "#define NNCONV_P1_MODEL_COUNT 1" in source


@pytest.mark.parametrize("value,text", [(0.0, "0.0f"), (0.5, "0.5f"), (1e-8, "1e-08f"), (0.1 + 1e-9, "0.1f"), (16777217.0, "1.6777216e+07f"),
                                        (float("inf"), "INFINITY"), (3.0, "3.0f")])
def test_c_float_literals_round_trip_float32(value, text):
    assert c_float(value) == text
    if np.isfinite(value):
        assert np.float32(float(text.rstrip("f"))) == np.float32(value)


FIXTURE = pathlib.Path(__file__).resolve().parent.parent / "examples" / "models" / "mobilenet_v3_int8.tflite"


@needs_gcc
def test_generated_c_for_a_converted_network(tmp_path):
    # A TF-converted int8 network (per-channel weights, many operation types) through the CLI path.
    from click.testing import CliRunner
    from nnconv.cli import main
    out, c = tmp_path / "m.nnapi", tmp_path / "m.c"
    result = CliRunner().invoke(main, ["convert", str(FIXTURE), "-o", str(out), "--emit-c", str(c)])
    assert result.exit_code == 0, result.stderr
    loaded = serialize.load(out)
    ops = sorted({op.type for p in loaded.partitions for sg in p.model.subgraphs() for op in sg.operations})
    # The stub lists only the test models' operations: declare this network's ones the same way.
    stub = (STUB / "android" / "NeuralNetworks.h").read_text()
    body = "".join(f"  ANEURALNETWORKS_{t.name} = {int(t)},\n" for t in ops)
    stub = re.sub(r"(typedef enum \{\n)(  ANEURALNETWORKS_ADD = 0,.*?)(\} OperationCode;)",
                  lambda m: m.group(1) + body + m.group(3), stub, flags=re.S)
    include = tmp_path / "include"
    (include / "android").mkdir(parents=True)
    (include / "android" / "NeuralNetworks.h").write_text(stub)
    source = c.read_text()
    assert "setOperandSymmPerChannelQuantParams" in source
    result = gcc_syntax(source, tmp_path, include)
    assert result.returncode == 0, result.stderr[:2000]
