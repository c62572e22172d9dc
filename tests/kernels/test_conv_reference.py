"""Every fast path of the convolution kernels (CONV_2D, GROUPED_CONV_2D, DEPTHWISE_CONV_2D) against one slow
reference convolution written here: a loop over output positions, each an einsum over its window, in int64
(quantized: then the reference requantization, `requantize_accumulator`) or float64.

Quantized outputs must be equal; float32 outputs within 1e-5 relative plus 1e-4 absolute of the float64
reference (inputs in [-1, 1], at most 576 products per output: float32's rounding stays far below). Each case
also asserts which path ran (the 1x1 few-pixel matmul, the prepared small map, the blocked GEMMs and its
layout: direct rows, tap-major im2col, the bias row, the scaled filter, the exact float32 chunks, groups),
so that a change in the dispatcher cannot leave a path untested.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest

from nnconv.nnapi.enums import FuseCode, OperationType, PaddingCode
from nnconv.nnapi.enums import OperandLifeTime as L
from nnconv.nnapi.enums import OperandType as T
from nnconv.nnapi.model import Operand, Operation, SymmPerChannelQuantParams
from nnconv.nnapi.quantization import conv_multipliers, requantize_accumulator
from nnconv.runtime.kernels import KERNELS, KernelCall
from nnconv.runtime.kernels import conv_2d as conv_module
from nnconv.runtime.kernels import depthwise_conv_2d as depthwise_module

X_SCALE, OUT_SCALE = 0.05, 0.3


def reference_conv(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, pads: tuple[int, int, int, int],
                   stride: tuple[int, int], dilation: tuple[int, int], groups: int) -> np.ndarray:
    """NHWC grouped convolution of centered values (int64 or float64), loop over output positions.
    pads: (top, bottom, left, right); stride, dilation: (h, w); w: [O, KH, KW, C / groups]."""
    n, h, wd, c = x.shape
    o, kh, kw, cg = w.shape
    (pt, pb, pl, pr), (sh, sw), (dh, dw) = pads, stride, dilation
    xp = np.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)))
    oh = (h + pt + pb - (kh - 1) * dh - 1) // sh + 1
    ow = (wd + pl + pr - (kw - 1) * dw - 1) // sw + 1
    wg = w.reshape(groups, o // groups, kh, kw, cg)
    out = np.zeros((n, oh, ow, o), x.dtype)
    for oy in range(oh):
        for ox in range(ow):
            win = xp[:, oy * sh:oy * sh + (kh - 1) * dh + 1:dh, ox * sw:ox * sw + (kw - 1) * dw + 1:dw]
            out[:, oy, ox] = np.einsum("nijgc,gqijc->ngq", win.reshape(n, kh, kw, groups, cg), wg).reshape(n, o)
    return out if b is None else out + b


def same_padding(size: int, stride: int, k: int, dilation: int) -> tuple[int, int]:
    eff = (k - 1) * dilation + 1
    need = max(((size + stride - 1) // stride - 1) * stride + eff - size, 0)
    return need // 2, need - need // 2


@dataclass
class Case:
    """One convolution: shapes, geometry, and the path it must take."""

    op: OperationType
    x_shape: tuple[int, int, int, int]  # NHWC
    k: tuple[int, int]
    out_channels: int
    stride: tuple[int, int] = (1, 1)
    dilation: tuple[int, int] = (1, 1)
    padding: str = "explicit"  # "explicit" (pads below), "same", "valid" (implicit forms)
    pads: tuple[int, int, int, int] = (0, 0, 0, 0)  # top, bottom, left, right
    groups: int = 1
    activation: int = FuseCode.NONE
    nchw: bool = False
    cached: bool = True  # the executor's operation cache (the prepared paths need it)
    bias: bool = True
    path: str = "blocked"  # "pointwise", "small_map", "blocked", "depthwise"
    plan: dict = field(default_factory=dict)  # attributes of the blocked path's ConvPlan
    x_zp: int = 3  # quantized input zero point (int8); uint8 adds 128
    weight_range: int = 127


def _resolved_pads(case: Case) -> tuple[int, int, int, int]:
    if case.padding == "explicit":
        return case.pads
    if case.padding == "valid":
        return (0, 0, 0, 0)
    _n, h, w, _c = case.x_shape
    return (*same_padding(h, case.stride[0], case.k[0], case.dilation[0]),
            *same_padding(w, case.stride[1], case.k[1], case.dilation[1]))


def _scalars(case: Case) -> list[tuple[T, int | bool]]:
    """The operation's scalars after the three tensors, in its signature's order."""
    sh, sw = case.stride
    if case.padding == "explicit":
        pt, pb, pl, pr = case.pads
        head = [(T.INT32, v) for v in (pl, pr, pt, pb, sw, sh)]
    else:
        code = PaddingCode.SAME if case.padding == "same" else PaddingCode.VALID
        head = [(T.INT32, int(code)), (T.INT32, sw), (T.INT32, sh)]
    if case.op is OperationType.DEPTHWISE_CONV_2D:
        head.append((T.INT32, case.out_channels // case.x_shape[3]))
    elif case.op is OperationType.GROUPED_CONV_2D:
        head.append((T.INT32, case.groups))
    tail = [(T.INT32, int(case.activation)), (T.BOOL, case.nchw)]
    if case.op is not OperationType.GROUPED_CONV_2D:  # GROUPED_CONV_2D has no dilation
        tail += [(T.INT32, case.dilation[1]), (T.INT32, case.dilation[0])]
    return head + tail


def _run(case: Case, x: np.ndarray, w: np.ndarray, b: np.ndarray, x_od: Operand, w_od: Operand,
         b_od: Operand, out_od: Operand) -> np.ndarray:
    scalars = _scalars(case)
    ods = [x_od, w_od, b_od] + [Operand(type=t, dimensions=(), lifetime=L.CONSTANT_COPY) for t, _v in scalars]
    arrays = [np.transpose(x, (0, 3, 1, 2)) if case.nchw else x, w, b if case.bias else None]
    arrays += [np.array(v, np.bool_ if t is T.BOOL else np.int32) for t, v in scalars]
    if not case.bias:
        ods[2] = None
    call = KernelCall(Operation(case.op, list(range(len(arrays))), []), arrays, ods, [out_od],
                      cache={} if case.cached else None)
    y = KERNELS[case.op](call)[0]
    return np.transpose(y, (0, 2, 3, 1)) if case.nchw else y


def _output_shape(case: Case) -> tuple[int, int, int, int]:
    n, h, w, _c = case.x_shape
    pt, pb, pl, pr = _resolved_pads(case)
    (kh, kw), (sh, sw), (dh, dw) = case.k, case.stride, case.dilation
    return n, (h + pt + pb - (kh - 1) * dh - 1) // sh + 1, (w + pl + pr - (kw - 1) * dw - 1) // sw + 1, \
        case.out_channels


def _filter_shape(case: Case) -> tuple[int, int, int, int]:
    kh, kw = case.k
    if case.op is OperationType.DEPTHWISE_CONV_2D:
        return 1, kh, kw, case.out_channels
    return case.out_channels, kh, kw, case.x_shape[3] // case.groups


def _reference_filter(case: Case, w: np.ndarray) -> tuple[np.ndarray, int]:
    """The filter as the reference's [O, KH, KW, C / groups] and its group count (depthwise: C groups)."""
    if case.op is OperationType.DEPTHWISE_CONV_2D:
        return np.transpose(w, (3, 1, 2, 0)), case.x_shape[3]
    return w, case.groups


@pytest.fixture
def paths(monkeypatch):
    """Records which of conv_nhwc's paths ran (and the blocked path's plan)."""
    seen: list[tuple[str, object]] = []

    def spy(module, name, label):
        original = getattr(module, name)

        def wrapper(*args, **kwargs):
            result = original(*args, **kwargs)
            if label != "small_map" or result is not None:
                seen.append((label, args[-1] if label == "blocked" else None))
            return result
        monkeypatch.setattr(module, name, wrapper)
    spy(conv_module, "_small_pointwise", "pointwise")
    spy(conv_module, "_small_quant_pointwise", "pointwise")
    spy(conv_module, "prepare_small_conv", "small_map")
    spy(conv_module, "blocked_conv", "blocked")
    spy(depthwise_module, "depthwise_nhwc", "depthwise")
    return seen


def _check_path(case: Case, seen: list) -> None:
    labels = [label for label, _ in seen]
    assert case.path in labels, labels
    if case.path == "blocked":
        plan = next(p for label, p in seen if label == "blocked")
        for name, value in case.plan.items():
            assert getattr(plan, name) == value, (name, getattr(plan, name))


C2, GC, DW = OperationType.CONV_2D, OperationType.GROUPED_CONV_2D, OperationType.DEPTHWISE_CONV_2D
# DEPTHWISE_CONV_2D's paths (the prepared small map, row runs, per-tap passes, the im2col einsum), float and
# quantized alike
DEPTHWISE_CASES = [
    pytest.param(Case(DW, (1, 10, 10, 8), (3, 3), 8, padding="same", path="depthwise"), id="depthwise-small"),
    pytest.param(Case(DW, (2, 10, 10, 8), (3, 3), 8, padding="same", path="depthwise"), id="depthwise-rows"),
    pytest.param(Case(DW, (2, 20, 20, 8), (3, 3), 16, stride=(2, 2), padding="same", path="depthwise"),
                 id="depthwise-multiplier-taps"),
    pytest.param(Case(DW, (2, 20, 20, 32), (3, 3), 96, stride=(2, 2), path="depthwise"),
                 id="depthwise-multiplier-einsum"),
    pytest.param(Case(DW, (2, 12, 12, 8), (3, 3), 8, dilation=(2, 2), padding="same", path="depthwise",
                      cached=False), id="depthwise-dilated"),
]
FLOAT_CASES = [
    pytest.param(Case(C2, (1, 4, 4, 8), (1, 1), 16, path="pointwise"), id="1x1-few-pixels"),
    pytest.param(Case(C2, (1, 4, 4, 8), (1, 1), 16, path="pointwise", cached=False), id="1x1-few-pixels-uncached"),
    pytest.param(Case(C2, (1, 12, 12, 8), (1, 1), 40, path="small_map"), id="1x1-small-map-bias-row"),
    pytest.param(Case(C2, (2, 12, 12, 8), (1, 1), 40, plan={"direct": False, "in_place": True, "bias_row": True}),
                 id="1x1-batched-bias-row"),
    pytest.param(Case(C2, (2, 12, 12, 16), (1, 1), 8, plan={"direct": True, "in_place": True, "bias_row": False}),
                 id="1x1-direct-rows"),
    pytest.param(Case(C2, (2, 13, 11, 16), (1, 1), 8, stride=(2, 2), activation=FuseCode.RELU6,
                      plan={"in_place": False}), id="1x1-strided"),
    pytest.param(Case(C2, (2, 15, 13, 3), (3, 3), 8, stride=(2, 2), padding="same", plan={"tap_major": True}),
                 id="3x3-rgb-stem-tap-major"),
    pytest.param(Case(C2, (2, 9, 10, 16), (3, 3), 12, pads=(1, 2, 0, 1), activation=FuseCode.RELU,
                      plan={"tap_major": False}), id="3x3-im2col-explicit-pads"),
    pytest.param(Case(C2, (1, 9, 10, 16), (3, 3), 12, padding="same", path="small_map"), id="3x3-small-map"),
    pytest.param(Case(C2, (2, 11, 12, 6), (3, 2), 5, dilation=(2, 3), padding="same", bias=False),
                 id="dilated-no-bias"),
    pytest.param(Case(C2, (1, 9, 8, 6), (3, 3), 5, padding="valid", nchw=True, cached=False), id="nchw"),
    pytest.param(Case(C2, (2, 70, 20, 32), (1, 1), 512, plan={"bias_row": True, "block_h": 25}), id="several-blocks"),
    pytest.param(Case(GC, (2, 9, 9, 12), (3, 3), 8, groups=4, padding="same", plan={"groups": 4}), id="grouped"),
    pytest.param(Case(GC, (2, 9, 9, 12), (1, 1), 6, groups=3, stride=(2, 1), plan={"groups": 3}),
                 id="grouped-1x1-strided"),
]


@pytest.mark.parametrize("case", FLOAT_CASES + DEPTHWISE_CASES)
def test_float_paths_match_the_reference(case: Case, paths) -> None:
    rng = np.random.default_rng(7)
    x = rng.uniform(-1, 1, case.x_shape).astype(np.float32)
    w = rng.uniform(-1, 1, _filter_shape(case)).astype(np.float32)
    b = rng.uniform(-1, 1, case.out_channels).astype(np.float32)
    x_od = Operand(type=T.TENSOR_FLOAT32, dimensions=case.x_shape)
    w_od = Operand(type=T.TENSOR_FLOAT32, dimensions=w.shape, lifetime=L.CONSTANT_COPY)
    b_od = Operand(type=T.TENSOR_FLOAT32, dimensions=b.shape, lifetime=L.CONSTANT_COPY)
    out_od = Operand(type=T.TENSOR_FLOAT32, dimensions=_output_shape(case))
    got = _run(case, x, w, b, x_od, w_od, b_od, out_od)
    ref_w, groups = _reference_filter(case, w)
    ref = reference_conv(x.astype(np.float64), ref_w.astype(np.float64), b if case.bias else None,
                         _resolved_pads(case), case.stride, case.dilation, groups)
    if case.activation == FuseCode.RELU:
        ref = np.maximum(ref, 0)
    elif case.activation == FuseCode.RELU6:
        ref = np.clip(ref, 0, 6)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-4)
    _check_path(case, paths)


QUANT_CASES = [
    pytest.param(Case(C2, (1, 4, 4, 8), (1, 1), 16, path="pointwise", weight_range=10), id="1x1-few-pixels"),
    pytest.param(Case(C2, (1, 4, 4, 8), (1, 1), 16, path="pointwise", cached=False, weight_range=10),
                 id="1x1-few-pixels-uncached"),
    pytest.param(Case(C2, (2, 12, 12, 8), (1, 1), 48, plan={"scaled": True}), id="1x1-scaled-filter"),
    pytest.param(Case(C2, (1, 12, 12, 8), (1, 1), 48, path="small_map"), id="1x1-small-map"),
    pytest.param(Case(C2, (2, 12, 12, 48), (1, 1), 16, activation=FuseCode.RELU6, plan={"scaled": False}),
                 id="1x1-requantizer"),
    pytest.param(Case(C2, (2, 13, 11, 16), (1, 1), 8, stride=(2, 2), plan={"in_place": False}), id="1x1-strided"),
    pytest.param(Case(C2, (2, 15, 13, 3), (3, 3), 8, stride=(2, 2), padding="same",
                      plan={"tap_major": True, "scaled": True}), id="3x3-rgb-stem"),
    pytest.param(Case(C2, (2, 9, 10, 16), (3, 3), 12, pads=(1, 2, 0, 1), activation=FuseCode.RELU,
                      plan={"tap_major": False}), id="3x3-explicit-pads"),
    pytest.param(Case(C2, (2, 9, 10, 16), (3, 3), 12, padding="same", x_zp=-128, plan={"tap_major": False}),
                 id="3x3-zero-point-at-range-end"),
    pytest.param(Case(C2, (2, 6, 6, 256), (3, 3), 8, padding="same", x_zp=0, plan={"chunked": True}),
                 id="3x3-float32-chunks"),
    pytest.param(Case(C2, (2, 11, 12, 6), (3, 2), 5, dilation=(2, 3), padding="same"), id="dilated"),
    pytest.param(Case(C2, (1, 9, 8, 6), (3, 3), 5, padding="valid", nchw=True, cached=False), id="nchw"),
    pytest.param(Case(C2, (2, 40, 20, 16), (1, 1), 128, plan={"scaled": True, "block_h": 25}), id="several-blocks"),
    pytest.param(Case(GC, (2, 9, 9, 12), (3, 3), 8, groups=4, padding="same", plan={"groups": 4}), id="grouped"),
]


@pytest.mark.parametrize("signed", [True, False], ids=["int8", "uint8"])
@pytest.mark.parametrize("case", QUANT_CASES + DEPTHWISE_CASES)
def test_quant_paths_equal_the_reference(case: Case, signed: bool, paths) -> None:
    rng = np.random.default_rng(11)
    t = T.TENSOR_QUANT8_ASYMM_SIGNED if signed else T.TENSOR_QUANT8_ASYMM
    info = np.iinfo(np.int8 if signed else np.uint8)
    x_zp = case.x_zp if signed else case.x_zp + 128
    out_zp = -5 if signed else 120
    x = rng.integers(info.min, info.max + 1, case.x_shape).astype(info.dtype)
    w = rng.integers(-case.weight_range, case.weight_range + 1, _filter_shape(case)).astype(np.int8)
    b = rng.integers(-4000, 4000, case.out_channels).astype(np.int32)
    scales = rng.uniform(0.002, 0.03, case.out_channels).astype(np.float32)
    channel_dim = 3 if case.op is OperationType.DEPTHWISE_CONV_2D else 0
    x_od = Operand(type=t, dimensions=case.x_shape, scale=X_SCALE, zero_point=x_zp)
    w_od = Operand(type=T.TENSOR_QUANT8_SYMM_PER_CHANNEL, dimensions=w.shape, lifetime=L.CONSTANT_COPY,
                   channel_quant=SymmPerChannelQuantParams(scales=list(scales), channel_dim=channel_dim))
    b_od = Operand(type=T.TENSOR_INT32, dimensions=b.shape, lifetime=L.CONSTANT_COPY)
    out_od = Operand(type=t, dimensions=_output_shape(case), scale=OUT_SCALE, zero_point=out_zp)
    got = _run(case, x, w, b, x_od, w_od, b_od, out_od)
    ref_w, groups = _reference_filter(case, w)
    acc = reference_conv(x.astype(np.int64) - x_zp, ref_w.astype(np.int64), b.astype(np.int64) if case.bias else None,
                         _resolved_pads(case), case.stride, case.dilation, groups)
    m, sh = conv_multipliers(X_SCALE, scales, OUT_SCALE)
    np.testing.assert_array_equal(got, requantize_accumulator(acc, m, sh, out_od, case.activation))
    _check_path(case, paths)
