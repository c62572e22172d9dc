"""Error metrics of one tensor against its reference: what `verify` reports per output and per op.

Every metric is computed in float64 on the stored values (quantized tensors in their integer steps, so one
unit of difference is one LSB):

| metric | definition |
| --- | --- |
| `max_abs`, `mean_abs` | max / mean of |ours - reference| (equal values, equal infinities and NaN on both sides count as 0; NaN on one side only as inf) |
| `max_rel` | `max_abs / max|reference|` over the finite reference values: the error relative to the tensor's magnitude (the tolerances' scale too) |
| `cosine` | cosine similarity of the flattened tensors (1.0 when both are all zero, 0.0 when only one is) |
| `top1`, `top5` | for class-score-like outputs (`looks_like_class_scores`): the fraction of rows whose arg-max agrees, and the mean overlap of the 5 best classes, over the rows where that ranking is defined: a row whose best class (top-1) or whose 5th and 6th best (top-5) tie on either side is left out, since the winner of a tie is an accident of sorting; None when no row is left |
| `constant` | the reference's values span no more than the tolerance, or than 1e-3 of their magnitude (`is_uninformative`): any engine that computes that one value passes, so the comparison proves little |
| `max_lsb`, `histogram` | quantized tensors: the largest difference in steps and {steps: count} |
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

TOP_K = 5
NEAR_CONSTANT = 1e-3  # values spanning less than this fraction of their magnitude are "nearly constant"
_MIN_CLASSES = 10  # fewer classes than this is not a classifier head (boxes, keypoints, embeddings)


@dataclass
class TensorMetrics:
    max_abs: float = 0.0
    mean_abs: float = 0.0
    max_rel: float = 0.0
    cosine: float = 1.0
    top1: float | None = None  # fraction of rows with the same arg-max (class scores only)
    top5: float | None = None  # mean |our top 5 & reference top 5| / 5 (class scores only)
    max_lsb: int | None = None  # quantized tensors
    histogram: dict[int, int] = field(default_factory=dict)  # |diff| in LSB -> count (quantized tensors)
    range: float = 0.0  # max |reference| over finite values (the magnitude): what max_rel is relative to

    def to_json(self) -> dict:
        return {"max_abs": self.max_abs, "mean_abs": self.mean_abs, "max_rel": self.max_rel,
                "cosine": self.cosine, "top1": self.top1, "top5": self.top5, "max_lsb": self.max_lsb,
                "histogram": {str(k): v for k, v in self.histogram.items()}}


def abs_diff(actual: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """|actual - expected| in float64; agreement (equal values, NaN in both) is 0, NaN on one side inf."""
    a64 = np.asarray(actual, dtype=np.float64)
    e64 = np.asarray(expected, dtype=np.float64)
    same = (a64 == e64) | (np.isnan(a64) & np.isnan(e64))
    with np.errstate(invalid="ignore"):
        diff = np.where(same, 0.0, np.abs(a64 - e64))
    return np.where(np.isnan(diff), np.inf, diff)


def looks_like_class_scores(shape: tuple[int, ...], dtype: np.dtype) -> bool:
    """A [N, C] or [C] tensor of at least `_MIN_CLASSES` scores (logits, probabilities, or their
    quantized form): where top-1 / top-5 agreement means something to a user."""
    dims = [d for d in shape if d != 1]
    return np.dtype(dtype).kind in "fiu" and np.dtype(dtype) != np.bool_ and len(dims) == 1 and \
        dims[0] >= _MIN_CLASSES and len(shape) <= 2


def tensor_metrics(actual: np.ndarray, expected: np.ndarray, quantized: bool) -> TensorMetrics:
    """Metrics of `actual` against `expected` (same shape). `quantized`: values are integer steps."""
    if expected.size == 0:
        return TensorMetrics(max_lsb=0 if quantized else None)
    diff = abs_diff(actual, expected)
    e64 = np.asarray(expected, dtype=np.float64)
    finite = np.abs(e64[np.isfinite(e64)])
    ref = float(finite.max()) if finite.size else 0.0
    max_abs = float(diff.max())
    m = TensorMetrics(max_abs=max_abs, mean_abs=float(diff.mean()),
                      max_rel=max_abs / ref if ref > 0 else (0.0 if max_abs == 0 else float("inf")),
                      cosine=cosine_similarity(actual, expected), range=ref)
    if looks_like_class_scores(tuple(expected.shape), expected.dtype):
        m.top1, m.top5 = top_k_agreement(actual, expected)
    if quantized:
        lsb = np.minimum(diff, np.iinfo(np.int64).max).astype(np.int64)
        values, counts = np.unique(lsb, return_counts=True)
        m.histogram = {int(v): int(c) for v, c in zip(values, counts)}
        m.max_lsb = int(lsb.max())
    return m


def cosine_similarity(actual: np.ndarray, expected: np.ndarray) -> float:
    """Cosine of the angle between the flattened tensors; non-finite values make it NaN-free 0.0."""
    a = np.asarray(actual, dtype=np.float64).ravel()
    e = np.asarray(expected, dtype=np.float64).ravel()
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(e))):
        return 1.0 if np.array_equal(a, e, equal_nan=True) else 0.0
    na, ne = float(np.linalg.norm(a)), float(np.linalg.norm(e))
    if na == 0.0 and ne == 0.0:
        return 1.0
    if na == 0.0 or ne == 0.0:
        return 0.0
    return float(np.clip(np.dot(a, e) / (na * ne), -1.0, 1.0))


def top_k_agreement(actual: np.ndarray, expected: np.ndarray, k: int = TOP_K) -> tuple[float | None, float | None]:
    """(top-1 agreement, top-k overlap) over the rows of class scores shaped [N, C] or [C], each over the rows
    where its ranking has no tie at its boundary on either side (None when there is none)."""
    c = max(expected.shape) if expected.ndim else 1
    a = np.asarray(actual, dtype=np.float64).reshape(-1, c)
    e = np.asarray(expected, dtype=np.float64).reshape(-1, c)
    k = min(k, c)
    # Stable sorts so ties rank by class index on both sides alike; tied rows are then left out.
    sa = np.argsort(-a, axis=1, kind="stable")
    se = np.argsort(-e, axis=1, kind="stable")
    top1_rows = ~(_tied_at(a, sa, 1) | _tied_at(e, se, 1))
    topk_rows = ~(_tied_at(a, sa, k) | _tied_at(e, se, k))
    top1 = float(np.mean(sa[top1_rows, 0] == se[top1_rows, 0])) if top1_rows.any() else None
    overlap = [len(set(x.tolist()) & set(y.tolist())) / k
               for x, y in zip(sa[topk_rows, :k], se[topk_rows, :k])]
    return top1, (float(np.mean(overlap)) if overlap else None)


def _tied_at(values: np.ndarray, order: np.ndarray, k: int) -> np.ndarray:
    """Per row: whether the k-th best value equals the (k+1)-th (the top-k set is then not defined)."""
    if k >= values.shape[1]:
        return np.zeros(values.shape[0], dtype=bool)
    ranked = np.take_along_axis(values, order[:, k - 1:k + 1], axis=1)
    return ranked[:, 0] == ranked[:, 1]


def is_uninformative(expected: np.ndarray, tolerance_span: float) -> bool:
    """True when TFLite's tensor is constant, or varies by no more than `tolerance_span` (the tolerance in the
    tensor's own units): any engine that outputs that one value passes, so the comparison tells little. A
    single value (one element) is not judged: nothing can vary."""
    e = np.asarray(expected, dtype=np.float64)
    finite = e[np.isfinite(e)]
    if finite.size < 2:
        return False
    magnitude = float(np.abs(finite).max())
    return float(finite.max() - finite.min()) <= max(tolerance_span, NEAR_CONSTANT * magnitude)
