"""Seed models of the mutation fuzzer (`tests/fuzzing.py`): small models built with our own builder that
reach every path of the TFLite reader and of the lowering's input checks, plus a few committed fixtures.

Each seed is a valid model that converts at its API level; mutants of it then exercise the readers on
corrupt bytes and the validation on corrupt numbers. Paths covered: sparse weights (DENSIFY, block CSR),
float16 weights (DEQUANTIZE), hybrid int8 weights, per-channel int8 convolution with an int32 bias, int8
MEAN (shift counts), WHILE and IF subgraphs, signature defs, a custom op in the middle, variable tensors.
"""

from __future__ import annotations

import pathlib
from dataclasses import dataclass
from typing import Callable

import numpy as np

from nnconv.tflite.builder import QuantParams, TfliteBuilder
from nnconv.tflite.ir import DimensionMetadata, Sparsity
from nnconv.tflite.options import (AddOptions, Conv2DOptions, FullyConnectedOptions, IfOptions, LessOptions,
                                   MulOptions, ReducerOptions, SoftmaxOptions, WhileOptions)
from nnconv.tflite.schema_enums import BuiltinOperator, Padding

F32 = np.float32
FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "examples" / "models"


@dataclass(frozen=True)
class Seed:
    name: str
    build: Callable[[], bytes]
    api_level: int = 30
    fold_weights: bool = False
    partial: bool = False  # convert with --allow-partial (a custom op stays on the CPU) and run partition 0


def _rng(tag: str) -> np.random.Generator:
    return np.random.default_rng(sum(tag.encode()))


def sparse_fc() -> bytes:
    """DENSIFY of 1x4-block CSR weights feeding FULLY_CONNECTED with a bias (TFLite's sparse FC format)."""
    rng = _rng("sparse")
    o, i, block = 6, 8, 4
    dense = rng.standard_normal((o, i)).astype(F32)
    blocks = dense.reshape(o, i // block, block)
    keep = rng.random((o, i // block)) < 0.6
    rows, cols = np.nonzero(keep)
    segs = np.concatenate([[0], np.cumsum(keep.sum(axis=1))])
    sp = Sparsity(traversal_order=(0, 1, 2), block_map=(1,),
                  dim_metadata=(DimensionMetadata(0, o),
                                DimensionMetadata(1, 0, tuple(int(s) for s in segs), tuple(int(c) for c in cols)),
                                DimensionMetadata(0, block)))
    b = TfliteBuilder()
    x = b.input("x", (2, i), F32)
    ws = b.const("w_sparse", blocks[rows, cols].reshape(-1), shape=(o, i), sparsity=sp)
    w = b.tensor("w", (o, i), F32)
    y = b.tensor("y", (2, o), F32)
    b.op(BuiltinOperator.DENSIFY, [ws], [w])
    b.op(BuiltinOperator.FULLY_CONNECTED, [x, w, b.const("bias", rng.standard_normal(o).astype(F32))], [y],
         FullyConnectedOptions())
    b.output(y)
    return b.finish()


def fp16_weights() -> bytes:
    """float16 constant -> DEQUANTIZE -> CONV_2D weights (what TFLite's float16 quantization writes)."""
    rng = _rng("fp16")
    b = TfliteBuilder()
    x = b.input("x", (1, 5, 5, 2), F32)
    w16 = b.const("w16", rng.standard_normal((3, 3, 3, 2)).astype(np.float16))
    w = b.tensor("w", (3, 3, 3, 2), F32)
    y = b.tensor("y", (1, 5, 5, 3), F32)
    b.op(BuiltinOperator.DEQUANTIZE, [w16], [w])
    b.op(BuiltinOperator.CONV_2D, [x, w, b.const("bias", rng.standard_normal(3).astype(F32))], [y],
         Conv2DOptions(padding=Padding.SAME, stride_w=1, stride_h=1))
    b.output(y)
    return b.finish()


def hybrid_fc() -> bytes:
    """Float input, int8 per-tensor weights (dynamic range), float bias; lowered with --fold-weights."""
    rng = _rng("hybrid")
    b = TfliteBuilder()
    x = b.input("x", (1, 6), F32)
    w = b.const("w", rng.integers(-127, 128, (4, 6)).astype(np.int8), quant=QuantParams(0.01, 0))
    y = b.tensor("y", (1, 4), F32)
    b.op(BuiltinOperator.FULLY_CONNECTED, [x, w, b.const("bias", rng.standard_normal(4).astype(F32))], [y],
         FullyConnectedOptions())
    b.output(y)
    return b.finish()


def int8_conv_mean() -> bytes:
    """int8 CONV_2D with per-channel weights and an int32 bias, then int8 MEAN over H, W (requantizing)."""
    rng = _rng("int8")
    b = TfliteBuilder()
    in_q, out_q = QuantParams(0.05, -3), QuantParams(0.25, 5)
    scales = [float(s) for s in rng.uniform(0.005, 0.03, 4)]
    x = b.input("x", (1, 6, 5, 3), np.int8, in_q)
    w = b.const("w", rng.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8),
                quant=QuantParams(scales, [0] * 4, quantized_dimension=0))
    bias = b.const("bias", rng.integers(-2000, 2000, 4).astype(np.int32),
                   quant=QuantParams([0.05 * s for s in scales], [0] * 4))
    c = b.tensor("c", (1, 6, 5, 4), np.int8, out_q)
    b.op(BuiltinOperator.CONV_2D, [x, w, bias], [c], Conv2DOptions(padding=Padding.SAME, stride_w=1, stride_h=1))
    m = b.tensor("m", (1, 4), np.int8, QuantParams(0.1, -2))
    b.op(BuiltinOperator.MEAN, [c, b.const("axes", np.array([1, 2], np.int32))], [m], ReducerOptions())
    b.output(m)
    return b.finish()


def if_branches() -> bytes:
    """IF(cond, x): then = x + a, else = x * b."""
    rng = _rng("if")
    shape = (2, 3)
    b = TfliteBuilder()
    cond = b.input("cond", (1,), np.bool_)
    x = b.input("x", shape, F32)
    y = b.tensor("y", shape, F32)
    then_sg = b.subgraph("then")
    tx, ty = then_sg.input("tx", shape, F32), then_sg.tensor("ty", shape, F32)
    then_sg.op(BuiltinOperator.ADD, [tx, then_sg.const("a", rng.standard_normal(shape).astype(F32))], [ty],
               AddOptions())
    then_sg.output(ty)
    else_sg = b.subgraph("else")
    ex, ey = else_sg.input("ex", shape, F32), else_sg.tensor("ey", shape, F32)
    else_sg.op(BuiltinOperator.MUL, [ex, else_sg.const("b", rng.standard_normal(shape).astype(F32))], [ey],
               MulOptions())
    else_sg.output(ey)
    b.op(BuiltinOperator.IF, [cond, x], [y], IfOptions(then_subgraph_index=b.subgraph_index(then_sg),
                                                       else_subgraph_index=b.subgraph_index(else_sg)))
    b.output(y)
    return b.finish()


def while_loop_with_signature() -> bytes:
    """WHILE(i, x): cond i < 3, body i + 1, x * 0.5; the model carries a signature def."""
    shape = (2, 2)
    b = TfliteBuilder()
    i, x = b.input("i", (1,), np.int32), b.input("x", shape, F32)
    i_out, x_out = b.tensor("i_out", (1,), np.int32), b.tensor("x_out", shape, F32)
    cond = b.subgraph("cond")
    ci, _ = cond.input("ci", (1,), np.int32), cond.input("cx", shape, F32)
    more = cond.tensor("more", (1,), np.bool_)
    cond.op(BuiltinOperator.LESS, [ci, cond.const("limit", np.array([3], np.int32))], [more], LessOptions())
    cond.output(more)
    body = b.subgraph("body")
    bi, bx = body.input("bi", (1,), np.int32), body.input("bx", shape, F32)
    bi2, bx2 = body.tensor("bi2", (1,), np.int32), body.tensor("bx2", shape, F32)
    body.op(BuiltinOperator.ADD, [bi, body.const("one", np.array([1], np.int32))], [bi2], AddOptions())
    body.op(BuiltinOperator.MUL, [bx, body.const("h", np.full(shape, 0.5, F32))], [bx2], MulOptions())
    body.output(bi2, bx2)
    b.op(BuiltinOperator.WHILE, [i, x], [i_out, x_out],
         WhileOptions(cond_subgraph_index=b.subgraph_index(cond), body_subgraph_index=b.subgraph_index(body)))
    b.output(i_out, x_out)
    b.add_signature("serving_default")
    return b.finish()


def uint8_softmax() -> bytes:
    """uint8 ADD (two zero points, requantization) then SOFTMAX: asymmetric per-tensor quantization."""
    b = TfliteBuilder()
    q = QuantParams(0.1, 128)
    x = b.input("x", (1, 10), np.uint8, q)
    s = b.tensor("s", (1, 10), np.uint8, QuantParams(0.2, 120))
    b.op(BuiltinOperator.ADD, [x, b.const("k", np.arange(10, dtype=np.uint8) * 20, quant=QuantParams(0.05, 7))],
         [s], AddOptions())
    y = b.tensor("y", (1, 10), np.uint8, QuantParams(1 / 256, 0))
    b.op(BuiltinOperator.SOFTMAX, [s], [y], SoftmaxOptions(beta=1.0))
    b.output(y)
    return b.finish()


def _fixture(name: str) -> Callable[[], bytes]:
    return lambda: (FIXTURES / name).read_bytes()


# Small committed fixtures that add real converter output: a custom op between builtins, Keras recurrent
# layers (the LSTM in float and full integer), an int8 MobileNetV2 (per-channel), its float16 and
# dynamic-range versions.
SEEDS: tuple[Seed, ...] = (
    Seed("sparse_fc", sparse_fc),
    Seed("fp16_weights", fp16_weights),
    Seed("hybrid_fc", hybrid_fc, api_level=29, fold_weights=True),
    Seed("int8_conv_mean", int8_conv_mean),
    Seed("if_branches", if_branches),
    Seed("while_signature", while_loop_with_signature),
    Seed("uint8_softmax", uint8_softmax, api_level=29),
    Seed("custom_op_middle", _fixture("custom_op_middle.tflite"), partial=True),
    Seed("lstm_keras", _fixture("lstm_keras.tflite")),
    Seed("lstm_keras_int8", _fixture("lstm_keras_int8.tflite")),
    Seed("mobilenet_v2_int8", _fixture("mobilenet_v2_int8.tflite")),
    Seed("mobilenet_v2_fp16", _fixture("mobilenet_v2_fp16.tflite")),
    Seed("mobilenet_v2_dynamic_range", _fixture("mobilenet_v2_dynamic_range.tflite"), fold_weights=True),
)
