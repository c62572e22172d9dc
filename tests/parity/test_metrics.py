"""Parity metrics and the tolerance overrides, on hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest

from nnconv.parity.metrics import cosine_similarity, looks_like_class_scores, tensor_metrics, top_k_agreement
from nnconv.parity.tolerances import Tolerance, ToleranceOverrides, tolerance_for
from nnconv.parity.verify import compare


def test_abs_rel_and_mean():
    m = tensor_metrics(np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.5, 2.0]), quantized=False)
    # diffs 0, 0.5, 1; range max |expected| = 2.5
    assert (m.max_abs, m.mean_abs, m.max_rel, m.range) == (1.0, 0.5, 0.4, 2.5)
    assert m.max_lsb is None and m.histogram == {}


@pytest.mark.parametrize("a,e,cos", [
    pytest.param([1.0, 0.0], [0.0, 1.0], 0.0, id="orthogonal"),
    pytest.param([1.0, 1.0], [2.0, 2.0], 1.0, id="scaled"),
    pytest.param([3.0, 4.0], [4.0, 3.0], 24.0 / 25.0, id="3-4-5"),
    pytest.param([0.0, 0.0], [0.0, 0.0], 1.0, id="both-zero"),
    pytest.param([0.0, 0.0], [1.0, 0.0], 0.0, id="one-zero"),
    pytest.param([-1.0, 0.0], [1.0, 0.0], -1.0, id="opposite"),
])
def test_cosine(a, e, cos):
    assert cosine_similarity(np.array(a), np.array(e)) == pytest.approx(cos, abs=1e-15)


def test_top_k_swapped_best_two():
    expected = np.arange(10, dtype=np.float32)[None, :]  # best 9, 8, 7, 6, 5
    actual = expected.copy()
    actual[0, 8], actual[0, 9] = 9.0, 8.0  # best two swapped: top-1 differs, the top 5 set is the same
    assert top_k_agreement(actual, expected) == (0.0, 1.0)
    m = tensor_metrics(actual, expected, quantized=False)
    assert (m.top1, m.top5) == (0.0, 1.0)


def test_top_k_reversed_and_rows():
    expected = np.tile(np.arange(10, dtype=np.float32), (2, 1))
    actual = expected.copy()
    actual[1] = actual[1][::-1]  # row 0 agrees, row 1's top 5 is the other five classes
    assert top_k_agreement(actual, expected) == (0.5, 0.5)


@pytest.mark.parametrize("shape,dtype,scores", [
    ((1, 1000), np.float32, True), ((10,), np.int8, True), ((1, 4), np.float32, False),
    ((1, 7, 7, 32), np.float32, False), ((1, 10), np.bool_, False), ((2, 3, 10), np.float32, False)])
def test_class_score_detection(shape, dtype, scores):
    assert looks_like_class_scores(shape, np.dtype(dtype)) is scores


def test_quantized_histogram_in_lsb():
    m = tensor_metrics(np.array([0, 1, -3, 2], np.int8), np.array([0, 0, 0, 2], np.int8), quantized=True)
    assert m.max_lsb == 3 and m.histogram == {0: 2, 1: 1, 3: 1}


def test_nan_on_both_sides_agrees_on_one_side_is_infinite():
    both = tensor_metrics(np.array([np.nan, 1.0]), np.array([np.nan, 1.0]), quantized=False)
    assert both.max_abs == 0.0
    one = tensor_metrics(np.array([np.nan, 1.0]), np.array([0.0, 1.0]), quantized=False)
    assert one.max_abs == np.inf and one.cosine == 0.0


def test_overrides_replace_only_what_is_given():
    assert tolerance_for(np.float32, overrides=ToleranceOverrides(rtol=0.5)) == Tolerance("float", rtol=0.5,
                                                                                          atol=1e-5)
    assert tolerance_for(np.int8, overrides=ToleranceOverrides(max_lsb=3)) == Tolerance("quant", lsb=3)
    assert tolerance_for(np.int32, overrides=ToleranceOverrides(atol=1, max_lsb=3)) == Tolerance("exact")


def test_compare_verdict_follows_overrides():
    expected = np.array([10.0, -10.0], np.float32)
    actual = np.array([10.05, -10.0], np.float32)  # 0.05 > 1e-5 + 1e-4 * 10
    assert not compare("y", actual, expected).passed
    assert compare("y", actual, expected, overrides=ToleranceOverrides(rtol=1e-2)).passed
    q = compare("q", np.array([5], np.int8), np.array([2], np.int8))
    assert not q.passed and q.max_lsb == 3
    assert compare("q", np.array([5], np.int8), np.array([2], np.int8),
                   overrides=ToleranceOverrides(max_lsb=3)).passed
