"""Constant folding: SHAPE of static tensors and the int32 arithmetic TensorFlow emits around it."""

from __future__ import annotations

import numpy as np
import pytest

from harness import QuantParams, TfliteBuilder, assert_parity, assert_refused, nnconv_options
from nnconv.lowering.convert import ConversionOptions, make_state
from nnconv.pipeline import check_model
from nnconv.lowering.diagnostics import Code
from nnconv.rewrite.folds.shape import strided_slice_index
from nnconv.tflite.options import (CastOptions, ConcatenationOptions, ExpandDimsOptions, FloorDivOptions,
                                   GatherOptions, PackOptions, ReducerOptions, ReshapeOptions, ShapeOptions,
                                   SqueezeOptions, StridedSliceOptions, TransposeOptions)
from nnconv.tflite.reader import read_model
from nnconv.tflite.schema_enums import BuiltinOperator as B

I32 = np.int32


def se_block_model(x_shape=(2, 5, 7, 3), dynamic: bool = False) -> bytes:
    """TensorFlow's squeeze-excite reshape idiom: MEAN, then RESHAPE to [SHAPE(x)[0], 1, 1, C]."""
    n, _h, _w, ch = x_shape
    b = TfliteBuilder()
    sig = (-1,) + tuple(x_shape[1:]) if dynamic else None
    x = b.input("x", x_shape, np.float32, shape_signature=sig)
    m = b.tensor("m", (n, ch), np.float32)
    b.op(B.MEAN, [x, b.const("axes", np.array([1, 2], I32))], [m], ReducerOptions(keep_dims=False))
    s = b.tensor("s", (4,), I32)
    b.op(B.SHAPE, [x], [s], ShapeOptions(out_type=2))
    n_t = b.tensor("n", (), I32)
    b.op(B.STRIDED_SLICE, [s, b.const("b0", np.array([0], I32)), b.const("e0", np.array([1], I32)),
                           b.const("s0", np.array([1], I32))], [n_t], StridedSliceOptions(shrink_axis_mask=1))
    one = b.const("one", np.array(1, I32))
    packed = b.tensor("packed", (4,), I32)
    b.op(B.PACK, [n_t, one, one, b.const("c", np.array(ch, I32))], [packed], PackOptions(values_count=4, axis=0))
    y = b.tensor("y", (n, 1, 1, ch), np.float32)
    b.op(B.RESHAPE, [m, packed], [y], ReshapeOptions())
    b.output(y)
    return b.finish()


@pytest.mark.parametrize("api", [28, 30])
def test_squeeze_excite_shape_chain_lowers_in_one_partition(api):
    result = assert_parity(se_block_model(), api_level=api, expect_ops=["MEAN", "RESHAPE"])
    statuses = [r.status.value for r in result.report.ops]
    assert statuses == ["lowered", "folded", "folded", "folded", "lowered"]


def test_folded_values_of_the_shape_chain():
    model = read_model(se_block_model())
    state = make_state(model, 30)
    names = {t.name: t.index for t in model.main.tensors}
    np.testing.assert_array_equal(state.folded[(0, names["s"])], [2, 5, 7, 3])
    assert state.folded[(0, names["n"])].shape == () and int(state.folded[(0, names["n"])]) == 2
    np.testing.assert_array_equal(state.folded[(0, names["packed"])], [2, 1, 1, 3])
    assert (0, names["y"]) not in state.folded and (0, names["m"]) not in state.folded


def test_no_folding_means_the_shape_chain_is_refused():
    # SHAPE itself then lowers (ADD of its constant), but a RESHAPE with a computed shape cannot, and the
    # STRIDED_SLICE of int32 data that drops an axis needs NNAPI's int32 RESHAPE, from API 33 only.
    diags = assert_refused(se_block_model(), 30, Code.NON_CONSTANT, options=ConversionOptions(fold_constants=False))
    assert Code.API_LEVEL in [d.code for d in diags]


def test_dynamic_batch_folds_at_the_stored_default_shape():
    # A -1 batch in the shape signature takes the stored extent, as TFLite allocates the model and as the
    # NNAPI delegate lowers it without dynamic dimensions: the SHAPE chain folds.
    report = check_model(se_block_model(dynamic=True), api_level=30, options=nnconv_options())
    shape_op = report.ops[1]
    assert shape_op.op == "SHAPE" and shape_op.status.value == "folded"
    assert report.ok


def test_model_output_is_never_folded():
    b = TfliteBuilder()
    x = b.input("x", (2, 3), np.float32)
    y = b.tensor("y", (3, 2), np.float32)
    b.op(B.TRANSPOSE, [x, b.const("perm", np.array([1, 0], I32))], [y], TransposeOptions())
    s = b.tensor("s", (2,), I32)
    b.op(B.SHAPE, [x], [s], ShapeOptions(out_type=2))
    b.output(y, s)
    model_bytes = b.finish()
    assert (0, s) not in make_state(read_model(model_bytes), 30).folded
    # The unfolded SHAPE is computed as ADD(constant, 0) from API 30, and refused below.
    result = assert_parity(model_bytes, api_level=30, expect_ops=["TRANSPOSE", "ADD"])
    assert result.report.ops[1].status.value == "lowered"
    assert_refused(model_bytes, 29, Code.API_LEVEL, min_api_level=30)


def int_chain_model() -> tuple[bytes, dict[str, np.ndarray]]:
    """A chain of int32 ops over constants feeding a RESHAPE's shape; returns the expected folded values."""
    b = TfliteBuilder()
    x = b.input("x", (2, 3, 4), np.float32)
    shp = b.tensor("shp", (3,), I32)
    b.op(B.SHAPE, [x], [shp], ShapeOptions(out_type=2))
    g = b.tensor("g", (2,), I32)  # [4, 2]
    b.op(B.GATHER, [shp, b.const("gi", np.array([2, 0], I32))], [g], GatherOptions(axis=0))
    fd = b.tensor("fd", (2,), I32)  # [4, 2] // [2, 2] = [2, 1]
    b.op(B.FLOOR_DIV, [g, b.const("two", np.array([2, 2], I32))], [fd], FloorDivOptions())
    prod = b.tensor("prod", (2,), I32)  # [2*3, 1*3] -> [6, 3]; int64 cast round-trip below
    b.op(B.MUL, [fd, b.const("three", np.array(3, I32))], [prod])
    c64 = b.tensor("c64", (2,), np.int64)
    b.op(B.CAST, [prod], [c64], CastOptions())
    c32 = b.tensor("c32", (2,), I32)
    b.op(B.CAST, [c64], [c32], CastOptions())
    e = b.tensor("e", (1, 2), I32)
    b.op(B.EXPAND_DIMS, [c32, b.const("ax", np.array(0, I32))], [e], ExpandDimsOptions())
    sq = b.tensor("sq", (2,), I32)
    b.op(B.SQUEEZE, [e], [sq], SqueezeOptions(squeeze_dims=(0,)))
    shape_t = b.tensor("shape", (3,), I32)  # [6, 3] ++ [-1] -> reshape (2,3,4) to (6, 3, ...)? 24/18 no
    b.op(B.CONCATENATION, [b.const("head", np.array([4], I32)), sq], [shape_t], ConcatenationOptions(axis=0))
    y = b.tensor("y", (4, 6, 1), np.float32)
    b.op(B.RESHAPE, [x, shape_t], [y], ReshapeOptions())
    b.output(y)
    expected = {"g": [4, 2], "fd": [2, 1], "prod": [6, 3], "c64": [6, 3], "sq": [6, 3], "shape": [4, 6, 3]}
    return b.finish(), expected


def test_int_arithmetic_chain_folds_to_expected_values():
    model_bytes, expected = int_chain_model()
    model = read_model(model_bytes)
    state = make_state(model, 30)
    names = {t.name: t.index for t in model.main.tensors}
    for name, value in expected.items():
        np.testing.assert_array_equal(state.folded[(0, names[name])], value, err_msg=name)
    # The RESHAPE itself then sees an inconsistent target (4*6*3 != 24) and is refused with a reason.
    report = check_model(model, api_level=30, options=nnconv_options())
    assert report.ops[-1].status.value == "refused_operand"


def test_quantized_arithmetic_and_large_results_are_not_folded():
    b = TfliteBuilder()
    q = QuantParams(0.1, 3)
    a = b.const("a", np.array([1, 2, 3], np.uint8), quant=q)
    c = b.const("c", np.array([4, 5, 6], np.uint8), quant=q)
    s = b.tensor("s", (3,), np.uint8, quant=q)
    b.op(B.ADD, [a, c], [s])
    big = b.tensor("big", (256, 256), np.float32)
    b.op(B.FILL, [b.const("dims", np.array([256, 256], I32)), b.const("v", np.array(1.0, np.float32))], [big])
    x = b.input("x", (256, 256), np.float32)
    y = b.tensor("y", (256, 256), np.float32)
    b.op(B.ADD, [x, big], [y])
    y2 = b.tensor("y2", (3,), np.uint8, quant=q)
    xq = b.input("xq", (3,), np.uint8, quant=q)
    b.op(B.ADD, [xq, s], [y2])
    b.output(y, y2)
    model = read_model(b.finish())
    state = make_state(model, 30)
    assert (0, s) not in state.folded
    assert (0, big) not in state.folded


X = np.arange(2 * 5 * 7).reshape(2, 5, 7)


@pytest.mark.parametrize("begin,end,strides,opts,expected", [
    ([0, 1], [0, 3], [1, 1], StridedSliceOptions(ellipsis_mask=1), X[..., 1:3]),
    ([0, 1, 0], [0, -1, 0], [1, 2, 1], StridedSliceOptions(new_axis_mask=5), X[None, 1:-1:2, None]),
    ([-1, 0], [0, 0], [-1, 1], StridedSliceOptions(end_mask=3), X[::-1, :]),
    ([1, 0, 2], [0, 0, 0], [1, 1, 1], StridedSliceOptions(shrink_axis_mask=5, end_mask=2), X[1, :, 2]),
    ([1, 2], [2, 2], [1, 1], StridedSliceOptions(offset=True), X[1:3, 2:4]),
    ([-9, 1, 0], [9, 9, -2], [1, 3, 1], StridedSliceOptions(), X[0:2, 1:5:3, 0:5]),
], ids=["ellipsis", "new-axis", "neg-stride", "shrink", "offset", "clamped"])
def test_strided_slice_index_matches_tensorflow_semantics(begin, end, strides, opts, expected):
    np.testing.assert_array_equal(X[strided_slice_index(X.shape, begin, end, strides, opts)], expected)


def _folded_value(opcode, inputs, out_shape, out_dtype, options=None):
    """Folds one op over constant inputs feeding a RESHAPE whose output is the model output."""
    b = TfliteBuilder()
    ins = [b.const(f"c{k}", v) for k, v in enumerate(inputs)]
    t = b.tensor("t", out_shape, out_dtype)
    b.op(opcode, ins, [t], options)
    x = b.input("x", (1,), np.float32)
    y = b.tensor("y", (1,), np.float32)
    b.op(B.RESHAPE, [x, t] if out_dtype == I32 else [x, b.const("s", np.array([1], I32))], [y])
    b.output(y)
    model = read_model(b.finish())
    return make_state(model, 30).folded.get((0, t))


@pytest.mark.parametrize("opcode,inputs,expected", [
    (B.DIV, [np.array([7, -7, 7, -7], I32), np.array([2, 2, -2, -2], I32)], [3, -3, -3, 3]),
    (B.FLOOR_DIV, [np.array([7, -7], I32), np.array([2, 2], I32)], [3, -4]),
    (B.FLOOR_MOD, [np.array([7, -7], I32), np.array([3, 3], I32)], [1, 2]),
    (B.SUB, [np.array([5, 1], I32), np.array(2, I32)], [3, -1]),
    (B.MAXIMUM, [np.array([5, 1], I32), np.array([2, 9], I32)], [5, 9]),
    (B.SELECT_V2, [np.array([True, False]), np.array([1, 2], I32), np.array([8, 9], I32)], [1, 9]),
    (B.NEG, [np.array([3, -4], I32)], [-3, 4]),
    (B.RANGE, [np.array(1, I32), np.array(8, I32), np.array(3, I32)], [1, 4, 7]),
], ids=["div-truncates", "floor-div", "floor-mod", "sub-broadcast", "maximum", "select-v2", "neg", "range"])
def test_int_evaluators(opcode, inputs, expected):
    got = _folded_value(opcode, inputs, (len(expected),), I32)
    assert got is not None, "not folded"
    np.testing.assert_array_equal(got, expected)


def test_comparison_folds_to_bool():
    got = _folded_value(B.LESS, [np.array([1, 5], I32), np.array([3, 3], I32)], (2,), np.bool_)
    np.testing.assert_array_equal(got, [True, False])


def test_division_by_zero_is_left_unfolded():
    assert _folded_value(B.FLOOR_DIV, [np.array([1, 2], I32), np.array([0, 1], I32)], (2,), I32) is None


def test_concat_of_differently_quantized_constants_is_not_folded():
    b = TfliteBuilder()
    a = b.const("a", np.array([1, 2], np.uint8), quant=QuantParams(0.1, 3))
    c = b.const("c", np.array([4, 5], np.uint8), quant=QuantParams(0.2, 3))
    t = b.tensor("t", (4,), np.uint8, quant=QuantParams(0.1, 3))
    b.op(B.CONCATENATION, [a, c], [t], ConcatenationOptions(axis=0))
    same = b.tensor("same", (4,), np.uint8, quant=QuantParams(0.1, 3))
    b.op(B.CONCATENATION, [a, a], [same], ConcatenationOptions(axis=0))
    x = b.input("x", (4,), np.uint8, quant=QuantParams(0.1, 3))
    y = b.tensor("y", (4,), np.uint8, quant=QuantParams(0.1, 3))
    b.op(B.ADD, [x, t], [y])
    y2 = b.tensor("y2", (4,), np.uint8, quant=QuantParams(0.1, 3))
    b.op(B.ADD, [x, same], [y2])
    b.output(y, y2)
    state = make_state(read_model(b.finish()), 30)
    assert (0, t) not in state.folded
    np.testing.assert_array_equal(state.folded[(0, same)], [1, 2, 1, 2])


def broadcast_args_model(shape_is_output: bool = False, dynamic_shape: bool = False) -> bytes:
    """Keras 3's broadcasting idiom: BROADCAST_TO(x, BROADCAST_ARGS(SHAPE(x), [2, 1])) for x [1, 3]; the
    shape pair optionally also a model output, or the second shape a model input."""
    b = TfliteBuilder()
    x = b.input("x", (1, 3), np.float32)
    s = b.tensor("s", (2,), I32)
    b.op(B.SHAPE, [x], [s], ShapeOptions(out_type=2))
    other = b.input("t", (2,), I32) if dynamic_shape else b.const("t", np.array([2, 1], I32))
    args = b.tensor("args", (2,), I32)
    b.op(B.BROADCAST_ARGS, [s, other], [args])
    y = b.tensor("y", (2, 3), np.float32)
    b.op(B.BROADCAST_TO, [x, args], [y], version=2)
    b.output(y, args) if shape_is_output else b.output(y)
    return b.finish()


def test_broadcast_args_of_constant_shapes_folds():
    result = assert_parity(broadcast_args_model(), api_level=30, expect_ops=["TILE"])
    assert [r.status.value for r in result.report.ops] == ["folded", "folded", "lowered"]
    model = read_model(broadcast_args_model())
    args = next(t.index for t in model.main.tensors if t.name == "args")
    np.testing.assert_array_equal(make_state(model, 30).folded[(0, args)], [2, 3])


def test_unfolded_broadcast_args_is_a_constant_add_from_api_30():
    """Its output a model output: not folded, computed as ADD(constant, 0) (API 30), refused below."""
    model = broadcast_args_model(shape_is_output=True)
    assert_parity(model, api_level=30, expect_ops=["ADD", "TILE"])
    assert_refused(model, 29, Code.API_LEVEL, min_api_level=30)


def test_broadcast_args_of_a_run_time_shape_is_refused():
    assert_refused(broadcast_args_model(dynamic_shape=True), 30, Code.NON_CONSTANT)
