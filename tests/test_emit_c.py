"""`convert --emit-c`: the generated NDK C source and header compile against the NDK's declarations (nnconv's
shipped header) and say what the file says; tests/test_check_c.py runs them."""

from __future__ import annotations

import pathlib
import re
import shutil
import subprocess

import numpy as np
import pytest

from nnconv.nnapi import serialize
from nnconv.nnapi.builder import ModelBuilder
from nnconv.nnapi.emit_c import c_float, c_prefix_for, check_c_prefix, emit_c, emit_header
from nnconv.nnapi.enums import FuseCode, OperandLifeTime, OperandType, OperationType
from nnconv.nnapi.program import ConvertedModel, IoTensor
from nnconv.nnapi.ndk.check import INCLUDE_DIR
from nnconv.nnapi.validate import validate_model
from nnconv.errors import NnconvError
from test_serialize import int8_per_channel_conv

CC = shutil.which("cc")
needs_cc = pytest.mark.skipif(CC is None, reason="no C compiler `cc` on PATH (the CI images and dev machines have one)")


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
    return emit_c(loaded, "nnconv", "m.nnapi", "m.h"), loaded


def cc_syntax(source: str, tmp_path: pathlib.Path, header: str) -> subprocess.CompletedProcess:
    (tmp_path / "m.h").write_text(header)
    path = tmp_path / "m.c"
    path.write_text(source)
    return subprocess.run([CC, "-fsyntax-only", "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror",
                           f"-I{INCLUDE_DIR}", str(path)], capture_output=True, text=True, timeout=60)


@needs_cc
def test_generated_c_is_valid_c99(emitted, tmp_path):
    source, loaded = emitted
    result = cc_syntax(source, tmp_path, emit_header(loaded, "nnconv", "m.nnapi"))
    assert result.returncode == 0, result.stderr


@needs_cc
def test_syntax_check_catches_a_wrong_call(emitted, tmp_path):
    # The check is live: a misspelt NDK function or operation name fails to compile.
    source, loaded = emitted
    header = emit_header(loaded, "nnconv", "m.nnapi")
    broken = source.replace("ANeuralNetworksModel_addOperation(", "ANeuralNetworksModel_addOperations(", 1)
    assert cc_syntax(broken, tmp_path, header).returncode != 0
    misnamed = source.replace("ANEURALNETWORKS_IF,", "ANEURALNETWORKS_IF_ELSE,")
    assert cc_syntax(misnamed, tmp_path, header).returncode != 0


def test_header_declares_each_partition_under_the_prefix(emitted):
    _, loaded = emitted
    header = emit_header(loaded, "mnv2", "m.nnapi")
    for decl in ("#ifndef MNV2_NNAPI_H", "#define MNV2_PARTITION_COUNT 2", "#define MNV2_P0_MODEL_COUNT 3",
                 "#define MNV2_P1_MODEL_COUNT 1",
                 "int mnv2_p0_create(const ANeuralNetworksMemory* file, "
                 "ANeuralNetworksModel* models[MNV2_P0_MODEL_COUNT]);",
                 "void mnv2_p1_free(ANeuralNetworksModel* models[MNV2_P1_MODEL_COUNT]);"):
        assert decl in header


@pytest.mark.parametrize("path,prefix", [("models/mobilenet_v2_float.tflite", "mobilenet_v2_float"),
                                         ("a/mobilenet-v2.int8.tflite", "mobilenet_v2_int8"),
                                         ("3d_unet.tflite", "m_3d_unet"), ("__init__.tflite", "init"),
                                         ("---.tflite", "model")])
def test_default_prefix_is_the_file_name_as_a_c_identifier(path, prefix):
    assert c_prefix_for(path) == prefix


@pytest.mark.parametrize("prefix", ["9lives", "has-dash", "", "_reserved", "spa ce"])
def test_a_prefix_that_is_not_a_c_identifier_is_refused(prefix):
    with pytest.raises(NnconvError, match="is not a C identifier"):
        check_c_prefix(prefix)


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
    assert '#include "m.h"' in source and "int nnconv_p1_create(" in source


@pytest.mark.parametrize("value,text", [(0.0, "0.0f"), (0.5, "0.5f"), (1e-8, "1e-08f"), (0.1 + 1e-9, "0.1f"), (16777217.0, "1.6777216e+07f"),
                                        (float("inf"), "INFINITY"), (3.0, "3.0f")])
def test_c_float_literals_round_trip_float32(value, text):
    assert c_float(value) == text
    if np.isfinite(value):
        assert np.float32(float(text.rstrip("f"))) == np.float32(value)
