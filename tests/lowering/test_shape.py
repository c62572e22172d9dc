"""Shape and data-movement lowerings: parity with TFLite and refusals."""

from __future__ import annotations

import numpy as np
import pytest

from harness import QuantParams, assert_parity, assert_refused, nnconv_options, single_op_model
from nnconv.lowering.diagnostics import Code
from nnconv.tflite.options import (BatchToSpaceNDOptions, ConcatenationOptions, DepthToSpaceOptions,
                                   ExpandDimsOptions, MirrorPadOptions, PackOptions, PadOptions, ReshapeOptions,
                                   ReverseV2Options, SpaceToBatchNDOptions, SpaceToDepthOptions, SqueezeOptions,
                                   TileOptions, TransposeOptions, UnpackOptions)
from nnconv.tflite.schema_enums import BuiltinOperator as B
from shape_models import io, op_model, typed

I32 = np.int32
QUANT_LEVELS = [("float32", 27), ("float32", 30), ("uint8", 29), ("int8", 29), ("int8", 30)]


def _levels(min_level):
    return [pytest.param(d, max(lv, min_level), id=f"{d}-api{max(lv, min_level)}") for d, lv in QUANT_LEVELS]


# -- RESHAPE -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype,api", _levels(27))
def test_reshape_parity_shape_input_with_minus_one(dtype, api):
    m = op_model(B.RESHAPE, (2, 5, 7, 3), (10, 21), dtype, [np.array([10, -1], I32)], ReshapeOptions())
    assert_parity(m, api_level=api, expect_ops=["RESHAPE"])


def test_reshape_from_options_and_to_scalar_like():
    m = op_model(B.RESHAPE, (3, 4), (2, 3, 2), consts=[], options=ReshapeOptions(new_shape=(2, -1, 2)))
    assert_parity(m, api_level=27, expect_ops=["RESHAPE"])


def test_reshape_int32_needs_api33():
    m = op_model(B.RESHAPE, (2, 6), (3, 4), "int32", [np.array([3, 4], I32)])
    assert_parity(m, api_level=33)
    assert_refused(m, 30, Code.API_LEVEL, min_api_level=33)


def test_reshape_non_constant_shape_refused():
    m = single_op_model(B.RESHAPE, [("x", (2, 6), np.float32), ("s", (2,), I32)], [("y", (3, 4), np.float32)])
    assert_refused(m, 30, Code.NON_CONSTANT)


def test_reshape_declared_shape_overruled_as_tflite_does():
    """A file declaring [3, 4] for a RESHAPE to [4, 3]: TFLite's Prepare resizes the output from the shape
    input and runs it, so the conversion takes [4, 3] too (the static-shapes rewrite)."""
    m = op_model(B.RESHAPE, (2, 6), (3, 4), consts=[np.array([4, 3], I32)])
    assert list(assert_parity(m, api_level=30, expect_ops=["RESHAPE"]).converted.outputs[0].shape) == [4, 3]


def test_reshape_quant_mismatch_needs_api29():
    """TFLite's RESHAPE keeps the stored values: a CAST carries them to an output quantized apart (API 29; see
    test_stored_values.py)."""
    m = single_op_model(B.RESHAPE, [("x", (2, 6), np.uint8, QuantParams(0.1, 3)), ("s", np.array([12], I32))],
                        [("y", (12,), np.uint8, QuantParams(0.2, 3))])
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)
    assert_parity(m, api_level=29, expect_ops=["RESHAPE", "CAST"])


# -- SQUEEZE / EXPAND_DIMS ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype,api", _levels(28))
@pytest.mark.parametrize("dims,out", [((0, 3), (5, 7)), ((), (5, 7)), ((-1,), (1, 5, 7))])
def test_squeeze_parity(dtype, api, dims, out):
    m = op_model(B.SQUEEZE, (1, 5, 7, 1), out, dtype, options=SqueezeOptions(squeeze_dims=dims))
    assert_parity(m, api_level=api, expect_ops=["SQUEEZE"])


@pytest.mark.parametrize("dtype", ["float32", "uint8"])
def test_squeeze_is_a_reshape_at_27(dtype):
    m = op_model(B.SQUEEZE, (1, 5, 7, 1), (5, 7), dtype, options=SqueezeOptions(squeeze_dims=(0, 3)))
    assert_parity(m, api_level=27, expect_ops=["RESHAPE"])


def test_squeeze_non_unit_dim_refused():
    m = op_model(B.SQUEEZE, (1, 5, 7, 1), (5, 7), options=SqueezeOptions(squeeze_dims=(1,)))
    assert_refused(m, 30, Code.OPERAND_VALUE)


@pytest.mark.parametrize("dtype,api", _levels(29) + [pytest.param("int32", 29, id="int32-api29")])
@pytest.mark.parametrize("axis,out", [(0, (1, 5, 7, 3)), (-1, (5, 7, 3, 1)), (2, (5, 7, 1, 3))])
def test_expand_dims_parity(dtype, api, axis, out):
    m = op_model(B.EXPAND_DIMS, (5, 7, 3), out, dtype, [np.array(axis, I32)], ExpandDimsOptions())
    assert_parity(m, api_level=api, expect_ops=["EXPAND_DIMS"])


@pytest.mark.parametrize("dtype,api", [("float32", 27), ("uint8", 28), ("int8", 28)])
def test_expand_dims_is_a_reshape_below_29(dtype, api):
    m = op_model(B.EXPAND_DIMS, (5, 7, 3), (5, 1, 7, 3), dtype, [np.array(1, I32)], ExpandDimsOptions())
    assert_parity(m, api_level=api, expect_ops=["RESHAPE"])


def test_expand_dims_refusals():
    m = op_model(B.EXPAND_DIMS, (5, 7, 3), (1, 5, 7, 3), "int32", consts=[np.array(0, I32)])
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)
    m = single_op_model(B.EXPAND_DIMS, [("x", (5, 7, 3), np.float32), ("a", (), I32)],
                        [("y", (1, 5, 7, 3), np.float32)])
    assert_refused(m, 30, Code.NON_CONSTANT)


# -- CONCATENATION -----------------------------------------------------------------------------------
def concat_model(dtype, shapes, out_shape, axis, act=0, quants=None, out_quant=None):
    ins = []
    for k, s in enumerate(shapes):
        spec = io(f"x{k}", s, dtype)
        if quants is not None:
            spec = spec[:3] + (quants[k],)
        ins.append(spec)
    out = io("y", out_shape, dtype)
    if out_quant is not None:
        out = out[:3] + (out_quant,)
    return single_op_model(B.CONCATENATION, ins, [out], ConcatenationOptions(axis=axis, fused_activation_function=act))


@pytest.mark.parametrize("dtype,api", _levels(27))
@pytest.mark.parametrize("axis", [1, -1])
def test_concat_parity(dtype, api, axis):
    shapes = [(2, 5, 7, 3), (2, 5, 7, 2)] if axis == -1 else [(2, 5, 7, 3), (2, 1, 7, 3), (2, 4, 7, 3)]
    out = (2, 5, 7, 5) if axis == -1 else (2, 10, 7, 3)
    assert_parity(concat_model(dtype, shapes, out, axis), api_level=api, expect_ops=["CONCATENATION"])


@pytest.mark.parametrize("act,op,lo,hi", [(1, "RELU", 0.0, np.inf), (3, "RELU6", 0.0, 6.0)])
def test_concat_fused_activation_as_extra_op(act, op, lo, hi):
    # TFLite's own kernel rejects a fused activation on CONCATENATION, so compare with numpy instead.
    from nnconv.runtime.executor import Executor
    import nnconv
    m = concat_model("float32", [(2, 3), (2, 4)], (2, 7), 1, act=act)
    converted, _ = nnconv.convert(m, api_level=27, options=nnconv_options())
    assert [o.type.name for o in converted.model.main.operations] == ["CONCATENATION", op]
    a = np.linspace(-8, 8, 6, dtype=np.float32).reshape(2, 3)
    b = np.linspace(7, -9, 8, dtype=np.float32).reshape(2, 4)
    got = Executor(converted).run({"x0": a, "x1": b})["y"]
    np.testing.assert_array_equal(got, np.clip(np.concatenate([a, b], 1), lo, hi))


def test_concat_mixed_quantization_needs_api29():
    # TFLite requantizes uint8 inputs to the output's parameters (its int8 kernel requires equal scales).
    qs = [QuantParams(0.05, 10), QuantParams(0.1, 15)]
    m = concat_model("uint8", [(2, 3, 5), (2, 4, 5)], (2, 7, 5), 1, quants=qs, out_quant=QuantParams(0.08, 7))
    assert_parity(m, api_level=29, expect_ops=["CONCATENATION"])
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)


def test_concat_tanh_activation_refused():
    assert_refused(concat_model("float32", [(2, 3), (2, 4)], (2, 7), 1, act=4), 30, Code.OPTION)


# -- PAD / PADV2 / MIRROR_PAD ------------------------------------------------------------------------
PADS = np.array([[0, 1], [2, 0], [1, 3], [0, 0]], I32)


@pytest.mark.parametrize("dtype,api", _levels(28) + [pytest.param("uint8", 28, id="uint8-api28")])
def test_pad_parity(dtype, api):
    m = op_model(B.PAD, (2, 5, 7, 3), (3, 7, 11, 3), dtype, [PADS], PadOptions())
    assert_parity(m, api_level=api, expect_ops=["PAD"])


@pytest.mark.parametrize("dtype", ["float32", "uint8", "int8"])
@pytest.mark.parametrize("in_shape,pads", [
    pytest.param((1, 6, 6, 5), [[0, 0], [0, 0], [0, 0], [0, 11]], id="channels-blazeface"),
    pytest.param((2, 3, 4, 5), [[1, 2], [0, 0], [3, 0], [2, 2]], id="every-dim"),
    pytest.param((4, 9), [[0, 3], [2, 0]], id="rank2"),
    pytest.param((7,), [[5, 1]], id="rank1"),
    pytest.param((2, 3, 4), [[0, 0], [0, 0], [0, 0]], id="nothing")])
def test_pad_parity_odd_paddings(dtype, in_shape, pads):
    pads = np.array(pads, I32)
    out_shape = tuple(n + a + b for n, (a, b) in zip(in_shape, pads))
    m = op_model(B.PAD, in_shape, out_shape, dtype, [pads], PadOptions())
    assert_parity(m, api_level=30, expect_ops=["PAD"])


@pytest.mark.parametrize("dtype", ["float32", "uint8", "int8"])
def test_pad_is_concatenations_at_27(dtype):
    m = op_model(B.PAD, (2, 5, 7, 3), (3, 7, 11, 3), dtype, [PADS], PadOptions())
    assert_parity(m, api_level=27, expect_ops=["CONCATENATION"] * 3)


def test_pad_refusals():
    zero = op_model(B.PAD, (2, 5), (2, 5), "float32", [np.zeros((2, 2), I32)])
    assert_refused(zero, 27, Code.API_LEVEL, min_api_level=28)
    neg = op_model(B.PAD, (2, 5), (2, 4), "float32", [np.array([[0, 0], [0, -1]], I32)])
    assert_refused(neg, 30, Code.OPERAND_VALUE)
    m = single_op_model(B.PAD, [("x", (2, 3), np.float32), ("p", (2, 2), I32)], [("y", (4, 5), np.float32)])
    assert_refused(m, 30, Code.NON_CONSTANT)


@pytest.mark.parametrize("dtype,api", [("float32", 29), ("uint8", 29), ("int8", 29), ("int8", 30)])
def test_padv2_parity(dtype, api):
    value = {"float32": np.array([0.75], np.float32), "uint8": np.array([200], np.uint8),
             "int8": np.array([-100], np.int8)}[dtype]
    np_dtype, q = typed(dtype)
    # TFLite requires the pad value to carry the output's quantization.
    inputs = [io("x", (2, 5, 7, 3), dtype), ("p", PADS), ("v", value, q) if q else ("v", value)]
    m = single_op_model(B.PADV2, inputs, [io("y", (3, 7, 11, 3), dtype)])
    assert_parity(m, api_level=api, expect_ops=["PAD_V2"])
    assert_parity(m, api_level=28 if dtype != "int8" else 27, expect_ops=["CONCATENATION"] * 3)


@pytest.mark.parametrize("dtype", ["float32", "uint8", "int8", "int32"])
@pytest.mark.parametrize("api,ops", [(29, ["GATHER"] * 3), (34, ["MIRROR_PAD"])])
@pytest.mark.parametrize("mode", [0, 1])
def test_mirror_pad_parity(dtype, api, ops, mode):
    pads = np.array([[0, 1], [2, 0], [1, 2], [0, 0]], I32)
    m = op_model(B.MIRROR_PAD, (2, 5, 7, 3), (3, 7, 10, 3), dtype, [pads], MirrorPadOptions(mode=mode))
    assert_parity(m, api_level=api, expect_ops=ops)


def test_mirror_indices():
    from nnconv.lowering.rules.shape.pad import mirror_indices
    assert mirror_indices(4, 2, 2, 0).tolist() == [2, 1, 0, 1, 2, 3, 2, 1]
    assert mirror_indices(4, 2, 3, 1).tolist() == [1, 0, 0, 1, 2, 3, 3, 2, 1]


def test_mirror_pad_refusals():
    pads = np.array([[0, 1], [1, 1]], I32)
    m = op_model(B.MIRROR_PAD, (2, 5), (3, 7), consts=[pads], options=MirrorPadOptions(mode=0))
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)
    too_big = op_model(B.MIRROR_PAD, (2, 5), (4, 5), consts=[np.array([[2, 0], [0, 0]], I32)],
                       options=MirrorPadOptions(mode=0))
    assert_refused(too_big, 34, Code.OPERAND_VALUE)


# -- TRANSPOSE ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype,api", _levels(28))
def test_transpose_parity(dtype, api):
    m = op_model(B.TRANSPOSE, (2, 5, 7, 3), (7, 2, 3, 5), dtype, [np.array([2, 0, 3, 1], I32)], TransposeOptions())
    assert_parity(m, api_level=api, expect_ops=["TRANSPOSE"])


def test_transpose_refusals():
    m = op_model(B.TRANSPOSE, (2, 5), (5, 2), consts=[np.array([1, 0], I32)])
    assert_refused(m, 27, Code.API_LEVEL, min_api_level=28)
    m5 = op_model(B.TRANSPOSE, (2, 3, 1, 2, 2), (2, 2, 1, 3, 2), consts=[np.array([4, 3, 2, 1, 0], I32)])
    assert_refused(m5, 30, Code.RANK)


# -- SPACE_TO_BATCH_ND / BATCH_TO_SPACE_ND / SPACE_TO_DEPTH / DEPTH_TO_SPACE --------------------------
@pytest.mark.parametrize("dtype,api", _levels(28))
def test_space_to_batch_parity(dtype, api):
    m = op_model(B.SPACE_TO_BATCH_ND, (2, 5, 7, 3), (12, 2, 4, 3), dtype,
                 [np.array([3, 2], I32), np.array([[1, 0], [0, 1]], I32)], SpaceToBatchNDOptions())
    assert_parity(m, api_level=api, expect_ops=["SPACE_TO_BATCH_ND"])


@pytest.mark.parametrize("dtype,api", _levels(28))
def test_batch_to_space_parity(dtype, api):
    m = op_model(B.BATCH_TO_SPACE_ND, (12, 2, 3, 3), (2, 6, 6, 3), dtype,
                 [np.array([3, 2], I32), np.zeros((2, 2), I32)], BatchToSpaceNDOptions())
    assert_parity(m, api_level=api, expect_ops=["BATCH_TO_SPACE_ND"])


@pytest.mark.parametrize("dtype,api", _levels(28))
def test_batch_to_space_crops_become_a_strided_slice(dtype, api):
    m = op_model(B.BATCH_TO_SPACE_ND, (12, 2, 3, 3), (2, 5, 4, 3), dtype,
                 [np.array([3, 2], I32), np.array([[1, 0], [0, 2]], I32)])
    assert_parity(m, api_level=api, expect_ops=["BATCH_TO_SPACE_ND", "STRIDED_SLICE"])


@pytest.mark.parametrize("dtype,api", _levels(28))
def test_rank3_space_to_batch_and_back_run_as_4d(dtype, api):
    """A dilated Conv1D's [N, L, C] blocks (TensorFlow's converter leaves them rank 3): NNAPI's 4-D op on an
    [N, L, 1, C] view with block [b, 1], between RESHAPEs; crops through the STRIDED_SLICE as in 4-D."""
    m = op_model(B.SPACE_TO_BATCH_ND, (2, 9, 5), (6, 4, 5), dtype,
                 [np.array([3], I32), np.array([[2, 1]], I32)], SpaceToBatchNDOptions())
    assert_parity(m, api_level=api, expect_ops=["RESHAPE", "SPACE_TO_BATCH_ND", "RESHAPE"])
    m = op_model(B.BATCH_TO_SPACE_ND, (6, 4, 5), (2, 9, 5), dtype,
                 [np.array([3], I32), np.array([[2, 1]], I32)], BatchToSpaceNDOptions())
    assert_parity(m, api_level=api, expect_ops=["RESHAPE", "BATCH_TO_SPACE_ND", "STRIDED_SLICE", "RESHAPE"])
    m = op_model(B.BATCH_TO_SPACE_ND, (4, 3, 2), (2, 6, 2), dtype, [np.array([2], I32), np.zeros((1, 2), I32)])
    assert_parity(m, api_level=api, expect_ops=["RESHAPE", "BATCH_TO_SPACE_ND", "RESHAPE"])


def test_rank3_block_refusals():
    m = op_model(B.SPACE_TO_BATCH_ND, (2, 8, 5), (4, 4, 5), "float32",
                 [np.array([2, 1], I32), np.zeros((2, 2), I32)])  # two block values for one spatial axis
    assert_refused(m, 30, Code.OPERAND_VALUE)
    m = op_model(B.SPACE_TO_BATCH_ND, (2, 8), (4, 4), "float32", [np.array([2], I32), np.zeros((1, 2), I32)])
    assert_refused(m, 30, Code.RANK)


def test_batch_to_space_refusals():
    assert_refused(op_model(B.BATCH_TO_SPACE_ND, (12, 2, 3, 3), (2, 6, 6, 3), "float32",
                            [np.array([3, 2], I32), np.zeros((2, 2), I32)]), 27, Code.API_LEVEL, min_api_level=28)
    everything = op_model(B.BATCH_TO_SPACE_ND, (12, 2, 3, 3), (2, 1, 6, 3), "float32",
                          [np.array([3, 2], I32), np.array([[3, 3], [0, 0]], I32)])
    assert_refused(everything, 30, Code.OPERAND_VALUE)


@pytest.mark.parametrize("dtype,api", _levels(27))
def test_space_to_depth_and_back_parity(dtype, api):
    m = op_model(B.SPACE_TO_DEPTH, (2, 4, 6, 3), (2, 2, 3, 12), dtype, options=SpaceToDepthOptions(block_size=2))
    assert_parity(m, api_level=api, expect_ops=["SPACE_TO_DEPTH"])
    m = op_model(B.DEPTH_TO_SPACE, (2, 2, 3, 12), (2, 4, 6, 3), dtype, options=DepthToSpaceOptions(block_size=2))
    assert_parity(m, api_level=api, expect_ops=["DEPTH_TO_SPACE"])


def test_space_to_depth_rank3_refused():
    m = op_model(B.SPACE_TO_DEPTH, (4, 6, 3), (2, 3, 12), options=SpaceToDepthOptions(block_size=2))
    assert_refused(m, 30, Code.RANK)


# -- TILE / BROADCAST_TO / FILL / REVERSE_V2 ---------------------------------------------------------
@pytest.mark.parametrize("dtype,api", _levels(29) + [pytest.param("int32", 29, id="int32-api29")])
def test_tile_parity(dtype, api):
    m = op_model(B.TILE, (2, 5, 3), (4, 5, 9), dtype, [np.array([2, 1, 3], I32)], TileOptions())
    assert_parity(m, api_level=api, expect_ops=["TILE"])


@pytest.mark.parametrize("dtype,api", [("float32", 27), ("uint8", 27), ("int8", 28)])
def test_tile_is_concatenations_below_29(dtype, api):
    m = op_model(B.TILE, (2, 5, 3), (4, 5, 9), dtype, [np.array([2, 1, 3], I32)], TileOptions())
    assert_parity(m, api_level=api, expect_ops=["CONCATENATION", "CONCATENATION"])


def test_tile_refusals():
    m = op_model(B.TILE, (2, 5), (4, 5), "int32", [np.array([2, 1], I32)], TileOptions())
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)
    ones = op_model(B.TILE, (2, 5), (2, 5), "float32", [np.array([1, 1], I32)], TileOptions())
    assert_refused(ones, 28, Code.API_LEVEL, min_api_level=29)


@pytest.mark.parametrize("dtype,api", _levels(29))
def test_broadcast_to_parity(dtype, api):
    m = op_model(B.BROADCAST_TO, (5, 1), (2, 5, 3), dtype, [np.array([2, 5, 3], I32)], version=2)
    assert_parity(m, api_level=api, expect_ops=["RESHAPE", "TILE"])


def test_broadcast_to_same_rank_is_one_tile():
    m = op_model(B.BROADCAST_TO, (1, 5, 1), (2, 5, 3), "float32", [np.array([2, 5, 3], I32)], version=2)
    assert_parity(m, api_level=29, expect_ops=["TILE"])
    assert_parity(m, api_level=27, expect_ops=["CONCATENATION", "CONCATENATION"])


def test_broadcast_to_rank_only_is_a_reshape():
    m = op_model(B.BROADCAST_TO, (5, 3), (1, 5, 3), "uint8", [np.array([1, 5, 3], I32)], version=2)
    assert_parity(m, api_level=27, expect_ops=["RESHAPE"])


@pytest.mark.parametrize("value,dtype", [(np.float32(1.5), np.float32), (np.int32(-4), np.int32)])
def test_fill_model_output_lowered(value, dtype):
    # Constant inputs, but the output is a model output: the converter must compute it, so FILL is lowered.
    m = single_op_model(B.FILL, [("d", np.array([2, 3, 5], I32)), ("v", np.asarray(value))],
                        [("y", (2, 3, 5), dtype)])
    result = assert_parity(m, api_level=30, expect_ops=["FILL"])
    assert result.report.ops[0].status.value == "lowered"
    assert_refused(m, 29, Code.API_LEVEL, min_api_level=30)


@pytest.mark.parametrize("dtype", ["float32", "uint8", "int8", "int32"])
@pytest.mark.parametrize("axis", [1, -1])
@pytest.mark.parametrize("api,op", [(29, "GATHER"), (34, "REVERSE")])
def test_reverse_v2_parity(dtype, axis, api, op):
    m = op_model(B.REVERSE_V2, (2, 5, 7), (2, 5, 7), dtype, [np.array([axis], I32)], ReverseV2Options())
    assert_parity(m, api_level=api, expect_ops=[op])
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)


# -- PACK / UNPACK -----------------------------------------------------------------------------------
def pack_model(dtype, n, shape, axis):
    out = list(shape)
    out.insert(axis % (len(shape) + 1), n)
    ins = [io(f"x{k}", shape, dtype) for k in range(n)]
    return single_op_model(B.PACK, ins, [io("y", out, dtype)], PackOptions(values_count=n, axis=axis))


@pytest.mark.parametrize("dtype,api", _levels(27))
@pytest.mark.parametrize("axis", [0, 2, -1])
def test_pack_below_fl6_reshape_concat(dtype, api, axis):
    m = pack_model(dtype, 3, (5, 7, 2), axis)
    assert_parity(m, api_level=api, expect_ops=["RESHAPE"] * 3 + ["CONCATENATION"])


@pytest.mark.parametrize("dtype", ["float32", "uint8", "int8", "int32"])
def test_pack_native_at_api33(dtype):
    assert_parity(pack_model(dtype, 2, (5, 7, 3), 1), api_level=33, expect_ops=["PACK"])


def test_pack_int32_needs_api33():
    assert_refused(pack_model("int32", 2, (5, 7), 0), 31, Code.API_LEVEL, min_api_level=33)


def unpack_model(dtype, shape, axis):
    n = shape[axis]
    out = [d for k, d in enumerate(shape) if k != axis % len(shape)]
    return single_op_model(B.UNPACK, [io("x", shape, dtype)], [io(f"y{k}", out, dtype) for k in range(n)],
                           UnpackOptions(num=n, axis=axis))


@pytest.mark.parametrize("dtype,api", _levels(28))
@pytest.mark.parametrize("axis", [0, -1])
def test_unpack_strided_slices(dtype, api, axis):
    m = unpack_model(dtype, (3, 5, 2), axis)
    n = (3, 5, 2)[axis]
    assert_parity(m, api_level=api, expect_ops=["STRIDED_SLICE"] * n)
    assert_refused(m, 27, Code.API_LEVEL, min_api_level=28)


def test_unpack_int32_needs_api33():
    assert_parity(unpack_model("int32", (2, 5), 0), api_level=33, expect_ops=["SPLIT", "RESHAPE", "RESHAPE"])
    assert_refused(unpack_model("int32", (2, 5), 0), 30, Code.API_LEVEL, min_api_level=33)


@pytest.mark.parametrize("api,ops", [(29, ["GATHER", "GATHER"]), (34, ["REVERSE", "REVERSE"])])
def test_reverse_v2_two_axes_chains_one_op_per_axis(api, ops):
    # (TFLite itself only takes contiguous axes.)
    m = op_model(B.REVERSE_V2, (2, 5, 7), (2, 5, 7), "float32", [np.array([1, 2], I32)], ReverseV2Options(),
                 version=3)
    assert_parity(m, api_level=api, expect_ops=ops)
