"""The delegate target on tensor-manipulation ops the recordings do not cover: SQUEEZE, SPLIT, SPLIT_V, UNPACK,
PACK, FILL, MIRROR_PAD, PADV2 with a computed value, TOPK_V2, SELECT, RESIZE_NEAREST_NEIGHBOR with
align_corners / half_pixel_centers, MAXIMUM / MINIMUM with a rank-0 constant, QUANTIZE of a quantized input
and MEAN with requantization.

Each op: (a) the delegate's verdict and messages at the API levels where they change, (b) the NNAPI graph the
delegate builds (operation types in order, every operand's type / dims / scale / zero point, the scalars and
constants it appends), (c) parity of that graph on our executor against TFLite's interpreter. Expected values
are read off `nnapi_delegate.cc` (LiteRT f67457790c9c): `Validate`, `Map`, `AddOpsAndTensors`, the
`NNAPIOpBuilder::Transform*` lowerings and `AddTensor`."""

from __future__ import annotations

import numpy as np
import pytest

from harness import QuantParams, TfliteBuilder, single_op_model
from nnconv.delegate.plan import Outcome
from nnconv.tflite.options import (AddOptions, FillOptions, MaximumMinimumOptions, MirrorPadOptions, PackOptions,
                                   PadV2Options, QuantizeOptions, ReducerOptions, ResizeNearestNeighborOptions,
                                   SelectOptions, SplitOptions, SplitVOptions, SqueezeOptions, TopKV2Options,
                                   UnpackOptions)
from nnconv.tflite.schema_enums import BuiltinOperator as B

from delegate_kit import accepted_levels, assert_verified, graph, prepared, run_both, verdict, verify

SEED = 20240611


def rng() -> np.random.Generator:
    """A fresh generator per input: the same values whatever ran before (pytest-xdist)."""
    return np.random.default_rng(SEED)
F = np.float32
FLOAT_T = "TENSOR_FLOAT32"
U8 = "TENSOR_QUANT8_ASYMM"
S8 = "TENSOR_QUANT8_ASYMM_SIGNED"
SYMM = "TENSOR_QUANT8_SYMM"
I32 = "TENSOR_INT32"


def q(scale: float, zp: int) -> QuantParams:
    return QuantParams(scale, zp)


# -- SQUEEZE ------------------------------------------------------------------------------------------------
def squeeze_model(dtype=np.float32, quant=None, dims=(1, 3), version: int = 1) -> bytes:
    return single_op_model(B.SQUEEZE, [("x", (2, 1, 3, 1), dtype, quant)], [("y", (2, 3), dtype, quant)],
                           SqueezeOptions(squeeze_dims=dims), version=version)


def test_squeeze_verdicts():
    assert verdict(squeeze_model(), 27) == (False, ["Android sdk version less than 28"])
    assert accepted_levels(squeeze_model()) == [28, 29, 30, 31, 33, 34, 35]
    # NNAPI 1.1 only: an empty squeeze_dims is refused at exactly API 28
    assert verdict(squeeze_model(dims=()), 28) == (False, ["NNAPI 1.1 does not support null squeeze_dims properly."])
    assert verdict(squeeze_model(dims=()), 29) == (True, [])
    # ExpectOpVersion(version, 1) tests <= but says "different from"
    assert verdict(squeeze_model(version=2), 30) == (False, ["OP Version different from 1"])


def test_squeeze_graph():
    g = graph(squeeze_model(np.uint8, q(0.5, 3)), 28)
    assert g.ops() == [("SQUEEZE", [(U8, (2, 1, 3, 1), 0.5, 3), (I32, (2,), 0.0, 0)], [(U8, (2, 3), 0.5, 3)])]
    assert list(g.input_value(0, 1)) == [1, 3]
    # no squeeze_dims: the operand is still added (NNAPI requires it), as an omitted [0] vector
    g = graph(squeeze_model(dims=()), 29)
    assert g.ops() == [("SQUEEZE", [(FLOAT_T, (2, 1, 3, 1), 0.0, 0), (I32, "omitted", (0,), 0.0)],
                        [(FLOAT_T, (2, 3), 0.0, 0)])]
    g = graph(squeeze_model(np.int8, q(0.5, -3)), 30)
    assert g.ops()[0][1][0] == (S8, (2, 1, 3, 1), 0.5, -3) and g.ops()[0][2] == [(S8, (2, 3), 0.5, -3)]


def test_squeeze_int8_below_30_is_quant8_symm():
    """SQUEEZE is not among NeedInt8Conversion's ops: below API 30 its int8 tensors become TENSOR_QUANT8_SYMM
    with the tensor's zero point, which Android's runtime refuses (a QUANT8_SYMM operand has zero point 0)."""
    g = graph(squeeze_model(np.int8, q(0.5, -3)), 29)
    assert g.ops()[0][1][0] == (SYMM, (2, 1, 3, 1), 0.5, -3)
    assert "zero point -3" in g.error and "TENSOR_QUANT8_SYMM" in g.error


def test_squeeze_int8_zero_point_0_below_30_refused_by_runtime():
    g = graph(squeeze_model(np.int8, q(0.5, 0)), 29)
    assert g.ops()[0][1][0] == (SYMM, (2, 1, 3, 1), 0.5, 0)
    assert "SQUEEZE" in g.error


def test_float_operand_ignores_quantization_parameters():
    """AddTensor reads `params` for quantized and integer types only: a float32 tensor that carries quantization
    parameters in the file still becomes a TENSOR_FLOAT32 operand of scale 0 and zero point 0 (which the
    runtime requires of a float operand)."""
    m = single_op_model(B.SQUEEZE, [("x", (2, 1, 3, 1), np.float32, q(0.5, 3))],
                        [("y", (2, 3), np.float32, q(0.25, 1))], SqueezeOptions(squeeze_dims=(1, 3)))
    g = graph(m, 29)
    assert g.ops() == [("SQUEEZE", [(FLOAT_T, (2, 1, 3, 1), 0.0, 0), (I32, (2,), 0.0, 0)], [(FLOAT_T, (2, 3), 0.0, 0)])]
    assert not g.error
    assert_verified(m, 29)


@pytest.mark.parametrize("api,dtype,quant,dims", [
    (28, np.float32, None, (1, 3)), (29, np.float32, None, ()), (28, np.uint8, q(0.5, 3), (1, 3)),
    (30, np.int8, q(0.5, -3), (1, 3)), (33, np.float32, None, (3, 1))])
def test_squeeze_parity(api, dtype, quant, dims):
    assert_verified(squeeze_model(dtype, quant, dims), api)


# -- SPLIT --------------------------------------------------------------------------------------------------
def split_model(dtype=np.float32, quant=None, axis=np.array(2, np.int32), shape=(2, 3, 6), n=3,
                axis_input: bool = False) -> bytes:
    out_shape = list(shape)
    a = int(np.asarray(axis).reshape(-1)[0])
    out_shape[a] //= n
    ax = ("axis", (), np.int32) if axis_input else ("axis", axis)
    return single_op_model(B.SPLIT, [ax, ("x", shape, dtype, quant)],
                           [(f"y{k}", tuple(out_shape), dtype, quant) for k in range(n)], SplitOptions(num_splits=n),
                           version=2 if dtype == np.int8 else 1)


def test_split_verdicts():
    assert accepted_levels(split_model()) == [29, 30, 31, 33, 34, 35]
    assert verdict(split_model(), 28) == (False, ["Android sdk version less than 29"])
    int8 = split_model(np.int8, q(0.25, -3), np.array([-1], np.int32), (2, 3, 4), 2)
    assert verdict(int8, 29) == (False, ["Input type not in expected list kTfLiteFloat32, kTfLiteUInt8, kTfLiteInt32"])
    assert verdict(int8, 30) == (True, [])
    assert verdict(split_model(axis_input=True), 30) == (False, ["NNAPI only supports constant int32 axis tensor."])


def test_split_graph():
    # the axis tensor becomes a scalar (the raw value: -1 stays -1), then num_splits
    g = graph(split_model(np.int8, q(0.25, -3), np.array([-1], np.int32), (2, 3, 4), 2), 30)
    out = (S8, (2, 3, 2), 0.25, -3)
    assert g.ops() == [("SPLIT", [(S8, (2, 3, 4), 0.25, -3), ("INT32", -1), ("INT32", 2)], [out, out])]
    g = graph(split_model(np.uint8, q(0.5, 7)), 29)
    out = (U8, (2, 3, 2), 0.5, 7)
    assert g.ops() == [("SPLIT", [(U8, (2, 3, 6), 0.5, 7), ("INT32", 2), ("INT32", 3)], [out, out, out])]


@pytest.mark.parametrize("api,args", [
    (29, dict()), (29, dict(dtype=np.uint8, quant=q(0.5, 7))), (29, dict(dtype=np.int32, axis=np.array([0], np.int32),
                                                                   shape=(4, 3, 5), n=2)),
    (30, dict(dtype=np.int8, quant=q(0.25, -3), axis=np.array([-1], np.int32), shape=(2, 3, 4), n=2))])
def test_split_parity(api, args):
    assert_verified(split_model(**args), api)


# -- SPLIT_V ------------------------------------------------------------------------------------------------
def split_v_model(sizes=(2, -1, 1), axis=1, shape=(2, 7, 3), dtype=np.float32, quant=None,
                  sizes_input: bool = False) -> bytes:
    total = shape[axis]
    known = sum(s for s in sizes if s != -1)
    real = [total - known if s == -1 else s for s in sizes]
    outs = []
    for k, s in enumerate(real):
        o = list(shape)
        o[axis] = s
        outs.append((f"y{k}", tuple(o), dtype, quant))
    sz = ("sizes", (len(sizes),), np.int32) if sizes_input else ("sizes", np.asarray(sizes, np.int32))
    return single_op_model(B.SPLIT_V, [("x", shape, dtype, quant), sz, ("axis", np.array([axis], np.int32))], outs,
                           SplitVOptions(num_splits=len(sizes)), version=2 if dtype == np.int8 else 1)


def test_split_v_verdicts():
    assert accepted_levels(split_v_model()) == [30, 31, 33, 34, 35]
    assert verdict(split_v_model(), 29) == (False, ["Android sdk version less than 30"])
    # a -1 that stands for nothing, and an explicit 0: both "non-zero split sizes"
    assert verdict(split_v_model(sizes=(4, -1, 3)), 30) == (False, ["NNAPI only supports non-zero split sizes."])
    assert verdict(split_v_model(sizes=(4, 0, 3)), 30) == (False, ["NNAPI only supports non-zero split sizes."])
    assert verdict(split_v_model(sizes_input=True), 30)[1] == ["NNAPI only supports constant int32 size_splits vector."]
    assert verdict(split_v_model(dtype=np.int16, quant=q(0.5, 0)), 30)[1] == [
        "Input type not in expected list kTfLiteFloat32, kTfLiteUInt8, kTfLiteInt8, kTfLiteInt32"]


def test_split_v_graph():
    """One SLICE per output, each re-reading the input, with begin / size vectors: the -1 stands for 7 - 3."""
    g = graph(split_v_model(dtype=np.int8, quant=q(0.5, 4)), 30)
    x = (S8, (2, 7, 3), 0.5, 4)
    assert g.ops() == [("SLICE", [x, (I32, (3,), 0.0, 0), (I32, (3,), 0.0, 0)], [(S8, (2, n, 3), 0.5, 4)])
                       for n in (2, 4, 1)]
    assert [(list(g.input_value(k, 1)), list(g.input_value(k, 2))) for k in range(3)] == [
        ([0, 0, 0], [2, 2, 3]), ([0, 2, 0], [2, 4, 3]), ([0, 6, 0], [2, 1, 3])]
    assert len(g.model.main.input_indexes) == 1  # the three SLICEs share the input's operand


@pytest.mark.parametrize("args", [dict(), dict(dtype=np.uint8, quant=q(0.5, 4)), dict(dtype=np.int8, quant=q(0.5, 4)),
                                  dict(sizes=(1, 4), axis=-1, shape=(3, 2, 5), dtype=np.int32)])
def test_split_v_parity(args):
    assert_verified(split_v_model(**args), 30)


# -- UNPACK -------------------------------------------------------------------------------------------------
def unpack_model(shape=(2, 3, 4), axis=1, dtype=np.float32, quant=None) -> bytes:
    a = axis + len(shape) if axis < 0 else axis
    out = tuple(d for i, d in enumerate(shape) if i != a)
    return single_op_model(B.UNPACK, [("x", shape, dtype, quant)],
                           [(f"y{k}", out, dtype, quant) for k in range(shape[a])],
                           UnpackOptions(num=shape[a], axis=axis), version=2 if dtype == np.int8 else 1)


def test_unpack_verdicts():
    assert accepted_levels(unpack_model()) == [30, 31, 33, 34, 35]
    assert verdict(unpack_model(), 29) == (False, ["Android sdk version less than 30"])
    last = "NNAPI does not support axis being the last dimension"
    assert verdict(unpack_model(axis=2), 30) == (False, [last])
    assert verdict(unpack_model(axis=-1), 30) == (False, [last])
    # rank 1: axis 0 is also the last one
    assert verdict(unpack_model(shape=(3,), axis=0), 30) == (
        False, ["NNAPI does not support unpacking a rank-1 tensor", last])
    assert verdict(unpack_model(dtype=np.int32), 30) == (
        False, ["Input type not in expected list kTfLiteFloat32, kTfLiteUInt8, kTfLiteInt8"])


def test_unpack_graph():
    """RESHAPE merging the axis with the next one, then SPLIT along it (TransformUnpackIntoSupportedOps); the
    intermediate keeps the input's type, scale and zero point."""
    g = graph(unpack_model((2, 3, 4, 5), 1, np.int8, q(0.5, -2)), 30)
    mid = (S8, (2, 12, 5), 0.5, -2)
    assert g.ops() == [
        ("RESHAPE", [(S8, (2, 3, 4, 5), 0.5, -2), (I32, (3,), 0.0, 0)], [mid]),
        ("SPLIT", [mid, ("INT32", 1), ("INT32", 3)], [(S8, (2, 4, 5), 0.5, -2)] * 3)]
    assert list(g.input_value(0, 1)) == [2, 12, 5]
    g = graph(unpack_model((3, 2, 4), -3), 30)  # a negative axis counts from the rank
    assert g.op(1)[1][1:] == [("INT32", 0), ("INT32", 3)]


@pytest.mark.parametrize("args", [dict(), dict(shape=(2, 3, 4, 5), axis=1, dtype=np.int8, quant=q(0.5, -2)),
                                  dict(shape=(4, 3), axis=0, dtype=np.uint8, quant=q(0.25, 9))])
def test_unpack_parity(args):
    assert_verified(unpack_model(**args), 30)


# -- PACK ---------------------------------------------------------------------------------------------------
def pack_model(n=3, shape=(2, 4), axis=1, dtype=np.float32, quant=None) -> bytes:
    a = axis + len(shape) + 1 if axis < 0 else axis
    out = tuple(shape[:a]) + (n,) + tuple(shape[a:])
    return single_op_model(B.PACK, [(f"x{k}", shape, dtype, quant) for k in range(n)], [("y", out, dtype, quant)],
                           PackOptions(values_count=n, axis=axis), version=2 if dtype == np.int8 else 1)


def test_pack_verdicts():
    assert accepted_levels(pack_model()) == [30, 31, 33, 34, 35]
    assert verdict(pack_model(), 29) == (False, ["Android sdk version less than 30"])
    last = "NNAPI does not support axis being the last dimension"
    # below feature level 6: float32 / int8 only, never along the last (new) axis
    for api in (30, 31):
        assert verdict(pack_model(axis=2), api) == (False, [last])
        assert verdict(pack_model(axis=-1), api) == (False, [last])
        assert verdict(pack_model(dtype=np.int32), api) == (
            False, ["Input type not in expected list kTfLiteFloat32, kTfLiteInt8"])
    # feature level 6 (Android 13) has PACK itself: the last axis and int32 / uint8 too
    for api in (33, 34, 35):
        assert verdict(pack_model(axis=-1), api) == (True, [])
        assert verdict(pack_model(dtype=np.int32), api) == (True, [])
        assert verdict(pack_model(dtype=np.uint8, quant=q(0.5, 1)), api) == (True, [])
        assert verdict(pack_model(dtype=np.int16, quant=q(0.5, 0)), api) == (
            False, ["Input type not in expected list kTfLiteInt32, kTfLiteFloat32, kTfLiteInt8, kTfLiteUInt8"])


def test_pack_graph_below_feature_level_6():
    """CONCATENATION along the axis into an intermediate of the input's type and quantization, then RESHAPE to
    the output's dims (TransformPackIntoSupportedOps)."""
    g = graph(pack_model(3, (2, 4), 1, np.int8, q(0.5, 3)), 30)
    x = (S8, (2, 4), 0.5, 3)
    mid = (S8, (2, 12), 0.5, 3)
    assert g.ops() == [("CONCATENATION", [x, x, x, ("INT32", 1)], [mid]),
                       ("RESHAPE", [mid, (I32, (3,), 0.0, 0)], [(S8, (2, 3, 4), 0.5, 3)])]
    assert list(g.input_value(1, 1)) == [2, 3, 4]
    g = graph(pack_model(2, (3, 2), -3), 31)  # -3 + rank 2 + 1 = 0
    assert g.op(0)[1][-1] == ("INT32", 0) and g.op(0)[2] == [(FLOAT_T, (6, 2), 0.0, 0)]


def test_pack_graph_from_feature_level_6():
    """NNAPI's PACK, whose axis (made non-negative) comes before the tensors."""
    g = graph(pack_model(3, (2, 4), -1, np.int32), 33)
    x = (I32, (2, 4), 0.0, 0)
    assert g.ops() == [("PACK", [("INT32", 2), x, x, x], [(I32, (2, 4, 3), 0.0, 0)])]
    g = graph(pack_model(2, (2, 4), 0, np.uint8, q(0.5, 1)), 35)
    assert g.ops() == [("PACK", [("INT32", 0), (U8, (2, 4), 0.5, 1), (U8, (2, 4), 0.5, 1)],
                        [(U8, (2, 2, 4), 0.5, 1)])]


@pytest.mark.parametrize("api,args", [
    (30, dict()), (30, dict(dtype=np.int8, quant=q(0.5, 3))), (31, dict(n=2, shape=(3, 2), axis=-3)),
    (33, dict(axis=-1, dtype=np.int32)), (33, dict(dtype=np.uint8, quant=q(0.5, 1), axis=0)),
    (35, dict(n=4, shape=(2, 3, 5), axis=3))])
def test_pack_parity(api, args):
    assert_verified(pack_model(**args), api)


# -- FILL ---------------------------------------------------------------------------------------------------
def fill_model(dims=np.array([2, 3, 4], np.int64), value=np.array(1.5, np.float32), out_dtype=np.float32,
               dims_input: bool = False, value_input: np.dtype | None = None, then_add: bool = False,
               shape: tuple[int, ...] | None = None) -> bytes:
    """FILL alone, or FILL of constants then ADD of a model input (`then_add`): a partition whose every input
    is constant has nothing to pool and its build fails (see test_fill_of_constants_alone_fails_the_build)."""
    shape = shape or (tuple(int(x) for x in dims) if not dims_input else (2, 3, 4))
    b = TfliteBuilder()
    d = b.input("dims", (len(shape),), np.int32) if dims_input else b.const("dims", dims)
    v = b.input("value", (), value_input) if value_input is not None else b.const("value", value)
    y = b.tensor("filled" if then_add else "y", shape, out_dtype)
    b.op(B.FILL, [d, v], [y], FillOptions())
    if then_add:
        x = b.input("x", shape, out_dtype)
        z = b.tensor("y", shape, out_dtype)
        b.op(B.ADD, [y, x], [z], AddOptions())
        y = z
    b.output(y)
    return b.finish()


def test_fill_verdicts():
    assert accepted_levels(fill_model()) == [30, 31, 33, 34, 35]
    assert verdict(fill_model(), 29) == (False, ["Android sdk version less than 30"])
    assert verdict(fill_model(dims_input=True), 30) == (False, ["NNAPI doesn't support dynamic dimensions tensor."])
    big = np.array([2, 2 ** 31, 1], np.int64)
    assert verdict(fill_model(dims=big, shape=(2, 3, 4)), 30)[1] == [
        "NNAPI only supports int32 dimensions tensor. If the dimensions type is int64 and they are constant we can "
        "convert them to int32 if the value isn't too large."]
    assert verdict(fill_model(value=np.array(2 ** 33, np.int64), out_dtype=np.int64), 30)[1] == [
        "NNAPI only supports int32 input. If the input type is int64 and constant we can convert it to int32 if "
        "the value isn't too large."]
    assert verdict(fill_model(value=np.array(True)), 30)[1] == [
        "Input type not in expected list kTfLiteFloat32, kTfLiteInt32, kTfLiteInt64"]


def test_fill_graph_int64_dims_and_values():
    """int64 dims become a new int32 constant (same dims and params); a constant value becomes a scalar."""
    g = graph(fill_model(then_add=True), 30)
    out = (FLOAT_T, (2, 3, 4), 0.0, 0)
    assert g.ops() == [("FILL", [(I32, (3,), 0.0, 0), ("FLOAT32", 1.5)], [out]),
                       ("ADD", [out, out, ("INT32", 0)], [out])]
    assert list(g.input_value(0, 0)) == [2, 3, 4] and g.input_value(0, 0).dtype == np.int32
    g = graph(fill_model(np.array([3, 2], np.int32), np.array(-7, np.int32), np.int32, then_add=True), 33)
    assert g.op(0) == ("FILL", [(I32, (2,), 0.0, 0), ("INT32", -7)], [(I32, (3, 2), 0.0, 0)])


def test_fill_of_constants_alone_fails_the_build():
    """Every input constant: the partition's model has no inputs, NNMemory::Create of a 0-byte input pool
    returns nothing and BuildGraph fails; TFLite keeps the CPU plan."""
    plan = prepared(fill_model(), 30).delegate_plan()
    assert plan.outcome is Outcome.DELEGATE_FAILED and "no inputs to pool" in plan.error


def test_fill_int64_output_fails_the_build():
    """Validate takes an int64 value, but FILL's output is then int64, a type AddTensor cannot add: the
    delegate's build fails and TFLite runs the model on the CPU."""
    # (TFLite's FILL writes the value's type: an int64 value always makes an int64 output)
    m = fill_model(value=np.array(5, np.int64), out_dtype=np.int64, then_add=True)
    assert verdict(m, 30) == (True, [])
    plan = prepared(m, 30).delegate_plan()
    assert plan.outcome is Outcome.DELEGATE_FAILED
    assert "Failed to add NN API tensor: type INT64 is not supported." in plan.error


def test_fill_computed_value_is_a_scalar_model_input():
    """AddSingleValueTensorAsScalarOperand: a computed value becomes a FLOAT32 scalar the model takes as input."""
    g = graph(fill_model(value_input=np.float32), 30)
    assert g.ops() == [("FILL", [(I32, (3,), 0.0, 0), ("FLOAT32", (), 0.0, 0)], [(FLOAT_T, (2, 3, 4), 0.0, 0)])]
    assert g.inputs == [("FLOAT32", (), 0.0, 0)]


@pytest.mark.parametrize("api,args,inputs", [
    (30, dict(then_add=True), None),
    (33, dict(dims=np.array([3, 2], np.int32), value=np.array(-7, np.int32), out_dtype=np.int32, then_add=True), None),
    (30, dict(value_input=np.float32), {"value": np.array(-2.25, np.float32)}),
    (30, dict(value_input=np.int32, out_dtype=np.int32), {"value": np.array(11, np.int32)})])
def test_fill_parity(api, args, inputs):
    assert_verified(fill_model(**args), api, inputs)


# -- MIRROR_PAD ---------------------------------------------------------------------------------------------
def mirror_pad_model(mode=0, dtype=np.float32, quant=None, pads=((1, 2), (0, 1), (2, 0))) -> bytes:
    shape = (3, 4, 5)
    out = tuple(d + a + b for d, (a, b) in zip(shape, pads))
    return single_op_model(B.MIRROR_PAD, [("x", shape, dtype, quant), ("pads", np.asarray(pads, np.int32))],
                           [("y", out, dtype, quant)], MirrorPadOptions(mode=mode))


def test_mirror_pad_verdicts():
    # feature level 7 is Android 14's 1000007, as the delegate writes it
    assert accepted_levels(mirror_pad_model()) == [34, 35]
    assert verdict(mirror_pad_model(), 33) == (False, ["Android sdk version less than 1000007"])
    assert verdict(mirror_pad_model(), 30) == (False, ["Android sdk version less than 1000007"])
    assert verdict(mirror_pad_model(dtype=np.int16, quant=q(0.5, 0)), 34) == (
        False, ["Input should be Float, Quant8, or Int32"])


@pytest.mark.parametrize("mode,code", [(0, 0), (1, 1)], ids=["reflect", "symmetric"])
def test_mirror_pad_graph(mode, code):
    g = graph(mirror_pad_model(mode, np.int8, q(0.5, -1)), 34)
    assert g.ops() == [("MIRROR_PAD", [(S8, (3, 4, 5), 0.5, -1), (I32, (3, 2), 0.0, 0), ("INT32", code)],
                        [(S8, (6, 5, 7), 0.5, -1)])]


@pytest.mark.parametrize("args", [dict(), dict(mode=1), dict(mode=1, dtype=np.uint8, quant=q(0.5, 7)),
                                  dict(mode=0, dtype=np.int32)])
def test_mirror_pad_parity(args):
    assert_verified(mirror_pad_model(**args), 34)


# -- PADV2 with a computed value ----------------------------------------------------------------------------
PADS = np.array([[0, 1], [2, 0], [1, 1], [0, 2]], np.int32)


def padv2_model(dtype=np.float32, quant=None, value_const: np.ndarray | None = None) -> bytes:
    v = ("value", value_const, quant) if value_const is not None else ("value", (), dtype, quant)
    return single_op_model(B.PADV2, [("x", (2, 3, 4, 5), dtype, quant), ("pads", PADS), v],
                           [("y", (3, 5, 6, 7), dtype, quant)], PadV2Options(), version=2 if dtype == np.int8 else 1)


def test_padv2_verdicts():
    assert accepted_levels(padv2_model()) == [29, 30, 31, 33, 34, 35]
    assert verdict(padv2_model(), 28) == (False, ["Specification of the padding value is supported from NNAPI 1.2."])
    assert verdict(padv2_model(), 27) == (False, ["Android sdk version less than 28",
                                                  "Specification of the padding value is supported from NNAPI 1.2."])


def test_padv2_computed_value_graph():
    """A computed value becomes a scalar model input (FLOAT32 for float, INT32 for quantized), after the
    tensor and the paddings; the model's inputs are the partition's, in tensor order."""
    g = graph(padv2_model(), 29)
    assert g.ops() == [("PAD_V2", [(FLOAT_T, (2, 3, 4, 5), 0.0, 0), (I32, (4, 2), 0.0, 0), ("FLOAT32", (), 0.0, 0)],
                        [(FLOAT_T, (3, 5, 6, 7), 0.0, 0)])]
    assert g.inputs == [(FLOAT_T, (2, 3, 4, 5), 0.0, 0), ("FLOAT32", (), 0.0, 0)]
    g = graph(padv2_model(np.uint8, q(0.5, 100)), 29)
    assert g.op(0)[1][2] == ("INT32", (), 0.0, 0)
    # int8 below 30: the tensor is carried as uint8 (+128), the value as an INT32 the delegate shifts likewise
    g = graph(padv2_model(np.int8, q(0.5, -20)), 29)
    assert g.op(0)[1][0] == (U8, (2, 3, 4, 5), 0.5, 108) and g.op(0)[1][2] == ("INT32", (), 0.0, 0)
    g = graph(padv2_model(np.int8, q(0.5, -20)), 30)
    assert g.op(0)[1][0] == (S8, (2, 3, 4, 5), 0.5, -20) and g.op(0)[2] == [(S8, (3, 5, 6, 7), 0.5, -20)]


def test_padv2_constant_int8_value_shifted_below_30():
    g = graph(padv2_model(np.int8, q(0.5, -20), np.array([-7], np.int8)), 29)
    assert g.op(0)[1][2] == ("INT32", -7 + 128)
    g = graph(padv2_model(np.int8, q(0.5, -20), np.array([-7], np.int8)), 30)
    assert g.op(0)[1][2] == ("INT32", -7)


@pytest.mark.parametrize("api,dtype,quant,value", [
    (29, np.float32, None, np.array(-3.5, np.float32)), (29, np.uint8, q(0.5, 100), np.array(201, np.uint8)),
    (29, np.int8, q(0.5, -20), np.array(-77, np.int8)), (30, np.int8, q(0.5, -20), np.array(93, np.int8)),
    (33, np.float32, None, np.array(7.25, np.float32))])
def test_padv2_computed_value_parity(api, dtype, quant, value):
    r = rng()
    x = r.integers(0, 100, (2, 3, 4, 5)).astype(dtype) if dtype != np.float32 else \
        r.uniform(-1, 1, (2, 3, 4, 5)).astype(np.float32)
    report = assert_verified(padv2_model(dtype, quant), api, {"x": x, "value": value})
    assert report.parity.outputs[0].value_range is not None


def fp16_padv2_model() -> bytes:
    """PADV2 whose value is DEQUANTIZE of a float16 constant (the float16-weights path reads it directly)."""
    b = TfliteBuilder()
    x = b.input("x", (2, 3, 4, 5), np.float32)
    h = b.const("value_fp16", np.array([1.0], np.float16))
    v = b.tensor("value", (1,), np.float32)
    b.op(B.DEQUANTIZE, [h], [v])
    pads = b.const("pads", PADS)
    y = b.tensor("y", (3, 5, 6, 7), np.float32)
    b.op(B.PADV2, [x, pads, v], [y], PadV2Options())
    b.output(y)
    return b.finish()


def test_padv2_float16_constant_value_is_its_raw_bits():
    """Upstream passes `data.f16->data` (the half's uint16 bits) to AddScalarFloat32Operand: a float16 1.0
    pads with 15360.0. TFLite pads with 1.0, so the delegate's graph is off by construction; this asserts
    that documented gap."""
    m = fp16_padv2_model()
    g = graph(m, 30)
    assert g.ops() == [("PAD_V2", [(FLOAT_T, (2, 3, 4, 5), 0.0, 0), (I32, (4, 2), 0.0, 0), ("FLOAT32", 15360.0)],
                        [(FLOAT_T, (3, 5, 6, 7), 0.0, 0)])]
    x = rng().uniform(-1, 1, (2, 3, 4, 5)).astype(np.float32)
    ours, theirs = run_both(m, 30, {"x": x})
    assert theirs["y"][0, 0, 0, 0] == 1.0 and ours["y"][0, 0, 0, 0] == 15360.0
    np.testing.assert_array_equal(ours["y"][:2, 2:5, 1:5, 0:5], theirs["y"][:2, 2:5, 1:5, 0:5])


# -- TOPK_V2 ------------------------------------------------------------------------------------------------
def topk_model(dtype=np.float32, quant=None, k=np.array([4], np.int32), k_input: bool = False) -> bytes:
    kk = ("k", (1,), np.int32) if k_input else ("k", k)
    return single_op_model(B.TOPK_V2, [("x", (2, 3, 10), dtype, quant), kk],
                           [("values", (2, 3, 4), dtype, quant), ("indices", (2, 3, 4), np.int32)], TopKV2Options(),
                           version=2 if dtype == np.int8 else 1)


def distinct_rows(dtype) -> np.ndarray:
    """Rows without ties (TFLite and NNAPI may order equal values differently)."""
    r = rng()
    rows = np.stack([r.permutation(10) for _ in range(6)]).reshape(2, 3, 10)
    if dtype == np.float32:
        return (rows * 0.37 - 1.1).astype(np.float32)
    if dtype == np.int8:
        return (rows * 23 - 110).astype(np.int8)
    return (rows * 25).astype(dtype)


def test_topk_verdicts():
    assert accepted_levels(topk_model()) == [29, 30, 31, 33, 34, 35]
    assert verdict(topk_model(), 28) == (False, ["Android sdk version less than 29"])
    assert verdict(topk_model(k_input=True), 29) == (False, ["K param should be a constant of type Int32"])


def test_topk_graph():
    g = graph(topk_model(), 29)
    assert g.ops() == [("TOPK_V2", [(FLOAT_T, (2, 3, 10), 0.0, 0), ("INT32", 4)],
                        [(FLOAT_T, (2, 3, 4), 0.0, 0), (I32, (2, 3, 4), 0.0, 0)])]
    # int8 below 30 (NeedInt8Conversion lists TOPK_V2): input and values output as uint8, zero point + 128
    g = graph(topk_model(np.int8, q(0.5, -9)), 29)
    assert g.ops() == [("TOPK_V2", [(U8, (2, 3, 10), 0.5, 119), ("INT32", 4)],
                        [(U8, (2, 3, 4), 0.5, 119), (I32, (2, 3, 4), 0.0, 0)])]


@pytest.mark.parametrize("api,dtype,quant", [(29, np.float32, None), (29, np.uint8, q(0.5, 3)),
                                             (29, np.int8, q(0.5, -9)), (30, np.int8, q(0.5, -9)),
                                             (30, np.int32, None)])
def test_topk_parity(api, dtype, quant):
    assert_verified(topk_model(dtype, quant), api, {"x": distinct_rows(dtype)})


# -- SELECT -------------------------------------------------------------------------------------------------
def select_model(dtype=np.float32, quant=None, cond_shape=(2, 3, 4)) -> bytes:
    return single_op_model(B.SELECT, [("cond", cond_shape, np.bool_), ("a", (2, 3, 4), dtype, quant),
                                      ("b", (2, 3, 4), dtype, quant)], [("y", (2, 3, 4), dtype, quant)],
                           SelectOptions(), version=2 if dtype == np.int8 else 1)


def test_select_verdicts():
    assert accepted_levels(select_model()) == [29, 30, 31, 33, 34, 35]
    assert verdict(select_model(), 28) == (False, ["Android sdk version less than 29"])
    assert verdict(select_model(cond_shape=(2, 1, 4)), 29) == (
        False, ["Condition and inputs tensors should have the same shape"])
    assert verdict(select_model(np.int16, q(0.5, 0)), 30)[1] == [
        "Input type not in expected list kTfLiteFloat32, kTfLiteInt32, kTfLiteUInt8, kTfLiteInt8"]


def test_select_graph_int8():
    # below 30 every input takes the int8 conversion (the condition is bool: unaffected)
    g = graph(select_model(np.int8, q(0.25, 5)), 29)
    t = (U8, (2, 3, 4), 0.25, 133)
    assert g.ops() == [("SELECT", [("TENSOR_BOOL8", (2, 3, 4), 0.0, 0), t, t], [t])]
    g = graph(select_model(np.int8, q(0.25, 5)), 30)
    t = (S8, (2, 3, 4), 0.25, 5)
    assert g.ops() == [("SELECT", [("TENSOR_BOOL8", (2, 3, 4), 0.0, 0), t, t], [t])]


@pytest.mark.parametrize("api,dtype,quant", [(29, np.float32, None), (29, np.int8, q(0.25, 5)),
                                             (30, np.int8, q(0.25, 5)), (29, np.int32, None),
                                             (29, np.uint8, q(0.25, 5))])
def test_select_parity(api, dtype, quant):
    assert_verified(select_model(dtype, quant), api)


# -- RESIZE_NEAREST_NEIGHBOR with align_corners / half_pixel_centers ----------------------------------------
def resize_nn_model(align=False, half=False, dtype=np.float32, quant=None) -> bytes:
    return single_op_model(B.RESIZE_NEAREST_NEIGHBOR, [("x", (2, 4, 5, 3), dtype, quant),
                                                       ("size", np.array([7, 9], np.int32))],
                           [("y", (2, 7, 9, 3), dtype, quant)],
                           ResizeNearestNeighborOptions(align_corners=align, half_pixel_centers=half),
                           version=3 if half else (2 if dtype == np.int8 else 1))


def test_resize_nearest_verdicts():
    assert accepted_levels(resize_nn_model()) == [29, 30, 31, 33, 34, 35]
    assert verdict(resize_nn_model(), 28) == (False, ["Android sdk version less than 29"])
    align = "NNAPI does not support align_corners == true."
    half = "NNAPI does not support half_pixel_centers == true."
    assert verdict(resize_nn_model(align=True), 29) == (False, [align])
    assert verdict(resize_nn_model(half=True), 29) == (False, [half])
    assert verdict(resize_nn_model(align=True, half=True), 29) == (False, [align, half])
    assert accepted_levels(resize_nn_model(align=True)) == [30, 31, 33, 34, 35]
    assert accepted_levels(resize_nn_model(half=True)) == [30, 31, 33, 34, 35]


def test_resize_nearest_graph():
    # width, height, then NHWC (false) always; the two flags only when one is set
    g = graph(resize_nn_model(), 29)
    assert g.ops() == [("RESIZE_NEAREST_NEIGHBOR", [(FLOAT_T, (2, 4, 5, 3), 0.0, 0), ("INT32", 9), ("INT32", 7),
                                                    ("BOOL", False)], [(FLOAT_T, (2, 7, 9, 3), 0.0, 0)])]
    g = graph(resize_nn_model(align=True), 30)
    assert g.op(0)[1][1:] == [("INT32", 9), ("INT32", 7), ("BOOL", False), ("BOOL", True), ("BOOL", False)]
    g = graph(resize_nn_model(half=True, dtype=np.int8, quant=q(0.5, 1)), 30)
    assert g.op(0)[1] == [(S8, (2, 4, 5, 3), 0.5, 1), ("INT32", 9), ("INT32", 7), ("BOOL", False), ("BOOL", False),
                          ("BOOL", True)]


@pytest.mark.parametrize("api,args", [(29, dict()), (30, dict(align=True)), (30, dict(half=True)),
                                      (30, dict(half=True, dtype=np.int8, quant=q(0.5, 1))),
                                      (33, dict(align=True, dtype=np.uint8, quant=q(0.5, 1)))])
def test_resize_nearest_parity(api, args):
    assert_verified(resize_nn_model(**args), api)


# -- MAXIMUM / MINIMUM with a rank-0 constant ---------------------------------------------------------------
def minmax_model(op=B.MAXIMUM, dtype=np.float32, quant=None, scalar=np.array(0.25, np.float32),
                 scalar_input: bool = False, scalar_first: bool = False) -> bytes:
    s = ("s", (), dtype, quant) if scalar_input else ("s", scalar, quant)
    x = ("x", (2, 3, 4), dtype, quant)
    ins = [s, x] if scalar_first else [x, s]
    return single_op_model(op, ins, [("y", (2, 3, 4), dtype, quant)], MaximumMinimumOptions(),
                           version=2 if dtype == np.int8 else 1)


def test_minmax_rank0_verdicts():
    assert accepted_levels(minmax_model()) == [29, 30, 31, 33, 34, 35]
    assert verdict(minmax_model(), 28) == (False, ["Android sdk version less than 29"])
    assert verdict(minmax_model(B.MINIMUM, scalar_input=True), 29) == (False, ["Scalar operand should be constant"])
    assert verdict(minmax_model(B.MINIMUM, scalar_input=True, scalar_first=True), 29) == (
        False, ["Scalar operand should be constant"])


def test_minmax_rank0_graph():
    """The rank-0 constant becomes a [1] constant of its own (AddNewInputConstantTensor) with the tensor's
    params; int8 gets scale 1 for a zero scale, and below 30 the int8 conversion adds it as a [1] uint8
    tensor (value and zero point + 128)."""
    g = graph(minmax_model(), 29)
    assert g.ops() == [("MAXIMUM", [(FLOAT_T, (2, 3, 4), 0.0, 0), (FLOAT_T, (1,), 0.0, 0)],
                        [(FLOAT_T, (2, 3, 4), 0.0, 0)])]
    assert list(g.input_value(0, 1)) == [0.25]
    g = graph(minmax_model(B.MINIMUM, np.uint8, q(0.5, 10), np.array(31, np.uint8), scalar_first=True), 29)
    assert g.ops() == [("MINIMUM", [(U8, (1,), 0.5, 10), (U8, (2, 3, 4), 0.5, 10)], [(U8, (2, 3, 4), 0.5, 10)])]
    assert list(g.input_value(0, 0)) == [31]
    g = graph(minmax_model(B.MAXIMUM, np.int8, q(0.5, -10), np.array(-31, np.int8)), 30)
    assert g.op(0)[1] == [(S8, (2, 3, 4), 0.5, -10), (S8, (1,), 0.5, -10)]
    assert list(g.input_value(0, 1)) == [-31]
    g = graph(minmax_model(B.MAXIMUM, np.int8, q(0.5, -10), np.array(-31, np.int8)), 29)
    assert g.op(0)[1] == [(U8, (2, 3, 4), 0.5, 118), (U8, (1,), 0.5, 118)]
    assert list(g.input_value(0, 1)) == [97]
    g = graph(minmax_model(B.MINIMUM, np.int32, None, np.array(-3, np.int32)), 30)
    assert g.op(0)[1] == [(I32, (2, 3, 4), 0.0, 0), (I32, (1,), 0.0, 0)]


@pytest.mark.parametrize("api,args", [
    (29, dict()), (29, dict(op=B.MINIMUM, dtype=np.uint8, quant=q(0.5, 10), scalar=np.array(31, np.uint8),
                            scalar_first=True)),
    (29, dict(dtype=np.int8, quant=q(0.5, -10), scalar=np.array(-31, np.int8))),
    (30, dict(op=B.MINIMUM, dtype=np.int8, quant=q(0.5, -10), scalar=np.array(12, np.int8))),
    (30, dict(dtype=np.int32, scalar=np.array(3, np.int32)))])
def test_minmax_rank0_parity(api, args):
    assert_verified(minmax_model(**args), api)


# -- QUANTIZE of a quantized input --------------------------------------------------------------------------
def quantize_model(in_dtype=np.uint8, in_q=q(0.5, 100), out_dtype=np.uint8, out_q=q(0.25, 90)) -> bytes:
    return single_op_model(B.QUANTIZE, [("x", (2, 3, 5), in_dtype, in_q)], [("y", (2, 3, 5), out_dtype, out_q)],
                           QuantizeOptions(), version=2 if np.int8 in (in_dtype, out_dtype) else 1)


def test_quantize_requantize_verdicts():
    assert accepted_levels(quantize_model()) == [29, 30, 31, 33, 34, 35]
    assert verdict(quantize_model(), 28) == (False, ["Android sdk version less than 29"])
    int8_out = quantize_model(np.int8, q(0.5, -3), np.int8, q(0.25, 5))
    assert verdict(int8_out, 29) == (False, ["Output should be kTfLiteUInt8."])
    assert verdict(int8_out, 30) == (True, [])


def test_quantize_requantize_graph():
    """NNAPI's QUANTIZE takes float only: the delegate puts a DEQUANTIZE of the input in front (Map's
    AddDequantize), into a new float32 operand of the input's dims."""
    g = graph(quantize_model(), 29)
    assert g.ops() == [("DEQUANTIZE", [(U8, (2, 3, 5), 0.5, 100)], [(FLOAT_T, (2, 3, 5), 0.0, 0)]),
                       ("QUANTIZE", [(FLOAT_T, (2, 3, 5), 0.0, 0)], [(U8, (2, 3, 5), 0.25, 90)])]
    g = graph(quantize_model(np.int8, q(0.5, -3), np.int8, q(0.25, 5)), 30)
    assert g.ops() == [("DEQUANTIZE", [(S8, (2, 3, 5), 0.5, -3)], [(FLOAT_T, (2, 3, 5), 0.0, 0)]),
                       ("QUANTIZE", [(FLOAT_T, (2, 3, 5), 0.0, 0)], [(S8, (2, 3, 5), 0.25, 5)])]


def test_quantize_int8_to_uint8_below_30_is_quant8_symm():
    """QUANTIZE is not among NeedInt8Conversion's ops: at API 29 its int8 input is TENSOR_QUANT8_SYMM with the
    tensor's zero point, which the runtime refuses when it is not 0."""
    g = graph(quantize_model(np.int8, q(0.5, -3), np.uint8, q(0.5, 125)), 29)
    assert g.op(0) == ("DEQUANTIZE", [(SYMM, (2, 3, 5), 0.5, -3)], [(FLOAT_T, (2, 3, 5), 0.0, 0)])
    assert "zero point -3" in g.error


@pytest.mark.parametrize("api,args", [
    (29, dict()), (29, dict(in_dtype=np.int8, in_q=q(0.5, 0), out_dtype=np.uint8, out_q=q(0.5, 128))),
    (30, dict(in_dtype=np.int8, in_q=q(0.5, -3), out_dtype=np.int8, out_q=q(0.25, 5))),
    (30, dict(in_dtype=np.uint8, in_q=q(0.5, 100), out_dtype=np.int8, out_q=q(0.75, -7)))])
def test_quantize_requantize_parity(api, args):
    assert_verified(quantize_model(**args), api)


# -- MEAN with requantization -------------------------------------------------------------------------------
def mean_model(dtype=np.uint8, in_q=q(0.5, 100), out_q=q(0.25, 90), axis=np.array([1, 2], np.int32),
               keep=False) -> bytes:
    out = (2, 1, 1, 5) if keep else (2, 5)
    if np.asarray(axis).ndim == 0:
        out = (2, 1, 4, 5) if keep else (2, 4, 5)
    return single_op_model(B.MEAN, [("x", (2, 3, 4, 5), dtype, in_q), ("axis", axis)], [("y", out, dtype, out_q)],
                           ReducerOptions(keep_dims=keep), version=2 if dtype == np.int8 else 1)


def test_mean_verdicts():
    assert verdict(mean_model(), 27) == (False, ["Android sdk version less than 28", "Expected Float32 input"])
    assert verdict(mean_model(), 28) == (False, ["Expected Float32 input"])
    assert accepted_levels(mean_model()) == [29, 30, 31, 33, 34, 35]
    assert accepted_levels(mean_model(np.float32, None, None)) == [28, 29, 30, 31, 33, 34, 35]


def test_mean_requantize_graph():
    """Different input and output quantization: MEAN into an intermediate with the input's scale and zero point
    (+128 below 30 for int8), then AppendRequantize: ADD of a [1] zero (scale 1) into the output."""
    g = graph(mean_model(), 29)
    mid = (U8, (2, 5), 0.5, 100)
    assert g.ops() == [
        ("MEAN", [(U8, (2, 3, 4, 5), 0.5, 100), (I32, (2,), 0.0, 0), ("INT32", 0)], [mid]),
        ("ADD", [mid, (U8, (1,), 1.0, 0), ("INT32", 0)], [(U8, (2, 5), 0.25, 90)])]
    assert list(g.input_value(1, 1)) == [0]
    g = graph(mean_model(np.int8, q(0.5, -28), q(0.25, -38), keep=True), 29)
    mid = (U8, (2, 1, 1, 5), 0.5, 100)
    assert g.ops() == [
        ("MEAN", [(U8, (2, 3, 4, 5), 0.5, 100), (I32, (2,), 0.0, 0), ("INT32", 1)], [mid]),
        ("ADD", [mid, (U8, (1,), 1.0, 0), ("INT32", 0)], [(U8, (2, 1, 1, 5), 0.25, 90)])]
    g = graph(mean_model(np.int8, q(0.5, -28), q(0.25, -38)), 30)
    mid = (S8, (2, 5), 0.5, -28)
    assert g.ops() == [
        ("MEAN", [(S8, (2, 3, 4, 5), 0.5, -28), (I32, (2,), 0.0, 0), ("INT32", 0)], [mid]),
        ("ADD", [mid, (S8, (1,), 1.0, 0), ("INT32", 0)], [(S8, (2, 5), 0.25, -38)])]


def test_mean_same_quantization_and_scalar_axis():
    # same params: no requantization; a rank-0 axis becomes a one-element vector
    g = graph(mean_model(in_q=q(0.5, 100), out_q=q(0.5, 100), axis=np.array(1, np.int32)), 29)
    assert g.ops() == [("MEAN", [(U8, (2, 3, 4, 5), 0.5, 100), (I32, (1,), 0.0, 0), ("INT32", 0)],
                        [(U8, (2, 4, 5), 0.5, 100)])]
    assert list(g.input_value(0, 1)) == [1]


@pytest.mark.parametrize("api,args,lsb", [
    (29, dict(), 2), (29, dict(dtype=np.int8, in_q=q(0.5, -28), out_q=q(0.25, -38), keep=True), 2),
    (30, dict(dtype=np.int8, in_q=q(0.5, -28), out_q=q(0.25, -38)), 2), (33, dict(axis=np.array(1, np.int32)), 1)])
def test_mean_requantize_gap(api, args, lsb):
    """MEAN then ADD rounds twice (to the input's scale, then to the output's) where TFLite requantizes once:
    the delegate's graph is off by construction, up to 1 LSB of the intermediate (here 2 output LSB, the
    scales being 0.5 and 0.25) plus the final rounding; nnconv's 1-LSB tolerance does not cover it. The
    documented gap is asserted instead: 2 LSB where the double rounding shows on these seeded inputs (the
    means over 12 values), 1 on the 3-value means of a single axis."""
    report = verify(mean_model(**args), api)
    (row,) = report.parity.outputs
    assert row.max_lsb == lsb, row.histogram


@pytest.mark.parametrize("api,args", [
    (29, dict(in_q=q(0.5, 100), out_q=q(0.5, 100))), (30, dict(dtype=np.int8, in_q=q(0.5, -28), out_q=q(0.5, -28))),
    (29, dict(dtype=np.int8, in_q=q(0.5, -28), out_q=q(0.5, -28), keep=True)),
    (28, dict(dtype=np.float32, in_q=None, out_q=None)), (33, dict(dtype=np.float32, in_q=None, out_q=None,
                                                                   axis=np.array(-1, np.int32)))])
def test_mean_parity(api, args):
    assert_verified(mean_model(**args), api)

