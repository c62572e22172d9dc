"""Placeholder shapes (-1 in the signature, 1 in the declared shape) replaced by the shapes TFLite's Prepare
computes (nnconv/rewrite/static_shapes.py), on the two idioms TensorFlow's converter really writes: a
dilated Conv1D through rank-3 SPACE_TO_BATCH_ND / BATCH_TO_SPACE_ND (the batch axis becomes batch x block)
and Keras 2's LayerNormalization reshaping [batch, time, features] to [1, batch*time, features, 1]."""

from __future__ import annotations

import numpy as np
import pytest

from harness import QuantParams, TfliteBuilder, assert_parity, nnconv_options
from nnconv.lowering.diagnostics import Verdict
from nnconv.pipeline import analyse, check_model
from nnconv.tflite.options import (AddOptions, ConcatenationOptions, Conv2DOptions, ExpandDimsOptions, MulOptions,
                                   PackOptions, ReducerOptions, ReshapeOptions, ShapeOptions, SplitOptions,
                                   StridedSliceOptions, SubOptions)
from nnconv.tflite.schema_enums import BuiltinOperator as B

I32, F32 = np.int32, np.float32


def dilated_conv1d_model(declare_true_shapes: bool = False, paddings=((2, 2),), crops=((0, 0),)) -> bytes:
    """x [1, 16, 4] -> SPACE_TO_BATCH_ND(block 2) -> EXPAND_DIMS -> 3-tap CONV_2D -> RESHAPE -> BATCH_TO_SPACE_ND,
    the intermediate shapes declared as TensorFlow writes them (batch 1, signature -1) unless
    `declare_true_shapes`."""
    rng = np.random.default_rng(0)
    b = TfliteBuilder()
    length = 16 + sum(paddings[0])

    def t(name, true_shape):
        declared = true_shape if declare_true_shapes else (1, *true_shape[1:])
        return b.tensor(name, declared, F32, shape_signature=None if declare_true_shapes else (-1, *true_shape[1:]))

    x = b.input("x", (1, 16, 4), F32, shape_signature=(-1, 16, 4))
    s2b = t("s2b", (2, length // 2, 4))
    b.op(B.SPACE_TO_BATCH_ND, [x, b.const("block", np.array([2], I32)), b.const("pads", np.array(paddings, I32))],
         [s2b])
    wide = t("wide", (2, 1, length // 2, 4))
    b.op(B.EXPAND_DIMS, [s2b, b.const("axis", np.array(1, I32))], [wide], ExpandDimsOptions())
    conv = t("conv", (2, 1, length // 2 - 2, 3))
    b.op(B.CONV_2D, [wide, b.const("w", rng.standard_normal((3, 1, 3, 4)).astype(F32)),
                     b.const("bias", rng.standard_normal(3).astype(F32))], [conv],
         Conv2DOptions(padding=1, stride_w=1, stride_h=1))
    narrow = t("narrow", (2, length // 2 - 2, 3))
    b.op(B.RESHAPE, [conv, b.const("shape", np.array([-1, length // 2 - 2, 3], I32))], [narrow], ReshapeOptions())
    out_len = length - 4 - sum(crops[0])
    y = b.tensor("y", (1, out_len, 3), F32, shape_signature=(-1, out_len, 3))
    b.op(B.BATCH_TO_SPACE_ND, [narrow, b.const("block2", np.array([2], I32)), b.const("crops", np.array(crops, I32))],
         [y])
    b.output(y)
    return b.finish()


def _rows_reshape() -> tuple[TfliteBuilder, int, int]:
    """x [1, 6, 4] (signature [-1, 6, 4]) reshaped as Keras 2's LayerNormalization does, to [1, rows, 4, 1]
    with rows = prod(SHAPE(x)[0:2]) (ops 0-4), declared [1, 1, 4, 1]: (builder, SHAPE(x), the reshape)."""
    b = TfliteBuilder()
    x = b.input("x", (1, 6, 4), F32, shape_signature=(-1, 6, 4))
    s = b.tensor("s", (3,), I32)
    b.op(B.SHAPE, [x], [s], ShapeOptions(out_type=2))
    lead = b.tensor("lead", (2,), I32)
    b.op(B.STRIDED_SLICE, [s, b.const("b0", np.array([0], I32)), b.const("e0", np.array([2], I32)),
                           b.const("s0", np.array([1], I32))], [lead], StridedSliceOptions())
    rows = b.tensor("rows", (), I32)
    b.op(B.REDUCE_PROD, [lead, b.const("ax0", np.array([0], I32))], [rows], ReducerOptions())
    packed = b.tensor("packed", (4,), I32)
    b.op(B.PACK, [b.const("one", np.array(1, I32)), rows, b.const("four", np.array(4, I32)),
                  b.const("one2", np.array(1, I32))], [packed], PackOptions(values_count=4, axis=0))
    r = b.tensor("r", (1, 1, 4, 1), F32, shape_signature=(1, -1, 4, 1))
    b.op(B.RESHAPE, [x, packed], [r], ReshapeOptions())
    return b, s, r


def layer_norm_model() -> bytes:
    """Keras 2's LayerNormalization idiom on x [1, 6, 4]: RESHAPE(x, [1, prod(SHAPE(x)[0:2]), 4, 1]), declared
    [1, 1, 4, 1] (signature [1, -1, 4, 1]), centred by its MEAN over the features, reshaped back by SHAPE(x)."""
    b, s, r = _rows_reshape()
    mean = b.tensor("mean", (1, 1, 1, 1), F32, shape_signature=(1, -1, 1, 1))
    b.op(B.MEAN, [r, b.const("ax2", np.array([2], I32))], [mean], ReducerOptions(keep_dims=True))
    centred = b.tensor("centred", (1, 1, 4, 1), F32, shape_signature=(1, -1, 4, 1))
    b.op(B.SUB, [r, mean], [centred], SubOptions())
    y = b.tensor("y", (1, 6, 4), F32, shape_signature=(-1, 6, 4))
    b.op(B.RESHAPE, [centred, s], [y], ReshapeOptions())
    b.output(y)
    return b.finish()


def _rewritten(model: bytes, api: int) -> list[int]:
    report = check_model(model, api, nnconv_options())
    return [r.index for r in report.ops if any("static-shapes" in n for n in r.notes)]


@pytest.mark.parametrize("api", [29, 30])
@pytest.mark.parametrize("paddings,crops", [(((2, 2),), ((0, 0),)), (((1, 3),), ((1, 1),))], ids=["same", "cropped"])
def test_dilated_conv1d_lowers_whole_with_true_shapes(api, paddings, crops):
    model = dilated_conv1d_model(paddings=paddings, crops=crops)
    assert _rewritten(model, api) == [0, 1, 2, 3]  # S2B, EXPAND_DIMS, CONV_2D, RESHAPE: batch 2, not 1
    report, plan = analyse(model, api, nnconv_options())
    assert len(plan.partitions) == 1 and all(r.status is Verdict.LOWERED for r in report.ops)
    assert_parity(model, api_level=api)


def test_layer_norm_reshape_gets_the_rows_tflite_computes():
    model = layer_norm_model()
    report = check_model(model, 30, nnconv_options())
    assert [r.status for r in report.ops[:4]] == [Verdict.FOLDED] * 4
    assert all(r.status is Verdict.LOWERED for r in report.ops[4:])
    assert _rewritten(model, 30) == [4, 5, 6]  # the RESHAPE, MEAN and SUB: [1, 6, 4, 1], not [1, 1, 4, 1]
    assert_parity(model, api_level=30)


def test_true_declared_shapes_are_left_alone():
    assert _rewritten(dilated_conv1d_model(declare_true_shapes=True), 30) == []
    assert_parity(dilated_conv1d_model(declare_true_shapes=True), api_level=30)


def _wrong_static_claim(read_by_relu: bool = False) -> bytes:
    """SPACE_TO_BATCH_ND [1, 8, 2] by 2 declared [1, 4, 2] with no signature (it gives [2, 4, 2])."""
    b = TfliteBuilder()
    x = b.input("x", (1, 8, 2), F32)
    wrong = b.tensor("wrong", (1, 4, 2), F32)
    b.op(B.SPACE_TO_BATCH_ND, [x, b.const("block", np.array([2], I32)), b.const("pads", np.zeros((1, 2), I32))],
         [wrong])
    if read_by_relu:
        y = b.tensor("y", (1, 4, 2), F32)
        b.op(B.RELU, [wrong], [y])
        wrong = y
    b.output(wrong)
    return b.finish()


@pytest.mark.parametrize("read_by_relu", [False, True], ids=["output", "read-on"])
def test_a_wrong_static_claim_is_overruled_as_tflite_does(read_by_relu):
    """A static declared shape (no -1 in a signature) that the op's Prepare contradicts: TFLite resizes the
    output and runs the model, so the conversion takes the computed shape too (check and run agree), and
    says so."""
    model = _wrong_static_claim(read_by_relu)
    assert _rewritten(model, 30) == ([0, 1] if read_by_relu else [0])
    notes = [n for r in check_model(model, 30, nnconv_options()).ops for n in r.notes if "static-shapes" in n]
    assert "declared [1, 4, 2], a static claim" in notes[0]
    assert list(assert_parity(model, api_level=30).converted.outputs[0].shape) == [2, 4, 2]


def test_a_static_claim_after_an_unresolved_placeholder_is_kept():
    """An input that still holds a placeholder (a -1 no rule could resolve) makes the computed shape a guess,
    which does not overrule a static claim: the [5, 1, 4] CONCATENATION of a list write stays."""
    b = TfliteBuilder()
    head = b.input("head", (1, 1, 4), F32, shape_signature=(-1, 1, 4))
    out = b.tensor("out", (5, 1, 4), F32)
    b.op(B.CONCATENATION, [head, b.input("item", (1, 1, 4), F32)], [out], ConcatenationOptions(axis=0))
    b.output(out)
    assert _rewritten(b.finish(), 30) == []


def test_a_right_placeholder_becomes_static_so_an_int8_fill_folds():
    """An int8 LayerNormalization over a [1, C] input: its FILL of ones has shape [1] (signature [-1]), which
    the placeholder gets right; marked static, the FILL folds (NNAPI's FILL takes no int8 value)."""
    q = QuantParams(1 / 255, -128)
    b = TfliteBuilder()
    x = b.input("x", (1, 6), np.int8, quant=q, shape_signature=(-1, 6))
    s = b.tensor("s", (2,), I32)
    b.op(B.SHAPE, [x], [s], ShapeOptions(out_type=2))
    rows = b.tensor("rows", (1,), I32)
    b.op(B.STRIDED_SLICE, [s, b.const("b0", np.array([0], I32)), b.const("e0", np.array([1], I32)),
                           b.const("s0", np.array([1], I32))], [rows], StridedSliceOptions())
    ones = b.tensor("ones", (1,), np.int8, quant=q, shape_signature=(-1,))
    b.op(B.FILL, [rows, b.const("one", np.array(127, np.int8), quant=q)], [ones])
    y = b.tensor("y", (1, 6), np.int8, quant=QuantParams(2 / 255, -128), shape_signature=(-1, 6))
    b.op(B.MUL, [x, ones], [y], MulOptions())
    b.output(y)
    model = b.finish()
    report = check_model(model, 30, nnconv_options())
    assert [r.status for r in report.ops] == [Verdict.FOLDED] * 3 + [Verdict.LOWERED]
    assert_parity(model, api_level=30)


def test_slicing_ops_follow_through_their_folds():
    """SPLIT and STRIDED_SLICE of the LayerNormalization reshape (true [1, 6, 4, 1], declared [1, 1, 4, 1]):
    their outputs come from the folds' own slicing rules on a zero-stride view, a placeholder each."""
    b, s, r = _rows_reshape()
    halves = [b.tensor(f"half{k}", (1, 1, 2, 1), F32, shape_signature=(1, -1, 2, 1)) for k in range(2)]
    b.op(B.SPLIT, [b.const("axis", np.array(2, I32)), r], halves, SplitOptions(num_splits=2))
    top = b.tensor("top", (1, 1, 2, 1), F32, shape_signature=(1, -1, 2, 1))
    b.op(B.STRIDED_SLICE, [halves[1], b.const("b1", np.array([0, 1, 0, 0], I32)),
                           b.const("e1", np.array([1, 4, 2, 1], I32)), b.const("s1", np.array([1, 1, 1, 1], I32))],
         [top], StridedSliceOptions())
    y = b.tensor("y", (1, 1, 2, 1), F32, shape_signature=(1, -1, 2, 1))
    b.op(B.ADD, [top, b.const("bias", np.array(0.5, F32))], [y], AddOptions())
    b.output(y)
    model = b.finish()
    assert _rewritten(model, 30) == [4, 5, 6, 7]  # RESHAPE [1, 6, 4, 1], SPLIT [1, 6, 2, 1] x2, the slice [1, 3, 2, 1]
    assert_parity(model, api_level=30)
