"""RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR lowering: parity with TFLite and refusals."""

from __future__ import annotations

import numpy as np
import pytest

import nnconv
from harness import QuantParams, assert_parity, assert_refused, single_op_model
from nnconv.parity import random_inputs
from nnconv.parity.tolerances import ToleranceOverrides
from nnconv.parity.session import VerifyOptions, verify
from nnconv.parity.verify import run_parity
from nnconv.lowering.diagnostics import Code
from nnconv.tflite.options import ResizeBilinearOptions, ResizeNearestNeighborOptions
from nnconv.tflite.schema_enums import BuiltinOperator

BIL, NN = BuiltinOperator.RESIZE_BILINEAR, BuiltinOperator.RESIZE_NEAREST_NEIGHBOR


def resize_model(op, dtype, in_shape, size, align=False, half=False, q=None, const_size=True):
    opts = (ResizeBilinearOptions if op == BIL else ResizeNearestNeighborOptions)(align_corners=align,
                                                                                  half_pixel_centers=half)
    spec = (dtype, q) if q is not None else (dtype,)
    size_in = ("size", np.asarray(size, np.int32)) if const_size else ("size", (2,), np.int32)
    out_shape = (in_shape[0], size[0], size[1], in_shape[3])
    return single_op_model(op, [("x", in_shape, *spec), size_in], [("y", out_shape, *spec)], opts, version=3)


SIZES = [pytest.param((2, 5, 7, 3), (9, 13), id="up-unequal"), pytest.param((1, 8, 6, 2), (3, 4), id="down"),
         pytest.param((1, 4, 5, 3), (12, 5), id="h-only")]
FLAGS = [pytest.param(False, False, id="plain"), pytest.param(True, False, id="align"),
         pytest.param(False, True, id="half-pixel")]


@pytest.mark.parametrize("op", [BIL, NN], ids=["bilinear", "nearest"])
@pytest.mark.parametrize("align,half", FLAGS)
@pytest.mark.parametrize("in_shape,size", SIZES)
def test_resize_float_parity(op, align, half, in_shape, size):
    api = 30 if (align or half) else (27 if op == BIL else 29)
    m = resize_model(op, np.float32, in_shape, size, align, half)
    assert_parity(m, api_level=api, expect_ops=[op.name])


def assert_int8_bilinear_verifies(m: bytes, tmp_path, api: int) -> None:
    """An int8 RESIZE_BILINEAR at API 30+ (native int8): NNAPI's reference CPU interpolates in float32 and
    converts sum + 0.5 toward zero (kernels/resize_bilinear.py), TFLite's int8 kernels in Q10 integers
    rounded to nearest, so some values are 2 LSB apart and more on large factors. `verify` passes it when
    computing the op TFLite's way matches TFLite's reference kernels (parity/settle.py), and says so."""
    converted = nnconv.convert(m, api_level=api).converted
    assert [op.type.name for op in converted.model.main.operations] == ["RESIZE_BILINEAR"]
    path = tmp_path / "resize.tflite"
    path.write_bytes(m)
    (out,) = verify(str(path), VerifyOptions(api_level=api)).parity.outputs
    assert out.passed, out.detail
    if out.settled_by:
        assert out.settled_by == "NNAPI arithmetic" and "#0 RESIZE_BILINEAR: float32 weights" in out.detail


@pytest.mark.parametrize("op", [BIL, NN], ids=["bilinear", "nearest"])
@pytest.mark.parametrize("dtype,api", [(np.uint8, 29), (np.int8, 29), (np.int8, 30)])
@pytest.mark.parametrize("align,half", FLAGS)
def test_resize_quantized_parity(op, dtype, api, align, half, tmp_path):
    if (align or half) and api < 30:
        api = 30
    q = QuantParams(0.05, 128 if dtype == np.uint8 else -3)
    m = resize_model(op, dtype, (2, 5, 7, 3), (9, 11), align, half, q)
    if op == BIL and dtype == np.int8 and api >= 30:
        assert_int8_bilinear_verifies(m, tmp_path, api)
        return
    assert_parity(m, api_level=api, expect_ops=[op.name])


ODD_SIZES = [pytest.param((1, 16, 16, 5), (32, 32), id="2x-mediapipe"),
             pytest.param((2, 9, 4, 3), (3, 11), id="h-down-w-up"),
             pytest.param((3, 1, 9, 2), (4, 4), id="one-row"),
             pytest.param((1, 6, 1, 4), (5, 7), id="one-column"),
             pytest.param((2, 7, 5, 1), (7, 5), id="same-size")]


@pytest.mark.parametrize("align,half", FLAGS)
@pytest.mark.parametrize("in_shape,size", ODD_SIZES)
def test_resize_bilinear_float_odd_shapes(align, half, in_shape, size):
    """The separable float path: either axis first, 1-pixel axes, batch > 1, an unchanged size."""
    m = resize_model(BIL, np.float32, in_shape, size, align, half)
    assert_parity(m, api_level=30, expect_ops=["RESIZE_BILINEAR"])


@pytest.mark.parametrize("dtype,zero_point", [(np.uint8, 0), (np.uint8, 77), (np.uint8, 255), (np.int8, -128),
                                              (np.int8, 0), (np.int8, 101)])
@pytest.mark.parametrize("align,half", FLAGS)
@pytest.mark.parametrize("in_shape,size", ODD_SIZES[:3])
def test_resize_bilinear_quantized_odd_shapes(dtype, zero_point, align, half, in_shape, size, tmp_path):
    m = resize_model(BIL, dtype, in_shape, size, align, half, QuantParams(0.1, zero_point))
    if dtype == np.int8 and align and size == (32, 32):
        # TFLite's int8 kernels (builtin and reference alike) step the align-corners scale 15/31 in 1/1024:
        # the position error grows to 0.015 px at the far edge (about 255 * out / 2048 LSB), and NNAPI's
        # conversion toward zero adds a step on negative values. Held to that bound here; the kernel's own
        # int8 path is checked bit-exact against the NNAPI reference arithmetic in tests/kernels.
        converted = nnconv.convert(m, api_level=30).converted
        bound = 2 + -(-255 * size[0] // 2048)
        report = run_parity(m, converted, random_inputs(converted.inputs, 0),
                            overrides=ToleranceOverrides(max_lsb=bound))
        assert report.passed and report.outputs[0].max_lsb >= 2, report.outputs[0].max_lsb  # the difference is real
        assert_int8_bilinear_verifies(m, tmp_path, 30)
        return
    if dtype == np.int8:
        assert_int8_bilinear_verifies(m, tmp_path, 30)
        return
    assert_parity(m, api_level=30, expect_ops=["RESIZE_BILINEAR"])


def test_resize_flags_need_30():
    m = resize_model(BIL, np.float32, (1, 4, 5, 2), (8, 10), align=True)
    assert_refused(m, 29, Code.API_LEVEL, min_api_level=30)
    m = resize_model(NN, np.float32, (1, 4, 5, 2), (8, 15), half=True)  # not one integer factor
    assert_refused(m, 29, Code.API_LEVEL, min_api_level=30)


@pytest.mark.parametrize("dtype,q", [(np.float32, None), (np.int8, QuantParams(0.05, -3))], ids=["float32", "int8"])
@pytest.mark.parametrize("api,ops", [(27, ["CONCATENATION", "DEPTH_TO_SPACE"]), (29, ["RESIZE_NEAREST_NEIGHBOR"])])
def test_nearest_half_pixel_integer_upscale_needs_no_flag(dtype, q, api, ops):
    """Keras' UpSampling2D (half_pixel_centers, factor f): floor((y + 0.5) / f) == y // f, so the flag
    changes nothing and the plain operation (or below API 29 the repeat) lowers it."""
    m = resize_model(NN, dtype, (1, 4, 5, 2), (8, 10), half=True, q=q)
    if dtype is np.int8 and api < 29:
        api = 28
    assert_parity(m, api_level=api, expect_ops=ops)


@pytest.mark.parametrize("op", [BIL, NN], ids=["bilinear", "nearest"])
def test_resize_align_corners_with_half_pixel_centers_refused(op):
    # NNAPI takes at most one of the two flags.
    assert_refused(resize_model(op, np.float32, (1, 4, 5, 2), (8, 10), align=True, half=True), 30, Code.OPTION)


def test_resize_quantized_bilinear_needs_29_and_nearest_needs_29():
    q = QuantParams(0.05, 128)
    assert_refused(resize_model(BIL, np.uint8, (1, 4, 5, 2), (8, 10), q=q), 28, Code.API_LEVEL, min_api_level=29)
    # Not an equal integer upscale on both axes: only NNAPI's own operation (API 29).
    assert_refused(resize_model(NN, np.float32, (1, 4, 5, 2), (8, 15)), 28, Code.API_LEVEL, min_api_level=29)
    assert_refused(resize_model(NN, np.float32, (1, 4, 5, 2), (6, 7)), 28, Code.API_LEVEL, min_api_level=29)


@pytest.mark.parametrize("dtype,q", [(np.float32, None), (np.uint8, QuantParams(0.05, 128)),
                                     (np.int8, QuantParams(0.05, -3))])
@pytest.mark.parametrize("in_shape,size", [((2, 3, 5, 3), (6, 10)), ((1, 4, 3, 2), (12, 9)), ((1, 5, 7, 1), (35, 49))])
def test_nearest_integer_upscale_below_29(dtype, q, in_shape, size):
    m = resize_model(NN, dtype, in_shape, size, q=q)
    assert_parity(m, api_level=27, expect_ops=["CONCATENATION", "DEPTH_TO_SPACE"])


def test_resize_dynamic_size_refused():
    assert_refused(resize_model(BIL, np.float32, (1, 4, 5, 2), (8, 10), const_size=False), 30, Code.NON_CONSTANT)


# -- half-pixel integer upscales below API 30 (lowering/rules/_resize_phases.py) ------------------
PHASE_OPS = ["STRIDED_SLICE", "STRIDED_SLICE", "CONCATENATION", "STRIDED_SLICE", "STRIDED_SLICE", "CONCATENATION",
             "DEPTHWISE_CONV_2D", "RESHAPE", "TRANSPOSE", "RESHAPE", "DEPTH_TO_SPACE"]


@pytest.mark.parametrize("api", [28, 29])
@pytest.mark.parametrize("in_shape,factor", [
    pytest.param((1, 16, 16, 5), 2, id="2x-mediapipe"),
    pytest.param((2, 3, 5, 3), 2, id="2x-batch2-odd"),
    pytest.param((1, 1, 1, 4), 2, id="2x-one-pixel"),
    pytest.param((1, 1, 6, 2), 4, id="4x-one-row"),
    pytest.param((1, 3, 2, 1), 8, id="8x-one-channel"),
    pytest.param((1, 1, 1, 3), 16, id="16x-image-pooling"),
])
def test_half_pixel_upscale_below_30_as_phases(api, in_shape, factor):
    """TFLite's half-pixel RESIZE_BILINEAR, lowered below API 30 as a depthwise convolution per output
    phase of the replicate-padded input and DEPTH_TO_SPACE: within the float tolerance of TFLite's kernel,
    borders included (random inputs cover every phase and both edges)."""
    size = (in_shape[1] * factor, in_shape[2] * factor)
    m = resize_model(BIL, np.float32, in_shape, size, half=True)
    assert_parity(m, api_level=api, expect_ops=PHASE_OPS)
    assert_parity(m, api_level=30, expect_ops=["RESIZE_BILINEAR"])  # the plain operation from 30


def test_half_pixel_phase_taps_are_tflites_weights():
    """Each phase's taps are the outer product of (1 - t, t) at input offsets floor(p), floor(p) + 1, with
    p = (d + 0.5) / f - 0.5: for f = 2, phase 0 takes 1/4 of row -1 and 3/4 of row 0."""
    from nnconv.lowering.rules._resize_phases import phase_filter
    filt = phase_filter(2, 1).reshape(3, 3, 4)
    np.testing.assert_array_equal(filt[:, :, 0], np.outer([0.25, 0.75, 0], [0.25, 0.75, 0]))
    np.testing.assert_array_equal(filt[:, :, 3], np.outer([0, 0.75, 0.25], [0, 0.75, 0.25]))
    for f in (2, 4, 8):
        taps = phase_filter(f, 3).reshape(3, 3, 3, f * f)
        np.testing.assert_array_equal(taps.sum(axis=(0, 1)), np.ones((3, f * f)))  # every phase sums to 1


@pytest.mark.parametrize("why,in_shape,size,dtype,align,min_api", [
    pytest.param("factor 3 (not a binary fraction)", (1, 4, 4, 2), (12, 12), np.float32, False, 30, id="3x"),
    pytest.param("unequal factors", (1, 4, 4, 2), (8, 16), np.float32, False, 30, id="2x4x"),
    pytest.param("downscale", (1, 8, 8, 2), (4, 4), np.float32, False, 30, id="down"),
    pytest.param("align_corners", (1, 4, 4, 2), (8, 8), np.float32, True, 30, id="align"),
])
def test_other_flagged_resizes_still_need_30(why, in_shape, size, dtype, align, min_api):
    m = resize_model(BIL, dtype, in_shape, size, align=align, half=not align)
    assert_refused(m, 29, Code.API_LEVEL, min_api_level=min_api)


def test_half_pixel_upscale_needs_28():
    m = resize_model(BIL, np.float32, (1, 4, 4, 2), (8, 8), half=True)
    assert_refused(m, 27, Code.API_LEVEL, min_api_level=28)


def test_quantized_half_pixel_upscale_still_needs_30():
    m = resize_model(BIL, np.int8, (1, 4, 4, 2), (8, 8), half=True, q=QuantParams(0.05, -3))
    assert_refused(m, 29, Code.API_LEVEL, min_api_level=30)
