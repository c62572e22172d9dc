"""The delegate's int8-to-uint8 conversion below API 30 (feature level < 4, no TENSOR_QUANT8_ASYMM_SIGNED), for
every op `NeedInt8Conversion` lists (`nnconv/delegate/node_facts.py`: the 45 ops converted by their input 0,
CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED with affine int8 weights, SELECT by its input 1; TRANSPOSE_CONV
is in test_delegate_nn_ops.py).

At API 29 each op's int8 model must be taken and built with its int8 tensors as TENSOR_QUANT8_ASYMM, zero point
+ 128 (input 0, or every input for the ops AddOpsAndTensors converts whole, and every output), int8 constants
rewritten as uint8 (+128 on each value), and no TENSOR_QUANT8_SYMM anywhere (what an int8 tensor of an op not
listed becomes); from API 30 the same tensors are TENSOR_QUANT8_ASYMM_SIGNED with their own zero points. The
graph then runs on our executor and matches TFLite's int8 kernels (the executor adds 128 to the int8 inputs
and takes it off the outputs, as the delegate's Invoke does)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest

from harness import QuantParams, TfliteBuilder
from nnconv.delegate.node_facts import INT8_CONVERT_ALL_INPUTS, _INT8_CONVERTED_BY_INPUT0
from nnconv.tflite.options import (AddOptions, ArgMaxOptions, ArgMinOptions, BatchToSpaceNDOptions,
                                   ConcatenationOptions, Conv2DOptions, DepthToSpaceOptions, DepthwiseConv2DOptions,
                                   EqualOptions, ExpandDimsOptions, FullyConnectedOptions, GatherOptions,
                                   GreaterEqualOptions, GreaterOptions, HardSwishOptions, L2NormOptions,
                                   LeakyReluOptions, LessEqualOptions, LessOptions, MaximumMinimumOptions,
                                   MulOptions, NotEqualOptions, PadOptions, PadV2Options, Pool2DOptions,
                                   ReducerOptions, ReshapeOptions, ResizeBilinearOptions,
                                   ResizeNearestNeighborOptions, SelectOptions, SliceOptions, SoftmaxOptions,
                                   SpaceToBatchNDOptions, SpaceToDepthOptions, StridedSliceOptions, SubOptions,
                                   TileOptions, TopKV2Options, TransposeOptions)
from nnconv.tflite.schema_enums import BuiltinOperator as B
from nnconv.tflite.schema_enums import Padding

from delegate_kit import assert_verified, graph, verdict

S8 = "TENSOR_QUANT8_ASYMM_SIGNED"
U8 = "TENSOR_QUANT8_ASYMM"
QX = QuantParams(0.05, -7)  # the input's quantization in every model: zero point -7 -> 121 as uint8


@dataclass
class Case:
    """One int8 model of `op` (version as TFLite's converter writes it, op_version.cc) and, when parity needs
    them, the inputs to feed (distinct values where ties would make the result order-dependent)."""

    op: B
    build: Callable[[], bytes]
    inputs: Callable[[], dict] | None = None


def _rng(seed: int = 8) -> np.random.Generator:
    return np.random.default_rng(seed)


def unary(op: B, options=None, version: int = 2, shape=(2, 3, 4, 5), out_shape=None, out_q=QX, extra=()) -> Callable:
    """x (int8) [+ constant extra inputs] -> y (int8 or another type given as (dtype, quant))."""
    def build() -> bytes:
        b = TfliteBuilder()
        x = b.input("x", shape, np.int8, QX)
        ins = [x] + [b.const(name, value, quant=quant) for name, value, quant in extra]
        if isinstance(out_q, tuple):
            dtype, quant = out_q
        else:
            dtype, quant = np.int8, out_q
        y = b.tensor("y", out_shape or shape, dtype, quant)
        b.op(op, ins, [y], options, version=version)
        b.output(y)
        return b.finish()
    return build


def binary(op: B, options, version: int = 2, out=(np.int8, QX), second_const: bool = False,
           zq: QuantParams = QuantParams(0.04, 3)) -> Callable:
    """x, z (int8, z broadcast [4, 5], constant when `second_const`) -> y."""
    def build() -> bytes:
        b = TfliteBuilder()
        x = b.input("x", (2, 3, 4, 5), np.int8, QX)
        z = b.const("z", _rng(3).integers(-128, 128, (4, 5)).astype(np.int8), quant=zq) if second_const else \
            b.input("z", (4, 5), np.int8, zq)
        y = b.tensor("y", (2, 3, 4, 5), out[0], out[1])
        b.op(op, [x, z], [y], options, version=version)
        b.output(y)
        return b.finish()
    return build


def distinct_last_axis(shape, seed: int = 8) -> dict:
    """int8 values without ties along the last axis (ARG_MAX / TOPK_V2)."""
    r = _rng(seed)
    n = shape[-1]
    rows = np.stack([r.permutation(n) for _ in range(int(np.prod(shape[:-1])))]).reshape(shape)
    return {"x": (rows * (250 // n) - 120).astype(np.int8)}


def conv_like(op: B, per_channel: bool) -> Callable:
    def build() -> bytes:
        r = _rng(5)
        b = TfliteBuilder()
        if op == B.FULLY_CONNECTED:
            x = b.input("x", (3, 7), np.int8, QX)
            w_shape, bias_n, out_shape = (5, 7), 5, (3, 5)
        elif op == B.CONV_2D:
            x = b.input("x", (2, 6, 5, 3), np.int8, QX)
            w_shape, bias_n, out_shape = (4, 3, 2, 3), 4, (2, 6, 5, 4)
        else:
            x = b.input("x", (2, 6, 5, 3), np.int8, QX)
            w_shape, bias_n, out_shape = (1, 3, 2, 6), 6, (2, 6, 5, 6)
        axis = 3 if op == B.DEPTHWISE_CONV_2D else 0
        scales = [0.01 + 0.002 * k for k in range(w_shape[axis])] if per_channel else [0.015]
        wq = QuantParams(scales if per_channel else scales[0], [0] * len(scales) if per_channel else 0, axis)
        w = b.const("w", r.integers(-127, 128, w_shape).astype(np.int8), quant=wq)
        bq = QuantParams([0.05 * s for s in scales] if per_channel else 0.05 * scales[0],
                         [0] * len(scales) if per_channel else 0, 0)
        bias = b.const("b", r.integers(-300, 300, bias_n).astype(np.int32), quant=bq)
        y = b.tensor("y", out_shape, np.int8, QuantParams(0.3, 5))
        if op == B.FULLY_CONNECTED:
            b.op(op, [x, w, bias], [y], FullyConnectedOptions(), version=4)
        elif op == B.CONV_2D:
            b.op(op, [x, w, bias], [y], Conv2DOptions(padding=Padding.SAME, stride_w=1, stride_h=1), version=3)
        else:
            b.op(op, [x, w, bias], [y], DepthwiseConv2DOptions(padding=Padding.SAME, stride_w=1, stride_h=1,
                                                               depth_multiplier=2), version=3)
        b.output(y)
        return b.finish()
    return build


def select_model() -> bytes:
    b = TfliteBuilder()
    c = b.input("cond", (2, 3, 4), np.bool_)
    x1 = b.input("x1", (2, 3, 4), np.int8, QX)
    x2 = b.input("x2", (2, 3, 4), np.int8, QX)
    y = b.tensor("y", (2, 3, 4), np.int8, QX)
    b.op(B.SELECT, [c, x1, x2], [y], SelectOptions(), version=2)
    b.output(y)
    return b.finish()


def concat_model() -> bytes:
    b = TfliteBuilder()
    x = b.input("x", (2, 3, 4), np.int8, QX)
    z = b.const("z", _rng(4).integers(-128, 128, (2, 2, 4)).astype(np.int8), quant=QX)
    y = b.tensor("y", (2, 5, 4), np.int8, QX)
    b.op(B.CONCATENATION, [x, z], [y], ConcatenationOptions(axis=1), version=2)
    b.output(y)
    return b.finish()


I32 = np.int32
SOFTMAX_Q = QuantParams(1 / 256, -128)
POOL = Pool2DOptions(padding=Padding.VALID, stride_w=2, stride_h=1, filter_width=2, filter_height=3)
CASES = [
    Case(B.ADD, binary(B.ADD, AddOptions())),
    Case(B.SUB, binary(B.SUB, SubOptions(), second_const=True)),
    Case(B.MUL, binary(B.MUL, MulOptions(fused_activation_function=1))),
    # (TFLite's int8 MAXIMUM / MINIMUM compare raw values, NNAPI's rescale to the output: the same params)
    Case(B.MAXIMUM, binary(B.MAXIMUM, MaximumMinimumOptions(), zq=QX)),
    Case(B.MINIMUM, binary(B.MINIMUM, MaximumMinimumOptions(), second_const=True, zq=QX)),
    Case(B.EQUAL, binary(B.EQUAL, EqualOptions(), out=(np.bool_, None))),
    Case(B.NOT_EQUAL, binary(B.NOT_EQUAL, NotEqualOptions(), out=(np.bool_, None))),
    Case(B.GREATER, binary(B.GREATER, GreaterOptions(), out=(np.bool_, None))),
    Case(B.GREATER_EQUAL, binary(B.GREATER_EQUAL, GreaterEqualOptions(), out=(np.bool_, None), second_const=True)),
    Case(B.LESS, binary(B.LESS, LessOptions(), out=(np.bool_, None))),
    Case(B.LESS_EQUAL, binary(B.LESS_EQUAL, LessEqualOptions(), out=(np.bool_, None))),
    Case(B.PRELU, unary(B.PRELU, None, 1, extra=[("alpha", _rng(6).integers(1, 60, (4, 5)).astype(np.int8),
                                                  QuantParams(0.01, -20))], out_q=QuantParams(0.05, -7))),
    Case(B.LEAKY_RELU, unary(B.LEAKY_RELU, LeakyReluOptions(alpha=0.3), 1, out_q=QuantParams(0.04, 20))),
    Case(B.CONCATENATION, concat_model),
    Case(B.SELECT, select_model),
    Case(B.ARG_MAX, unary(B.ARG_MAX, ArgMaxOptions(output_type=2), 2, out_shape=(2, 3, 4), out_q=(I32, None),
                          extra=[("axis", np.array([3], np.int32), None)]), lambda: distinct_last_axis((2, 3, 4, 5))),
    Case(B.ARG_MIN, unary(B.ARG_MIN, ArgMinOptions(output_type=2), 2, out_shape=(2, 3, 5), out_q=(I32, None),
                          extra=[("axis", np.array(2, np.int32), None)]),
         lambda: {"x": np.moveaxis(distinct_last_axis((2, 3, 5, 4))["x"], 3, 2).copy()}),
    Case(B.AVERAGE_POOL_2D, unary(B.AVERAGE_POOL_2D, POOL, out_shape=(2, 1, 2, 5))),
    Case(B.MAX_POOL_2D, unary(B.MAX_POOL_2D, POOL, out_shape=(2, 1, 2, 5))),
    Case(B.BATCH_TO_SPACE_ND, unary(B.BATCH_TO_SPACE_ND, BatchToSpaceNDOptions(), shape=(4, 3, 2, 5),
                                    out_shape=(1, 6, 4, 5), extra=[("block", np.array([2, 2], np.int32), None),
                                                                   ("crops", np.zeros((2, 2), np.int32), None)])),
    Case(B.SPACE_TO_BATCH_ND, unary(B.SPACE_TO_BATCH_ND, SpaceToBatchNDOptions(), shape=(1, 6, 4, 5),
                                    out_shape=(4, 3, 2, 5), extra=[("block", np.array([2, 2], np.int32), None),
                                                                   ("pads", np.zeros((2, 2), np.int32), None)])),
    Case(B.EXPAND_DIMS, unary(B.EXPAND_DIMS, ExpandDimsOptions(), 1, out_shape=(2, 3, 1, 4, 5),
                              extra=[("axis", np.array([2], np.int32), None)])),
    Case(B.GATHER, unary(B.GATHER, GatherOptions(axis=1), 2, out_shape=(2, 4, 4, 5),
                         extra=[("pos", np.array([2, 0, 1, 2], np.int32), None)])),
    Case(B.HARD_SWISH, unary(B.HARD_SWISH, HardSwishOptions(), 1, out_q=QuantParams(0.03, -100))),
    Case(B.L2_NORMALIZATION, unary(B.L2_NORMALIZATION, L2NormOptions(), out_q=QuantParams(1 / 128, 0))),
    Case(B.LOGISTIC, unary(B.LOGISTIC, None, out_q=SOFTMAX_Q)),
    Case(B.TANH, unary(B.TANH, None, out_q=QuantParams(1 / 128, 0))),
    Case(B.RELU, unary(B.RELU, None)),
    Case(B.RELU6, unary(B.RELU6, None)),
    Case(B.RELU_N1_TO_1, unary(B.RELU_N1_TO_1, None, 1)),
    Case(B.SOFTMAX, unary(B.SOFTMAX, SoftmaxOptions(beta=1.0), out_q=SOFTMAX_Q)),
    Case(B.MEAN, unary(B.MEAN, ReducerOptions(keep_dims=False), out_shape=(2, 5),
                       extra=[("axis", np.array([1, 2], np.int32), None)])),
    Case(B.REDUCE_MAX, unary(B.REDUCE_MAX, ReducerOptions(keep_dims=True), out_shape=(2, 1, 4, 5),
                             extra=[("axis", np.array([1], np.int32), None)])),
    Case(B.REDUCE_MIN, unary(B.REDUCE_MIN, ReducerOptions(keep_dims=False), out_shape=(2, 3, 4),
                             extra=[("axis", np.array(-1, np.int32), None)])),
    Case(B.PAD, unary(B.PAD, PadOptions(), out_shape=(3, 3, 6, 5),
                      extra=[("pads", np.array([[1, 0], [0, 0], [2, 0], [0, 0]], np.int32), None)])),
    Case(B.PADV2, unary(B.PADV2, PadV2Options(), out_shape=(3, 3, 6, 5),
                        extra=[("pads", np.array([[1, 0], [0, 0], [2, 0], [0, 0]], np.int32), None),
                               ("value", np.array([-50], np.int8), QX)])),
    Case(B.RESIZE_BILINEAR, unary(B.RESIZE_BILINEAR, ResizeBilinearOptions(), out_shape=(2, 5, 7, 5),
                                  extra=[("size", np.array([5, 7], np.int32), None)])),
    Case(B.RESIZE_NEAREST_NEIGHBOR, unary(B.RESIZE_NEAREST_NEIGHBOR, ResizeNearestNeighborOptions(),
                                          out_shape=(2, 5, 7, 5), extra=[("size", np.array([5, 7], np.int32), None)])),
    Case(B.RESHAPE, unary(B.RESHAPE, ReshapeOptions(new_shape=(6, 20)), 1, out_shape=(6, 20),
                          extra=[("shape", np.array([6, 20], np.int32), None)])),
    Case(B.SLICE, unary(B.SLICE, SliceOptions(), out_shape=(1, 2, 3, 5),
                        extra=[("begin", np.array([1, 0, 1, 0], np.int32), None),
                               ("size", np.array([1, 2, 3, -1], np.int32), None)])),
    Case(B.STRIDED_SLICE, unary(B.STRIDED_SLICE, StridedSliceOptions(end_mask=8), out_shape=(2, 2, 2, 5),
                                extra=[("begin", np.array([0, 1, 0, 0], np.int32), None),
                                       ("end", np.array([2, 3, 4, 5], np.int32), None),
                                       ("strides", np.array([1, 1, 2, 1], np.int32), None)])),
    Case(B.SPACE_TO_DEPTH, unary(B.SPACE_TO_DEPTH, SpaceToDepthOptions(block_size=2), shape=(2, 4, 6, 3),
                                 out_shape=(2, 2, 3, 12))),
    Case(B.DEPTH_TO_SPACE, unary(B.DEPTH_TO_SPACE, DepthToSpaceOptions(block_size=2), shape=(2, 2, 3, 12),
                                 out_shape=(2, 4, 6, 3))),
    Case(B.TILE, unary(B.TILE, TileOptions(), 1, out_shape=(2, 6, 4, 10),
                       extra=[("multiples", np.array([1, 2, 1, 2], np.int32), None)])),
    # (TOPK_V2 has two outputs: `topk_model`)
    Case(B.TOPK_V2, lambda: topk_model(), lambda: distinct_last_axis((2, 3, 7))),
    Case(B.TRANSPOSE, unary(B.TRANSPOSE, TransposeOptions(), out_shape=(5, 2, 4, 3),
                            extra=[("perm", np.array([3, 0, 2, 1], np.int32), None)])),
    Case(B.CONV_2D, conv_like(B.CONV_2D, per_channel=False)),
    Case(B.DEPTHWISE_CONV_2D, conv_like(B.DEPTHWISE_CONV_2D, per_channel=False)),
    Case(B.FULLY_CONNECTED, conv_like(B.FULLY_CONNECTED, per_channel=False)),
]
PER_CHANNEL = [Case(op, conv_like(op, per_channel=True)) for op in (B.CONV_2D, B.DEPTHWISE_CONV_2D)]


def topk_model() -> bytes:
    b = TfliteBuilder()
    x = b.input("x", (2, 3, 7), np.int8, QX)
    k = b.const("k", np.array([3], np.int32))
    v = b.tensor("values", (2, 3, 3), np.int8, QX)
    i = b.tensor("indices", (2, 3, 3), np.int32)
    b.op(B.TOPK_V2, [x, k], [v, i], TopKV2Options(), version=2)
    b.output(v, i)
    return b.finish()


def ids(cases) -> list[str]:
    return [c.op.name for c in cases]


ALL = CASES + PER_CHANNEL
ALL_IDS = ids(CASES) + [f"{c.op.name}-per-channel" for c in PER_CHANNEL]


def test_every_listed_op_has_a_case():
    """The table covers every op of node_facts' lists but TRANSPOSE_CONV (test_delegate_nn_ops.py)."""
    covered = {c.op for c in CASES}
    assert covered == (set(_INT8_CONVERTED_BY_INPUT0) | set(INT8_CONVERT_ALL_INPUTS)) - {B.TRANSPOSE_CONV}


def converted_operands(model: bytes, api: int) -> tuple[list[str], list[tuple]]:
    """For each int8 TFLite tensor of the partition with an operand: (what it is, the operand)."""
    from nnconv.tflite.reader import read_model
    g = graph(model, api)
    sg = read_model(model).subgraphs[0]
    found = []
    for t, operand in sorted(g.converted.tensor_operands.items()):
        tensor = sg.tensors[t]
        if tensor.dtype is not None and tensor.dtype == np.int8:
            found.append((tensor, g.operand(operand), operand))
    return g, found


@pytest.mark.parametrize("case", ALL, ids=ALL_IDS)
def test_int8_converted_to_uint8_at_29(case):
    m = case.build()
    assert verdict(m, 29) == (True, [])
    g, found = converted_operands(m, 29)
    assert not g.error, g.error
    assert found
    for tensor, operand, index in found:
        quant = tensor.quantization
        if len(quant.scale) > 1:  # per-channel weights keep their own type
            assert operand[0] == "TENSOR_QUANT8_SYMM_PER_CHANNEL", (tensor.name, operand)
            continue
        assert operand[0] == U8 and operand[3] == int(quant.zero_point[0]) + 128, (tensor.name, operand)
        if tensor.data is not None:  # a constant: its values rewritten as uint8 (+128)
            want = (np.asarray(tensor.data).reshape(-1).astype(np.int16) + 128).astype(np.uint8)
            np.testing.assert_array_equal(g.value(index), want)
    assert all(o.type.name not in ("TENSOR_QUANT8_SYMM", S8) for o in g.model.main.operands)


@pytest.mark.parametrize("case", ALL, ids=ALL_IDS)
def test_int8_signed_from_30(case):
    m = case.build()
    assert verdict(m, 30) == (True, [])
    g, found = converted_operands(m, 30)
    for tensor, operand, _ in found:
        if len(tensor.quantization.scale) > 1:
            continue
        assert operand[0] == S8 and operand[3] == int(tensor.quantization.zero_point[0]), (tensor.name, operand)


@pytest.mark.parametrize("case", ALL, ids=ALL_IDS)
def test_int8_conversion_parity_at_29(case):
    assert_verified(case.build(), 29, case.inputs() if case.inputs else None)


def test_tile_int8_as_the_converter_writes_it_is_refused():
    """TFLite's converter writes int8 TILE as version 3 (op_version.cc); the delegate takes version 1 only."""
    m = unary(B.TILE, TileOptions(), 3, out_shape=(2, 6, 4, 10),
              extra=[("multiples", np.array([1, 2, 1, 2], np.int32), None)])()
    assert verdict(m, 29) == (False, ["OP Version different from 1"])
    assert verdict(m, 33) == (False, ["OP Version different from 1"])


def test_int8_pad_value_shifted():
    """PADV2's constant int8 value becomes an INT32 scalar + 128 below 30 (the padded tensor being uint8)."""
    g = graph(next(c for c in CASES if c.op == B.PADV2).build(), 29)
    assert g.op(0)[1][2] == ("INT32", -50 + 128)
