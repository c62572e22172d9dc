"""Detection kernels beyond the CTS vectors: the vectorized NMS bookkeeping and window maxima against
literal transcriptions of the reference loops, on random data with ties, plus the failure modes."""

from __future__ import annotations

import numpy as np
import pytest

from nnconv.errors import ExecutionError
from nnconv.runtime.kernels import KERNELS, KernelCall
from nnconv.runtime.kernels._boxes import iou_one_to_many, nms_single_class, soft_kernel
from nnconv.nnapi.enums import OperandType as T
from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.model import Operand, Operation

F32 = np.float32


def _run(op: OperationType, inputs: list, in_types: list, out_ops: list[Operand], quant: dict | None = None):
    quant = quant or {}
    ods = []
    for k, (arr, t) in enumerate(zip(inputs, in_types)):
        scale, zp = quant.get(k, (0.0, 0))
        ods.append(Operand(type=t, dimensions=tuple(np.shape(arr)), scale=scale, zero_point=zp))
    arrays = [np.asarray(a, dtype=od.dtype) for a, od in zip(inputs, ods)]
    call = KernelCall(Operation(op, list(range(len(arrays))), []), arrays, ods, out_ops)
    return KERNELS[op](call)


# -- NMS candidate bookkeeping ----------------------------------------------------------------------
def _literal_nms(select, scores, boxes, max_det, iou_thr=None, kernel=None, score_thr=0.0):
    """The reference's in-place loop, transcribed element by element."""
    sel = list(select)
    start, end, count = 0, len(sel), 0
    limit = len(sel) if max_det < 0 else max_det
    while start < end and count < limit:
        best = max(range(start, end), key=lambda j: (scores[sel[j]], -j))  # first maximum
        sel[start], sel[best] = sel[best], sel[start]
        i = start + 1
        while i < end:
            iou = iou_one_to_many(boxes[sel[start]], boxes[[sel[i]]])[0]
            if kernel is None:
                drop = iou >= F32(iou_thr)
            else:
                scores[sel[i]] = F32(scores[sel[i]] * kernel(np.array([iou], F32))[0])
                drop = scores[sel[i]] < F32(score_thr)
            if drop:
                end -= 1
                sel[i], sel[end] = sel[end], sel[i]
            else:
                i += 1
        start += 1
        count += 1
    return sel[:start]


def _random_boxes(rng, n):
    xy = rng.integers(0, 20, size=(n, 2)).astype(F32)
    wh = rng.integers(1, 12, size=(n, 2)).astype(F32)
    return np.concatenate([xy, xy + wh], axis=1)


@pytest.mark.parametrize("seed", range(40))
def test_hard_nms_matches_the_reference_loop_with_ties(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    boxes = _random_boxes(rng, n)
    scores = rng.integers(0, 5, size=n).astype(F32)  # many ties
    select = rng.permutation(n)[: int(rng.integers(1, n + 1))]
    max_det = int(rng.integers(-1, n + 1))
    got = nms_single_class(select, scores.copy(), boxes, max_det, iou_threshold=0.3)
    assert got.tolist() == _literal_nms(select, scores.copy(), boxes, max_det, iou_thr=0.3)


@pytest.mark.parametrize("kind", [0, 1, 2])
@pytest.mark.parametrize("seed", range(15))
def test_soft_nms_matches_the_reference_loop(kind, seed):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(2, 30))
    boxes = _random_boxes(rng, n)
    scores = (rng.integers(1, 8, size=n) / 8).astype(F32)
    kern = soft_kernel(kind, 0.4, 0.5)
    s1, s2 = scores.copy(), scores.copy()
    got = nms_single_class(np.arange(n), s1, boxes, -1, kernel=kern, score_threshold=0.3)
    assert got.tolist() == _literal_nms(range(n), s2, boxes, -1, kernel=kern, score_thr=0.3)
    np.testing.assert_array_equal(s1[got], s2[got])


# -- ROI_POOLING against the reference loops ---------------------------------------------------------
def _literal_roi_pool(x, rois, batch, oh, ow, hs, ws, zp):
    n, h, w, c = x.shape
    out = np.zeros((len(rois), oh, ow, c), x.dtype)
    for r, (roi, b) in enumerate(zip(rois, batch)):
        x1, y1, x2, y2 = (int(np.sign(v) * np.floor(abs(v) + 0.5)) for v in
                          (roi[0] / F32(ws), roi[1] / F32(hs), roi[2] / F32(ws), roi[3] / F32(hs)))
        sw = F32(max(x2 - x1 + 1, 1)) / F32(ow)
        sh = F32(max(y2 - y1 + 1, 1)) / F32(oh)
        for i in range(oh):
            for j in range(ow):
                h0 = min(int(np.floor(sh * F32(i) + F32(y1))), h)
                h1 = min(int(np.ceil(sh * F32(i + 1) + F32(y1))), h)
                w0 = min(int(np.floor(sw * F32(j) + F32(x1))), w)
                w1 = min(int(np.ceil(sw * F32(j + 1) + F32(x1))), w)
                win = x[b, h0:h1, w0:w1]
                out[r, i, j] = win.max(axis=(0, 1)) if win.size else zp
    return out


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("quant", [False, True])
def test_roi_pooling_matches_the_reference_loops(seed, quant):
    rng = np.random.default_rng(seed)
    n, h, w, c = 2, 7, 9, 3
    x = rng.integers(0, 255, size=(n, h, w, c)) if quant else rng.normal(size=(n, h, w, c))
    r = 9
    x1 = rng.uniform(0, 2 * w - 2, r)
    y1 = rng.uniform(0, 2 * h - 2, r)
    rois = np.stack([x1, y1, np.minimum(x1 + rng.uniform(0, 9, r), 2 * w),
                     np.minimum(y1 + rng.uniform(0, 9, r), 2 * h)], axis=1)
    if quant:
        rois = np.round(rois * 8).astype(np.uint16)
    batch = rng.integers(0, n, r).astype(np.int32)
    xt, rt = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT16_ASYMM) if quant else (T.TENSOR_FLOAT32, T.TENSOR_FLOAT32)
    q = {0: (0.5, 100), 1: (0.125, 0)} if quant else {}
    out = Operand(type=xt, scale=0.5, zero_point=100)
    for nchw in (False, True):
        xin = np.transpose(x, (0, 3, 1, 2)) if nchw else x
        (got,) = _run(OperationType.ROI_POOLING, [xin, rois, batch, 3, 4, 2.0, 2.0, nchw],
                      [xt, rt, T.TENSOR_INT32, T.INT32, T.INT32, T.FLOAT32, T.FLOAT32, T.BOOL], [out], q)
        if nchw:
            got = np.transpose(got, (0, 2, 3, 1))
        real_rois = rois.astype(F32) * F32(0.125) if quant else rois.astype(F32)
        want = _literal_roi_pool(x.astype(out.dtype), real_rois, batch, 3, 4, 2.0, 2.0, 100 if quant else 0)
        np.testing.assert_array_equal(got, want)


def test_roi_pooling_rejects_a_roi_outside_the_image():
    x = np.zeros((1, 4, 5, 2), F32)
    with pytest.raises(ExecutionError, match="roi 0"):
        _run(OperationType.ROI_POOLING, [x, [[0, 0, 30, 2]], [0], 2, 2, 1.0, 1.0, False],
             [T.TENSOR_FLOAT32, T.TENSOR_FLOAT32, T.TENSOR_INT32, T.INT32, T.INT32, T.FLOAT32, T.FLOAT32,
              T.BOOL], [Operand(type=T.TENSOR_FLOAT32)])


# -- ROI_ALIGN ---------------------------------------------------------------------------------------
def _literal_roi_align(x, rois, batch, oh, ow, ratio):
    """float64 transcription of the reference's float path (stride 1)."""
    n, h, w, c = x.shape
    out = np.zeros((len(rois), oh, ow, c))
    for r, (roi, b) in enumerate(zip(rois, batch)):
        sw = max(roi[2] - roi[0], 1.0) / ow
        sh = max(roi[3] - roi[1], 1.0) / oh
        rw = ratio or int(np.ceil(sw))
        rh = ratio or int(np.ceil(sh))
        for i in range(oh):
            for j in range(ow):
                acc = np.zeros(c)
                for yi in range(rh):
                    for xi in range(rw):
                        yy = sh * i + roi[1] + sh / rh / 2 + sh / rh * yi
                        xx = sw * j + roi[0] + sw / rw / 2 + sw / rw * xi
                        y0, x0 = int(np.floor(yy)), int(np.floor(xx))
                        dy, dx = yy - y0, xx - x0
                        y1_, x1_ = y0 + 1, x0 + 1
                        if x0 >= w - 1:
                            x0 = x1_ = w - 1
                            dx = 0
                        if y0 >= h - 1:
                            y0 = y1_ = h - 1
                            dy = 0
                        acc += ((1 - dx) * (1 - dy) * x[b, y0, x0] + dx * (1 - dy) * x[b, y0, x1_]
                                + (1 - dx) * dy * x[b, y1_, x0] + dx * dy * x[b, y1_, x1_])
                out[r, i, j] = acc / (rh * rw)
    return out


@pytest.mark.parametrize("ratio", [0, 2])
def test_roi_align_float_matches_the_reference_loops(ratio):
    rng = np.random.default_rng(ratio)
    x = rng.normal(size=(2, 6, 8, 3)).astype(F32)
    rois = np.array([[0, 0, 7, 5], [1.5, 0.5, 3, 2], [0, 0, 8, 6], [2, 1, 2.5, 1.2], [4, 3, 8, 6]], F32)
    batch = np.array([0, 1, 1, 0, 1], np.int32)
    (got,) = _run(OperationType.ROI_ALIGN, [x, rois, batch, 2, 3, 1.0, 1.0, ratio, ratio, False],
                  [T.TENSOR_FLOAT32, T.TENSOR_FLOAT32, T.TENSOR_INT32, T.INT32, T.INT32, T.FLOAT32, T.FLOAT32,
                   T.INT32, T.INT32, T.BOOL], [Operand(type=T.TENSOR_FLOAT32)])
    np.testing.assert_allclose(got, _literal_roi_align(x.astype(np.float64), rois.astype(np.float64), batch,
                                                       2, 3, ratio), rtol=1e-5, atol=1e-5)


def test_roi_align_zero_rois_and_bad_batch():
    x = np.ones((1, 3, 4, 5), F32)  # NCHW: 3 channels
    types = [T.TENSOR_FLOAT32, T.TENSOR_FLOAT32, T.TENSOR_INT32, T.INT32, T.INT32, T.FLOAT32, T.FLOAT32,
             T.INT32, T.INT32, T.BOOL]
    (got,) = _run(OperationType.ROI_ALIGN, [x, np.zeros((0, 4)), np.zeros(0), 2, 6, 1.0, 1.0, 0, 0, True],
                  types, [Operand(type=T.TENSOR_FLOAT32)])
    assert got.shape == (0, 3, 2, 6)
    with pytest.raises(ExecutionError, match="batch 3"):
        _run(OperationType.ROI_ALIGN, [x, [[0, 0, 1, 1]], [3], 2, 2, 1.0, 1.0, 0, 0, False], types,
             [Operand(type=T.TENSOR_FLOAT32)])


# -- BOX_WITH_NMS_LIMIT / HEATMAP failure modes ------------------------------------------------------
def test_box_with_nms_limit_rejects_an_unknown_kernel():
    types = [T.TENSOR_FLOAT32, T.TENSOR_FLOAT32, T.TENSOR_INT32, T.FLOAT32, T.INT32, T.INT32, T.FLOAT32,
             T.FLOAT32, T.FLOAT32]
    outs = [Operand(type=T.TENSOR_FLOAT32), Operand(type=T.TENSOR_FLOAT32), Operand(type=T.TENSOR_INT32),
            Operand(type=T.TENSOR_INT32)]
    scores = np.array([[0.1, 0.9], [0.2, 0.8]], F32)
    boxes = np.array([[0, 0, 1, 1, 0, 0, 2, 2], [0, 0, 1, 1, 1, 1, 3, 3]], F32)
    got = _run(OperationType.BOX_WITH_NMS_LIMIT, [scores, boxes, [0, 0], 0.3, -1, 0, 0.4, 1.0, 0.3], types, outs)
    assert got[0].tolist() == pytest.approx([0.9, 0.8]) and got[2].tolist() == [1, 1]
    with pytest.raises(ExecutionError, match="kernel 7"):
        _run(OperationType.BOX_WITH_NMS_LIMIT, [scores, boxes, [0, 0], 0.3, -1, 7, 0.4, 1.0, 0.3], types, outs)


def test_heatmap_rejects_a_one_cell_heatmap():
    with pytest.raises(ExecutionError, match="square"):
        _run(OperationType.HEATMAP_MAX_KEYPOINT, [np.zeros((1, 1, 1, 2), F32), [[0, 0, 1, 1]], False],
             [T.TENSOR_FLOAT32, T.TENSOR_FLOAT32, T.BOOL],
             [Operand(type=T.TENSOR_FLOAT32), Operand(type=T.TENSOR_FLOAT32)])


# -- HEATMAP_MAX_KEYPOINT / GENERATE_PROPOSALS / DETECTION_POSTPROCESSING behaviour --------------------
def test_heatmap_flat_map_keeps_the_first_maximum_unrefined():
    # A constant heatmap has a singular Hessian: no refinement, the first cell (0, 0) and its score.
    heat = np.full((2, 4, 4, 3), 0.25, F32)
    boxes = np.array([[0, 0, 8, 8], [2, 4, 6, 12]], F32)
    score, kp = _run(OperationType.HEATMAP_MAX_KEYPOINT, [heat, boxes, False],
                     [T.TENSOR_FLOAT32, T.TENSOR_FLOAT32, T.BOOL],
                     [Operand(type=T.TENSOR_FLOAT32), Operand(type=T.TENSOR_FLOAT32)])
    np.testing.assert_array_equal(score, np.full((2, 3), 0.25, F32))
    np.testing.assert_allclose(kp[0, :, :], [[1.0, 1.0]] * 3)  # 0.5 / 4 of an 8-wide box
    np.testing.assert_allclose(kp[1, :, :], [[2.5, 5.0]] * 3)


def test_heatmap_refines_a_peak_between_cells():
    # A symmetric peak split over two cells moves the keypoint half a cell right of the first of them.
    heat = np.zeros((1, 5, 5, 1), F32)
    heat[0, 2, 1, 0] = heat[0, 2, 2, 0] = 1.0
    heat[0, 1, 1:3, 0] = heat[0, 3, 1:3, 0] = 0.5
    _, kp = _run(OperationType.HEATMAP_MAX_KEYPOINT, [heat, [[0, 0, 5, 5]], False],
                 [T.TENSOR_FLOAT32, T.TENSOR_FLOAT32, T.BOOL],
                 [Operand(type=T.TENSOR_FLOAT32), Operand(type=T.TENSOR_FLOAT32)])
    assert kp[0, 0, 0] == pytest.approx(2.0) and kp[0, 0, 1] == pytest.approx(2.5)


def test_generate_proposals_layouts_agree():
    rng = np.random.default_rng(5)
    n, h, w, a = 2, 3, 4, 2
    scores = rng.permutation(n * h * w * a).reshape(n, h, w, a).astype(F32)
    deltas = rng.normal(scale=0.2, size=(n, h, w, a * 4)).astype(F32)
    anchors = np.array([[0, 0, 3, 3], [0, 0, 6, 4]], F32)
    info = np.array([[12, 16], [10, 14]], F32)
    types = [T.TENSOR_FLOAT32] * 4 + [T.FLOAT32, T.FLOAT32, T.INT32, T.INT32, T.FLOAT32, T.FLOAT32, T.BOOL]
    outs = [Operand(type=T.TENSOR_FLOAT32), Operand(type=T.TENSOR_FLOAT32), Operand(type=T.TENSOR_INT32)]
    nhwc = _run(OperationType.GENERATE_PROPOSALS,
                [scores, deltas, anchors, info, 4.0, 4.0, 10, 5, 0.4, 1.0, False], types, outs)
    nchw = _run(OperationType.GENERATE_PROPOSALS,
                [scores.transpose(0, 3, 1, 2), deltas.transpose(0, 3, 1, 2), anchors, info, 4.0, 4.0, 10, 5, 0.4,
                 1.0, True], types, outs)
    for x, y in zip(nhwc, nchw):
        np.testing.assert_array_equal(x, y)
    s, boxes, batch = nhwc
    assert 0 < s.size <= 2 * 5 and (np.diff(batch) >= 0).all()
    for b in (0, 1):  # descending scores per image, boxes inside the image
        assert (np.diff(s[batch == b]) <= 0).all()
        assert (boxes[batch == b][:, [0, 2]] <= info[b, 1]).all() and (boxes[batch == b][:, [1, 3]] <= info[b, 0]).all()


@pytest.mark.parametrize("regular", [False, True])
def test_detection_postprocessing_suppresses_an_overlapping_box(regular):
    # Anchors 0 and 1 coincide (IoU 1); anchor 2 is apart. Class 1 wins everywhere.
    anchors = np.array([[0.5, 0.5, 0.2, 0.2], [0.5, 0.5, 0.2, 0.2], [0.1, 0.1, 0.1, 0.1]], F32)
    scores = np.array([[[0.0, 0.9, 0.1], [0.0, 0.8, 0.2], [0.0, 0.7, 0.3]]], F32)
    deltas = np.zeros((1, 3, 4), F32)
    types = [T.TENSOR_FLOAT32] * 3 + [T.FLOAT32] * 4 + [T.BOOL, T.INT32, T.INT32, T.INT32, T.FLOAT32, T.FLOAT32,
                                                       T.BOOL]
    outs = [Operand(type=T.TENSOR_FLOAT32), Operand(type=T.TENSOR_FLOAT32), Operand(type=T.TENSOR_INT32),
            Operand(type=T.TENSOR_INT32)]
    s, boxes, cls, count = _run(OperationType.DETECTION_POSTPROCESSING,
                                [scores, deltas, anchors, 10.0, 10.0, 5.0, 5.0, regular, 4, 1, 4, 0.05, 0.5, False],
                                types, outs)
    if regular:  # per class: class 1 keeps anchors 0 and 2, class 2 anchors 2 and 1
        assert count.tolist() == [4]
        assert s[0].tolist() == pytest.approx([0.9, 0.7, 0.3, 0.2]) and cls[0].tolist() == [0, 0, 1, 1]
    else:
        assert count.tolist() == [2]
        assert s[0, :2].tolist() == pytest.approx([0.9, 0.7]) and cls[0].tolist() == [0, 0, 0, 0]
        assert s[0, 2:].tolist() == [0, 0] and (boxes[0, 2:] == 0).all()
    np.testing.assert_allclose(boxes[0, 0], [0.4, 0.4, 0.6, 0.6], rtol=1e-6)


def test_roi_kernels_give_the_same_result_in_chunks(monkeypatch):
    from nnconv.runtime.kernels import _boxes
    rng = np.random.default_rng(9)
    x = rng.normal(size=(2, 6, 8, 3)).astype(F32)
    rois = np.array([[0, 0, 7, 5], [1.5, 0.5, 3, 2], [0, 0, 8, 6], [2, 1, 2.5, 1.2], [4, 3, 8, 6]], F32)
    batch = np.array([0, 1, 1, 0, 1], np.int32)
    align_types = [T.TENSOR_FLOAT32, T.TENSOR_FLOAT32, T.TENSOR_INT32, T.INT32, T.INT32, T.FLOAT32, T.FLOAT32,
                   T.INT32, T.INT32, T.BOOL]
    pool_types = [T.TENSOR_FLOAT32, T.TENSOR_FLOAT32, T.TENSOR_INT32, T.INT32, T.INT32, T.FLOAT32, T.FLOAT32,
                  T.BOOL]
    out = [Operand(type=T.TENSOR_FLOAT32)]

    def both():
        return (_run(OperationType.ROI_ALIGN, [x, rois, batch, 2, 3, 1.0, 1.0, 2, 2, False], align_types, out)[0],
                _run(OperationType.ROI_POOLING, [x, rois, batch, 2, 3, 1.0, 1.0, False], pool_types, out)[0])

    whole = both()
    monkeypatch.setattr(_boxes, "CHUNK_ELEMENTS", 1)  # one roi per chunk
    assert len(_boxes.roi_chunks(5, 10)) == 5
    for a, b in zip(whole, both()):
        np.testing.assert_array_equal(a, b)
