"""The gate biases of an int8 LSTM without layer normalization, carried by constant input columns.

TFLite's integer (8x8_16) LSTM adds each gate's int32 bias to the accumulator of its input-to-gate product,
before rescaling it into the gate's Q3.12 value; with layer normalization it adds the bias after the
normalization instead. NNAPI's QUANTIZED_LSTM has only the second form: its reference reads the gate-bias
operands inside the layer normalization alone, so an op without layer norm would lose its biases.

The identity used: with the input x (zero point z) extended by constant int8 columns e_k and each
input-to-gate weight matrix W by int8 columns v_k,

    sum_j (x_j - z) W_ij + sum_k (e_k - z) v_ik  =  sum_j (x_j - z) W_ij + b_i

whenever sum_k (e_k - z) v_ik = b_i. Both sides are the same int32 accumulator, so every later step (the
rescale, the saturating add of the recurrent product, the activations, the cell update) is unchanged: the
result is TFLite's bit for bit. The bias operands then get zeros, so no implementation could add them twice.

The columns: one unit column with e - z = u = +-1 carries a remainder r (|r| <= 127) as the weight r*u, and
K wide columns with e - z = d, the int8 value farthest from z (|d| >= 128), carry q, where b = q*d + r with
q the nearest integer to b/d, split into parts of at most 127 each. A bias of 10^5 (a forget bias of 1.0
with input and weight scales of 0.0039 and 0.0026) takes K = 7 wide columns when z = 0.
"""

from __future__ import annotations

import numpy as np

# Wide columns at most: they carry biases up to MAX_WIDE_COLUMNS * 127 * 128 ~ 4.2M accumulator units.
MAX_WIDE_COLUMNS = 256


def _steps(zero_point: int) -> tuple[int, int]:
    """(u, d): e - z of the unit column (+-1) and of the wide columns (the farthest int8 value from z)."""
    unit = 1 if zero_point <= 126 else -1
    high, low = 127 - zero_point, -128 - zero_point
    return unit, high if abs(high) >= abs(low) else low


def wide_columns_needed(biases: list[np.ndarray], zero_point: int) -> int:
    """K for these biases (int32 vectors) at input zero point `zero_point`."""
    _unit, wide = _steps(zero_point)
    q = [np.rint(np.asarray(b, np.int64) / wide).astype(np.int64) for b in biases]
    top = max((int(np.abs(v).max(initial=0)) for v in q), default=0)
    return -(-top // 127)


def bias_columns(biases: list[np.ndarray | None], zero_point: int) -> tuple[np.ndarray, list[np.ndarray | None]]:
    """(column values e [1 + K] int8, per gate its weight columns v [n_cell, 1 + K] int8 or None where the
    gate is absent) with sum_k (e_k - z) v_ik = b_i for each given bias; no columns when every bias is 0."""
    given = [np.asarray(b, np.int64) for b in biases if b is not None]
    if not any(v.any() for v in given):
        return np.zeros(0, np.int8), [None if b is None else np.zeros((len(b), 0), np.int8) for b in biases]
    unit, wide = _steps(zero_point)
    k = wide_columns_needed(given, zero_point)
    values = np.array([zero_point + unit] + [zero_point + wide] * k, dtype=np.int8)
    columns: list[np.ndarray | None] = []
    for b in biases:
        if b is None:
            columns.append(None)
            continue
        b = np.asarray(b, np.int64)
        q = np.rint(b / wide).astype(np.int64)
        r = b - q * wide  # |r| <= |d| / 2 <= 127.5, an integer: |r| <= 127
        parts = np.clip(np.abs(q)[:, None] - 127 * np.arange(k)[None, :], 0, 127) * np.sign(q)[:, None]
        columns.append(np.concatenate([(r * unit)[:, None], parts], axis=1).astype(np.int8))
    return values, columns
