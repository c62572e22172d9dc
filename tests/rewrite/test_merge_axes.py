"""Rank-5 data-movement chains rewritten on merged axes (nnconv/rewrite/merge_axes.py): parity with TFLite
on the original rank-5 model, the merged shapes, the report's record, and the chains left alone."""

from __future__ import annotations

import numpy as np
import pytest

from harness import QuantParams, TfliteBuilder, assert_parity, assert_refused, nnconv_options
from nnconv.lowering.convert import ConversionOptions, make_state
from nnconv.pipeline import check_model
from nnconv.lowering.diagnostics import Code
from nnconv.rewrite.merge_axes import merge_tile, merge_transpose
from nnconv.tflite.options import ExpandDimsOptions, ReshapeOptions, SqueezeOptions, TileOptions, TransposeOptions
from nnconv.tflite.reader import read_model
from nnconv.tflite.schema_enums import BuiltinOperator as B

I32 = np.int32
TYPES = {"float32": (np.float32, None), "int8": (np.int8, QuantParams(0.05, -3)),
         "uint8": (np.uint8, QuantParams(0.05, 120))}


def repeat_model(dtype: str = "float32", x_shape=(1, 3, 4, 5), axis: int = 1, times: int = 2,
                 expand: bool = False, twice: bool = False) -> bytes:
    """`tf.repeat(x, times, axis)` as TensorFlow writes it: RESHAPE (or EXPAND_DIMS) to rank 5 with a new
    axis after `axis`, TILE along it, RESHAPE back; `twice` repeats the result along the next axis too,
    the second RESHAPE going straight from one rank-5 shape to the next (tf.repeat on H then W)."""
    np_dtype, q = TYPES[dtype]
    b = TfliteBuilder()
    x = b.input("x", x_shape, np_dtype, quant=q)
    src, shape = x, list(x_shape)
    for n, ax in enumerate([axis, axis + 1] if twice else [axis]):
        five = shape[:ax + 1] + [1] + shape[ax + 1:]
        tiled = five[:ax + 1] + [times] + five[ax + 2:]
        out = shape[:ax] + [shape[ax] * times] + shape[ax + 1:]
        a = b.tensor(f"a{n}", five, np_dtype, quant=q)
        if expand:
            b.op(B.EXPAND_DIMS, [src, b.const(f"ax{n}", np.array([ax + 1], I32))], [a], ExpandDimsOptions())
        else:
            b.op(B.RESHAPE, [src, b.const(f"s{n}", np.array(five, I32))], [a], ReshapeOptions(new_shape=tuple(five)))
        t = b.tensor(f"t{n}", tiled, np_dtype, quant=q)
        b.op(B.TILE, [a, b.const(f"m{n}", np.array([times if k == ax + 1 else 1 for k in range(5)], I32))], [t],
             TileOptions())
        y = b.tensor(f"y{n}", out, np_dtype, quant=q)
        b.op(B.RESHAPE, [t, b.const(f"o{n}", np.array(out, I32))], [y], ReshapeOptions(new_shape=tuple(out)))
        src, shape = y, out
    b.output(src)
    return b.finish()


def shuffle_model(dtype: str = "float32", groups: int = 2, squeeze: bool = False) -> bytes:
    """ShuffleNet's channel shuffle: RESHAPE [N,H,W,C] -> [N,H,W,g,C/g], TRANSPOSE (0,1,2,4,3), RESHAPE back
    (or, with `squeeze`, a RESHAPE to [N,1,H,W,C] read back through SQUEEZE)."""
    np_dtype, q = TYPES[dtype]
    n, h, w, c = 1, 3, 4, 6
    b = TfliteBuilder()
    x = b.input("x", (n, h, w, c), np_dtype, quant=q)
    a = b.tensor("a", (n, h, w, groups, c // groups), np_dtype, quant=q)
    b.op(B.RESHAPE, [x, b.const("s", np.array([n, h, w, groups, c // groups], I32))], [a], ReshapeOptions())
    t = b.tensor("t", (n, h, w, c // groups, groups), np_dtype, quant=q)
    b.op(B.TRANSPOSE, [a, b.const("perm", np.array([0, 1, 2, 4, 3], I32))], [t], TransposeOptions())
    if squeeze:
        r = b.tensor("r", (n, 1, h, w, c), np_dtype, quant=q)
        b.op(B.RESHAPE, [t, b.const("o", np.array([n, 1, h, w, c], I32))], [r], ReshapeOptions())
        y = b.tensor("y", (n, h, w, c), np_dtype, quant=q)
        b.op(B.SQUEEZE, [r], [y], SqueezeOptions(squeeze_dims=(1,)))
    else:
        y = b.tensor("y", (n, h, w, c), np_dtype, quant=q)
        b.op(B.RESHAPE, [t, b.const("o", np.array([n, h, w, c], I32))], [y], ReshapeOptions())
    b.output(y)
    return b.finish()


@pytest.mark.parametrize("shape,reps,dims,multiples", [
    pytest.param([1, 3, 1, 4, 5], [1, 1, 2, 1, 1], [3, 20], [1, 2], id="repeat-h"),
    pytest.param([1, 3, 4, 1, 5], [1, 1, 1, 3, 1], [12, 5], [1, 3], id="repeat-w"),
    pytest.param([2, 3, 4, 5, 6], [2, 1, 1, 3, 1], [24, 30], [2, 3], id="leading-multiple"),
])
def test_merge_tile_groups(shape, reps, dims, multiples):
    assert merge_tile(shape, reps) == (dims, multiples)
    x = np.arange(np.prod(shape)).reshape(shape)
    assert np.array_equal(np.tile(x, reps).reshape(-1), np.tile(x.reshape(dims), multiples).reshape(-1))


@pytest.mark.parametrize("shape,perm", [
    pytest.param([1, 3, 4, 2, 3], [0, 1, 2, 4, 3], id="channel-shuffle"),
    pytest.param([2, 3, 4, 5, 6], [3, 4, 0, 1, 2], id="rotate"),
    pytest.param([2, 1, 4, 5, 6], [0, 2, 1, 4, 3], id="unit-axis"),
])
def test_merge_transpose_keeps_element_order(shape, perm):
    dims, merged = merge_transpose(shape, perm)
    assert len(dims) <= 4
    x = np.arange(np.prod(shape)).reshape(shape)
    assert np.array_equal(np.transpose(x, perm).reshape(-1), np.transpose(x.reshape(dims), merged).reshape(-1))


@pytest.mark.parametrize("dtype", ["float32", "int8", "uint8"])
@pytest.mark.parametrize("api", [29, 30])
@pytest.mark.parametrize("expand,twice", [(False, False), (True, False), (False, True)],
                         ids=["reshape", "expand-dims", "h-then-w"])
def test_repeat_idiom_lowers_whole(dtype, api, expand, twice):
    m = repeat_model(dtype, expand=expand, twice=twice)
    result = assert_parity(m, api_level=api)
    assert all(op.type.name in ("RESHAPE", "TILE") for op in result.converted.model.main.operations)


def test_repeat_idiom_below_29_is_concatenations():
    assert_parity(repeat_model("float32", axis=2, times=3), api_level=27,
                  expect_ops=["RESHAPE", "CONCATENATION", "RESHAPE"])


@pytest.mark.parametrize("dtype", ["float32", "int8"])
@pytest.mark.parametrize("squeeze", [False, True], ids=["reshape", "squeeze"])
def test_channel_shuffle_lowers_whole(dtype, squeeze):
    result = assert_parity(shuffle_model(dtype, squeeze=squeeze), api_level=30)
    transposes = [op for op in result.converted.model.main.operations if op.type.name == "TRANSPOSE"]
    assert len(transposes) == 1


def test_report_names_the_rewrite_and_keeps_op_names():
    report = check_model(repeat_model(expand=True), 30, nnconv_options())
    assert report.ok
    assert [r.op for r in report.ops] == ["EXPAND_DIMS", "TILE", "RESHAPE"]
    assert all(any(w.startswith("rewritten by merge-axes") for w in r.notes) for r in report.ops)
    state = make_state(read_model(repeat_model()), 30)
    assert [t.shape for t in state.model.main.tensors if t.name in ("a0", "t0")] == [(3, 20), (3, 40)]


def test_untouched_when_no_rank4_form_exists():
    """A TRANSPOSE of five axes that all move apart keeps rank 5 after merging: refused as before."""
    b = TfliteBuilder()
    x = b.input("x", (2, 3, 4, 5, 6), np.float32)
    a = b.tensor("a", (2, 3, 4, 5, 6), np.float32)
    b.op(B.RESHAPE, [x, b.const("s", np.array([2, 3, 4, 5, 6], I32))], [a], ReshapeOptions())
    y = b.tensor("y", (6, 4, 2, 5, 3), np.float32)
    b.op(B.TRANSPOSE, [a, b.const("perm", np.array([4, 2, 0, 3, 1], I32))], [y], TransposeOptions())
    b.output(y)
    m = b.finish()
    assert_refused(m, 30, Code.RANK)
    assert not any(r.notes for r in check_model(m, 30, nnconv_options()).ops)


def test_model_output_inside_the_chain_is_left_alone():
    """The rank-5 tensor is also a model output: its shape must stay, so nothing is rewritten."""
    b = TfliteBuilder()
    x = b.input("x", (1, 3, 4, 5), np.float32)
    a = b.tensor("a", (1, 3, 1, 4, 5), np.float32)
    b.op(B.RESHAPE, [x, b.const("s", np.array([1, 3, 1, 4, 5], I32))], [a], ReshapeOptions())
    y = b.tensor("y", (1, 3, 2, 4, 5), np.float32)
    b.op(B.TILE, [a, b.const("m", np.array([1, 1, 2, 1, 1], I32))], [y], TileOptions())
    b.output(a, y)
    assert_refused(b.finish(), 30, Code.RANK)


def test_rewrites_do_not_depend_on_folding():
    assert_parity(repeat_model(), api_level=30, options=ConversionOptions(fold_constants=False))


Q_IN, Q_MID = QuantParams(0.05, -3), QuantParams(0.04, 7)


def _quant_steps(b: TfliteBuilder, src: int, shape, steps: str, name: str, quant: dict) -> int:
    """`steps` applied to `src`: 'd' a DEQUANTIZE to float, 'q' a QUANTIZE (float -> int8, or int8 -> int8
    at Q_MID: a requantization); `quant` maps a tensor to its parameters (None: float)."""
    for n, step in enumerate(steps):
        q = None if step == "d" else (Q_MID if quant[src] is not None else Q_IN)
        out = b.tensor(f"{name}{n}", shape, np.float32 if q is None else np.int8, quant=q)
        quant[out] = q
        b.op(B.DEQUANTIZE if step == "d" else B.QUANTIZE, [src], [out])
        src = out
    return src


def quantized_repeat_model(before: str, after: str, end: str = "", x_shape=(1, 3, 4, 5), twice: bool = True,
                           expand: bool = True) -> bytes:
    """Keras UpSampling2D (tf.repeat on H then W, as `repeat_model`) quantized to int8 by AI Edge
    Quantizer: int8 input; `before` DEQUANTIZE / QUANTIZE steps between the EXPAND_DIMS (or RESHAPE) and the
    TILE, `after` between the TILE and the last RESHAPE, `end` after that RESHAPE (see `_quant_steps`)."""
    b = TfliteBuilder()
    x = b.input("x", x_shape, np.int8, quant=Q_IN)
    quant = {x: Q_IN}
    src, shape = x, list(x_shape)
    for n, ax in enumerate([1, 2] if twice else [1]):
        five = shape[:ax + 1] + [1] + shape[ax + 1:]
        tiled = five[:ax + 1] + [2] + five[ax + 2:]
        out = shape[:ax] + [shape[ax] * 2] + shape[ax + 1:]
        q = quant[src]
        a = b.tensor(f"a{n}", five, np.int8 if q else np.float32, quant=q)
        quant[a] = q
        if expand:
            b.op(B.EXPAND_DIMS, [src, b.const(f"ax{n}", np.array([ax + 1], I32))], [a], ExpandDimsOptions())
        else:
            b.op(B.RESHAPE, [src, b.const(f"s{n}", np.array(five, I32))], [a], ReshapeOptions(new_shape=tuple(five)))
        a = _quant_steps(b, a, five, before, f"a{n}_", quant)
        q = quant[a]
        t = b.tensor(f"t{n}", tiled, np.int8 if q else np.float32, quant=q)
        quant[t] = q
        b.op(B.TILE, [a, b.const(f"m{n}", np.array([2 if k == ax + 1 else 1 for k in range(5)], I32))], [t],
             TileOptions())
        t = _quant_steps(b, t, tiled, after, f"t{n}_", quant)
        q = quant[t]
        y = b.tensor(f"y{n}", out, np.int8 if q else np.float32, quant=q)
        quant[y] = q
        b.op(B.RESHAPE, [t, b.const(f"o{n}", np.array(out, I32))], [y], ReshapeOptions(new_shape=tuple(out)))
        src = _quant_steps(b, y, out, end, f"y{n}_", quant)
        shape = out
    b.output(src)
    return b.finish()


@pytest.mark.parametrize("before,after,end", [
    pytest.param("d", "q", "", id="dequantize-tile-quantize"),
    pytest.param("dq", "dq", "", id="around-each-op"),
    pytest.param("", "d", "q", id="quantize-after-reshape"),
    pytest.param("q", "q", "", id="requantize"),
    pytest.param("d", "", "q", id="float-tile-and-reshape"),
])
@pytest.mark.parametrize("expand", [True, False], ids=["expand-dims", "reshape"])
def test_quantized_upsampling_sees_through_dequantize_quantize(before, after, end, expand):
    """AI Edge Quantizer's static int8 UpSampling2D: DEQUANTIZE / QUANTIZE inside the rank-5 chain commute
    with the data movement; every tensor on merged axes, one partition, the same values as TFLite."""
    m = quantized_repeat_model(before, after, end, expand=expand)
    report = check_model(m, 30, nnconv_options())
    assert report.ok  # every op lowers: one partition
    assert all(any(w.startswith("rewritten by merge-axes") for w in r.notes) for r in report.ops
               if r.op != "QUANTIZE" or not end)
    result = assert_parity(m, api_level=30)
    assert all(len(result.converted.model.main.operands[i].dimensions) <= 4
               for op in result.converted.model.main.operations for i in op.outputs)


def test_quantized_channel_shuffle_sees_through_dequantize_quantize():
    """RESHAPE -> DEQUANTIZE -> TRANSPOSE -> QUANTIZE -> RESHAPE (a quantized channel shuffle)."""
    b = TfliteBuilder()
    x = b.input("x", (1, 3, 4, 6), np.int8, quant=Q_IN)
    a = b.tensor("a", (1, 3, 4, 2, 3), np.int8, quant=Q_IN)
    b.op(B.RESHAPE, [x, b.const("s", np.array([1, 3, 4, 2, 3], I32))], [a], ReshapeOptions())
    quant = {a: Q_IN}
    d = _quant_steps(b, a, (1, 3, 4, 2, 3), "d", "a_", quant)
    t = b.tensor("t", (1, 3, 4, 3, 2), np.float32)
    b.op(B.TRANSPOSE, [d, b.const("perm", np.array([0, 1, 2, 4, 3], I32))], [t], TransposeOptions())
    quant[t] = None
    q = _quant_steps(b, t, (1, 3, 4, 3, 2), "q", "t_", quant)
    y = b.tensor("y", (1, 3, 4, 6), np.int8, quant=Q_IN)
    b.op(B.RESHAPE, [q, b.const("o", np.array([1, 3, 4, 6], I32))], [y], ReshapeOptions())
    b.output(y)
    assert_parity(b.finish(), api_level=30,
                  expect_ops=["RESHAPE", "DEQUANTIZE", "TRANSPOSE", "QUANTIZE", "RESHAPE"])


def _dequantized_repeat(x_quant: QuantParams, a_quant: QuantParams, dequantized_is_output: bool) -> bytes:
    """int8 x -> EXPAND_DIMS (rank 5) -> DEQUANTIZE -> TILE -> RESHAPE; the DEQUANTIZE's output also a
    model output when `dequantized_is_output`."""
    b = TfliteBuilder()
    x = b.input("x", (1, 3, 4, 5), np.int8, quant=x_quant)
    a = b.tensor("a", (1, 3, 1, 4, 5), np.int8, quant=a_quant)
    b.op(B.EXPAND_DIMS, [x, b.const("ax", np.array([2], I32))], [a], ExpandDimsOptions())
    d = b.tensor("d", (1, 3, 1, 4, 5), np.float32)
    b.op(B.DEQUANTIZE, [a], [d])
    t = b.tensor("t", (1, 3, 2, 4, 5), np.float32)
    b.op(B.TILE, [d, b.const("m", np.array([1, 1, 2, 1, 1], I32))], [t], TileOptions())
    y = b.tensor("y", (1, 6, 4, 5), np.float32)
    b.op(B.RESHAPE, [t, b.const("o", np.array([1, 6, 4, 5], I32))], [y], ReshapeOptions())
    b.output(*((y, d) if dequantized_is_output else (y,)))
    return b.finish()


def test_dequantize_read_twice_inside_the_chain_is_left_alone():
    """A rank-5 DEQUANTIZE output that a second op also reads (here: a model output) keeps its shape."""
    m = _dequantized_repeat(Q_IN, Q_IN, dequantized_is_output=True)
    assert_parity(_dequantized_repeat(Q_IN, Q_IN, dequantized_is_output=False), api_level=30)  # the control
    assert_refused(m, 30, Code.RANK)
    assert not any(r.notes for r in check_model(m, 30, nnconv_options()).ops)


def test_per_channel_dequantize_inside_the_chain_is_left_alone():
    """Per-channel parameters name an axis of the rank-5 tensor, which merging would move: no rewrite."""
    scales, zeros = [0.05, 0.04, 0.03, 0.02, 0.01], [0] * 5
    m = _dequantized_repeat(QuantParams(scales, zeros, 3), QuantParams(scales, zeros, 4), False)
    assert not any(r.notes for r in check_model(m, 30, nnconv_options()).ops)
