"""Exact integer matrix products through float BLAS (the float dtype whose products stay exact)."""

from __future__ import annotations

import numpy as np


def exact_matmul_dtype(bound: int | np.integer) -> type:
    """The float dtype whose BLAS products are exact for an integer matmul whose every output satisfies
    sum_k |a_k * b_k| <= bound: each product and every partial sum (in any summation order, with or without
    FMA) is then an integer of magnitude <= bound, exactly representable below 2^24 (float32, twice the
    speed of float64) or 2^53 (float64)."""
    return np.float32 if bound < (1 << 24) else np.float64


def exact_int_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer matrix product through float BLAS: exact while every partial sum stays below 2^53 (float64),
    which 8-bit operands guarantee for any reduction shorter than 2^37 elements. When
    max|a| * max|b| * K < 2^24 bounds every partial sum, float32 BLAS is exact too, at twice the speed.
    The float result holds exact integers, so it converts to int64 without rounding."""
    bound = int(np.abs(a).max(initial=0)) * int(np.abs(b).max(initial=0)) * (a.shape[-1] if a.ndim else 1)
    dtype = exact_matmul_dtype(bound)
    return (a.astype(dtype) @ b.astype(dtype)).astype(np.int64)


def float32_chunks(column_bounds: np.ndarray) -> list[tuple[int, int]] | None:
    """Splits a reduction of K terms, term k bounded by column_bounds[k] (>= |a_k * b_k| for every output),
    into runs [k0, k1) whose sums each stay below 2^24, so that float32 BLAS computes each run's partial
    product exactly (reading half the bytes of a float64 product); None when one term alone reaches 2^24."""
    if column_bounds.size and int(column_bounds.max()) >= (1 << 24):
        return None
    chunks, start, total = [], 0, 0
    for k, bound in enumerate(column_bounds.tolist()):
        if total + bound >= (1 << 24):
            chunks.append((start, k))
            start, total = k, 0
        total += bound
    chunks.append((start, int(column_bounds.size)))
    return chunks
